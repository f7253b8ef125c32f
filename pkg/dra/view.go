package dra

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Objects are the cluster's DRA objects a view is built from.
type Objects struct {
	DeviceClasses []resourcev1.DeviceClass
	Claims        []resourcev1.ResourceClaim
	Templates     []resourcev1.ResourceClaimTemplate
	Slices        []resourcev1.ResourceSlice
}

// celCache holds compiled selectors across views: the same few
// expressions are evaluated batch after batch.
var celCache = cel.NewCache(256, cel.Features{})

// device is one published device and where it is.
type device struct {
	driver, pool string
	dev          *resourcev1.Device
}

func (d device) key() string { return d.driver + "/" + d.pool + "/" + d.dev.Name }

// View builds the solver's Devices view of snap from the cluster's DRA
// objects: each pod's claims (pending pods and those bound to snap's
// nodes) as device requests, and the devices every instance type and
// existing node publishes. An existing node (or in-flight NodeClaim) that
// publishes no ResourceSlice yet is taken to publish what the fewest-device
// type of launching[node] does: the types it may still turn out to be.
func View(ctx context.Context, snap *scheduling.Snapshot, objs Objects, launching map[string][]*scheduling.InstanceType) *scheduling.Devices {
	b := &builder{ctx: ctx, classes: map[string]*resourcev1.DeviceClass{}, claims: map[string]*resourcev1.ResourceClaim{},
		templates: map[string]*resourcev1.ResourceClaimTemplate{}, typeDevs: map[string][]device{}, nodeDevs: map[string][]device{},
		memo: map[string]scheduling.DeviceRequest{}}
	for i := range objs.DeviceClasses {
		b.classes[objs.DeviceClasses[i].Name] = &objs.DeviceClasses[i]
	}
	for i := range objs.Claims {
		c := &objs.Claims[i]
		b.claims[c.Namespace+"/"+c.Name] = c
	}
	for i := range objs.Templates {
		t := &objs.Templates[i]
		b.templates[t.Namespace+"/"+t.Name] = t
	}
	out := &scheduling.Devices{Pods: map[string][]scheduling.DeviceRequest{}, InstanceTypes: map[string]map[string]int64{}, Nodes: map[string]map[string]int64{}}
	if !anyClaims(snap) {
		return out // nothing asks for devices: no need to know who has them
	}
	for _, its := range snap.InstanceTypes {
		for _, it := range its {
			if _, done := b.typeDevs[it.Name]; done {
				continue
			}
			devs := flatten(InstanceTypeDevices(it))
			b.typeDevs[it.Name] = devs
			if len(devs) > 0 {
				out.InstanceTypes[it.Name] = perDriver(devs)
			}
		}
	}
	for name, devs := range nodeSlices(objs.Slices) {
		b.nodeDevs[name] = devs
	}
	for _, n := range snap.Nodes {
		if _, ok := b.nodeDevs[n.Name]; ok {
			continue
		}
		b.nodeDevs[n.Name] = fewest(launching[n.Name])
	}
	b.nodeNames = make([]string, 0, len(b.nodeDevs))
	for name := range b.nodeDevs {
		b.nodeNames = append(b.nodeNames, name)
	}
	sort.Strings(b.nodeNames)

	accounted := map[string]bool{} // claims whose devices a pod's request counts
	visit := func(p *corev1.Pod) {
		if !scheduling.HasResourceClaims(p) {
			return
		}
		out.Pods[scheduling.PodKey(p)] = b.podRequests(p, accounted)
	}
	for _, p := range snap.Pods {
		visit(p)
	}
	for _, n := range snap.Nodes {
		for _, p := range n.Pods {
			visit(p)
		}
	}

	// What each node publishes, less the devices of allocated claims no
	// pod's request accounts for (shared claims, claims of pods the
	// snapshot does not hold).
	location := map[string]string{}
	for name, devs := range b.nodeDevs {
		for _, d := range devs {
			location[d.key()] = name
		}
	}
	free := map[string]map[string]int64{}
	for name, devs := range b.nodeDevs {
		if len(devs) > 0 {
			free[name] = perDriver(devs)
		}
	}
	for key, c := range b.claims {
		if c.Status.Allocation == nil || accounted[key] {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if node, ok := location[r.Driver+"/"+r.Pool+"/"+r.Device]; ok && free[node][r.Driver] > 0 {
				free[node][r.Driver]--
			}
		}
	}
	out.Nodes = free
	return out
}

