package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaimTemplateSpec is the spec a NodePool stamps into each NodeClaim.
// NodeClaimSpec has the same fields plus the resources the NodeClaim was
// sized for.
//
// +kubebuilder:validation:XValidation:rule="has(self.requirements)",message="spec.template.spec.requirements is required: list what a node may be, for example [{key: kubernetes.io/arch, operator: In, values: [amd64]}], or [] to allow every instance type the node class offers"
type NodeClaimTemplateSpec struct {
	// Taints are applied to the node; pods must tolerate them.
	// +kubebuilder:validation:MaxItems:=100
	// +kubebuilder:validation:XValidation:rule="self.all(t, size(t.key) > 0)",message="spec.template.spec.taints: each taint needs a non-empty key"
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="spec.template.spec.taints: effect must be one of NoSchedule, PreferNoSchedule or NoExecute"
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`

	// StartupTaints are applied to the node at boot and removed by some
	// agent; pods need not tolerate them, and the node is not initialised
	// until they are gone.
	// +kubebuilder:validation:MaxItems:=100
	// +kubebuilder:validation:XValidation:rule="self.all(t, size(t.key) > 0)",message="spec.template.spec.startupTaints: each taint needs a non-empty key"
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="spec.template.spec.startupTaints: effect must be one of NoSchedule, PreferNoSchedule or NoExecute"
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`

	// Requirements constrain the instance types, zones, capacity types and
	// other labels of the nodes.
	// +kubebuilder:validation:MaxItems:=100
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.key != 'karpenter.sh/nodepool')",message="spec.template.spec.requirements: key \"karpenter.sh/nodepool\" is restricted (joiner sets it to the NodePool's name); remove the requirement"
	//
	// Required, by the type's rule has(self.requirements) rather than by
	// the schema: a schema-required field missing makes the API server
	// answer a bare "Required value" and skip every rule that would say
	// what to write.
	// +optional
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`

	// NodeClassRef names the provider node class (for example an
	// EC2NodeClass) the nodes are launched with.
	// +kubebuilder:validation:XValidation:rule="self.group == oldSelf.group",message="spec.template.spec.nodeClassRef.group is immutable; create a new NodePool to use another node class group"
	// +kubebuilder:validation:XValidation:rule="self.kind == oldSelf.kind",message="spec.template.spec.nodeClassRef.kind is immutable; create a new NodePool to use another node class kind"
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`

	// TerminationGracePeriod is the longest a node may take to drain once
	// its deletion starts; after it, pods are deleted regardless of
	// PodDisruptionBudgets and do-not-disrupt. Unset means no limit.
	// +kubebuilder:validation:Pattern:=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`

	// ExpireAfter is the longest a node may live, measured from its
	// NodeClaim's creation; then it is deleted. "Never" disables expiry.
	// +kubebuilder:validation:Pattern:=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:default:="720h"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitzero"`
}

