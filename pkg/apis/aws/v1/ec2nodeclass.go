package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EC2NodeClass is the AWS-specific half of a NodePool's node template: which
// AMIs, subnets and security groups to use, how the instance authenticates
// (role or instance profile), its user data, disks and kubelet settings.
// NodePools point at it through spec.template.spec.nodeClassRef.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=ec2nodeclasses,scope=Cluster,categories=karpenter,shortName={ec2nc,ec2ncs}
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Role",type="string",JSONPath=".spec.role",priority=1
type EC2NodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   EC2NodeClassSpec   `json:"spec"`
	Status EC2NodeClassStatus `json:"status,omitempty"`
}

// EC2NodeClassList is a list of EC2NodeClasses.
//
// +kubebuilder:object:root=true
type EC2NodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EC2NodeClass `json:"items"`
}

// EC2NodeClassSpec is the desired launch configuration.
//
// Rules that span several fields are attached here; each message names the
// field at fault and how to fix it.
//
// +kubebuilder:validation:XValidation:rule="has(self.role) || has(self.instanceProfile)",message="spec: one of role or instanceProfile is required; set role to let joiner manage an instance profile, or instanceProfile to use an existing one"
// +kubebuilder:validation:XValidation:rule="!(has(self.role) && has(self.instanceProfile))",message="spec: role and instanceProfile are mutually exclusive; keep only one of them"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.role) ? has(self.role) : true",message="spec.role: cannot switch from role to instanceProfile on an existing EC2NodeClass; create a new EC2NodeClass instead"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.instanceProfile) ? has(self.instanceProfile) : true",message="spec.instanceProfile: cannot switch from instanceProfile to role on an existing EC2NodeClass; create a new EC2NodeClass instead"
// +kubebuilder:validation:XValidation:rule="has(self.amiFamily) || self.amiSelectorTerms.exists(t, has(t.alias))",message="spec.amiFamily: required when amiSelectorTerms has no alias term; set amiFamily (for example AL2023) or select AMIs with an alias such as al2023@latest"
// +kubebuilder:validation:XValidation:rule="!has(self.amiFamily) || self.amiFamily == 'Custom' || !self.amiSelectorTerms.exists(t, has(t.alias)) || self.amiSelectorTerms.exists(t, has(t.alias) && t.alias.split('@')[0] == self.amiFamily.lowerAscii())",message="spec.amiFamily: must match the family of the amiSelectorTerms alias (or be Custom); remove amiFamily or change it to the alias family"
// Fields joiner does not implement yet are refused here rather than
// accepted and ignored; docs/migrating.md lists them.
//
// +kubebuilder:validation:XValidation:rule="!has(self.networkInterfaces) || size(self.networkInterfaces) == 0",message="spec.networkInterfaces: joiner does not support custom network interface layouts (EFA) yet; remove the field"
// +kubebuilder:validation:XValidation:rule="!has(self.ipPrefixCount)",message="spec.ipPrefixCount: joiner does not support IPv4 prefix delegation yet; remove the field"
// +kubebuilder:validation:XValidation:rule="!has(self.cpuOptions)",message="spec.cpuOptions: joiner does not support CPU options (nested virtualization) yet; remove the field"
type EC2NodeClassSpec struct {
	// SubnetSelectorTerms select the subnets instances are launched into.
	// Terms are ORed; the fields of one term are ANDed.
	//
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +kubebuilder:validation:XValidation:rule="self.size() != 0",message="spec.subnetSelectorTerms: at least one term is required"
	// +required
	SubnetSelectorTerms []SubnetSelectorTerm `json:"subnetSelectorTerms"`

	// SecurityGroupSelectorTerms select the security groups attached to
	// instances. Terms are ORed; the fields of one term are ANDed.
	//
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +kubebuilder:validation:XValidation:rule="self.size() != 0",message="spec.securityGroupSelectorTerms: at least one term is required"
	// +required
	SecurityGroupSelectorTerms []SecurityGroupSelectorTerm `json:"securityGroupSelectorTerms"`

	// CapacityReservationSelectorTerms select On-Demand Capacity Reservations
	// and Capacity Blocks that instances may launch into.
	//
	// +kubebuilder:validation:MaxItems=30
	// +optional
	CapacityReservationSelectorTerms []CapacityReservationSelectorTerm `json:"capacityReservationSelectorTerms,omitempty"`

	// PlacementGroupSelector selects one existing placement group, by name
	// or by id.
	//
	// +optional
	PlacementGroupSelector *PlacementGroupSelector `json:"placementGroupSelector,omitempty"`

	// AssociatePublicIPAddress overrides the subnet's public-IP-on-launch
	// setting.
	//
	// +optional
	AssociatePublicIPAddress *bool `json:"associatePublicIPAddress,omitempty"`

	// IPPrefixCount is the number of IPv4 /28 prefixes assigned to the
	// primary network interface (prefix delegation).
	//
	// +kubebuilder:validation:Minimum=0
	// +optional
	IPPrefixCount *int32 `json:"ipPrefixCount,omitempty"`

	// AMISelectorTerms select the AMIs instances boot from. Either a single
	// alias term (family@version), or any number of id, name/owner, tags and
	// ssmParameter terms.
	//
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +kubebuilder:validation:XValidation:rule="self.size() != 0",message="spec.amiSelectorTerms: at least one term is required"
	// +kubebuilder:validation:XValidation:rule="!self.exists(t, has(t.alias)) || self.size() == 1",message="spec.amiSelectorTerms: an alias term must be the only term; remove the other terms or replace the alias with explicit id/name/tags terms"
	// +required
	AMISelectorTerms []AMISelectorTerm `json:"amiSelectorTerms"`

	// AMIFamily selects the bootstrap format (user data, default block
	// devices, kubelet flags). Optional when amiSelectorTerms uses an alias,
	// whose family is then used; required otherwise.
	//
	// +kubebuilder:validation:Enum:={AL2,AL2023,Bottlerocket,Custom,Windows2019,Windows2022,Windows2025}
	// +optional
	AMIFamily *string `json:"amiFamily,omitempty"`

	// UserData is merged with the user data joiner generates for the AMI
	// family (for Custom it is used verbatim).
	//
	// +optional
	UserData *string `json:"userData,omitempty"`

	// Role is the IAM role for the node; joiner creates and manages an
	// instance profile for it. Mutually exclusive with instanceProfile.
	//
	// +kubebuilder:validation:XValidation:rule="self != ''",message="spec.role: must not be empty; set an IAM role name or remove the field and set instanceProfile"
	// +optional
	Role string `json:"role,omitempty"`

	// InstanceProfile is an existing IAM instance profile used as is.
	// Mutually exclusive with role.
	//
	// +kubebuilder:validation:XValidation:rule="self != ''",message="spec.instanceProfile: must not be empty; set an instance profile name or remove the field and set role"
	// +optional
	InstanceProfile *string `json:"instanceProfile,omitempty"`

	// Tags are applied to instances, volumes, launch templates, fleets and
	// instance profiles. Keys that joiner itself writes are rejected.
	//
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '')",message="spec.tags: empty tag keys are not supported; give every tag a key"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('kubernetes.io/cluster'))",message="spec.tags: keys starting with kubernetes.io/cluster are set by joiner; remove them"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'eks:eks-cluster-name')",message="spec.tags: the key eks:eks-cluster-name is set by joiner; remove it"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'karpenter.sh/nodepool')",message="spec.tags: the key karpenter.sh/nodepool is set by joiner; remove it"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'karpenter.sh/nodeclaim')",message="spec.tags: the key karpenter.sh/nodeclaim is set by joiner; remove it"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'karpenter.k8s.aws/ec2nodeclass')",message="spec.tags: the key karpenter.k8s.aws/ec2nodeclass is set by joiner; remove it"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`

	// Kubelet holds the kubelet settings joiner passes through the AMI
	// family's bootstrap.
	//
	// +optional
	Kubelet *KubeletConfiguration `json:"kubelet,omitempty"`

	// BlockDeviceMappings are the instance's EBS volumes. When unset, the
	// AMI family's defaults apply.
	//
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:rule="self.filter(b, has(b.rootVolume) && b.rootVolume).size() <= 1",message="spec.blockDeviceMappings: at most one mapping may set rootVolume: true"
	// +optional
	BlockDeviceMappings []*BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`

	// InstanceStorePolicy says how local NVMe instance-store disks are used.
	// RAID0 assembles them into one array for the container runtime and
	// kubelet, and ephemeral-storage becomes their total size.
	//
	// +optional
	InstanceStorePolicy *InstanceStorePolicy `json:"instanceStorePolicy,omitempty"`

	// DetailedMonitoring enables 1-minute CloudWatch monitoring.
	//
	// +optional
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`

	// MetadataOptions configure the instance metadata service (IMDS).
	//
	// +kubebuilder:default={"httpEndpoint":"enabled","httpProtocolIPv6":"disabled","httpPutResponseHopLimit":1,"httpTokens":"required"}
	// +optional
	MetadataOptions *MetadataOptions `json:"metadataOptions,omitempty"`

	// Context is the EC2 Fleet context passed to CreateFleet.
	//
	// +optional
	Context *string `json:"context,omitempty"`

	// NetworkInterfaces are the network interfaces attached at launch, one
	// per (networkCardIndex, deviceIndex). When set, the list must hold the
	// primary interface (networkCardIndex 0, deviceIndex 0, interfaceType
	// interface) and decides how many EFA devices the instance gets: one per
	// efa-only entry, at most one per network card. When unset, joiner
	// attaches the primary interface and, for pods that request
	// vpc.amazonaws.com/efa, every EFA the instance type supports.
	//
	// +kubebuilder:validation:MaxItems=150
	// +kubebuilder:validation:XValidation:rule="self.size() == 0 || self.exists(i, i.networkCardIndex == 0 && i.deviceIndex == 0 && i.interfaceType == 'interface')",message="spec.networkInterfaces: the primary interface is missing; add {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}"
	// +kubebuilder:validation:XValidation:rule="self.all(i, self.exists_one(j, j.networkCardIndex == i.networkCardIndex && j.deviceIndex == i.deviceIndex))",message="spec.networkInterfaces: two interfaces share a networkCardIndex and deviceIndex; give each interface its own pair"
	// +kubebuilder:validation:XValidation:rule="self.all(i, i.interfaceType != 'efa-only' || self.exists_one(j, j.interfaceType == 'efa-only' && j.networkCardIndex == i.networkCardIndex))",message="spec.networkInterfaces: a network card has more than one efa-only interface; keep at most one efa-only interface per networkCardIndex"
	// +optional
	NetworkInterfaces []NetworkInterface `json:"networkInterfaces,omitempty"`

	// ConnectionTracking sets the idle timeouts of security group connection
	// tracking on the instance's network interfaces. Only Nitro instance
	// types support it, so setting it restricts the NodePool to them.
	//
	// +optional
	ConnectionTracking *ConnectionTracking `json:"connectionTracking,omitempty"`

	// CPUOptions configure the instance's processor.
	//
	// +optional
	CPUOptions *CPUOptions `json:"cpuOptions,omitempty"`
}

// NetworkInterface is one network interface attached at launch.
type NetworkInterface struct {
	// NetworkCardIndex is the network card the interface is attached to; 0
	// is the primary card.
	//
	// +kubebuilder:validation:Minimum=0
	// +required
	NetworkCardIndex int32 `json:"networkCardIndex"`

	// DeviceIndex is the interface's position on its network card; 0 is the
	// card's first interface.
	//
	// +kubebuilder:validation:Minimum=0
	// +required
	DeviceIndex int32 `json:"deviceIndex"`

	// InterfaceType is interface (an ENA interface with IP addresses; an EFA
	// with ENA when the card supports EFA and pods request it) or efa-only
	// (an EFA device without IP addresses).
	//
	// +kubebuilder:validation:Enum:={interface,efa-only}
	// +required
	InterfaceType NetworkInterfaceType `json:"interfaceType"`
}

// NetworkInterfaceType is the kind of a network interface.
type NetworkInterfaceType string

// Network interface types.
const (
	// NetworkInterfaceTypeInterface is an ENA interface with IP addresses.
	NetworkInterfaceTypeInterface NetworkInterfaceType = "interface"
	// NetworkInterfaceTypeEFAOnly is an EFA device without IP addresses.
	NetworkInterfaceTypeEFAOnly NetworkInterfaceType = "efa-only"
)

// ConnectionTracking holds idle timeouts, in seconds, for connection
// tracking. A timeout left unset keeps EC2's default for the instance type.
//
// +kubebuilder:validation:XValidation:rule="has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)",message="spec.connectionTracking: set at least one of tcpEstablishedTimeout, udpStreamTimeout or udpTimeout, or remove connectionTracking"
type ConnectionTracking struct {
	// TCPEstablishedTimeout is the idle timeout of established TCP
	// connections, 60 to 432000 seconds (5 days).
	//
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=432000
	// +optional
	TCPEstablishedTimeout *int32 `json:"tcpEstablishedTimeout,omitempty"`

	// UDPStreamTimeout is the idle timeout of UDP flows that have seen more
	// than one request-response exchange, 60 to 180 seconds.
	//
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=180
	// +optional
	UDPStreamTimeout *int32 `json:"udpStreamTimeout,omitempty"`

	// UDPTimeout is the idle timeout of UDP flows that have seen traffic in
	// one direction or a single request-response exchange, 30 to 60
	// seconds.
	//
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=60
	// +optional
	UDPTimeout *int32 `json:"udpTimeout,omitempty"`
}

// CPUOptions configure the instance's processor.
type CPUOptions struct {
	// NestedVirtualization enabled exposes hardware virtualization (/dev/kvm)
	// inside the instance, for microVMs and sandboxed runtimes, and restricts
	// the NodePool to instance types that support it.
	//
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	NestedVirtualization *string `json:"nestedVirtualization,omitempty"`
}

// Nested virtualization settings.
const (
	NestedVirtualizationEnabled  = "enabled"
	NestedVirtualizationDisabled = "disabled"
)

// AMISelectorTerm selects AMIs. Allowed shapes: alias alone; id alone;
// ssmParameter alone; any of name, owner and tags together (owner needs
// name or tags).
//
// +kubebuilder:validation:XValidation:rule="has(self.alias) || has(self.id) || has(self.name) || has(self.tags) || has(self.ssmParameter)",message="spec.amiSelectorTerms[]: a term needs one of alias, id, name, tags or ssmParameter"
// +kubebuilder:validation:XValidation:rule="!has(self.alias) || !(has(self.id) || has(self.name) || has(self.owner) || has(self.tags) || has(self.ssmParameter))",message="spec.amiSelectorTerms[].alias: must be the only field of its term; remove id, name, owner, tags and ssmParameter"
// +kubebuilder:validation:XValidation:rule="!has(self.id) || !(has(self.name) || has(self.owner) || has(self.tags) || has(self.ssmParameter))",message="spec.amiSelectorTerms[].id: must be the only field of its term; move the other fields to a separate term"
// +kubebuilder:validation:XValidation:rule="!has(self.ssmParameter) || !(has(self.name) || has(self.owner) || has(self.tags))",message="spec.amiSelectorTerms[].ssmParameter: must be the only field of its term; move the other fields to a separate term"
// +kubebuilder:validation:XValidation:rule="!has(self.owner) || has(self.name) || has(self.tags)",message="spec.amiSelectorTerms[].owner: needs name or tags in the same term; owner only narrows a name or tag lookup"
type AMISelectorTerm struct {
	// Alias selects an EKS-optimized AMI by family and version, formatted
	// family@version: al2@latest, al2023@v20240807, bottlerocket@1.20.3,
	// windows2022@latest. Windows families only support latest.
	//
	// +kubebuilder:validation:MaxLength=30
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]+@[A-Za-z0-9][A-Za-z0-9._-]*$')",message="spec.amiSelectorTerms[].alias: must look like family@version, for example al2023@latest or al2023@v20240807"
	// +kubebuilder:validation:XValidation:rule="self.split('@')[0] in ['al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025']",message="spec.amiSelectorTerms[].alias: unknown family; use one of al2, al2023, bottlerocket, windows2019, windows2022, windows2025"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('windows') || self.endsWith('@latest')",message="spec.amiSelectorTerms[].alias: Windows aliases only support the version latest, for example windows2022@latest"
	// +optional
	Alias string `json:"alias,omitempty"`

	// Tags select AMIs carrying all of these tags; the value * matches any
	// value.
	//
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '' && self[k] != '')",message="spec.amiSelectorTerms[].tags: keys and values must not be empty; use * to match any value"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`

	// ID is an AMI id (ami-...).
	//
	// +kubebuilder:validation:Pattern="^ami-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`

	// Name is an AMI name; EC2 wildcards (* and ?) are allowed.
	//
	// +optional
	Name string `json:"name,omitempty"`

	// Owner is an AWS account id or alias (self, amazon, aws-marketplace)
	// narrowing a name or tags lookup. Defaults to self and amazon.
	//
	// +optional
	Owner string `json:"owner,omitempty"`

	// SSMParameter is the name of an SSM parameter whose value is an AMI id.
	//
	// +optional
	SSMParameter string `json:"ssmParameter,omitempty"`
}

