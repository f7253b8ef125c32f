package disruption

import "fmt"

// SimulateEach simulates removing each consolidation candidate alone, on
// the reduced snapshot or the whole one, and says per node what the
// simulation found: "delete", "replace N" or "fail".
func SimulateEach(in *Input, full bool) (map[string]string, error) {
	e, err := newEngine(in)
	if err != nil {
		return nil, err
	}
	e.sim.full = full
	out := map[string]string{}
	for _, c := range e.consolidationCandidates() {
		r, err := e.sim.run([]*candidate{c})
		if err != nil {
			return nil, err
		}
		switch {
		case r.reason != "":
			out[c.node.Name] = "fail"
		case len(r.replacements) == 0:
			out[c.node.Name] = "delete"
		default:
			out[c.node.Name] = fmt.Sprintf("replace %d", len(r.replacements))
		}
	}
	return out, nil
}
