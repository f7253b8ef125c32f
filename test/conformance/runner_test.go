package conformance

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// FocusOf selects exactly the given specs, as Ginkgo matches a focus
// (the suite's description, a space, the spec's full text), even when a
// spec's text holds regular-expression characters or is a prefix of
// another's.
func TestFocusOf(t *testing.T) {
	specs := []Spec{
		{Text: "Integration Validation NodePool should allow a restricted label exception to be used in labels ([*].node-restriction.kubernetes.io/custom-label)"},
		{Text: "Termination should terminate an empty node"},
	}
	re := regexp.MustCompile(FocusOf("Regression", specs...))
	for _, c := range []struct {
		text string
		want bool
	}{
		{"Regression " + specs[0].Text, true},
		{"Regression " + specs[1].Text, true},
		{specs[1].Text, false},
		{"Regression " + specs[1].Text + " twice", false},
		{"Performance " + specs[1].Text, false},
		{"Regression Integration Validation NodePool should allow a restricted label exception to be used in labels (x.node-restriction.kubernetes.io/custom-label)", false},
	} {
		if got := re.MatchString(c.text); got != c.want {
			t.Errorf("focus matches %q = %v, want %v", c.text, got, c.want)
		}
	}
}

// readReport keeps It specs only, with their full text, labels, state,
// duration and failure location.
func TestReadReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	report := `[{"SuiteDescription":"Regression","SpecReports":[
		{"LeafNodeType":"BeforeSuite","State":"passed"},
		{"ContainerHierarchyTexts":["Termination","Budgets"],"ContainerHierarchyLabels":[[],["slow"]],"LeafNodeType":"It","LeafNodeText":"should wait","LeafNodeLabels":["NoWatch"],
		 "State":"failed","RunTime":90000000000,"Failure":{"Message":"Timed out\nafter 90s","Location":{"FileName":"/x/termination_test.go","LineNumber":61}}}]}]`
	if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	results, description, err := readReport("regression", path)
	if err != nil {
		t.Fatal(err)
	}
	if description != "Regression" || len(results) != 1 {
		t.Fatalf("description %q, %d results", description, len(results))
	}
	r := results[0]
	if r.Text != "Termination Budgets should wait" || r.State != "failed" || r.Duration != 90*time.Second ||
		r.Location != "termination_test.go:61" || strings.Join(r.Labels, ",") != "slow,NoWatch" {
		t.Errorf("result %+v", r)
	}
	var b strings.Builder
	if err := WriteReport(&b, "# run", results); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| regression | Termination Budgets should wait | failed | 1m30s | termination_test.go:61: Timed out |") ||
		!strings.Contains(b.String(), "- regression: 1 specs run or excluded: 1 failed") {
		t.Errorf("report:\n%s", b.String())
	}
}

