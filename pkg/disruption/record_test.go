package disruption_test

import (
	"testing"
	"time"

	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func TestRecord(t *testing.T) {
	cmd := &disruption.Command{
		Method: disruption.MethodSingleNode, Reason: disruption.ReasonUnderutilized, Candidates: []string{"a"},
		Replacements:   []*scheduling.NewNodeClaim{{Price: 0.1, InstanceTypes: []*scheduling.InstanceType{{Name: "m5.large"}}}},
		SavingsPerHour: 0.3,
	}
	for _, tc := range []struct {
		name    string
		verdict disruption.Verdict
		cmd     *disruption.Command
		want    disruption.State
		message string
		kind    disruption.WhyKind
	}{
		{"taken by the command", disruption.Verdict{Node: "a", Candidate: true, Price: 0.4}, cmd, disruption.StateDisrupting, "single-node-consolidation (Underutilized) takes 1 node(s)", ""},
		{"blocked", disruption.Verdict{Node: "b", Blocked: disruption.Why{Kind: disruption.WhyPDB, PDBs: []string{"ns/db"}}}, cmd, disruption.StateBlocked, "pdb prevents pod evictions (PodDisruptionBudget=[ns/db])", disruption.WhyPDB},
		{"unconsolidatable", disruption.Verdict{Node: "b", Unconsolidatable: disruption.Why{Kind: disruption.WhyNotCheaper}}, nil, disruption.StateUnconsolidatable, "can't replace with a cheaper node", disruption.WhyNotCheaper},
		{"candidate", disruption.Verdict{Node: "b", Candidate: true}, cmd, disruption.StateCandidate, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := disruption.NewRecord(tc.verdict, tc.cmd)
			if r.State != tc.want || r.Message != tc.message || r.Kind != tc.kind {
				t.Fatalf("got %s %q (%s), want %s %q (%s)", r.State, r.Message, r.Kind, tc.want, tc.message, tc.kind)
			}
			r.Since = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			back, err := disruption.DecodeRecord(r.Encode())
			if err != nil {
				t.Fatal(err)
			}
			if !back.Same(r) || !back.Since.Equal(r.Since) {
				t.Fatalf("round trip changed the record: %+v -> %+v", r, back)
			}
		})
	}
	t.Run("same ignores since and price noise, not the message", func(t *testing.T) {
		a := disruption.NewRecord(disruption.Verdict{Node: "b", Blocked: disruption.Why{Kind: disruption.WhyDeleting}, Price: 0.1}, nil)
		b := disruption.NewRecord(disruption.Verdict{Node: "b", Blocked: disruption.Why{Kind: disruption.WhyDeleting}, Price: 0.1 + 1e-9}, nil)
		b.Since = time.Now()
		if !a.Same(b) {
			t.Errorf("records differing only in Since and float noise are not the same")
		}
		c := disruption.NewRecord(disruption.Verdict{Node: "b", Blocked: disruption.Why{Kind: disruption.WhyNominated}, Price: 0.1}, nil)
		if a.Same(c) {
			t.Errorf("records with different messages are the same")
		}
	})
	t.Run("a held drift keeps its kind", func(t *testing.T) {
		held := disruption.Why{Kind: disruption.WhyDriftPaused, NodePool: "p", Detail: "replacements did not initialize"}
		r := disruption.NewRecord(disruption.Verdict{Node: "b", Candidate: true, Drifted: true, Drift: held}, nil)
		if r.DriftKind != disruption.WhyDriftPaused || r.Drift != held.String() {
			t.Errorf("drift %q (%s), want %q (%s)", r.Drift, r.DriftKind, held.String(), disruption.WhyDriftPaused)
		}
	})
	if r, err := disruption.DecodeRecord("{"); err == nil {
		t.Errorf("decoding a broken record gave %+v, want an error", r)
	}
}
