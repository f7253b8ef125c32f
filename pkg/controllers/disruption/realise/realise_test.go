package realise_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/nodepool"
	"github.com/joiner-dev/joiner/pkg/schedulerconfig"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestKubeSchedulerRealisesTheReplay: on one cluster, node e is nearly
// full (7 of 8 cpu), a runs three small pods of one ReplicaSet and b one
// large pod. Removing a and b for one new c4 saves the most: the solver
// puts the large pod and a small one on the c4 and the other small ones
// in e's last cpu. Whether kube-scheduler realises that depends on its
// profile's NodeResourcesFit score, which the engine reads from the
// configuration kube-scheduler runs with:
//
//   - LeastAllocated (kube-scheduler's default) sends the small pods,
//     recreated first, to the emptiest node, the c4, and the large pod then
//     fits nowhere: the engine must not issue that command (before the
//     replay, it did, every time), and what it issues instead must land as
//     replayed;
//   - MostAllocated sends them to e, the fullest node with room, first,
//     and the large pod finds its room on the c4: the engine must issue
//     the command (a replay that assumed LeastAllocated refuses it), and
//     kube-scheduler must bind each pod where the replay put it.
func TestKubeSchedulerRealisesTheReplay(t *testing.T) {
	scoring, err := schedulerconfig.ParseScoring([]byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + schedulerProfiles))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, scheduler string
		// candidates is how many nodes the command must remove.
		candidates int
	}{
		{name: "least allocated", scheduler: schedulerconfig.DefaultScheduler, candidates: 1},
		{name: "most allocated", scheduler: mostAllocated, candidates: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schedule := func(p *corev1.Pod) { p.Spec.SchedulerName = tc.scheduler }
			small := func(name string) *corev1.Pod { return pod(name, "500m", ownedBy("small"), schedule) }
			in := input(t,
				node{name: "e", it: "c8", pods: []*corev1.Pod{pod("big-resident", "7", schedule)}},
				node{name: "a", it: "c4", pods: []*corev1.Pod{small("s1"), small("s2"), small("s3")}},
				node{name: "b", it: "c8", pods: []*corev1.Pod{pod("large", "3", ownedBy("large"), schedule)}},
			)
			in.Options.Scoring = scoring
			d, err := disruption.Decide(in)
			if err != nil {
				t.Fatal(err)
			}
			cmd := d.Command
			if cmd == nil {
				t.Fatal("no command: b alone fits a c4")
			}
			t.Logf("command: %s %v → %d replacements", cmd.Method, cmd.Candidates, len(cmd.Replacements))
			placed, why := disruption.Realise(in, cmd)
			if !why.IsZero() {
				t.Errorf("the engine issued a command its own replay strands a pod of: %v", why)
			}
			got := realiseAlong(t, in, cmd, false)
			for i, p := range placed {
				want := destination(p)
				t.Logf("%d. %s: replayed on %q, kube-scheduler bound it to %q", i+1, p.Pod.Name, want, got[p.Pod.Name])
				if got[p.Pod.Name] == "" {
					t.Errorf("%s found no node: the command evicts a pod kube-scheduler cannot place", p.Pod.Name)
				} else if got[p.Pod.Name] != want {
					t.Errorf("%s: kube-scheduler bound it to %q, the replay put it on %q", p.Pod.Name, got[p.Pod.Name], want)
				}
			}
			if len(cmd.Candidates) != tc.candidates {
				t.Errorf("the command removes %v; want %d nodes", cmd.Candidates, tc.candidates)
			}
		})
	}
}

// realiseAlong carries cmd out on the control plane as the cluster would
// (carryOut), the evicted pods created one at a time in the replay's
// order, each left to kube-scheduler, and follows the replay along
// kube-scheduler's bindings (disruption.RealiseAlong): each binding must
// be one of the nodes the replay's scores tie at the top, and a pod
// kube-scheduler cannot place one the replay finds no room for. It returns
// where each evicted pod was bound, by name: an existing node's name,
// replacementName(i), or "" when kube-scheduler found it no node.
func realiseAlong(t *testing.T, in *disruption.Input, cmd *disruption.Command, reverse bool) map[string]string {
	t.Helper()
	bind := carryOut(t, in, cmd, reverse)
	got := map[string]string{}
	disruption.RealiseAlong(in, cmd, func(p *corev1.Pod, tied []disruption.Placement) disruption.Placement {
		node := bind(p)
		got[p.Name] = node
		var names []string
		for _, pl := range tied {
			if destination(pl) == node {
				return pl
			}
			names = append(names, destination(pl))
		}
		switch {
		case node == "" && len(tied) > 0:
			t.Errorf("%s: kube-scheduler found it no node, the replay has room on %v", p.Name, names)
		case node != "":
			t.Errorf("%s: kube-scheduler bound it to %q, the replay's top-scored nodes are %v", p.Name, node, names)
		}
		return disruption.Placement{Pod: p, Replacement: -1}
	})
	return got
}

