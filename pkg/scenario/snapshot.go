package scenario

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	nodeutil "k8s.io/component-helpers/node/util"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/catalog"
	"github.com/joiner-dev/joiner/pkg/dra"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Labels joiner reads from Nodes.
const (
	labelNodePool    = "karpenter.sh/nodepool"
	labelInitialized = "karpenter.sh/initialized"
)

// SnapshotOptions says how to turn Manifests into a Snapshot.
type SnapshotOptions struct {
	// InstanceTypes are offered to every NodePool. When nil the built-in
	// catalog is used: per NodePool, with the zones (and, for a
	// SimNodeClass, the families; for an EC2NodeClass, kubelet maxPods) of
	// its node class when the manifests hold it, else Catalog.Zones, else the zones the existing Nodes and the
	// NodePools' zone requirements name, else the catalog's default zones.
	InstanceTypes []*scheduling.InstanceType
	// PoolInstanceTypes are the instance types of the NodePools they name,
	// ahead of InstanceTypes and the catalog: what the running controller's
	// cloud provider gave its provisioner (pkg/controllerview).
	PoolInstanceTypes map[string][]*scheduling.InstanceType
	// Catalog are the options of the built-in catalog.
	Catalog catalog.Options
	// Now is the snapshot's clock.
	Now time.Time
	// Devices plans the pods' Dynamic Resource Allocation claims
	// (IGNORE_DRA_REQUESTS=false): the snapshot gets the Devices view of
	// the manifests' DeviceClasses, ResourceClaims, templates and
	// ResourceSlices.
	Devices bool
	// DefaultSpread are kube-scheduler's default topology spread
	// constraints by scheduler name (SCHEDULER_CONFIG, read by
	// schedulerconfig); nil when unset.
	DefaultSpread map[string][]corev1.TopologySpreadConstraint
}

