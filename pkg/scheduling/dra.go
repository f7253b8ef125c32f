package scheduling

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// IgnoreDRARequestsSetting is the operator setting (Karpenter's) that
// decides whether pods with Dynamic Resource Allocation claims are
// provisioned; a DynamicResources reason names it so the user knows what
// to change.
const IgnoreDRARequestsSetting = "IGNORE_DRA_REQUESTS"

// KindDynamicResources: the pod claims devices through Dynamic Resource
// Allocation and the snapshot does not plan them.
const KindDynamicResources ReasonKind = "DynamicResources"

// KindDevices: the pod's device claims cannot be met by a NodePool or by
// any node.
const KindDevices ReasonKind = "Devices"

// DynamicResources: the pod has resource claims (spec.resourceClaims) and
// the solver was asked not to plan them (IGNORE_DRA_REQUESTS=true,
// Karpenter's default). Karpenter leaves such pods alone; a node launched
// without regard to the claims would likely not carry the devices, so the
// pod is not provisioned at all, and is told why and which setting
// changes it.
type DynamicResources struct {
	// Claims are the pod's resource claim names (spec.resourceClaims[].name).
	Claims []string `json:"claims,omitempty"`
	// Setting is the operator setting that decides it.
	Setting string `json:"setting,omitempty"`
}

func (DynamicResources) Kind() ReasonKind { return KindDynamicResources }
func (r DynamicResources) String() string { return Message(r) }

// Devices is the Dynamic Resource Allocation view of a Snapshot: what each
// pod's claims ask of a node and which devices each instance type and
// node publishes. Adapters build it outside the solver (pkg/dra reads
// ResourceClaims, their templates, DeviceClasses and ResourceSlices and
// evaluates the CEL selectors); the solver only counts and matches names.
//
// A device request is a dimension per driver: a node publishing N devices
// of driver D holds requests for at most N of D's devices in all, and a
// request may only use nodes and instance types whose devices meet its
// selectors. Devices of one driver on one node are taken to be alike (as
// the GPUs of an instance type are), so "N devices meet the selectors"
// and "N of the driver's devices are free" together mean the request can
// be allocated there.
type Devices struct {
	// Pods are the device requests of each pod's claims, by
	// "namespace/name": pending pods', and those of pods bound to existing
	// nodes, whose devices are in use there. A claim already allocated to
	// a node outside this view (a shared ResourceClaim) is a request with
	// Count zero and Nodes naming where it is allocated.
	Pods map[string][]DeviceRequest
	// InstanceTypes are the devices a new node of each instance type
	// publishes, per driver, by instance type name.
	InstanceTypes map[string]map[string]int64
	// Nodes are the devices each existing node (or in-flight NodeClaim)
	// publishes per driver, less those held by claims no pod of Pods
	// accounts for, by node name.
	Nodes map[string]map[string]int64
}

// DeviceRequest is one request of one of a pod's resource claims.
type DeviceRequest struct {
	// Claim is the pod's spec.resourceClaims[].name.
	Claim string `json:"claim,omitempty"`
	// ResourceClaim and Template name where the claim comes from (one of
	// them).
	ResourceClaim string `json:"resourceClaim,omitempty"`
	Template      string `json:"template,omitempty"`
	// Request is the claim's request name, DeviceClass its class.
	Request     string `json:"request,omitempty"`
	DeviceClass string `json:"deviceClass,omitempty"`
	// Driver publishes the devices that meet the request; Count is how many
	// it needs.
	Driver string `json:"driver,omitempty"`
	Count  int64  `json:"count,omitempty"`
	// InstanceTypes and Nodes are the instance types and existing nodes
	// with at least Count devices that meet the class's and the request's
	// selectors.
	InstanceTypes []string `json:"-"`
	Nodes         []string `json:"-"`
	// Unsupported, when set, says why joiner cannot plan the request (an
	// allocation mode, a missing class): the pod is not placed.
	Unsupported string `json:"unsupported,omitempty"`
}

// DeviceProblem says why a pod's device request keeps it off a NodePool.
type DeviceProblem string

