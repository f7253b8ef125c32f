package termination_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/fake"
	"github.com/joiner-dev/joiner/pkg/controllers/node/termination"
	nodeclaimtermination "github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/termination"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// laggingCache is a cache that has not seen the latest versions of one
// Node and one NodeClaim (each when set): it answers the copies it holds,
// and lists only the held NodeClaim. Every other read goes to the
// manager's cache, and every write to the API server.
type laggingCache struct {
	test.StaleCache
	nodeClaim *v1.NodeClaim
}

func lagging(c client.Client, node *corev1.Node, nodeClaim *v1.NodeClaim) laggingCache {
	l := laggingCache{StaleCache: test.StaleCache{Client: c}, nodeClaim: nodeClaim}
	if node != nil {
		l.Held = append(l.Held, node)
	}
	if nodeClaim != nil {
		l.Held = append(l.Held, nodeClaim)
	}
	return l
}

func (l laggingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if ncs, ok := list.(*v1.NodeClaimList); ok && l.nodeClaim != nil {
		ncs.Items = []v1.NodeClaim{*l.nodeClaim.DeepCopy()}
		return nil
	}
	return l.Client.List(ctx, list, opts...)
}

// TestStaleNodeIsTaintedAndReleasedInOnePass reconciles, once, a deleted
// Node whose cached copy is behind the API server, as it was for a thousand
// nodes in the XL performance run (kwok's heartbeats moved every Node on
// faster than the cache followed): after the copy was cached the Node's
// status got a heartbeat, another writer added its own taint, and another
// removed its finalizer. The Node's instance is already gone and it is not
// Ready, so one pass taints it and removes joiner's finalizer. Both writes
// must land in that pass, keep the other writers' taint, and neither drop
// nor bring back anyone else's finalizer; a finalizer of a third writer
// holds the Node so its end state can be read.
func TestStaleNodeIsTaintedAndReleasedInOnePass(t *testing.T) {
	const (
		holds = "joiner.test/holds"
		done  = "joiner.test/done"
	)
	other := corev1.Taint{Key: "joiner.test/other", Value: "writer", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name string
		// tainted: the Node already has the disrupted taint and the load
		// balancer label, so the pass only removes the finalizer.
		tainted bool
	}{
		{name: "untainted"},
		{name: "tainted", tainted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			env := test.Env(t)
			mgr := env.NewManager(t)
			test.StartManager(t, mgr)

			name := test.Name(t, "stale")
			node := &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{
					Name:       name,
					Labels:     map[string]string{corev1.LabelHostname: name, v1.LabelNodePool: "default"},
					Finalizers: []string{v1.TerminationFinalizer, holds, done},
				},
				// No instance in the fake cloud has this ID: it is already
				// terminated.
				Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("%s:///zone-a/%s", fake.ProviderName, name)},
			}
			if tc.tainted {
				node.Spec.Taints = []corev1.Taint{v1.DisruptedNoScheduleTaint}
				node.Labels["node.kubernetes.io/exclude-from-external-load-balancers"] = "karpenter"
			}
			if err := env.Client.Create(ctx, node); err != nil {
				t.Fatalf("creating node: %v", err)
			}
			t.Cleanup(func() { release(t, env.Client, node, holds) })
			if err := env.Client.Delete(ctx, node); err != nil {
				t.Fatalf("deleting node: %v", err)
			}
			cached := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), cached); err != nil {
				t.Fatal(err)
			}

			// The API server's Node moves on; the cached copy does not.
			heartbeat := metav1.NewTime(time.Now().Truncate(time.Second)) // the API server keeps seconds
			// kube-controller-manager's node lifecycle controller may taint
			// the Node (as soon as its Ready condition is Unknown): each
			// writer retries on the latest version, as a writer does.
			moved := &corev1.Node{}
			if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), moved); err != nil {
					return err
				}
				moved.Status.Conditions = []corev1.NodeCondition{{
					Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
					LastHeartbeatTime: heartbeat, LastTransitionTime: heartbeat,
				}}
				return env.Client.Status().Update(ctx, moved)
			}); err != nil {
				t.Fatalf("heartbeat: %v", err)
			}
			if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), moved); err != nil {
					return err
				}
				moved.Spec.Taints = append(moved.Spec.Taints, other)
				controllerutil.RemoveFinalizer(moved, done)
				return env.Client.Update(ctx, moved)
			}); err != nil {
				t.Fatalf("another writer's taint and finalizer: %v", err)
			}

			reconcileStale(t, mgr, client.ObjectKeyFromObject(node), cached, nil, termination.Options{})

			got := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Finalizers, []string{holds}) {
				t.Errorf("finalizers %v, want only %s: joiner's removed, the other writer's removal kept", got.Finalizers, holds)
			}
			if !hasTaint(got, v1.DisruptedNoScheduleTaint) || !hasTaint(got, other) {
				t.Errorf("taints %v, want the disrupted taint and the other writer's %s", got.Spec.Taints, other.Key)
			}
			if got.Labels["node.kubernetes.io/exclude-from-external-load-balancers"] == "" {
				t.Errorf("labels %v: not excluded from load balancers", got.Labels)
			}
			if len(got.Status.Conditions) == 0 || !got.Status.Conditions[0].LastHeartbeatTime.Equal(&heartbeat) {
				t.Errorf("status conditions %v: the heartbeat was lost", got.Status.Conditions)
			}
		})
	}
}

