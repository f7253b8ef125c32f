package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// ResourceNodes is the limits key that bounds a NodePool's node count.
const ResourceNodes corev1.ResourceName = "nodes"

// view is one batch's picture of the cluster: the solver's Snapshot plus
// what the provisioner needs to act on the plan.
type view struct {
	snapshot *scheduling.Snapshot
	// nodePools by name, only those the solver may launch from.
	nodePools map[string]*v1.NodePool
	// inUse is each NodePool's capacity in use (existing and in-flight
	// NodeClaims, pessimistically sized while unlaunched) plus its node count.
	inUse map[string]corev1.ResourceList
	// skipped explains NodePools left out of the snapshot (not ready,
	// deleting, no instance types), for the unschedulable pods' report.
	skipped map[string]string
}

// buildView lists everything from the cache and assembles the Snapshot.
func (p *Provisioner) buildView(ctx context.Context) (*view, error) {
	c := p.opts.Client
	var (
		nodePools    v1.NodePoolList
		nodeClaims   v1.NodeClaimList
		nodes        corev1.NodeList
		pods         corev1.PodList
		daemonSets   appsv1.DaemonSetList
		pvcs         corev1.PersistentVolumeClaimList
		pvs          corev1.PersistentVolumeList
		storageClass storagev1.StorageClassList
	)
	lists := []struct {
		what string
		obj  client.ObjectList
	}{
		{"nodepools", &nodePools}, {"nodeclaims", &nodeClaims}, {"nodes", &nodes}, {"pods", &pods},
		{"daemonsets", &daemonSets}, {"persistentvolumeclaims", &pvcs}, {"persistentvolumes", &pvs},
		{"storageclasses", &storageClass},
	}
	for _, l := range lists {
		if err := c.List(ctx, l.obj); err != nil {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}

	v := &view{
		snapshot: &scheduling.Snapshot{
			Now:           p.opts.Clock.Now(),
			InstanceTypes: map[string][]*scheduling.InstanceType{},
		},
		nodePools: map[string]*v1.NodePool{},
		inUse:     map[string]corev1.ResourceList{},
		skipped:   map[string]string{},
	}

	// Instance types come first: in-flight NodeClaims are sized from them.
	for i := range nodePools.Items {
		np := &nodePools.Items[i]
		if reason := nodePoolUnusable(np); reason != "" {
			v.skipped[np.Name] = reason
			continue
		}
		its, err := p.opts.CloudProvider.GetInstanceTypes(ctx, np)
		if err != nil {
			v.skipped[np.Name] = fmt.Sprintf("getting instance types: %v", err)
			continue
		}
		if len(its) == 0 {
			v.skipped[np.Name] = "its node class offers no instance types"
			continue
		}
		v.nodePools[np.Name] = np
		v.snapshot.InstanceTypes[np.Name] = its
	}

	podsByNode := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Spec.NodeName != "" {
			if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
				podsByNode[pod.Spec.NodeName] = append(podsByNode[pod.Spec.NodeName], pod)
			}
			continue
		}
		if IsProvisionable(pod) && unsupportedVolume(pod) == "" {
			v.snapshot.Pods = append(v.snapshot.Pods, pod)
		}
	}

	claims := p.inflight.merge(nodeClaims.Items, p.opts.Clock.Now())
	nodesByProviderID := map[string]*corev1.Node{}
	for i := range nodes.Items {
		if id := nodes.Items[i].Spec.ProviderID; id != "" {
			nodesByProviderID[id] = &nodes.Items[i]
		}
	}
	claimed := map[string]bool{}
	for _, nc := range claims {
		pool := nc.Labels[v1.LabelNodePool]
		var node *corev1.Node
		if nc.Status.ProviderID != "" {
			node = nodesByProviderID[nc.Status.ProviderID]
		}
		its := v.snapshot.InstanceTypes[pool]
		v.addInUse(pool, claimCapacity(nc, node, its))
		if node != nil {
			claimed[node.Name] = true
			v.snapshot.Nodes = append(v.snapshot.Nodes, managedNode(nc, node, podsByNode[node.Name]))
			continue
		}
		v.snapshot.Nodes = append(v.snapshot.Nodes, inflightNode(nc, its))
	}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if claimed[node.Name] {
			continue
		}
		v.snapshot.Nodes = append(v.snapshot.Nodes, unmanagedNode(node, podsByNode[node.Name]))
	}
	slices.SortFunc(v.snapshot.Nodes, func(a, b *scheduling.ExistingNode) int { return strings.Compare(a.Name, b.Name) })

	for name, np := range v.nodePools {
		v.snapshot.NodePools = append(v.snapshot.NodePools, schedulingNodePool(np, v.inUse[name]))
	}
	slices.SortFunc(v.snapshot.NodePools, func(a, b *scheduling.NodePool) int { return strings.Compare(a.Name, b.Name) })

	for i := range daemonSets.Items {
		v.snapshot.DaemonSets = append(v.snapshot.DaemonSets, daemonPod(&daemonSets.Items[i]))
	}
	for i := range pvcs.Items {
		v.snapshot.Volumes.PersistentVolumeClaims = append(v.snapshot.Volumes.PersistentVolumeClaims, &pvcs.Items[i])
	}
	for i := range pvs.Items {
		v.snapshot.Volumes.PersistentVolumes = append(v.snapshot.Volumes.PersistentVolumes, &pvs.Items[i])
	}
	for i := range storageClass.Items {
		v.snapshot.Volumes.StorageClasses = append(v.snapshot.Volumes.StorageClasses, schedulingStorageClass(&storageClass.Items[i]))
	}
	return v, nil
}

