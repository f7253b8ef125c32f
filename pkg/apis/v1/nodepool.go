package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool is a template for the nodes joiner launches, plus the rules for
// when it may disrupt them and how much capacity it may use.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodepools,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.nodes
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.template.spec.nodeClassRef.name",description="The node class the NodePool launches with"
// +kubebuilder:printcolumn:name="Nodes",type="string",JSONPath=".status.resources.nodes",description="Nodes owned by the NodePool"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description="Whether the NodePool may launch nodes"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1,description="Higher weights are tried first"
// +kubebuilder:printcolumn:name="CPU",type="string",JSONPath=".status.resources.cpu",priority=1,description="CPU of the NodePool's nodes"
// +kubebuilder:printcolumn:name="Memory",type="string",JSONPath=".status.resources.memory",priority=1,description="Memory of the NodePool's nodes"
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   NodePoolSpec   `json:"spec"`
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolList is a list of NodePools.
//
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}

// NodePoolSpec is what a NodePool asks for.
//
// +kubebuilder:validation:XValidation:rule="has(self.replicas) == has(oldSelf.replicas)",message="spec.replicas: a NodePool cannot switch between static (replicas set) and dynamic (replicas unset) provisioning; create a new NodePool instead"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.limits) || size(self.limits) == 0 || (size(self.limits) == 1 && 'nodes' in self.limits)",message="spec.limits: only limits.nodes is supported on static NodePools (spec.replicas set); remove the other limits"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.weight)",message="spec.weight: weight is not supported on static NodePools (spec.replicas set); remove it"
type NodePoolSpec struct {
	// Template describes the NodeClaims (and so the nodes) this NodePool
	// creates.
	// +required
	Template NodeClaimTemplate `json:"template"`

	// Disruption says when joiner may voluntarily replace or remove nodes.
	// +kubebuilder:default:={consolidateAfter: "0s"}
	// +optional
	Disruption Disruption `json:"disruption"`

	// Limits caps the total capacity of the NodePool's nodes; provisioning
	// stops before any listed resource would be exceeded.
	// +optional
	Limits Limits `json:"limits,omitempty"`

	// Weight orders NodePools: higher weights are tried first. NodePools
	// without a weight come last.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`

	// Replicas makes the NodePool static: it keeps this many nodes whatever
	// the pending pods (Karpenter's StaticCapacity feature gate, alpha).
	// It is set at creation or never (it cannot be added or removed later),
	// allows only limits.nodes and no weight, and the NodePool's nodes are
	// never consolidated (consolidationPolicy and consolidateAfter are
	// ignored). `kubectl scale nodepool NAME --replicas N` changes it.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	Replicas *int64 `json:"replicas,omitempty"`
}

// ResourceNodes is the limits key (and status.resources key) that counts a
// NodePool's nodes, Karpenter's "nodes".
const ResourceNodes corev1.ResourceName = "nodes"

// IsStatic reports whether the NodePool keeps a fixed node count
// (spec.replicas set) instead of following pending pods.
func (in *NodePool) IsStatic() bool { return in.Spec.Replicas != nil }

// Limits caps the resources of a NodePool's nodes (cpu, memory, nodes,
// extended resources).
type Limits corev1.ResourceList

// ConsolidationPolicy says which nodes consolidation may remove or replace.
//
// +kubebuilder:validation:Enum:={WhenEmpty,WhenEmptyOrUnderutilized,Balanced}
type ConsolidationPolicy string

const (
	// ConsolidationPolicyWhenEmpty only removes nodes without workload pods.
	ConsolidationPolicyWhenEmpty ConsolidationPolicy = "WhenEmpty"
	// ConsolidationPolicyWhenEmptyOrUnderutilized also removes or replaces
	// nodes whose pods fit elsewhere or on a cheaper node.
	ConsolidationPolicyWhenEmptyOrUnderutilized ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	// ConsolidationPolicyBalanced consolidates underutilized nodes only when
	// the savings outweigh the disruption; Karpenter added it after v1.0,
	// and NodePools that use it must apply unchanged.
	ConsolidationPolicyBalanced ConsolidationPolicy = "Balanced"
)

// DisruptionReason is why a node is being disrupted; budgets may be scoped
// to some reasons.
//
// +kubebuilder:validation:Enum:={Underutilized,Empty,Drifted}
type DisruptionReason string

const (
	DisruptionReasonUnderutilized DisruptionReason = "Underutilized"
	DisruptionReasonEmpty         DisruptionReason = "Empty"
	DisruptionReasonDrifted       DisruptionReason = "Drifted"
)

