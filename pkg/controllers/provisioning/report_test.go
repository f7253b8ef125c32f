package provisioning

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func TestPublishUnschedulableCountsPodsByReasonKind(t *testing.T) {
	taint := scheduling.Taint{Taint: corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	publishUnschedulable([]scheduling.PodError{
		{NodePools: map[string]scheduling.Reason{"a": taint, "b": scheduling.Limit{NodePool: "b", Resource: corev1.ResourceCPU}}},
		{NodePools: map[string]scheduling.Reason{"a": taint}},
	})
	for kind, want := range map[scheduling.ReasonKind]float64{scheduling.KindTaint: 2, scheduling.KindLimit: 1, scheduling.KindVolume: 0} {
		if got := testutil.ToFloat64(metrics.PodsUnschedulable.WithLabelValues(string(kind))); got != want {
			t.Errorf("joiner_pods_unschedulable{reason=%q} = %v, want %v", kind, got, want)
		}
	}
	publishUnschedulable(nil)
	if got := testutil.ToFloat64(metrics.PodsUnschedulable.WithLabelValues(string(scheduling.KindTaint))); got != 0 {
		t.Errorf("after an empty batch joiner_pods_unschedulable{reason=Taint} = %v, want 0", got)
	}
	if got := testutil.ToFloat64(metrics.UnschedulablePodsCount.WithLabelValues("provisioner")); got != 0 {
		t.Errorf("karpenter_scheduler_unschedulable_pods_count = %v, want 0", got)
	}
}