// Snapshot builds the solver's input. Workloads (Deployments, ReplicaSets,
// StatefulSets, Jobs) become the pending pods they still lack: desired
// replicas less the live pods in the manifests that their selector
// matches, named <name>-<n> (StatefulSets by ordinal). A ReplicaSet whose
// Deployment is in the manifests is left to the Deployment. Pods bound to a
// Node in the manifests load that Node; pods bound to other nodes, and
// finished pods, are left out.
func (m *Manifests) Snapshot(opts SnapshotOptions) (*scheduling.Snapshot, error) {
	snap := &scheduling.Snapshot{Now: opts.Now, InstanceTypes: map[string][]*scheduling.InstanceType{}, Volumes: m.volumes}

	seenPools := map[string]string{}
	for _, np := range m.nodePools {
		if prev, dup := seenPools[np.obj.Name]; dup {
			return nil, fmt.Errorf("%s: metadata.name: NodePool %q is also defined at %s", np.where, np.obj.Name, prev)
		}
		seenPools[np.obj.Name] = np.where
		snap.NodePools = append(snap.NodePools, np.obj)
	}

	// Live pods, by namespace/name.
	seenPods := map[string]string{}
	var live []*corev1.Pod
	bound := map[string][]*corev1.Pod{}
	for _, p := range m.pods {
		key := podKey(p.obj)
		if prev, dup := seenPods[key]; dup {
			return nil, fmt.Errorf("%s: metadata.name: pod %q is also defined at %s", p.where, key, prev)
		}
		seenPods[key] = p.where
		if pods.IsTerminal(p.obj) {
			continue
		}
		live = append(live, p.obj)
		if p.obj.Spec.NodeName != "" {
			bound[p.obj.Spec.NodeName] = append(bound[p.obj.Spec.NodeName], p.obj)
		} else if !m.consumesGang(p.obj) {
			snap.Pods = append(snap.Pods, p.obj)
		}
	}

	deployments := map[string]bool{}
	for _, w := range m.workloads {
		if w.obj.kind == "Deployment" {
			deployments[w.obj.meta.Namespace+"/"+w.obj.meta.Name] = true
		}
	}
	for _, w := range m.workloads {
		if owner := metav1.GetControllerOf(&w.obj.meta); w.obj.kind == "ReplicaSet" && owner != nil &&
			owner.Kind == "Deployment" && deployments[w.obj.meta.Namespace+"/"+owner.Name] {
			continue
		}
		made, err := expand(&w.obj, live, seenPods)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.where, err)
		}
		for _, p := range made {
			pods.AdmitResources(p, m.limitRanges[p.Namespace])
			seenPods[podKey(p)] = w.where
		}
		snap.Pods = append(snap.Pods, made...)
	}

	// CapacityBuffers' virtual pods, after every real pod.
	virtual, err := m.bufferPods()
	if err != nil {
		return nil, err
	}
	snap.Pods = append(snap.Pods, virtual...)

	for _, ds := range m.daemonSets {
		daemonSet := ds.obj
		if daemonSet.Namespace == "" {
			daemonSet = daemonSet.DeepCopy()
			daemonSet.Namespace = metav1.NamespaceDefault
		}
		snap.DaemonSets = append(snap.DaemonSets, pods.DaemonSetPod(daemonSet, m.limitRanges[daemonSet.Namespace]))
	}

	inUse := map[string]corev1.ResourceList{}
	seenNodes := map[string]string{}
	for _, n := range m.nodes {
		if prev, dup := seenNodes[n.obj.Name]; dup {
			return nil, fmt.Errorf("%s: metadata.name: Node %q is also defined at %s", n.where, n.obj.Name, prev)
		}
		seenNodes[n.obj.Name] = n.where
		en := m.existingNode(n.obj, bound[n.obj.Name])
		snap.Nodes = append(snap.Nodes, en)
		if en.NodePool != "" {
			addResources(inUse, en.NodePool, n.obj.Status.Capacity)
		}
	}
	for _, np := range snap.NodePools {
		if np.InUse == nil && inUse[np.Name] != nil {
			np.InUse = inUse[np.Name]
		}
	}

	namespaces, err := m.snapshotNamespaces(snap)
	if err != nil {
		return nil, err
	}
	snap.Namespaces = namespaces

	if err := m.offerInstanceTypes(snap, opts); err != nil {
		return nil, err
	}
	m.applyOverlays(snap)
	if err := m.launchBackoffs(snap, opts.Now); err != nil {
		return nil, err
	}
	// A static NodePool (spec.replicas) keeps its count, not the pods':
	// its existing nodes take pods, but no new node is planned in it. Its
	// instance types stay, to price its nodes.
	snap.NodePools = slices.DeleteFunc(snap.NodePools, func(np *scheduling.NodePool) bool {
		return slices.ContainsFunc(m.apiNodePools, func(api *v1.NodePool) bool { return api.Name == np.Name && api.IsStatic() })
	})
	snap.DefaultSpread = m.defaultSpread(opts.DefaultSpread)
	if opts.Devices {
		snap.Devices = dra.View(context.Background(), snap, m.dra, nodeTypes(snap))
	}
	return snap, nil
}

// launchBackoffs gives each NodePool the launch back-offs its
// joiner.dev/launch-health annotation holds at now, as the provisioner
// does, so a plan made from a cluster dump leaves out the instance types a
// failing launch is waiting on. Without a clock (now zero) nothing is
// backed off: the record's times mean nothing against the zero time.
func (m *Manifests) launchBackoffs(snap *scheduling.Snapshot, now time.Time) error {
	if now.IsZero() {
		return nil
	}
	for i, np := range m.apiNodePools {
		pool := m.nodePools[i]
		backoffs, _, err := launchhealth.SolverBackoffs(np, snap.InstanceTypes[np.Name], now)
		if err != nil {
			return fmt.Errorf("%s: metadata.annotations[%s]: %w (remove the annotation: joiner writes it again on the next launch)", pool.where, v1.AnnotationLaunchHealth, err)
		}
		pool.obj.Backoffs = backoffs
	}
	return nil
}

// snapshotNamespaces are the Namespace objects read, so pod affinity's
// namespaceSelector is evaluated against their labels. Without any, the
// result is nil and the solver counts every namespace for a selector (the
// labels are unknown). With some, a namespace the pods use but the input
// does not define is added with only its name label, which is what the
// API server gives every namespace.
func (m *Manifests) snapshotNamespaces(snap *scheduling.Snapshot) ([]*corev1.Namespace, error) {
	if len(m.namespaces) == 0 {
		return nil, nil
	}
	seen := map[string]string{}
	var out []*corev1.Namespace
	for _, ns := range m.namespaces {
		if prev, dup := seen[ns.obj.Name]; dup {
			return nil, fmt.Errorf("%s: metadata.name: Namespace %q is also defined at %s", ns.where, ns.obj.Name, prev)
		}
		seen[ns.obj.Name] = ns.where
		out = append(out, ns.obj)
	}
	used := func(name string) {
		if _, ok := seen[name]; !ok {
			seen[name] = "(used by a pod)"
			out = append(out, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelMetadataName: name}}})
		}
	}
	for _, p := range snap.Pods {
		used(p.Namespace)
	}
	for _, n := range snap.Nodes {
		for _, p := range n.Pods {
			used(p.Namespace)
		}
	}
	return out, nil
}

