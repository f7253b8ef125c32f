package disruption_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/schedulerconfig"
)

func ownedBy(uid string) func(*corev1.Pod) {
	yes := true
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: uid, UID: types.UID(uid), Controller: &yes}}
	}
}

// TestCommandsKubeSchedulerRealises: a command pins no pod. Removing a
// and b at once, the solver fills one new c4 with b's large pod and one
// small pod of a and sends a's other small pods into the last cpu of
// node e; kube-scheduler sends
// each evicted pod to the least allocated node, so the small ones (their
// ReplicaSet recreates them first) fill the empty c4 and the large pod
// then fits nowhere: it goes pending, the provisioner launches a node for
// it, and the next pass re-packs again (upstream's "Wide Deployments"
// churn). Consolidation must offer only what kube-scheduler realises.
func TestCommandsKubeSchedulerRealises(t *testing.T) {
	small := func(name string) *corev1.Pod { return pod(name, "500m", ownedBy("small")) }
	in := input(t, pool(),
		node{name: "e", it: "c8", pods: []*corev1.Pod{pod("big-resident", "7")}},
		node{name: "a", it: "c4", pods: []*corev1.Pod{small("s1"), small("s2"), small("s3")}},
		node{name: "b", it: "c8", pods: []*corev1.Pod{pod("large", "3", ownedBy("large"))}},
	)
	d, err := disruption.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := d.Command
	if cmd == nil {
		t.Fatal("no command: b alone fits a c4, and a's pods fit the others' room")
	}
	if len(cmd.Candidates) > 1 {
		t.Fatalf("command %s %v → %v counts on the large pod finding room on a new c4 that kube-scheduler fills with the small pods first", cmd.Method, cmd.Candidates, replacementTypes(cmd))
	}
	t.Logf("command: %s %v → %v, saving $%.2f/h", cmd.Method, cmd.Candidates, replacementTypes(cmd), cmd.SavingsPerHour)
}

// TestReplayScoresAsTheProfile: the same cluster as
// TestCommandsKubeSchedulerRealises, but the pods' kube-scheduler profile
// scores NodeResourcesFit MostAllocated (SCHEDULER_CONFIG). That profile
// sends the small pods to the fullest node with room, e, before the new
// c4, so the large pod still finds its room there: the command that
// removes a and b is realised, and consolidation must not refuse it as if
// kube-scheduler spread them.
func TestReplayScoresAsTheProfile(t *testing.T) {
	small := func(name string) *corev1.Pod { return pod(name, "500m", ownedBy("small")) }
	in := input(t, pool(),
		node{name: "e", it: "c8", pods: []*corev1.Pod{pod("big-resident", "7")}},
		node{name: "a", it: "c4", pods: []*corev1.Pod{small("s1"), small("s2"), small("s3")}},
		node{name: "b", it: "c8", pods: []*corev1.Pod{pod("large", "3", ownedBy("large"))}},
	)
	scoring, err := schedulerconfig.ParseScoring([]byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
`))
	if err != nil {
		t.Fatal(err)
	}
	in.Options.Scoring = scoring
	d, err := disruption.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := d.Command
	if cmd == nil || len(cmd.Candidates) != 2 {
		got := "none"
		if cmd != nil {
			got = fmt.Sprintf("%s %v → %v", cmd.Method, cmd.Candidates, replacementTypes(cmd))
		}
		t.Fatalf("command %s, want a and b replaced by one c4: under MostAllocated the small pods fill e first and the large one finds the c4", got)
	}
	placed, why := disruption.Realise(in, cmd)
	if !why.IsZero() {
		t.Fatalf("the replay strands a pod: %v", why)
	}
	for _, p := range placed {
		t.Logf("%s → node %q replacement %d", p.Pod.Name, p.Node, p.Replacement)
	}
}