// Device problems.
const (
	// DevicesNowhere: no instance type of any NodePool and no node
	// publishes devices that meet the request.
	DevicesNowhere DeviceProblem = "NoMatchingDevices"
	// DevicesNotInNodePool: the NodePool's instance types that meet the
	// pod's other requirements publish no such devices.
	DevicesNotInNodePool DeviceProblem = "NotInNodePool"
	// DevicesNotOnNode: an existing node's devices do not meet the
	// request (or the claim is allocated on another node).
	DevicesNotOnNode DeviceProblem = "NotOnNode"
	// DevicesUnsupported: joiner does not plan this kind of request.
	DevicesUnsupported DeviceProblem = "Unsupported"
)

// DeviceReason: one of the pod's device requests keeps it from a NodePool
// (or from every node): it names the claim, the request, the DeviceClass
// and the count, so the user knows which device the pod waits for.
type DeviceReason struct {
	Problem DeviceProblem `json:"problem,omitempty"`
	Request DeviceRequest `json:"request"`
}

func (DeviceReason) Kind() ReasonKind { return KindDevices }
func (r DeviceReason) String() string { return Message(r) }

// Error lets class descriptions return a DeviceReason as an error.
func (r DeviceReason) Error() string { return Message(r) }

// DeviceResource is the solver's resource dimension for driver's devices.
// It appears in reasons' requests and shortfalls ("gpu.nvidia.com/devices")
// but never in a NodeClaim's requests.
func DeviceResource(driver string) corev1.ResourceName {
	return corev1.ResourceName(driver + deviceResourceSuffix)
}

const deviceResourceSuffix = "/devices"

// HasResourceClaims reports whether pod claims devices through Dynamic
// Resource Allocation: the one reading of "this pod uses DRA" for the
// solver and its adapters.
func HasResourceClaims(pod *corev1.Pod) bool { return len(pod.Spec.ResourceClaims) > 0 }

// PodKey is how Devices.Pods names a pod.
func PodKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// dynamicResourcesReason is why a pod with resource claims is not placed
// under the snapshot's policy, or nil when it has none or they are planned.
func (sv *solver) dynamicResourcesReason(pod *corev1.Pod) Reason {
	if !HasResourceClaims(pod) || sv.planDevices() {
		return nil
	}
	r := DynamicResources{Setting: IgnoreDRARequestsSetting}
	for _, c := range pod.Spec.ResourceClaims {
		r.Claims = append(r.Claims, c.Name)
	}
	return r
}

// planDevices reports whether the snapshot's device claims are planned:
// IGNORE_DRA_REQUESTS=false and a Devices view to plan them with.
func (sv *solver) planDevices() bool { return sv.opts.PlanDynamicResources && sv.snap.Devices != nil }

// dynamicResourcesMessage says which claims are ignored, why, and what
// the user can do.
func dynamicResourcesMessage(r DynamicResources) string {
	return "pod has Dynamic Resource Allocation claims (" + strings.Join(r.Claims, ", ") + ") and " + r.Setting +
		"=true (Karpenter's default) leaves such pods unprovisioned, since a node launched without regard to the claims " +
		"may not carry the devices; set " + r.Setting + "=false to have joiner plan nodes whose devices meet the claims, " +
		"or request the device plugin's extended resource (such as nvidia.com/gpu) instead of a claim"
}

// deviceMessage names the device a pod waits for and why.
func deviceMessage(r DeviceReason) string {
	q := r.Request
	what := fmt.Sprintf("claim %q request %q (%d of DeviceClass %q", q.Claim, q.Request, q.Count, q.DeviceClass)
	if q.Driver != "" {
		what += ", driver " + q.Driver
	}
	what += ")"
	switch r.Problem {
	case DevicesNowhere:
		return what + ": no instance type of any nodepool and no node publishes enough devices that meet the DeviceClass's and the request's selectors; allow instance types with such devices, or check the selectors"
	case DevicesNotInNodePool:
		return what + ": none of the nodepool's instance types that meet the pod's requirements publishes enough devices that meet the selectors"
	case DevicesNotOnNode:
		return what + ": the node publishes no such devices"
	case DevicesUnsupported:
		return what + ": " + q.Unsupported
	}
	return what
}

// writeClaimsKey keeps pods with resource claims apart from pods without
// in the class key (two pods differing only in their claims must not
// share a verdict).
func writeClaimsKey(b *strings.Builder, p *corev1.Pod) {
	for _, c := range p.Spec.ResourceClaims {
		b.WriteString("|claim:")
		b.WriteString(c.Name)
		b.WriteByte('=')
		if c.ResourceClaimName != nil {
			b.WriteString(*c.ResourceClaimName)
		}
		b.WriteByte('/')
		if c.ResourceClaimTemplateName != nil {
			b.WriteString(*c.ResourceClaimTemplateName)
		}
	}
}

