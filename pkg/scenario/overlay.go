package scenario

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-dev/joiner/pkg/overlay"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// applyOverlays puts the input's NodeOverlays on each NodePool's instance
// types, as joiner does with the NodeOverlay gate on: all of them, or
// none while two of equal weight conflict (then a note says so).
func (m *Manifests) applyOverlays(snap *scheduling.Snapshot) {
	m.overlayNotes = nil
	if len(m.overlays) == 0 {
		return
	}
	pools := make([]*v1.NodePool, 0, len(m.apiNodePools))
	for _, np := range m.apiNodePools {
		if _, ok := snap.InstanceTypes[np.Name]; ok {
			pools = append(pools, np)
		}
	}
	if conflicts := overlay.Evaluate(m.overlays, pools, snap.InstanceTypes); len(conflicts) > 0 {
		c := conflicts[0]
		m.overlayNotes = append(m.overlayNotes, fmt.Sprintf("NodeOverlays %s and %s conflict (same weight, different values for %s): no NodeOverlay is applied, as joiner applies none until it is resolved", c.A, c.B, c.What))
		return
	}
	for _, np := range pools {
		snap.InstanceTypes[np.Name] = overlay.Apply(m.overlays, np, snap.InstanceTypes[np.Name])
	}
	m.overlayNotes = append(m.overlayNotes, fmt.Sprintf("applied %d NodeOverlay(s) to the instance types (joiner needs --feature-gates=NodeOverlay=true to do the same)", len(m.overlays)))
}

// OverlayNotes says what the last Snapshot did with the input's
// NodeOverlays ("" when there were none).
func (m *Manifests) OverlayNotes() []string { return m.overlayNotes }

func decodeOverlay(js []byte) (*v1alpha1.NodeOverlay, error) {
	o := &v1alpha1.NodeOverlay{}
	if err := decodeStrict(js, o); err != nil {
		return nil, err
	}
	if o.Name == "" {
		return nil, fmt.Errorf("metadata.name: must be set")
	}
	if o.Spec.Price != nil && o.Spec.PriceAdjustment != nil {
		return nil, fmt.Errorf("spec: set either price or priceAdjustment, not both")
	}
	for _, r := range []string{"cpu", "memory", "ephemeral-storage", "pods"} {
		if _, ok := o.Spec.Capacity[corev1.ResourceName(r)]; ok {
			return nil, fmt.Errorf("spec.capacity: %s cannot be overlaid; capacity only adds extended resources", r)
		}
	}
	return o, nil
}