// reconcileStale runs one pass of node termination on key with a cache
// that holds node and nodeClaim (each when set) as they were; opts's
// cloud and recorder default to fresh fakes.
func reconcileStale(t *testing.T, mgr manager.Manager, key client.ObjectKey, node *corev1.Node, nodeClaim *v1.NodeClaim, opts termination.Options) {
	t.Helper()
	opts.Client = lagging(mgr.GetClient(), node, nodeClaim)
	opts.APIReader = mgr.GetAPIReader()
	if opts.CloudProvider == nil {
		opts.CloudProvider = fake.New()
	}
	if opts.Recorder == nil {
		opts.Recorder = &events.Buffer{}
	}
	ctrl, err := termination.NewController(opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctrl.Reconcile(t.Context(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatalf("one pass on a stale copy: %v", err)
	}
}

// recordOtherCondition has another controller record its condition on
// the API server's NodeClaim, after cached was read: the cached copy does
// not see it.
func recordOtherCondition(t *testing.T, c client.Client, cached *v1.NodeClaim) {
	t.Helper()
	moved := cached.DeepCopy()
	moved.StatusConditions().SetTrueWithReason("Other", "AnotherController", "")
	if err := c.Status().Update(t.Context(), moved); err != nil {
		t.Fatalf("another controller's condition: %v", err)
	}
}

func hasTaint(n *corev1.Node, want corev1.Taint) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&want) && t.Value == want.Value })
}

// release removes the finalizers a test left on obj so the API server
// deletes it.
func release(t *testing.T, c client.Client, obj client.Object, finalizers ...string) {
	t.Helper()
	ctx := context.Background()
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	obj.SetFinalizers(slices.DeleteFunc(obj.GetFinalizers(), func(f string) bool { return slices.Contains(finalizers, f) }))
	if err := c.Patch(ctx, obj, patch); client.IgnoreNotFound(err) != nil {
		t.Errorf("releasing %T %s: %v", obj, obj.GetName(), err)
	}
}

// TestStaleNodeClaimRecordsTheTermination reconciles, once, a deleted Node
// whose NodeClaim's cached copy is behind the API server: another
// controller recorded a condition after the copy was cached. The node is
// empty and its drain window over, so the pass records Drained,
// VolumesDetached and InstanceTerminating on the NodeClaim; all three must
// be written in that pass and the other controller's condition kept.
func TestStaleNodeClaimRecordsTheTermination(t *testing.T) {
	ctx := t.Context()
	env := test.Env(t)
	mgr := env.NewManager(t)
	test.StartManager(t, mgr)
	h := &harness{client: env.Client, cloud: fake.New(), recorder: &events.Buffer{}}
	nc, node := h.launchWith(t, test.Name(t, "stale"), launchOptions{nodeClass: simNodeClass})
	t.Cleanup(func() {
		release(t, env.Client, node, v1.TerminationFinalizer)
		release(t, env.Client, nc, v1.TerminationFinalizer)
	})
	for _, obj := range []client.Object{nc, node} {
		if err := env.Client.Delete(ctx, obj); err != nil {
			t.Fatalf("deleting %T: %v", obj, err)
		}
	}
	cachedNode, cachedClaim := &corev1.Node{}, &v1.NodeClaim{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), cachedNode); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), cachedClaim); err != nil {
		t.Fatal(err)
	}

	// Another controller records its condition; the cached copy does not
	// see it.
	recordOtherCondition(t, env.Client, cachedClaim)

	reconcileStale(t, mgr, client.ObjectKeyFromObject(node), cachedNode, cachedClaim, termination.Options{
		CloudProvider: h.cloud,
		Recorder:      h.recorder,
		// Past the drain window, which counts from the Node's deletion.
		Clock: clocktesting.NewFakeClock(cachedNode.DeletionTimestamp.Add(time.Minute)),
	})

	got := &v1.NodeClaim{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	for _, cond := range []string{v1.ConditionTypeDrained, v1.ConditionTypeVolumesDetached, v1.ConditionTypeInstanceTerminating, "Other"} {
		if c := got.StatusConditions().Get(cond); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("condition %s = %+v, want True; conditions %v", cond, c, got.Status.Conditions)
		}
	}
}

