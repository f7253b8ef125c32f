package conformance

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Summary counts results by state.
func Summary(results []Result) map[string]int {
	out := map[string]int{}
	for _, r := range results {
		out[r.State]++
	}
	return out
}

// WriteReport writes the pass table as Markdown: a summary line per suite,
// then one row per spec with its verdict, duration and, for a failure, the
// first line of upstream's message and where it failed.
func WriteReport(w io.Writer, header string, results []Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", header)
	bySuite := map[string][]Result{}
	var suites []string
	for _, r := range results {
		if _, ok := bySuite[r.Suite]; !ok {
			suites = append(suites, r.Suite)
		}
		bySuite[r.Suite] = append(bySuite[r.Suite], r)
	}
	sort.Strings(suites)
	for _, s := range suites {
		counts := Summary(bySuite[s])
		var states []string
		for st := range counts {
			states = append(states, st)
		}
		sort.Strings(states)
		var parts []string
		for _, st := range states {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
		fmt.Fprintf(&b, "- %s: %d specs run or excluded: %s\n", s, len(bySuite[s]), strings.Join(parts, ", "))
	}
	b.WriteString("\n| suite | spec | result | time | note |\n| --- | --- | --- | --- | --- |\n")
	for _, s := range suites {
		for _, r := range bySuite[s] {
			note := firstLine(r.Message)
			if r.Location != "" {
				note = r.Location + ": " + note
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.Suite, cell(r.Text), r.State,
				r.Duration.Round(time.Second), cell(note))
		}
	}
	writeUsage(&b, results)
	writePhases(&b, results)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeUsage tabulates what joiner's process spent per spec (the figures
// upstream asserts of Karpenter's pod).
func writeUsage(b *strings.Builder, results []Result) {
	header := false
	for _, r := range results {
		if r.Joiner.Samples == 0 {
			continue
		}
		if !header {
			b.WriteString("\njoiner's process while each spec ran (from /proc):\n\n| spec | wall | cpu | avg cores | peak RSS |\n| --- | --- | --- | --- | --- |\n")
			header = true
		}
		u := r.Joiner
		fmt.Fprintf(b, "| %s | %s | %s | %.2f | %d MiB |\n", cell(r.Text), u.Wall.Round(time.Second),
			u.CPU.Round(100*time.Millisecond), u.Cores(), u.PeakRSS>>20)
	}
}

// writePhases tabulates the performance suite's own reports per phase.
func writePhases(b *strings.Builder, results []Result) {
	header := false
	for _, r := range results {
		for _, p := range r.Phases {
			if !header {
				b.WriteString("\nperformance phases (upstream's reports; joiner's process over each phase):\n\n| spec | phase | type | pods | nodes | time | cpu util | memory util | rounds | joiner avg cores | joiner peak RSS |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
				header = true
			}
			fmt.Fprintf(b, "| %s | %s | %s | %d | %d | %s | %.1f%% | %.1f%% | %d | %.2f | %d MiB |\n", cell(r.Text), cell(p.Name), p.Type,
				p.Pods, p.Nodes, p.Time.Round(time.Second), 100*p.CPUUtil, 100*p.MemUtil, p.Rounds, p.Joiner.Cores(), p.Joiner.PeakRSS>>20)
		}
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ")
}