// deviceLists are the extra resource dimensions of the snapshot's devices,
// one per driver any pod asks for or any node or type publishes.
func (s *Snapshot) deviceLists() []corev1.ResourceList {
	if s.Devices == nil {
		return nil
	}
	drivers := map[string]bool{}
	for _, rs := range s.Devices.Pods {
		for _, r := range rs {
			if r.Driver != "" {
				drivers[r.Driver] = true
			}
		}
	}
	for _, m := range []map[string]map[string]int64{s.Devices.InstanceTypes, s.Devices.Nodes} {
		for _, ds := range m {
			for d := range ds {
				drivers[d] = true
			}
		}
	}
	l := corev1.ResourceList{}
	for d := range drivers {
		l[DeviceResource(d)] = resource.Quantity{}
	}
	return []corev1.ResourceList{l}
}

// addDevices adds published device counts to an allocatable vector.
func (sv *solver) addDevices(v resVec, published map[string]int64) {
	for d, n := range published {
		if p, ok := sv.ri.pos[DeviceResource(d)]; ok {
			v[p] += n
		}
	}
}

// podVec is the pod's footprint with its device requests, when planned.
func (sv *solver) podVec(p *corev1.Pod) resVec {
	v := sv.ri.requestVec(p)
	if !sv.planDevices() {
		return v
	}
	for _, r := range sv.snap.Devices.Pods[PodKey(p)] {
		if pos, ok := sv.ri.pos[DeviceResource(r.Driver)]; ok && r.Driver != "" {
			v[pos] += r.Count
		}
	}
	return v
}

// classDevices records the class's device requests (from its first pod):
// the instance types and nodes each request allows. A request that no
// type and no node can meet, or that joiner cannot plan, is the class's
// error.
func (sv *solver) classDevices(cb *classBase, p *corev1.Pod) error {
	if !sv.planDevices() {
		return nil
	}
	rs := sv.snap.Devices.Pods[PodKey(p)]
	if len(rs) == 0 && HasResourceClaims(p) {
		return DeviceReason{Problem: DevicesUnsupported, Request: DeviceRequest{Claim: p.Spec.ResourceClaims[0].Name,
			Unsupported: "its claims could not be read (the ResourceClaim or its template does not exist yet)"}}
	}
	for _, r := range rs {
		switch {
		case r.Unsupported != "":
			return DeviceReason{Problem: DevicesUnsupported, Request: r}
		case len(r.InstanceTypes) == 0 && len(r.Nodes) == 0:
			return DeviceReason{Problem: DevicesNowhere, Request: r}
		}
	}
	cb.devices = rs
	return nil
}

// deviceTypes narrows a pool's candidate types to those every device
// request of the class allows; the reason names the first request that
// leaves none.
func (sv *solver) deviceTypes(c *podClass, p *poolT, types bitset) (bitset, Reason) {
	if len(c.base.devices) == 0 {
		return types, nil
	}
	out := slices.Clone(types)
	for _, r := range c.base.devices {
		for i, t := range p.types {
			if out.has(i) && !sortedHas(r.InstanceTypes, t.it.Name) {
				out.clear(i)
			}
		}
		if out.empty() {
			return out, DeviceReason{Problem: DevicesNotInNodePool, Request: r}
		}
	}
	return out, nil
}

// deviceNodeReason is why the class's device requests keep it off existing
// node n (nil when its devices meet them all).
func (c *classBase) deviceNodeReason(n *nodeState) Reason {
	for _, r := range c.devices {
		if !sortedHas(r.Nodes, n.ex.Name) {
			return DeviceReason{Problem: DevicesNotOnNode, Request: r}
		}
	}
	return nil
}

// SortDeviceRequest sorts a request's instance types and nodes, as the
// solver looks them up by binary search.
func SortDeviceRequest(r *DeviceRequest) {
	sort.Strings(r.InstanceTypes)
	sort.Strings(r.Nodes)
}

func sortedHas(s []string, v string) bool {
	_, ok := slices.BinarySearch(s, v)
	return ok
}
