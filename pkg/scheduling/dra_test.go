package scheduling_test

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestResourceClaimsKeptApart checks that a pod with resource claims does
// not share the verdict of an otherwise identical pod without: under
// IGNORE_DRA_REQUESTS=true the plain pod is placed and the claiming one is
// told why it is not, on every NodePool.
func TestResourceClaimsKeptApart(t *testing.T) {
	plain := pod("plain", "1", "")
	claiming := pod("claiming", "1", "")
	claiming.Spec.ResourceClaims = []corev1.PodResourceClaim{
		{Name: "gpus", ResourceClaimTemplateName: ptr.To("two-gpus")},
		{Name: "nic", ResourceClaimName: ptr.To("shared-nic")},
	}
	snap := snapshot([]*scheduling.NodePool{nodePool("a"), nodePool("b")}, catalog(), []*corev1.Pod{plain, claiming})
	plan, err := scheduling.Solve(snap, scheduling.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := countPlanned(plan); got != 1 {
		t.Fatalf("%d pods planned, want 1 (the plain pod):\n%s", got, planText(plan))
	}
	if len(plan.Unschedulable) != 1 || plan.Unschedulable[0].Pod.Name != "claiming" {
		t.Fatalf("unschedulable %v, want only the claiming pod:\n%s", plan.Unschedulable, planText(plan))
	}
	want := scheduling.DynamicResources{Claims: []string{"gpus", "nic"}, Setting: scheduling.IgnoreDRARequestsSetting}
	for _, np := range []string{"a", "b"} {
		r, ok := plan.Unschedulable[0].NodePools[np].(scheduling.DynamicResources)
		if !ok || len(r.Claims) != 2 || r.Claims[0] != want.Claims[0] || r.Claims[1] != want.Claims[1] || r.Setting != want.Setting {
			t.Errorf("nodepool %s: reason %#v, want %#v", np, plan.Unschedulable[0].NodePools[np], want)
		}
	}
}

func countPlanned(p *scheduling.Plan) int {
	n := 0
	for _, e := range p.Existing {
		n += len(e.Pods)
	}
	for _, nc := range p.NewNodeClaims {
		n += len(nc.Pods)
	}
	return n
}

// gpuType is a 16-core type publishing gpus devices of the test driver.
func gpuType(name string, gpus int64, price float64) *scheduling.InstanceType {
	it := instanceType(name, 16)
	for i := range it.Offerings {
		it.Offerings[i].Price = price
	}
	return it
}

const testDriver = "gpu.example.com"

// claimPod is a pod whose template claim asks for count devices that the
// given instance types and nodes can meet.
func claimPod(name string, count int64, types []string, nodes ...string) (*corev1.Pod, []scheduling.DeviceRequest) {
	p := pod(name, "1", "")
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To("gpus")}}
	r := scheduling.DeviceRequest{Claim: "gpus", Template: "gpus", Request: "gpu", DeviceClass: "gpu", Driver: testDriver,
		Count: count, InstanceTypes: append([]string(nil), types...), Nodes: nodes}
	scheduling.SortDeviceRequest(&r)
	return p, []scheduling.DeviceRequest{r}
}

