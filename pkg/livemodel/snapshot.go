package livemodel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/nodepool"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/state"
)

// Snapshot is the live cluster as the solver and the disruption engine see
// it: one picture, built by one function, so a consolidation never relies
// on capacity the provisioner would not find and a change to the
// provisioner's view is a change to consolidation's too.
type Snapshot struct {
	// Cluster is the solver's Snapshot: nodes and in-flight NodeClaims with
	// their bound and nominated pods, the pending pods, the usable
	// NodePools with their live usage, their instance types, DaemonSets and
	// volumes.
	Cluster *scheduling.Snapshot
	// NodePools are the NodePools the solver may launch from, by name.
	NodePools map[string]*v1.NodePool
	// InUse is each NodePool's capacity in use (existing and in-flight
	// NodeClaims, pessimistically sized while unlaunched) plus its node
	// count.
	InUse state.Usage
	// Skipped says why a NodePool is not in Cluster.NodePools (not ready,
	// deleting, no instance types), for the unschedulable pods' report.
	Skipped map[string]string
	// InstanceTypes are every NodePool's instance types, including
	// NodePools the solver may not launch from now (not ready, deleting):
	// their existing nodes are still priced from them.
	InstanceTypes map[string][]*scheduling.InstanceType
	// Failures is each NodePool's launch failure count (launchhealth),
	// mixed into the names of the NodeClaims it launches.
	Failures map[string]int64
	// NoTypes are the NodePools whose node class offers no instance types.
	NoTypes map[string]*v1.NodePool
}

// InstanceTypes is the part of the cloud provider the snapshot reads
// (cloudprovider.CloudProvider satisfies it).
type InstanceTypes interface {
	// GetInstanceTypes returns the instance types nodePool may launch, with
	// offerings marked unavailable while the cloud lacks capacity.
	GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*scheduling.InstanceType, error)
}

// ClusterState is the part of pkg/state's Cluster the snapshot reads.
type ClusterState interface {
	// ReadOnlyNodes are the Nodes and in-flight NodeClaims with their
	// bound and nominated pods, not copied: a snapshot only reads them
	// (the solver is pure), and a copy of every node and pod per batch was
	// the largest share of joiner's heap at 10,000 pods.
	ReadOnlyNodes() []*state.StateNode
	// DaemonSetPods holds one pod per DaemonSet.
	DaemonSetPods() []*corev1.Pod
}

// UnboundPods lists the pods bound to no node as the informer cache
// holds them (state.PodCache), without copying them.
type UnboundPods interface {
	Unbound(ctx context.Context) ([]*corev1.Pod, error)
}

// Options configure a Builder.
type Options struct {
	// Client reads NodePools, volumes and namespaces from the manager's
	// cache (and the pending pods when Pods is unset).
	Client client.Client
	// Pods, when set, is where the pending pods are read from without a
	// copy; unset, they are listed through Client (a Pod struct copied per
	// pod and snapshot).
	Pods          UnboundPods
	CloudProvider InstanceTypes
	// State is the cluster model the snapshot is built from.
	State ClusterState
	// Nominations leave out of the pending pods those whose nomination
	// holds (Holds), and tell a status.nominatedNodeName joiner wrote
	// from kube-scheduler's (NominatedNodeName): such a pod is still
	// joiner's to plan.
	Nominations state.NominationReader
	Clock       clock.Clock
	// Bookings, when set, is capacity held for ProvisioningRequests: its
	// placeholder pods take room on their nodes (for provisioning and
	// consolidation alike), and the pods that consume a request are not
	// pending pods of a batch.
	Bookings Bookings
	// Devices reads the cluster's DRA objects into the snapshot's Devices
	// view (IGNORE_DRA_REQUESTS=false).
	Devices bool
	// Buffers, when set, are the CapacityBuffers' virtual pods
	// (capacitybuffer.Store): pending pods of the lowest priority in every
	// snapshot, so the provisioner launches room for them and
	// consolidation keeps it.
	Buffers VirtualPods
	// DefaultSpread are kube-scheduler's default topology spread
	// constraints by scheduler name (SCHEDULER_CONFIG, schedulerconfig);
	// nil when unset.
	DefaultSpread map[string][]corev1.TopologySpreadConstraint
}

// VirtualPods are pods that exist only in joiner's plans
// (capacitybuffer.Store).
type VirtualPods interface {
	Pods() []*corev1.Pod
}

func (o *Options) validate() error {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if o.State == nil {
		errs = append(errs, errors.New("cluster state is required"))
	}
	if o.Nominations == nil {
		errs = append(errs, errors.New("nominations are required"))
	}
	if o.CloudProvider == nil {
		errs = append(errs, errors.New("cloud provider is required"))
	}
	if o.Clock == nil {
		errs = append(errs, errors.New("clock is required"))
	}
	return errors.Join(errs...)
}