// DisruptionReasons lists every DisruptionReason.
var DisruptionReasons = []DisruptionReason{DisruptionReasonUnderutilized, DisruptionReasonEmpty, DisruptionReasonDrifted}

// Disruption configures voluntary disruption of a NodePool's nodes.
//
// +kubebuilder:validation:XValidation:rule="self.consolidationPolicy != 'WhenEmptyOrUnderutilized' || has(self.consolidateAfter)",message="spec.disruption.consolidateAfter is required when consolidationPolicy is WhenEmptyOrUnderutilized: set a duration such as 30s (0s is the default), or Never"
type Disruption struct {
	// ConsolidateAfter is how long a node must go without pods being added
	// or removed before consolidation considers it; "Never" disables
	// consolidation.
	// +kubebuilder:validation:Pattern:=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:default:="0s"
	// +required
	ConsolidateAfter NillableDuration `json:"consolidateAfter,omitzero"`

	// ConsolidationPolicy says which nodes consolidation may touch.
	// +kubebuilder:default:=WhenEmptyOrUnderutilized
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`

	// Budgets bound how many nodes may be disrupted at once. The most
	// restrictive active budget wins.
	// +kubebuilder:default:={{nodes: "10%"}}
	// +kubebuilder:validation:MaxItems:=50
	// +optional
	Budgets []Budget `json:"budgets,omitempty"`
}

// Budget bounds disruption: at most Nodes nodes (a count, or a percentage of
// the NodePool rounded up) while the budget is active. A budget with a
// Schedule is active for Duration after each time the schedule fires.
//
// +kubebuilder:validation:XValidation:rule="has(self.schedule) == has(self.duration)",message="spec.disruption.budgets: schedule and duration must be set together; add the missing one or remove both"
type Budget struct {
	// Reasons limits the budget to these disruption reasons; empty means
	// every reason.
	// +kubebuilder:validation:MaxItems:=50
	// +optional
	Reasons []DisruptionReason `json:"reasons,omitempty"`

	// Nodes is the number ("5") or percentage ("10%") of nodes that may be
	// disrupted at once.
	// +kubebuilder:validation:Pattern:=`^((100|[0-9]{1,2})%|[0-9]+)$`
	// +kubebuilder:default:="10%"
	// +required
	Nodes string `json:"nodes"`

	// Schedule is a cron expression (UTC, five fields, or a macro such as
	// @daily) at which the budget becomes active.
	// +kubebuilder:validation:Pattern:=`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$`
	// +kubebuilder:validation:MaxLength:=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^@(annually|yearly|monthly|weekly|daily|midnight|hourly)$') || self.matches('^[ ]*([*?]|([0-5]?[0-9])(-([0-5]?[0-9]))?)(/[1-9][0-9]*)?(,([*?]|([0-5]?[0-9])(-([0-5]?[0-9]))?)(/[1-9][0-9]*)?)*[ ]+([*?]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/[1-9][0-9]*)?(,([*?]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/[1-9][0-9]*)?)*[ ]+([*?]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/[1-9][0-9]*)?(,([*?]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/[1-9][0-9]*)?)*[ ]+([*?]|(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))(-(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)))?)(/[1-9][0-9]*)?(,([*?]|(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))(-(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)))?)(/[1-9][0-9]*)?)*[ ]+([*?]|([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))(-([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat)))?)(/[1-9][0-9]*)?(,([*?]|([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))(-([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat)))?)(/[1-9][0-9]*)?)*[ ]*$')",messageExpression="'spec.disruption.budgets[].schedule: \"' + self + '\" is not a valid cron schedule: use five fields, minute (0-59) hour (0-23) day-of-month (1-31) month (1-12 or jan-dec) day-of-week (0-6 or sun-sat), each *, a value, a range a-b, a step /n or a list, for example \"0 9 * * mon-fri\", or a macro such as @daily (always UTC)'"
	// +optional
	Schedule *string `json:"schedule,omitempty"`

	// Duration is how long the budget stays active after the schedule
	// fires, in hours and minutes ("1h30m").
	// +kubebuilder:validation:Pattern:=`^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`
	// +kubebuilder:validation:Type="string"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
}

// NodeClaimTemplate is the part of a NodePool copied into every NodeClaim.
type NodeClaimTemplate struct {
	// +optional
	ObjectMeta ObjectMeta `json:"metadata,omitempty"`
	// +required
	Spec NodeClaimTemplateSpec `json:"spec"`
}

// ObjectMeta is the metadata a NodePool puts on its NodeClaims and nodes.
type ObjectMeta struct {
	// Labels are applied to every NodeClaim and node. Well-known labels
	// (zone, arch, capacity type, ...) constrain scheduling like
	// requirements do; joiner-managed labels may not be set.
	// +kubebuilder:validation:MaxProperties:=100
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$') && x.matches('^([^/]{1,253}/)?[^/]{1,63}$'))",messageExpression="'spec.template.metadata.labels: key \"' + self.filter(x, !(x.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$') && x.matches('^([^/]{1,253}/)?[^/]{1,63}$')))[0] + '\" is not a qualified name: use an optional DNS subdomain prefix and \"/\", then up to 63 alphanumerics, \"-\", \"_\" or \".\"'"
	// +kubebuilder:validation:XValidation:rule="self.all(x, size(self[x]) <= 63)",messageExpression="'spec.template.metadata.labels: the value of \"' + self.filter(x, size(self[x]) > 63)[0] + '\" is longer than 63 characters; shorten it'"
	// +kubebuilder:validation:XValidation:rule="!('kubernetes.io/hostname' in self)",message="spec.template.metadata.labels: label \"kubernetes.io/hostname\" is restricted (the kubelet sets it); remove it"
	// +kubebuilder:validation:XValidation:rule="!('karpenter.sh/nodepool' in self)",message="spec.template.metadata.labels: label \"karpenter.sh/nodepool\" is restricted (joiner sets it to the NodePool's name); remove it"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !x.matches('^([^/]+[.])?karpenter[.]sh/'))",messageExpression="'spec.template.metadata.labels: label \"' + self.filter(x, !(x in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !x.matches('^([^/]+[.])?karpenter[.]sh/')))[0] + '\" is restricted: the karpenter.sh domain only allows karpenter.sh/capacity-type; use your own label domain'"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x in ['topology.kubernetes.io/zone', 'topology.kubernetes.io/region', 'node.kubernetes.io/instance-type', 'kubernetes.io/arch', 'kubernetes.io/os', 'node.kubernetes.io/windows-build', 'kubernetes.io/hostname'] || x.matches('^[^/]*(node[.]kubernetes[.]io|node-restriction[.]kubernetes[.]io|kops[.]k8s[.]io)/') || !x.matches('^([^/]+[.])?(kubernetes[.]io|k8s[.]io)/'))",messageExpression="'spec.template.metadata.labels: label \"' + self.filter(x, !(x in ['topology.kubernetes.io/zone', 'topology.kubernetes.io/region', 'node.kubernetes.io/instance-type', 'kubernetes.io/arch', 'kubernetes.io/os', 'node.kubernetes.io/windows-build', 'kubernetes.io/hostname'] || x.matches('^[^/]*(node[.]kubernetes[.]io|node-restriction[.]kubernetes[.]io|kops[.]k8s[.]io)/') || !x.matches('^([^/]+[.])?(kubernetes[.]io|k8s[.]io)/')))[0] + '\" is restricted: the kubernetes.io and k8s.io domains only allow the well-known zone, region, instance-type, arch, os and windows-build labels and the node.kubernetes.io, node-restriction.kubernetes.io and kops.k8s.io subdomains'"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x in ['karpenter.k8s.aws/ec2nodeclass', 'karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/instance-capability-flex', 'karpenter.k8s.aws/instance-tenancy', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/capacity-reservation-id', 'karpenter.k8s.aws/capacity-reservation-type', 'karpenter.k8s.aws/capacity-reservation-interruptible', 'karpenter.k8s.aws/placement-group-id', 'karpenter.k8s.aws/placement-group-partition'] || !x.matches('^([^/]+[.])?karpenter[.]k8s[.]aws/'))",messageExpression="'spec.template.metadata.labels: label \"' + self.filter(x, !(x in ['karpenter.k8s.aws/ec2nodeclass', 'karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/instance-capability-flex', 'karpenter.k8s.aws/instance-tenancy', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/capacity-reservation-id', 'karpenter.k8s.aws/capacity-reservation-type', 'karpenter.k8s.aws/capacity-reservation-interruptible', 'karpenter.k8s.aws/placement-group-id', 'karpenter.k8s.aws/placement-group-partition'] || !x.matches('^([^/]+[.])?karpenter[.]k8s[.]aws/')))[0] + '\" is restricted: the karpenter.k8s.aws domain only allows the well-known instance-type labels'"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are applied to every NodeClaim and node.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}