// SubnetSelectorTerm selects subnets by id alone, or by tags and/or CIDR.
//
// +kubebuilder:validation:XValidation:rule="has(self.tags) || has(self.id) || has(self.cidr)",message="spec.subnetSelectorTerms[]: a term needs tags, id or cidr"
// +kubebuilder:validation:XValidation:rule="!has(self.id) || !(has(self.tags) || has(self.cidr))",message="spec.subnetSelectorTerms[].id: must be the only field of its term; move tags or cidr to a separate term"
type SubnetSelectorTerm struct {
	// Tags select subnets carrying all of these tags; the value * matches
	// any value.
	//
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '' && self[k] != '')",message="spec.subnetSelectorTerms[].tags: keys and values must not be empty; use * to match any value"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`

	// ID is a subnet id (subnet-...).
	//
	// +kubebuilder:validation:Pattern="^subnet-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`

	// CIDR selects the subnet whose IPv4 CIDR block is exactly this one,
	// for example 10.0.32.0/19.
	//
	// +kubebuilder:validation:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="spec.subnetSelectorTerms[].cidr: must be a CIDR block such as 10.0.32.0/19"
	// +optional
	CIDR string `json:"cidr,omitempty"`
}

// SecurityGroupSelectorTerm selects security groups by tags, id or group
// name; id and name must stand alone.
//
// +kubebuilder:validation:XValidation:rule="has(self.tags) || has(self.id) || has(self.name)",message="spec.securityGroupSelectorTerms[]: a term needs tags, id or name"
// +kubebuilder:validation:XValidation:rule="!has(self.id) || !(has(self.tags) || has(self.name))",message="spec.securityGroupSelectorTerms[].id: must be the only field of its term; move tags or name to a separate term"
// +kubebuilder:validation:XValidation:rule="!has(self.name) || !(has(self.tags) || has(self.id))",message="spec.securityGroupSelectorTerms[].name: must be the only field of its term; move tags or id to a separate term"
type SecurityGroupSelectorTerm struct {
	// Tags select security groups carrying all of these tags; the value *
	// matches any value.
	//
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '' && self[k] != '')",message="spec.securityGroupSelectorTerms[].tags: keys and values must not be empty; use * to match any value"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`

	// ID is a security group id (sg-...).
	//
	// +kubebuilder:validation:Pattern="^sg-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`

	// Name is the security group's group name (not its Name tag).
	//
	// +optional
	Name string `json:"name,omitempty"`
}