// TestStaleCopyDoesNotTouchANamesake reconciles, once, a Node whose cached
// copy is of an earlier Node of the same name: that one was deleted and
// released, and a new Node registered under the name (an instance replaced
// with the same host name) before the cache caught up. The stale copy says
// deleting, not Ready, instance gone; the pass's writes conflict and are
// recomputed on the API server's copy, which is the new Node. The new Node
// must keep joiner's finalizer (its own termination needs it) and get no
// disrupted taint.
func TestStaleCopyDoesNotTouchANamesake(t *testing.T) {
	for _, tc := range []struct {
		name string
		// tainted: the stale copy already has the disrupted taint and the
		// load balancer label, so the pass's first write is the
		// finalizer's removal.
		tainted bool
	}{
		{name: "untainted"},
		{name: "tainted", tainted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			env := test.Env(t)
			mgr := env.NewManager(t)
			test.StartManager(t, mgr)

			name := test.Name(t, "namesake")
			newNode := func() *corev1.Node {
				return &corev1.Node{
					ObjectMeta: metav1.ObjectMeta{
						Name:       name,
						Labels:     map[string]string{corev1.LabelHostname: name, v1.LabelNodePool: "default"},
						Finalizers: []string{v1.TerminationFinalizer},
					},
					// No instance in the fake cloud has this ID.
					Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("%s:///zone-a/%s", fake.ProviderName, name)},
				}
			}
			old := newNode()
			if tc.tainted {
				old.Spec.Taints = []corev1.Taint{v1.DisruptedNoScheduleTaint}
				old.Labels["node.kubernetes.io/exclude-from-external-load-balancers"] = "karpenter"
			}
			if err := env.Client.Create(ctx, old); err != nil {
				t.Fatalf("creating node: %v", err)
			}
			if err := env.Client.Delete(ctx, old); err != nil {
				t.Fatalf("deleting node: %v", err)
			}
			cached := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(old), cached); err != nil {
				t.Fatal(err)
			}
			release(t, env.Client, old.DeepCopy(), v1.TerminationFinalizer)
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(old), &corev1.Node{}); err == nil || client.IgnoreNotFound(err) != nil {
				t.Fatalf("the old node should be gone: %v", err)
			}
			namesake := newNode()
			if err := env.Client.Create(ctx, namesake); err != nil {
				t.Fatalf("registering the namesake: %v", err)
			}
			t.Cleanup(func() { release(t, env.Client, namesake, v1.TerminationFinalizer) })

			reconcileStale(t, mgr, client.ObjectKeyFromObject(old), cached, nil, termination.Options{})

			got := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(namesake), got); err != nil {
				t.Fatal(err)
			}
			if got.UID != namesake.UID {
				t.Fatalf("node %s has UID %s, want the namesake's %s", name, got.UID, namesake.UID)
			}
			if !slices.Contains(got.Finalizers, v1.TerminationFinalizer) {
				t.Errorf("finalizers %v: the namesake lost joiner's termination finalizer", got.Finalizers)
			}
			if hasTaint(got, v1.DisruptedNoScheduleTaint) {
				t.Errorf("taints %v: the namesake was tainted as disrupted", got.Spec.Taints)
			}
		})
	}
}

