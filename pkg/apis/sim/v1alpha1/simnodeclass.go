package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults the API server applies (and ApplyDefaults mirrors in Go).
const (
	DefaultRegion            = "sim-east-1"
	DefaultCatalog           = "aws-like"
	DefaultLaunchDelay       = 2 * time.Second
	DefaultRegistrationDelay = 1 * time.Second
)

// DefaultZones are the zones of a SimNodeClass that names none.
var DefaultZones = []string{"sim-east-1a", "sim-east-1b", "sim-east-1c"}

// SimNodeClass describes a slice of joiner's simulated cloud: its region
// and zones, the instance catalog it offers, how long launches and
// registrations take, and which failures to inject. NodePools point at it
// through spec.template.spec.nodeClassRef (group sim.joiner.dev, kind
// SimNodeClass).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=simnodeclasses,scope=Cluster,categories=joiner,shortName={simnc,simncs}
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Region",type="string",JSONPath=".spec.region"
// +kubebuilder:printcolumn:name="Catalog",type="string",JSONPath=".spec.catalog.name",priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type SimNodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:default={}
	Spec   SimNodeClassSpec   `json:"spec,omitempty"`
	Status SimNodeClassStatus `json:"status,omitempty"`
}

// SimNodeClassList is a list of SimNodeClasses.
//
// +kubebuilder:object:root=true
type SimNodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SimNodeClass `json:"items"`
}

// SimNodeClassSpec is the simulated environment and its injected faults.
//
// +kubebuilder:validation:XValidation:rule="!has(self.zones) || !has(self.region) || self.zones.all(z, z.startsWith(self.region))",message="spec.zones: every zone must start with the region name (spec.region); rename the zones or change the region, and set zones explicitly when the region is not sim-east-1"
// +kubebuilder:validation:XValidation:rule="!has(self.faults) || !has(self.faults.subnetIPExhaustedZones) || (has(self.zones) && self.faults.subnetIPExhaustedZones.all(z, z in self.zones))",message="spec.faults.subnetIPExhaustedZones: every zone must be one of spec.zones"
// +kubebuilder:validation:XValidation:rule="!has(self.faults) || !has(self.faults.insufficientCapacity) || self.faults.insufficientCapacity.all(f, !has(f.zone) || (has(self.zones) && f.zone in self.zones))",message="spec.faults.insufficientCapacity[].zone: must be one of spec.zones, or empty for every zone"
type SimNodeClassSpec struct {
	// Region is the simulated region; it becomes the nodes'
	// topology.kubernetes.io/region label.
	//
	// +kubebuilder:default=sim-east-1
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
	// +optional
	Region string `json:"region,omitempty"`

	// Zones are the zones instances launch into; each becomes a
	// topology.kubernetes.io/zone value. Defaults to sim-east-1a, -1b, -1c.
	//
	// +kubebuilder:default={sim-east-1a,sim-east-1b,sim-east-1c}
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.size() > 0",message="spec.zones: at least one zone is required; remove the field to get the three default zones"
	// +kubebuilder:validation:XValidation:rule="self.all(z, self.exists_one(y, y == z))",message="spec.zones: zones must be unique; remove the duplicate"
	// +listType=atomic
	// +optional
	Zones []string `json:"zones,omitempty"`

	// Catalog selects the built-in instance catalog offered in every zone.
	//
	// +kubebuilder:default={name: aws-like}
	// +optional
	Catalog Catalog `json:"catalog,omitempty"`

	// LaunchDelay is how long a simulated instance takes from the launch
	// request until it is running.
	//
	// +kubebuilder:default="2s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('1h')",message="spec.launchDelay: must be at most 1h, for example 2s or 30s"
	// +optional
	LaunchDelay metav1.Duration `json:"launchDelay,omitempty"`

	// RegistrationDelay is how long a running instance takes until its Node
	// registers with the API server.
	//
	// +kubebuilder:default="1s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('1h')",message="spec.registrationDelay: must be at most 1h, for example 1s or 10s"
	// +optional
	RegistrationDelay metav1.Duration `json:"registrationDelay,omitempty"`

	// ImageVersion is the version of the machine image new instances boot
	// from, like an EC2NodeClass's AMI selector pinned to a release: it
	// becomes part of each instance's status.imageID. Changing it makes the
	// instances launched from the old image drift (reason ImageDrifted), so
	// joiner replaces them, as it does nodes whose AMI changed on AWS.
	// Empty means the catalog's default image.
	//
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9._]*[A-Za-z0-9])?$')",messageExpression="'spec.imageVersion: \"' + self + '\" is not a valid image version: use letters, digits, \"-\", \"_\" and \".\", starting and ending with a letter or digit, for example v1.2.3'"
	// +optional
	ImageVersion string `json:"imageVersion,omitempty"`

	// Tags are applied to every simulated instance, next to the ownership
	// tags joiner writes itself.
	//
	// +kubebuilder:validation:MaxProperties=50
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '')",message="spec.tags: empty tag keys are not supported; give every tag a key"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`

	// Faults inject failures into launches and registrations.
	//
	// +optional
	Faults *Faults `json:"faults,omitempty"`
}