func (v *view) addInUse(pool string, capacity corev1.ResourceList) {
	if pool == "" {
		return
	}
	use := v.inUse[pool]
	if use == nil {
		use = corev1.ResourceList{}
		v.inUse[pool] = use
	}
	for name, q := range capacity {
		sum := use[name]
		sum.Add(q)
		use[name] = sum
	}
	n := use[ResourceNodes]
	n.Add(resource.MustParse("1"))
	use[ResourceNodes] = n
}

// nodePoolUnusable says why the provisioner must not launch from np, or "".
func nodePoolUnusable(np *v1.NodePool) string {
	if np.DeletionTimestamp != nil {
		return "it is being deleted"
	}
	if c := findCondition(np.Status.Conditions, v1.ConditionTypeReady); c != nil && c.Status == metav1.ConditionFalse {
		return fmt.Sprintf("it is not ready (%s: %s)", c.Reason, c.Message)
	}
	return ""
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// claimCapacity is what a NodeClaim counts against its NodePool's limits:
// its Node's or its own status capacity once known; before launch, the
// largest of its instance-type options, so limits hold whatever the cloud
// picks.
func claimCapacity(nc *v1.NodeClaim, node *corev1.Node, its []*scheduling.InstanceType) corev1.ResourceList {
	if node != nil && len(node.Status.Capacity) > 0 {
		return node.Status.Capacity
	}
	if len(nc.Status.Capacity) > 0 {
		return nc.Status.Capacity
	}
	return maxCapacity(optionsOf(nc, its))
}

// optionsOf returns the instance types among its that nc may launch as.
func optionsOf(nc *v1.NodeClaim, its []*scheduling.InstanceType) []*scheduling.InstanceType {
	var allowed []string
	for _, r := range nc.Spec.Requirements {
		if r.Key == v1.LabelInstanceType && r.Operator == corev1.NodeSelectorOpIn {
			allowed = r.Values
		}
	}
	if allowed == nil {
		return its
	}
	out := make([]*scheduling.InstanceType, 0, len(allowed))
	for _, it := range its {
		if slices.Contains(allowed, it.Name) {
			out = append(out, it)
		}
	}
	return out
}

// maxCapacity is the per-resource maximum of the types' capacities.
func maxCapacity(its []*scheduling.InstanceType) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, it := range its {
		for name, q := range it.Capacity {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	return out
}

// minAllocatable is the per-resource minimum of the types' allocatable: what
// an in-flight NodeClaim can surely hold whichever option launches.
func minAllocatable(its []*scheduling.InstanceType) corev1.ResourceList {
	var out corev1.ResourceList
	for _, it := range its {
		alloc := it.Allocatable()
		if out == nil {
			out = alloc
			continue
		}
		for name, q := range out {
			a, ok := alloc[name]
			if !ok {
				delete(out, name)
				continue
			}
			if a.Cmp(q) < 0 {
				out[name] = a
			}
		}
	}
	return out
}

func isInitialized(nc *v1.NodeClaim, node *corev1.Node) bool {
	if node != nil && node.Labels[v1.LabelNodeInitialized] == "true" {
		return true
	}
	c := findCondition(nc.Status.Conditions, v1.ConditionTypeInitialized)
	return c != nil && c.Status == metav1.ConditionTrue
}

func isDisrupted(taints []corev1.Taint) bool {
	for _, t := range taints {
		if t.Key == v1.TaintKeyDisrupted {
			return true
		}
	}
	return false
}

// managedNode is a Node joiner launched, joined with its NodeClaim.
func managedNode(nc *v1.NodeClaim, node *corev1.Node, pods []*corev1.Pod) *scheduling.ExistingNode {
	return &scheduling.ExistingNode{
		Name:              node.Name,
		NodeClaim:         nc.Name,
		NodePool:          nc.Labels[v1.LabelNodePool],
		Labels:            node.Labels,
		Taints:            node.Spec.Taints,
		StartupTaints:     nc.Spec.StartupTaints,
		Initialized:       isInitialized(nc, node),
		Allocatable:       node.Status.Allocatable,
		Pods:              pods,
		MarkedForDeletion: nc.DeletionTimestamp != nil || node.DeletionTimestamp != nil || isDisrupted(node.Spec.Taints),
	}
}

// unmanagedNode is a Node no NodeClaim owns (or whose NodeClaim the cache
// has not seen yet).
func unmanagedNode(node *corev1.Node, pods []*corev1.Pod) *scheduling.ExistingNode {
	return &scheduling.ExistingNode{
		Name:              node.Name,
		NodePool:          node.Labels[v1.LabelNodePool],
		Labels:            node.Labels,
		Taints:            node.Spec.Taints,
		Initialized:       node.Labels[v1.LabelNodePool] == "" || node.Labels[v1.LabelNodeInitialized] == "true",
		Allocatable:       node.Status.Allocatable,
		Pods:              pods,
		MarkedForDeletion: node.DeletionTimestamp != nil || isDisrupted(node.Spec.Taints),
	}
}

// inflightNode is a NodeClaim whose Node has not registered: its labels are
// what its requirements guarantee, its room what every option surely has.
func inflightNode(nc *v1.NodeClaim, its []*scheduling.InstanceType) *scheduling.ExistingNode {
	labels := map[string]string{}
	for _, r := range nc.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			labels[r.Key] = r.Values[0]
		}
	}
	for k, val := range nc.Labels {
		labels[k] = val
	}
	labels[v1.LabelHostname] = nc.Name
	alloc := nc.Status.Allocatable
	if len(alloc) == 0 {
		alloc = minAllocatable(optionsOf(nc, its))
	}
	taints := append(slices.Clone(nc.Spec.Taints), nc.Spec.StartupTaints...)
	return &scheduling.ExistingNode{
		Name:              nc.Name,
		NodeClaim:         nc.Name,
		NodePool:          nc.Labels[v1.LabelNodePool],
		Labels:            labels,
		Taints:            taints,
		StartupTaints:     nc.Spec.StartupTaints,
		Allocatable:       alloc,
		MarkedForDeletion: nc.DeletionTimestamp != nil,
	}
}

// daemonPod is the pod a DaemonSet would put on a new node.
func daemonPod(ds *appsv1.DaemonSet) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(),
		Spec:       *ds.Spec.Template.Spec.DeepCopy(),
	}
	pod.Namespace = ds.Namespace
	pod.Name = ds.Name
	pod.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptrTrue(),
	}}
	return pod
}

func ptrTrue() *bool { t := true; return &t }

func schedulingStorageClass(sc *storagev1.StorageClass) *scheduling.StorageClass {
	return &scheduling.StorageClass{
		Name:                 sc.Name,
		Provisioner:          sc.Provisioner,
		WaitForFirstConsumer: sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer,
		AllowedTopologies:    sc.AllowedTopologies,
	}
}
