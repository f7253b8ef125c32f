package doctor

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/catalog"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Fixtures.

func nodePool(name, nodeClass string, reqs ...v1.NodeSelectorRequirementWithMinValues) v1.NodePool {
	return v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
		NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nodeClass},
		Requirements: reqs,
	}}}}
}

func req(key string, values ...string) v1.NodeSelectorRequirementWithMinValues {
	return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func nodeClass(name string, mutate ...func(*awsv1.EC2NodeClass)) awsv1.EC2NodeClass {
	nc := awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	nc.Spec.AMIFamily = aws.String(awsv1.AMIFamilyAL2)
	nc.Spec.Role = "node-role"
	for _, m := range mutate {
		m(&nc)
	}
	return nc
}

func withImage(id, arch string) func(*awsv1.EC2NodeClass) {
	return func(nc *awsv1.EC2NodeClass) {
		nc.Status.AMIs = append(nc.Status.AMIs, awsv1.AMI{ID: id, Requirements: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}})
	}
}

func withUserData(family, ud string) func(*awsv1.EC2NodeClass) {
	return func(nc *awsv1.EC2NodeClass) {
		nc.Spec.AMIFamily = aws.String(family)
		nc.Spec.UserData = aws.String(ud)
	}
}

func pod(name string, mutate ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	for _, m := range mutate {
		m(&p)
	}
	return p
}

func noRequests(p *corev1.Pod) { p.Spec.Containers[0].Resources = corev1.ResourceRequirements{} }

func controller(affinity *corev1.Affinity) appsv1.Deployment {
	return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "joiner", Namespace: "joiner"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "joiner"}},
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Affinity: affinity}}}}
}

func excluding(key string, op corev1.NodeSelectorOperator, values ...string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}}}}}
}

// want is one expected finding: severity, object and a piece of the
// message and of the fix.
type want struct {
	severity Severity
	object   string
	message  string
	fix      string
}

func runCheck(t *testing.T, check func(*Inputs) []Finding, in *Inputs, wants []want) {
	t.Helper()
	got := check(in)
	if len(got) != len(wants) {
		t.Fatalf("%d findings, want %d:\n%s", len(got), len(wants), linesOf(got))
	}
	if testing.Verbose() {
		t.Log(linesOf(got))
	}
	for i, w := range wants {
		g := got[i]
		if g.Severity != w.severity || g.Object != w.object || !strings.Contains(g.Message, w.message) || !strings.Contains(g.Fix, w.fix) {
			t.Errorf("finding %d:\n%s\nwant %s %s, message containing %q, fix containing %q", i, g, w.severity, w.object, w.message, w.fix)
		}
	}
}

func linesOf(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.String() + "\n")
	}
	return b.String()
}

func TestCheckControllerPlacement(t *testing.T) {
	managedNode := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "managed", Labels: map[string]string{v1.LabelNodePool: "default"}}}
	onNode := func(node string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Namespace, p.Spec.NodeName = "joiner", node
			p.Labels["app.kubernetes.io/name"] = "joiner"
		}
	}
	tests := []struct {
		name  string
		in    Inputs
		wants []want
	}{
		{name: "excludes managed nodes", in: Inputs{Controllers: []appsv1.Deployment{controller(excluding(v1.LabelNodePool, corev1.NodeSelectorOpDoesNotExist))}}},
		{name: "pinned to a managed node group", in: Inputs{Controllers: []appsv1.Deployment{controller(excluding("eks.amazonaws.com/nodegroup", corev1.NodeSelectorOpIn, "system"))}}},
		{name: "no affinity", in: Inputs{Controllers: []appsv1.Deployment{controller(nil)}},
			wants: []want{{Error, "deployment/joiner/joiner", "may be scheduled onto nodes joiner manages", "karpenter.sh/nodepool DoesNotExist"}}},
		{name: "affinity that does not exclude", in: Inputs{Controllers: []appsv1.Deployment{controller(excluding(v1.LabelNodePool, corev1.NodeSelectorOpExists))}},
			wants: []want{{Error, "deployment/joiner/joiner", "may be scheduled onto nodes joiner manages", "DoesNotExist"}}},
		{name: "running on a managed node", in: Inputs{
			Controllers: []appsv1.Deployment{controller(excluding(v1.LabelNodePool, corev1.NodeSelectorOpDoesNotExist))},
			Nodes:       []corev1.Node{managedNode}, Pods: []corev1.Pod{pod("joiner-1", onNode("managed")), pod("app", func(p *corev1.Pod) { p.Spec.NodeName = "managed" })}},
			wants: []want{{Error, "pod/joiner/joiner-1", "runs on node managed, which joiner manages", "restart the pod"}}},
		{name: "no controller found", in: Inputs{},
			wants: []want{{Warning, "deployment/joiner", "no joiner Deployment matched", "--controller-selector"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runCheck(t, checkControllerPlacement, &tt.in, tt.wants) })
	}
}

