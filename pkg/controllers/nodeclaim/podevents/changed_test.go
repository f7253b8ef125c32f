package podevents

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestChanged(t *testing.T) {
	now := metav1.Now()
	pod := func(node string, phase corev1.PodPhase, deleting bool, owner string) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			p.DeletionTimestamp = &now
		}
		if owner != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: owner, Name: "x", Controller: ptr.To(true)}}
		}
		return p
	}
	for _, tc := range []struct {
		name     string
		old, cur *corev1.Pod
		want     bool
	}{
		{name: "bound", old: pod("", corev1.PodPending, false, "ReplicaSet"), cur: pod("n1", corev1.PodPending, false, "ReplicaSet"), want: true},
		{name: "went terminal", old: pod("n1", corev1.PodRunning, false, ""), cur: pod("n1", corev1.PodSucceeded, false, ""), want: true},
		{name: "began terminating", old: pod("n1", corev1.PodRunning, false, ""), cur: pod("n1", corev1.PodRunning, true, ""), want: true},
		{name: "status churn", old: pod("n1", corev1.PodPending, false, ""), cur: pod("n1", corev1.PodRunning, false, "")},
		{name: "still pending", old: pod("", corev1.PodPending, false, ""), cur: pod("", corev1.PodPending, false, "")},
		{name: "daemonset pod bound", old: pod("", corev1.PodPending, false, "DaemonSet"), cur: pod("n1", corev1.PodPending, false, "DaemonSet")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Changed(tc.old, tc.cur); got != tc.want {
				t.Errorf("Changed = %v, want %v", got, tc.want)
			}
		})
	}
}
