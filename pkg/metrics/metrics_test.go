package metrics

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

func TestMetricsAreRegisteredOnControllerRuntimeRegistry(t *testing.T) {
	NodeClaimsCreated.WithLabelValues("provisioning", "default", "false").Inc()
	ObserveCloudProviderCall("provisioner", "Create", "sim", 0.25, "InsufficientCapacity")
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	want := map[string]bool{
		"karpenter_nodeclaims_created_total":       false,
		"karpenter_cloudprovider_duration_seconds": false,
		"karpenter_cloudprovider_errors_total":     false,
		"karpenter_build_info":                     false,
	}
	for _, f := range families {
		if _, ok := want[f.GetName()]; ok {
			want[f.GetName()] = true
		}
	}
	for name, found := range want {
		if !found {
			t.Errorf("metric %s not served by controller-runtime's registry", name)
		}
	}
}

// TestCatalogNamesAndLabels checks the catalog holds Karpenter's names
// with Karpenter's labels (a sample of those dashboards query), and that
// every name carries a prefix Karpenter serves (karpenter_, operatorpkg's
// operator_, the AWS SDK's aws_sdk_go_) or joiner_.
func TestCatalogNamesAndLabels(t *testing.T) {
	byName := map[string]Definition{}
	for _, d := range Catalog() {
		byName[d.Name] = d
		known := false
		for _, prefix := range []string{"karpenter_", "operator_", "aws_sdk_go_", "joiner_"} {
			known = known || strings.HasPrefix(d.Name, prefix)
		}
		if !known {
			t.Errorf("%s is neither Karpenter's nor joiner's", d.Name)
		}
	}
	tests := []struct {
		name   string
		labels []string
	}{
		{"karpenter_nodeclaims_created_total", []string{"reason", "nodepool", "min_values_relaxed"}},
		{"karpenter_nodeclaims_terminated_total", []string{"nodepool", "capacity_type"}},
		{"karpenter_nodeclaims_disrupted_total", []string{"reason", "nodepool", "capacity_type"}},
		{"karpenter_nodes_allocatable", NodeLabels},
		{"karpenter_pods_state", []string{"name", "namespace", "owner", "node", "nodepool", "zone", "arch", "capacity_type", "instance_type", "phase"}},
		{"karpenter_nodepools_usage", []string{"nodepool", "resource_type"}},
		{"karpenter_nodepools_limit", []string{"nodepool", "resource_type"}},
		{"karpenter_cloudprovider_duration_seconds", []string{"controller", "method", "provider"}},
		{"karpenter_cloudprovider_errors_total", []string{"controller", "method", "provider", "error"}},
		{"karpenter_cloudprovider_instance_type_offering_price_estimate", []string{"instance_type", "capacity_type", "zone"}},
		{"karpenter_scheduler_scheduling_duration_seconds", []string{"controller"}},
		{"karpenter_cluster_state_synced", nil},
		{"karpenter_nodepools_cost_total", []string{"nodepool"}},
		{"karpenter_nodepools_cost_tracker_errors_total", []string{"nodepool"}},
		{"karpenter_scheduler_unfinished_work_seconds", []string{"controller", "scheduling_id"}},
		{"karpenter_pods_provisioning_unbound_time_seconds", []string{"name", "namespace", "dynamic_resources"}},
		{"karpenter_pods_provisioning_unstarted_time_seconds", []string{"name", "namespace"}},
		{"karpenter_pods_provisioning_scheduling_undecided_time_seconds", []string{"name", "namespace"}},
		{"karpenter_pods_provisioning_bound_duration_seconds", []string{"dynamic_resources"}},
		{"karpenter_pods_provisioning_startup_duration_seconds", nil},
		{"karpenter_ec2nodeclasses_userdata_bytes", []string{"nodeclass"}},
		{"aws_sdk_go_request_total", []string{"service", "action", "code"}},
		{"aws_sdk_go_request_duration_seconds", []string{"service", "action", "code"}},
		{"aws_sdk_go_request_retry_count", []string{"service", "action", "code"}},
		{"aws_sdk_go_request_attempt_total", []string{"service", "action", "code"}},
		{"aws_sdk_go_request_attempt_duration_seconds", []string{"service", "action", "code"}},
	}
	for _, kind := range []string{"operator_nodeclaim", "operator_nodepool", "operator_node", "operator_ec2nodeclass", "joiner_simnodeclass"} {
		tests = append(tests, []struct {
			name   string
			labels []string
		}{
			{kind + "_status_condition_count", []string{"namespace", "name", "type", "status", "reason"}},
			{kind + "_status_condition_current_status_seconds", []string{"namespace", "name", "type", "status", "reason"}},
			{kind + "_status_condition_transitions_total", []string{"type", "status", "reason"}},
			{kind + "_status_condition_transition_seconds", []string{"type", "status", "to_status"}},
			{kind + "_termination_current_time_seconds", []string{"namespace", "name"}},
			{kind + "_termination_duration_seconds", nil},
		}...)
	}
	for _, tt := range tests {
		d, ok := byName[tt.name]
		if !ok {
			t.Errorf("%s is not defined", tt.name)
			continue
		}
		if strings.Join(d.Labels, ",") != strings.Join(tt.labels, ",") {
			t.Errorf("%s labels %v, want %v", tt.name, d.Labels, tt.labels)
		}
	}
}

func TestControllerFromContext(t *testing.T) {
	if got := ControllerFrom(context.Background()); got != "unknown" {
		t.Errorf("ControllerFrom(empty) = %q", got)
	}
	if got := ControllerFrom(WithController(context.Background(), "provisioner")); got != "provisioner" {
		t.Errorf("ControllerFrom = %q", got)
	}
}

func TestSetUnschedulableZeroesKindsThatWentAway(t *testing.T) {
	kinds := []string{"Limit", "Taint"}
	SetUnschedulable("provisioner", 3, map[string]int{"Limit": 2, "Taint": 3}, kinds)
	SetUnschedulable("provisioner", 1, map[string]int{"Taint": 1}, kinds)
	if err := testutil.CollectAndCompare(PodsUnschedulable, strings.NewReader(`
# HELP joiner_pods_unschedulable Number of pods the provisioner's last batch could not place, by reason kind (a pod counts once per distinct kind).
# TYPE joiner_pods_unschedulable gauge
joiner_pods_unschedulable{reason="Limit"} 0
joiner_pods_unschedulable{reason="Taint"} 1
`)); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(UnschedulablePodsCount.WithLabelValues("provisioner")); got != 1 {
		t.Fatalf("karpenter_scheduler_unschedulable_pods_count = %v, want 1", got)
	}
}
