package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Suite is one of upstream's Ginkgo suites.
type Suite struct {
	// Name is the suite's directory under test/suites upstream.
	Name string
	// Binary is its built test binary.
	Binary string
	// Description is the suite's own name (RunSpecs's), which Ginkgo
	// puts before a spec's text when it matches --ginkgo.focus; ListSpecs
	// reads it.
	Description string
}

// Package is the suite's import path in the pinned upstream module.
func (s Suite) Package() string { return "sigs.k8s.io/karpenter/test/suites/" + s.Name }

// BuildSuite builds the named suite's test binary into dir with `go test
// -c` in the upstream module (moduleDir).
func BuildSuite(ctx context.Context, moduleDir, dir, name string) (Suite, error) {
	s := Suite{Name: name, Binary: filepath.Join(dir, name+".test")}
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", s.Binary, s.Package())
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return s, fmt.Errorf("building %s: %w\n%s", s.Package(), err, out)
	}
	return s, nil
}

// Spec is one spec of a suite, as Ginkgo names it.
type Spec struct {
	Suite string
	// Text is the spec's full text: its containers' texts and its own,
	// joined by spaces, as --ginkgo.focus matches it.
	Text string
	// Labels are the spec's Ginkgo labels (its containers' included).
	Labels []string
}

// Result is a spec's verdict.
type Result struct {
	Spec
	// State is Ginkgo's (passed, failed, timedout, panicked, interrupted,
	// aborted, skipped), or excluded.
	State    string
	Duration time.Duration
	// Message is the failure's message, or the exclusion's reason.
	Message string
	// Location is where upstream's spec failed (file:line).
	Location string
	// Joiner is what joiner's process spent while the spec ran.
	Joiner Usage
	// Phases are the performance reports the spec wrote (the performance
	// suite's scale-out, consolidation and drift phases), in order.
	Phases []Phase
}

// Passed reports whether the spec passed.
func (r Result) Passed() bool { return r.State == "passed" }

// ginkgoReport is the part of Ginkgo's JSON report (--ginkgo.json-report)
// the harness reads.
type ginkgoReport struct {
	SuiteDescription string
	SpecReports      []struct {
		ContainerHierarchyTexts  []string
		ContainerHierarchyLabels [][]string
		LeafNodeType             string
		LeafNodeText             string
		LeafNodeLabels           []string
		State                    string
		RunTime                  time.Duration
		Failure                  struct {
			Message  string
			Location struct {
				FileName   string
				LineNumber int
			}
		}
	}
}

// readReport parses a JSON report into the results of its It specs and
// the suite's description.
func readReport(suite, path string) ([]Result, string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("reading ginkgo report: %w", err)
	}
	var reports []ginkgoReport
	if err := json.Unmarshal(b, &reports); err != nil {
		return nil, "", fmt.Errorf("parsing ginkgo report %s: %w", path, err)
	}
	var out []Result
	var description string
	for _, r := range reports {
		description = r.SuiteDescription
		for _, sr := range r.SpecReports {
			if sr.LeafNodeType != "It" {
				continue
			}
			texts := append(append([]string(nil), sr.ContainerHierarchyTexts...), sr.LeafNodeText)
			var labels []string
			for _, ls := range sr.ContainerHierarchyLabels {
				labels = append(labels, ls...)
			}
			labels = append(labels, sr.LeafNodeLabels...)
			res := Result{
				Spec:     Spec{Suite: suite, Text: strings.Join(texts, " "), Labels: labels},
				State:    sr.State,
				Duration: sr.RunTime,
				Message:  sr.Failure.Message,
			}
			if sr.Failure.Location.FileName != "" {
				res.Location = fmt.Sprintf("%s:%d", filepath.Base(sr.Failure.Location.FileName), sr.Failure.Location.LineNumber)
			}
			out = append(out, res)
		}
	}
	return out, description, nil
}

// ListSpecs lists the suite's specs with a Ginkgo dry run (no cluster
// needed) and records the suite's description in s.
func ListSpecs(ctx context.Context, s *Suite, dir string) ([]Spec, error) {
	report := filepath.Join(dir, s.Name+"-specs.json")
	cmd := exec.CommandContext(ctx, s.Binary, "-ginkgo.dry-run", "-ginkgo.no-color", "-ginkgo.json-report="+report)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("listing the specs of %s: %w\n%s", s.Name, err, tail(out, 40))
	}
	results, description, err := readReport(s.Name, report)
	if err != nil {
		return nil, err
	}
	s.Description = description
	specs := make([]Spec, len(results))
	for i, r := range results {
		specs[i] = r.Spec
	}
	return specs, nil
}

