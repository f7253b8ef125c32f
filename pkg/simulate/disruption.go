package simulate

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"k8s.io/utils/clock"

	"github.com/joiner-dev/joiner/pkg/disruption"
)

// DisruptionOptions says how to run a disruption dry run.
type DisruptionOptions struct {
	// Rounds is how many decisions to make, applying each command before
	// the next; 0 means until no method finds a command (at most
	// MaxRounds).
	Rounds int
	// Next returns the Input for the coming round.
	Next func() (*disruption.Input, error)
	// Apply plays a command on the cluster Next reads; nil when the input
	// cannot be replayed, which stops after the first round.
	Apply func(*disruption.Command) error
	// Clock times the decisions; clock.RealClock{} when nil.
	Clock clock.PassiveClock
	// Notes are printed with the report.
	Notes []string
}

// MaxRounds bounds a dry run that goes until nothing is left to do.
const MaxRounds = 1000

// DisruptionReport is what `joiner simulate --disruption` prints: the
// commands consolidation would issue, in order, with the pods each moves
// and what it saves, and why each node of the first round is or is not a
// candidate. Its JSON form is the machine-readable output (-o json).
type DisruptionReport struct {
	Summary  DisruptionSummary `json:"summary"`
	Commands []CommandReport   `json:"commands"`
	// Verdicts are the first round's, one per managed node.
	Verdicts []VerdictReport `json:"verdicts"`
	// Allowed is the first round's budget left per NodePool and reason.
	Allowed map[string]map[string]int `json:"allowedDisruptions"`
	Notes   []string                  `json:"notes,omitempty"`
}

// DisruptionSummary is the dry run in numbers.
type DisruptionSummary struct {
	Nodes          int     `json:"nodes"`
	CostPerHour    float64 `json:"costPerHour"`
	Commands       int     `json:"commands"`
	NodesRemoved   int     `json:"nodesRemoved"`
	NodesLaunched  int     `json:"nodesLaunched"`
	PodsMoved      int     `json:"podsMoved"`
	SavingsPerHour float64 `json:"savingsPerHour"`
	// DecisionSeconds is the engine's compute over every round.
	DecisionSeconds float64 `json:"decisionSeconds"`
}

// CommandReport is one command.
type CommandReport struct {
	Round          int               `json:"round"`
	Method         string            `json:"method"`
	Reason         string            `json:"reason"`
	Candidates     []CandidateReport `json:"candidates"`
	Replacements   []Replacement     `json:"replacements,omitempty"`
	SavingsPerHour float64           `json:"savingsPerHour"`
	Moves          []MoveReport      `json:"moves,omitempty"`
}

// CandidateReport is a node a command removes.
type CandidateReport struct {
	Node         string  `json:"node"`
	NodePool     string  `json:"nodePool"`
	InstanceType string  `json:"instanceType"`
	Price        float64 `json:"price"`
}

// Replacement is a node a command launches first.
type Replacement struct {
	NodePool string `json:"nodePool"`
	// InstanceTypes are its launch options, cheapest first.
	InstanceTypes []string `json:"instanceTypes"`
	Price         float64  `json:"price"`
	Pods          int      `json:"pods"`
}

// MoveReport is one evicted pod and where the simulation placed it: an
// existing node, or "replacement-<i>" (Replacements[i]).
type MoveReport struct {
	Pod  string `json:"pod"`
	From string `json:"from"`
	To   string `json:"to"`
}

// VerdictReport is why a node is or is not a candidate.
type VerdictReport struct {
	Node             string  `json:"node"`
	NodePool         string  `json:"nodePool"`
	Price            float64 `json:"price"`
	Candidate        bool    `json:"candidate"`
	Empty            bool    `json:"empty"`
	Drifted          bool    `json:"drifted,omitempty"`
	Command          string  `json:"command,omitempty"`
	Blocked          string  `json:"blocked,omitempty"`
	Unconsolidatable string  `json:"unconsolidatable,omitempty"`
	Drift            string  `json:"drift,omitempty"`
	// Kind is the kind of Blocked or Unconsolidatable, DriftKind of
	// Drift (disruption.WhyKinds), as the stored verdict records them.
	Kind      disruption.WhyKind `json:"kind,omitempty"`
	DriftKind disruption.WhyKind `json:"driftKind,omitempty"`
}