// TestStaleNodeClaimIsReleasedInOnePass reconciles, once, with the
// NodeClaim termination controller, a deleted NodeClaim whose Node is gone
// and whose instance is terminated, but whose cached copy is behind the API
// server: another controller recorded a condition after the copy was
// cached. The pass must remove joiner's finalizer and keep the other
// controller's condition and finalizer (which holds the NodeClaim so its
// end state can be read).
func TestStaleNodeClaimIsReleasedInOnePass(t *testing.T) {
	const holds = "joiner.test/holds"
	ctx := t.Context()
	env := test.Env(t)
	mgr := env.NewManager(t)
	test.StartManager(t, mgr)
	name := test.Name(t, "stale")
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{v1.TerminationFinalizer, holds}, Labels: map[string]string{v1.LabelNodePool: "default"}},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: simNodeClass,
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
		},
	}
	if err := env.Client.Create(ctx, nc); err != nil {
		t.Fatalf("creating nodeclaim: %v", err)
	}
	t.Cleanup(func() { release(t, env.Client, nc, v1.TerminationFinalizer, holds) })
	// No instance in the fake cloud has this ID: it is already terminated.
	nc.Status.ProviderID = fmt.Sprintf("%s:///zone-a/%s", fake.ProviderName, name)
	if err := env.Client.Status().Update(ctx, nc); err != nil {
		t.Fatalf("updating nodeclaim status: %v", err)
	}
	if err := env.Client.Delete(ctx, nc); err != nil {
		t.Fatalf("deleting nodeclaim: %v", err)
	}
	cached := &v1.NodeClaim{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), cached); err != nil {
		t.Fatal(err)
	}
	recordOtherCondition(t, env.Client, cached)

	ctrl, err := nodeclaimtermination.NewController(nodeclaimtermination.Options{
		Client:        lagging(mgr.GetClient(), nil, cached),
		APIReader:     mgr.GetAPIReader(),
		CloudProvider: fake.New(),
		Recorder:      &events.Buffer{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)}); err != nil {
		t.Fatalf("one pass on a stale nodeclaim: %v", err)
	}
	got := &v1.NodeClaim{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Finalizers, []string{holds}) {
		t.Errorf("finalizers %v, want only %s", got.Finalizers, holds)
	}
	if c := got.StatusConditions().Get("Other"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("the other controller's condition was lost: %v", got.Status.Conditions)
	}
}

// blindCache is a cache whose watch of one kind is behind: it lists none
// of the kind of blind. Blind to pods, it is joiner's cache for a while
// after a kube-apiserver restart in chaos round sim 1, when
// kube-controller-manager's pod garbage collector removed a pod under a
// PodDisruptionBudget whose node had been released without it; blind to
// Nodes, a cache behind a registration.
type blindCache struct {
	laggingCache
	blind client.ObjectList
}

func (c blindCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if reflect.TypeOf(list) == reflect.TypeOf(c.blind) {
		return nil
	}
	return c.laggingCache.List(ctx, list, opts...)
}

// launchedWithPod starts a manager and launches a NodeClaim with a
// registered Node that runs one pod.
func launchedWithPod(t *testing.T) (*harness, manager.Manager, *v1.NodeClaim, *corev1.Node, *corev1.Pod) {
	t.Helper()
	env := test.Env(t)
	mgr := env.NewManager(t)
	test.StartManager(t, mgr)
	h := &harness{client: env.Client, cloud: fake.New(), recorder: &events.Buffer{}}
	nc, node := h.launch(t, test.Name(t, "unseen"), nil)
	t.Cleanup(func() {
		release(t, env.Client, node, v1.TerminationFinalizer)
		release(t, env.Client, nc, v1.TerminationFinalizer)
	})
	pod := runningPods(t, env.Client, env.Namespace(t), "unseen", node.Name, 1)[0]
	return h, mgr, nc, node, pod
}

