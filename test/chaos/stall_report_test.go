package chaos

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// TestDescribeStall pins what a stall report says: the lease's holder and
// age, the NodePool's conditions that are not a True readiness, the pods
// unbound, and for exactly the drifted nodes the drift wait waits on (web
// pods, no do-not-disrupt pod) their NodeClaim's conditions, deletion and
// verdict.
func TestDescribeStall(t *testing.T) {
	now := time.Date(2026, 11, 29, 19, 25, 0, 0, time.UTC)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	micro := func(d time.Duration) *metav1.MicroTime { m := metav1.NewMicroTime(now.Add(-d)); return &m }
	pod := func(app, name, node string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}}, Spec: corev1.PodSpec{NodeName: node}}
	}
	node := func(name string) corev1.Node { return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	claim := func(name, node, verdict string, deleting bool) v1.NodeClaim {
		nc := v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		nc.Status.NodeName = node
		nc.Status.Conditions = []metav1.Condition{{Type: "Drifted", Status: "True"}, {Type: "Initialized", Status: "True"}}
		if verdict != "" {
			nc.Annotations = map[string]string{v1.AnnotationDisruptionVerdict: verdict}
		}
		if deleting {
			d := ago(90 * time.Second)
			nc.DeletionTimestamp = &d
		}
		return nc
	}
	pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "np"}}
	pool.Status.Conditions = []metav1.Condition{
		{Type: "Ready", Status: "True"},
		{Type: "NodeClassReady", Status: "True"},
		{Type: "DriftHalted", Status: "True", Reason: "ReplacementFailed", LastTransitionTime: ago(4 * time.Minute)},
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "chaos-ns"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("vm_2"), RenewTime: micro(3 * time.Second)}}

	for _, tc := range []struct {
		name    string
		lease   *coordinationv1.Lease
		pool    *v1.NodePool
		nodes   []corev1.Node
		claims  []v1.NodeClaim
		pods    []corev1.Pod
		drifted map[string]bool
		want    []string
		notWant []string
	}{{
		name:  "a drift left waiting",
		lease: lease, pool: pool,
		nodes: []corev1.Node{node("a"), node("b"), node("c"), node("d")},
		claims: []v1.NodeClaim{
			claim("nc-a", "a", `{"state":"Blocked","drifted":true,"drift":"no budget","since":"2026-11-29T19:20:39Z"}`, false),
			claim("nc-b", "b", "", false),
			claim("nc-d", "d", "", true),
		},
		pods: []corev1.Pod{
			pod("web", "w1", "a"), pod("web", "w2", "b"), pod("dnd", "x", "b"),
			pod("web", "w3", "c"), pod("web", "w4", "d"), pod("web", "w5", ""),
		},
		drifted: map[string]bool{"a": true, "b": true, "d": true},
		want: []string{
			"lease chaos-ns held by vm_2, renewed 3s ago",
			"nodepool np conditions: DriftHalted=True (ReplacementFailed, 4m0s ago)",
			"6 pods in the round's namespace: 1 unbound, 0 terminating; 4 nodes in the pool",
			`drifted node a runs web/w1; nodeclaim nc-a [Drifted=True Initialized=True]; verdict {"state":"Blocked","drifted":true,"drift":"no budget","since":"2026-11-29T19:20:39Z"}`,
			"drifted node d runs web/w4; nodeclaim nc-d [Drifted=True Initialized=True], deleting for 1m30s; no verdict written",
		},
		// b holds the do-not-disrupt pod, c did not drift; the pool's
		// ready conditions are not news.
		notWant: []string{"drifted node b", "drifted node c", "NodeClassReady", "Ready=True"},
	}, {
		name:    "nothing left, lease and pool unread",
		nodes:   []corev1.Node{node("a")},
		pods:    []corev1.Pod{pod("web", "w1", "a")},
		drifted: map[string]bool{},
		want:    []string{"no drifted node runs a web pod"},
		notWant: []string{"lease", "nodepool"},
	}, {
		name:    "a node no NodeClaim names",
		nodes:   []corev1.Node{node("a")},
		pods:    []corev1.Pod{pod("web", "w1", "a")},
		drifted: map[string]bool{"a": true},
		want:    []string{"drifted node a runs web/w1; no NodeClaim names it"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := describeStall(now, tc.lease, tc.pool, tc.nodes, tc.claims, tc.pods, tc.drifted)
			text := strings.Join(got, "\n")
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("report lacks %q:\n%s", w, text)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(text, w) {
					t.Errorf("report holds %q:\n%s", w, text)
				}
			}
		})
	}
}

// TestWhileWaitingStops: the reports come every period and none follows
// stop.
func TestWhileWaitingStops(t *testing.T) {
	calls := make(chan struct{}, 100)
	stop := whileWaiting(10*time.Millisecond, func() { calls <- struct{}{} })
	for range 3 {
		select {
		case <-calls:
		case <-time.After(5 * time.Second):
			t.Fatal("no report within 5s")
		}
	}
	stop()
	n := len(calls)
	time.Sleep(50 * time.Millisecond)
	if len(calls) != n {
		t.Fatalf("%d reports after stop", len(calls)-n)
	}
}

// TestDescribePDBs: the report sets a PDB's status beside the pods it
// selects that are Running and Ready (aws 3130: 0 healthy by the status,
// ten Ready pods).
func TestDescribePDBs(t *testing.T) {
	ready := func(name, app string, ok bool) corev1.Pod {
		st := corev1.ConditionFalse
		if ok {
			st = corev1.ConditionTrue
		}
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}}
	}
	pdb := policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DesiredHealthy: 9, ExpectedPods: 10, ObservedGeneration: 1}}
	got := describePDBs([]policyv1.PodDisruptionBudget{pdb}, []corev1.Pod{ready("w1", "web", true), ready("w2", "web", true), ready("w3", "web", false), ready("d", "dnd", true)})
	want := "pdb web: disruptionsAllowed 0, currentHealthy 0, desiredHealthy 9, expectedPods 10 (status of generation 1, spec 1); 2 of its pods Running and Ready"
	if len(got) != 1 || got[0] != want {
		t.Errorf("describePDBs = %q, want [%q]", got, want)
	}
}
