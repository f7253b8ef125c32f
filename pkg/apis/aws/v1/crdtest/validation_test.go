package crdtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	"github.com/joiner-dev/joiner/pkg/test"
)

// newEC2NodeClass returns a minimal valid EC2NodeClass with a name unique to t.
func newEC2NodeClass(t *testing.T) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: awsv1.SchemeGroupVersion.String(), Kind: "EC2NodeClass"},
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "ec2nc")},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       "KarpenterNodeRole-test",
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
		},
	}
}

// toUnstructured converts obj so a test can set fields the Go types cannot
// express (an empty role, a string where a number belongs).
func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// createEC2NodeClass creates the object (after the optional raw edit of its
// spec), deleting it when t ends, and returns the API server's error.
func createEC2NodeClass(t *testing.T, nc *awsv1.EC2NodeClass, raw func(spec map[string]any)) error {
	t.Helper()
	u := toUnstructured(t, nc)
	if raw != nil {
		raw(u.Object["spec"].(map[string]any))
	}
	c := test.Env(t).Client
	err := c.Create(t.Context(), u)
	if err == nil {
		t.Cleanup(func() {
			_ = c.Delete(context.Background(), u)
		})
	}
	return err
}

// expectRejected asserts err is the API server's Invalid error and that its
// message holds every one of wants.
func expectRejected(t *testing.T, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the API server accepted the object; want it rejected with %q", wants)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid error, got %v", err)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not mention %q:\n%v", w, err)
		}
	}
}