// CapacityReservationSelectorTerm selects capacity reservations: by id
// alone, or by tags (optionally narrowed by ownerID) and/or
// instanceMatchCriteria.
//
// +kubebuilder:validation:XValidation:rule="has(self.id) || has(self.tags) || has(self.instanceMatchCriteria)",message="spec.capacityReservationSelectorTerms[]: a term needs id, tags or instanceMatchCriteria"
// +kubebuilder:validation:XValidation:rule="!has(self.id) || !(has(self.tags) || has(self.ownerID) || has(self.instanceMatchCriteria))",message="spec.capacityReservationSelectorTerms[].id: must be the only field of its term; move the other fields to a separate term"
// +kubebuilder:validation:XValidation:rule="!has(self.ownerID) || has(self.tags)",message="spec.capacityReservationSelectorTerms[].ownerID: needs tags in the same term; ownerID only narrows a tag lookup"
type CapacityReservationSelectorTerm struct {
	// Tags select reservations carrying all of these tags; the value *
	// matches any value.
	//
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '' && self[k] != '')",message="spec.capacityReservationSelectorTerms[].tags: keys and values must not be empty; use * to match any value"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`

	// ID is a capacity reservation id (cr-...).
	//
	// +kubebuilder:validation:Pattern="^cr-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`

	// OwnerID is the 12-digit AWS account that owns the reservation.
	//
	// +kubebuilder:validation:Pattern="^[0-9]{12}$"
	// +optional
	OwnerID string `json:"ownerID,omitempty"`

	// InstanceMatchCriteria selects open reservations (any matching
	// instance may use them) or targeted ones (only launches that name them).
	//
	// +kubebuilder:validation:Enum:={open,targeted}
	// +optional
	InstanceMatchCriteria string `json:"instanceMatchCriteria,omitempty"`
}