func TestCheckUserData(t *testing.T) {
	const goodAL2 = "#!/bin/bash\n/etc/eks/bootstrap.sh my-cluster --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute'\n"
	const seed002 = "#!/bin/bash\nset -e\n/etc/eks/bootstrap.sh my-cluster --b64-cluster-ca abc --apiserver-endpoint https://x \\\n  --kubelet-extra-args='--register-with-taints=\"karpenter.sh/unregistered:NoExecute\"'\n"
	const noTaint = "#!/bin/bash\n/etc/eks/bootstrap.sh my-cluster\n"
	startup := func(np *v1.NodePool) {
		np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "cilium.io/agent-not-ready", Effect: corev1.TaintEffectNoExecute}}
	}
	withStartup := nodePool("default", "custom")
	startup(&withStartup)
	tests := []struct {
		name  string
		in    Inputs
		wants []want
	}{
		{name: "no custom userData", in: Inputs{NodeClasses: []awsv1.EC2NodeClass{nodeClass("default")}}},
		{name: "AL2 pre-bootstrap script is merged with joiner's bootstrap", in: Inputs{ClusterName: "c", NodeClasses: []awsv1.EC2NodeClass{
			nodeClass("default", withUserData(awsv1.AMIFamilyAL2, "#!/bin/bash\necho hello\n"))}}},
		{name: "custom image registering the taint", in: Inputs{NodeClasses: []awsv1.EC2NodeClass{nodeClass("custom", withUserData(awsv1.AMIFamilyCustom, goodAL2))}}},
		{name: "seed 002: --kubelet-extra-args= is dropped", in: Inputs{NodeClasses: []awsv1.EC2NodeClass{nodeClass("custom", withUserData(awsv1.AMIFamilyCustom, seed002))}},
			wants: []want{{Error, "ec2nodeclass/custom", "bootstrap.sh ignores --kubelet-extra-args=", "a space after the option, not '='"}}},
		{name: "custom image without the taint", in: Inputs{NodeClasses: []awsv1.EC2NodeClass{nodeClass("custom", withUserData(awsv1.AMIFamilyCustom, noTaint))}},
			wants: []want{{Error, "ec2nodeclass/custom", "without taint(s) karpenter.sh/unregistered:NoExecute", "--register-with-taints=karpenter.sh/unregistered:NoExecute"}}},
		{name: "a NodePool's startup taint is missing", in: Inputs{NodePools: []v1.NodePool{withStartup},
			NodeClasses: []awsv1.EC2NodeClass{nodeClass("custom", withUserData(awsv1.AMIFamilyCustom, goodAL2))}},
			wants: []want{{Error, "ec2nodeclass/custom", "for nodepool default, the kubelet would register without taint(s) cilium.io/agent-not-ready:NoExecute", "cilium.io/agent-not-ready:NoExecute"}}},
		{name: "AL2023 NodeConfig part merged with joiner's (CA and CIDR rendered as the launch path does)", in: Inputs{ClusterName: "c", NodeClasses: []awsv1.EC2NodeClass{
			nodeClass("default", withUserData(awsv1.AMIFamilyAL2023, "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 42\n"))}}},
		{name: "custom userData that never runs bootstrap.sh", in: Inputs{NodeClasses: []awsv1.EC2NodeClass{nodeClass("custom", withUserData(awsv1.AMIFamilyCustom, "#!/bin/bash\necho hi\n"))}},
			wants: []want{{Error, "ec2nodeclass/custom", "would not boot into a kubelet", "correct spec.userData"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runCheck(t, checkUserData, &tt.in, tt.wants) })
	}
}

