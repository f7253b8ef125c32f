package nodeclaims

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/test"
)

func testPod(uid string) *corev1.Pod {
	return test.Pod(test.PodOptions{Name: "pod-" + uid, UID: types.UID(uid)})
}

func testNodePool() *v1.NodePool {
	return &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "np-uid"},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{
				ObjectMeta: v1.ObjectMeta{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}},
				Spec: v1.NodeClaimTemplateSpec{
					Taints:                 []corev1.Taint{{Key: "dedicated", Value: "a", Effect: corev1.TaintEffectNoSchedule}},
					StartupTaints:          []corev1.Taint{{Key: "agent", Effect: corev1.TaintEffectNoSchedule}},
					NodeClassRef:           &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: "default"},
					ExpireAfter:            v1.MustParseNillableDuration("720h"),
					TerminationGracePeriod: &metav1.Duration{Duration: time.Hour},
				},
			},
		},
	}
}

func testInstanceType(name, cpu, mem string) *scheduling.InstanceType {
	return &scheduling.InstanceType{
		Name:     name,
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse("110")},
	}
}

func TestNodeClaimNameIsDeterministic(t *testing.T) {
	a := NodeClaimName("default", []*corev1.Pod{testPod("1"), testPod("2"), testPod("3")})
	b := NodeClaimName("default", []*corev1.Pod{testPod("3"), testPod("1"), testPod("2")})
	c := NodeClaimName("default", []*corev1.Pod{testPod("1"), testPod("2")})
	if a != b {
		t.Errorf("same pods in another order: %s != %s", a, b)
	}
	if a == c {
		t.Errorf("different pods gave the same name %s", a)
	}
	if len(a) != len("default-")+10 {
		t.Errorf("unexpected name %q", a)
	}
}

// TestRelaunchName checks that a NodeClaim relaunched after its NodePool's
// launch failed gets a new name, while the same pods and failure count
// (a retried batch, a second replica, a restart before the informer
// synced) keep computing the same one.
func TestRelaunchName(t *testing.T) {
	pods := []*corev1.Pod{testPod("1"), testPod("2")}
	first := RelaunchName("default", 0, pods, 0)
	for _, tc := range []struct {
		name     string
		failures int64
		attempt  int
		same     bool
	}{
		{name: "no failure is the plain name", failures: 0, same: true},
		{name: "after a failure, a new name", failures: 1},
		{name: "after another, another", failures: 2},
		{name: "a later attempt after a failure differs too", failures: 1, attempt: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RelaunchName("default", tc.failures, pods, tc.attempt)
			if got != RelaunchName("default", tc.failures, []*corev1.Pod{testPod("2"), testPod("1")}, tc.attempt) {
				t.Fatalf("not deterministic: %s", got)
			}
			if (got == first) != tc.same {
				t.Errorf("RelaunchName = %s, first %s, same %t want %t", got, first, got == first, tc.same)
			}
			if got == NodeClaimNameAttempt("default", pods, 1) && tc.failures > 0 {
				t.Errorf("a relaunch takes the name of attempt 1 (%s)", got)
			}
		})
	}
	if first != NodeClaimName("default", pods) {
		t.Errorf("RelaunchName with no failure %s, want NodeClaimName %s", first, NodeClaimName("default", pods))
	}
}

// TestReplacementName: a replacement's name is the same for the same
// candidates and pods in any order (the same command made again), and
// differs from the pods' provisioning name (the NodeClaim first launched
// for them, which may be a candidate itself or just deleted), from another
// command's for the same pods, and between attempts.
func TestReplacementName(t *testing.T) {
	pods := []*corev1.Pod{testPod("1"), testPod("2")}
	name := ReplacementName("default", []types.UID{"c1", "c2"}, pods, 0)
	if got := ReplacementName("default", []types.UID{"c2", "c1"}, []*corev1.Pod{testPod("2"), testPod("1")}, 0); got != name {
		t.Errorf("the same command in another order: %s, want %s", got, name)
	}
	for _, tc := range []struct {
		name  string
		other string
	}{
		{"the pods' provisioning name", NodeClaimName("default", pods)},
		{"the pods' provisioning name, attempt 1", NodeClaimNameAttempt("default", pods, 1)},
		{"another candidate for the same pods", ReplacementName("default", []types.UID{"c3"}, pods, 0)},
		{"one candidate fewer", ReplacementName("default", []types.UID{"c1"}, pods, 0)},
		{"other pods", ReplacementName("default", []types.UID{"c1", "c2"}, pods[:1], 0)},
		{"attempt 1", ReplacementName("default", []types.UID{"c1", "c2"}, pods, 1)},
	} {
		if tc.other == name {
			t.Errorf("%s is the replacement's name %s", tc.name, name)
		}
	}
	if len(name) != len("default-")+10 {
		t.Errorf("unexpected name %q", name)
	}
}