// PlacementGroupSelector selects one placement group by name or by id.
//
// +kubebuilder:validation:XValidation:rule="has(self.name) != has(self.id)",message="spec.placementGroupSelector: set exactly one of name or id"
type PlacementGroupSelector struct {
	// Name is the placement group's name.
	//
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Name string `json:"name,omitempty"`

	// ID is the placement group's id (pg-...).
	//
	// +kubebuilder:validation:Pattern="^pg-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
}

// MetadataOptions configure the instance metadata service. The defaults
// (IMDSv2 required, hop limit 1) keep pods from reaching the node's
// credentials.
type MetadataOptions struct {
	// HTTPEndpoint enables or disables the metadata endpoint.
	//
	// +kubebuilder:default=enabled
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPEndpoint *string `json:"httpEndpoint,omitempty"`

	// HTTPProtocolIPv6 enables the IPv6 metadata endpoint.
	//
	// +kubebuilder:default=disabled
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPProtocolIPv6 *string `json:"httpProtocolIPv6,omitempty"`

	// HTTPPutResponseHopLimit is the IP hop limit of metadata responses.
	//
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	HTTPPutResponseHopLimit *int64 `json:"httpPutResponseHopLimit,omitempty"`

	// HTTPTokens says whether session tokens (IMDSv2) are required.
	//
	// +kubebuilder:default=required
	// +kubebuilder:validation:Enum:={required,optional}
	// +optional
	HTTPTokens *string `json:"httpTokens,omitempty"`
}

