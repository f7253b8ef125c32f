package disruption_test

import (
	"testing"

	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestWhyRendersEveryKind pins the text of every verdict kind: the words
// users read in events, the NodeClaim's record, explain and simulate (and
// Karpenter's own wording where Karpenter has the message).
func TestWhyRendersEveryKind(t *testing.T) {
	cases := []struct {
		name string
		why  disruption.Why
		want string
	}{
		{"not managed", disruption.Why{Kind: disruption.WhyNotManaged}, "node isn't managed by karpenter"},
		{"no nodepool label", disruption.Why{Kind: disruption.WhyNoNodePoolLabel}, "node doesn't have required label (label=karpenter.sh/nodepool)"},
		{"nodepool not found", disruption.Why{Kind: disruption.WhyNodePoolNotFound, NodePool: "gone"}, `nodepool "gone" not found`},
		{"no node", disruption.Why{Kind: disruption.WhyNoNode}, "nodeclaim does not have an associated node"},
		{"not initialized", disruption.Why{Kind: disruption.WhyNotInitialized}, "node isn't initialized"},
		{"deleting", disruption.Why{Kind: disruption.WhyDeleting}, "node is deleting or marked for deletion"},
		{"disrupting", disruption.Why{Kind: disruption.WhyDisrupting}, "node is already being disrupted"},
		{"nominated", disruption.Why{Kind: disruption.WhyNominated}, "node is nominated for a pending pod"},
		{"node do-not-disrupt", disruption.Why{Kind: disruption.WhyNodeDoNotDisrupt}, `disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation`},
		{"pod do-not-disrupt", disruption.Why{Kind: disruption.WhyPodDoNotDisrupt, Pod: "ns/web-0"}, `pod has "karpenter.sh/do-not-disrupt" annotation (Pod=ns/web-0)`},
		{"one pdb", disruption.Why{Kind: disruption.WhyPDB, PDBs: []string{"ns/db"}}, "pdb prevents pod evictions (PodDisruptionBudget=[ns/db])"},
		{"several pdbs", disruption.Why{Kind: disruption.WhyPDB, PDBs: []string{"ns/a", "ns/b"}}, "eviction does not support multiple PDBs (PodDisruptionBudget(s)=[ns/a ns/b])"},
		{"static", disruption.Why{Kind: disruption.WhyStatic, NodePool: "fixed"}, `NodePool "fixed" is static (spec.replicas): its nodes are never consolidated`},
		{"consolidation disabled", disruption.Why{Kind: disruption.WhyConsolidationDisabled, NodePool: "p"}, `NodePool "p" has consolidation disabled`},
		{"not consolidatable", disruption.Why{Kind: disruption.WhyNotConsolidatable}, "node is not consolidatable yet (its Consolidatable condition is not True: pods changed within consolidateAfter)"},
		{"when empty", disruption.Why{Kind: disruption.WhyWhenEmpty, NodePool: "p"}, `NodePool "p" has non-empty consolidation disabled`},
		{"unknown offering", disruption.Why{Kind: disruption.WhyUnknownOffering}, "node's instance type, zone or capacity type is unknown"},
		{"no price", disruption.Why{Kind: disruption.WhyNoPrice, InstanceType: "m5.large", Zone: "z1", CapacityType: "spot"}, `no price known for instance type "m5.large" in z1/spot`},
		{"not cheaper", disruption.Why{Kind: disruption.WhyNotCheaper}, "can't replace with a cheaper node"},
		{"balanced", disruption.Why{Kind: disruption.WhyBalanced, NodePool: "p", Savings: 0.01, Disruption: 0.2}, `NodePool "p" is Balanced: the move saves 1.0% of its cost for 20.0% of its disruption (score 0.05, needs 0.50)`},
		{"would create nodes", disruption.Why{Kind: disruption.WhyWouldCreateNodes, Count: 2}, "can't remove without creating 2 nodes"},
		{"spot-to-spot disabled", disruption.Why{Kind: disruption.WhySpotToSpotDisabled}, "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"},
		{"spot-to-spot types", disruption.Why{Kind: disruption.WhySpotToSpotTypes, Count: 3, Want: 15}, "SpotToSpotConsolidation requires 15 cheaper instance type options than the current candidate to consolidate, got 3"},
		{"min values", disruption.Why{Kind: disruption.WhyMinValues, Key: "node.kubernetes.io/instance-type", Count: 1, Want: 3}, `minValues requirement is not met for "node.kubernetes.io/instance-type" (1 cheaper instance types, want 3)`},
		{"pods would not schedule, nodepool reason", disruption.Why{Kind: disruption.WhyPodsWouldNotSchedule, Pod: "ns/web-0", NodePool: "p", Solver: scheduling.NodeLabels{}}, `not all pods would schedule, pod "ns/web-0": nodepool "p": had labels incompatible with its requirements`},
		{"pods would not schedule, existing nodes", disruption.Why{Kind: disruption.WhyPodsWouldNotSchedule, Pod: "ns/web-0", Solver: scheduling.NoCapacity{}}, `not all pods would schedule, pod "ns/web-0": no nodepools or nodes to schedule on`},
		{"pods would not schedule, no reason", disruption.Why{Kind: disruption.WhyPodsWouldNotSchedule, Pod: "ns/web-0"}, `not all pods would schedule, pod "ns/web-0": no reason given`},
		{"uninitialized node", disruption.Why{Kind: disruption.WhyUninitializedNode, Node: "n1"}, `would schedule against uninitialized node "n1"`},
		{"scheduler would spread", disruption.Why{Kind: disruption.WhySchedulerWouldSpread, Pod: "ns/p"}, `pod "ns/p" would not schedule where the simulation puts it: kube-scheduler, placing the evicted pods as its resource score ranks the nodes, would leave it no room`},
		{"scheduler ties unfollowed", disruption.Why{Kind: disruption.WhySchedulerTiesUnfollowed, Pod: "ns/p"}, `where pod "ns/p" would land hangs on more kube-scheduler score ties than the replay follows: the command is not proven, so it is not taken`},
		{"no budget", disruption.Why{Kind: disruption.WhyNoBudget, NodePool: "p", Budget: disruption.ReasonUnderutilized}, `no disruption budget left for reason Underutilized in NodePool "p"`},
		{"drift paused", disruption.Why{Kind: disruption.WhyDriftPaused, NodePool: "p", Detail: "replacement failed to initialize"}, `drift of NodePool "p" is paused: replacement failed to initialize`},
		{"static scaling down", disruption.Why{Kind: disruption.WhyStaticScalingDown, NodePool: "fixed", Count: 2}, `static NodePool "fixed" is scaling down to 2 replicas`},
		{"static at limit", disruption.Why{Kind: disruption.WhyStaticAtLimit, NodePool: "fixed", Count: 3}, `static NodePool "fixed" is at its limits.nodes 3: the replacement would exceed it`},
		{"static no instance type", disruption.Why{Kind: disruption.WhyStaticNoInstanceType, NodePool: "fixed"}, `static NodePool "fixed" offers no instance type its requirements admit`},
		{"zero", disruption.Why{}, ""},
	}
	covered := map[disruption.WhyKind]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.why.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			if tc.why.IsZero() != (tc.want == "") {
				t.Errorf("IsZero() = %v for %q", tc.why.IsZero(), tc.want)
			}
		})
		covered[tc.why.Kind] = true
	}
	for _, k := range disruption.WhyKinds {
		if !covered[k] {
			t.Errorf("kind %s has no case here", k)
		}
		if got := (disruption.Why{Kind: k}).String(); got == string(k) {
			t.Errorf("kind %s has no message of its own: String falls back to the kind", k)
		}
	}
}

// TestVerdictHold: the reason that governs a verdict is Blocked, else
// Unconsolidatable, else Drift.
func TestVerdictHold(t *testing.T) {
	blocked := disruption.Why{Kind: disruption.WhyNominated}
	unconsolidatable := disruption.Why{Kind: disruption.WhyNotCheaper}
	drift := disruption.Why{Kind: disruption.WhyDriftPaused, NodePool: "p"}
	for _, tc := range []struct {
		name    string
		verdict disruption.Verdict
		want    disruption.WhyKind
	}{
		{"blocked first", disruption.Verdict{Blocked: blocked, Unconsolidatable: unconsolidatable, Drift: drift}, disruption.WhyNominated},
		{"unconsolidatable before drift", disruption.Verdict{Unconsolidatable: unconsolidatable, Drift: drift}, disruption.WhyNotCheaper},
		{"drift alone", disruption.Verdict{Drift: drift}, disruption.WhyDriftPaused},
		{"nothing holds the node", disruption.Verdict{Candidate: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.verdict.Hold().Kind; got != tc.want {
				t.Errorf("Hold().Kind = %q, want %q", got, tc.want)
			}
		})
	}
}