func TestCheckNodeRole(t *testing.T) {
	const arn = "arn:aws:iam::123456789012:role/node-role"
	awsAuth := func(mapRoles string) *corev1.ConfigMap {
		return &corev1.ConfigMap{Data: map[string]string{"mapRoles": mapRoles}}
	}
	mapped := "- rolearn: " + arn + "\n  username: system:node:{{EC2PrivateDNSName}}\n  groups: [system:bootstrappers, system:nodes]\n"
	tests := []struct {
		name  string
		in    Inputs
		wants []want
	}{
		{name: "mapped in aws-auth", in: Inputs{AWSAuth: awsAuth(mapped)}},
		{name: "an access entry", in: Inputs{AWS: &AWSInputs{AccessEntries: []string{arn}}}},
		{name: "seed 001: no aws-auth", in: Inputs{},
			wants: []want{{Error, "ec2nodeclass/default", "there is no kube-system/aws-auth ConfigMap", "groups system:bootstrappers, system:nodes"}}},
		{name: "another role mapped", in: Inputs{AWSAuth: awsAuth("- rolearn: arn:aws:iam::123456789012:role/other\n  groups: [system:nodes]\n")},
			wants: []want{{Error, "ec2nodeclass/default", "is not in the mapRoles", "EC2_LINUX"}}},
		{name: "access entries unreadable", in: Inputs{AWS: &AWSInputs{AccessEntriesUnknown: "AccessDenied"}},
			wants: []want{{Error, "ec2nodeclass/default", "EKS access entries could not be read: AccessDenied", "aws-auth"}}},
		{name: "authenticationMode API ignores aws-auth", in: Inputs{AWSAuth: awsAuth(mapped), AWS: &AWSInputs{AuthMode: ekstypes.AuthenticationModeApi}},
			wants: []want{{Error, "ec2nodeclass/default", "authenticationMode is API, so EKS does not read kube-system/aws-auth", "aws eks create-access-entry --principal-arn " + arn + " --type EC2_LINUX"}}},
		{name: "authenticationMode API with an access entry", in: Inputs{AWS: &AWSInputs{AuthMode: ekstypes.AuthenticationModeApi, AccessEntries: []string{arn}}}},
		{name: "authenticationMode CONFIG_MAP ignores access entries", in: Inputs{AWS: &AWSInputs{AuthMode: ekstypes.AuthenticationModeConfigMap, AccessEntries: []string{arn}}},
			wants: []want{{Error, "ec2nodeclass/default", "there is no kube-system/aws-auth ConfigMap", "authenticationMode is CONFIG_MAP, so access entries are not read"}}},
		{name: "API_AND_CONFIG_MAP: either maps", in: Inputs{AWS: &AWSInputs{AuthMode: ekstypes.AuthenticationModeApiAndConfigMap, AccessEntries: []string{arn}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.NodeClasses = []awsv1.EC2NodeClass{nodeClass("default")}
			if in.AWS == nil {
				in.AWS = &AWSInputs{}
			}
			in.AWS.NodeRoles = map[string]string{"default": arn}
			runCheck(t, checkNodeRole, &in, tt.wants)
		})
	}
}

func TestCheckImageArchitecture(t *testing.T) {
	tests := []struct {
		name  string
		pool  v1.NodePool
		class awsv1.EC2NodeClass
		wants []want
	}{
		{name: "any architecture", pool: nodePool("default", "default"), class: nodeClass("default", withImage("ami-amd", "amd64"))},
		{name: "matching arch requirement", pool: nodePool("default", "default", req(corev1.LabelArchStable, "amd64")), class: nodeClass("default", withImage("ami-amd", "amd64"))},
		{name: "seed 000: arm64 pool, amd64 image", pool: nodePool("default", "default", req(corev1.LabelArchStable, "arm64")), class: nodeClass("default", withImage("ami-amd", "amd64")),
			wants: []want{{Error, "nodepool/default", "allows only arm64, but ec2nodeclass default's images are amd64 (ami-amd)", "select arm64 images"}}},
		{name: "Graviton instance types named, amd64 image", pool: nodePool("default", "default", req(corev1.LabelInstanceTypeStable, "t4g.small", "m6g.large")), class: nodeClass("default", withImage("ami-amd", "amd64")),
			wants: []want{{Error, "nodepool/default", "allows only arm64 instance types t4g.small,m6g.large", "select arm64 images"}}},
		{name: "both architectures resolved", pool: nodePool("default", "default", req(corev1.LabelArchStable, "arm64")), class: nodeClass("default", withImage("ami-amd", "amd64"), withImage("ami-arm", "arm64"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runCheck(t, checkImageArchitecture, &Inputs{NodePools: []v1.NodePool{tt.pool}, NodeClasses: []awsv1.EC2NodeClass{tt.class}}, tt.wants)
		})
	}
}

func TestCheckClusterName(t *testing.T) {
	inst := func(id string, tags ...string) ec2types.Instance {
		i := ec2types.Instance{InstanceId: aws.String(id)}
		for k := 0; k+1 < len(tags); k += 2 {
			i.Tags = append(i.Tags, ec2types.Tag{Key: aws.String(tags[k]), Value: aws.String(tags[k+1])})
		}
		return i
	}
	tests := []struct {
		name      string
		instances []ec2types.Instance
		wants     []want
	}{
		{name: "own instances", instances: []ec2types.Instance{inst("i-1", "joiner.dev/cluster-id", "uid-a", "karpenter.sh/nodeclaim", "nc-1")}},
		{name: "seed 004: another cluster's identity", instances: []ec2types.Instance{inst("i-2", "joiner.dev/cluster-id", "uid-b", "karpenter.sh/nodeclaim", "x")},
			wants: []want{{Error, "cluster/c", "carry eks:eks-cluster-name=c but cluster identity joiner.dev/cluster-id=uid-b, not this cluster's uid-a", "its own settings.clusterName"}}},
		{name: "a NodeClaim this cluster lacks, without identity", instances: []ec2types.Instance{inst("i-3", "karpenter.sh/nodeclaim", "stranger")},
			wants: []want{{Warning, "cluster/c", "belong to NodeClaims this cluster does not have (i-3 (nodeclaim stranger))", "its own settings.clusterName"}}},
		{name: "a known NodeClaim without identity (launched before the tag)", instances: []ec2types.Instance{inst("i-4", "karpenter.sh/nodeclaim", "nc-1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &Inputs{ClusterName: "c", ClusterID: "uid-a", NodeClaims: []string{"nc-1"}, AWS: &AWSInputs{Instances: tt.instances}}
			runCheck(t, checkClusterName, in, tt.wants)
		})
	}
}

func TestCheckSubnets(t *testing.T) {
	subnet := func(free int32, cidr string) ec2types.Subnet {
		return ec2types.Subnet{SubnetId: aws.String("subnet-1"), AvailableIpAddressCount: aws.Int32(free), CidrBlock: aws.String(cidr)}
	}
	tests := []struct {
		name   string
		subnet ec2types.Subnet
		wants  []want
	}{
		{name: "plenty", subnet: subnet(200, "10.0.0.0/24")},
		{name: "exhausted", subnet: subnet(0, "10.0.0.0/24"),
			wants: []want{{Error, "subnet/subnet-1", "no free IP addresses left (10.0.0.0/24, used by ec2nodeclass default)", "larger subnet"}}},
		{name: "a negative count is exhausted, not a warning", subnet: subnet(-1, "10.0.0.0/28"),
			wants: []want{{Error, "subnet/subnet-1", "no free IP addresses left (10.0.0.0/28, -1 reported free, used by ec2nodeclass default)", "larger subnet"}}},
		{name: "under a tenth free", subnet: subnet(20, "10.0.0.0/24"),
			wants: []want{{Warning, "subnet/subnet-1", "only 20 of 251 IP addresses free", "larger subnet"}}},
		{name: "a small subnet nearly full", subnet: subnet(10, "10.0.0.0/27"),
			wants: []want{{Warning, "subnet/subnet-1", "only 10 of 27 IP addresses free", "prefix delegation"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := nodeClass("default", func(nc *awsv1.EC2NodeClass) { nc.Status.Subnets = []awsv1.Subnet{{ID: "subnet-1", Zone: "z"}} })
			runCheck(t, checkSubnets, &Inputs{NodeClasses: []awsv1.EC2NodeClass{nc}, AWS: &AWSInputs{Subnets: []ec2types.Subnet{tt.subnet}}}, tt.wants)
		})
	}
}

func TestCheckNodePoolInstanceTypes(t *testing.T) {
	c, err := catalog.Default(catalog.Options{Families: []string{"m5", "c6g"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		pool  v1.NodePool
		types []*scheduling.InstanceType
		wants []want
	}{
		{name: "types fit", pool: nodePool("default", "default"), types: c.InstanceTypes()},
		{name: "requirements no type meets", pool: nodePool("default", "default", req(corev1.LabelInstanceTypeStable, "p5.48xlarge")), types: c.InstanceTypes(),
			wants: []want{{Error, "nodepool/default", "none of its node class's", "widen spec.template.spec.requirements"}}},
		{name: "no types at all", pool: nodePool("default", "default"), types: []*scheduling.InstanceType{},
			wants: []want{{Error, "nodepool/default", "offers no instance types", "subnets, images"}}},
		{name: "tainted pool still serves tolerating pods", pool: func() v1.NodePool {
			np := nodePool("default", "default")
			np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
			return np
		}(), types: c.InstanceTypes()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &Inputs{NodePools: []v1.NodePool{tt.pool}, InstanceTypes: map[string][]*scheduling.InstanceType{"default": tt.types}}
			runCheck(t, checkNodePoolInstanceTypes, in, tt.wants)
		})
	}
}

func TestCheckPodRequests(t *testing.T) {
	owned := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-5d8f7", Controller: aws.Bool(true)}}
	}
	tests := []struct {
		name  string
		pods  []corev1.Pod
		wants []want
	}{
		{name: "requests set", pods: []corev1.Pod{pod("a")}},
		{name: "a bare pod", pods: []corev1.Pod{pod("a", noRequests)},
			wants: []want{{Warning, "pod/default/a", "pod a has no cpu or memory requests", "set resources.requests"}}},
		{name: "a deployment's replicas are one finding", pods: []corev1.Pod{pod("web-1", noRequests, owned), pod("web-2", noRequests, owned)},
			wants: []want{{Warning, "deployment/default/web", "2 pods (e.g. web-1, web-2) have no cpu", "set resources.requests"}}},
		{name: "finished pods do not count", pods: []corev1.Pod{pod("done", noRequests, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runCheck(t, checkPodRequests, &Inputs{Pods: tt.pods}, tt.wants) })
	}
}

func TestCheckInTreeVolumes(t *testing.T) {
	inline := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}}}
	}
	tests := []struct {
		name  string
		in    Inputs
		wants []want
	}{
		{name: "no volumes", in: Inputs{Pods: []corev1.Pod{pod("a")}}},
		{name: "inline EBS", in: Inputs{Pods: []corev1.Pod{pod("a", inline)}},
			wants: []want{{Warning, "pod/default/a", `volume "data" uses the in-tree awsElasticBlockStore plugin`, "CSI driver"}}},
		{name: "in-tree PersistentVolume", in: Inputs{PersistentVolumes: []corev1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}}}}},
			wants: []want{{Warning, "persistentvolume/pv-1", "in-tree awsElasticBlockStore plugin", "migrate"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runCheck(t, checkInTreeVolumes, &tt.in, tt.wants) })
	}
}