// BlockDeviceMapping attaches one EBS volume.
type BlockDeviceMapping struct {
	// DeviceName is the device name, for example /dev/xvda.
	//
	// +optional
	DeviceName *string `json:"deviceName,omitempty"`

	// EBS describes the volume.
	//
	// +optional
	EBS *BlockDevice `json:"ebs,omitempty"`

	// RootVolume marks the volume the AMI's root file system lives on; at
	// most one mapping may set it.
	//
	// +optional
	RootVolume bool `json:"rootVolume,omitempty"`
}

// BlockDevice is an EBS volume.
//
// +kubebuilder:validation:XValidation:rule="has(self.snapshotID) || has(self.volumeSize)",message="spec.blockDeviceMappings[].ebs: set volumeSize, snapshotID, or both"
// +kubebuilder:validation:XValidation:rule="!has(self.volumeInitializationRate) || has(self.snapshotID)",message="spec.blockDeviceMappings[].ebs.volumeInitializationRate: only applies to volumes created from a snapshot; set snapshotID or remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.iops) || !has(self.volumeType) || self.volumeType in ['io1', 'io2', 'gp3']",message="spec.blockDeviceMappings[].ebs.iops: only io1, io2 and gp3 volumes take iops; change volumeType or remove iops"
// +kubebuilder:validation:XValidation:rule="!has(self.throughput) || !has(self.volumeType) || self.volumeType == 'gp3'",message="spec.blockDeviceMappings[].ebs.throughput: only gp3 volumes take throughput; change volumeType to gp3 or remove throughput"
type BlockDevice struct {
	// DeleteOnTermination deletes the volume when the instance terminates.
	//
	// +optional
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`

	// Encrypted encrypts the volume.
	//
	// +optional
	Encrypted *bool `json:"encrypted,omitempty"`

	// IOPS is the provisioned I/O operations per second (io1, io2, gp3).
	//
	// +kubebuilder:validation:Minimum=0
	// +optional
	IOPS *int64 `json:"iops,omitempty"`

	// KMSKeyID is the KMS key (ARN) used to encrypt the volume.
	//
	// +optional
	KMSKeyID *string `json:"kmsKeyID,omitempty"`

	// SnapshotID is the snapshot the volume is created from.
	//
	// +optional
	SnapshotID *string `json:"snapshotID,omitempty"`

	// Throughput is the gp3 throughput in MiB/s.
	//
	// +kubebuilder:validation:Minimum=125
	// +kubebuilder:validation:Maximum=2000
	// +optional
	Throughput *int64 `json:"throughput,omitempty"`

	// VolumeInitializationRate is the rate, in MiB/s, at which a volume
	// created from a snapshot is initialized.
	//
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=300
	// +optional
	VolumeInitializationRate *int32 `json:"volumeInitializationRate,omitempty"`

	// VolumeSize is the volume's size with a unit: Gi or G up to 64000,
	// Ti or T up to 64, for example 20Gi or 1Ti.
	//
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type:=string
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:Pattern:="^(([1-9][0-9]{0,4})(Gi|G)|([1-9][0-9]?)(Ti|T))$"
	// +kubebuilder:validation:XValidation:rule="quantity(self).compareTo(quantity('64Ti')) <= 0",message="spec.blockDeviceMappings[].ebs.volumeSize: EBS volumes are at most 64Ti; choose a smaller size"
	// +optional
	VolumeSize *resource.Quantity `json:"volumeSize,omitempty"`

	// VolumeType is the EBS volume type.
	//
	// +kubebuilder:validation:Enum:={standard,io1,io2,gp2,sc1,st1,gp3}
	// +optional
	VolumeType *string `json:"volumeType,omitempty"`
}

// InstanceStorePolicy says how instance-store disks are used.
//
// +kubebuilder:validation:Enum:={RAID0}
type InstanceStorePolicy string

// InstanceStorePolicyRAID0 assembles all local NVMe disks into one RAID-0
// array used by the container runtime and kubelet.
const InstanceStorePolicyRAID0 InstanceStorePolicy = "RAID0"