// TestDrainIsConfirmedByTheAPIServer reconciles, once and past the drain
// window, a deleted Node whose pod the cache has not seen, before and
// after an earlier pass recorded the drain (a node whose volumes take
// long to detach waits many passes between the two). The API server's
// list of the node's pods decides until the instance's termination is
// recorded: the pod is evicted, and the instance and the Node's finalizer
// stay until it is gone.
func TestDrainIsConfirmedByTheAPIServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		// drained: an earlier pass recorded Drained on the NodeClaim.
		drained bool
	}{
		{name: "drain not recorded yet"},
		{name: "drain recorded, instance not yet terminating", drained: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			h, mgr, nc, node, unseen := launchedWithPod(t)
			env := test.Env(t)
			if tc.drained {
				nc.StatusConditions().SetTrueWithReason(v1.ConditionTypeDrained, "Drained", "")
				if err := env.Client.Status().Update(ctx, nc); err != nil {
					t.Fatalf("recording Drained: %v", err)
				}
			}
			if err := env.Client.Delete(ctx, node); err != nil {
				t.Fatalf("deleting node: %v", err)
			}
			cached := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), cached); err != nil {
				t.Fatal(err)
			}

			ctrl, err := termination.NewController(termination.Options{
				Client:        blindCache{lagging(mgr.GetClient(), cached, nil), &corev1.PodList{}},
				APIReader:     mgr.GetAPIReader(),
				CloudProvider: h.cloud,
				Recorder:      h.recorder,
				Clock:         clocktesting.NewFakeClock(cached.DeletionTimestamp.Add(time.Minute)),
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)}); err != nil {
				t.Fatalf("one pass with a cache blind to the node's pod: %v", err)
			}

			got := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
				t.Fatalf("the node went with a pod still on it: %v", err)
			}
			if !hasFinalizer(got) {
				t.Errorf("the node's finalizer was removed with pod %s still on it", unseen.Name)
			}
			if _, err := h.cloud.Get(ctx, nc.Status.ProviderID); err != nil {
				t.Errorf("the instance was terminated with pod %s still on it: %v", unseen.Name, err)
			}
			evicted := &corev1.Pod{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(unseen), evicted); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			} else if err == nil && evicted.DeletionTimestamp == nil {
				t.Errorf("pod %s, which the API server lists on the node, was not evicted", unseen.Name)
			}
		})
	}
}

// TestNodeClaimTerminationConfirmsItsNodeIsGone reconciles, once, a
// deleted NodeClaim whose registered Node, running a pod, the cache does
// not show: either the cache lists no Node, or its copy of the NodeClaim
// predates the launch (no provider ID). The API server's NodeClaim and
// Node decide: the Node is deleted, so its own termination drains it, and
// the instance and the NodeClaim's finalizer stay. Before, the pass
// terminated the instance (or, with no provider ID, released the
// NodeClaim and left the instance to garbage collection), and the pod
// went with the Node, undrained.
func TestNodeClaimTerminationConfirmsItsNodeIsGone(t *testing.T) {
	for _, tc := range []struct {
		name string
		// cache builds the pass's cache from the manager's client and the
		// NodeClaim as the cache held it before its deletion.
		cache func(c client.Client, nc *v1.NodeClaim) client.Client
		// unnamed: the NodeClaim was deleted between registration's
		// removal of karpenter.sh/unregistered and its recording of
		// status.nodeName, so the API server's copy has no node name.
		unnamed bool
	}{
		{name: "node not in the cache", cache: func(c client.Client, nc *v1.NodeClaim) client.Client {
			return blindCache{lagging(c, nil, nc), &corev1.NodeList{}}
		}},
		{name: "launch not in the cache", cache: func(c client.Client, nc *v1.NodeClaim) client.Client {
			unlaunched := nc.DeepCopy()
			unlaunched.Status = v1.NodeClaimStatus{}
			return lagging(c, nil, unlaunched)
		}},
		{name: "node name never recorded", unnamed: true, cache: func(c client.Client, nc *v1.NodeClaim) client.Client {
			return blindCache{lagging(c, nil, nc), &corev1.NodeList{}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			h, mgr, nc, node, _ := launchedWithPod(t)
			env := test.Env(t)
			if tc.unnamed {
				nc.Status.NodeName = ""
				if err := env.Client.Status().Update(ctx, nc); err != nil {
					t.Fatalf("clearing the node name: %v", err)
				}
			}
			if err := env.Client.Delete(ctx, nc); err != nil {
				t.Fatalf("deleting nodeclaim: %v", err)
			}
			cached := &v1.NodeClaim{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), cached); err != nil {
				t.Fatal(err)
			}
			ctrl, err := nodeclaimtermination.NewController(nodeclaimtermination.Options{
				Client:        tc.cache(mgr.GetClient(), cached),
				APIReader:     mgr.GetAPIReader(),
				CloudProvider: h.cloud,
				Recorder:      h.recorder,
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)}); err != nil {
				t.Fatalf("one pass: %v", err)
			}
			if _, err := h.cloud.Get(ctx, nc.Status.ProviderID); err != nil {
				t.Errorf("the instance was terminated under its registered node: %v", err)
			}
			got := &v1.NodeClaim{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil || !hasFinalizer(got) {
				t.Errorf("the nodeclaim was released before its node went (err %v, finalizers %v)", err, got.Finalizers)
			}
			gotNode := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), gotNode); err != nil {
				t.Fatal(err)
			}
			if gotNode.DeletionTimestamp == nil {
				t.Errorf("node %s was not deleted, so nothing drains it", node.Name)
			}
		})
	}
}
