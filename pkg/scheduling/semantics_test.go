package scheduling_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

type semanticCase struct {
	name  string
	snap  func() *scheduling.Snapshot
	check func(t *testing.T, s *scheduling.Snapshot, p *scheduling.Plan)
}

func runCases(t *testing.T, cases []semanticCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.snap()
			p, err := scheduling.Solve(s, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkPlan(t, s, p)
			again, err := scheduling.Solve(s, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if planText(p) != planText(again) {
				t.Errorf("not deterministic")
			}
			if tc.check != nil {
				tc.check(t, s, p)
			}
			if t.Failed() {
				t.Logf("plan:\n%s", planText(p))
			}
		})
	}
}

// Check helpers.

func wantNodes(n int) func(*testing.T, *scheduling.Snapshot, *scheduling.Plan) {
	return func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
		t.Helper()
		if len(p.NewNodeClaims) != n {
			t.Errorf("got %d new nodes, want %d", len(p.NewNodeClaims), n)
		}
		if len(p.Unschedulable) != 0 {
			t.Errorf("got %d unschedulable pods, want none", len(p.Unschedulable))
		}
	}
}

func cheapest(nc *scheduling.NewNodeClaim) string { return nc.InstanceTypes[0].Name }

func reqValues(nc *scheduling.NewNodeClaim, key string) []string {
	for _, r := range nc.Requirements {
		if r.Key == key && r.Operator == corev1.NodeSelectorOpIn {
			return r.Values
		}
	}
	return nil
}

func reasonFor(p *scheduling.Plan, pod, pool string) string {
	for _, u := range p.Unschedulable {
		if u.Pod.Name == pod {
			return reasonText(u, pool)
		}
	}
	return ""
}

func wantReason(pod, pool, substr string) func(*testing.T, *scheduling.Snapshot, *scheduling.Plan) {
	return func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
		t.Helper()
		if r := reasonFor(p, pod, pool); !strings.Contains(r, substr) {
			t.Errorf("reason for %s on %s = %q, want it to contain %q", pod, pool, r, substr)
		}
	}
}

func all(fs ...func(*testing.T, *scheduling.Snapshot, *scheduling.Plan)) func(*testing.T, *scheduling.Snapshot, *scheduling.Plan) {
	return func(t *testing.T, s *scheduling.Snapshot, p *scheduling.Plan) {
		t.Helper()
		for _, f := range fs {
			f(t, s, p)
		}
	}
}

func wantCheapest(names ...string) func(*testing.T, *scheduling.Snapshot, *scheduling.Plan) {
	return func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
		t.Helper()
		var got []string
		for _, n := range p.NewNodeClaims {
			got = append(got, cheapest(n))
		}
		if strings.Join(got, ",") != strings.Join(names, ",") {
			t.Errorf("cheapest types %v, want %v", got, names)
		}
	}
}

func one(p ...*corev1.Pod) []*corev1.Pod { return p }

func TestResources(t *testing.T) {
	runCases(t, []semanticCase{
		{
			name: "smallest type that fits the pods",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), pods(2, "p", "1", "1Gi"))
			},
			check: all(wantNodes(1), wantCheapest("m5.2x")),
		},
		{
			name: "a node grows only while that is no dearer than a node of its own",
			snap: func() *scheduling.Snapshot {
				// The third pod would take the node from 2 to 4 cores (+0.14)
				// where a 1-core node of its own costs 0.07.
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), pods(3, "p", "1", "1Gi"))
			},
			check: all(wantNodes(2), wantCheapest("m5.2x", "m5.1x")),
		},
		{
			name: "init containers count by their max, sidecars add up, overhead adds",
			snap: func() *scheduling.Snapshot {
				always := corev1.ContainerRestartPolicyAlways
				p := pod("p", "500m", "")
				p.Spec.InitContainers = []corev1.Container{
					{Name: "init", Resources: corev1.ResourceRequirements{Requests: list("cpu", "3")}},
					{Name: "sidecar", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: list("cpu", "1")}},
				}
				p.Spec.Overhead = list("cpu", "500m")
				// Effective cpu: max(3, 1+0.5) + 0.5 = 3.5, so a 4-core type.
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(p))
			},
			check: all(wantNodes(1), wantCheapest("m5.4x")),
		},
		{
			name: "extended resources pick the type that has them",
			snap: func() *scheduling.Snapshot {
				its := append(catalog(), instanceType("g5.8x", 8, withCapacity("nvidia.com/gpu", "1")))
				return snapshot([]*scheduling.NodePool{nodePool("default")}, its, one(pod("gpu", "1", "1Gi", request("nvidia.com/gpu", "1"))))
			},
			check: all(wantNodes(1), wantCheapest("g5.8x")),
		},
		{
			name: "a resource no instance type offers is explained",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(pod("fpga", "1", "", request("example.com/fpga", "1"))))
			},
			check: wantReason("fpga", "default", "no instance type has example.com/fpga (requested 1)"),
		},
		{
			name: "hugepages need a type that offers them",
			snap: func() *scheduling.Snapshot {
				its := append(catalog(), instanceType("h.8x", 8, withCapacity("hugepages-2Mi", "1Gi")))
				return snapshot([]*scheduling.NodePool{nodePool("default")}, its, one(pod("huge", "1", "", request("hugepages-2Mi", "512Mi"))))
			},
			check: all(wantNodes(1), wantCheapest("h.8x")),
		},
		{
			name: "pods without requests still take a pod slot",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), pods(15, "p", "", ""))
			},
			check: all(wantNodes(1), wantCheapest("m5.2x")),
		},
		{
			name: "overhead is taken out of allocatable",
			snap: func() *scheduling.Snapshot {
				its := []*scheduling.InstanceType{instanceType("a.2x", 2, withOverhead("500m", "100Mi")), instanceType("a.4x", 4, withOverhead("500m", "100Mi"))}
				return snapshot([]*scheduling.NodePool{nodePool("default")}, its, one(pod("p", "1600m", "")))
			},
			check: all(wantNodes(1), wantCheapest("a.4x")),
		},
		{
			name: "a pod larger than every type is explained",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(pod("big", "64", "")))
			},
			check: wantReason("big", "default", `no instance type satisfied resources {"cpu":"64","pods":"1"}`),
		},
	})
}

