package disruption

import "errors"

// errNotBuilt marks the skeleton: the methods land in the next commits.
var errNotBuilt = errors.New("disruption engine not built yet")

// Decide runs the methods in Karpenter's order (emptiness, drift, multi-node
// consolidation, single-node consolidation); the first that yields a
// command wins. Every managed node gets a Verdict either way.
func Decide(in *Input) (*Decision, error) {
	return nil, errNotBuilt
}

// Validate re-checks a command against a fresh Input (Karpenter waits 15 s
// first): the candidates are still valid and within budget, and the
// re-simulation still supports the command (a delete still needs no new
// node; a replacement's instance types are among the new simulation's).
func Validate(cmd *Command, in *Input) error {
	return errNotBuilt
}
