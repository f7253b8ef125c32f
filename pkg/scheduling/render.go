package scheduling

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// Message renders a reason in Karpenter's words. It is the only place a
// Reason becomes text: pod events, logs, `joiner simulate` and the tests
// all read it from here.
func Message(r Reason) string {
	switch r := r.(type) {
	case nil:
		return ""
	case InvalidPod:
		return r.Message
	case Volume:
		return volumeMessage(r)
	case Taint:
		return "did not tolerate taint " + taintString(r.Taint)
	case IncompatibleRequirements:
		return fmt.Sprintf("incompatible requirements, key %s, %s not in %s", r.Key, formatSelectors(r.Key, r.Pod), formatSelectors(r.Key, r.NodePool))
	case UndefinedLabel:
		return fmt.Sprintf("label %q does not have known values", r.Key)
	case HostPort:
		return fmt.Sprintf("host port %d/%s is taken by a DaemonSet pod on every node", r.Port, r.Protocol)
	case NoInstanceType:
		why := map[NoInstanceTypeCause]string{
			NoTypes:                   "the nodepool has no instance types with an available offering",
			NoTypeMatchesRequirements: "no instance type met the scheduling requirements",
			NoTypeOffered:             "no instance type has an available offering for the required zones and capacity types",
			NoTypeFits:                "no instance type met the scheduling requirements or had enough resources",
		}[r.Cause]
		for _, c := range r.Unavailable {
			why += "; " + unavailableMessage[c]
		}
		for _, d := range r.UnavailableDetails {
			why += "; " + d
		}
		return noInstanceTypeMessage(r.Requests, r.Requirements, why)
	case InsufficientResource:
		return noInstanceTypeMessage(r.Requests, r.Requirements, "no instance type has enough resources")
	case MinValues:
		return fmt.Sprintf("minValues requirement is not met for label %q (requires %d, only %d values are available)", r.Key, r.Required, r.Available)
	case Topology:
		return topologyMessage(r)
	case Limit:
		return "exceeds nodepool limits"
	case ExistingNodes:
		parts := make([]string, 0, len(r.Groups))
		for _, g := range r.Groups {
			noun := "nodes"
			if g.Count == 1 {
				noun = "node"
			}
			parts = append(parts, fmt.Sprintf("%d %s %s", g.Count, noun, nodeMessage(g.Reason)))
		}
		return strings.Join(parts, "; ")
	case NoCapacity:
		return "no nodepools or nodes to schedule on"
	case BackingOff:
		return backingOffMessage(r)
	case NodeLabels, VolumeLimit, MarkedForDeletion, NotChosen:
		return nodeMessage(r)
	// Issue 10's formerly silent cases.
	case ExcludesNodePools:
		return "its required node affinity excludes every node with label " + v1.LabelNodePool +
			", so no nodepool can launch for it; it waits for a node joiner does not manage (such as a managed node group)"
	case ResourceNotOffered:
		return fmt.Sprintf("no instance type has %s (requested %s); allow instance types that have it in the nodepool's requirements, or check the device plugin's resource name",
			r.Resource, r.Requested.String())
	case DynamicResources:
		return dynamicResourcesMessage(r)
	case DeviceReason:
		return deviceMessage(r)
	case NoRequests:
		return "pod has no cpu or memory requests, so joiner plans its node as if it used nothing and the node may be too small; set resources.requests"
	}
	return string(r.Kind())
}

// unavailableMessage says what an offering's unavailability cause means
// and what to do about it.
var unavailableMessage = map[UnavailableCause]string{
	UnavailableInsufficientCapacity: "the cloud has no capacity for them right now (InsufficientInstanceCapacity); allow more instance types, zones or capacity types",
	UnavailableSubnetExhausted:      "the node class's subnets in those zones have no free IP addresses (InsufficientFreeAddressesInSubnet); add subnets with free addresses to its subnetSelectorTerms",
	UnavailableNoImage:              "the node class selects no image built for their architecture, so their instances would never boot a kubelet; select images of that architecture in amiSelectorTerms, or allow the architecture the images are built for",
}

// nodeMessage is the predicate of "N nodes <...>" for one existing node's
// reason.
func nodeMessage(r Reason) string {
	switch r.(type) {
	case MarkedForDeletion:
		return "was marked for deletion"
	case NodeLabels:
		return "had labels incompatible with its requirements"
	case InsufficientResource:
		return "had insufficient resources"
	case Topology, VolumeLimit:
		return "violated topology or volume limits"
	case NotChosen:
		return "could take it but was not chosen"
	}
	return Message(r)
}

// backingOffMessage names each failing scope, its cause and next attempt.
func backingOffMessage(r BackingOff) string {
	parts := make([]string, 0, len(r.Backoffs))
	for _, b := range r.Backoffs {
		verb := "register"
		if b.Phase == "Initialization" {
			verb = "initialize"
		}
		cause := ""
		if b.Cause != "" {
			cause = " (" + b.Cause + ")"
		}
		parts = append(parts, fmt.Sprintf("%s failed to %s %d time(s) in a row%s, next attempt at %s",
			b.What, verb, b.Failures, cause, b.NextAttempt.UTC().Format(time.RFC3339)))
	}
	return fmt.Sprintf("nodepool %s is backing off launches that failed: %s", r.NodePool, strings.Join(parts, "; "))
}