func TestDaemonOverhead(t *testing.T) {
	ds := func(name, cpu string, opts ...podOpt) *corev1.Pod { return pod(name, cpu, "", opts...) }
	runCases(t, []semanticCase{
		{
			name: "matching daemons add to every new node",
			snap: func() *scheduling.Snapshot {
				s := snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(pod("p", "1", "")))
				s.DaemonSets = []*corev1.Pod{ds("ds", "1500m")}
				return s
			},
			check: all(wantNodes(1), wantCheapest("m5.4x"), func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if q := p.NewNodeClaims[0].Requests[corev1.ResourceCPU]; q.MilliValue() != 2500 {
					t.Errorf("requests cpu %s, want 2500m", q.String())
				}
			}),
		},
		{
			name: "daemons that do not tolerate the pool's taints or select other nodes do not count",
			snap: func() *scheduling.Snapshot {
				np := nodePool("default", poolTaint("dedicated", "x", corev1.TaintEffectNoSchedule))
				s := snapshot([]*scheduling.NodePool{np}, catalog(), one(pod("p", "1", "", tolerate("dedicated", "x", corev1.TaintEffectNoSchedule))))
				s.DaemonSets = []*corev1.Pod{ds("untolerating", "4"), ds("arm", "4", nodeSelector(corev1.LabelArchStable, "arm64"))}
				return s
			},
			check: all(wantNodes(1), wantCheapest("m5.1x")),
		},
		{
			name: "a pod binding a daemon's host port cannot use that pool",
			snap: func() *scheduling.Snapshot {
				withPort := func(p *corev1.Pod) {
					p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9100, HostPort: 9100}}
				}
				s := snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(pod("exporter", "100m", "", withPort)))
				s.DaemonSets = []*corev1.Pod{ds("node-exporter", "100m", withPort)}
				return s
			},
			check: wantReason("exporter", "default", "host port 9100/TCP is taken by a DaemonSet pod on every node"),
		},
		{
			// Karpenter's regression suite: two DaemonSets, each on one
			// architecture with its own host port; a pod wanting one daemon's
			// port runs on the other architecture, where that port is free.
			name: "a daemon's host port is taken only on the types the daemon runs on",
			snap: func() *scheduling.Snapshot {
				port := func(n int32) podOpt {
					return func(p *corev1.Pod) {
						p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: n, HostPort: n}}
					}
				}
				types := append(catalog(), instanceType("m6g.4x", 4, withLabel(corev1.LabelArchStable, "arm64")))
				s := snapshot([]*scheduling.NodePool{nodePool("default")}, types, one(
					pod("wants-8000", "100m", "", port(8000), nodeSelector(corev1.LabelArchStable, "arm64")),
					pod("wants-9000", "100m", "", port(9000), nodeSelector(corev1.LabelArchStable, "amd64")),
				))
				s.DaemonSets = []*corev1.Pod{
					ds("amd64-agent", "100m", port(8000), nodeSelector(corev1.LabelArchStable, "amd64")),
					ds("arm64-agent", "100m", port(9000), nodeSelector(corev1.LabelArchStable, "arm64")),
				}
				return s
			},
			check: all(wantNodes(2), func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				for _, nc := range p.NewNodeClaims {
					for _, pd := range nc.Pods {
						arch := reqValues(nc, corev1.LabelArchStable)
						want := map[string]string{"wants-8000": "arm64", "wants-9000": "amd64"}[pd.Name]
						if strings.Join(arch, ",") != want {
							t.Errorf("%s planned on arch %v, want %s", pd.Name, arch, want)
						}
					}
				}
			}),
		},
		{
			name: "daemonset-owned pending pods are not provisioned for",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(pod("ds-pod", "1", "", ownedBy("DaemonSet"))))
			},
			check: wantNodes(0),
		},
	})
}

