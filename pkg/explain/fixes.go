package explain

import (
	"fmt"
	"sort"

	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/simulate"
)

// fixFor says what would remove a rejection of kind, by who can act on it.
var fixFor = map[scheduling.ReasonKind]string{
	scheduling.KindInvalidPod:           "fix the pod's spec (the message names the field); joiner cannot place it until the pod changes",
	scheduling.KindVolume:               "check the pod's PersistentVolumeClaims: they must exist, and a bound volume's zone or a StorageClass's allowedTopologies must be a zone the NodePool can launch in",
	scheduling.KindTaint:                "add a toleration for the NodePool's taint to the pod, or remove the taint from the NodePool template",
	scheduling.KindRequirement:          "make the pod's nodeSelector/nodeAffinity and the NodePool's requirements overlap (or target another NodePool)",
	scheduling.KindUndefinedLabel:       "the pod selects a label no NodePool sets: add it to the NodePool's template labels or requirements, or drop it from the pod",
	scheduling.KindHostPort:             "the host port is taken on every candidate node: change or drop the pod's hostPort, or allow more nodes",
	scheduling.KindNoInstanceType:       "widen the NodePool's requirements (instance families, sizes, zones, capacity types) or shrink the pod's requests",
	scheduling.KindInsufficientResource: "lower the pod's requests, or allow larger instance types in the NodePool's requirements",
	scheduling.KindMinValues:            "lower the NodePool's minValues or allow more instance types",
	scheduling.KindTopology:             "relax the pod's topology spread (maxSkew, whenUnsatisfiable: ScheduleAnyway) or affinity, or let the NodePool launch in more zones",
	scheduling.KindLimit:                "raise the NodePool's spec.limits, or free capacity in it",
	scheduling.KindNodeLabels:           "no existing node has the labels the pod requires; a NodePool must launch one",
	scheduling.KindVolumeLimit:          "the existing nodes are at their volume attach limit; a new node is needed",
	scheduling.KindMarkedForDeletion:    "the fitting nodes are being deleted or disrupted; a new node is needed",
	scheduling.KindNotChosen:            "other pending pods took the room first; the next batch retries",
	scheduling.KindNoCapacity:           "no capacity is available in the cloud for the allowed types right now: allow more instance types, zones or capacity types",
	scheduling.KindDynamicResources:     "the pod claims devices through Dynamic Resource Allocation and IGNORE_DRA_REQUESTS=true keeps joiner from provisioning it: set IGNORE_DRA_REQUESTS=false (docs/dra.md), or request the device plugin's extended resource instead of a claim",
	scheduling.KindDevices:              "no instance type the NodePool allows publishes enough devices that meet the claim's DeviceClass and selectors (the message names them): allow instance types with such devices, or widen the selectors; see docs/dra.md for what joiner plans",
}

// fixes are the distinct fixes for the NodePools' rejection kinds,
// sorted.
func fixes(rs []Rejection) []string {
	seen := map[scheduling.ReasonKind]bool{}
	var out []string
	for _, r := range rs {
		// Existing nodes say why no node fits; the NodePools say what a
		// new node needs, which is the actionable part.
		if r.Where == simulate.ExistingNodesKey || seen[r.Kind] {
			continue
		}
		seen[r.Kind] = true
		if f, ok := fixFor[r.Kind]; ok {
			out = append(out, fmt.Sprintf("%s: %s", r.Kind, f))
		}
	}
	sort.Strings(out)
	return out
}