func TestNewNodeClaim(t *testing.T) {
	np := testNodePool()
	its := []*scheduling.InstanceType{testInstanceType("m5.large", "2", "8Gi"), testInstanceType("m5.xlarge", "4", "16Gi")}
	planned := &scheduling.NewNodeClaim{
		NodePool: "default",
		Requirements: []scheduling.Requirement{
			{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}},
			{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m5.xlarge", "m5.2xlarge"}},
		},
		InstanceTypes: its,
		Pods:          []*corev1.Pod{testPod("1")},
		Requests:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	}
	nc := NewNodeClaim(np, planned)

	if nc.Name != NodeClaimName("default", planned.Pods) {
		t.Errorf("name %q", nc.Name)
	}
	wantLabels := map[string]string{"team": "a", v1.LabelNodePool: "default", "sim.joiner.dev/simnodeclass": "default"}
	for k, v := range wantLabels {
		if nc.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, nc.Labels[k], v)
		}
	}
	if np.Spec.Template.ObjectMeta.Labels[v1.LabelNodePool] != "" {
		t.Error("NewNodeClaim modified the NodePool's template labels")
	}
	if nc.Annotations["note"] != "x" {
		t.Errorf("annotations %v", nc.Annotations)
	}
	if nc.Annotations[v1.AnnotationNodePoolHash] != np.Hash() || nc.Annotations[v1.AnnotationNodePoolHashVersion] != v1.NodePoolHashVersion {
		t.Errorf("drift hash annotations %v, want hash %s version %s", nc.Annotations, np.Hash(), v1.NodePoolHashVersion)
	}
	if len(nc.OwnerReferences) != 1 || nc.OwnerReferences[0].Kind != "NodePool" || nc.OwnerReferences[0].UID != "np-uid" {
		t.Errorf("owner references %+v", nc.OwnerReferences)
	}
	if len(nc.Spec.Taints) != 1 || len(nc.Spec.StartupTaints) != 1 {
		t.Errorf("taints %v startup %v", nc.Spec.Taints, nc.Spec.StartupTaints)
	}
	if nc.Spec.NodeClassRef == nil || nc.Spec.NodeClassRef.Name != "default" {
		t.Errorf("node class ref %+v", nc.Spec.NodeClassRef)
	}
	if nc.Spec.ExpireAfter.String() != "720h" || nc.Spec.TerminationGracePeriod.Duration != time.Hour {
		t.Errorf("expireAfter %s terminationGracePeriod %v", nc.Spec.ExpireAfter, nc.Spec.TerminationGracePeriod)
	}
	cpu := nc.Spec.Resources.Requests[corev1.ResourceCPU]
	if cpu.String() != "1" {
		t.Errorf("requests %v", nc.Spec.Resources.Requests)
	}
	var it []string
	for _, r := range nc.Spec.Requirements {
		if r.Key == v1.LabelInstanceType {
			if it != nil {
				t.Error("two instance-type requirements")
			}
			it = r.Values
		}
	}
	if len(it) != 2 || it[0] != "m5.large" || it[1] != "m5.xlarge" {
		t.Errorf("instance types %v, want the launch options in price order", it)
	}
}

// TestNewNodeClaimLeavesOutRestrictedLabels: a pod's node affinity on
// kubernetes.io/hostname (NotIn the nodes it must avoid) reaches the plan's
// requirements, but the NodeClaim CRD refuses the key ("requirement key
// kubernetes.io/hostname is restricted"), so the NodeClaim must not carry it.
func TestNewNodeClaimLeavesOutRestrictedLabels(t *testing.T) {
	for _, tc := range []struct {
		name     string
		operator corev1.NodeSelectorOperator
		values   []string
	}{
		{"NotIn", corev1.NodeSelectorOpNotIn, []string{"node-a", "node-b"}},
		{"DoesNotExist", corev1.NodeSelectorOpDoesNotExist, nil},
		{"Exists", corev1.NodeSelectorOpExists, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			planned := &scheduling.NewNodeClaim{
				NodePool: "default",
				Requirements: []scheduling.Requirement{
					{Key: v1.LabelHostname, Operator: tc.operator, Values: tc.values},
					{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}},
				},
				InstanceTypes: []*scheduling.InstanceType{testInstanceType("m5.large", "2", "8Gi")},
				Pods:          []*corev1.Pod{testPod("1")},
			}
			nc := NewNodeClaim(testNodePool(), planned)
			var keys []string
			for _, r := range nc.Spec.Requirements {
				keys = append(keys, r.Key)
				if r.Key == v1.LabelHostname {
					t.Errorf("requirement %+v: the NodeClaim CRD refuses kubernetes.io/hostname", r)
				}
			}
			if len(keys) != 2 {
				t.Errorf("requirement keys %v, want the zone and the instance types", keys)
			}
		})
	}
}
