package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// LabelDynamicResources is "true" for pods that claim dynamic resources
// (DRA).
const LabelDynamicResources = "dynamic_resources"

// Karpenter's provisioning latencies: measured from the moment the
// provisioner first saw a pending pod, or first decided it can schedule
// (nominated it to a node), rather than from the pod's creation.
var (
	PodsSchedulingDecisionDuration = NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "pods", Name: "scheduling_decision_duration_seconds",
		Help: "The time it takes for the provisioner to first try to schedule a pod after it's been seen.", Buckets: durationBuckets,
	})
	PodsProvisioningSchedulingUndecidedTime = NewSeries(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "pods", Name: "provisioning_scheduling_undecided_time_seconds",
		Help: "The time from when the provisioner has seen a pod without making a scheduling decision for it. Calculated from a point in memory, not the pod's creation.",
	}, LabelName, LabelNamespace)
	PodsProvisioningUnboundTime = NewSeries(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "pods", Name: "provisioning_unbound_time_seconds",
		Help: "The time from when the provisioner first thinks the pod can schedule until it binds, for pods not bound yet. Calculated from a point in memory, not the pod's creation.",
	}, LabelName, LabelNamespace, LabelDynamicResources)
	PodsProvisioningUnstartedTime = NewSeries(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "pods", Name: "provisioning_unstarted_time_seconds",
		Help: "The time from when the provisioner first thinks the pod can schedule until the pod is running, for pods not running yet. Calculated from a point in memory, not the pod's creation.",
	}, LabelName, LabelNamespace)
	PodsProvisioningBoundDuration = NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "pods", Name: "provisioning_bound_duration_seconds",
		Help: "The time from when the provisioner first thinks the pod can schedule until it binds. Calculated from a point in memory, not the pod's creation.", Buckets: lifetimeBuckets,
	}, LabelDynamicResources)
	PodsProvisioningStartupDuration = NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "pods", Name: "provisioning_startup_duration_seconds",
		Help: "The time from when the provisioner first thinks the pod can schedule until the pod is running. Calculated from a point in memory, not the pod's creation.", Buckets: lifetimeBuckets,
	})
)

// NewPodDecisionTimes returns an empty memory of decision times. The
// cluster model's nominations own the process's one (the provisioner
// writes it through them, the cluster state observability publishes it);
// the gauges it sets are process-wide, as the metrics are.
func NewPodDecisionTimes() *PodDecisionTimes {
	return &PodDecisionTimes{pods: map[types.UID]*podTimes{},
		undecided: PodsProvisioningSchedulingUndecidedTime,
		unbound:   PodsProvisioningUnboundTime,
		unstarted: PodsProvisioningUnstartedTime}
}

// PodDecisionTimes is the memory behind the provisioning latencies.
type PodDecisionTimes struct {
	mu   sync.Mutex
	pods map[types.UID]*podTimes
	// publishing is set by the first Publish: until something publishes
	// (DISABLE_CLUSTER_STATE_OBSERVABILITY), nothing is remembered, so
	// the memory cannot grow without the Publish that prunes it.
	publishing bool
	// The per-pod gauges, kept across Publish calls (see Series).
	undecided, unbound, unstarted *Series
}

type podTimes struct {
	seen, decided time.Time
	// judged is set once the provisioner gave any verdict, a placement or
	// "fits nowhere".
	judged          bool
	bound           bool
	dynamicResource bool
}

// Seen records that the provisioner considered a pending pod at now; only
// the first time counts.
func (d *PodDecisionTimes) Seen(pod *corev1.Pod, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.publishing {
		return
	}
	if _, ok := d.pods[pod.UID]; !ok {
		d.pods[pod.UID] = &podTimes{seen: now, dynamicResource: len(pod.Spec.ResourceClaims) > 0}
	}
}

// Decided records that the provisioner decided at now where the pod can
// run (a nomination to a new or existing node); only the first decision
// counts, and it observes how long the decision took since Seen.
func (d *PodDecisionTimes) Decided(pod *corev1.Pod, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.publishing {
		return
	}
	t, ok := d.pods[pod.UID]
	if !ok {
		t = &podTimes{seen: now, dynamicResource: len(pod.Spec.ResourceClaims) > 0}
		d.pods[pod.UID] = t
	}
	if t.decided.IsZero() {
		t.decided = now
	}
	d.judge(t, now)
}

// Unschedulable records that the provisioner found at now that the pod
// fits nowhere: a decision, but not one that it can schedule, so the
// provisioning latencies do not start.
func (d *PodDecisionTimes) Unschedulable(pod *corev1.Pod, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.pods[pod.UID]; ok {
		d.judge(t, now)
	}
}

// judge observes the time to the pod's first verdict.
func (d *PodDecisionTimes) judge(t *podTimes, now time.Time) {
	if !t.judged {
		t.judged = true
		PodsSchedulingDecisionDuration.Observe(now.Sub(t.seen).Seconds())
	}
}

// Publish sets the provisioning gauges for pods (every pod of the
// cluster) at now, observes the bound and startup durations of the pods
// that bound or started since the last call, and forgets pods that are
// gone or running.
func (d *PodDecisionTimes) Publish(pods []*corev1.Pod, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.publishing = true
	live := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		t, ok := d.pods[p.UID]
		if !ok {
			continue
		}
		live[p.UID] = true
		if t.decided.IsZero() {
			if p.Spec.NodeName == "" && !t.judged {
				d.undecided.Set(now.Sub(t.seen).Seconds(), p.Name, p.Namespace)
			}
			continue
		}
		dra := strconv.FormatBool(t.dynamicResource)
		if p.Spec.NodeName == "" {
			d.unbound.Set(now.Sub(t.decided).Seconds(), p.Name, p.Namespace, dra)
			continue
		}
		if !t.bound {
			t.bound = true
			PodsProvisioningBoundDuration.WithLabelValues(dra).Observe(since(p, corev1.PodScheduled, t.decided, now))
		}
		if p.Status.Phase != corev1.PodRunning {
			d.unstarted.Set(now.Sub(t.decided).Seconds(), p.Name, p.Namespace)
			continue
		}
		PodsProvisioningStartupDuration.Observe(since(p, corev1.PodReady, t.decided, now))
		live[p.UID] = false
	}
	d.undecided.Flush()
	d.unbound.Flush()
	d.unstarted.Flush()
	for uid := range d.pods {
		if !live[uid] {
			delete(d.pods, uid)
		}
	}
}

// since is the time from decided to the moment the pod's condition became
// True, or to now when the pod does not say.
func since(p *corev1.Pod, cond corev1.PodConditionType, decided, now time.Time) float64 {
	for _, c := range p.Status.Conditions {
		if c.Type == cond && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			if d := c.LastTransitionTime.Sub(decided).Seconds(); d >= 0 {
				return d
			}
			return 0
		}
	}
	return now.Sub(decided).Seconds()
}