func volumeMessage(v Volume) string {
	switch v.Problem {
	case VolumeInTreePlugin:
		return fmt.Sprintf("volume %q uses the in-tree %s plugin, which joiner does not support; use its CSI driver", v.Volume, v.Plugin)
	case VolumeClaimNotFound:
		return fmt.Sprintf("persistentvolumeclaim %q not found", v.Claim)
	case VolumeNotFound:
		return fmt.Sprintf("persistentvolume %q of claim %q not found", v.PersistentVolume, v.Claim)
	case VolumeInTreePersistentVolume:
		return fmt.Sprintf("persistentvolume %q uses the in-tree %s plugin, which joiner does not support; migrate it to CSI", v.PersistentVolume, v.Plugin)
	case VolumeNodeAffinity:
		return fmt.Sprintf("persistentvolume %q node affinity: %s", v.PersistentVolume, v.Detail)
	case VolumeStorageClassNotFound:
		return fmt.Sprintf("storageclass %q of claim %q not found", v.StorageClass, v.Claim)
	case VolumeAllowedTopologies:
		return fmt.Sprintf("storageclass %q allowedTopologies: %s", v.StorageClass, v.Detail)
	}
	return fmt.Sprintf("volume problem %s", v.Problem)
}

func noInstanceTypeMessage(requests corev1.ResourceList, requirements []string, why string) string {
	return fmt.Sprintf("no instance type satisfied resources %s and requirements %s (%s)", resourcesJSON(requests), strings.Join(requirements, ", "), why)
}

func topologyMessage(t Topology) string {
	switch t.Cause {
	case TopologyNoNodeWithMatch:
		return fmt.Sprintf("unsatisfiable topology constraint for %s, key=%s (no node with a matching pod can take it)", t.Constraint, t.Key)
	case TopologyNoMatchingPods:
		return fmt.Sprintf("unsatisfiable topology constraint for %s, key=%s (no matching pods)", t.Constraint, t.Key)
	case TopologyNoDomain:
		msg := fmt.Sprintf("unsatisfiable topology constraint for %s, key=%s (counts = %s, podDomains = %s, nodeDomains = %s)",
			t.Constraint, t.Key, countsString(t.Counts), formatIn(t.Key, t.PodDomains), formatIn(t.Key, t.NodeDomains))
		if t.MaxSkew > 0 && len(t.NodeDomains) > 0 {
			least, n := t.NodeDomains[0], t.Counts[t.NodeDomains[0]]
			for _, d := range t.NodeDomains[1:] {
				if t.Counts[d] < n {
					least, n = d, t.Counts[d]
				}
			}
			msg += fmt.Sprintf("; one more pod in %s would be more than maxSkew=%d above %s (%d): allow more domains (the nodepool's requirements, the pod's node affinity), raise maxSkew, or use whenUnsatisfiable: ScheduleAnyway",
				strings.Join(t.PodDomains, " or "), t.MaxSkew, least, n)
		}
		return msg
	case TopologyNoZone:
		return fmt.Sprintf("unsatisfiable topology constraint, key=%s (no zone is allowed)", t.Key)
	case TopologyNoRoom:
		return "no instance type could carry the pod alongside its topology constraints"
	}
	return nodeMessage(t)
}

// formatSelectors renders one key's selectors as the solver's constraints
// print: "key In [a b]", "key NotIn [a] >3", "key Exists <8",
// "key DoesNotExist".
func formatSelectors(key string, sel []NodeSelector) string {
	var b strings.Builder
	b.WriteString(key)
	base := false
	for _, s := range sel {
		switch s.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			fmt.Fprintf(&b, " %s [%s]", s.Operator, strings.Join(s.Values, " "))
			base = true
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			fmt.Fprintf(&b, " %s", s.Operator)
			base = true
		}
	}
	if !base {
		b.WriteString(" Exists")
	}
	for _, s := range sel {
		switch s.Operator {
		case corev1.NodeSelectorOpGt:
			fmt.Fprintf(&b, " >%s", strings.Join(s.Values, ""))
		case corev1.NodeSelectorOpLt:
			fmt.Fprintf(&b, " <%s", strings.Join(s.Values, ""))
		}
	}
	return b.String()
}

// formatIn renders a set of values of key ("key DoesNotExist" when empty).
func formatIn(key string, vals []string) string {
	if len(vals) == 0 {
		return formatSelectors(key, []NodeSelector{{Operator: corev1.NodeSelectorOpDoesNotExist}})
	}
	return formatSelectors(key, []NodeSelector{{Operator: corev1.NodeSelectorOpIn, Values: vals}})
}

// resourcesJSON renders requests as a JSON object in name order.
func resourcesJSON(l corev1.ResourceList) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, string(k))
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		q := l[corev1.ResourceName(k)]
		fmt.Fprintf(&b, "%q:%q", k, q.String())
	}
	b.WriteByte('}')
	return b.String()
}

func countsString(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("map[")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%d", k, m[k])
	}
	b.WriteByte(']')
	return b.String()
}
