package scheduling_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestTypedReasons checks that each predicate that rejects a pod reports a
// typed value with its detail, and that the one renderer gives the text.
func TestTypedReasons(t *testing.T) {
	existing := func(name, cpu string, opts ...func(*scheduling.ExistingNode)) *scheduling.ExistingNode {
		n := &scheduling.ExistingNode{Name: name, Initialized: true, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: "zone-a"}, Allocatable: list("cpu", cpu, "memory", "8Gi", "pods", "20")}
		for _, o := range opts {
			o(n)
		}
		return n
	}
	tests := []struct {
		name string
		snap func() *scheduling.Snapshot
		// pool is the NodePool whose reason is checked (existingNodes for
		// the existing capacity).
		pool     string
		want     scheduling.Reason
		wantText string
	}{
		{
			name: "taint",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default", poolTaint("gpu", "true", corev1.TaintEffectNoSchedule))}, catalog(), one(pod("p", "1", "")))
			},
			pool:     "default",
			want:     scheduling.Taint{Taint: corev1.Taint{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}},
			wantText: "did not tolerate taint gpu=true:NoSchedule",
		},
		{
			name: "incompatible requirement",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default", poolReq(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"))}, catalog(),
					one(pod("p", "1", "", nodeSelector(corev1.LabelArchStable, "arm64"))))
			},
			pool: "default",
			want: scheduling.IncompatibleRequirements{Key: corev1.LabelArchStable,
				Pod:      []scheduling.NodeSelector{{Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}},
				NodePool: []scheduling.NodeSelector{{Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}},
			wantText: "incompatible requirements, key kubernetes.io/arch, kubernetes.io/arch In [arm64] not in kubernetes.io/arch In [amd64]",
		},
		{
			name: "undefined label",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(pod("p", "1", "", nodeSelector("example.com/team", "a"))))
			},
			pool:     "default",
			want:     scheduling.UndefinedLabel{Key: "example.com/team"},
			wantText: `label "example.com/team" does not have known values`,
		},
		{
			name: "insufficient resource names the resource and the largest type",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(pod("p", "20", "")))
			},
			pool: "default",
			want: scheduling.InsufficientResource{
				Shortfalls: []scheduling.Shortfall{{Resource: corev1.ResourceCPU, Requested: resource.MustParse("20"), LargestAllowed: resource.MustParse("16")}},
			},
		},
		{
			name: "minValues",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default", poolMinValues(corev1.LabelInstanceTypeStable, 3))}, catalog(), one(pod("p", "10", "")))
			},
			pool:     "default",
			want:     scheduling.MinValues{Key: corev1.LabelInstanceTypeStable, Required: 3, Available: 1},
			wantText: `minValues requirement is not met for label "node.kubernetes.io/instance-type" (requires 3, only 1 values are available)`,
		},
		{
			name: "limit names the resource",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default", poolLimit(corev1.ResourceMemory, "1Gi"))}, catalog(), one(pod("p", "1", "")))
			},
			pool:     "default",
			want:     scheduling.Limit{NodePool: "default", Resource: corev1.ResourceMemory},
			wantText: "exceeds nodepool limits",
		},
		{
			name: "node count limit",
			snap: func() *scheduling.Snapshot {
				np := nodePool("default", poolLimit("nodes", "1"))
				np.InUse = list("nodes", "1")
				return snapshot([]*scheduling.NodePool{np}, catalog(), one(pod("p", "1", "")))
			},
			pool: "default",
			want: scheduling.Limit{NodePool: "default", Resource: "nodes"},
		},
		{
			name: "missing claim",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(pod("p", "1", "", pvc("data"))))
			},
			pool:     "default",
			want:     scheduling.Volume{Problem: scheduling.VolumeClaimNotFound, Claim: "data"},
			wantText: `persistentvolumeclaim "data" not found`,
		},
		{
			name: "required affinity to no pod",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(pod("p", "1", "", requiredAffinity(corev1.LabelHostname, map[string]string{"app": "db"}))))
			},
			pool:     "default",
			want:     scheduling.Topology{Cause: scheduling.TopologyNoMatchingPods, Constraint: "pod affinity", Key: corev1.LabelHostname},
			wantText: "unsatisfiable topology constraint for pod affinity, key=kubernetes.io/hostname (no matching pods)",
		},
		{
			name: "existing nodes are grouped by typed reason",
			snap: func() *scheduling.Snapshot {
				s := snapshot(nil, nil, one(pod("p", "8", "")))
				s.Nodes = []*scheduling.ExistingNode{
					existing("n1", "2"), existing("n2", "2"),
					existing("gone", "16", func(n *scheduling.ExistingNode) { n.MarkedForDeletion = true }),
				}
				return s
			},
			pool: existingNodes,
			want: scheduling.ExistingNodes{Groups: []scheduling.NodeGroup{
				{Count: 2, Reason: scheduling.InsufficientResource{Shortfalls: []scheduling.Shortfall{{Resource: corev1.ResourceCPU, Requested: resource.MustParse("8"), LargestAllowed: resource.MustParse("2")}}}},
				{Count: 1, Reason: scheduling.MarkedForDeletion{}},
			}},
			wantText: "2 nodes had insufficient resources; 1 node was marked for deletion",
		},
		{
			name: "offerings out for exhausted subnets say so",
			snap: func() *scheduling.Snapshot {
				its := catalog()
				for _, it := range its {
					for i := range it.Offerings {
						it.Offerings[i].Available = false
						it.Offerings[i].Unavailable = scheduling.UnavailableSubnetExhausted
					}
				}
				return snapshot([]*scheduling.NodePool{nodePool("default")}, its, one(pod("p", "1", "")))
			},
			pool: "default",
			want: scheduling.NoInstanceType{Cause: scheduling.NoTypes, Unavailable: []scheduling.UnavailableCause{scheduling.UnavailableSubnetExhausted}},
			wantText: `no instance type satisfied resources {"cpu":"1","pods":"1"} and requirements karpenter.sh/capacity-type In [on-demand spot], karpenter.sh/nodepool In [default], topology.kubernetes.io/zone In [zone-a zone-b zone-c] ` +
				"(the nodepool has no instance types with an available offering; the node class's subnets in those zones have no free IP addresses (InsufficientFreeAddressesInSubnet); add subnets with free addresses to its subnetSelectorTerms)",
		},
		{
			name: "a zone whose subnets are exhausted, when the pod needs that zone",
			snap: func() *scheduling.Snapshot {
				its := catalog()
				for _, it := range its {
					for i := range it.Offerings {
						if it.Offerings[i].Zone == "zone-a" {
							it.Offerings[i].Available = false
							it.Offerings[i].Unavailable = scheduling.UnavailableSubnetExhausted
						}
					}
				}
				return snapshot([]*scheduling.NodePool{nodePool("default")}, its, one(pod("p", "1", "", nodeSelector(corev1.LabelTopologyZone, "zone-a"))))
			},
			pool: "default",
			want: scheduling.NoInstanceType{Cause: scheduling.NoTypeOffered, Unavailable: []scheduling.UnavailableCause{scheduling.UnavailableSubnetExhausted}},
		},
		{
			name: "a one-zone nodepool under a zone spread names the skew it would break",
			snap: func() *scheduling.Snapshot {
				web := map[string]string{"app": "web"}
				s := snapshot([]*scheduling.NodePool{nodePool("default", poolReq(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a"))}, catalog(),
					one(pod("p", "1", "", labeled("app", "web"), spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, web))))
				s.Nodes = []*scheduling.ExistingNode{
					existing("a", "1", func(n *scheduling.ExistingNode) { n.Pods = pods(2, "web-a", "500m", "", labeled("app", "web")) }),
					existing("b", "0", func(n *scheduling.ExistingNode) { n.Labels[corev1.LabelTopologyZone] = "zone-b" }),
				}
				return s
			},
			pool: "default",
			want: scheduling.Topology{Cause: scheduling.TopologyNoDomain, Constraint: "topology spread", Key: corev1.LabelTopologyZone,
				Counts: map[string]int{"zone-a": 2}, PodDomains: []string{"zone-a"}, NodeDomains: []string{"zone-a", "zone-b"}, MaxSkew: 1},
			wantText: "unsatisfiable topology constraint for topology spread, key=topology.kubernetes.io/zone (counts = map[zone-a:2], podDomains = topology.kubernetes.io/zone In [zone-a], nodeDomains = topology.kubernetes.io/zone In [zone-a zone-b]); " +
				"one more pod in zone-a would be more than maxSkew=1 above zone-b (0): allow more domains (the nodepool's requirements, the pod's node affinity), raise maxSkew, or use whenUnsatisfiable: ScheduleAnyway",
		},
		{
			name: "an extended resource no instance type has is named",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(pod("p", "1", "", request("nvidia.com/gpu", "1"))))
			},
			pool:     "default",
			want:     scheduling.ResourceNotOffered{Resource: "nvidia.com/gpu", Requested: resource.MustParse("1")},
			wantText: "no instance type has nvidia.com/gpu (requested 1); allow instance types that have it in the nodepool's requirements, or check the device plugin's resource name",
		},
		{
			name: "a resource some type has but too little of stays InsufficientResource",
			snap: func() *scheduling.Snapshot {
				its := append(catalog(), instanceType("g.4x", 4, withCapacity("nvidia.com/gpu", "1")))
				return snapshot([]*scheduling.NodePool{nodePool("default")}, its, one(pod("p", "1", "", request("nvidia.com/gpu", "4"))))
			},
			pool: "default",
			want: scheduling.InsufficientResource{
				Shortfalls: []scheduling.Shortfall{{Resource: "nvidia.com/gpu", Requested: resource.MustParse("4"), LargestAllowed: resource.MustParse("1")}},
			},
		},
		{
			name: "a pod that refuses every managed node says so",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(),
					one(pod("p", "1", "", requiredTerms([]corev1.NodeSelectorRequirement{expr("karpenter.sh/nodepool", corev1.NodeSelectorOpDoesNotExist)}))))
			},
			pool:     "default",
			want:     scheduling.ExcludesNodePools{},
			wantText: "its required node affinity excludes every node with label karpenter.sh/nodepool, so no nodepool can launch for it; it waits for a node joiner does not manage (such as a managed node group)",
		},
		{
			name: "refusing every managed node is said before a taint",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default", poolTaint("dedicated", "x", corev1.TaintEffectNoSchedule))}, catalog(),
					one(pod("p", "1", "", requiredTerms([]corev1.NodeSelectorRequirement{expr("karpenter.sh/nodepool", corev1.NodeSelectorOpDoesNotExist)}))))
			},
			pool: "default",
			want: scheduling.ExcludesNodePools{},
		},
		{
			name: "a pod excluding only another nodepool is an ordinary requirement conflict",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(),
					one(pod("p", "1", "", requiredTerms([]corev1.NodeSelectorRequirement{expr("karpenter.sh/nodepool", corev1.NodeSelectorOpIn, "gpu")}))))
			},
			pool: "default",
			want: scheduling.IncompatibleRequirements{Key: "karpenter.sh/nodepool",
				Pod:      []scheduling.NodeSelector{{Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu"}}},
				NodePool: []scheduling.NodeSelector{{Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}}}},
		},
		{
			name: "resource claims are not provisioned under IGNORE_DRA_REQUESTS=true",
			snap: func() *scheduling.Snapshot {
				p := pod("p", "1", "")
				p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To("two-gpus")}}
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(p))
			},
			pool: "default",
			want: scheduling.DynamicResources{Claims: []string{"gpus"}, Setting: "IGNORE_DRA_REQUESTS"},
		},
		{
			name:     "nothing to schedule on",
			snap:     func() *scheduling.Snapshot { return snapshot(nil, nil, one(pod("p", "1", ""))) },
			pool:     existingNodes,
			want:     scheduling.NoCapacity{},
			wantText: "no nodepools or nodes to schedule on",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := scheduling.Solve(tt.snap(), scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Unschedulable) != 1 {
				t.Fatalf("%d unschedulable pods, want 1:\n%s", len(plan.Unschedulable), planText(plan))
			}
			pe := plan.Unschedulable[0]
			got := pe.Existing
			if tt.pool != existingNodes {
				got = pe.NodePools[tt.pool]
			}
			if got == nil || got.Kind() != tt.want.Kind() {
				t.Fatalf("reason %#v, want kind %s", got, tt.want.Kind())
			}
			if !sameReason(got, tt.want) {
				t.Errorf("reason\n%#v\nwant\n%#v", got, tt.want)
			}
			if tt.wantText != "" && scheduling.Message(got) != tt.wantText {
				t.Errorf("text %q, want %q", scheduling.Message(got), tt.wantText)
			}
			if got.String() != scheduling.Message(got) {
				t.Errorf("String %q differs from Message %q", got.String(), scheduling.Message(got))
			}
			if kinds := pe.Kinds(); len(kinds) == 0 {
				t.Error("no kinds")
			}
		})
	}
}