func TestEC2NodeClassRejected(t *testing.T) {
	tagged := map[string]string{"team": "a"}
	bdm := func(size string) *awsv1.BlockDeviceMapping {
		q := resource.MustParse(size)
		return &awsv1.BlockDeviceMapping{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: &q}}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*awsv1.EC2NodeClassSpec)
		raw    func(spec map[string]any)
		want   []string
	}{
		// Role and instance profile.
		{
			name:   "neither role nor instanceProfile",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.Role = "" },
			want:   []string{"spec: one of role or instanceProfile is required"},
		},
		{
			name:   "both role and instanceProfile",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.InstanceProfile = ptr.To("profile") },
			want:   []string{"spec: role and instanceProfile are mutually exclusive"},
		},
		{
			name: "empty role",
			raw:  func(s map[string]any) { s["role"] = "" },
			want: []string{"spec.role: must not be empty"},
		},
		{
			name:   "empty instanceProfile",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.Role = ""; s.InstanceProfile = ptr.To("") },
			want:   []string{"spec.instanceProfile: must not be empty"},
		},
		// AMI selection.
		{
			name: "no amiSelectorTerms",
			raw:  func(s map[string]any) { s["amiSelectorTerms"] = []any{} },
			want: []string{"spec.amiSelectorTerms: at least one term is required"},
		},
		{
			name: "empty AMI term",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.AMIFamily = ptr.To("AL2023")
				s.AMISelectorTerms = []awsv1.AMISelectorTerm{{}}
			},
			want: []string{"a term needs one of alias, id, name, tags or ssmParameter"},
		},
		{
			name:   "alias with id in one term",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.AMISelectorTerms[0].ID = "ami-0123456789abcdef0" },
			want:   []string{"alias: must be the only field of its term"},
		},
		{
			name: "alias next to another term",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.AMISelectorTerms = append(s.AMISelectorTerms, awsv1.AMISelectorTerm{ID: "ami-0123456789abcdef0"})
			},
			want: []string{"an alias term must be the only term"},
		},
		{
			name:   "alias without version",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.AMISelectorTerms[0].Alias = "al2023" },
			want:   []string{"must look like family@version"},
		},
		{
			name:   "alias of an unknown family",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.AMISelectorTerms[0].Alias = "ubuntu@latest" },
			want:   []string{"unknown family; use one of al2, al2023, bottlerocket"},
		},
		{
			name:   "pinned Windows alias",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.AMISelectorTerms[0].Alias = "windows2022@v20240807" },
			want:   []string{"Windows aliases only support the version latest"},
		},
		{
			name:   "amiFamily disagrees with alias",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.AMIFamily = ptr.To("AL2") },
			want:   []string{"spec.amiFamily: must match the family of the amiSelectorTerms alias (or be Custom)"},
		},
		{
			name: "amiFamily missing without alias",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-0123456789abcdef0"}}
			},
			want: []string{"spec.amiFamily: required when amiSelectorTerms has no alias term"},
		},
		{
			name:   "unknown amiFamily",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.AMIFamily = ptr.To("Ubuntu") },
			want:   []string{"spec.amiFamily", "Unsupported value"},
		},
		{
			name: "AMI id with tags",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.AMIFamily = ptr.To("AL2023")
				s.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-0123456789abcdef0", Tags: tagged}}
			},
			want: []string{"amiSelectorTerms[].id: must be the only field of its term"},
		},
		{
			name: "AMI owner without name or tags",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.AMIFamily = ptr.To("AL2023")
				s.AMISelectorTerms = []awsv1.AMISelectorTerm{{Owner: "self"}}
			},
			want: []string{"owner: needs name or tags in the same term"},
		},
		{
			name: "AMI ssmParameter with name",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.AMIFamily = ptr.To("AL2023")
				s.AMISelectorTerms = []awsv1.AMISelectorTerm{{SSMParameter: "/my/ami", Name: "my-ami"}}
			},
			want: []string{"ssmParameter: must be the only field of its term"},
		},
		{
			name: "malformed AMI id",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.AMIFamily = ptr.To("AL2023")
				s.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "image-1234"}}
			},
			want: []string{"spec.amiSelectorTerms[0].id", "should match '^ami-[0-9a-z]+$'"},
		},
		{
			name: "empty AMI tag value",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.AMIFamily = ptr.To("AL2023")
				s.AMISelectorTerms = []awsv1.AMISelectorTerm{{Tags: map[string]string{"Name": ""}}}
			},
			want: []string{"amiSelectorTerms[].tags: keys and values must not be empty; use * to match any value"},
		},
		// Subnets, security groups, capacity reservations, placement groups.
		{
			name: "no subnetSelectorTerms",
			raw:  func(s map[string]any) { s["subnetSelectorTerms"] = []any{} },
			want: []string{"spec.subnetSelectorTerms: at least one term is required"},
		},
		{
			name:   "empty subnet term",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{}} },
			want:   []string{"subnetSelectorTerms[]: a term needs tags, id or cidr"},
		},
		{
			name:   "subnet id with tags",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.SubnetSelectorTerms[0].ID = "subnet-0123" },
			want:   []string{"subnetSelectorTerms[].id: must be the only field of its term"},
		},
		{
			name:   "malformed subnet cidr",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.SubnetSelectorTerms[0].CIDR = "10.0.0.0/33" },
			want:   []string{"subnetSelectorTerms[].cidr: must be a CIDR block"},
		},
		{
			name: "too many subnet terms",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.SubnetSelectorTerms = nil
				for i := range 31 {
					s.SubnetSelectorTerms = append(s.SubnetSelectorTerms, awsv1.SubnetSelectorTerm{ID: fmt.Sprintf("subnet-%d", i)})
				}
			},
			want: []string{"spec.subnetSelectorTerms", "must have at most 30 items"},
		},
		{
			name: "no securityGroupSelectorTerms",
			raw:  func(s map[string]any) { s["securityGroupSelectorTerms"] = []any{} },
			want: []string{"spec.securityGroupSelectorTerms: at least one term is required"},
		},
		{
			name:   "empty security group term",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{}} },
			want:   []string{"securityGroupSelectorTerms[]: a term needs tags, id or name"},
		},
		{
			name: "security group name with id",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{ID: "sg-0123", Name: "nodes"}}
			},
			want: []string{"securityGroupSelectorTerms[].id: must be the only field", "securityGroupSelectorTerms[].name: must be the only field"},
		},
		{
			name: "capacity reservation id with tags",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0123", Tags: tagged}}
			},
			want: []string{"capacityReservationSelectorTerms[].id: must be the only field of its term"},
		},
		{
			name: "capacity reservation ownerID without tags",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{OwnerID: "123456789012", InstanceMatchCriteria: "open"}}
			},
			want: []string{"capacityReservationSelectorTerms[].ownerID: needs tags in the same term"},
		},
		{
			name: "capacity reservation ownerID not 12 digits",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{OwnerID: "1234", Tags: tagged}}
			},
			want: []string{"spec.capacityReservationSelectorTerms[0].ownerID", "should match '^[0-9]{12}$'"},
		},
		{
			name: "placement group by name and id",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: "pg", ID: "pg-0123"}
			},
			want: []string{"spec.placementGroupSelector: set exactly one of name or id"},
		},
		{
			name:   "empty placement group selector",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.PlacementGroupSelector = &awsv1.PlacementGroupSelector{} },
			want:   []string{"spec.placementGroupSelector: set exactly one of name or id"},
		},
		// Tags.
		{
			name:   "empty tag key",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.Tags = map[string]string{"": "x"} },
			want:   []string{"spec.tags: empty tag keys are not supported"},
		},
		{
			name:   "cluster ownership tag",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.Tags = map[string]string{"kubernetes.io/cluster/prod": "owned"} },
			want:   []string{"spec.tags: keys starting with kubernetes.io/cluster are set by joiner"},
		},
		{
			name:   "eks cluster name tag",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.Tags = map[string]string{"eks:eks-cluster-name": "prod"} },
			want:   []string{"spec.tags: the key eks:eks-cluster-name is set by joiner"},
		},
		{
			name:   "nodepool tag",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.Tags = map[string]string{"karpenter.sh/nodepool": "default"} },
			want:   []string{"spec.tags: the key karpenter.sh/nodepool is set by joiner"},
		},
		{
			name:   "nodeclaim tag",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.Tags = map[string]string{"karpenter.sh/nodeclaim": "x"} },
			want:   []string{"spec.tags: the key karpenter.sh/nodeclaim is set by joiner"},
		},
		{
			name:   "ec2nodeclass tag",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.Tags = map[string]string{"karpenter.k8s.aws/ec2nodeclass": "x"} },
			want:   []string{"spec.tags: the key karpenter.k8s.aws/ec2nodeclass is set by joiner"},
		},
		// Block devices.
		{
			name: "two root volumes",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				a, b := bdm("20Gi"), bdm("40Gi")
				a.RootVolume, b.RootVolume = true, true
				b.DeviceName = ptr.To("/dev/xvdb")
				s.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{a, b}
			},
			want: []string{"spec.blockDeviceMappings: at most one mapping may set rootVolume: true"},
		},
		{
			name: "volume without size or snapshot",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeType: ptr.To("gp3")}}}
			},
			want: []string{"ebs: set volumeSize, snapshotID, or both"},
		},
		{
			name: "volumeInitializationRate without snapshot",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				b := bdm("20Gi")
				b.EBS.VolumeInitializationRate = ptr.To[int32](200)
				s.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{b}
			},
			want: []string{"ebs.volumeInitializationRate: only applies to volumes created from a snapshot"},
		},
		{
			name: "volume size without unit",
			raw: func(s map[string]any) {
				s["blockDeviceMappings"] = []any{map[string]any{"deviceName": "/dev/xvda", "ebs": map[string]any{"volumeSize": "100"}}}
			},
			want: []string{"spec.blockDeviceMappings[0].ebs.volumeSize", "should match"},
		},
		{
			name:   "volume above 64Ti",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{bdm("70Ti")} },
			want:   []string{"ebs.volumeSize: EBS volumes are at most 64Ti"},
		},
		{
			name: "unknown volume type",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				b := bdm("20Gi")
				b.EBS.VolumeType = ptr.To("gp4")
				s.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{b}
			},
			want: []string{"spec.blockDeviceMappings[0].ebs.volumeType", "Unsupported value: \"gp4\""},
		},
		{
			name: "iops on gp2",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				b := bdm("20Gi")
				b.EBS.VolumeType, b.EBS.IOPS = ptr.To("gp2"), ptr.To[int64](3000)
				s.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{b}
			},
			want: []string{"ebs.iops: only io1, io2 and gp3 volumes take iops"},
		},
		{
			name: "throughput on io2",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				b := bdm("20Gi")
				b.EBS.VolumeType, b.EBS.Throughput = ptr.To("io2"), ptr.To[int64](250)
				s.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{b}
			},
			want: []string{"ebs.throughput: only gp3 volumes take throughput"},
		},
		{
			name: "more than 50 block devices",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				for range 51 {
					s.BlockDeviceMappings = append(s.BlockDeviceMappings, bdm("1Gi"))
				}
			},
			want: []string{"spec.blockDeviceMappings", "must have at most 50 items"},
		},
		{
			name:   "unknown instance store policy",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicy("RAID1")) },
			want:   []string{"spec.instanceStorePolicy", "Unsupported value: \"RAID1\""},
		},
		// Metadata options.
		{
			name: "hop limit above 64",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.MetadataOptions = &awsv1.MetadataOptions{HTTPPutResponseHopLimit: ptr.To[int64](65)}
			},
			want: []string{"spec.metadataOptions.httpPutResponseHopLimit", "should be less than or equal to 64"},
		},
		{
			name: "unknown httpTokens",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.MetadataOptions = &awsv1.MetadataOptions{HTTPTokens: ptr.To("sometimes")}
			},
			want: []string{"spec.metadataOptions.httpTokens", "Unsupported value: \"sometimes\""},
		},
		// Kubelet.
		{
			name: "evictionSoft without grace periods",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.Kubelet = &awsv1.KubeletConfiguration{EvictionSoft: map[string]string{"memory.available": "500Mi"}}
			},
			want: []string{"spec.kubelet: evictionSoft and evictionSoftGracePeriod go together"},
		},
		{
			name: "evictionSoft signal without its grace period",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.Kubelet = &awsv1.KubeletConfiguration{
					EvictionSoft:            map[string]string{"memory.available": "500Mi", "nodefs.available": "15%"},
					EvictionSoftGracePeriod: map[string]metav1.Duration{"memory.available": {Duration: 60e9}},
				}
			},
			want: []string{"spec.kubelet.evictionSoftGracePeriod: every evictionSoft signal needs a grace period"},
		},
		{
			name: "grace period without evictionSoft signal",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.Kubelet = &awsv1.KubeletConfiguration{
					EvictionSoft:            map[string]string{"memory.available": "500Mi"},
					EvictionSoftGracePeriod: map[string]metav1.Duration{"memory.available": {Duration: 60e9}, "pid.available": {Duration: 60e9}},
				}
			},
			want: []string{"spec.kubelet.evictionSoftGracePeriod: has a signal with no evictionSoft threshold"},
		},
		{
			name: "reserving gpus",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.Kubelet = &awsv1.KubeletConfiguration{SystemReserved: map[string]string{"nvidia.com/gpu": "1"}}
			},
			want: []string{"spec.kubelet.systemReserved: only cpu, memory, ephemeral-storage and pid can be reserved"},
		},
		{
			name: "negative kubeReserved",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.Kubelet = &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"memory": "-1Gi"}}
			},
			want: []string{"spec.kubelet.kubeReserved: values must be non-negative quantities"},
		},
		{
			name: "unknown eviction signal",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.Kubelet = &awsv1.KubeletConfiguration{EvictionHard: map[string]string{"memory.free": "100Mi"}}
			},
			want: []string{"spec.kubelet.evictionHard: unknown eviction signal"},
		},
		{
			name: "eviction threshold that is no quantity",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.Kubelet = &awsv1.KubeletConfiguration{EvictionHard: map[string]string{"memory.available": "lots"}}
			},
			want: []string{"spec.kubelet.evictionHard: values must be a quantity (100Mi) or a percentage (10%)"},
		},
		{
			name: "image GC high below low",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.Kubelet = &awsv1.KubeletConfiguration{ImageGCHighThresholdPercent: ptr.To[int32](50), ImageGCLowThresholdPercent: ptr.To[int32](80)}
			},
			want: []string{"spec.kubelet.imageGCHighThresholdPercent: must be greater than imageGCLowThresholdPercent"},
		},
		{
			name: "cluster DNS that is no IP",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.Kubelet = &awsv1.KubeletConfiguration{ClusterDNS: []string{"kube-dns"}}
			},
			want: []string{"spec.kubelet.clusterDNS: every entry must be an IP address"},
		},
		{
			name:   "negative maxPods",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](-1)} },
			want:   []string{"spec.kubelet.maxPods", "should be greater than or equal to 0"},
		},
		{
			name: "registerWithTaints",
			raw: func(s map[string]any) {
				s["kubelet"] = map[string]any{"registerWithTaints": []any{map[string]any{"key": "example.com/gpu", "effect": "NoSchedule"}}}
			},
			want: []string{"spec.kubelet.registerWithTaints: joiner sets the taints nodes register with", "startupTaints"},
		},
		{
			name: "typed kubelet field still validated beside extra fields",
			raw: func(s map[string]any) {
				s["kubelet"] = map[string]any{"cpuManagerPolicy": "static", "maxPods": "many"}
			},
			want: []string{"spec.kubelet.maxPods", "must be of type integer"},
		},
		// Network interfaces.
		{
			name: "network interfaces without the primary",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.NetworkInterfaces = []awsv1.NetworkInterface{{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.NetworkInterfaceTypeEFAOnly}}
			},
			want: []string{"spec.networkInterfaces: the primary interface is missing; add {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}"},
		},
		{
			name: "efa-only primary",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.NetworkInterfaces = []awsv1.NetworkInterface{{InterfaceType: awsv1.NetworkInterfaceTypeEFAOnly}}
			},
			want: []string{"spec.networkInterfaces: the primary interface is missing"},
		},
		{
			name: "duplicate card and device",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.NetworkInterfaces = []awsv1.NetworkInterface{
					{InterfaceType: awsv1.NetworkInterfaceTypeInterface},
					{NetworkCardIndex: 1, InterfaceType: awsv1.NetworkInterfaceTypeEFAOnly},
					{NetworkCardIndex: 1, InterfaceType: awsv1.NetworkInterfaceTypeInterface},
				}
			},
			want: []string{"spec.networkInterfaces: two interfaces share a networkCardIndex and deviceIndex; give each interface its own pair"},
		},
		{
			name: "two efa-only interfaces on one card",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.NetworkInterfaces = []awsv1.NetworkInterface{
					{InterfaceType: awsv1.NetworkInterfaceTypeInterface},
					{NetworkCardIndex: 0, DeviceIndex: 1, InterfaceType: awsv1.NetworkInterfaceTypeEFAOnly},
					{NetworkCardIndex: 0, DeviceIndex: 2, InterfaceType: awsv1.NetworkInterfaceTypeEFAOnly},
				}
			},
			want: []string{"spec.networkInterfaces: a network card has more than one efa-only interface; keep at most one efa-only interface per networkCardIndex"},
		},
		{
			name: "unknown interface type",
			raw: func(s map[string]any) {
				s["networkInterfaces"] = []any{map[string]any{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa"}}
			},
			want: []string{"spec.networkInterfaces[0].interfaceType", "Unsupported value: \"efa\""},
		},
		{
			name: "interface without interfaceType",
			raw: func(s map[string]any) {
				s["networkInterfaces"] = []any{map[string]any{"networkCardIndex": 0, "deviceIndex": 0}}
			},
			want: []string{"spec.networkInterfaces[0].interfaceType", "Required value"},
		},
		{
			name: "negative networkCardIndex",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.NetworkInterfaces = []awsv1.NetworkInterface{
					{InterfaceType: awsv1.NetworkInterfaceTypeInterface},
					{NetworkCardIndex: -1, InterfaceType: awsv1.NetworkInterfaceTypeEFAOnly},
				}
			},
			want: []string{"spec.networkInterfaces[1].networkCardIndex", "should be greater than or equal to 0"},
		},
		{
			name: "more than 150 network interfaces",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				for i := range 151 {
					s.NetworkInterfaces = append(s.NetworkInterfaces, awsv1.NetworkInterface{NetworkCardIndex: int32(i), InterfaceType: awsv1.NetworkInterfaceTypeInterface})
				}
			},
			want: []string{"spec.networkInterfaces", "must have at most 150 items"},
		},
		// Connection tracking, CPU options, prefixes.
		{
			name:   "empty connectionTracking",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.ConnectionTracking = &awsv1.ConnectionTracking{} },
			want:   []string{"spec.connectionTracking: set at least one of tcpEstablishedTimeout, udpStreamTimeout or udpTimeout"},
		},
		{
			name: "tcpEstablishedTimeout below 60",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.ConnectionTracking = &awsv1.ConnectionTracking{TCPEstablishedTimeout: ptr.To[int32](59)}
			},
			want: []string{"spec.connectionTracking.tcpEstablishedTimeout", "should be greater than or equal to 60"},
		},
		{
			name: "tcpEstablishedTimeout above 5 days",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.ConnectionTracking = &awsv1.ConnectionTracking{TCPEstablishedTimeout: ptr.To[int32](432001)}
			},
			want: []string{"spec.connectionTracking.tcpEstablishedTimeout", "should be less than or equal to 432000"},
		},
		{
			name: "udpStreamTimeout above 180",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.ConnectionTracking = &awsv1.ConnectionTracking{UDPStreamTimeout: ptr.To[int32](181)}
			},
			want: []string{"spec.connectionTracking.udpStreamTimeout", "should be less than or equal to 180"},
		},
		{
			name: "udpTimeout below 30",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.ConnectionTracking = &awsv1.ConnectionTracking{UDPTimeout: ptr.To[int32](29)}
			},
			want: []string{"spec.connectionTracking.udpTimeout", "should be greater than or equal to 30"},
		},
		{
			name: "connection tracking as a duration",
			raw: func(s map[string]any) {
				s["connectionTracking"] = map[string]any{"udpTimeout": "30s"}
			},
			want: []string{"spec.connectionTracking.udpTimeout", "must be of type integer"},
		},
		{
			name:   "unknown nestedVirtualization",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptr.To("on")} },
			want:   []string{"spec.cpuOptions.nestedVirtualization", "Unsupported value: \"on\""},
		},
		// Fields joiner does not support yet: refused naming the field.
		{
			name:   "refused: ipPrefixCount",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.IPPrefixCount = ptr.To[int32](0) },
			want:   []string{"spec.ipPrefixCount: joiner does not support"},
		},
		{
			name: "refused: EFA network interfaces",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.NetworkInterfaces = []awsv1.NetworkInterface{
					{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.NetworkInterfaceTypeInterface},
					{NetworkCardIndex: 0, DeviceIndex: 1, InterfaceType: awsv1.NetworkInterfaceTypeEFAOnly},
					{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.NetworkInterfaceTypeEFAOnly},
					{NetworkCardIndex: 1, DeviceIndex: 1, InterfaceType: awsv1.NetworkInterfaceTypeInterface},
					{NetworkCardIndex: 2, DeviceIndex: 0, InterfaceType: awsv1.NetworkInterfaceTypeEFAOnly},
				}
			},
			want: []string{"spec.networkInterfaces: joiner does not support"},
		},
		{
			name: "refused: 150 network interfaces",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				for i := range 150 {
					s.NetworkInterfaces = append(s.NetworkInterfaces,
						awsv1.NetworkInterface{NetworkCardIndex: int32(i / 2), DeviceIndex: int32(i % 2), InterfaceType: awsv1.NetworkInterfaceTypeInterface})
				}
			},
			want: []string{"spec.networkInterfaces: joiner does not support"},
		},
		{
			name: "refused: nested virtualization",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptr.To(awsv1.NestedVirtualizationEnabled)}
			},
			want: []string{"spec.cpuOptions: joiner does not support"},
		},
		{
			name:   "negative ipPrefixCount",
			mutate: func(s *awsv1.EC2NodeClassSpec) { s.IPPrefixCount = ptr.To[int32](-1) },
			want:   []string{"spec.ipPrefixCount", "should be greater than or equal to 0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := newEC2NodeClass(t)
			if tc.mutate != nil {
				tc.mutate(&nc.Spec)
			}
			expectRejected(t, createEC2NodeClass(t, nc, tc.raw), tc.want...)
		})
	}
}

