package operator_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestMetricsAfterScaleUpAndDown scrapes the real joiner process's
// /metrics after a scale-up and after the scale-down that empties its
// nodes, and checks that what Karpenter's dashboards and alerts query is
// there, under Karpenter's names and labels: every karpenter_ and joiner_
// family carries exactly its catalog labels, and the series the two
// phases must have produced exist with the scenario's values.
func TestMetricsAfterScaleUpAndDown(t *testing.T) {
	s := newScenario(t)
	s.nodePool.Spec.Disruption = v1.Disruption{
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmpty,
		ConsolidateAfter:    v1.MustParseNillableDuration("0s"),
	}
	s.apply()
	port := freePort(t)
	s.joiner("--metrics-port="+strconv.Itoa(port), "--disruption-poll-interval=1s", "--disruption-validation-period=1s")
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	pool := s.nodePool.Name

	d := s.deployment("metrics", 3, "1", "1Gi", nil)
	s.waitRunning("metrics", 3, 90*time.Second)
	expectSeries(t, url, []want{
		{"karpenter_nodeclaims_created_total", map[string]string{"reason": "provisioning", "nodepool": pool, "min_values_relaxed": "false"}},
		{"karpenter_nodes_created_total", map[string]string{"nodepool": pool}},
		{"karpenter_nodes_allocatable", map[string]string{"nodepool": pool, "resource_type": "cpu"}},
		{"karpenter_nodes_total_pod_requests", map[string]string{"nodepool": pool, "resource_type": "memory"}},
		{"karpenter_pods_state", map[string]string{"namespace": s.ns, "nodepool": pool, "phase": "Running"}},
		{"karpenter_pods_startup_duration_seconds", nil},
		{"karpenter_nodepools_usage", map[string]string{"nodepool": pool, "resource_type": "cpu"}},
		{"karpenter_cloudprovider_duration_seconds", map[string]string{"controller": "nodeclaim.lifecycle", "method": "Create", "provider": "sim"}},
		{"karpenter_cloudprovider_instance_type_offering_price_estimate", nil},
		{"karpenter_scheduler_scheduling_duration_seconds", map[string]string{"controller": "provisioner"}},
		{"karpenter_cluster_state_synced", nil},
		{"karpenter_cluster_state_node_count", nil},
		{"karpenter_cluster_utilization_percent", map[string]string{"resource_type": "cpu"}},
		{"karpenter_build_info", nil},
		{"joiner_nodeclaims_launched_total", map[string]string{"nodepool": pool}},
		// operatorpkg's status condition metrics, one set per kind.
		{"operator_nodeclaim_status_condition_count", map[string]string{"type": "Ready", "status": "True"}},
		{"operator_nodeclaim_status_condition_current_status_seconds", map[string]string{"type": "Initialized", "status": "True"}},
		{"operator_nodeclaim_status_condition_transitions_total", map[string]string{"type": "Launched", "status": "True"}},
		{"operator_nodepool_status_condition_count", map[string]string{"name": pool, "type": "Ready", "status": "True"}},
		{"operator_node_status_condition_count", map[string]string{"type": "Ready", "status": "True"}},
		{"joiner_simnodeclass_status_condition_count", map[string]string{"name": s.nodePool.Spec.Template.Spec.NodeClassRef.Name, "type": "Ready", "status": "True"}},
		// The provisioning latencies, from the provisioner's first look.
		{"karpenter_pods_scheduling_decision_duration_seconds", nil},
		{"karpenter_pods_provisioning_bound_duration_seconds", map[string]string{"dynamic_resources": "false"}},
		{"karpenter_pods_provisioning_startup_duration_seconds", nil},
		{"karpenter_nodepools_cost_total", map[string]string{"nodepool": pool}},
	})
	expectPositive(t, url, "karpenter_nodepools_cost_total", map[string]string{"nodepool": pool})

	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To[int32](0)
	if err := s.env.Client.Patch(t.Context(), d, patch); err != nil {
		t.Fatal(err)
	}
	s.waitNoNodeClaims(90*time.Second, "after the scale-down")
	expectSeries(t, url, []want{
		{"karpenter_nodeclaims_disrupted_total", map[string]string{"reason": "empty", "nodepool": pool}},
		{"karpenter_nodeclaims_terminated_total", map[string]string{"nodepool": pool}},
		{"karpenter_nodeclaims_termination_duration_seconds", map[string]string{"nodepool": pool}},
		{"karpenter_nodes_terminated_total", map[string]string{"nodepool": pool}},
		{"karpenter_nodes_drained_total", map[string]string{"nodepool": pool}},
		{"karpenter_nodes_lifetime_duration_seconds", map[string]string{"nodepool": pool}},
		{"karpenter_voluntary_disruption_decisions_total", map[string]string{"decision": "delete", "reason": "empty", "consolidation_type": "empty"}},
		{"karpenter_voluntary_disruption_decision_evaluation_duration_seconds", nil},
		{"karpenter_nodepools_allowed_disruptions", map[string]string{"nodepool": pool}},
		{"karpenter_cloudprovider_duration_seconds", map[string]string{"method": "Delete", "provider": "sim"}},
		{"operator_nodeclaim_termination_duration_seconds", nil},
		{"operator_node_termination_duration_seconds", nil},
	})
}

