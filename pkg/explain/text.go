package explain

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/simulate"
)

// Write renders a verdict (*PodVerdict, *NodeClaimVerdict or
// *NodePoolVerdict) as grouped text: the one-line verdict first, then the
// evidence, then what to do.
func Write(w io.Writer, verdict any) error {
	p := &printer{}
	switch v := verdict.(type) {
	case *PodVerdict:
		p.pod(v)
	case *NodeClaimVerdict:
		p.claim(v, "")
	case *NodePoolVerdict:
		p.pool(v)
	case *CapacityBufferVerdict:
		p.buffer(v)
	default:
		return fmt.Errorf("explain: cannot render %T", verdict)
	}
	_, err := io.WriteString(w, p.String())
	return err
}

type printer struct{ strings.Builder }

func (p *printer) line(indent string, format string, args ...any) {
	p.WriteString(indent)
	fmt.Fprintf(&p.Builder, format, args...)
	p.WriteByte('\n')
}

func (p *printer) pod(v *PodVerdict) {
	p.line("", "%s", v.Summary)
	if len(v.Rejections) > 0 {
		p.line("", "\nNodePools considered:")
		for _, r := range v.Rejections {
			where := "NodePool " + r.Where
			if r.Where == simulate.ExistingNodesKey {
				where = "existing nodes"
			}
			p.line("  ", "%s: %s [%s]", where, r.Message, r.Kind)
			for _, f := range r.Shortfalls {
				p.line("    ", "%s", f)
			}
		}
	}
	if v.NewNode != nil {
		p.line("", "\nWould launch: NodePool %s, %s, $%.4f/h%s", v.NewNode.NodePool, strings.Join(v.NewNode.InstanceTypes[:min(len(v.NewNode.InstanceTypes), 5)], ", "), v.NewNode.Price, v.NewNode.PriceBreakdown())
	}
	if v.WaitingFor != nil {
		p.line("", "\nWaiting for:")
		p.claim(v.WaitingFor, "  ")
	}
	p.fixes(v.Fixes)
	p.events("", v.Events)
	p.source(v.InstanceTypeSource)
	p.notes(v.Notes)
}

func (p *printer) claim(v *NodeClaimVerdict, in string) {
	if in == "" {
		p.line(in, "%s", v.Summary)
		p.WriteByte('\n')
	}
	what := []string{}
	for _, kv := range [][2]string{{"NodeClaim", v.NodeClaim}, {"Node", v.Node}, {"NodePool", v.NodePool}, {"instance type", v.InstanceType}, {"zone", v.Zone}, {"capacity type", v.CapacityType}, {"provider ID", v.ProviderID}} {
		if kv[1] != "" {
			what = append(what, kv[0]+" "+kv[1])
		}
	}
	p.line(in, "%s", strings.Join(what, ", "))
	if !v.Managed {
		p.events(in, v.Events)
		return
	}
	p.line(in, "Phase: %s", v.Phase)
	for _, s := range v.Steps {
		switch {
		case s.Done:
			p.line(in, "  [x] %s", s.Name)
		case s.TTL > 0:
			why := ""
			if s.Reason != "" || s.Message != "" {
				why = ": " + strings.TrimPrefix(s.Reason+": "+s.Message, ": ")
			}
			p.line(in, "  [ ] %s, waiting %s of %s%s", s.Name, time.Duration(s.Waiting), time.Duration(s.TTL), why)
		default:
			p.line(in, "  [ ] %s", s.Name)
		}
	}
	if v.Checklist != "" {
		p.line(in, "Why it may not register: %s", v.Checklist)
	}
	if len(v.Bootstrap) > 0 {
		p.line(in, "Bootstrap problems:")
		for _, e := range v.Bootstrap {
			p.line(in+"  ", "%s: %s", e.Reason, e.Message)
		}
	}
	if d := v.Disruption; d != nil && v.Phase == PhaseReady {
		p.line(in, "Disruption:")
		switch {
		case d.Problem != "":
			p.line(in+"  ", "stored verdict unreadable: %s", d.Problem)
		case !d.Stored:
			p.line(in+"  ", "no verdict stored yet")
		default:
			r := d.Record
			p.line(in+"  ", "%s for %s%s", r.State, time.Duration(d.Age), prefixed(": ", r.Message))
			if r.PricePerHour > 0 {
				figures := fmt.Sprintf("price $%.4f/h", r.PricePerHour)
				if r.ReplacementPricePerHour > 0 || r.SavingsPerHour > 0 {
					figures += fmt.Sprintf(", replacement $%.4f/h (%s), saves $%.4f/h", r.ReplacementPricePerHour, strings.Join(r.Replacements, ", "), r.SavingsPerHour)
				}
				if r.Empty {
					figures += ", empty"
				}
				p.line(in+"  ", "%s", figures)
			}
			if r.Drifted {
				p.line(in+"  ", "drifted%s", prefixed(": held: ", r.Drift))
			}
			if len(r.Ownerless) > 0 && (r.State == disruption.StateCandidate || r.State == disruption.StateDisrupting) {
				p.line(in+"  ", "warning: %s", disruption.OwnerlessWarning(r.Ownerless))
			}
		}
		if d.DoNotDisrupt {
			p.line(in+"  ", "karpenter.sh/do-not-disrupt is set on the node or NodeClaim")
		}
		if d.InFlight != "" {
			p.line(in+"  ", "in flight: %s", d.InFlight)
		}
	}
	p.events(in, v.Events)
}

