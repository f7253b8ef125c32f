package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodDecisionsFollowAPodFromSeenToRunning walks one pod through the
// provisioner's verdicts and the kubelet's progress, publishing at each
// step, and checks the provisioning gauges and histograms.
func TestPodDecisionsFollowAPodFromSeenToRunning(t *testing.T) {
	d := NewPodDecisionTimes()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	other := pod.DeepCopy()
	other.Name, other.UID = "stuck", "u2"

	d.Seen(&pod, t0)
	if len(d.pods) != 0 {
		t.Fatal("remembered a pod before anything publishes")
	}
	d.Publish(nil, t0)
	d.Seen(&pod, t0)
	d.Seen(other, t0)
	d.Seen(&pod, t0.Add(time.Second)) // only the first sight counts
	decisions, startups := sampleCount(t, PodsSchedulingDecisionDuration), sampleCount(t, PodsProvisioningStartupDuration)
	d.Publish([]*corev1.Pod{&pod, other}, t0.Add(2*time.Second))
	if got := value(PodsProvisioningSchedulingUndecidedTime, "web", "default"); got != 2 {
		t.Errorf("undecided = %v, want 2", got)
	}

	d.Decided(&pod, t0.Add(3*time.Second))
	d.Unschedulable(other, t0.Add(3*time.Second))
	d.Publish([]*corev1.Pod{&pod, other}, t0.Add(5*time.Second))
	if got := value(PodsProvisioningUnboundTime, "web", "default", "false"); got != 2 {
		t.Errorf("provisioning unbound = %v, want 2", got)
	}
	if got := testutil.CollectAndCount(PodsProvisioningSchedulingUndecidedTime); got != 0 {
		t.Errorf("%d undecided series after both pods got a verdict, want 0", got)
	}

	pod.Spec.NodeName = "node-a"
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(7 * time.Second))}}
	d.Publish([]*corev1.Pod{&pod, other}, t0.Add(8*time.Second))
	if got := value(PodsProvisioningUnstartedTime, "web", "default"); got != 5 {
		t.Errorf("provisioning unstarted = %v, want 5", got)
	}
	if got := testutil.CollectAndCount(PodsProvisioningUnboundTime); got != 0 {
		t.Errorf("%d unbound series after the pod bound, want 0", got)
	}

	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(9 * time.Second))})
	d.Publish([]*corev1.Pod{&pod}, t0.Add(10*time.Second))
	if got := testutil.CollectAndCount(PodsProvisioningUnstartedTime); got != 0 {
		t.Errorf("%d unstarted series after the pod ran, want 0", got)
	}
	if got := sampleCount(t, PodsSchedulingDecisionDuration) - decisions; got != 2 {
		t.Errorf("%d scheduling decisions observed, want 2 (one per pod)", got)
	}
	if got := sampleCount(t, PodsProvisioningStartupDuration) - startups; got != 1 {
		t.Errorf("%d provisioning startups observed, want 1", got)
	}
	if len(d.pods) != 0 {
		t.Errorf("still remembers %d pods after one ran and the other went", len(d.pods))
	}
}

func sampleCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// value is the published value of s's series of labels (0 if none).
func value(s *Series, labels ...string) float64 {
	v, _ := s.Value(labels...)
	return v
}
