package disruption_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestDevicePodsStayWithTheirDevices: consolidation moves a pod whose
// ResourceClaim asks for 2 GPUs only to a node whose free devices meet
// it. Node "gpu" (a $10/h type with 4 GPUs) runs the trainer; node "cpu"
// (a c8 kept by do-not-disrupt) has cpu to spare but no devices. Without
// the claim, deleting "gpu" and moving the trainer to "cpu" is the best
// command; with it, "gpu" stays, unless another GPU node has 2 devices
// free.
func TestDevicePodsStayWithTheirDevices(t *testing.T) {
	const driver = "gpu.example.com"
	kept := withNode(func(n *disruption.Node) { n.Node.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
	gpuNode := func(n *disruption.Node, en *scheduling.ExistingNode) {
		n.InstanceType, n.Price = "g4", 10
		en.Labels[corev1.LabelInstanceTypeStable] = "g4"
	}
	claim := func(p *corev1.Pod) {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To("two")}}
	}
	request := func(count int64, nodes ...string) []scheduling.DeviceRequest {
		return []scheduling.DeviceRequest{{Claim: "gpus", Template: "two", Request: "gpu", DeviceClass: "gpu", Driver: driver, Count: count,
			InstanceTypes: []string{"g4"}, Nodes: nodes}}
	}
	for _, tc := range []struct {
		name string
		// claims: the trainer claims 2 GPUs; other2 says whether a second
		// GPU node (kept) runs a pod using `used` of its 4 GPUs.
		claims    bool
		other2    bool
		used      int64
		wantGone  bool
		wantOnto  string
		wantNoCmd bool
	}{
		{name: "without a claim the trainer moves to the cpu node", wantGone: true, wantOnto: "cpu"},
		{name: "with a claim it stays with its devices", claims: true, wantNoCmd: true},
		{name: "it moves to another node with 2 devices free", claims: true, other2: true, used: 2, wantGone: true, wantOnto: "gpu-2"},
		{name: "devices in use on the other node are not free", claims: true, other2: true, used: 3, wantNoCmd: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mods []func(*corev1.Pod)
			if tc.claims {
				mods = append(mods, claim)
			}
			trainer := pod("trainer", "1", mods...)
			nodes := []node{
				{name: "gpu", it: "c4", pods: []*corev1.Pod{trainer}, mods: []func(*disruption.Node, *scheduling.ExistingNode){gpuNode}},
				{name: "cpu", it: "c8", pods: []*corev1.Pod{pod("web", "1")}, mods: []func(*disruption.Node, *scheduling.ExistingNode){kept}},
			}
			var other *corev1.Pod
			if tc.other2 {
				other = pod("other", "1", claim)
				nodes = append(nodes, node{name: "gpu-2", it: "c4", pods: []*corev1.Pod{other}, mods: []func(*disruption.Node, *scheduling.ExistingNode){gpuNode, kept}})
			}
			in := input(t, pool(), nodes...)
			g4 := instanceType("g4", 4, 10)
			g4.Requirements[corev1.LabelInstanceTypeStable] = []string{"g4"}
			in.Cluster.InstanceTypes["default"] = append(slices.Clone(in.Cluster.InstanceTypes["default"]), g4)
			for _, en := range in.Cluster.Nodes {
				if en.Labels[corev1.LabelInstanceTypeStable] == "g4" {
					en.Allocatable = g4.Allocatable()
				}
			}
			if tc.claims {
				in.Options.Scheduling.PlanDynamicResources = true
				gpuNodes := []string{"gpu"}
				if tc.other2 {
					gpuNodes = append(gpuNodes, "gpu-2")
				}
				dev := &scheduling.Devices{
					Pods:          map[string][]scheduling.DeviceRequest{scheduling.PodKey(trainer): request(2, gpuNodes...)},
					InstanceTypes: map[string]map[string]int64{"g4": {driver: 4}},
					Nodes:         map[string]map[string]int64{"gpu": {driver: 4}},
				}
				if tc.other2 {
					dev.Pods[scheduling.PodKey(other)] = request(tc.used, gpuNodes...)
					dev.Nodes["gpu-2"] = map[string]int64{driver: 4}
				}
				in.Cluster.Devices = dev
			}
			d, err := disruption.Decide(in)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantNoCmd {
				if d.Command != nil && slices.Contains(d.Command.Candidates, "gpu") {
					t.Fatalf("command %s of %v moves the trainer away from its devices: %+v", d.Command.Method, d.Command.Candidates, d.Command.Moves)
				}
				t.Logf("verdict on gpu: %q", verdictOf(t, d, "gpu").Unconsolidatable.String())
				return
			}
			if d.Command == nil || !slices.Contains(d.Command.Candidates, "gpu") || len(d.Command.Replacements) != 0 {
				t.Fatalf("command %+v, want gpu deleted; verdict %q", d.Command, verdictOf(t, d, "gpu").Unconsolidatable.String())
			}
			for _, m := range d.Command.Moves {
				if m.Pod.Name == "trainer" && m.To != tc.wantOnto {
					t.Errorf("trainer moves to %q, want %q", m.To, tc.wantOnto)
				}
			}
		})
	}
}