// TestDevicePlanning plans pods whose claims ask for devices: only types
// whose devices meet the selectors, never more devices on a node than it
// publishes, devices in use on existing nodes counted, and a reason that
// names the device when nothing publishes it.
func TestDevicePlanning(t *testing.T) {
	its := append(catalog(), gpuType("g.1x", 1, 0.5), gpuType("g.4x", 4, 4), gpuType("v.4x", 4, 5))
	published := map[string]map[string]int64{"g.1x": {testDriver: 1}, "g.4x": {testDriver: 4}, "v.4x": {testDriver: 4}}
	anyTwo := []string{"g.4x", "v.4x"}
	gpuNode := func(name string, bound ...*corev1.Pod) *scheduling.ExistingNode {
		return &scheduling.ExistingNode{Name: name, NodeClaim: name, NodePool: "a", Initialized: true,
			Labels:      map[string]string{corev1.LabelInstanceTypeStable: "g.4x", corev1.LabelTopologyZone: "zone-a", "karpenter.sh/capacity-type": "on-demand", "karpenter.sh/nodepool": "a", corev1.LabelHostname: name},
			Allocatable: list("cpu", "16", "memory", "32Gi", "pods", "160"), Pods: bound}
	}
	bigNode := &scheduling.ExistingNode{Name: "big", NodeClaim: "big", NodePool: "a", Initialized: true,
		Labels:      map[string]string{corev1.LabelInstanceTypeStable: "m5.16x", corev1.LabelTopologyZone: "zone-a", "karpenter.sh/capacity-type": "on-demand", "karpenter.sh/nodepool": "a", corev1.LabelHostname: "big"},
		Allocatable: list("cpu", "16", "memory", "32Gi", "pods", "160")}
	type podReqs struct {
		pod  *corev1.Pod
		reqs []scheduling.DeviceRequest
	}
	mk := func(name string, count int64, types []string, nodes ...string) podReqs {
		p, r := claimPod(name, count, types, nodes...)
		return podReqs{p, r}
	}
	// mkOther claims from another template (other selectors).
	mkOther := func(name string, count int64, types []string) podReqs {
		pr := mk(name, count, types)
		pr.pod.Spec.ResourceClaims[0].ResourceClaimTemplateName = ptr.To("other")
		pr.reqs[0].Template = "other"
		return pr
	}
	tests := []struct {
		name      string
		pending   []podReqs
		bound     []podReqs // bound to existing node "gpu-1"
		nodes     []string  // existing nodes: "gpu-1" (4 devices), "big" (none)
		wantNew   []string  // cheapest type of each new NodeClaim, in plan order
		onNode    int       // pods placed on existing nodes
		wantWhy   scheduling.DeviceProblem
		unplanned int
	}{
		{name: "two devices take the cheapest type with four", pending: []podReqs{mk("p", 2, anyTwo)}, wantNew: []string{"g.4x"}},
		{name: "two pods of two share one node of four", pending: []podReqs{mk("p1", 2, anyTwo), mk("p2", 2, anyTwo)}, wantNew: []string{"g.4x"}},
		{name: "three pods of two need two nodes", pending: []podReqs{mk("p1", 2, anyTwo), mk("p2", 2, anyTwo), mk("p3", 2, anyTwo)}, wantNew: []string{"g.4x", "g.4x"}},
		{name: "a selector picks the dearer type", pending: []podReqs{mk("p", 2, []string{"v.4x"})}, wantNew: []string{"v.4x"}},
		{name: "a node without devices is not used", nodes: []string{"big"}, pending: []podReqs{mk("p", 2, anyTwo)}, wantNew: []string{"g.4x"}},
		{name: "free devices on an existing node are used", nodes: []string{"gpu-1"}, bound: []podReqs{mk("b", 2, anyTwo, "gpu-1")},
			pending: []podReqs{mk("p", 2, anyTwo, "gpu-1")}, onNode: 1},
		{name: "devices in use are not free", nodes: []string{"gpu-1"}, bound: []podReqs{mk("b", 3, anyTwo, "gpu-1")},
			pending: []podReqs{mk("p", 2, anyTwo, "gpu-1")}, wantNew: []string{"g.4x"}},
		{name: "pods asking for other devices get their own types", pending: []podReqs{mk("p", 2, anyTwo), mkOther("q", 1, []string{"g.1x", "v.4x"})},
			wantNew: []string{"g.4x", "g.1x"}},
		{name: "no type publishes the devices", pending: []podReqs{mk("p", 8, nil)}, wantWhy: scheduling.DevicesNowhere, unplanned: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dev := &scheduling.Devices{Pods: map[string][]scheduling.DeviceRequest{}, InstanceTypes: published, Nodes: map[string]map[string]int64{}}
			var pending []*corev1.Pod
			for _, pr := range tc.pending {
				pending = append(pending, pr.pod)
				dev.Pods[scheduling.PodKey(pr.pod)] = pr.reqs
			}
			snap := snapshot([]*scheduling.NodePool{nodePool("a")}, its, pending)
			for _, n := range tc.nodes {
				switch n {
				case "big":
					snap.Nodes = append(snap.Nodes, bigNode)
				case "gpu-1":
					var bound []*corev1.Pod
					for _, pr := range tc.bound {
						bound = append(bound, pr.pod)
						dev.Pods[scheduling.PodKey(pr.pod)] = pr.reqs
					}
					snap.Nodes = append(snap.Nodes, gpuNode(n, bound...))
					dev.Nodes[n] = map[string]int64{testDriver: 4}
				}
			}
			snap.Devices = dev
			plan, err := scheduling.Solve(snap, scheduling.Options{PlanDynamicResources: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, nc := range plan.NewNodeClaims {
				got = append(got, nc.InstanceTypes[0].Name)
				need := int64(0)
				for _, p := range nc.Pods {
					for _, r := range dev.Pods[scheduling.PodKey(p)] {
						need += r.Count
						for _, it := range nc.InstanceTypes {
							if !slices.Contains(r.InstanceTypes, it.Name) {
								t.Errorf("pod %s may launch on %s, whose devices do not meet its claim (%v)", p.Name, it.Name, r.InstanceTypes)
							}
						}
					}
				}
				for _, it := range nc.InstanceTypes {
					if published[it.Name][testDriver] < need {
						t.Errorf("launch option %s publishes %d devices, the pods need %d", it.Name, published[it.Name][testDriver], need)
					}
				}
				for name := range nc.Requests {
					if name == scheduling.DeviceResource(testDriver) {
						t.Errorf("NodeClaim requests carry the device dimension: %v", nc.Requests)
					}
				}
			}
			onNode := 0
			for _, e := range plan.Existing {
				if e.Node != "gpu-1" {
					t.Errorf("pods placed on %s, which has no devices", e.Node)
				}
				onNode += len(e.Pods)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.wantNew) || onNode != tc.onNode || len(plan.Unschedulable) != tc.unplanned {
				t.Fatalf("new %v, on existing %d, unplanned %d; want %v, %d, %d:\n%s", got, onNode, len(plan.Unschedulable), tc.wantNew, tc.onNode, tc.unplanned, planText(plan))
			}
			if tc.wantWhy != "" {
				r, ok := plan.Unschedulable[0].NodePools["a"].(scheduling.DeviceReason)
				if !ok || r.Problem != tc.wantWhy || r.Request.Claim != "gpus" || r.Request.DeviceClass != "gpu" {
					t.Errorf("reason %#v, want a %s device reason naming the claim and class", plan.Unschedulable[0].NodePools["a"], tc.wantWhy)
				}
			}
		})
	}
}
