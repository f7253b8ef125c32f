package v1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeletConfiguration is the kubelet's configuration, in the field names
// and shapes of the upstream KubeletConfiguration (kubelet.config.k8s.io).
//
// The fields typed here are the ones joiner itself reads (to compute
// allocatable and pod density) and passes through every AMI family's
// bootstrap; the CRD validates them. Any other KubeletConfiguration field
// (cpuManagerPolicy, topologyManagerPolicy, shutdownGracePeriod, ...) is
// kept verbatim in Extra: the schema preserves unknown fields here, and
// UnmarshalJSON/MarshalJSON carry them through the Go type unchanged. Only
// AL2023 (whose nodeadm takes the whole configuration) can apply them; CEL
// cannot see fields the schema does not declare, so EC2NodeClass.Validate
// reports extra fields on other families at runtime.
//
// registerWithTaints is declared only so the CRD can reject it: joiner
// registers nodes with the NodePool's taints and startup taints plus
// karpenter.sh/unregistered.
//
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="!has(self.registerWithTaints)",message="spec.kubelet.registerWithTaints: joiner sets the taints nodes register with; remove it and use the NodePool's spec.template.spec.taints or startupTaints instead"
// +kubebuilder:validation:XValidation:rule="has(self.evictionSoft) == has(self.evictionSoftGracePeriod)",message="spec.kubelet: evictionSoft and evictionSoftGracePeriod go together; set both or neither"
// +kubebuilder:validation:XValidation:rule="!has(self.evictionSoft) || !has(self.evictionSoftGracePeriod) || self.evictionSoft.all(k, k in self.evictionSoftGracePeriod)",message="spec.kubelet.evictionSoftGracePeriod: every evictionSoft signal needs a grace period; add the missing keys"
// +kubebuilder:validation:XValidation:rule="!has(self.evictionSoft) || !has(self.evictionSoftGracePeriod) || self.evictionSoftGracePeriod.all(k, k in self.evictionSoft)",message="spec.kubelet.evictionSoftGracePeriod: has a signal with no evictionSoft threshold; add the threshold or remove the key"
// +kubebuilder:validation:XValidation:rule="!has(self.imageGCHighThresholdPercent) || !has(self.imageGCLowThresholdPercent) || self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent",message="spec.kubelet.imageGCHighThresholdPercent: must be greater than imageGCLowThresholdPercent"
type KubeletConfiguration struct {
	// ClusterDNS are the IP addresses of the cluster DNS servers; by default
	// the kube-dns service's cluster IP.
	//
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="self.all(ip, isIP(ip))",message="spec.kubelet.clusterDNS: every entry must be an IP address"
	// +optional
	ClusterDNS []string `json:"clusterDNS,omitempty"`

	// MaxPods caps the number of pods on the node. By default it comes from
	// the instance type (ENI-limited on AL2 and AL2023).
	//
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxPods *int32 `json:"maxPods,omitempty"`

	// PodsPerCore caps pods per vCPU; the lower of this and maxPods wins.
	// Ignored by Bottlerocket.
	//
	// +kubebuilder:validation:Minimum=0
	// +optional
	PodsPerCore *int32 `json:"podsPerCore,omitempty"`

	// SystemReserved reserves resources for OS daemons. Keys: cpu, memory,
	// ephemeral-storage, pid.
	//
	// +kubebuilder:validation:MaxProperties=4
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['cpu', 'memory', 'ephemeral-storage', 'pid'])",message="spec.kubelet.systemReserved: only cpu, memory, ephemeral-storage and pid can be reserved"
	// +kubebuilder:validation:XValidation:rule="self.all(k, isQuantity(self[k]) && !quantity(self[k]).isLessThan(quantity('0')))",message="spec.kubelet.systemReserved: values must be non-negative quantities, for example 100m or 1Gi"
	// +optional
	SystemReserved map[string]string `json:"systemReserved,omitempty"`

	// KubeReserved reserves resources for Kubernetes daemons. Keys: cpu,
	// memory, ephemeral-storage, pid. By default computed from the instance
	// type.
	//
	// +kubebuilder:validation:MaxProperties=4
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['cpu', 'memory', 'ephemeral-storage', 'pid'])",message="spec.kubelet.kubeReserved: only cpu, memory, ephemeral-storage and pid can be reserved"
	// +kubebuilder:validation:XValidation:rule="self.all(k, isQuantity(self[k]) && !quantity(self[k]).isLessThan(quantity('0')))",message="spec.kubelet.kubeReserved: values must be non-negative quantities, for example 100m or 1Gi"
	// +optional
	KubeReserved map[string]string `json:"kubeReserved,omitempty"`

	// EvictionHard are the hard eviction thresholds, signal to quantity or
	// percentage (memory.available: 100Mi, nodefs.available: 10%).
	//
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'containerfs.available', 'containerfs.inodesFree', 'pid.available'])",message="spec.kubelet.evictionHard: unknown eviction signal; use memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, containerfs.available, containerfs.inodesFree or pid.available"
	// +kubebuilder:validation:XValidation:rule="self.all(k, isQuantity(self[k].endsWith('%') ? self[k].substring(0, self[k].size() - 1) : self[k]))",message="spec.kubelet.evictionHard: values must be a quantity (100Mi) or a percentage (10%)"
	// +optional
	EvictionHard map[string]string `json:"evictionHard,omitempty"`

	// EvictionSoft are the soft eviction thresholds; each needs a grace
	// period in evictionSoftGracePeriod.
	//
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'containerfs.available', 'containerfs.inodesFree', 'pid.available'])",message="spec.kubelet.evictionSoft: unknown eviction signal; use memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, containerfs.available, containerfs.inodesFree or pid.available"
	// +kubebuilder:validation:XValidation:rule="self.all(k, isQuantity(self[k].endsWith('%') ? self[k].substring(0, self[k].size() - 1) : self[k]))",message="spec.kubelet.evictionSoft: values must be a quantity (100Mi) or a percentage (10%)"
	// +optional
	EvictionSoft map[string]string `json:"evictionSoft,omitempty"`

	// EvictionSoftGracePeriod is how long each soft threshold must hold
	// before pods are evicted.
	//
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'containerfs.available', 'containerfs.inodesFree', 'pid.available'])",message="spec.kubelet.evictionSoftGracePeriod: unknown eviction signal; use the same keys as evictionSoft"
	// +optional
	EvictionSoftGracePeriod map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`

	// EvictionMaxPodGracePeriod is the longest termination grace period,
	// in seconds, granted to pods evicted by a soft threshold.
	//
	// +optional
	EvictionMaxPodGracePeriod *int32 `json:"evictionMaxPodGracePeriod,omitempty"`

	// ImageGCHighThresholdPercent is the disk usage at which image garbage
	// collection always runs.
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`

	// ImageGCLowThresholdPercent is the disk usage image garbage collection
	// frees down to. Must be below imageGCHighThresholdPercent.
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`

	// CPUCFSQuota enforces CPU limits with CFS quota.
	//
	// +optional
	CPUCFSQuota *bool `json:"cpuCFSQuota,omitempty"`

	// RegisterWithTaints is always rejected (joiner owns the registration
	// taints); it is declared so that the CRD can say so.
	//
	// +optional
	RegisterWithTaints []corev1.Taint `json:"registerWithTaints,omitempty"`

	// Extra holds every field of the object that is not typed above, by
	// field name, each value the verbatim JSON. It is not a field of the
	// wire format: its entries appear beside the typed fields.
	Extra map[string]apiextensionsv1.JSON `json:"-"`
}