func TestCheckWindowsBuild(t *testing.T) {
	windows := func(family string) awsv1.EC2NodeClass {
		return nodeClass("default", func(nc *awsv1.EC2NodeClass) { nc.Spec.AMIFamily = aws.String(family) })
	}
	tests := []struct {
		name  string
		pool  v1.NodePool
		class awsv1.EC2NodeClass
		wants []want
	}{
		{name: "no build required", pool: nodePool("default", "default"), class: windows(awsv1.AMIFamilyWindows2022)},
		{name: "matching build", pool: nodePool("default", "default", req(corev1.LabelWindowsBuild, "10.0.20348")), class: windows(awsv1.AMIFamilyWindows2022)},
		{name: "2019 build on 2022 images", pool: nodePool("default", "default", req(corev1.LabelWindowsBuild, "10.0.17763")), class: windows(awsv1.AMIFamilyWindows2022),
			wants: []want{{Error, "nodepool/default", "boots Windows2022, build 10.0.20348", "require build 10.0.20348"}}},
		{name: "windows build on linux images", pool: nodePool("default", "default", req(corev1.LabelWindowsBuild, "10.0.17763")), class: windows(awsv1.AMIFamilyAL2023),
			wants: []want{{Error, "nodepool/default", "boots AL2023 images, which are not Windows", "Windows ec2nodeclass"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runCheck(t, checkWindowsBuild, &Inputs{NodePools: []v1.NodePool{tt.pool}, NodeClasses: []awsv1.EC2NodeClass{tt.class}}, tt.wants)
		})
	}
}

// TestLegacyTaint: seed 002's pre-v1 taint is flagged on the NodePool and
// in userData, with the v1 fix, and never suggested as a fix.
func TestLegacyTaint(t *testing.T) {
	legacy := corev1.Taint{Key: v1.TaintKeyUninitializedLegacy, Effect: corev1.TaintEffectNoExecute}
	np := v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "custom"}}
	np.Spec.Template.Spec.StartupTaints = []corev1.Taint{legacy}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "custom"}
	got := checkLegacyTaint(&Inputs{NodePools: []v1.NodePool{np}})
	if len(got) != 1 || got[0].Object != "nodepool/custom" || !strings.Contains(got[0].Fix, "karpenter.sh/unregistered:NoExecute") {
		t.Fatalf("findings %+v, want one on nodepool/custom with the v1 fix", got)
	}
	ud := "#!/bin/bash\n/etc/eks/bootstrap.sh c --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute'\n"
	nc := awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "custom"}, Spec: awsv1.EC2NodeClassSpec{AMIFamily: ptr.To(awsv1.AMIFamilyAL2), UserData: &ud}}
	for _, f := range checkUserData(&Inputs{NodePools: []v1.NodePool{np}, NodeClasses: []awsv1.EC2NodeClass{nc}, ClusterName: "c"}) {
		if strings.Contains(f.Fix, "register-with-taints="+v1.TaintKeyUninitializedLegacy) || strings.Contains(f.Fix, v1.TaintKeyUninitializedLegacy+":") {
			t.Errorf("doctor suggests registering the legacy taint again: %s", f)
		}
	}
}