// RunDisruption makes the rounds of decisions and builds the report.
func RunDisruption(opts DisruptionOptions) (*DisruptionReport, error) {
	c := opts.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	rounds := opts.Rounds
	if rounds <= 0 {
		rounds = MaxRounds
	}
	if opts.Apply == nil {
		rounds = 1
	}
	r := &DisruptionReport{Notes: opts.Notes}
	for round := 1; round <= rounds; round++ {
		in, err := opts.Next()
		if err != nil {
			return nil, err
		}
		start := c.Now()
		d, err := disruption.Decide(in)
		if err != nil {
			return nil, fmt.Errorf("round %d: deciding: %w", round, err)
		}
		r.Summary.DecisionSeconds += c.Since(start).Seconds()
		if round == 1 {
			r.first(in, d)
		}
		if d.Command == nil {
			break
		}
		r.add(round, in, d.Command)
		if round < rounds && opts.Apply != nil {
			if err := opts.Apply(d.Command); err != nil {
				return nil, fmt.Errorf("round %d: applying the %s command: %w", round, d.Command.Method, err)
			}
		}
	}
	return r, nil
}

func (r *DisruptionReport) first(in *disruption.Input, d *disruption.Decision) {
	r.Summary.Nodes = len(in.Nodes)
	for _, n := range in.Nodes {
		r.Summary.CostPerHour += n.Price
	}
	for _, v := range d.Verdicts {
		r.Verdicts = append(r.Verdicts, VerdictReport{
			Node: v.Node, NodePool: v.NodePool, Price: v.Price, Candidate: v.Candidate, Empty: v.Empty, Drifted: v.Drifted,
			Command: string(v.Command), Blocked: v.Blocked.String(), Unconsolidatable: v.Unconsolidatable.String(), Drift: v.Drift.String(),
			Kind: cmp.Or(v.Blocked.Kind, v.Unconsolidatable.Kind), DriftKind: v.Drift.Kind,
		})
	}
	r.Allowed = map[string]map[string]int{}
	for pool, byReason := range d.Allowed {
		r.Allowed[pool] = map[string]int{}
		for reason, n := range byReason {
			r.Allowed[pool][string(reason)] = n
		}
	}
}

func (r *DisruptionReport) add(round int, in *disruption.Input, cmd *disruption.Command) {
	nodes := map[string]*disruption.Node{}
	for i := range in.Nodes {
		nodes[in.Nodes[i].Name] = &in.Nodes[i]
	}
	cr := CommandReport{Round: round, Method: string(cmd.Method), Reason: string(cmd.Reason), SavingsPerHour: cmd.SavingsPerHour}
	for _, name := range cmd.Candidates {
		n := nodes[name]
		cr.Candidates = append(cr.Candidates, CandidateReport{Node: name, NodePool: n.NodePool, InstanceType: n.InstanceType, Price: n.Price})
	}
	for _, nc := range cmd.Replacements {
		rep := Replacement{NodePool: nc.NodePool, Price: nc.Price, Pods: len(nc.Pods)}
		for _, it := range nc.InstanceTypes {
			rep.InstanceTypes = append(rep.InstanceTypes, it.Name)
		}
		cr.Replacements = append(cr.Replacements, rep)
	}
	for _, m := range cmd.Moves {
		to := m.To
		if to == "" {
			to = fmt.Sprintf("replacement-%d", m.Replacement)
		}
		cr.Moves = append(cr.Moves, MoveReport{Pod: m.Pod.Namespace + "/" + m.Pod.Name, From: m.From, To: to})
	}
	r.Commands = append(r.Commands, cr)
	s := &r.Summary
	s.Commands++
	s.NodesRemoved += len(cmd.Candidates)
	s.NodesLaunched += len(cmd.Replacements)
	s.PodsMoved += cmd.PodsMoved
	s.SavingsPerHour += cmd.SavingsPerHour
}

