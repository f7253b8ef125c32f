package observability

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joiner-dev/joiner/pkg/metrics"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestResourceLabel(t *testing.T) {
	for in, want := range map[corev1.ResourceName]string{
		corev1.ResourceCPU:              "cpu",
		corev1.ResourceEphemeralStorage: "ephemeral_storage",
		"nvidia.com/gpu":                "nvidia_com_gpu",
		"hugepages-2Mi":                 "hugepages_2mi",
	} {
		if got := resourceLabel(in); got != want {
			t.Errorf("resourceLabel(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestOwner(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "not-controller"},
		{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", Controller: ptr.To(true)},
	}}}
	if got := owner(p); got != "apps/v1/namespaces/ns/replicasets/web-1" {
		t.Errorf("owner = %q", got)
	}
	if got := owner(&corev1.Pod{}); got != "" {
		t.Errorf("owner of a bare pod = %q", got)
	}
}

// Unbound pods and bound-but-not-running pods each report how long they
// have existed; running, terminal and deleting pods report nothing.
func TestPodWaitingTimes(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(created.Add(90 * time.Second))
	c := newController(Options{Clock: clk})
	pod := func(name, node string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), CreationTimestamp: metav1.NewTime(created)},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: created}
		}
		return p
	}
	c.updatePods([]*corev1.Pod{
		pod("pending", "", corev1.PodPending, false),
		pod("bound", "n1", corev1.PodPending, false),
		pod("running", "n1", corev1.PodRunning, false),
		pod("done", "n1", corev1.PodSucceeded, false),
		pod("leaving", "", corev1.PodPending, true),
	}, nil)
	for _, tc := range []struct {
		gauge *metrics.Series
		name  string
		want  float64
		count int
	}{
		{metrics.PodsUnboundTime, "pending", 90, 1},
		{metrics.PodsUnstartedTime, "bound", 90, 1},
	} {
		if got := testutil.CollectAndCount(tc.gauge); got != tc.count {
			t.Errorf("%d series, want %d", got, tc.count)
		}
		if got, _ := tc.gauge.Value(tc.name, "ns"); got != tc.want {
			t.Errorf("%s: %g s, want %g", tc.name, got, tc.want)
		}
	}
}