// NodeSelectorRequirementWithMinValues is a node selector requirement with
// Karpenter's extensions: the Gte and Lte operators, and MinValues.
//
// +kubebuilder:validation:XValidation:rule="self.operator != 'In' || (has(self.values) && size(self.values) > 0)",messageExpression="'requirement \"' + self.key + '\": operator In needs at least one value'"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || (has(self.values) && size(self.values) == 1 && self.values[0].matches('^[0-9]+$'))",messageExpression="'requirement \"' + self.key + '\": operator ' + self.operator + ' needs exactly one value, a non-negative integer'"
// +kubebuilder:validation:XValidation:rule="!has(self.minValues) || self.operator != 'In' || (has(self.values) && size(self.values) >= self.minValues)",messageExpression="'requirement \"' + self.key + '\": operator In with minValues needs at least minValues values; add values or lower minValues'"
type NodeSelectorRequirementWithMinValues struct {
	// Key is the label the requirement is about.
	// +kubebuilder:validation:MaxLength:=316
	// +kubebuilder:validation:Pattern:=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'kubernetes.io/hostname'",message="requirement key \"kubernetes.io/hostname\" is restricted (the kubelet sets it); remove the requirement"
	// +kubebuilder:validation:XValidation:rule="self in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !self.matches('^([^/]+[.])?karpenter[.]sh/')",messageExpression="'requirement key \"' + self + '\" is restricted: the karpenter.sh domain only allows karpenter.sh/capacity-type; use your own label domain'"
	// +kubebuilder:validation:XValidation:rule="self in ['topology.kubernetes.io/zone', 'topology.kubernetes.io/region', 'node.kubernetes.io/instance-type', 'kubernetes.io/arch', 'kubernetes.io/os', 'node.kubernetes.io/windows-build', 'kubernetes.io/hostname'] || self.matches('^[^/]*(node[.]kubernetes[.]io|node-restriction[.]kubernetes[.]io|kops[.]k8s[.]io)/') || !self.matches('^([^/]+[.])?(kubernetes[.]io|k8s[.]io)/')",messageExpression="'requirement key \"' + self + '\" is restricted: the kubernetes.io and k8s.io domains only allow the well-known zone, region, instance-type, arch, os and windows-build labels and the node.kubernetes.io, node-restriction.kubernetes.io and kops.k8s.io subdomains'"
	// +kubebuilder:validation:XValidation:rule="self in ['karpenter.k8s.aws/ec2nodeclass', 'karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/instance-capability-flex', 'karpenter.k8s.aws/instance-tenancy', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/capacity-reservation-id', 'karpenter.k8s.aws/capacity-reservation-type', 'karpenter.k8s.aws/capacity-reservation-interruptible', 'karpenter.k8s.aws/placement-group-id', 'karpenter.k8s.aws/placement-group-partition'] || !self.matches('^([^/]+[.])?karpenter[.]k8s[.]aws/')",messageExpression="'requirement key \"' + self + '\" is restricted: the karpenter.k8s.aws domain only allows the well-known instance-type labels'"
	// +required
	Key string `json:"key"`

	// Operator relates the key to the values.
	// +kubebuilder:validation:Enum:={In,NotIn,Exists,DoesNotExist,Gt,Lt,Gte,Lte}
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`

	// Values are label values; In and NotIn take any number (In at least
	// one), Gt/Lt/Gte/Lte exactly one integer, Exists and DoesNotExist none.
	// +kubebuilder:validation:items:MaxLength:=63
	// +kubebuilder:validation:items:Pattern:=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`

	// MinValues is the least number of distinct values of Key the chosen
	// instance types must span (for example, at least 5 instance families
	// for spot diversity).
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}

// NodeSelectorOperator values Karpenter adds to corev1's.
const (
	NodeSelectorOpGte corev1.NodeSelectorOperator = "Gte"
	NodeSelectorOpLte corev1.NodeSelectorOperator = "Lte"
)

// NodeClassReference names a provider node class.
type NodeClassReference struct {
	// Kind of the node class, for example EC2NodeClass.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="nodeClassRef.kind may not be empty; set the node class kind, for example EC2NodeClass"
	// +kubebuilder:validation:MaxLength:=63
	// +required
	Kind string `json:"kind"`
	// Name of the node class.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="nodeClassRef.name may not be empty; set the name of the node class"
	// +kubebuilder:validation:MaxLength:=253
	// +required
	Name string `json:"name"`
	// Group of the node class, for example karpenter.k8s.aws.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="nodeClassRef.group may not be empty; set the node class API group, for example karpenter.k8s.aws"
	// +kubebuilder:validation:XValidation:rule="!self.contains('/')",messageExpression="'nodeClassRef.group \"' + self + '\" must be an API group without a version (no \"/\"), for example karpenter.k8s.aws'"
	// +kubebuilder:validation:MaxLength:=253
	// +required
	Group string `json:"group"`
}
