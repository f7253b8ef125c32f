package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/joiner-dev/joiner/pkg/gang"
	"github.com/joiner-dev/joiner/pkg/scenario"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// gangNotes plans each ProvisioningRequest of the input as one unit, alone,
// on the input's capacity (existing capacity only for check-capacity), as
// the controller does before a batch, and says what it would do: every pod
// placed and the nodes launched all or none, or nothing launched and why.
func gangNotes(m *scenario.Manifests, snap *scheduling.Snapshot) ([]string, error) {
	gangs, err := m.Gangs()
	if err != nil {
		return nil, err
	}
	var notes []string
	for _, g := range gangs {
		s := *snap
		s.Pods = g.Pods
		if g.ExistingOnly {
			s.NodePools = nil
			s.InstanceTypes = map[string][]*scheduling.InstanceType{}
		}
		plan, err := solve(&s)
		if err != nil {
			return nil, fmt.Errorf("planning ProvisioningRequest %s/%s: %w", g.Request.Namespace, g.Request.Name, err)
		}
		head := fmt.Sprintf("ProvisioningRequest %s/%s (%s, %s)", g.Request.Namespace, g.Request.Name, g.Request.Spec.ProvisioningClassName, count(len(g.Pods), "pod"))
		if len(plan.Unschedulable) > 0 {
			notes = append(notes, head+": not provisioned: "+gang.Unplaced(plan, len(g.Pods), g.ExistingOnly))
			continue
		}
		onExisting := 0
		for _, e := range plan.Existing {
			onExisting += len(e.Pods)
		}
		if len(plan.NewNodeClaims) == 0 {
			notes = append(notes, fmt.Sprintf("%s: provisioned: every pod fits the existing capacity (%d pods), which is booked for them", head, onExisting))
			continue
		}
		types := map[string]int{}
		for _, nc := range plan.NewNodeClaims {
			if len(nc.InstanceTypes) > 0 {
				types[nc.InstanceTypes[0].Name]++
			}
		}
		var parts []string
		for name, n := range types {
			parts = append(parts, fmt.Sprintf("%d× %s", n, name))
		}
		sort.Strings(parts)
		notes = append(notes, fmt.Sprintf("%s: provisioned as one unit: %d new nodes (%s, cheapest options), launched all or none; %d pods on existing capacity",
			head, len(plan.NewNodeClaims), strings.Join(parts, ", "), onExisting))
	}
	return notes, nil
}