// Builder builds Snapshots of the live cluster. It keeps nothing between
// builds: each one reads the cluster state and the cache afresh.
type Builder struct {
	opts Options
}

// NewBuilder validates opts and returns a Builder.
func NewBuilder(opts Options) (*Builder, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("live model options: %w", err)
	}
	return &Builder{opts: opts}, nil
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Build assembles the Snapshot from the cluster state (nodes, in-flight
// NodeClaims with their bound and nominated pods, DaemonSets) and the cache
// (NodePools, pending pods, volumes, namespaces). Provisioning plans on it,
// the disruption engine simulates on it, and the status page shows it.
func (b *Builder) Build(ctx context.Context) (*Snapshot, error) {
	c := b.opts.Client
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
	pending, err := b.unboundPods(ctx)
	if err != nil {
		return nil, err
	}

	v := &Snapshot{
		Cluster: &scheduling.Snapshot{
			Now:           b.opts.Clock.Now(),
			InstanceTypes: map[string][]*scheduling.InstanceType{},
		},
		NodePools:     map[string]*v1.NodePool{},
		InUse:         state.Usage{},
		Skipped:       map[string]string{},
		InstanceTypes: map[string][]*scheduling.InstanceType{},
		Failures:      map[string]int64{},
		NoTypes:       map[string]*v1.NodePool{},
	}
	backoffs := map[string][]scheduling.LaunchBackoff{}

	// Instance types come first: in-flight NodeClaims are sized from them.
	allTypes := v.InstanceTypes
	for i := range nodePools.Items {
		np := &nodePools.Items[i]
		if reason := nodePoolUnusable(np); reason != "" {
			v.Skipped[np.Name] = reason
			continue
		}
		its, err := b.opts.CloudProvider.GetInstanceTypes(ctx, np)
		if err != nil {
			v.Skipped[np.Name] = fmt.Sprintf("getting instance types: %v", err)
			continue
		}
		allTypes[np.Name] = its
		if len(its) == 0 {
			v.Skipped[np.Name] = "its node class offers no instance types"
			v.NoTypes[np.Name] = np
			continue
		}
		if np.IsStatic() {
			// Its instance types stay in allTypes: its nodes are priced from
			// them and its static NodeClaims are built from them.
			v.Skipped[np.Name] = "it is static (spec.replicas): its node count is set by replicas, not by pending pods"
			continue
		}
		v.NodePools[np.Name] = np
		v.Cluster.InstanceTypes[np.Name] = its
		backoffs[np.Name], v.Failures[np.Name] = launchBackoffs(ctx, np, its, v.Cluster.Now)
	}

	daemons := b.opts.State.DaemonSetPods()
	stateNodes := b.opts.State.ReadOnlyNodes()
	for _, sn := range stateNodes {
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
				en.Pods = append(en.Pods, scheduling.DaemonPodsFor(daemons, en.Labels, en.Taints)...)
			}
			v.InUse.Add(en.NodePool, claimCapacity(sn, its))
		} else if en.NodePool != "" {
			v.InUse.Add(en.NodePool, sn.Node.Status.Capacity)
		}
		b.withBookings(en)
		v.Cluster.Nodes = append(v.Cluster.Nodes, en)
	}

	for _, pod := range pending {
		// Pods with inline in-tree volumes and pods refusing every managed
		// node go to the solver too: it gives them a typed reason (Volume,
		// ExcludesNodePools) that reaches the pod, where Karpenter skips
		// them without a word.
		if !Provisionable(pod, b.opts.Nominations) || b.consumesBooking(pod) {
			continue
		}
		// A pod nominated to a NodeClaim that is going away is pending
		// again (Holds is false for it).
		if _, _, held := b.opts.Nominations.Holds(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}); held {
			continue
		}
		v.Cluster.Pods = append(v.Cluster.Pods, pod)
	}
	withoutPlanned(v.Cluster.Nodes, v.Cluster.Pods)
	if b.opts.Buffers != nil {
		v.Cluster.Pods = append(v.Cluster.Pods, b.opts.Buffers.Pods()...)
	}
	if b.opts.DefaultSpread != nil {
		// The pending pods and the pods consolidation may move (those of
		// joiner's nodes) are planned with the defaults.
		movable := slices.Clone(v.Cluster.Pods)
		for _, n := range v.Cluster.Nodes {
			if n.NodeClaim != "" {
				movable = append(movable, n.Pods...)
			}
		}
		if v.Cluster.DefaultSpread, err = b.defaultSpread(ctx, movable); err != nil {
			return nil, err
		}
	}

	for name, np := range v.NodePools {
		snp := schedulingNodePool(np, v.InUse[name])
		snp.Backoffs = backoffs[name]
		v.Cluster.NodePools = append(v.Cluster.NodePools, snp)
	}
	slices.SortFunc(v.Cluster.NodePools, func(a, b *scheduling.NodePool) int { return strings.Compare(a.Name, b.Name) })

	v.Cluster.DaemonSets = daemons
	for i := range pvcs.Items {
		v.Cluster.Volumes.PersistentVolumeClaims = append(v.Cluster.Volumes.PersistentVolumeClaims, &pvcs.Items[i])
	}
	for i := range pvs.Items {
		v.Cluster.Volumes.PersistentVolumes = append(v.Cluster.Volumes.PersistentVolumes, &pvs.Items[i])
	}
	for i := range storageClass.Items {
		v.Cluster.Volumes.StorageClasses = append(v.Cluster.Volumes.StorageClasses, schedulingStorageClass(&storageClass.Items[i]))
	}
	// Never nil: the solver evaluates namespaceSelector against exactly
	// these.
	v.Cluster.Namespaces = make([]*corev1.Namespace, 0, len(namespaces.Items))
	for i := range namespaces.Items {
		v.Cluster.Namespaces = append(v.Cluster.Namespaces, &namespaces.Items[i])
	}
	if b.opts.Devices {
		if v.Cluster.Devices, err = b.devices(ctx, v.Cluster, stateNodes, allTypes); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// withoutPlanned takes the pods this pass plans off the nodes their live
// nominations still count them on: a pod planned again before its
// nomination lapses (state.Nominations' renewal) must find the room it
// holds free, or it would be placed elsewhere (or on a new NodeClaim) and
// its own NodeClaim left to look empty.
func withoutPlanned(nodes []*scheduling.ExistingNode, pending []*corev1.Pod) {
	keys := make(map[types.NamespacedName]bool, len(pending))
	for _, pod := range pending {
		keys[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = true
	}
	planned := func(pod *corev1.Pod) bool {
		return pod.Spec.NodeName == "" && keys[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}]
	}
	for _, n := range nodes {
		// A clone: a node's pods may be the cluster state's read-only
		// slice.
		if slices.ContainsFunc(n.Pods, planned) {
			n.Pods = slices.DeleteFunc(slices.Clone(n.Pods), planned)
		}
	}
}

// NominatedNodeNames says which status.nominatedNodeName joiner itself
// wrote into a pod (state.Nominations implements it).
type NominatedNodeNames interface {
	NominatedNodeName(pod types.NamespacedName) (string, bool)
}

// Provisionable is pods.IsProvisionable, except that a
// status.nominatedNodeName joiner itself wrote (own) does not mean
// kube-scheduler is preempting for the pod: the pod is still joiner's to
// plan once its nomination ends. The snapshot's pending pods and the
// provisioner's pod trigger both ask it.
func Provisionable(pod *corev1.Pod, own NominatedNodeNames) bool {
	if nnn := pod.Status.NominatedNodeName; nnn != "" {
		if name, ok := own.NominatedNodeName(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}); ok && name == nnn {
			pod = pod.DeepCopy()
			pod.Status.NominatedNodeName = ""
		}
	}
	return pods.IsProvisionable(pod)
}