// sameReason compares the detail fields a test sets: quantities by value,
// and Requests/Requirements only when the wanted reason sets them.
func sameReason(got, want scheduling.Reason) bool {
	switch w := want.(type) {
	case scheduling.InsufficientResource:
		g, ok := got.(scheduling.InsufficientResource)
		return ok && sameShortfalls(g.Shortfalls, w.Shortfalls)
	case scheduling.NoInstanceType:
		g, ok := got.(scheduling.NoInstanceType)
		return ok && g.Cause == w.Cause && reflect.DeepEqual(g.Unavailable, w.Unavailable)
	case scheduling.ResourceNotOffered:
		g, ok := got.(scheduling.ResourceNotOffered)
		return ok && g.Resource == w.Resource && g.Requested.Cmp(w.Requested) == 0
	case scheduling.ExistingNodes:
		g, ok := got.(scheduling.ExistingNodes)
		if !ok || len(g.Groups) != len(w.Groups) {
			return false
		}
		for i := range w.Groups {
			if g.Groups[i].Count != w.Groups[i].Count || !sameReason(g.Groups[i].Reason, w.Groups[i].Reason) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(got, want)
}

func sameShortfalls(a, b []scheduling.Shortfall) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Resource != b[i].Resource || a[i].Requested.Cmp(b[i].Requested) != 0 || a[i].LargestAllowed.Cmp(b[i].LargestAllowed) != 0 {
			return false
		}
	}
	return true
}