// Catalog names an instance catalog and optionally narrows it.
type Catalog struct {
	// Name is the built-in catalog: aws-like offers AWS-shaped instance
	// types (families such as m5, c6g, r7i, t4g) with on-demand and spot
	// prices.
	//
	// +kubebuilder:default=aws-like
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
	// +optional
	Name string `json:"name,omitempty"`

	// InstanceFamilies, when set, offers only these families of the
	// catalog (for example m5, c6g).
	//
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:Pattern="^[a-z0-9-]+$"
	// +listType=set
	// +optional
	InstanceFamilies []string `json:"instanceFamilies,omitempty"`
}

// Faults are the failures a SimNodeClass injects. Each reproduces a failure
// mode seen with Karpenter on AWS; the field docs name the case.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.neverRegister) && self.neverRegister) || !((has(self.dropStartupTaints) && self.dropStartupTaints) || (has(self.wrongArchitecture) && self.wrongArchitecture) || (has(self.unregisteredTaintMissing) && self.unregisteredTaintMissing))",message="spec.faults.neverRegister: no Node ever registers, so dropStartupTaints, wrongArchitecture and unregisteredTaintMissing would have no effect; remove them or use a separate SimNodeClass"
type Faults struct {
	// NeverRegister launches instances whose Node never joins the cluster.
	// Reproduces ARM64 instances booted from an amd64-only AMI, and nodes
	// whose IAM role is missing from the aws-auth ConfigMap: the NodeClaim
	// is Launched but never Registered, and joiner must give up after the
	// registration TTL and delete it.
	//
	// +optional
	NeverRegister bool `json:"neverRegister,omitempty"`

	// DropStartupTaints registers Nodes without the NodePool's startup
	// taints, as a custom AMI's user data that loses --register-with-taints
	// (a mis-quoted --kubelet-extra-args) does. Karpenter then never sees
	// the taints it waits for, never marks the node initialized, and
	// replaces it after 15 minutes.
	//
	// +optional
	DropStartupTaints bool `json:"dropStartupTaints,omitempty"`

	// UnregisteredTaintMissing registers Nodes without the
	// karpenter.sh/unregistered:NoExecute taint, as custom user data that
	// does not pass joiner's registerWithTaints does; joiner reports it with
	// an UnregisteredTaintMissing event.
	//
	// +optional
	UnregisteredTaintMissing bool `json:"unregisteredTaintMissing,omitempty"`

	// WrongArchitecture registers Nodes whose kubernetes.io/arch label
	// differs from the launched instance type's architecture (amd64 nodes
	// report arm64 and the reverse), as when the AMI and instance type
	// disagree in a NodePool mixing architectures.
	//
	// +optional
	WrongArchitecture bool `json:"wrongArchitecture,omitempty"`

	// ExtendedResourcesMissing registers Nodes whose capacity and
	// allocatable lack the instance type's extended resources (such as
	// nvidia.com/gpu), as when the device plugin DaemonSet never runs on
	// the node. The NodeClaim is never initialized, and joiner deletes it
	// after the initialization TTL naming the missing resource.
	//
	// +optional
	ExtendedResourcesMissing bool `json:"extendedResourcesMissing,omitempty"`

	// InsufficientCapacity makes matching launches fail with an
	// insufficient-capacity error (EC2's InsufficientInstanceCapacity), so
	// joiner must mark the offering unavailable and fall back to another
	// instance type, zone or capacity type.
	//
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +optional
	InsufficientCapacity []InsufficientCapacityFault `json:"insufficientCapacity,omitempty"`

	// SubnetIPExhaustedZones are zones whose subnet has no free IP address:
	// every launch there fails with InsufficientFreeAddressesInSubnet, as
	// when a subnet's CIDR range is used up.
	//
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	// +optional
	SubnetIPExhaustedZones []string `json:"subnetIPExhaustedZones,omitempty"`
}

// InsufficientCapacityFault selects the offerings that have no capacity. An
// empty field matches every value, so {} makes every launch fail.
type InsufficientCapacityFault struct {
	// InstanceType is an instance type name, for example m5.large.
	//
	// +kubebuilder:validation:MaxLength=63
	// +optional
	InstanceType string `json:"instanceType,omitempty"`

	// Zone is one of spec.zones.
	//
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Zone string `json:"zone,omitempty"`

	// CapacityType is spot, on-demand or reserved.
	//
	// +kubebuilder:validation:Enum:={spot,on-demand,reserved}
	// +optional
	CapacityType string `json:"capacityType,omitempty"`
}

// Matches reports whether the fault applies to a launch of instanceType in
// zone with capacityType.
func (f InsufficientCapacityFault) Matches(instanceType, zone, capacityType string) bool {
	return (f.InstanceType == "" || f.InstanceType == instanceType) &&
		(f.Zone == "" || f.Zone == zone) &&
		(f.CapacityType == "" || f.CapacityType == capacityType)
}