func TestEC2NodeClassWithoutSpecRejected(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(awsv1.SchemeGroupVersion.String())
	u.SetKind("EC2NodeClass")
	u.SetName(test.Name(t, "ec2nc"))
	expectRejected(t, test.Env(t).Client.Create(t.Context(), u), "spec: Required value")
}

func TestEC2NodeClassAccepted(t *testing.T) {
	size := func(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
	for _, tc := range []struct {
		name   string
		mutate func(*awsv1.EC2NodeClassSpec)
	}{
		{name: "minimal"},
		{name: "alias with matching family", mutate: func(s *awsv1.EC2NodeClassSpec) { s.AMIFamily = ptr.To("AL2023") }},
		{name: "alias with Custom family", mutate: func(s *awsv1.EC2NodeClassSpec) { s.AMIFamily = ptr.To("Custom") }},
		{name: "pinned alias", mutate: func(s *awsv1.EC2NodeClassSpec) { s.AMISelectorTerms[0].Alias = "al2023@v20240807" }},
		{name: "bottlerocket version", mutate: func(s *awsv1.EC2NodeClassSpec) { s.AMISelectorTerms[0].Alias = "bottlerocket@v1.20.3" }},
		{name: "windows2025", mutate: func(s *awsv1.EC2NodeClassSpec) { s.AMISelectorTerms[0].Alias = "windows2025@latest" }},
		{
			name: "explicit AMI terms",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.AMIFamily = ptr.To("AL2")
				s.AMISelectorTerms = []awsv1.AMISelectorTerm{
					{ID: "ami-0123456789abcdef0"},
					{Name: "amazon-eks-node-1.32-*", Owner: "amazon"},
					{Tags: map[string]string{"team": "*"}, Owner: "123456789012"},
					{SSMParameter: "/my/ami/id"},
				}
			},
		},
		{
			name: "instance profile and every selector",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.Role, s.InstanceProfile = "", ptr.To("profile")
				s.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: "subnet-0a"}, {CIDR: "10.0.32.0/19", Tags: map[string]string{"a": "b"}}}
				s.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{ID: "sg-0a"}, {Name: "nodes"}}
			},
		},
		{
			name: "capacity reservations and a placement group",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{
					{ID: "cr-0a"}, {Tags: map[string]string{"a": "b"}, OwnerID: "123456789012"}, {InstanceMatchCriteria: "open"},
				}
				s.PlacementGroupSelector = &awsv1.PlacementGroupSelector{ID: "pg-0a"}
			},
		},
		{
			name: "connection tracking at its bounds",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.ConnectionTracking = &awsv1.ConnectionTracking{
					TCPEstablishedTimeout: ptr.To[int32](432000), UDPStreamTimeout: ptr.To[int32](60), UDPTimeout: ptr.To[int32](30),
				}
			},
		},
		{
			name: "one connection tracking timeout",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.ConnectionTracking = &awsv1.ConnectionTracking{TCPEstablishedTimeout: ptr.To[int32](60)}
			},
		},
		{
			name: "everything else",
			mutate: func(s *awsv1.EC2NodeClassSpec) {
				s.Tags = map[string]string{"team": "a", "kubernetes.io/role": "node"}
				s.UserData = ptr.To("#!/bin/bash\necho hi\n")
				s.DetailedMonitoring, s.AssociatePublicIPAddress = ptr.To(true), ptr.To(false)
				s.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0)
				s.Context = ptr.To("ctx")
				s.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{
					{DeviceName: ptr.To("/dev/xvda"), RootVolume: true, EBS: &awsv1.BlockDevice{VolumeSize: size("64Ti"), VolumeType: ptr.To("gp3"), IOPS: ptr.To[int64](3000), Throughput: ptr.To[int64](125)}},
					{DeviceName: ptr.To("/dev/xvdb"), EBS: &awsv1.BlockDevice{SnapshotID: ptr.To("snap-0a"), VolumeInitializationRate: ptr.To[int32](100)}},
					{DeviceName: ptr.To("/dev/xvdc"), EBS: &awsv1.BlockDevice{VolumeSize: size("100G"), IOPS: ptr.To[int64](500)}},
				}
				s.Kubelet = &awsv1.KubeletConfiguration{
					ClusterDNS:                  []string{"10.100.0.10", "fd00::a"},
					MaxPods:                     ptr.To[int32](110),
					PodsPerCore:                 ptr.To[int32](10),
					SystemReserved:              map[string]string{"cpu": "100m", "memory": "100Mi", "ephemeral-storage": "1Gi", "pid": "1000"},
					KubeReserved:                map[string]string{"cpu": "200m"},
					EvictionHard:                map[string]string{"memory.available": "5%", "nodefs.available": "10.5%", "pid.available": "100"},
					EvictionSoft:                map[string]string{"memory.available": "500Mi"},
					EvictionSoftGracePeriod:     map[string]metav1.Duration{"memory.available": {Duration: 90e9}},
					EvictionMaxPodGracePeriod:   ptr.To[int32](60),
					ImageGCHighThresholdPercent: ptr.To[int32](85),
					ImageGCLowThresholdPercent:  ptr.To[int32](80),
					CPUCFSQuota:                 ptr.To(true),
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := newEC2NodeClass(t)
			if tc.mutate != nil {
				tc.mutate(&nc.Spec)
			}
			if err := createEC2NodeClass(t, nc, nil); err != nil {
				t.Fatalf("rejected a valid EC2NodeClass: %v", err)
			}
		})
	}
}

