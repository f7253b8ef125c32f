package operator_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// nodeTimes is when the latency benchmark saw each of the NodePool's
// Nodes pass the steps between its creation and its first pod: the
// stages a pod's wait is made of, watched to the millisecond.
type nodeTimes struct {
	mu sync.Mutex
	// first is when each step was first seen, per Node.
	first map[string]map[string]time.Time
}

// Steps of a Node, as nodeTimes records them.
const (
	stepSeen         = "seen"
	stepReady        = "Ready"
	stepRegistered   = "unregistered taint gone"
	stepSchedulable  = "schedulable"
	stepInitialized  = "initialized label"
	stepNotReadySeen = "not-ready taint seen"
)

// watchNodes records the steps of the NodePool's Nodes until ctx ends.
func watchNodes(ctx context.Context, t *testing.T, kube kubernetes.Interface, pool string) *nodeTimes {
	nt := &nodeTimes{first: map[string]map[string]time.Time{}}
	selector := v1.LabelNodePool + "=" + pool
	list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return kube.CoreV1().Nodes().Watch(ctx, o)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, open := <-w.ResultChan():
				if !open {
					return
				}
				if node, ok := ev.Object.(*corev1.Node); ok {
					nt.observe(node, time.Now())
				}
			}
		}
	}()
	return nt
}

func (nt *nodeTimes) observe(node *corev1.Node, at time.Time) {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	steps := nt.first[node.Name]
	if steps == nil {
		steps = map[string]time.Time{}
		nt.first[node.Name] = steps
	}
	mark := func(step string) {
		if _, seen := steps[step]; !seen {
			steps[step] = at
		}
	}
	mark(stepSeen)
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
			mark(stepReady)
		}
	}
	unregistered, blocking := false, false
	for _, taint := range node.Spec.Taints {
		switch taint.Key {
		case v1.TaintKeyUnregistered:
			unregistered = true
		case corev1.TaintNodeNotReady:
			mark(stepNotReadySeen)
		}
		if taint.Effect != corev1.TaintEffectPreferNoSchedule {
			blocking = true
		}
	}
	if !unregistered {
		mark(stepRegistered)
	}
	if ready && !blocking && !node.Spec.Unschedulable {
		mark(stepSchedulable)
	}
	if node.Labels[v1.LabelNodeInitialized] == "true" {
		mark(stepInitialized)
	}
}

// report logs, over the Nodes, the percentiles of the time between
// steps, and of the time from a Node being schedulable to its first pod's
// binding (firstBound: when a pod was first seen bound to each Node, since
// start).
func (nt *nodeTimes) report(t *testing.T, start time.Time, firstBound map[string]time.Duration) {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	type stage struct{ from, to string }
	stages := []stage{
		{stepSeen, stepReady},
		{stepSeen, stepRegistered},
		{stepRegistered, stepSchedulable},
		{stepSchedulable, stepInitialized},
	}
	var lines []string
	for _, st := range stages {
		var ds []time.Duration
		for _, steps := range nt.first {
			from, ok1 := steps[st.from]
			to, ok2 := steps[st.to]
			if ok1 && ok2 {
				ds = append(ds, to.Sub(from))
			}
		}
		lines = append(lines, fmt.Sprintf("  %-26s → %-26s %s", st.from, st.to, percentiles(ds)))
	}
	var toBind []time.Duration
	notReady := 0
	for name, steps := range nt.first {
		if _, ok := steps[stepNotReadySeen]; ok {
			notReady++
		}
		sched, ok := steps[stepSchedulable]
		bound, ok2 := firstBound[name]
		if ok && ok2 {
			toBind = append(toBind, bound-sched.Sub(start))
		}
	}
	lines = append(lines, fmt.Sprintf("  %-26s → %-26s %s", stepSchedulable, "its first pod bound", percentiles(toBind)))
	t.Logf("nodes (%d; %d carried node.kubernetes.io/not-ready), time between steps:\n%s", len(nt.first), notReady, strings.Join(lines, "\n"))
}
