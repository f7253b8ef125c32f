package pods_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/pods"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func pod(mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", CreationTimestamp: metav1.NewTime(t0)}}
	p.Status.Phase = corev1.PodRunning
	for _, m := range mods {
		m(p)
	}
	return p
}

func owned(kind string, controller bool) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: "o", UID: "u", Controller: ptr.To(controller)})
	}
}

func phase(ph corev1.PodPhase) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}

func terminating(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(t0.Add(time.Hour))) }

func mirrorAnnotated(p *corev1.Pod) {
	p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
}

func annotated(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func startedAt(at time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.StartTime = ptr.To(metav1.NewTime(at)) }
}

func toleratesDisrupted(p *corev1.Pod) {
	p.Spec.Tolerations = []corev1.Toleration{{Key: v1.TaintKeyDisrupted, Operator: corev1.TolerationOpExists}}
}

func TestIsReschedulable(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{name: "running workload pod", pod: pod(), want: true},
		{name: "pending workload pod", pod: pod(phase(corev1.PodPending)), want: true},
		{name: "succeeded", pod: pod(phase(corev1.PodSucceeded))},
		{name: "failed", pod: pod(phase(corev1.PodFailed))},
		{name: "terminating deployment pod", pod: pod(owned("ReplicaSet", true), terminating)},
		{name: "terminating StatefulSet pod: its replacement waits for it", pod: pod(owned("StatefulSet", true), terminating), want: true},
		{name: "finished StatefulSet pod", pod: pod(owned("StatefulSet", true), phase(corev1.PodSucceeded))},
		{name: "DaemonSet pod", pod: pod(owned("DaemonSet", true))},
		{name: "DaemonSet owner without controller: the autoscaler must place it", pod: pod(owned("DaemonSet", false)), want: true},
		{name: "mirror pod by annotation", pod: pod(mirrorAnnotated)},
		{name: "mirror pod by Node controller", pod: pod(owned("Node", true))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pods.IsReschedulable(tc.pod); got != tc.want {
				t.Errorf("IsReschedulable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIsOwnerless(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{name: "bare pod", pod: pod(), want: true},
		{name: "owner without controller: nothing recreates it", pod: pod(owned("ReplicaSet", false)), want: true},
		{name: "ReplicaSet pod", pod: pod(owned("ReplicaSet", true))},
		{name: "Job pod", pod: pod(owned("Job", true))},
		{name: "DaemonSet pod", pod: pod(owned("DaemonSet", true))},
		{name: "mirror pod by annotation", pod: pod(mirrorAnnotated)},
		{name: "mirror pod by Node controller", pod: pod(owned("Node", true))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pods.IsOwnerless(tc.pod); got != tc.want {
				t.Errorf("IsOwnerless = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClassification(t *testing.T) {
	for _, tc := range []struct {
		name                                              string
		pod                                               *corev1.Pod
		daemon, mirror, terminal, active, workload, drain bool
	}{
		{name: "running", pod: pod(), active: true, workload: true, drain: true},
		{name: "succeeded", pod: pod(phase(corev1.PodSucceeded)), terminal: true, workload: true},
		{name: "failed", pod: pod(phase(corev1.PodFailed)), terminal: true, workload: true},
		{name: "terminating", pod: pod(terminating), workload: true, drain: true},
		{name: "daemon", pod: pod(owned("DaemonSet", true)), daemon: true, active: true, drain: true},
		{name: "mirror", pod: pod(mirrorAnnotated), mirror: true, active: true},
		{name: "tolerates disrupted", pod: pod(toleratesDisrupted), active: true, workload: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pod
			for _, c := range []struct {
				what      string
				got, want bool
			}{
				{"IsOwnedByDaemonSet", pods.IsOwnedByDaemonSet(p), tc.daemon},
				{"IsMirror", pods.IsMirror(p), tc.mirror},
				{"IsTerminal", pods.IsTerminal(p), tc.terminal},
				{"IsActive", pods.IsActive(p), tc.active},
				{"IsWorkload", pods.IsWorkload(p), tc.workload},
				{"NeedsDrain", pods.NeedsDrain(p), tc.drain},
			} {
				if c.got != c.want {
					t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
				}
			}
		})
	}
}

func TestDoNotDisrupt(t *testing.T) {
	key := v1.AnnotationDoNotDisrupt
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		now  time.Time
		want bool
	}{
		{name: "no annotation", pod: pod(), now: t0},
		{name: "true blocks indefinitely", pod: pod(annotated(key, "true")), now: t0.Add(365 * 24 * time.Hour), want: true},
		{name: "false does not block", pod: pod(annotated(key, "false")), now: t0},
		{name: "empty does not block", pod: pod(annotated(key, "")), now: t0},
		{name: "duration protects after start", pod: pod(annotated(key, "1m"), startedAt(t0)), now: t0.Add(59 * time.Second), want: true},
		{name: "duration over: may be drained", pod: pod(annotated(key, "1m"), startedAt(t0)), now: t0.Add(time.Minute)},
		{name: "duration counts from start, not creation", pod: pod(annotated(key, "1m"), startedAt(t0.Add(time.Hour))), now: t0.Add(time.Hour + 30*time.Second), want: true},
		{name: "duration counts from creation before start", pod: pod(annotated(key, "1m"), phase(corev1.PodPending)), now: t0.Add(2 * time.Minute)},
		{name: "typo fails safe", pod: pod(annotated(key, "yes")), now: t0.Add(time.Hour), want: true},
		{name: "finished pod is not protected", pod: pod(annotated(key, "true"), phase(corev1.PodSucceeded)), now: t0},
		{name: "terminating pod is not protected", pod: pod(annotated(key, "true"), terminating), now: t0},
		{name: "daemon pod is protected", pod: pod(annotated(key, "true"), owned("DaemonSet", true)), now: t0, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pods.DoNotDisrupt(tc.pod, tc.now); got != tc.want {
				t.Errorf("DoNotDisrupt = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIsEvictable(t *testing.T) {
	key := v1.AnnotationDoNotDisrupt
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{name: "running", pod: pod(), want: true},
		{name: "daemon", pod: pod(owned("DaemonSet", true)), want: true},
		{name: "finished", pod: pod(phase(corev1.PodFailed))},
		{name: "terminating", pod: pod(terminating)},
		{name: "mirror", pod: pod(owned("Node", true))},
		{name: "tolerates disrupted", pod: pod(toleratesDisrupted)},
		{name: "do-not-disrupt", pod: pod(annotated(key, "true"))},
		{name: "do-not-disrupt duration over", pod: pod(annotated(key, "1m"), startedAt(t0.Add(-time.Hour))), want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pods.IsEvictable(tc.pod, t0); got != tc.want {
				t.Errorf("IsEvictable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIsProvisionable(t *testing.T) {
	unschedulable := func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{name: "unschedulable", pod: pod(unschedulable), want: true},
		{name: "not yet seen by the scheduler", pod: pod(phase(corev1.PodPending))},
		{name: "scheduling gated", pod: pod(unschedulable, func(p *corev1.Pod) { p.Status.Conditions[0].Reason = corev1.PodReasonSchedulingGated })},
		{name: "succeeded", pod: pod(unschedulable, phase(corev1.PodSucceeded))},
		{name: "bound", pod: pod(unschedulable, func(p *corev1.Pod) { p.Spec.NodeName = "n" })},
		{name: "preempting", pod: pod(unschedulable, func(p *corev1.Pod) { p.Status.NominatedNodeName = "n" })},
		{name: "terminating", pod: pod(unschedulable, terminating)},
		{name: "failed", pod: pod(unschedulable, phase(corev1.PodFailed))},
		{name: "mirror", pod: pod(unschedulable, mirrorAnnotated)},
		{name: "daemon", pod: pod(unschedulable, owned("DaemonSet", true))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pods.IsProvisionable(tc.pod); got != tc.want {
				t.Errorf("IsProvisionable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRequests(t *testing.T) {
	rl := func(cpu string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want string
	}{
		{name: "containers add up", spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: rl("1")}}, {Resources: corev1.ResourceRequirements{Requests: rl("500m")}}}}, want: "1500m"},
		{name: "a larger init container wins", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: rl("2")}}},
			Containers:     []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: rl("1")}}}}, want: "2"},
		{name: "a restartable sidecar adds to the containers", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: corev1.ResourceRequirements{Requests: rl("1")}}},
			Containers:     []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: rl("1")}}}}, want: "2"},
		{name: "overhead adds", spec: corev1.PodSpec{Overhead: rl("250m"), Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: rl("1")}}}}, want: "1250m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(func(p *corev1.Pod) { p.Spec = tc.spec })
			got := pods.Requests(p)[corev1.ResourceCPU]
			if want := resource.MustParse(tc.want); got.Cmp(want) != 0 {
				t.Errorf("cpu request = %s, want %s", got.String(), tc.want)
			}
			sum := pods.SumRequests([]*corev1.Pod{p, p})[corev1.ResourceCPU]
			got.Add(got)
			if sum.Cmp(got) != 0 {
				t.Errorf("SumRequests of two = %s, want %s", sum.String(), got.String())
			}
		})
	}
}

// TestRequestsAndLimits: the effective request is the larger of the
// containers' sum and any init container, plus the pod overhead.
func TestRequestsAndLimits(t *testing.T) {
	q := resource.MustParse
	p := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{
			{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("1")}, Limits: corev1.ResourceList{corev1.ResourceCPU: q("2")}}},
			{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m")}}},
		},
		InitContainers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("3")}}}},
		Overhead:       corev1.ResourceList{corev1.ResourceCPU: q("100m")},
	}}
	req, lim := pods.Requests(p), pods.Limits(p)
	if got := req[corev1.ResourceCPU]; got.Cmp(q("3100m")) != 0 {
		t.Errorf("cpu request %s, want 3100m", got.String())
	}
	if got := lim[corev1.ResourceCPU]; got.Cmp(q("2100m")) != 0 {
		t.Errorf("cpu limit %s, want 2100m", got.String())
	}
}