type builder struct {
	ctx       context.Context
	classes   map[string]*resourcev1.DeviceClass
	claims    map[string]*resourcev1.ResourceClaim
	templates map[string]*resourcev1.ResourceClaimTemplate
	typeDevs  map[string][]device
	nodeDevs  map[string][]device
	nodeNames []string
	// memo holds each request's matching, by its source (template or
	// claim) and name: the pods of one workload share their template.
	memo map[string]scheduling.DeviceRequest
}

// podRequests are pod's device requests. A claim generated from a
// template is the pod's own: its devices count with the pod wherever the
// pod is, and move with it. A ResourceClaim the pod names that is
// allocated already pins the pod to the node holding its devices, which
// count against that node instead.
func (b *builder) podRequests(p *corev1.Pod, accounted map[string]bool) []scheduling.DeviceRequest {
	var out []scheduling.DeviceRequest
	generated := map[string]string{}
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			generated[s.Name] = *s.ResourceClaimName
		}
	}
	for _, prc := range p.Spec.ResourceClaims {
		base := scheduling.DeviceRequest{Claim: prc.Name}
		var spec *resourcev1.ResourceClaimSpec
		var source string
		switch {
		case prc.ResourceClaimName != nil:
			base.ResourceClaim = *prc.ResourceClaimName
			key := p.Namespace + "/" + base.ResourceClaim
			c := b.claims[key]
			if c == nil {
				base.Unsupported = fmt.Sprintf("ResourceClaim %s/%s does not exist", p.Namespace, base.ResourceClaim)
				out = append(out, base)
				continue
			}
			if c.Status.Allocation != nil {
				base.Nodes = b.allocatedOn(c)
				out = append(out, base)
				continue
			}
			spec, source = &c.Spec, "claim:"+key
		case prc.ResourceClaimTemplateName != nil:
			base.Template = *prc.ResourceClaimTemplateName
			key := p.Namespace + "/" + base.Template
			if name, ok := generated[prc.Name]; ok {
				accounted[p.Namespace+"/"+name] = true
				base.ResourceClaim = name
			}
			t := b.templates[key]
			if t == nil {
				base.Unsupported = fmt.Sprintf("ResourceClaimTemplate %s does not exist", key)
				out = append(out, base)
				continue
			}
			spec, source = &t.Spec.Spec, "template:"+key
		default:
			continue
		}
		for _, r := range spec.Devices.Requests {
			memoKey := source + "/" + r.Name
			m, ok := b.memo[memoKey]
			if !ok {
				m = b.request(r)
				b.memo[memoKey] = m
			}
			m.Claim, m.ResourceClaim, m.Template = base.Claim, base.ResourceClaim, base.Template
			out = append(out, m)
		}
	}
	return out
}