// expand makes the pending pods a workload still lacks.
func expand(w *workload, live []*corev1.Pod, taken map[string]string) ([]*corev1.Pod, error) {
	selector := labels.SelectorFromSet(w.template.Labels)
	if w.selector != nil {
		s, err := metav1.LabelSelectorAsSelector(w.selector)
		if err != nil {
			return nil, fmt.Errorf("spec.selector: %w", err)
		}
		selector = s
	}
	if !selector.Matches(labels.Set(w.template.Labels)) {
		return nil, fmt.Errorf("spec.selector: does not match the template's labels %v", w.template.Labels)
	}
	have := int32(0)
	for _, p := range live {
		if p.Namespace == w.meta.Namespace && p.DeletionTimestamp == nil && selector.Matches(labels.Set(p.Labels)) {
			have++
		}
	}
	var out []*corev1.Pod
	for i := 0; have+int32(len(out)) < w.replicas; i++ {
		name := w.meta.Name + "-" + strconv.Itoa(i)
		if _, exists := taken[w.meta.Namespace+"/"+name]; exists {
			continue
		}
		out = append(out, podFromTemplate(w.kind, &w.meta, &w.template, name))
	}
	return out, nil
}

// podFromTemplate is the pod a controller would create, with a
// deterministic name and UID.
func podFromTemplate(kind string, owner *metav1.ObjectMeta, t *corev1.PodTemplateSpec, name string) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: *t.ObjectMeta.DeepCopy(),
		Spec:       *t.Spec.DeepCopy(),
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	p.Name, p.Namespace = name, owner.Namespace
	p.UID = types.UID("simulated/" + owner.Namespace + "/" + name)
	p.Spec.NodeName = ""
	isController := true
	apiVersion := "apps/v1"
	if kind == "Job" {
		apiVersion = "batch/v1"
	}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner.Name, UID: owner.UID, Controller: &isController}}
	return p
}

// addResources adds rl to sums[key].
func addResources(sums map[string]corev1.ResourceList, key string, rl corev1.ResourceList) {
	if sums[key] == nil {
		sums[key] = corev1.ResourceList{}
	}
	for name, q := range rl {
		s := sums[key][name]
		s.Add(q)
		sums[key][name] = s
	}
}

// existingNode is the solver's view of a Node and the pods bound to it.
func (m *Manifests) existingNode(n *corev1.Node, pods []*corev1.Pod) *scheduling.ExistingNode {
	en := &scheduling.ExistingNode{
		Name:              n.Name,
		NodePool:          n.Labels[labelNodePool],
		Labels:            n.Labels,
		Taints:            n.Spec.Taints,
		Allocatable:       n.Status.Allocatable,
		Pods:              pods,
		MarkedForDeletion: n.DeletionTimestamp != nil || n.Spec.Unschedulable,
	}
	if en.Allocatable == nil {
		en.Allocatable = n.Status.Capacity
	}
	for _, ref := range n.OwnerReferences {
		if ref.Kind == "NodeClaim" {
			en.NodeClaim = ref.Name
		}
	}
	en.Initialized = n.Labels[labelInitialized] == "true"
	if en.NodePool == "" {
		if _, c := nodeutil.GetNodeCondition(&n.Status, corev1.NodeReady); c != nil && c.Status == corev1.ConditionTrue {
			en.Initialized = true
		}
	}
	for _, cn := range m.csiNodes {
		if cn.Name != n.Name {
			continue
		}
		for _, d := range cn.Spec.Drivers {
			if d.Allocatable != nil && d.Allocatable.Count != nil {
				if en.VolumeLimits == nil {
					en.VolumeLimits = map[string]int{}
				}
				en.VolumeLimits[d.Name] = int(*d.Allocatable.Count)
			}
		}
	}
	return en
}