// readPhases reads the performance suite's reports oldest first, and the
// pass table shows them with what joiner's process spent.
func TestReadPhases(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"consolidation_performance_report.json": `{"test_name":"Consolidation Test","test_type":"consolidation","total_pods":700,"total_nodes":90,
			"total_time":300000000000,"total_reserved_cpu_utilization":0.61,"total_reserved_memory_utilization":0.7,"rounds":3,"timestamp":"2026-11-29T06:10:00Z"}`,
		"scale_out_performance_report.json": `{"test_name":"Scale Out Test","test_type":"scale-out","total_pods":1000,"total_nodes":160,
			"total_time":95000000000,"total_reserved_cpu_utilization":0.55,"total_reserved_memory_utilization":0.66,"rounds":1,"timestamp":"2026-11-29T06:00:00Z"}`,
		"ignored.json": `{}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	phases, err := readPhases(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(phases) != 2 || phases[0].Type != "scale-out" || phases[1].Type != "consolidation" ||
		phases[0].Time != 95*time.Second || phases[1].Nodes != 90 || phases[1].Rounds != 3 {
		t.Fatalf("phases %+v", phases)
	}
	r := Result{Spec: Spec{Suite: "performance", Text: "Performance Basic Deployment should scale"}, State: "passed",
		Joiner: Usage{CPU: 90 * time.Second, Wall: 5 * time.Minute, PeakRSS: 300 << 20, Samples: 60}, Phases: phases}
	var b strings.Builder
	if err := WriteReport(&b, "# run", []Result{r}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| Performance Basic Deployment should scale | 5m0s | 1m30s | 0.30 | 300 MiB |",
		"| Performance Basic Deployment should scale | Scale Out Test | scale-out | 1000 | 160 | 1m35s | 55.0% | 66.0% | 1 | 0.00 | 0 MiB |",
		"| Performance Basic Deployment should scale | Consolidation Test | consolidation | 700 | 90 | 5m0s | 61.0% | 70.0% | 3 | 0.00 | 0 MiB |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

// sampleUsage reads this process's own CPU time and resident memory.
func TestSampleUsage(t *testing.T) {
	s := sampleUsage(os.Getpid(), 10*time.Millisecond)
	deadline := time.Now().Add(300 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	u := s.Stop()
	if u.Samples < 2 || u.PeakRSS == 0 || u.CPU <= 0 || u.Wall < 300*time.Millisecond || u.Cores() <= 0 {
		t.Errorf("usage %+v", u)
	}
	if u := sampleUsage(-1, time.Second).Stop(); u.Samples != 0 || u.CPU != 0 {
		t.Errorf("an unreadable process gave %+v", u)
	}
}

// Within keeps the samples inside a window: a phase's CPU time is the
// difference between its first and last sample, its peak the largest.
func TestUsageWithin(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	var series []usageSample
	for i, s := range []struct {
		cpu float64
		rss int
	}{{10, 100}, {12, 300}, {20, 200}, {21, 900}, {30, 100}} {
		series = append(series, usageSample{at: t0.Add(time.Duration(i) * time.Minute), cpu: s.cpu, rss: s.rss})
	}
	all := Usage{series: series}
	for _, c := range []struct {
		name     string
		from, to time.Time
		cpu      time.Duration
		wall     time.Duration
		peak     int
	}{
		{"everything", t0, t0.Add(4 * time.Minute), 20 * time.Second, 4 * time.Minute, 900},
		{"the middle three", t0.Add(30 * time.Second), t0.Add(3 * time.Minute), 9 * time.Second, 2 * time.Minute, 900},
		{"the first two", t0, t0.Add(90 * time.Second), 2 * time.Second, time.Minute, 300},
		{"one sample is no span", t0.Add(3 * time.Minute), t0.Add(210 * time.Second), 0, 0, 0},
	} {
		got := all.Within(c.from, c.to)
		if got.CPU != c.cpu || got.Wall != c.wall || got.PeakRSS != c.peak {
			t.Errorf("%s: cpu %s wall %s peak %d, want %s %s %d", c.name, got.CPU, got.Wall, got.PeakRSS, c.cpu, c.wall, c.peak)
		}
	}
}

// A selection that leaves nothing to run fails, naming its focus and skip:
// a focus one word off a spec's text once passed a run of zero specs.
func TestSelectionOfNothingFails(t *testing.T) {
	hashVersion := "Drift should update the nodepool-hash annotation on the nodepool and nodeclaim when the nodepool's nodepool-hash-version annotation does not match the controller hash version"
	regression := []Spec{
		{Suite: "regression", Text: "Termination should terminate an empty node"},
		{Suite: "regression", Text: hashVersion},
		{Suite: "regression", Text: "Drift Failure should not drift any nodes if their PodDisruptionBudgets are unhealthy"},
	}
	performance := []Spec{
		{Suite: "performance", Text: "Performance Host Name Spreading Deployment XL should do very large scale hostname spreading"},
		{Suite: "performance", Text: "Performance Host Name Spreading Deployment Reg should do hostname spreading"},
	}
	for _, c := range []struct {
		name     string
		sel      Selection
		want     [2]int
		failWith []string
	}{
		{name: "everything", want: [2]int{3, 2}},
		{name: "one word off", sel: Selection{Focus: "Host Name Spreading XL"},
			failWith: []string{`focus "Host Name Spreading XL" and skip ""`, "of the 5 listed (regression 3, performance 2)", "no spec's full text matches"}},
		{name: "the focus's one spec skipped", sel: Selection{Focus: "Host Name Spreading", Skip: "Deployment"},
			failWith: []string{`focus "Host Name Spreading" and skip "Deployment"`}},
		{name: "only an excluded spec", sel: Selection{Focus: "nodepool-hash-version"},
			failWith: []string{"the only specs matched are excluded", "controller hash version"}},
		{name: "an excluded spec beside one to run", sel: Selection{Focus: "^Drift"}, want: [2]int{2, 0}},
		{name: "the XL spec", sel: Selection{Focus: "Host Name Spreading Deployment XL"}, want: [2]int{0, 1}},
		{name: "skip", sel: Selection{Skip: "^(Drift|Performance Host Name Spreading Deployment XL)"}, want: [2]int{1, 1}},
		{name: "a bad focus", sel: Selection{Focus: "Drift ("}, failWith: []string{`focus "Drift ("`}},
		{name: "a bad skip", sel: Selection{Skip: "[XL"}, failWith: []string{`skip "[XL"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.sel.Specs(regression, performance)
			if c.failWith != nil {
				if err == nil {
					t.Fatalf("selected %d and %d specs, want an error", len(got[0]), len(got[1]))
				}
				for _, want := range c.failWith {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || len(got[0]) != c.want[0] || len(got[1]) != c.want[1] {
				t.Errorf("selected %v, want %v specs per suite", got, c.want)
			}
		})
	}
}