// WriteJSON writes the report as indented JSON.
func (r *DisruptionReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for people: a summary, each command with
// its candidates, replacements and moved pods (MaxPods candidates and pods
// per command, 0 for all), then the verdict of every node that is not a
// candidate, grouped by reason.
func (r *DisruptionReport) WriteText(out io.Writer, opts TextOptions) error {
	w := bufio.NewWriter(out)
	s := r.Summary
	fmt.Fprintf(w, "Disruption: %s, %s/hour; %s would remove %s and launch %s, moving %s and saving %s/hour (%.0f%%); decided in %s\n",
		plural(s.Nodes, "managed node"), dollars(s.CostPerHour), plural(s.Commands, "command"), plural(s.NodesRemoved, "node"),
		plural(s.NodesLaunched, "node"), plural(s.PodsMoved, "pod"), dollars(s.SavingsPerHour), 100*s.SavingsPerHour/max(s.CostPerHour, 1e-9), seconds(s.DecisionSeconds))
	for _, c := range r.Commands {
		fmt.Fprintf(w, "\n%d. %s (%s): remove %s", c.Round, c.Method, c.Reason, plural(len(c.Candidates), "node"))
		if len(c.Replacements) > 0 {
			fmt.Fprintf(w, ", launch %s first", plural(len(c.Replacements), "node"))
		}
		fmt.Fprintf(w, ", save %s/hour\n", dollars(c.SavingsPerHour))
		for i, cand := range c.Candidates {
			if opts.MaxPods > 0 && i == opts.MaxPods {
				fmt.Fprintf(w, "   - … and %s more\n", plural(len(c.Candidates)-i, "node"))
				break
			}
			fmt.Fprintf(w, "   - %s  %s/%s  %s/hour\n", cand.Node, cand.NodePool, cand.InstanceType, dollars(cand.Price))
		}
		for i, rep := range c.Replacements {
			types := rep.InstanceTypes
			more := ""
			if len(types) > 3 {
				types, more = types[:3], fmt.Sprintf(" (+%d more)", len(rep.InstanceTypes)-3)
			}
			fmt.Fprintf(w, "   + replacement-%d  %s/%s%s  %s/hour, %s\n", i, rep.NodePool, strings.Join(types, ","), more, dollars(rep.Price), plural(rep.Pods, "pod"))
		}
		for i, m := range c.Moves {
			if opts.MaxPods > 0 && i == opts.MaxPods {
				fmt.Fprintf(w, "     … and %s more\n", plural(len(c.Moves)-i, "pod"))
				break
			}
			fmt.Fprintf(w, "     pod %s: %s → %s\n", m.Pod, m.From, m.To)
		}
	}
	if len(r.Commands) == 0 {
		fmt.Fprintln(w, "\nNo command: nothing can be removed or replaced now.")
	}
	groups := map[string][]string{}
	for _, v := range r.Verdicts {
		why := firstOf(v.Blocked, v.Unconsolidatable)
		if v.Drifted && v.Drift != "" && v.Drift != why {
			why = firstOf(why+"; ", "") + "drift: " + v.Drift
		}
		switch {
		case v.Command != "":
			continue
		case v.Candidate && why == "":
			why = "candidate; no command takes it this round"
		case v.Candidate:
			why = "candidate, but: " + why
		}
		groups[why] = append(groups[why], v.Node)
	}
	if len(groups) > 0 {
		fmt.Fprintln(w, "\nNodes left alone (round 1):")
		whys := make([]string, 0, len(groups))
		for why := range groups {
			whys = append(whys, why)
		}
		sort.Slice(whys, func(i, j int) bool {
			if len(groups[whys[i]]) != len(groups[whys[j]]) {
				return len(groups[whys[i]]) > len(groups[whys[j]])
			}
			return whys[i] < whys[j]
		})
		for _, why := range whys {
			names := groups[why]
			shown := names
			more := ""
			if opts.MaxPods > 0 && len(names) > opts.MaxPods {
				shown, more = names[:opts.MaxPods], fmt.Sprintf(", … and %d more", len(names)-opts.MaxPods)
			}
			fmt.Fprintf(w, "  %s: %s%s\n", plural(len(names), "node"), why, "")
			fmt.Fprintf(w, "    %s%s\n", strings.Join(shown, ", "), more)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\nNote: %s\n", n)
	}
	return w.Flush()
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
