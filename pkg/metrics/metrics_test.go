package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

func TestMetricsAreRegisteredOnControllerRuntimeRegistry(t *testing.T) {
	NodeClaimsCreated.WithLabelValues("default", "provisioning").Inc()
	ObserveCloudProviderCall("Create", 0.25, "")
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	want := map[string]bool{
		"karpenter_nodeclaims_created_total":       false,
		"karpenter_cloudprovider_duration_seconds": false,
		"karpenter_cloudprovider_calls_total":      false,
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

func TestObserveCloudProviderCallLabelsOutcome(t *testing.T) {
	ObserveCloudProviderCall("Delete", 0.1, "NotFound")
	if got := testutil.ToFloat64(CloudProviderCalls.WithLabelValues("Delete", "NotFound")); got != 1 {
		t.Fatalf("calls{Delete,NotFound} = %v, want 1", got)
	}
	if err := testutil.CollectAndCompare(PodsPending, strings.NewReader(`
# HELP karpenter_pods_pending Number of unschedulable pods waiting for capacity, as last seen by the provisioner.
# TYPE karpenter_pods_pending gauge
karpenter_pods_pending 0
`)); err != nil {
		t.Fatal(err)
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
