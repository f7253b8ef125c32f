package provisioning

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-logr/logr"

	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// maxExamplePods bounds the pod names one log line lists per reason.
const maxExamplePods = 3

// describeReasons renders a pod's typed reasons, one clause per NodePool
// in name order (existing capacity first), plus the NodePools the
// provisioner could not use at all, so the message says everything once.
func describeReasons(pe scheduling.PodError, skipped map[string]string) string {
	var clauses []string
	if pe.Existing != nil {
		clauses = append(clauses, "existing nodes: "+scheduling.Message(pe.Existing))
	}
	for _, name := range slices.Sorted(maps.Keys(pe.NodePools)) {
		clauses = append(clauses, fmt.Sprintf("nodepool %q: %s", name, scheduling.Message(pe.NodePools[name])))
	}
	for _, name := range slices.Sorted(maps.Keys(skipped)) {
		if _, ok := pe.NodePools[name]; ok {
			continue
		}
		clauses = append(clauses, fmt.Sprintf("nodepool %q skipped: %s", name, skipped[name]))
	}
	if len(clauses) == 0 {
		return "no nodepool can launch capacity (create a NodePool whose node class is ready)"
	}
	return strings.Join(clauses, "; ")
}

// publishUnschedulable sets the unschedulable-pod gauges from one batch:
// the total and the count per reason kind.
func publishUnschedulable(errs []scheduling.PodError) {
	byKind := map[string]int{}
	for kind, n := range scheduling.CountByKind(errs) {
		byKind[string(kind)] = n
	}
	kinds := make([]string, 0, len(scheduling.ReasonKinds))
	for _, k := range scheduling.ReasonKinds {
		kinds = append(kinds, string(k))
	}
	metrics.SetUnschedulable(controllerName, len(errs), byKind, kinds)
}

// logUnschedulable writes one log line for a whole batch of pods that fit
// nowhere: the pods grouped by identical reasons, each group with its pod
// count and a few example pods.
func logUnschedulable(logger logr.Logger, errs []scheduling.PodError, skipped map[string]string) {
	type group struct {
		count    int
		examples []string
	}
	groups := map[string]*group{}
	for _, pe := range errs {
		msg := describeReasons(pe, skipped)
		g := groups[msg]
		if g == nil {
			g = &group{}
			groups[msg] = g
		}
		g.count++
		if len(g.examples) < maxExamplePods {
			g.examples = append(g.examples, pe.Pod.Namespace+"/"+pe.Pod.Name)
		}
	}
	summary := make([]string, 0, len(groups))
	for _, msg := range slices.Sorted(maps.Keys(groups)) {
		g := groups[msg]
		summary = append(summary, fmt.Sprintf("%d pod(s) (e.g. %s): %s", g.count, strings.Join(g.examples, ", "), msg))
	}
	logger.Info("could not schedule pods", logging.Count, len(errs), logging.Reasons, summary)
}