// TestPodWarnings checks the warning about pods the solver places anyway.
func TestPodWarnings(t *testing.T) {
	withInit := func(cpu string) podOpt {
		return func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: list("cpu", cpu)}}}
		}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []scheduling.Reason
	}{
		{name: "cpu request", pod: pod("p", "1", "")},
		{name: "memory request only", pod: pod("p", "", "1Gi")},
		{name: "no requests", pod: pod("p", "", ""), want: []scheduling.Reason{scheduling.NoRequests{}}},
		{name: "only an extended resource", pod: pod("p", "", "", request("nvidia.com/gpu", "1")), want: []scheduling.Reason{scheduling.NoRequests{}}},
		{name: "an init container's request counts", pod: pod("p", "", "", withInit("500m"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := scheduling.PodWarnings(tt.pod); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PodWarnings = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCountByKind(t *testing.T) {
	taint := scheduling.Taint{Taint: corev1.Taint{Key: "a", Effect: corev1.TaintEffectNoSchedule}}
	errs := []scheduling.PodError{
		{NodePools: map[string]scheduling.Reason{"a": taint, "b": taint}},
		{NodePools: map[string]scheduling.Reason{"a": taint, "b": scheduling.Limit{NodePool: "b", Resource: "cpu"}},
			Existing: scheduling.ExistingNodes{Groups: []scheduling.NodeGroup{{Count: 3, Reason: scheduling.MarkedForDeletion{}}}}},
	}
	want := map[scheduling.ReasonKind]int{scheduling.KindTaint: 2, scheduling.KindLimit: 1, scheduling.KindMarkedForDeletion: 1}
	if got := scheduling.CountByKind(errs); !reflect.DeepEqual(got, want) {
		t.Errorf("CountByKind = %v, want %v", got, want)
	}
	wantPools := map[string]map[scheduling.ReasonKind]int{
		"a": {scheduling.KindTaint: 2},
		"b": {scheduling.KindTaint: 1, scheduling.KindLimit: 1},
	}
	if got := scheduling.CountByNodePool(errs); !reflect.DeepEqual(got, wantPools) {
		t.Errorf("CountByNodePool = %v, want %v", got, wantPools)
	}
}