func TestNodeSelection(t *testing.T) {
	arm := func() []*scheduling.InstanceType {
		return append(catalog(), instanceType("m6g.4x", 4, withLabel(corev1.LabelArchStable, "arm64")))
	}
	pool := []*scheduling.NodePool{nodePool("default")}
	runCases(t, []semanticCase{
		{
			name: "nodeSelector on zone narrows the node's zone",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), one(pod("p", "1", "", nodeSelector(corev1.LabelTopologyZone, "zone-b"))))
			},
			check: all(wantNodes(1), func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if z := reqValues(p.NewNodeClaims[0], corev1.LabelTopologyZone); strings.Join(z, ",") != "zone-b" {
					t.Errorf("zones %v", z)
				}
			}),
		},
		{
			name: "In on arch",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, arm(), one(pod("p", "1", "", requiredTerms([]corev1.NodeSelectorRequirement{expr(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")}))))
			},
			check: all(wantNodes(1), wantCheapest("m6g.4x")),
		},
		{
			name: "NotIn on instance type",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), one(pod("p", "500m", "", requiredTerms([]corev1.NodeSelectorRequirement{expr(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpNotIn, "m5.1x")}))))
			},
			check: all(wantNodes(1), wantCheapest("m5.2x")),
		},
		{
			name: "Exists on a type label",
			snap: func() *scheduling.Snapshot {
				its := append(catalog(), instanceType("gpu.16x", 16, withLabel("karpenter.k8s.aws/instance-gpu-name", "a10g")))
				return snapshot(pool, its, one(pod("p", "1", "", requiredTerms([]corev1.NodeSelectorRequirement{expr("karpenter.k8s.aws/instance-gpu-name", corev1.NodeSelectorOpExists)}))))
			},
			check: all(wantNodes(1), wantCheapest("gpu.16x")),
		},
		{
			name: "DoesNotExist on a type label",
			snap: func() *scheduling.Snapshot {
				its := []*scheduling.InstanceType{instanceType("gpu.1x", 1, withLabel("gpu", "yes")), instanceType("m5.2x", 2)}
				return snapshot(pool, its, one(pod("p", "500m", "", requiredTerms([]corev1.NodeSelectorRequirement{expr("gpu", corev1.NodeSelectorOpDoesNotExist)}))))
			},
			check: all(wantNodes(1), wantCheapest("m5.2x")),
		},
		{
			name: "Gt and Lt on instance-cpu",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), one(pod("p", "500m", "", requiredTerms([]corev1.NodeSelectorRequirement{
					expr("karpenter.k8s.aws/instance-cpu", corev1.NodeSelectorOpGt, "2"),
					expr("karpenter.k8s.aws/instance-cpu", corev1.NodeSelectorOpLt, "16"),
				}))))
			},
			check: all(wantNodes(1), wantCheapest("m5.4x"), func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				for _, it := range p.NewNodeClaims[0].InstanceTypes {
					if it.Name == "m5.16x" || it.Name == "m5.2x" {
						t.Errorf("option %s violates Gt/Lt", it.Name)
					}
				}
			}),
		},
		{
			name: "Gte and Lte in NodePool requirements",
			snap: func() *scheduling.Snapshot {
				np := nodePool("default", poolReq("karpenter.k8s.aws/instance-cpu", scheduling.OpGte, "4"), poolReq("karpenter.k8s.aws/instance-cpu", scheduling.OpLte, "8"))
				return snapshot([]*scheduling.NodePool{np}, catalog(), one(pod("p", "500m", "")))
			},
			check: all(wantNodes(1), wantCheapest("m5.4x"), func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if n := len(p.NewNodeClaims[0].InstanceTypes); n != 2 {
					t.Errorf("%d options, want 2 (4 and 8 cores)", n)
				}
			}),
		},
		{
			name: "OR'ed terms: the first impossible term is skipped",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), one(pod("p", "1", "", requiredTerms(
					[]corev1.NodeSelectorRequirement{expr(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "s390x")},
					[]corev1.NodeSelectorRequirement{expr(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-c")},
				))))
			},
			check: all(wantNodes(1), func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if z := reqValues(p.NewNodeClaims[0], corev1.LabelTopologyZone); strings.Join(z, ",") != "zone-c" {
					t.Errorf("zones %v, want zone-c", z)
				}
			}),
		},
		{
			name: "preferred node affinity is honoured when possible",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, arm(), one(pod("p", "1", "", preferredTerm(10, expr(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")))))
			},
			check: all(wantNodes(1), wantCheapest("m6g.4x")),
		},
		{
			name: "preferred node affinity is relaxed, heaviest first, when impossible",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), one(pod("p", "1", "",
					preferredTerm(50, expr(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "s390x")),
					preferredTerm(10, expr(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b")))))
			},
			check: all(wantNodes(1), func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if z := reqValues(p.NewNodeClaims[0], corev1.LabelTopologyZone); strings.Join(z, ",") != "zone-b" {
					t.Errorf("zones %v, want the lighter preference zone-b", z)
				}
			}),
		},
		{
			name: "os and windows build labels",
			snap: func() *scheduling.Snapshot {
				its := append(catalog(), instanceType("win.4x", 4, withLabel(corev1.LabelOSStable, "windows"), withLabel(corev1.LabelWindowsBuild, "10.0.20348")))
				return snapshot(pool, its, one(pod("p", "1", "", nodeSelector(corev1.LabelOSStable, "windows"), nodeSelector(corev1.LabelWindowsBuild, "10.0.20348"))))
			},
			check: all(wantNodes(1), wantCheapest("win.4x")),
		},
		{
			name: "zone outside the pool is an incompatible requirement",
			snap: func() *scheduling.Snapshot {
				np := nodePool("default", poolReq(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b", "zone-c"))
				return snapshot([]*scheduling.NodePool{np}, catalog(), one(pod("p", "1", "", nodeSelector(corev1.LabelTopologyZone, "zone-a"))))
			},
			check: wantReason("p", "default", "incompatible requirements, key topology.kubernetes.io/zone, topology.kubernetes.io/zone In [zone-a] not in topology.kubernetes.io/zone In [zone-b zone-c]"),
		},
		{
			name: "a label nobody defines has no known values",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), one(pod("p", "1", "", nodeSelector("eks.amazonaws.com/nodegroup", "ng-1"))))
			},
			check: wantReason("p", "default", `label "eks.amazonaws.com/nodegroup" does not have known values`),
		},
		{
			name: "NodePool template labels satisfy selectors",
			snap: func() *scheduling.Snapshot {
				np := nodePool("default")
				np.Labels = map[string]string{"team": "a"}
				return snapshot([]*scheduling.NodePool{np}, catalog(), one(pod("p", "1", "", nodeSelector("team", "a"))))
			},
			check: wantNodes(1),
		},
	})
}

