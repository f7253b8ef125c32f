package disruption

import (
	"testing"
	"time"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scenario"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Issue 34, conformance run P16: under the suite's 100 % budget one
// multi-node command replaced the whole cluster (768 nodes by 700), and
// each of its rollbacks left 700 empty nodes. A command launches at most
// MaxReplacements replacements. The half-emptied diverse-5000 cluster
// (1,000 nodes) under a 100 % budget is the same shape: the engine alone
// replaces all 1,000 nodes by about 500 in one command.
func TestReplacementsPerCommandAreCapped(t *testing.T) {
	c, err := scenario.LoadHalfCluster("diverse-5000")
	if err != nil {
		t.Fatal(err)
	}
	c.NodePool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "100%"}}
	in := c.Input(time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC), disruption.Options{})

	uncapped, err := disruption.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	if cmd := uncapped.Command; cmd == nil || len(cmd.Replacements) <= MaxReplacements {
		t.Fatalf("the engine alone should launch more than %d replacements here; got %+v", MaxReplacements, cmd)
	}

	ctrl := &Controller{decide: disruption.Decide}
	dec, err := ctrl.decideWithin(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := dec.Command
	if cmd == nil {
		t.Fatal("no command under the cap; the cluster still has a consolidation")
	}
	if len(cmd.Replacements) > MaxReplacements || len(cmd.Candidates) > MaxReplacements {
		t.Errorf("%s command replaces %d candidates by %d; want at most %d of either", cmd.Method, len(cmd.Candidates), len(cmd.Replacements), MaxReplacements)
	}
	if cmd.SavingsPerHour <= 0 {
		t.Errorf("capped command saves %.2f $/h", cmd.SavingsPerHour)
	}
	if in.Options.MultiNodeMax != 0 {
		t.Errorf("the caller's input was changed: MultiNodeMax %d", in.Options.MultiNodeMax)
	}
}

// A command that only deletes, or replaces many nodes by a few, waits on
// little: its size is the budgets' call, and it is not decided again. Nor
// is a command of another method: the cap bounds multi-node
// consolidation's candidates, and a drift command that launches more than
// MaxReplacements is taken as decided, not turned into an error that
// would block every later pass.
func TestCommandsLaunchingFewAreNotCapped(t *testing.T) {
	for _, tc := range []struct {
		name     string
		method   disruption.Method
		reason   disruption.Reason
		launches int
	}{
		{name: "multi-node deleting only", method: disruption.MethodMultiNode, reason: disruption.ReasonUnderutilized, launches: 0},
		{name: "multi-node replacing many by one", method: disruption.MethodMultiNode, reason: disruption.ReasonUnderutilized, launches: 1},
		{name: "multi-node launching exactly the cap", method: disruption.MethodMultiNode, reason: disruption.ReasonUnderutilized, launches: MaxReplacements},
		{name: "drift launching more than the cap", method: disruption.MethodDrift, reason: disruption.ReasonDrifted, launches: 2 * MaxReplacements},
	} {
		t.Run(tc.name, func(t *testing.T) {
			big := &disruption.Command{Method: tc.method, Reason: tc.reason}
			for i := range 3 * MaxReplacements {
				big.Candidates = append(big.Candidates, string(rune('a'+i%26))+string(rune('a'+i/26)))
			}
			for range tc.launches {
				big.Replacements = append(big.Replacements, &scheduling.NewNodeClaim{})
			}
			calls := 0
			ctrl := &Controller{decide: func(in *disruption.Input) (*disruption.Decision, error) {
				calls++
				return &disruption.Decision{Command: big}, nil
			}}
			dec, err := ctrl.decideWithin(&disruption.Input{})
			if err != nil {
				t.Fatal(err)
			}
			if dec.Command != big || calls != 1 {
				t.Errorf("%d candidates by %d replacements: decided %d times, became %+v", len(big.Candidates), tc.launches, calls, dec.Command)
			}
		})
	}
}