// FocusOf is the --ginkgo.focus expression that selects exactly specs of
// the suite described as description (Ginkgo matches the focus against the
// suite's description, a space, and the spec's full text).
func FocusOf(description string, specs ...Spec) string {
	alts := make([]string, len(specs))
	for i, s := range specs {
		alts[i] = regexp.QuoteMeta(s.Text)
	}
	return "^" + regexp.QuoteMeta(description) + " (" + strings.Join(alts, "|") + ")$"
}

// RunOptions configure Run.
type RunOptions struct {
	// Kubeconfig of the cluster joiner runs against.
	Kubeconfig string
	// Timeout bounds the run: the specs with their setup and cleanup.
	Timeout time.Duration
	// Dir receives the run's report and output.
	Dir string
	// Name names the run's files in Dir.
	Name string
	// Args are extra arguments for the suite binary (e.g.
	// -default-nodeclass).
	Args []string
	// JoinerPid is joiner's process, sampled while the specs run (0: not
	// sampled).
	JoinerPid int
}

// Run runs specs of s in one process and returns their verdicts, in the
// order given; the process's output is kept in Dir. A spec the process
// never reported (it was killed) is timedout or failed with the output's
// tail.
func Run(ctx context.Context, s Suite, specs []Spec, o RunOptions) ([]Result, error) {
	report := filepath.Join(o.Dir, o.Name+".json")
	logPath := filepath.Join(o.Dir, o.Name+".log")
	_ = os.Remove(report)
	// Ginkgo's own timeout ends the specs and runs their cleanup; the
	// process's context is the backstop for a cleanup that hangs.
	ctx, cancel := context.WithTimeout(ctx, o.Timeout+2*time.Minute)
	defer cancel()
	args := append([]string{
		"-test.timeout=" + (o.Timeout + 90*time.Second).String(),
		"-ginkgo.focus=" + FocusOf(s.Description, specs...),
		"-ginkgo.timeout=" + o.Timeout.String(),
		"-ginkgo.grace-period=1m",
		"-ginkgo.no-color",
		"-ginkgo.v",
		"-ginkgo.json-report=" + report,
	}, o.Args...)
	cmd := exec.CommandContext(ctx, s.Binary, args...)
	cmd.Dir = o.Dir
	// The performance suite writes each phase's report under OUTPUT_DIR.
	outDir := filepath.Join(o.Dir, o.Name+"-reports")
	_ = os.RemoveAll(outDir)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the run's report directory: %w", err)
	}
	cmd.Env = append(os.Environ(), "KUBECONFIG="+o.Kubeconfig, "OUTPUT_DIR="+outDir)
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the run's log: %w", err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	var usage *usageSampler
	if o.JoinerPid != 0 {
		usage = sampleUsage(o.JoinerPid, 5*time.Second)
	}
	runErr := cmd.Run()
	var spent Usage
	if usage != nil {
		spent = usage.Stop()
	}
	phases, err := readPhases(outDir)
	if err != nil {
		return nil, err
	}
	for i, p := range phases {
		phases[i].Joiner = spent.Within(p.Timestamp.Add(-p.Time), p.Timestamp)
	}
	reported, _, _ := readReport(s.Name, report)
	byText := map[string]Result{}
	for _, r := range reported {
		if r.State != "skipped" {
			byText[r.Text] = r
		}
	}
	out := make([]Result, len(specs))
	for i, spec := range specs {
		if r, ok := byText[spec.Text]; ok {
			out[i] = r
			continue
		}
		state := "failed"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			state = "timedout"
		}
		log, _ := os.ReadFile(logPath)
		out[i] = Result{Spec: spec, State: state, Duration: time.Since(start),
			Message: fmt.Sprintf("not in the ginkgo report (%v); output (%s):\n%s", runErr, logPath, tail(log, 30))}
	}
	if len(specs) == 1 {
		// The process's figures belong to its one spec.
		out[0].Joiner, out[0].Phases = spent, phases
	}
	return out, nil
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9]+`)

// slug is a file-name-safe short form of a spec's text.
func slug(text string) string {
	s := strings.Trim(nonWord.ReplaceAllString(strings.ToLower(text), "-"), "-")
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(bytes.ToValidUTF8(b, nil)), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