func TestTaints(t *testing.T) {
	runCases(t, []semanticCase{
		{
			name: "NodePool taints block pods that do not tolerate them",
			snap: func() *scheduling.Snapshot {
				np := nodePool("gpu", poolTaint("dedicated", "gpu", corev1.TaintEffectNoSchedule))
				return snapshot([]*scheduling.NodePool{np}, catalog(), one(pod("p", "1", "")))
			},
			check: wantReason("p", "gpu", "did not tolerate taint dedicated=gpu:NoSchedule"),
		},
		{
			name: "tolerating pods land",
			snap: func() *scheduling.Snapshot {
				np := nodePool("gpu", poolTaint("dedicated", "gpu", corev1.TaintEffectNoSchedule))
				return snapshot([]*scheduling.NodePool{np}, catalog(), one(pod("p", "1", "", tolerate("dedicated", "gpu", corev1.TaintEffectNoSchedule))))
			},
			check: wantNodes(1),
		},
		{
			name: "startup taints do not block",
			snap: func() *scheduling.Snapshot {
				np := nodePool("default", poolStartupTaint("node.cilium.io/agent-not-ready"))
				return snapshot([]*scheduling.NodePool{np}, catalog(), one(pod("p", "1", "")))
			},
			check: wantNodes(1),
		},
		{
			name: "karpenter.sh/unregistered is never a reason",
			snap: func() *scheduling.Snapshot {
				np := nodePool("default", poolTaint("karpenter.sh/unregistered", "", corev1.TaintEffectNoExecute))
				return snapshot([]*scheduling.NodePool{np}, catalog(), one(pod("p", "1", "")))
			},
			check: wantNodes(1),
		},
		{
			name: "PreferNoSchedule is relaxed when nothing else fits",
			snap: func() *scheduling.Snapshot {
				np := nodePool("default", poolTaint("soft", "x", corev1.TaintEffectPreferNoSchedule))
				return snapshot([]*scheduling.NodePool{np}, catalog(), one(pod("p", "1", "")))
			},
			check: wantNodes(1),
		},
		{
			name: "the untainted pool is used when the tainted one is heavier",
			snap: func() *scheduling.Snapshot {
				tainted := nodePool("tainted", poolWeight(100), poolTaint("dedicated", "x", corev1.TaintEffectNoSchedule))
				return snapshot([]*scheduling.NodePool{tainted, nodePool("plain")}, catalog(), one(pod("p", "1", "")))
			},
			check: all(wantNodes(1), func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if p.NewNodeClaims[0].NodePool != "plain" {
					t.Errorf("nodepool %s", p.NewNodeClaims[0].NodePool)
				}
			}),
		},
	})
}

func TestNodePools(t *testing.T) {
	runCases(t, []semanticCase{
		{
			name: "heavier NodePools are tried first",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("light", poolWeight(1)), nodePool("heavy", poolWeight(50))}, catalog(), one(pod("p", "1", "")))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if p.NewNodeClaims[0].NodePool != "heavy" {
					t.Errorf("nodepool %s, want heavy", p.NewNodeClaims[0].NodePool)
				}
			},
		},
		{
			name: "limits are never exceeded; the rest is explained",
			snap: func() *scheduling.Snapshot {
				np := nodePool("default", poolLimit(corev1.ResourceCPU, "16"))
				return snapshot([]*scheduling.NodePool{np}, catalog(), pods(12, "p", "3", ""))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if len(p.Unschedulable) == 0 {
					t.Fatal("expected some pods over the limit")
				}
				if r := reasonText(p.Unschedulable[0], "default"); r != "exceeds nodepool limits" {
					t.Errorf("reason %q", r)
				}
				if r, ok := p.Unschedulable[0].NodePools["default"].(scheduling.Limit); !ok || r.Resource != corev1.ResourceCPU || r.NodePool != "default" {
					t.Errorf("typed reason %#v, want Limit{default, cpu}", p.Unschedulable[0].NodePools["default"])
				}
			},
		},
		{
			name: "limits count what is already in use",
			snap: func() *scheduling.Snapshot {
				np := nodePool("default", poolLimit(corev1.ResourceCPU, "16"))
				np.InUse = list("cpu", "15")
				return snapshot([]*scheduling.NodePool{np}, catalog(), one(pod("p", "500m", "")))
			},
			check: all(wantNodes(1), wantCheapest("m5.1x")),
		},
		{
			name: "a limited heavy pool overflows into the next one",
			snap: func() *scheduling.Snapshot {
				heavy := nodePool("heavy", poolWeight(10), poolLimit(corev1.ResourceCPU, "4"))
				return snapshot([]*scheduling.NodePool{heavy, nodePool("other")}, catalog(), pods(4, "p", "1500m", ""))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				pools := map[string]bool{}
				for _, n := range p.NewNodeClaims {
					pools[n.NodePool] = true
				}
				if !pools["heavy"] || !pools["other"] || len(p.Unschedulable) > 0 {
					t.Errorf("pools used %v, unschedulable %d", pools, len(p.Unschedulable))
				}
			},
		},
		{
			name: "minValues keeps enough distinct values among the options",
			snap: func() *scheduling.Snapshot {
				np := nodePool("default", poolMinValues(corev1.LabelInstanceTypeStable, 3))
				return snapshot([]*scheduling.NodePool{np}, catalog(), one(pod("p", "1", "")))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				nc := p.NewNodeClaims[0]
				if len(nc.InstanceTypes) < 3 {
					t.Errorf("%d options, want at least 3", len(nc.InstanceTypes))
				}
				for _, r := range nc.Requirements {
					if r.Key == corev1.LabelInstanceTypeStable && (r.MinValues == nil || *r.MinValues != 3) {
						t.Errorf("instance-type requirement lost minValues: %+v", r)
					}
				}
			},
		},
		{
			name: "minValues that the fitting types cannot meet is explained",
			snap: func() *scheduling.Snapshot {
				np := nodePool("default", poolMinValues(corev1.LabelInstanceTypeStable, 3))
				return snapshot([]*scheduling.NodePool{np}, catalog(), one(pod("p", "7", "")))
			},
			check: wantReason("p", "default", `minValues requirement is not met for label "node.kubernetes.io/instance-type" (requires 3, only 2 values are available)`),
		},
		{
			name: "minValues stops a node from growing past the point it can be met",
			snap: func() *scheduling.Snapshot {
				np := nodePool("default", poolMinValues(corev1.LabelInstanceTypeStable, 2))
				return snapshot([]*scheduling.NodePool{np}, catalog(), pods(2, "p", "5", ""))
			},
			check: wantNodes(2),
		},
		{
			name: "options are ordered by price and capped",
			snap: func() *scheduling.Snapshot {
				var its []*scheduling.InstanceType
				for i := int64(1); i <= scheduling.DefaultMaxInstanceTypes+100; i++ {
					its = append(its, instanceType("t"+resource.NewQuantity(i, resource.DecimalSI).String(), i))
				}
				return snapshot([]*scheduling.NodePool{nodePool("default")}, its, one(pod("p", "1", "")))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				nc := p.NewNodeClaims[0]
				if len(nc.InstanceTypes) != scheduling.DefaultMaxInstanceTypes {
					t.Errorf("%d options", len(nc.InstanceTypes))
				}
				if nc.InstanceTypes[0].Name != "t1" {
					t.Errorf("cheapest %s, want t1", nc.InstanceTypes[0].Name)
				}
			},
		},
		{
			name: "unavailable offerings are not used",
			snap: func() *scheduling.Snapshot {
				its := catalog()
				for _, it := range its {
					for i := range it.Offerings {
						if it.Offerings[i].Zone != "zone-c" {
							it.Offerings[i].Available = false
						}
					}
				}
				return snapshot([]*scheduling.NodePool{nodePool("default")}, its, one(pod("p", "1", "")))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if z := reqValues(p.NewNodeClaims[0], corev1.LabelTopologyZone); strings.Join(z, ",") != "zone-c" {
					t.Errorf("zones %v", z)
				}
			},
		},
		{
			name: "spot and on-demand stay open when both are allowed (spot is cheaper)",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(pod("any", "1", "")))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				n := p.NewNodeClaims[0]
				if ct := strings.Join(reqValues(n, "karpenter.sh/capacity-type"), ","); ct != "on-demand,spot" || n.Price != 0.07 {
					t.Errorf("capacity types %s, price %v", ct, n.Price)
				}
			},
		},
		{
			name: "a pod requiring on-demand narrows the node to on-demand",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), []*corev1.Pod{
					pod("any", "1", ""),
					pod("od", "1", "", nodeSelector("karpenter.sh/capacity-type", "on-demand")),
				})
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				for _, n := range p.NewNodeClaims {
					for _, pd := range n.Pods {
						if ct := strings.Join(reqValues(n, "karpenter.sh/capacity-type"), ","); pd.Name == "od" && ct != "on-demand" {
							t.Errorf("on-demand pod got %s", ct)
						}
					}
				}
			},
		},
		{
			name: "reserved capacity is preferred while it lasts",
			snap: func() *scheduling.Snapshot {
				its := catalog()
				its[2].Offerings = append(its[2].Offerings, scheduling.Offering{Zone: "zone-a", CapacityType: "reserved", Price: 0.001, Available: true, ReservationID: "cr-1", ReservationCapacity: 1})
				return snapshot([]*scheduling.NodePool{nodePool("default")}, its, pods(2, "p", "3", "", requiredAntiAffinity(corev1.LabelHostname, map[string]string{"app": "r"}), labeled("app", "r")))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				var reserved int
				for _, n := range p.NewNodeClaims {
					if strings.Join(reqValues(n, "karpenter.sh/capacity-type"), ",") == "reserved" {
						reserved++
					}
				}
				if reserved != 1 {
					t.Errorf("%d reserved nodes, want 1", reserved)
				}
			},
		},
	})
}

