package disruption

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// State is the gist of a Verdict, a small fixed vocabulary a reader can
// branch on without reading the message.
type State string

// The states a node's verdict can be in.
const (
	// StateCandidate: some method may take the node; none did this pass.
	StateCandidate State = "Candidate"
	// StateDisrupting: the pass's command takes the node.
	StateDisrupting State = "Disrupting"
	// StateBlocked: a node- or pod-level rule forbids disrupting it
	// (Karpenter's DisruptionBlocked: do-not-disrupt, a PDB, not
	// initialised, deleting, nominated).
	StateBlocked State = "Blocked"
	// StateUnconsolidatable: nothing blocks it, but emptiness and
	// consolidation leave it (policy, consolidateAfter, budget, or no
	// cheaper arrangement: Karpenter's Unconsolidatable).
	StateUnconsolidatable State = "Unconsolidatable"
)

// Record is a Verdict as stored on the NodeClaim (the
// joiner.dev/disruption-verdict annotation): the decision for one node
// with the figures behind it. Its JSON is the stored form; readers must
// tolerate fields they do not know.
type Record struct {
	State State `json:"state"`
	// Message is Karpenter's DisruptionBlocked or Unconsolidatable text
	// for Blocked and Unconsolidatable, the command for Disrupting.
	Message string `json:"message,omitempty"`
	// Kind is the kind of the reason Message renders (Blocked and
	// Unconsolidatable), for readers that branch without parsing text.
	Kind WhyKind `json:"kind,omitempty"`
	// Method and Reason are the command's, for Disrupting.
	Method Method `json:"method,omitempty"`
	Reason Reason `json:"reason,omitempty"`
	// Drifted is the NodeClaim's Drifted condition; Drift why the drift
	// method leaves it ("" when it may replace it).
	Drifted   bool    `json:"drifted,omitempty"`
	Drift     string  `json:"drift,omitempty"`
	DriftKind WhyKind `json:"driftKind,omitempty"`
	// Empty: no pod on the node needs another node.
	Empty bool `json:"empty,omitempty"`
	// Ownerless are the node's pods with no controller owner that
	// disrupting it would delete for good (Verdict.Ownerless).
	Ownerless []string `json:"ownerless,omitempty"`
	// PricePerHour is what the node costs now.
	PricePerHour float64 `json:"pricePerHour,omitempty"`
	// ReplacementPricePerHour and Replacements are the command's new
	// nodes (cheapest launch option first), SavingsPerHour what it saves.
	ReplacementPricePerHour float64  `json:"replacementPricePerHour,omitempty"`
	Replacements            []string `json:"replacements,omitempty"`
	SavingsPerHour          float64  `json:"savingsPerHour,omitempty"`
	// Since is when the controller first reached this verdict; it is not
	// rewritten while the verdict stays the same.
	Since time.Time `json:"since"`
}

// NewRecord is v as stored, with cmd the pass's command (nil when none);
// Since is left for the caller.
func NewRecord(v Verdict, cmd *Command) Record {
	r := Record{Drifted: v.Drifted, Drift: v.Drift.String(), DriftKind: v.Drift.Kind, Empty: v.Empty, Ownerless: v.Ownerless, PricePerHour: round4(v.Price)}
	switch {
	case cmd != nil && slices.Contains(cmd.Candidates, v.Node):
		r.State, r.Method, r.Reason = StateDisrupting, cmd.Method, cmd.Reason
		r.SavingsPerHour = round4(cmd.SavingsPerHour)
		for _, n := range cmd.Replacements {
			r.ReplacementPricePerHour += n.Price
			if len(n.InstanceTypes) > 0 {
				r.Replacements = append(r.Replacements, n.InstanceTypes[0].Name)
			}
		}
		r.ReplacementPricePerHour = round4(r.ReplacementPricePerHour)
		r.Message = fmt.Sprintf("%s (%s) takes %d node(s)", cmd.Method, cmd.Reason, len(cmd.Candidates))
	case !v.Blocked.IsZero():
		r.State, r.Message, r.Kind = StateBlocked, v.Blocked.String(), v.Blocked.Kind
	case !v.Unconsolidatable.IsZero():
		r.State, r.Message, r.Kind = StateUnconsolidatable, v.Unconsolidatable.String(), v.Unconsolidatable.Kind
	default:
		r.State = StateCandidate
	}
	return r
}

// Same reports whether r and o say the same thing (Since aside), so a
// writer rewrites the record only when the verdict changed.
func (r Record) Same(o Record) bool {
	r.Since, o.Since = time.Time{}, time.Time{}
	a, errA := json.Marshal(r)
	b, errB := json.Marshal(o)
	return errA == nil && errB == nil && string(a) == string(b)
}

// Encode is the annotation value.
func (r Record) Encode() string {
	b, err := json.Marshal(r)
	if err != nil {
		// Every field is a plain value: Marshal cannot fail.
		panic(fmt.Sprintf("encoding disruption record: %v", err))
	}
	return string(b)
}

// DecodeRecord reads an annotation value.
func DecodeRecord(s string) (Record, error) {
	var r Record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return Record{}, fmt.Errorf("decoding disruption verdict %q: %w", s, err)
	}
	return r, nil
}

// round4 keeps prices to 1/100 of a cent, so float noise never counts as a
// changed verdict.
func round4(f float64) float64 {
	return float64(int64(f*10000+0.5)) / 10000
}