// allocatedOn are the nodes publishing an allocated claim's devices.
func (b *builder) allocatedOn(c *resourcev1.ResourceClaim) []string {
	want := map[string]bool{}
	for _, r := range c.Status.Allocation.Devices.Results {
		want[r.Driver+"/"+r.Pool+"/"+r.Device] = true
	}
	var out []string
	for _, name := range b.nodeNames {
		for _, d := range b.nodeDevs[name] {
			if want[d.key()] {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// request matches one device request of a claim against every instance
// type's and node's devices.
func (b *builder) request(r resourcev1.DeviceRequest) scheduling.DeviceRequest {
	out := scheduling.DeviceRequest{Request: r.Name}
	e := r.Exactly
	if e == nil {
		out.Unsupported = "it lists alternatives (firstAvailable), which joiner does not plan yet; use exactly"
		return out
	}
	out.DeviceClass = e.DeviceClassName
	out.Count = 1
	switch e.AllocationMode {
	case resourcev1.DeviceAllocationModeAll:
		out.Unsupported = "allocationMode All is not planned: the count depends on the node; ask for an exact count"
		return out
	case resourcev1.DeviceAllocationModeExactCount, "":
		if e.Count > 0 {
			out.Count = e.Count
		}
	default:
		out.Unsupported = fmt.Sprintf("allocationMode %q is unknown", e.AllocationMode)
		return out
	}
	if e.AdminAccess != nil && *e.AdminAccess {
		out.Unsupported = "adminAccess requests are not planned"
		return out
	}
	if e.Capacity != nil {
		out.Unsupported = "capacity requests (consumable capacity) are not planned"
		return out
	}
	class := b.classes[e.DeviceClassName]
	if class == nil {
		out.Unsupported = fmt.Sprintf("DeviceClass %q does not exist", e.DeviceClassName)
		return out
	}
	var progs []cel.CompilationResult
	for _, s := range append(slices.Clone(class.Spec.Selectors), e.Selectors...) {
		if s.CEL == nil {
			continue
		}
		c := celCache.GetOrCompile(s.CEL.Expression)
		if c.Error != nil {
			out.Unsupported = fmt.Sprintf("selector %q does not compile: %v", s.CEL.Expression, c.Error)
			return out
		}
		progs = append(progs, c)
	}
	matches := func(d device) bool {
		in := cel.Device{Driver: d.driver, Attributes: d.dev.Attributes, Capacity: d.dev.Capacity}
		for _, p := range progs {
			if ok, _, err := p.DeviceMatches(b.ctx, in); err != nil || !ok {
				return false
			}
		}
		return true
	}
	drivers := map[string]bool{}
	enough := func(devs []device) (string, bool) {
		n := map[string]int64{}
		for _, d := range devs {
			if matches(d) {
				n[d.driver]++
			}
		}
		for _, drv := range slices.Sorted(maps.Keys(n)) {
			if n[drv] >= out.Count {
				return drv, true
			}
		}
		return "", false
	}
	for _, name := range slices.Sorted(maps.Keys(b.typeDevs)) {
		if drv, ok := enough(b.typeDevs[name]); ok {
			out.InstanceTypes = append(out.InstanceTypes, name)
			drivers[drv] = true
		}
	}
	for _, name := range b.nodeNames {
		if drv, ok := enough(b.nodeDevs[name]); ok {
			out.Nodes = append(out.Nodes, name)
			drivers[drv] = true
		}
	}
	ds := slices.Sorted(maps.Keys(drivers))
	switch len(ds) {
	case 0:
	case 1:
		out.Driver = ds[0]
	default:
		out.Unsupported = "devices of several drivers (" + strings.Join(ds, ", ") + ") meet it; joiner plans one driver per request: narrow the DeviceClass or the selectors to one driver"
		out.InstanceTypes, out.Nodes = nil, nil
	}
	scheduling.SortDeviceRequest(&out)
	return out
}

// nodeSlices are the devices each node's ResourceSlices publish: for each
// driver's pool, the slices of its newest generation only, as the
// scheduler reads them.
func nodeSlices(slices []resourcev1.ResourceSlice) map[string][]device {
	newest := map[string]int64{}
	for i := range slices {
		s := &slices[i]
		k := s.Spec.Driver + "/" + s.Spec.Pool.Name
		newest[k] = max(newest[k], s.Spec.Pool.Generation)
	}
	out := map[string][]device{}
	for i := range slices {
		s := &slices[i]
		if s.Spec.NodeName == nil || s.Spec.Pool.Generation != newest[s.Spec.Driver+"/"+s.Spec.Pool.Name] {
			continue
		}
		for j := range s.Spec.Devices {
			out[*s.Spec.NodeName] = append(out[*s.Spec.NodeName], device{driver: s.Spec.Driver, pool: s.Spec.Pool.Name, dev: &s.Spec.Devices[j]})
		}
	}
	return out
}

// flatten lists published devices, pooled per driver.
func flatten(ps []Published) []device {
	var out []device
	for _, p := range ps {
		for i := range p.Devices {
			out = append(out, device{driver: p.Driver, dev: &p.Devices[i]})
		}
	}
	return out
}

// fewest are the devices of the option publishing the fewest: what a node
// that may be any of its types surely has.
func fewest(its []*scheduling.InstanceType) []device {
	var best []device
	for i, it := range its {
		devs := flatten(InstanceTypeDevices(it))
		if i == 0 || len(devs) < len(best) {
			best = devs
		}
	}
	return best
}

func perDriver(devs []device) map[string]int64 {
	out := map[string]int64{}
	for _, d := range devs {
		out[d.driver]++
	}
	return out
}

// anyClaims reports whether some pod of snap, pending or bound, has
// resource claims.
func anyClaims(snap *scheduling.Snapshot) bool {
	for _, p := range snap.Pods {
		if scheduling.HasResourceClaims(p) {
			return true
		}
	}
	for _, n := range snap.Nodes {
		for _, p := range n.Pods {
			if scheduling.HasResourceClaims(p) {
				return true
			}
		}
	}
	return false
}