func TestIgnorePreferences(t *testing.T) {
	its := append(catalog(), instanceType("m6g.4x", 4, withLabel(corev1.LabelArchStable, "arm64")))
	s := snapshot([]*scheduling.NodePool{nodePool("default")}, its, one(pod("p", "1", "", preferredTerm(10, expr(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")))))
	p, err := scheduling.Solve(s, scheduling.Options{IgnorePreferences: true})
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, s, p)
	if got := cheapest(p.NewNodeClaims[0]); got != "m5.1x" {
		t.Errorf("cheapest %s, want the preference ignored (m5.1x)", got)
	}
}

// TestRequirePreferences: consolidation's simulation keeps preferences
// as requirements, so a pod whose preference no node can meet fails
// instead of landing against its preference; without the option the
// preference is relaxed.
func TestRequirePreferences(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    scheduling.Options
		wantErr bool
	}{
		{name: "relaxed by default", opts: scheduling.Options{}},
		{name: "kept when required", opts: scheduling.Options{RequirePreferences: true}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(pod("p", "1", "", preferredTerm(10, expr(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")))))
			p, err := scheduling.Solve(s, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkPlan(t, s, p)
			if got := len(p.Unschedulable) == 1; got != tc.wantErr {
				t.Errorf("unschedulable %v, want %v (plan %d new nodes)", p.Unschedulable, tc.wantErr, len(p.NewNodeClaims))
			}
		})
	}
}

func TestIgnoreReservedCapacity(t *testing.T) {
	its := catalog()
	its[2].Offerings = append(its[2].Offerings, scheduling.Offering{Zone: "zone-a", CapacityType: "reserved", Price: 0.001, Available: true, ReservationID: "cr-1", ReservationCapacity: 5})
	s := snapshot([]*scheduling.NodePool{nodePool("default")}, its, one(pod("p", "3", "")))
	p, err := scheduling.Solve(s, scheduling.Options{IgnoreReservedCapacity: true})
	if err != nil {
		t.Fatal(err)
	}
	checkPlan(t, s, p)
	if ct := reqValues(p.NewNodeClaims[0], "karpenter.sh/capacity-type"); strings.Join(ct, ",") != "on-demand,spot" {
		t.Errorf("capacity types %v, want reservations ignored", ct)
	}
}

func TestTopologySpread(t *testing.T) {
	app := map[string]string{"app": "web"}
	pool := []*scheduling.NodePool{nodePool("default")}
	zonesOf := func(p *scheduling.Plan) map[string]int {
		out := map[string]int{}
		for _, n := range p.NewNodeClaims {
			z := reqValues(n, corev1.LabelTopologyZone)
			if len(z) == 1 {
				out[z[0]] += len(n.Pods)
			}
		}
		return out
	}
	runCases(t, []semanticCase{
		{
			name: "zone spread puts one pod in each zone",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), pods(6, "web", "1", "", labeled("app", "web"), spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, app)))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				z := zonesOf(p)
				if z["zone-a"] != 2 || z["zone-b"] != 2 || z["zone-c"] != 2 {
					t.Errorf("per zone %v", z)
				}
			},
		},
		{
			name: "hostname spread with maxSkew 2 puts two per node",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), pods(6, "web", "100m", "", labeled("app", "web"), spread(corev1.LabelHostname, 2, corev1.DoNotSchedule, app)))
			},
			check: wantNodes(3),
		},
		{
			name: "spread counts existing pods",
			snap: func() *scheduling.Snapshot {
				s := snapshot(pool, catalog(), pods(2, "web", "1", "", labeled("app", "web"), spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, app)))
				s.Nodes = []*scheduling.ExistingNode{{Name: "full", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a", corev1.LabelHostname: "full"}, Initialized: true,
					Allocatable: list("cpu", "1", "pods", "10"), Pods: []*corev1.Pod{pod("old", "1", "", labeled("app", "web"))}}}
				return s
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if z := zonesOf(p); z["zone-a"] != 0 || z["zone-b"] != 1 || z["zone-c"] != 1 {
					t.Errorf("per zone %v, want zone-b and zone-c", z)
				}
			},
		},
		{
			name: "nodeAffinityPolicy Honor measures only the pod's zones",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), pods(4, "web", "1", "", labeled("app", "web"),
					requiredTerms([]corev1.NodeSelectorRequirement{expr(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a", "zone-b")}),
					spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, app)))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if z := zonesOf(p); z["zone-a"] != 2 || z["zone-b"] != 2 {
					t.Errorf("per zone %v", z)
				}
			},
		},
		{
			// kube-scheduler counts only the domains of nodes the pod's node
			// selector admits: another pool's zones are not its domains.
			name: "zones of a pool the pod cannot use are not domains",
			snap: func() *scheduling.Snapshot {
				a := nodePool("a", poolReq(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a"))
				b := nodePool("b", poolReq(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b", "zone-c"))
				return snapshot([]*scheduling.NodePool{a, b}, catalog(), pods(3, "web", "1", "", labeled("app", "web"),
					nodeSelector("karpenter.sh/nodepool", "a"),
					spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, app)))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if len(p.Unschedulable) != 0 {
					t.Errorf("%d unschedulable, want none", len(p.Unschedulable))
				}
				if z := zonesOf(p); z["zone-a"] != 3 {
					t.Errorf("per zone %v, want all three in zone-a", z)
				}
			},
		},
		{
			name: "nodeAffinityPolicy Ignore counts every pool's zones",
			snap: func() *scheduling.Snapshot {
				ignore := corev1.NodeInclusionPolicyIgnore
				a := nodePool("a", poolReq(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a"))
				b := nodePool("b", poolReq(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b", "zone-c"))
				return snapshot([]*scheduling.NodePool{a, b}, catalog(), pods(3, "web", "1", "", labeled("app", "web"),
					nodeSelector("karpenter.sh/nodepool", "a"),
					spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, app, func(c *corev1.TopologySpreadConstraint) { c.NodeAffinityPolicy = &ignore })))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if z := zonesOf(p); z["zone-a"] != 1 || len(p.Unschedulable) != 2 {
					t.Errorf("per zone %v, %d unschedulable; want one in zone-a and two unschedulable", z, len(p.Unschedulable))
				}
			},
		},
		{
			name: "nodeTaintsPolicy Honor leaves out the zones of a pool whose taint the pod does not tolerate",
			snap: func() *scheduling.Snapshot {
				honor := corev1.NodeInclusionPolicyHonor
				a := nodePool("a", poolReq(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a"))
				b := nodePool("b", poolReq(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b", "zone-c"), poolTaint("gpu", "", corev1.TaintEffectNoSchedule))
				return snapshot([]*scheduling.NodePool{a, b}, catalog(), pods(3, "web", "1", "", labeled("app", "web"),
					spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, app, func(c *corev1.TopologySpreadConstraint) { c.NodeTaintsPolicy = &honor })))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if z := zonesOf(p); z["zone-a"] != 3 || len(p.Unschedulable) != 0 {
					t.Errorf("per zone %v, %d unschedulable; want all three in zone-a", z, len(p.Unschedulable))
				}
			},
		},
		{
			name: "minDomains forces spreading even with one zone left",
			snap: func() *scheduling.Snapshot {
				three := int32(3)
				return snapshot(pool, catalog(), pods(3, "web", "1", "", labeled("app", "web"),
					spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, app, func(c *corev1.TopologySpreadConstraint) { c.MinDomains = &three })))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if z := zonesOf(p); len(z) != 3 {
					t.Errorf("per zone %v", z)
				}
			},
		},
		{
			name: "matchLabelKeys narrows the selector to the pod's own value",
			snap: func() *scheduling.Snapshot {
				mk := func(c *corev1.TopologySpreadConstraint) { c.MatchLabelKeys = []string{"rev"} }
				var ps []*corev1.Pod
				ps = append(ps, pods(2, "old", "100m", "", labeled("app", "web"), labeled("rev", "1"), spread(corev1.LabelHostname, 1, corev1.DoNotSchedule, app, mk))...)
				ps = append(ps, pods(2, "new", "100m", "", labeled("app", "web"), labeled("rev", "2"), spread(corev1.LabelHostname, 1, corev1.DoNotSchedule, app, mk))...)
				return snapshot(pool, catalog(), ps)
			},
			check: wantNodes(2),
		},
		{
			name: "ScheduleAnyway is a preference",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), pods(3, "web", "100m", "", labeled("app", "web"), spread(corev1.LabelHostname, 1, corev1.ScheduleAnyway, app)))
			},
			check: wantNodes(3),
		},
		{
			name: "spread on any label",
			snap: func() *scheduling.Snapshot {
				np := nodePool("default", poolReq("rack", corev1.NodeSelectorOpIn, "r1", "r2"))
				return snapshot([]*scheduling.NodePool{np}, catalog(), pods(4, "web", "1", "", labeled("app", "web"), spread("rack", 1, corev1.DoNotSchedule, app)))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				racks := map[string]int{}
				for _, n := range p.NewNodeClaims {
					racks[strings.Join(reqValues(n, "rack"), ",")] += len(n.Pods)
				}
				if racks["r1"] != 2 || racks["r2"] != 2 {
					t.Errorf("per rack %v", racks)
				}
			},
		},
		{
			name: "capacity-type spread",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), pods(2, "web", "1", "", labeled("app", "web"), spread("karpenter.sh/capacity-type", 1, corev1.DoNotSchedule, app)))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				cts := map[string]bool{}
				for _, n := range p.NewNodeClaims {
					cts[strings.Join(reqValues(n, "karpenter.sh/capacity-type"), ",")] = true
				}
				if !cts["spot"] || !cts["on-demand"] {
					t.Errorf("capacity types %v", cts)
				}
			},
		},
	})
}