// expectPositive checks that a gauge's series with labels reads above 0.
func expectPositive(t *testing.T, url, name string, labels map[string]string) {
	t.Helper()
	families, err := scrape(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	f := families[name]
	if f == nil {
		t.Fatalf("%s not served", name)
	}
	for _, m := range f.GetMetric() {
		if hasLabels(m, labels) && m.GetGauge().GetValue() > 0 {
			return
		}
	}
	t.Errorf("%s%v is not above 0", name, labels)
}

// want is a series that must exist: a family and the label values one of
// its series must carry (other labels free).
type want struct {
	name   string
	labels map[string]string
}

// expectSeries scrapes url until every wanted series is there (gauges are
// recomputed every few seconds), then checks every karpenter_, joiner_,
// operator_ and aws_sdk_go_ family against the catalog's label names.
func expectSeries(t *testing.T, url string, wants []want) {
	t.Helper()
	var families map[string]*dto.MetricFamily
	test.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		var err error
		if families, err = scrape(ctx, url); err != nil {
			return err
		}
		var missing []string
		for _, w := range wants {
			if !hasSeries(families[w.name], w.labels) {
				missing = append(missing, fmt.Sprintf("%s%v", w.name, w.labels))
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("missing series: %s", strings.Join(missing, ", "))
		}
		return nil
	})
	catalog := map[string][]string{}
	for _, d := range metrics.Catalog() {
		catalog[d.Name] = d.Labels
	}
	for name, f := range families {
		if !slices.ContainsFunc([]string{"karpenter_", "joiner_", "operator_", "aws_sdk_go_"}, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		labels, ok := catalog[name]
		if !ok {
			t.Errorf("served %s is not in the metrics catalog (docs/metrics.md)", name)
			continue
		}
		for _, m := range f.GetMetric() {
			if got := labelNames(m); !slices.Equal(got, sorted(labels)) {
				t.Errorf("%s has labels %v, the catalog says %v", name, got, sorted(labels))
				break
			}
		}
	}
}

func scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	families, err := parseMetrics(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", url, err)
	}
	return families, nil
}

// parseMetrics parses a Prometheus text page into its families by name.
func parseMetrics(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

func hasSeries(f *dto.MetricFamily, labels map[string]string) bool {
	if f == nil {
		return false
	}
	for _, m := range f.GetMetric() {
		if hasLabels(m, labels) {
			return true
		}
	}
	return false
}

// hasLabels reports whether the series m carries every label of labels.
func hasLabels(m *dto.Metric, labels map[string]string) bool {
	for k, v := range labels {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k && lp.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func labelNames(m *dto.Metric) []string {
	var out []string
	for _, lp := range m.GetLabel() {
		out = append(out, lp.GetName())
	}
	return sorted(out)
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// freePort asks the kernel for a port no one listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
