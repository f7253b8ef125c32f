package disruption_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
)

// TestComposedCommands converges a real cluster, every consolidation
// command composing further steps (Decide composes only when that is
// cheap, which on this cluster is never), and holds each command of
// several steps to what Validate promises:
// the same input validates it (each step re-simulated in order on the
// cluster the steps before it leave), a pod of a later step's candidate
// that asks not to be disrupted invalidates it, and each evicted pod moves
// once, to a node that stays or to one of the command's replacements.
func TestComposedCommands(t *testing.T) {
	c := loadCluster(t, "diverse-1000")
	composed := 0
	for round := 0; round < 30; round++ {
		in := c.Input(benchNow, disruption.Options{})
		d, err := disruption.DecideComposingAll(in)
		if err != nil {
			t.Fatal(err)
		}
		if d.Command == nil {
			break
		}
		cmd := d.Command
		checkCommand(t, in, d)
		if disruption.Steps(cmd) > 1 {
			composed++
			if err := disruption.Validate(cmd, c.Input(benchNow, disruption.Options{})); err != nil {
				t.Errorf("round %d: a composed command of %d steps fails validation on the input it came from: %v", round, disruption.Steps(cmd), err)
			}
			fresh := c.Input(benchNow, disruption.Options{})
			last := cmd.Candidates[len(cmd.Candidates)-1]
			blocked := false
			for i := range fresh.Nodes {
				if n := &fresh.Nodes[i]; n.Name == last && len(n.Pods) > 0 {
					p := n.Pods[0].DeepCopy()
					p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
					n.Pods = append([]*corev1.Pod{p}, n.Pods[1:]...) // the cluster shares the slice
					blocked = true
				}
			}
			if !blocked {
				t.Fatalf("round %d: candidate %q has no pod", round, last)
			}
			if err := disruption.Validate(cmd, fresh); err == nil {
				t.Errorf("round %d: a composed command still validates with do-not-disrupt on its last candidate %q", round, last)
			}
			stays := map[string]bool{}
			for _, n := range c.Nodes {
				stays[n.Name] = true
			}
			for _, name := range cmd.Candidates {
				delete(stays, name)
			}
			seen := map[string]bool{}
			for _, m := range cmd.Moves {
				key := m.Pod.Namespace + "/" + m.Pod.Name
				if seen[key] {
					t.Errorf("round %d: pod %s moves twice in one command", round, key)
				}
				seen[key] = true
				if m.To != "" && !stays[m.To] {
					t.Errorf("round %d: pod %s moves to %q, which does not stay", round, key, m.To)
				}
			}
		}
		if err := c.Apply(cmd); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if composed == 0 {
		t.Fatal("no command composed several steps: the test exercises nothing")
	}
	t.Logf("%d composed commands", composed)
}
