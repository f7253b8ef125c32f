package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/nodepool"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/state"
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
	// allTypes are the instance types of every NodePool that has any,
	// skipped ones included: existing nodes are priced from them.
	allTypes map[string][]*scheduling.InstanceType
	// failures is each NodePool's launch failure count (launchhealth),
	// mixed into the names of the NodeClaims it launches.
	failures map[string]int64
	// backoffs are the NodePools' active launch back-offs.
	backoffs map[string][]scheduling.LaunchBackoff
	// noTypes are the NodePools whose node class offers no instance types.
	noTypes map[string]*v1.NodePool
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// buildView assembles the Snapshot from the cluster state (nodes,
// in-flight NodeClaims with their bound and nominated pods, DaemonSets) and
// the cache (NodePools, pending pods, volumes, namespaces).
func (p *Provisioner) buildView(ctx context.Context) (*view, error) {
	c := p.opts.Client
	var (
		nodePools    v1.NodePoolList
		pvcs         corev1.PersistentVolumeClaimList
		pvs          corev1.PersistentVolumeList
		storageClass storagev1.StorageClassList
		namespaces   corev1.NamespaceList
	)
	lists := []struct {
		what string
		obj  client.ObjectList
		opts []client.ListOption
	}{
		{"nodepools", &nodePools, nil},
		{"persistentvolumeclaims", &pvcs, nil}, {"persistentvolumes", &pvs, nil}, {"storageclasses", &storageClass, nil},
		{"namespaces", &namespaces, nil},
	}
	for _, l := range lists {
		if err := c.List(ctx, l.obj, l.opts...); err != nil {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	pods, err := p.unboundPods(ctx)
	if err != nil {
		return nil, err
	}

	v := &view{
		snapshot: &scheduling.Snapshot{
			Now:           p.opts.Clock.Now(),
			InstanceTypes: map[string][]*scheduling.InstanceType{},
		},
		nodePools: map[string]*v1.NodePool{},
		inUse:     map[string]corev1.ResourceList{},
		skipped:   map[string]string{},
		failures:  map[string]int64{},
		backoffs:  map[string][]scheduling.LaunchBackoff{},
		noTypes:   map[string]*v1.NodePool{},
	}

	// Instance types come first: in-flight NodeClaims are sized from them.
	allTypes := map[string][]*scheduling.InstanceType{}
	v.allTypes = allTypes
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
		allTypes[np.Name] = its
		if len(its) == 0 {
			v.skipped[np.Name] = "its node class offers no instance types"
			v.noTypes[np.Name] = np
			continue
		}
		v.nodePools[np.Name] = np
		v.snapshot.InstanceTypes[np.Name] = its
		v.backoffs[np.Name], v.failures[np.Name] = launchBackoffs(ctx, np, its, v.snapshot.Now)
	}

	daemons := p.opts.State.DaemonSetPods()
	for _, sn := range p.opts.State.ReadOnlyNodes() {
		en := sn.ExistingNode()
		if sn.MarkedForDeletion {
			en.Pods = sn.Pods
		}
		if sn.NodeClaim != nil {
			its := optionsOf(sn.NodeClaim, allTypes[en.NodePool])
			if len(en.Allocatable) == 0 {
				en.Allocatable = minAllocatable(its)
			}
			if sn.Node == nil && !sn.MarkedForDeletion {
				en.Pods = append(en.Pods, daemonPodsFor(daemons, en.Labels, en.Taints)...)
			}
			v.addInUse(en.NodePool, claimCapacity(sn.NodeClaim, sn.Node, its))
		} else if en.NodePool != "" {
			v.addInUse(en.NodePool, sn.Node.Status.Capacity)
		}
		v.snapshot.Nodes = append(v.snapshot.Nodes, en)
	}

	for _, pod := range pods {
		// Pods with inline in-tree volumes and pods refusing every managed
		// node go to the solver too: it gives them a typed reason (Volume,
		// ExcludesNodePools) that reaches the pod, where Karpenter skips
		// them without a word.
		if !p.provisionable(pod) {
			continue
		}
		// A pod nominated to a NodeClaim that is going away is pending
		// again (HoldsNomination is false for it).
		if _, _, held := p.opts.State.HoldsNomination(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}); held {
			continue
		}
		v.snapshot.Pods = append(v.snapshot.Pods, pod)
	}

	for name, np := range v.nodePools {
		snp := schedulingNodePool(np, v.inUse[name])
		snp.Backoffs = v.backoffs[name]
		v.snapshot.NodePools = append(v.snapshot.NodePools, snp)
	}
	slices.SortFunc(v.snapshot.NodePools, func(a, b *scheduling.NodePool) int { return strings.Compare(a.Name, b.Name) })

	v.snapshot.DaemonSets = daemons
	for i := range pvcs.Items {
		v.snapshot.Volumes.PersistentVolumeClaims = append(v.snapshot.Volumes.PersistentVolumeClaims, &pvcs.Items[i])
	}
	for i := range pvs.Items {
		v.snapshot.Volumes.PersistentVolumes = append(v.snapshot.Volumes.PersistentVolumes, &pvs.Items[i])
	}
	for i := range storageClass.Items {
		v.snapshot.Volumes.StorageClasses = append(v.snapshot.Volumes.StorageClasses, schedulingStorageClass(&storageClass.Items[i]))
	}
	// Never nil: the solver evaluates namespaceSelector against exactly
	// these.
	v.snapshot.Namespaces = make([]*corev1.Namespace, 0, len(namespaces.Items))
	for i := range namespaces.Items {
		v.snapshot.Namespaces = append(v.snapshot.Namespaces, &namespaces.Items[i])
	}
	return v, nil
}

// unboundPods are the pods bound to no node, the only ones the
// provisioner can provision for. They are only read (provisionable copies
// a pod before changing it): the cache's own pods, from Options.Pods
// without any copy, else from the client without a deep copy.
func (p *Provisioner) unboundPods(ctx context.Context) ([]*corev1.Pod, error) {
	if p.opts.Pods != nil {
		return p.opts.Pods.Unbound(ctx)
	}
	var list corev1.PodList
	if err := p.opts.Client.List(ctx, &list, client.MatchingFields{state.IndexPodNodeName: ""}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return pods, nil
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
	if err := nodepool.Validate(np); err != nil {
		return fmt.Sprintf("it is invalid: %v", err)
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

func schedulingStorageClass(sc *storagev1.StorageClass) *scheduling.StorageClass {
	return &scheduling.StorageClass{
		Name:                 sc.Name,
		Provisioner:          sc.Provisioner,
		WaitForFirstConsumer: sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer,
		AllowedTopologies:    sc.AllowedTopologies,
	}
}