// destination names where a placement lands as carryOut names nodes.
func destination(p disruption.Placement) string {
	if p.Replacement >= 0 {
		return replacementName(p.Replacement)
	}
	return p.Node
}

// carryOut sets cmd up on the control plane as the cluster would carry it
// out: the nodes that stay and the replacements as Nodes (tainted and
// labelled for this test alone), the pods that stay bound to them, and on
// each replacement the DaemonSets' pods that run there. It returns bind,
// which creates one evicted pod, leaves it to kube-scheduler, and returns
// the node it was bound to (an existing node's name or
// replacementName(i)), or "" when kube-scheduler found it no node.
// reverse creates the Nodes in the opposite order (the replacements
// first): kube-scheduler breaks a tie by the order its filters list the
// nodes.
func carryOut(t *testing.T, in *disruption.Input, cmd *disruption.Command, reverse bool) (bind func(*corev1.Pod) string) {
	t.Helper()
	env := test.Env(t)
	r := newRun(t)
	ns, id, prefix, label, taint := r.ns, r.id, r.prefix, r.label, r.taint
	gone := map[string]bool{}
	for _, c := range cmd.Candidates {
		gone[c] = true
	}
	newNode := func(name string, alloc corev1.ResourceList, mark bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: prefix + name, Labels: map[string]string{corev1.LabelHostname: prefix + name, sentinelDomain: id}}}
		if mark {
			n.Labels[label] = id
			n.Spec.Taints = []corev1.Taint{taint}
		}
		n.Status.Capacity, n.Status.Allocatable = alloc, alloc
		return n
	}
	var nodes []*corev1.Node
	var stay []*corev1.Pod
	for _, n := range in.Cluster.Nodes {
		if gone[n.Name] {
			continue
		}
		nodes = append(nodes, newNode(n.Name, n.Allocatable, true))
		for _, p := range n.Pods {
			stay = append(stay, apiPod(ns, p, prefix+n.Name))
		}
	}
	moved := map[*corev1.Pod]bool{}
	for _, m := range cmd.Moves {
		moved[m.Pod] = true
	}
	for i, nc := range cmd.Replacements {
		it, o, ok := disruption.Launch(nc)
		if !ok {
			t.Fatalf("replacement %d has no launch option", i)
		}
		nodes = append(nodes, newNode(replacementName(i), it.Allocatable(), true))
		for _, p := range nc.Pods {
			if !moved[p] {
				stay = append(stay, apiPod(ns, p, prefix+replacementName(i)))
			}
		}
		// The type's single-valued requirements label the node, and the
		// offering it launched on names its zone and capacity type (a type
		// whose requirements list one capacity type may still be launched
		// on an offering of another, as spot is in the daemons test).
		labels := map[string]string{}
		for k, vs := range it.Requirements {
			if len(vs) == 1 {
				labels[k] = vs[0]
			}
		}
		labels[corev1.LabelTopologyZone], labels[v1.LabelCapacityType] = o.Zone, o.CapacityType
		for _, d := range scheduling.DaemonPodsFor(in.Cluster.DaemonSets, labels, nil) {
			dp := apiPod(ns, d, prefix+replacementName(i))
			dp.Name = d.Name + "-" + strconv.Itoa(i)
			stay = append(stay, dp)
		}
	}
	// A sentinel node and pod, created last: once kube-scheduler binds
	// the pod, its cache holds every node and pod above, so its first
	// decision below sees them. Each watch delivers in order, but
	// kube-scheduler's handlers of one informer run side by side (the
	// scheduling queue's apart from the cache's), so a pod can reach the
	// queue before the pods and Nodes created before it reach the cache:
	// the sentinel pod needs the last pod created to be in the cache (a
	// required pod affinity to it, in a domain all of this run's nodes
	// share) and its own Node, and is retried until both are there.
	sentinelNode := newNode("sentinel", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}, false)
	sentinelNode.Spec.Taints = []corev1.Taint{{Key: "joiner.test/sentinel", Value: id, Effect: corev1.TaintEffectNoSchedule}}
	if reverse {
		slices.Reverse(nodes)
	}
	nodes = append(nodes, sentinelNode)
	for _, n := range nodes {
		createNode(t, n)
	}
	if len(stay) > 0 {
		last := stay[len(stay)-1]
		last.Labels = map[string]string{sentinelDomain: id}
	}
	for _, p := range stay {
		env.Create(t, p)
	}
	sentinel := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sentinel", Namespace: ns},
		Spec: corev1.PodSpec{
			Containers:   []corev1.Container{{Name: "c", Image: "sentinel"}},
			NodeSelector: map[string]string{corev1.LabelHostname: sentinelNode.Name},
			Tolerations:  []corev1.Toleration{{Key: "joiner.test/sentinel", Operator: corev1.TolerationOpExists}, notReady},
		},
	}
	if len(stay) > 0 {
		sentinel.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{sentinelDomain: id}},
			TopologyKey:   sentinelDomain,
		}}}}
	}
	env.Create(t, sentinel)
	test.Eventually(t, time.Minute, func(ctx context.Context) error {
		var cur corev1.Pod
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(sentinel), &cur); err != nil {
			return err
		}
		switch cur.Spec.NodeName {
		case sentinelNode.Name:
			return nil
		case "":
			return fmt.Errorf("the sentinel pod is not bound yet")
		}
		t.Fatalf("the sentinel pod was bound to %q, want %s", cur.Spec.NodeName, sentinelNode.Name)
		return nil
	})
	return func(pod *corev1.Pod) string {
		p := apiPod(ns, pod, "")
		p.Spec.NodeSelector = map[string]string{label: id}
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: id, Effect: taint.Effect})
		env.Create(t, p)
		return strings.TrimPrefix(bound(t, p), prefix)
	}
}

