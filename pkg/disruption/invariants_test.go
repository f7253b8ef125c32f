package disruption_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// checkCommand holds every command to the engine's promises, whatever the
// method: each candidate is a candidate, the budgets hold, every evicted
// pod has a destination, and a replacement is strictly cheaper by the
// minimum share and never the same type 1→1.
func checkCommand(tb testing.TB, in *disruption.Input, d *disruption.Decision) {
	tb.Helper()
	cmd := d.Command
	nodes := map[string]*disruption.Node{}
	for i := range in.Nodes {
		nodes[in.Nodes[i].Name] = &in.Nodes[i]
	}
	verdicts := map[string]disruption.Verdict{}
	for _, v := range d.Verdicts {
		verdicts[v.Node] = v
	}
	perPool := map[string]int{}
	price := 0.0
	moved := map[string]bool{}
	for _, m := range cmd.Moves {
		moved[m.Pod.Namespace+"/"+m.Pod.Name] = true
		if m.To == "" && (m.Replacement < 0 || m.Replacement >= len(cmd.Replacements)) {
			tb.Errorf("pod %s/%s moves nowhere", m.Pod.Namespace, m.Pod.Name)
		}
	}
	for _, name := range cmd.Candidates {
		n := nodes[name]
		if n == nil {
			tb.Fatalf("candidate %q is not a node", name)
		}
		if v := verdicts[name]; !v.Candidate || v.Command != cmd.Method {
			tb.Errorf("candidate %q has verdict %+v", name, v)
		}
		perPool[n.NodePool]++
		price += n.Price
		for _, p := range n.Pods {
			if p.DeletionTimestamp == nil && !moved[p.Namespace+"/"+p.Name] && !pods.IsOwnedByDaemonSet(p) {
				tb.Errorf("pod %s/%s of %q loses its place", p.Namespace, p.Name, name)
			}
		}
	}
	for pool, n := range perPool {
		if allowed := d.Allowed[pool][cmd.Reason]; n > allowed {
			tb.Errorf("NodePool %q: %d candidates for %s, budget allows %d", pool, n, cmd.Reason, allowed)
		}
	}
	if cmd.Method == disruption.MethodMultiNode || cmd.Method == disruption.MethodSingleNode {
		if most := len(cmd.Candidates); len(cmd.Replacements) > most || (cmd.Method == disruption.MethodSingleNode && len(cmd.Replacements) > 1) {
			tb.Errorf("%s of %d nodes launches %d replacements", cmd.Method, len(cmd.Candidates), len(cmd.Replacements))
		}
		minShare := in.Options.MinSavingsFraction
		if minShare == 0 {
			minShare = disruption.DefaultMinSavingsFraction
		}
		// Whichever option the cloud picks for each replacement, the
		// command saves the minimum share: sum the dearest allowed ones.
		worst := 0.0
		for _, r := range cmd.Replacements {
			dearest := 0.0
			for _, it := range r.InstanceTypes {
				if len(cmd.Candidates) == 1 && len(cmd.Replacements) == 1 && it.Name == nodes[cmd.Candidates[0]].InstanceType {
					tb.Errorf("replacement of %q offers its own type %s", cmd.Candidates[0], it.Name)
				}
				for _, o := range it.Offerings {
					if o.Available && offeringAllowed(r.Requirements, o.Zone, o.CapacityType) {
						dearest = max(dearest, scheduling.NodePrice(it, o.Price, r.Requests.Cpu().MilliValue(), in.Options.Scheduling.ListPrices).Total())
					}
				}
			}
			worst += dearest
		}
		if len(cmd.Replacements) > 0 && (worst > price*(1-minShare)+1e-9 || worst >= price) {
			tb.Errorf("replacements may cost %.4f $/h, not %.0f%% below the candidates' %.4f", worst, 100*minShare, price)
		}
	}
	if cmd.SavingsPerHour <= 0 && cmd.Method != disruption.MethodDrift {
		tb.Errorf("%s saves %.4f $/h", cmd.Method, cmd.SavingsPerHour)
	}
}

// offeringAllowed reports whether a replacement's requirements admit an
// offering's zone and capacity type.
func offeringAllowed(reqs []scheduling.Requirement, zone, ct string) bool {
	for _, r := range reqs {
		var v string
		switch r.Key {
		case corev1.LabelTopologyZone:
			v = zone
		case v1.LabelCapacityType:
			v = ct
		default:
			continue
		}
		in := slices.Contains(r.Values, v)
		if (r.Operator == corev1.NodeSelectorOpIn && !in) || (r.Operator == corev1.NodeSelectorOpNotIn && in) {
			return false
		}
	}
	return true
}