func TestPodAffinity(t *testing.T) {
	pool := []*scheduling.NodePool{nodePool("default")}
	db := map[string]string{"app": "db"}
	runCases(t, []semanticCase{
		{
			name: "hostname anti-affinity gives each pod its own node",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), pods(4, "db", "100m", "", labeled("app", "db"), requiredAntiAffinity(corev1.LabelHostname, db)))
			},
			check: wantNodes(4),
		},
		{
			name: "zone anti-affinity places at most one per zone and explains the rest",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), pods(4, "db", "100m", "", labeled("app", "db"), requiredAntiAffinity(corev1.LabelTopologyZone, db)))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if len(p.NewNodeClaims) != 3 || len(p.Unschedulable) != 1 {
					t.Fatalf("%d nodes, %d unschedulable", len(p.NewNodeClaims), len(p.Unschedulable))
				}
				if r := reasonText(p.Unschedulable[0], "default"); !strings.Contains(r, "pod anti-affinity") {
					t.Errorf("reason %q", r)
				}
			},
		},
		{
			name: "zone self-affinity keeps the group in one zone",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), pods(5, "db", "3", "", labeled("app", "db"), requiredAffinity(corev1.LabelTopologyZone, db)))
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				zones := map[string]bool{}
				for _, n := range p.NewNodeClaims {
					zones[strings.Join(reqValues(n, corev1.LabelTopologyZone), ",")] = true
				}
				if len(zones) != 1 {
					t.Errorf("zones %v", zones)
				}
			},
		},
		{
			name: "hostname affinity joins the target pod, even one queued later",
			snap: func() *scheduling.Snapshot {
				web := pod("web", "100m", "", requiredAffinity(corev1.LabelHostname, db))
				return snapshot(pool, catalog(), []*corev1.Pod{web, pod("db", "2", "", labeled("app", "db"))})
			},
			check: all(wantNodes(1)),
		},
		{
			name: "affinity to an existing pod lands on its node",
			snap: func() *scheduling.Snapshot {
				s := snapshot(pool, catalog(), one(pod("web", "100m", "", requiredAffinity(corev1.LabelHostname, db))))
				s.Nodes = []*scheduling.ExistingNode{{Name: "n1", Initialized: true, Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: "zone-a"},
					Allocatable: list("cpu", "4", "pods", "10"), Pods: []*corev1.Pod{pod("db", "1", "", labeled("app", "db"))}}}
				return s
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if len(p.Existing) != 1 || len(p.NewNodeClaims) != 0 {
					t.Errorf("existing %d, new %d", len(p.Existing), len(p.NewNodeClaims))
				}
			},
		},
		{
			name: "existing pods' anti-affinity keeps matching pods away",
			snap: func() *scheduling.Snapshot {
				guard := pod("guard", "100m", "", requiredAntiAffinity(corev1.LabelHostname, db))
				s := snapshot(pool, catalog(), one(pod("db", "100m", "", labeled("app", "db"))))
				s.Nodes = []*scheduling.ExistingNode{{Name: "n1", Initialized: true, Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: "zone-a"},
					Allocatable: list("cpu", "4", "pods", "10"), Pods: []*corev1.Pod{guard}}}
				return s
			},
			check: wantNodes(1),
		},
		{
			name: "affinity with no matching pod anywhere is explained",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), one(pod("web", "100m", "", requiredAffinity(corev1.LabelTopologyZone, db))))
			},
			check: wantReason("web", "default", "pod affinity"),
		},
		{
			name: "pods binding the same host port get separate nodes",
			snap: func() *scheduling.Snapshot {
				withPort := func(p *corev1.Pod) {
					p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
				}
				s := snapshot(pool, catalog(), pods(2, "proxy", "100m", "", withPort))
				s.Nodes = []*scheduling.ExistingNode{{Name: "n1", Initialized: true, Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: "zone-a"},
					Allocatable: list("cpu", "4", "pods", "10"), Pods: []*corev1.Pod{pod("old-proxy", "100m", "", withPort)}}}
				return s
			},
			check: wantNodes(2),
		},
		{
			name: "preferred anti-affinity spreads when it can",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), pods(3, "db", "100m", "", labeled("app", "db"), preferredAntiAffinity(10, corev1.LabelHostname, db)))
			},
			check: wantNodes(3),
		},
	})
}

