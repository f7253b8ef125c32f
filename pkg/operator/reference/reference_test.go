package reference

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/joiner-dev/joiner/pkg/metrics"
)

var update = flag.Bool("update", false, "rewrite docs/settings.md and docs/metrics.md from the code")

// repoRoot is the repository root, from this package's directory.
const repoRoot = "../../.."

// TestGeneratedDocs fails when docs/settings.md or docs/metrics.md differ
// from what the code renders; -update (make generate) rewrites them.
func TestGeneratedDocs(t *testing.T) {
	settings, err := Settings()
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []struct{ path, content string }{
		{"docs/settings.md", settings},
		{"docs/metrics.md", Metrics()},
	} {
		path := filepath.Join(repoRoot, doc.path)
		if *update {
			if err := os.WriteFile(path, []byte(doc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run `make generate`)", err)
		}
		if string(got) != doc.content {
			t.Errorf("%s is out of date with the code: run `make generate`", doc.path)
		}
	}
}

// TestSettingsReferenceListsKarpenterSettings checks the rendered table
// holds every setting of Karpenter's reference (§4.1) under its names.
func TestSettingsReferenceListsKarpenterSettings(t *testing.T) {
	settings, err := Settings()
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{
		"KARPENTER_SERVICE", "METRICS_PORT", "HEALTH_PROBE_PORT", "KUBE_CLIENT_QPS", "KUBE_CLIENT_BURST", "ENABLE_PROFILING",
		"DISABLE_CONTROLLER_WARMUP", "DISABLE_LEADER_ELECTION", "DISABLE_CLUSTER_STATE_OBSERVABILITY", "LEADER_ELECTION_NAME",
		"LEADER_ELECTION_NAMESPACE", "MEMORY_LIMIT", "CPU_REQUESTS", "LOG_LEVEL", "LOG_OUTPUT_PATHS", "LOG_ERROR_OUTPUT_PATHS",
		"BATCH_MAX_DURATION", "BATCH_IDLE_DURATION", "PREFERENCE_POLICY", "MIN_VALUES_POLICY", "IGNORE_DRA_REQUESTS",
		"FEATURE_GATES", "SCHEDULER_CONFIG", "CLUSTER_NAME", "CLUSTER_ENDPOINT", "CLUSTER_CA_BUNDLE", "ISOLATED_VPC",
		"EKS_CONTROL_PLANE", "VM_MEMORY_OVERHEAD_PERCENT", "INTERRUPTION_QUEUE", "RESERVED_ENIS", "DISABLE_DRY_RUN",
		"ENABLE_ZONAL_SHIFT", "AMI_REFRESH_INTERVAL", "SUBNET_REFRESH_INTERVAL", "AWS_FEATURE_GATES",
	} {
		if !strings.Contains(settings, "| `"+env+"` |") {
			t.Errorf("settings reference lacks %s", env)
		}
	}
	if !strings.Contains(settings, "| `LEADER_ELECTION_NAME` | `--leader-election-name` | `karpenter-leader-election` |") {
		t.Error("the lease is not named as Karpenter's by default")
	}
}

// metricName finds the metric names in a PromQL expression: identifiers
// with joiner's or one of Karpenter's prefixes (label names and functions
// never carry them).
var metricName = regexp.MustCompile(`\b(?:karpenter|joiner|operator|aws_sdk_go)_[a-zA-Z0-9_]+`)

// histogramSuffixes are the series a histogram family serves.
var histogramSuffixes = []string{"_bucket", "_sum", "_count"}

// TestDashboardQueriesKnownMetrics parses the chart's Grafana dashboard and
// checks every metric its queries name is one joiner serves, with labels
// it has, so the dashboard cannot silently show nothing.
func TestDashboardQueriesKnownMetrics(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "charts/joiner/dashboards/joiner.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard is not JSON: %v", err)
	}
	catalog := map[string]metrics.Definition{}
	for _, d := range metrics.Catalog() {
		catalog[d.Name] = d
		if d.Type == "histogram" {
			for _, s := range histogramSuffixes {
				catalog[d.Name+s] = d
			}
		}
	}
	labelUse := regexp.MustCompile(`\{([^}]*)\}|by \(([^)]*)\)`)
	exprs := 0
	used := map[string]bool{}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			if tg.Expr == "" {
				continue
			}
			exprs++
			names := metricName.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q names no metric of joiner's", p.Title, tg.Expr)
			}
			var known []metrics.Definition
			for _, n := range names {
				d, ok := catalog[n]
				if !ok {
					t.Errorf("panel %q: %s is not a metric joiner serves", p.Title, n)
					continue
				}
				used[d.Name] = true
				known = append(known, d)
			}
			// Every label the query filters or groups by must belong to one
			// of the metrics it names.
			for _, m := range labelUse.FindAllStringSubmatch(tg.Expr, -1) {
				for _, l := range labelsIn(m[1] + "," + m[2]) {
					if !anyHasLabel(known, l) {
						t.Errorf("panel %q: label %q is on none of %v", p.Title, l, names)
					}
				}
			}
		}
	}
	if exprs < 10 {
		t.Errorf("dashboard has %d queries; want the main groups covered", exprs)
	}
	var names []string
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("dashboard %q: %d queries over %d metrics", dash.Title, exprs, len(names))
}

func labelsIn(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name := regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*`).FindString(part)
		if name != "" && name != "le" {
			out = append(out, name)
		}
	}
	return out
}

func anyHasLabel(defs []metrics.Definition, label string) bool {
	for _, d := range defs {
		for _, l := range d.Labels {
			if l == label {
				return true
			}
		}
	}
	return false
}
