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
