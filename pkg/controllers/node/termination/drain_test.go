package termination

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/test"
)

type podOpt func(*corev1.Pod)

func daemon(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}
}
func critical(p *corev1.Pod) { p.Spec.PriorityClassName = "system-node-critical" }

// terminatingAt marks the pod deleted with the given deletion deadline.
func terminatingAt(at time.Time) podOpt {
	return func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: at} }
}
func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func grace(s int64) podOpt {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To(s) }
}
func protected(p *corev1.Pod) {
	p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
}
func protectedFor(d string, started time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: d}
		p.Status.StartTime = &metav1.Time{Time: started}
	}
}
func mirror(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }
func toleratesAll(p *corev1.Pod) {
	p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
}

func pod(name string, opts ...podOpt) *corev1.Pod {
	p := test.Pod(test.PodOptions{Namespace: "ns", Name: name, Phase: corev1.PodRunning})
	for _, o := range opts {
		o(p)
	}
	return p
}

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestPlanDrain(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		pods        []*corev1.Pod
		deadline    time.Time
		wantEvict   []string
		wantDelete  []string
		wantGrace   []int64
		wantWaiting int
		wantDone    bool
	}{
		{name: "empty node is drained", wantEvict: []string{}, wantDelete: []string{}, wantDone: true},
		{
			name:        "workloads go before daemons and critical pods",
			pods:        []*corev1.Pod{pod("ds", daemon), pod("crit", critical), pod("app"), pod("critds", critical, daemon)},
			wantEvict:   []string{"app"},
			wantDelete:  []string{},
			wantWaiting: 3,
		},
		{
			name:        "daemons go once workloads are gone",
			pods:        []*corev1.Pod{pod("ds", daemon), pod("crit", critical), pod("critds", critical, daemon)},
			wantEvict:   []string{"ds"},
			wantDelete:  []string{},
			wantWaiting: 2,
		},
		{
			name:        "critical daemons go last",
			pods:        []*corev1.Pod{pod("critds", critical, daemon)},
			wantEvict:   []string{"critds"},
			wantDelete:  []string{},
			wantWaiting: 0,
		},
		{
			name:       "finished, static and disrupted-tolerating pods do not block",
			pods:       []*corev1.Pod{pod("done", phase(corev1.PodSucceeded)), pod("failed", phase(corev1.PodFailed)), pod("static", mirror), pod("agent", daemon, toleratesAll)},
			wantEvict:  []string{},
			wantDelete: []string{},
			wantDone:   true,
		},
		{
			name:        "terminating pods are waited for, not evicted again",
			pods:        []*corev1.Pod{pod("going", terminatingAt(now.Add(10*time.Second))), pod("app")},
			wantEvict:   []string{"app"},
			wantDelete:  []string{},
			wantWaiting: 1,
		},
		{
			name:       "pods stuck terminating past their deadline no longer block (their kubelet is gone)",
			pods:       []*corev1.Pod{pod("stuck", terminatingAt(now.Add(-2*time.Minute)))},
			wantEvict:  []string{},
			wantDelete: []string{},
			wantDone:   true,
		},
		{
			name:        "do-not-disrupt holds a pod without a deadline",
			pods:        []*corev1.Pod{pod("keep", protected)},
			wantEvict:   []string{},
			wantDelete:  []string{},
			wantWaiting: 1,
		},
		{
			// Issue 34: the drain read any value but "false" as "forever", so
			// a pod asking for one minute held its node indefinitely.
			name:        "do-not-disrupt with a duration holds the pod only that long after it started",
			pods:        []*corev1.Pod{pod("young", protectedFor("1m", now.Add(-30*time.Second))), pod("old", protectedFor("1m", now.Add(-2*time.Minute)))},
			wantEvict:   []string{"old"},
			wantDelete:  []string{},
			wantWaiting: 1,
		},
		{
			name:       "do-not-disrupt false protects nothing",
			pods:       []*corev1.Pod{pod("app", func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "false"} })},
			wantEvict:  []string{"app"},
			wantDelete: []string{},
		},
		{
			name:       "past the deadline everything is deleted now, do-not-disrupt included",
			pods:       []*corev1.Pod{pod("keep", protected), pod("app")},
			deadline:   now.Add(-time.Second),
			wantEvict:  []string{},
			wantDelete: []string{"keep", "app"},
			wantGrace:  []int64{1, 1},
		},
		{
			// Issue 34 (upstream's "should drain pods on a node in order"):
			// an evicted workload pod still running its preStop hook held
			// nothing back, so the daemons were evicted at once.
			name:        "a group still terminating holds the next group",
			pods:        []*corev1.Pod{pod("going", terminatingAt(now.Add(50*time.Second))), pod("agent", daemon), pod("dns", critical)},
			wantEvict:   []string{},
			wantDelete:  []string{},
			wantWaiting: 3,
		},
		{
			name:        "a protected workload holds the daemons",
			pods:        []*corev1.Pod{pod("keep", protected), pod("agent", daemon)},
			wantEvict:   []string{},
			wantDelete:  []string{},
			wantWaiting: 2,
		},
		{
			name:        "critical daemons wait for critical pods still terminating",
			pods:        []*corev1.Pod{pod("dns", critical, terminatingAt(now.Add(30*time.Second))), pod("cni", critical, daemon)},
			wantEvict:   []string{},
			wantDelete:  []string{},
			wantWaiting: 2,
		},
		{
			name:        "a pod stuck terminating no longer holds the next group",
			pods:        []*corev1.Pod{pod("stuck", terminatingAt(now.Add(-2*time.Minute))), pod("agent", daemon)},
			wantEvict:   []string{"agent"},
			wantDelete:  []string{},
			wantWaiting: 0,
		},
		{
			name:        "a terminating pod whose deletion ends after the deadline is deleted again with the time left",
			pods:        []*corev1.Pod{pod("slow", terminatingAt(now.Add(10*time.Minute)))},
			deadline:    now.Add(2 * time.Minute),
			wantEvict:   []string{},
			wantDelete:  []string{"slow"},
			wantGrace:   []int64{120},
			wantWaiting: 0,
		},
		{
			name:        "a pod deleted for the deadline holds the next group",
			pods:        []*corev1.Pod{pod("slow", grace(600)), pod("agent", daemon)},
			deadline:    now.Add(5 * time.Minute),
			wantEvict:   []string{},
			wantDelete:  []string{"slow"},
			wantGrace:   []int64{300},
			wantWaiting: 1,
		},
		{
			name:        "a pod whose grace period would overrun the deadline is deleted early with the time left",
			pods:        []*corev1.Pod{pod("slow", grace(600)), pod("fast", grace(10))},
			deadline:    now.Add(5 * time.Minute),
			wantEvict:   []string{"fast"},
			wantDelete:  []string{"slow"},
			wantGrace:   []int64{300},
			wantWaiting: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planDrain(tt.pods, now, tt.deadline)
			if g := names(got.Evict); !equal(g, tt.wantEvict) {
				t.Errorf("evict = %v, want %v", g, tt.wantEvict)
			}
			if g := names(got.Delete); !equal(g, tt.wantDelete) {
				t.Errorf("delete = %v, want %v", g, tt.wantDelete)
			}
			if len(tt.wantGrace) > 0 && !equalInt(got.DeleteGrace, tt.wantGrace) {
				t.Errorf("delete grace = %v, want %v", got.DeleteGrace, tt.wantGrace)
			}
			if got.Waiting != tt.wantWaiting {
				t.Errorf("waiting = %d, want %d", got.Waiting, tt.wantWaiting)
			}
			if got.Done() != tt.wantDone {
				t.Errorf("done = %v, want %v", got.Done(), tt.wantDone)
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalInt(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
