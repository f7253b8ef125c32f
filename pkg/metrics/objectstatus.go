package metrics

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ObjectStatus is one kind's per-object status gauges (operatorpkg's
// <kind>_status_condition_count, <kind>_status_condition_current_status_seconds
// and <kind>_termination_current_time_seconds), computed when a scrape
// reads them from the conditions and deletion time each object had at its
// last reconcile.
//
// Gauge vectors kept two series of five labels for every condition of
// every NodeClaim, Node and NodePool (about 1.4 KiB each: 15 MB at 1,000
// nodes), and went stale between reconciles, so every object was
// reconciled again every 10 s only to move its current_status_seconds on.
// Here an object costs its map entry; its conditions are the informer
// cache's own slice.
type ObjectStatus struct {
	count, seconds, termination *prometheus.Desc

	mu      sync.RWMutex
	clock   clock.PassiveClock
	objects map[types.NamespacedName]objectStatus
}

// objectStatus is what one object's gauges are computed from.
type objectStatus struct {
	conditions []metav1.Condition
	deleted    *metav1.Time
}

// newObjectStatus defines and registers the three gauges of kind (lower
// case) under namespace.
func newObjectStatus(namespace, kind string) *ObjectStatus {
	object := []string{LabelNamespace, LabelName, LabelConditionType, LabelConditionStatus, LabelReason}
	gauge := func(subsystem, name, help string, labels []string) *prometheus.Desc {
		define("gauge", namespace, subsystem, name, help, labels)
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, name), help, labels, nil)
	}
	o := &ObjectStatus{
		count: gauge(kind+"_status_condition", "count",
			"The number of a condition for a given "+kind+", type and status (1 while the object has it). e.g. Alarm := Ready=False > 0", object),
		seconds: gauge(kind+"_status_condition", "current_status_seconds",
			"The current amount of time in seconds that a status condition of a "+kind+" has been in a specific state. Alarm := P99(Ready=Unknown) > 5 minutes", object),
		termination: gauge(kind+"_termination", "current_time_seconds",
			"The current amount of time in seconds that a "+kind+" has been in terminating state.", []string{LabelNamespace, LabelName}),
		clock:   clock.RealClock{},
		objects: map[types.NamespacedName]objectStatus{},
	}
	crmetrics.Registry.MustRegister(o)
	return o
}

// SetClock sets the clock the ages are computed with (tests).
func (o *ObjectStatus) SetClock(c clock.PassiveClock) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.clock = c
}

// Set records an object's conditions (not copied: the caller must not
// change them) and, if it is being deleted, when; it returns the
// conditions the object had when last set, from which the status
// controller sees transitions.
func (o *ObjectStatus) Set(key types.NamespacedName, conditions []metav1.Condition, deleted *metav1.Time) (previous []metav1.Condition) {
	o.mu.Lock()
	defer o.mu.Unlock()
	previous = o.objects[key].conditions
	o.objects[key] = objectStatus{conditions: conditions, deleted: deleted}
	return previous
}

// Delete forgets a gone object; it returns when the object was deleted,
// if it was seen being deleted.
func (o *ObjectStatus) Delete(key types.NamespacedName) (deleted *metav1.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	deleted = o.objects[key].deleted
	delete(o.objects, key)
	return deleted
}

// Describe implements prometheus.Collector.
func (o *ObjectStatus) Describe(ch chan<- *prometheus.Desc) {
	ch <- o.count
	ch <- o.seconds
	ch <- o.termination
}

// Collect implements prometheus.Collector.
func (o *ObjectStatus) Collect(ch chan<- prometheus.Metric) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	now := o.clock.Now()
	send := func(desc *prometheus.Desc, v float64, labels ...string) {
		// A value that is not UTF-8 would fail the whole scrape: that one
		// series is left out instead.
		if m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, v, labels...); err == nil {
			ch <- m
		}
	}
	for key, s := range o.objects {
		for i, c := range s.conditions {
			// Two conditions of one type (a Node's list is not checked
			// for it) would be one series twice, which fails a scrape.
			if slices.ContainsFunc(s.conditions[:i], func(p metav1.Condition) bool { return p.Type == c.Type }) {
				continue
			}
			l := []string{key.Namespace, key.Name, c.Type, string(c.Status), c.Reason}
			send(o.count, 1, l...)
			send(o.seconds, now.Sub(c.LastTransitionTime.Time).Seconds(), l...)
		}
		if s.deleted != nil {
			send(o.termination, now.Sub(s.deleted.Time).Seconds(), key.Namespace, key.Name)
		}
	}
}