func TestEC2NodeClassDefaults(t *testing.T) {
	env := test.Env(t)
	for _, tc := range []struct {
		name string
		in   *awsv1.MetadataOptions
		want awsv1.MetadataOptions
	}{
		{
			name: "metadataOptions omitted",
			want: awsv1.MetadataOptions{HTTPEndpoint: ptr.To("enabled"), HTTPProtocolIPv6: ptr.To("disabled"), HTTPPutResponseHopLimit: ptr.To[int64](1), HTTPTokens: ptr.To("required")},
		},
		{
			name: "metadataOptions partly set",
			in:   &awsv1.MetadataOptions{HTTPPutResponseHopLimit: ptr.To[int64](2), HTTPTokens: ptr.To("optional")},
			want: awsv1.MetadataOptions{HTTPEndpoint: ptr.To("enabled"), HTTPProtocolIPv6: ptr.To("disabled"), HTTPPutResponseHopLimit: ptr.To[int64](2), HTTPTokens: ptr.To("optional")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := newEC2NodeClass(t)
			nc.Spec.MetadataOptions = tc.in
			env.Create(t, nc)
			got := &awsv1.EC2NodeClass{}
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(nc), got); err != nil {
				t.Fatal(err)
			}
			m := got.Spec.MetadataOptions
			if m == nil {
				t.Fatal("metadataOptions was not defaulted")
			}
			if *m.HTTPEndpoint != *tc.want.HTTPEndpoint || *m.HTTPProtocolIPv6 != *tc.want.HTTPProtocolIPv6 ||
				*m.HTTPPutResponseHopLimit != *tc.want.HTTPPutResponseHopLimit || *m.HTTPTokens != *tc.want.HTTPTokens {
				t.Errorf("stored metadataOptions = {%s %s %d %s}, want {%s %s %d %s}",
					*m.HTTPEndpoint, *m.HTTPProtocolIPv6, *m.HTTPPutResponseHopLimit, *m.HTTPTokens,
					*tc.want.HTTPEndpoint, *tc.want.HTTPProtocolIPv6, *tc.want.HTTPPutResponseHopLimit, *tc.want.HTTPTokens)
			}
			// amiFamily is not defaulted in the object: AMIFamily() resolves it.
			if got.Spec.AMIFamily != nil {
				t.Errorf("stored amiFamily = %q, want it left unset", *got.Spec.AMIFamily)
			}
			if f := got.AMIFamily(); f != awsv1.AMIFamilyAL2023 {
				t.Errorf("AMIFamily() = %q, want %q from the alias", f, awsv1.AMIFamilyAL2023)
			}
		})
	}
}