// sentinelDomain labels every node of a run, and the last pod carryOut
// creates, with the run's id: the sentinel pod's affinity domain.
const sentinelDomain = "joiner.test/realise-run"

// runs numbers the tests' runs (the test binary has its own control
// plane).
var runs int

// testRun is one run's corner of the shared control plane: a namespace,
// and the label and taint that keep its pods on its own nodes. Node names
// and label values are short: a test's name would pass the 63 characters
// a label value may have.
type testRun struct {
	ns, id, prefix, label string
	taint                 corev1.Taint
}

func newRun(t *testing.T) testRun {
	runs++
	id := "run-" + strconv.Itoa(runs)
	const label = "joiner.test/realise"
	return testRun{ns: test.Env(t).Namespace(t), id: id, prefix: id + "-", label: label, taint: corev1.Taint{Key: label, Value: id, Effect: corev1.TaintEffectNoSchedule}}
}

// createNode creates n with its status (allocatable) as given.
func createNode(t *testing.T, n *corev1.Node) {
	t.Helper()
	status := n.Status
	test.Env(t).Create(t, n)
	n.Status = status
	if err := test.Env(t).Client.Status().Update(t.Context(), n); err != nil {
		t.Fatalf("setting node %s's allocatable: %v", n.Name, err)
	}
}

// bound waits for kube-scheduler to bind p and returns the node, or ""
// when kube-scheduler reports it unschedulable.
func bound(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	node := ""
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var cur corev1.Pod
		if err := test.Env(t).Client.Get(ctx, client.ObjectKeyFromObject(p), &cur); err != nil {
			return err
		}
		if cur.Spec.NodeName != "" {
			node = cur.Spec.NodeName
			return nil
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				t.Logf("%s: %s", p.Name, c.Message)
				return nil
			}
		}
		return fmt.Errorf("pod %s not yet scheduled", p.Name)
	})
	return node
}

func replacementName(i int) string { return "replacement-" + strconv.Itoa(i) }