// launchBackoffs is launchhealth.SolverBackoffs for a snapshot: an
// unreadable record is logged and read as no back-off, so one bad
// annotation never stops provisioning.
func launchBackoffs(ctx context.Context, np *v1.NodePool, its []*scheduling.InstanceType, now time.Time) ([]scheduling.LaunchBackoff, int64) {
	out, failures, err := launchhealth.SolverBackoffs(np, its, now)
	if err != nil {
		log.FromContext(ctx).Error(err, "ignoring unreadable launch health record", logging.NodePool, klog.KObj(np))
		return nil, 0
	}
	return out, failures
}

// unboundPods are the pods bound to no node, the only ones the
// provisioner can provision for. They are only read (provisionable copies
// a pod before changing it): the cache's own pods, from Options.Pods
// without any copy, else from the client without a deep copy.
func (b *Builder) unboundPods(ctx context.Context) ([]*corev1.Pod, error) {
	if b.opts.Pods != nil {
		return b.opts.Pods.Unbound(ctx)
	}
	var list corev1.PodList
	if err := b.opts.Client.List(ctx, &list, client.MatchingFields{state.IndexPodNodeName: ""}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
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
// its launched capacity once known (StateNode.LaunchedCapacity); before
// launch, the largest of its instance-type options, so limits hold
// whatever the cloud picks.
func claimCapacity(sn *state.StateNode, its []*scheduling.InstanceType) corev1.ResourceList {
	if c := sn.LaunchedCapacity(); c != nil {
		return c
	}
	return maxCapacity(optionsOf(sn.NodeClaim, its))
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