func TestEC2NodeClassRoleInstanceProfileSwitch(t *testing.T) {
	env := test.Env(t)
	update := func(t *testing.T, nc *awsv1.EC2NodeClass, mutate func(*awsv1.EC2NodeClassSpec)) error {
		t.Helper()
		got := &awsv1.EC2NodeClass{}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(nc), got); err != nil {
			t.Fatal(err)
		}
		mutate(&got.Spec)
		return env.Client.Update(t.Context(), got)
	}

	t.Run("role to another role", func(t *testing.T) {
		nc := newEC2NodeClass(t)
		env.Create(t, nc)
		if err := update(t, nc, func(s *awsv1.EC2NodeClassSpec) { s.Role = "OtherRole" }); err != nil {
			t.Fatalf("changing the role was rejected: %v", err)
		}
	})
	t.Run("role to instanceProfile", func(t *testing.T) {
		nc := newEC2NodeClass(t)
		env.Create(t, nc)
		err := update(t, nc, func(s *awsv1.EC2NodeClassSpec) { s.Role, s.InstanceProfile = "", ptr.To("profile") })
		expectRejected(t, err, "spec.role: cannot switch from role to instanceProfile")
	})
	t.Run("instanceProfile to role", func(t *testing.T) {
		nc := newEC2NodeClass(t)
		nc.Spec.Role, nc.Spec.InstanceProfile = "", ptr.To("profile")
		env.Create(t, nc)
		err := update(t, nc, func(s *awsv1.EC2NodeClassSpec) { s.Role, s.InstanceProfile = "Role", nil })
		expectRejected(t, err, "spec.instanceProfile: cannot switch from instanceProfile to role")
	})
}
