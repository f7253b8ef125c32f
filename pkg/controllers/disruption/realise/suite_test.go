// Package realise_test judges consolidation's replay of kube-scheduler
// (pkg/disruption, realise.go) with the real kube-scheduler: a command the
// engine decides is carried out on a real control plane, its nodes made
// Nodes, the pods that stay bound to them, and the pods it evicts created
// one at a time in the replay's order (smallest first, the order that
// hurts most); kube-scheduler's bindings must be the replay's placements
// (where the replay's scores tie, one of the tied nodes: the replay then
// follows kube-scheduler's choice), and a pod kube-scheduler leaves
// pending must be one the replay finds no room for. It also judges the
// solver's count of topology-spread domains (spreaddomains_test.go): the
// solver and kube-scheduler place one pod on the same nodes.
//
// kube-scheduler runs with two profiles: its defaults (NodeResourcesFit
// LeastAllocated) and mostAllocated. The engine reads the same
// configuration through pkg/schedulerconfig, as the controller reads
// SCHEDULER_CONFIG.
package realise_test

import (
	"testing"

	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/test"
)

// mostAllocated is the profile whose NodeResourcesFit scores
// MostAllocated (bin packing).
const mostAllocated = "most-allocated"

// schedulerProfiles are kube-scheduler's profiles in these tests, and
// the SCHEDULER_CONFIG the engine is given.
const schedulerProfiles = `profiles:
- schedulerName: default-scheduler
- schedulerName: ` + mostAllocated + `
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
`

func TestMain(m *testing.M) {
	test.Main(m, controlplane.Options{Scheduler: true, SchedulerProfiles: schedulerProfiles})
}
