package livemodel

import "github.com/joiner-dev/joiner/pkg/scheduling"

// Gang is a set of pods planned as one unit, all placed or none: the plan
// and the snapshot it was made on, from which its NodeClaims are built. The
// provisioner makes it (it serialises gangs with its batches) and the
// ProvisioningRequest controller holds it between planning and launching.
type Gang struct {
	Plan *scheduling.Plan
	// Snapshot is the live model the plan was made on.
	Snapshot *Snapshot
}

// Placed reports whether the plan placed every pod.
func (g *Gang) Placed() bool { return len(g.Plan.Unschedulable) == 0 }