func (p *printer) pool(v *NodePoolVerdict) {
	p.line("", "%s", v.Summary)
	p.WriteByte('\n')
	p.line("", "Ready: %s", condText(v.Ready))
	p.line("", "NodeClass %s/%s: %s", v.NodeClass.Kind, v.NodeClass.Name, map[bool]string{true: condText(v.NodeClass.Ready), false: "not found"}[v.NodeClass.Found])
	p.line("", "Nodes: %d", v.Nodes)
	if v.Replicas != nil {
		p.line("", "Static: keeps %d node(s) (spec.replicas; `kubectl scale nodepool %s --replicas N`), launched for no pod and never consolidated; needs --feature-gates=StaticCapacity=true", *v.Replicas, v.NodePool)
	}
	if len(v.Limits) == 0 {
		p.line("", "Limits: none")
	} else {
		p.line("", "Limits:")
		for _, l := range v.Limits {
			p.line("  ", "%s: used %s of %s, %s left", l.Resource, l.Used.String(), l.Limit.String(), l.Left.String())
		}
	}
	var b []string
	for _, x := range v.Budgets {
		b = append(b, fmt.Sprintf("%s %d", x.Reason, x.Allowed))
	}
	p.line("", "Disruptions allowed now: %s", strings.Join(b, ", "))
	p.line("", "Instance types: %d of %d offered fit its requirements%s%s", v.InstanceTypes.Compatible, v.InstanceTypes.Offered,
		prefixed("; backing off: ", countIf(v.InstanceTypes.BackingOff)), prefixed("; cheapest launchable: ", strings.Join(v.InstanceTypes.Cheapest, ", ")))
	for _, b := range v.Backoffs {
		p.line("  ", "backing off: %s, %s failed %d time(s) (%s), next attempt at %s", b.What, strings.ToLower(b.Phase), b.Failures, b.Cause, b.NextAttempt.UTC().Format(time.RFC3339))
	}
	p.bufferRooms(v)
	p.source(v.InstanceTypeSource)
	p.events("", v.Events)
}

// bufferRooms lists the CapacityBuffers' room in a NodePool.
func (p *printer) bufferRooms(v *NodePoolVerdict) {
	if len(v.Buffers) > 0 {
		p.line("", "CapacityBuffers holding room here:")
	}
	for _, b := range v.Buffers {
		var places []string
		for _, pl := range b.Places {
			places = append(places, fmt.Sprintf("%s (%d)", pl, pl.Chunks))
		}
		p.line("  ", "%s: %d of %d chunk(s) held%s", b.Buffer, b.Held, b.Chunks, prefixed(" on ", strings.Join(places, ", ")))
		if b.Short > 0 {
			p.line("    ", "%d chunk(s) short; here: %s", b.Short, b.Why)
		}
	}
	if v.BufferSource != "" {
		p.line("", "CapacityBuffers: %s.", v.BufferSource)
	}
}

// source says where the instance types and offerings came from.
func (p *printer) source(s string) {
	if s != "" {
		p.line("", "Instance types and offerings: %s.", s)
	}
}

func countIf(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

func (p *printer) fixes(fixes []string) {
	if len(fixes) == 0 {
		return
	}
	p.line("", "\nWhat would fix it:")
	for _, f := range fixes {
		p.line("  ", "- %s", f)
	}
}

func (p *printer) events(in string, es []EventSummary) {
	if len(es) == 0 {
		return
	}
	p.line(in, "Events (latest per reason):")
	for _, e := range es {
		count := ""
		if e.Count > 1 {
			count = fmt.Sprintf(" (x%d)", e.Count)
		}
		p.line(in+"  ", "%s ago %s %s %s%s: %s", time.Duration(e.Age), e.Type, e.Object, e.Reason, count, e.Message)
	}
}

func (p *printer) notes(notes []string) {
	for _, n := range notes {
		p.line("", "note: %s", n)
	}
}

func condText(c ConditionSummary) string {
	if !c.Found {
		return "no Ready condition yet"
	}
	return c.Status + prefixed(" ", c.Reason) + prefixed(": ", c.Message)
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}