func TestExistingNodes(t *testing.T) {
	pool := []*scheduling.NodePool{nodePool("default")}
	node := func(name string, cpu string, opts ...func(*scheduling.ExistingNode)) *scheduling.ExistingNode {
		n := &scheduling.ExistingNode{Name: name, Initialized: true, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: "zone-a"}, Allocatable: list("cpu", cpu, "memory", "8Gi", "pods", "20")}
		for _, o := range opts {
			o(n)
		}
		return n
	}
	runCases(t, []semanticCase{
		{
			name: "free room on existing nodes is used first",
			snap: func() *scheduling.Snapshot {
				s := snapshot(pool, catalog(), pods(3, "p", "1", ""))
				s.Nodes = []*scheduling.ExistingNode{node("n1", "2")}
				return s
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if len(p.Existing) != 1 || len(p.Existing[0].Pods) != 2 || len(p.NewNodeClaims) != 1 {
					t.Errorf("existing %v, new %d", p.Existing, len(p.NewNodeClaims))
				}
			},
		},
		{
			name: "tainted existing nodes are skipped; uninitialised ones ignore startup taints",
			snap: func() *scheduling.Snapshot {
				s := snapshot(pool, catalog(), pods(2, "p", "1", ""))
				startup := corev1.Taint{Key: "agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
				s.Nodes = []*scheduling.ExistingNode{
					node("tainted", "4", func(n *scheduling.ExistingNode) {
						n.Taints = []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
					}),
					node("booting", "1", func(n *scheduling.ExistingNode) {
						n.Initialized = false
						n.Taints = []corev1.Taint{startup, {Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}}
						n.StartupTaints = []corev1.Taint{startup}
					}),
				}
				return s
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if len(p.Existing) != 1 || p.Existing[0].Node != "booting" || len(p.NewNodeClaims) != 1 {
					t.Errorf("existing %+v, new %d", p.Existing, len(p.NewNodeClaims))
				}
			},
		},
		{
			name: "nodes marked for deletion take no pods",
			snap: func() *scheduling.Snapshot {
				s := snapshot(pool, catalog(), one(pod("p", "1", "")))
				s.Nodes = []*scheduling.ExistingNode{node("leaving", "4", func(n *scheduling.ExistingNode) { n.MarkedForDeletion = true })}
				return s
			},
			check: wantNodes(1),
		},
		{
			name: "existing nodes get a grouped reason",
			snap: func() *scheduling.Snapshot {
				s := snapshot(nil, nil, one(pod("p", "8", "")))
				s.Nodes = []*scheduling.ExistingNode{node("n1", "2"), node("n2", "2")}
				return s
			},
			check: wantReason("p", existingNodes, "2 nodes had insufficient resources"),
		},
	})
}