// apiPod is the API object of a fixture pod: its name, scheduler and
// requests, bound to node unless node is "".
func apiPod(ns string, p *corev1.Pod, node string) *corev1.Pod {
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns},
		Spec: corev1.PodSpec{
			SchedulerName: p.Spec.SchedulerName,
			NodeName:      node,
			Containers:    []corev1.Container{{Name: "c", Image: "pause", Resources: p.Spec.Containers[0].Resources}},
			Tolerations:   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}
	if node == "" {
		out.Spec.Tolerations = []corev1.Toleration{notReady}
	}
	return out
}

// notReady tolerates the taint kube-apiserver's TaintNodesByCondition puts
// on every new Node, which no kubelet lifts here.
var notReady = corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

// The fixtures: one zone, instance types c<n> with n cpu and 4 GiB per
// cpu at $n/h, and a NodePool that consolidates at once.

var now = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

func instanceType(cpu int) *scheduling.InstanceType {
	name := "c" + strconv.Itoa(cpu)
	return &scheduling.InstanceType{
		Name: name,
		Requirements: map[string][]string{
			corev1.LabelInstanceTypeStable: {name}, corev1.LabelArchStable: {"amd64"}, corev1.LabelOSStable: {"linux"},
			corev1.LabelTopologyZone: {"z1"}, v1.LabelCapacityType: {"on-demand"},
		},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU: *resource.NewQuantity(int64(cpu), resource.DecimalSI), corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", 4*cpu)),
			corev1.ResourcePods: resource.MustParse("110"),
		},
		Offerings: []scheduling.Offering{{Zone: "z1", CapacityType: "on-demand", Price: float64(cpu), Available: true}},
	}
}

func pod(name, cpu string, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("256Mi"),
		}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func ownedBy(uid string) func(*corev1.Pod) {
	yes := true
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: uid, UID: types.UID(uid), Controller: &yes}}
	}
}

type node struct {
	name, it string
	pods     []*corev1.Pod
}

// input is the engine's Input for nodes of one NodePool.
func input(t *testing.T, nodes ...node) *disruption.Input {
	t.Helper()
	its := []*scheduling.InstanceType{instanceType(1), instanceType(2), instanceType(4), instanceType(8)}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Disruption = v1.Disruption{
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		ConsolidateAfter:    v1.MustParseNillableDuration("0s"),
		Budgets:             []v1.Budget{{Nodes: "100%"}},
	}
	snap := &scheduling.Snapshot{Now: now, NodePools: []*scheduling.NodePool{nodepool.FromNodePool(np)}, InstanceTypes: map[string][]*scheduling.InstanceType{np.Name: its}}
	in := &disruption.Input{Now: now, Cluster: snap, NodePools: map[string]*v1.NodePool{np.Name: np}}
	for _, n := range nodes {
		var it *scheduling.InstanceType
		for _, x := range its {
			if x.Name == n.it {
				it = x
			}
		}
		labels := map[string]string{
			corev1.LabelInstanceTypeStable: n.it, corev1.LabelTopologyZone: "z1", v1.LabelCapacityType: "on-demand", corev1.LabelHostname: n.name,
			v1.LabelNodePool: np.Name, v1.LabelNodeInitialized: "true", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
		}
		for _, p := range n.pods {
			p.Spec.NodeName = n.name
		}
		meta := metav1.ObjectMeta{Name: n.name, Labels: labels, CreationTimestamp: metav1.NewTime(now.Add(-24 * time.Hour))}
		nc := &v1.NodeClaim{ObjectMeta: meta}
		for _, c := range []string{v1.ConditionTypeInitialized, v1.ConditionTypeConsolidatable} {
			nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c, LastTransitionTime: meta.CreationTimestamp})
		}
		in.Nodes = append(in.Nodes, disruption.Node{
			Name: n.name, Node: &corev1.Node{ObjectMeta: meta}, NodeClaim: nc, NodePool: np.Name, Pods: n.pods,
			InstanceType: n.it, Zone: "z1", CapacityType: "on-demand", Price: it.Offerings[0].Price, Initialized: true,
		})
		snap.Nodes = append(snap.Nodes, &scheduling.ExistingNode{Name: n.name, NodeClaim: n.name, NodePool: np.Name, Labels: labels, Initialized: true, Allocatable: it.Allocatable(), Pods: n.pods})
	}
	return in
}