// offerInstanceTypes fills snap.InstanceTypes for every NodePool.
// offerPoolInstanceTypes gives each NodePool its own instance types; it
// reports whether every NodePool had them (otherwise the caller falls
// back to the catalog for all, so one snapshot never mixes sources).
func (m *Manifests) offerPoolInstanceTypes(snap *scheduling.Snapshot, its map[string][]*scheduling.InstanceType) bool {
	for _, np := range snap.NodePools {
		if _, ok := its[np.Name]; !ok {
			return false
		}
	}
	for _, np := range snap.NodePools {
		snap.InstanceTypes[np.Name] = its[np.Name]
	}
	return true
}

func (m *Manifests) offerInstanceTypes(snap *scheduling.Snapshot, opts SnapshotOptions) error {
	if opts.InstanceTypes != nil {
		for _, np := range snap.NodePools {
			snap.InstanceTypes[np.Name] = opts.InstanceTypes
		}
		return nil
	}
	if len(opts.PoolInstanceTypes) > 0 && m.offerPoolInstanceTypes(snap, opts.PoolInstanceTypes) {
		return nil
	}
	// Zones the cluster is known to use: those of its Nodes and those its
	// NodePools name.
	var knownZones []string
	addZone := func(z string) {
		if z != "" && !slices.Contains(knownZones, z) {
			knownZones = append(knownZones, z)
		}
	}
	for _, n := range snap.Nodes {
		addZone(n.Labels[corev1.LabelTopologyZone])
	}
	for _, np := range snap.NodePools {
		for _, r := range np.Requirements {
			if r.Key == corev1.LabelTopologyZone && r.Operator == corev1.NodeSelectorOpIn {
				for _, z := range r.Values {
					addZone(z)
				}
			}
		}
		addZone(np.Labels[corev1.LabelTopologyZone])
	}
	slices.Sort(knownZones)
	built := map[string][]*scheduling.InstanceType{}
	for _, np := range snap.NodePools {
		copts := opts.Catalog
		if len(copts.Zones) == 0 {
			copts.Zones = knownZones
		}
		for _, nc := range m.nodeClassRaw {
			ref := np.NodeClassRef
			if nc.obj.kind == ref.Kind && nc.obj.name == ref.Name && (ref.Group == "" || ref.Group == nc.obj.group) {
				if len(nc.obj.zones) > 0 {
					copts.Zones = nc.obj.zones
				}
				if len(nc.obj.families) > 0 {
					copts.Families = nc.obj.families
				}
				if nc.obj.maxPods > 0 {
					copts.MaxPods = nc.obj.maxPods
				}
			}
		}
		key := fmt.Sprintf("%v|%v|%d", copts.Zones, copts.Families, copts.MaxPods)
		if its, ok := built[key]; ok {
			snap.InstanceTypes[np.Name] = its
			continue
		}
		c, err := catalog.Default(copts)
		if err != nil {
			return fmt.Errorf("building the instance catalog for NodePool %q: %w", np.Name, err)
		}
		built[key] = c.InstanceTypes()
		snap.InstanceTypes[np.Name] = c.InstanceTypes()
	}
	return nil
}

// BoundElsewhere lists the live pods (namespace/name) bound to nodes the
// manifests do not hold; Snapshot leaves them out, as their capacity is
// unknown.
func (m *Manifests) BoundElsewhere() []string {
	nodes := map[string]bool{}
	for _, n := range m.nodes {
		nodes[n.obj.Name] = true
	}
	var out []string
	for _, p := range m.pods {
		if p.obj.Spec.NodeName != "" && !nodes[p.obj.Spec.NodeName] && !pods.IsTerminal(p.obj) {
			out = append(out, podKey(p.obj))
		}
	}
	return out
}

// nodeTypes are, for each existing node that names its instance type, the
// types of that name the snapshot offers: what a node whose slices are not
// in the manifests publishes.
func nodeTypes(snap *scheduling.Snapshot) map[string][]*scheduling.InstanceType {
	out := map[string][]*scheduling.InstanceType{}
	for _, n := range snap.Nodes {
		name := n.Labels[corev1.LabelInstanceTypeStable]
		if name == "" {
			continue
		}
		for _, its := range snap.InstanceTypes {
			if i := slices.IndexFunc(its, func(it *scheduling.InstanceType) bool { return it.Name == name }); i >= 0 {
				out[n.Name] = []*scheduling.InstanceType{its[i]}
				break
			}
		}
	}
	return out
}