func TestVolumes(t *testing.T) {
	pool := []*scheduling.NodePool{nodePool("default")}
	sc := func(name string, wffc bool, zones ...string) *scheduling.StorageClass {
		s := &scheduling.StorageClass{Name: name, Provisioner: "ebs.csi.aws.com", WaitForFirstConsumer: wffc}
		if len(zones) > 0 {
			s.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: zones}}}}
		}
		return s
	}
	claim := func(name, class, volume string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: volume}}
	}
	zonalPV := func(name, zone string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: name}},
			NodeAffinity:           &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{expr(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone)}}}}},
		}}
	}
	zoneOf := func(t *testing.T, p *scheduling.Plan) string {
		if len(p.NewNodeClaims) != 1 {
			t.Fatalf("%d nodes", len(p.NewNodeClaims))
		}
		return strings.Join(reqValues(p.NewNodeClaims[0], corev1.LabelTopologyZone), ",")
	}
	runCases(t, []semanticCase{
		{
			name: "a bound zonal volume pins the node's zone",
			snap: func() *scheduling.Snapshot {
				s := snapshot(pool, catalog(), one(pod("p", "1", "", pvc("data"))))
				s.Volumes = scheduling.VolumeState{PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{claim("data", "gp3", "pv-1")}, PersistentVolumes: []*corev1.PersistentVolume{zonalPV("pv-1", "zone-c")}, StorageClasses: []*scheduling.StorageClass{sc("gp3", true)}}
				return s
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if z := zoneOf(t, p); z != "zone-c" {
					t.Errorf("zone %s", z)
				}
			},
		},
		{
			name: "an unbound WaitForFirstConsumer claim follows allowedTopologies",
			snap: func() *scheduling.Snapshot {
				s := snapshot(pool, catalog(), one(pod("p", "1", "", pvc("data"))))
				s.Volumes = scheduling.VolumeState{PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{claim("data", "gp3", "")}, StorageClasses: []*scheduling.StorageClass{sc("gp3", true, "zone-b")}}
				return s
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if z := zoneOf(t, p); z != "zone-b" {
					t.Errorf("zone %s", z)
				}
			},
		},
		{
			name: "a volume's OR'ed zone terms are alternatives",
			snap: func() *scheduling.Snapshot {
				s := snapshot(pool, catalog(), one(pod("p", "1", "", pvc("data"), nodeSelector(corev1.LabelTopologyZone, "zone-b"))))
				pv := zonalPV("pv-1", "zone-a")
				pv.Spec.NodeAffinity.Required.NodeSelectorTerms = append(pv.Spec.NodeAffinity.Required.NodeSelectorTerms,
					corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expr(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b")}})
				s.Volumes = scheduling.VolumeState{PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{claim("data", "gp3", "pv-1")}, PersistentVolumes: []*corev1.PersistentVolume{pv}, StorageClasses: []*scheduling.StorageClass{sc("gp3", true)}}
				return s
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if z := zoneOf(t, p); z != "zone-b" {
					t.Errorf("zone %s", z)
				}
			},
		},
		{
			name: "in-tree volume plugins are refused clearly",
			snap: func() *scheduling.Snapshot {
				p := pod("p", "1", "")
				p.Spec.Volumes = []corev1.Volume{{Name: "old", VolumeSource: corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}}}
				return snapshot(pool, catalog(), one(p))
			},
			check: wantReason("p", "default", "in-tree awsElasticBlockStore plugin"),
		},
		{
			name: "a missing claim is explained",
			snap: func() *scheduling.Snapshot {
				return snapshot(pool, catalog(), one(pod("p", "1", "", pvc("nope"))))
			},
			check: wantReason("p", "default", `persistentvolumeclaim "nope" not found`),
		},
		{
			name: "CSI attach limits on existing nodes",
			snap: func() *scheduling.Snapshot {
				s := snapshot(pool, catalog(), []*corev1.Pod{pod("a", "100m", "", pvc("v1")), pod("b", "100m", "", pvc("v2"))})
				s.Volumes = scheduling.VolumeState{PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{claim("v1", "gp3", ""), claim("v2", "gp3", "")}, StorageClasses: []*scheduling.StorageClass{sc("gp3", true)}}
				s.Nodes = []*scheduling.ExistingNode{{Name: "n1", Initialized: true, Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: "zone-a"},
					Allocatable: list("cpu", "4", "pods", "10"), VolumeLimits: map[string]int{"ebs.csi.aws.com": 1}}}
				return s
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if len(p.Existing) != 1 || len(p.Existing[0].Pods) != 1 || len(p.NewNodeClaims) != 1 {
					t.Errorf("existing %+v, new %d", p.Existing, len(p.NewNodeClaims))
				}
			},
		},
	})
}
