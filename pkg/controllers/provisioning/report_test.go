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

func TestDescribeReasons(t *testing.T) {
	got := describeReasons(
		scheduling.PodError{
			Existing: scheduling.ExistingNodes{Groups: []scheduling.NodeGroup{{Count: 2, Reason: scheduling.InsufficientResource{}}}},
			NodePools: map[string]scheduling.Reason{
				"b": scheduling.Taint{Taint: corev1.Taint{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}},
				"a": scheduling.IncompatibleRequirements{Key: "zone",
					Pod:      []scheduling.NodeSelector{{Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}},
					NodePool: []scheduling.NodeSelector{{Operator: corev1.NodeSelectorOpIn, Values: []string{"z2", "z3"}}}},
			},
		},
		map[string]string{"c": "it is not ready (NodeClassNotReady: ...)", "a": "ignored because a reason exists"},
	)
	want := `existing nodes: 2 nodes had insufficient resources; nodepool "a": incompatible requirements, key zone, zone In [z1] not in zone In [z2 z3]; nodepool "b": did not tolerate taint gpu=true:NoSchedule; nodepool "c" skipped: it is not ready (NodeClassNotReady: ...)`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := describeReasons(scheduling.PodError{}, nil); got == "" {
		t.Error("no reason and no nodepool must still say something")
	}
}
