package nomination_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controllers/nomination"
	"github.com/joiner-dev/joiner/pkg/state"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestNominationWriter drives the writer on a real API server: it names
// the planned node once the NodeClaim has one, moves the value it owns,
// clears it when the nomination ends or the pod binds elsewhere, and
// leaves a value it did not write alone.
func TestNominationWriter(t *testing.T) {
	for _, tc := range []struct {
		name string
		// act runs after the pod was nominated to a NodeClaim registered
		// as node "planned" and the writer reconciled once.
		act  func(t *testing.T, f *writerFixture)
		want string
	}{
		{name: "names the registered node", act: func(*testing.T, *writerFixture) {}, want: "planned"},
		{name: "moves it when the plan changes", want: "moved", act: func(t *testing.T, f *writerFixture) {
			f.cluster.Nominations().Nominate(f.pod, f.nodeClaim(t, "moved").Name)
		}},
		{name: "clears it when the NodeClaim goes away", want: "", act: func(t *testing.T, f *writerFixture) {
			f.cluster.DeleteNodeClaim(f.claim.Name)
		}},
		{name: "clears it when the pod binds elsewhere", want: "", act: func(t *testing.T, f *writerFixture) {
			binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: f.pod.Name, Namespace: f.pod.Namespace}, Target: corev1.ObjectReference{Kind: "Node", Name: "elsewhere"}}
			if err := f.env.Client.SubResource("binding").Create(t.Context(), f.pod, binding); err != nil {
				t.Fatal(err)
			}
			f.refresh(t)
			f.cluster.UpdatePod(f.pod)
		}},
		{name: "sets it again after kube-scheduler cleared it", want: "planned", act: func(t *testing.T, f *writerFixture) {
			f.setNominatedNodeName(t, "")
		}},
		{name: "leaves a value it did not write", want: "preemptor", act: func(t *testing.T, f *writerFixture) {
			f.setNominatedNodeName(t, "preemptor")
			f.cluster.Nominations().SetNominatedNodeName(client.ObjectKeyFromObject(f.pod), "")
			f.cluster.Nominations().Nominate(f.pod, f.nodeClaim(t, "moved").Name)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newWriterFixture(t)
			f.claim = f.nodeClaim(t, "")
			f.cluster.Nominations().Nominate(f.pod, f.claim.Name)
			f.reconcile(t)
			if got := f.refresh(t).Status.NominatedNodeName; got != "" {
				t.Fatalf("nominatedNodeName = %q before the NodeClaim has a node", got)
			}
			f.register(t, f.claim, "planned")
			f.reconcile(t)
			if got := f.refresh(t).Status.NominatedNodeName; got != "planned" {
				t.Fatalf("nominatedNodeName = %q, want the registered node", got)
			}
			tc.act(t, f)
			f.reconcile(t)
			if got := f.refresh(t).Status.NominatedNodeName; got != tc.want {
				t.Fatalf("nominatedNodeName = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestNominationWriterNamesAStartingNodeOnce follows a NodeClaim's Node
// from its creation to registration. While the Node is unregistered
// nothing can be scheduled there, and kube-scheduler clears the value at
// each attempt: Reconcile leaves the pod unnamed then (a value would only
// be cleared again), registration names the Node (HoldRoom) just before it
// removes the unregistered taint, and after the taint is gone a clearing
// is answered by naming it again.
func TestNominationWriterNamesAStartingNodeOnce(t *testing.T) {
	f := newWriterFixture(t)
	f.launchedClaim(t)
	var node *corev1.Node
	for _, step := range []struct {
		name string
		act  func(t *testing.T)
		// named: the pod should carry node's name after the step.
		named bool
	}{
		{name: "launched, no Node yet", act: func(*testing.T) {}},
		{name: "Node created, unregistered", act: func(t *testing.T) { node = f.unregisteredNode(t) }},
		{name: "registration holds the room", named: true, act: func(t *testing.T) {
			if err := f.writer.HoldRoom(t.Context(), f.claim.Name, node.Name); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "cleared by kube-scheduler, Node still unregistered", act: func(t *testing.T) {
			f.setNominatedNodeName(t, "", client.FieldOwner("kube-scheduler"))
		}},
		{name: "unregistered taint removed", named: true, act: func(t *testing.T) {
			base := node.DeepCopy()
			node.Spec.Taints = nil
			if err := f.env.Client.Patch(t.Context(), node, client.MergeFrom(base)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "cleared by kube-scheduler, Node registered", named: true, act: func(t *testing.T) {
			f.setNominatedNodeName(t, "", client.FieldOwner("kube-scheduler"))
		}},
	} {
		step.act(t)
		f.reconcile(t)
		want := ""
		if step.named {
			want = node.Name
		}
		if got := f.refresh(t).Status.NominatedNodeName; got != want {
			t.Fatalf("%s: nominatedNodeName = %q, want %q", step.name, got, want)
		}
	}
}

// TestNominationWriterHoldsRoomBeforeRegistration: while the planned
// pod's Node still carries the unregistered taint Reconcile leaves the
// pod unnamed (kube-scheduler would only clear the value again).
// Registration calls HoldRoom just before it removes the taint: the value
// is written then, while nothing can be scheduled on the Node yet,
// for the planned pods only, and a value another component wrote stays.
func TestNominationWriterHoldsRoomBeforeRegistration(t *testing.T) {
	f := newWriterFixture(t)
	f.launchedClaim(t)
	node := f.unregisteredNode(t)

	// A second pod planned for the same NodeClaim, preempting elsewhere:
	// its value is kube-scheduler's and stays.
	preemptor := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "preemptor", Namespace: f.ns},
		Spec:       f.pod.Spec,
	}
	f.env.Create(t, preemptor)
	base2 := preemptor.DeepCopy()
	preemptor.Status.NominatedNodeName = "victims-node"
	if err := f.env.Client.Status().Patch(t.Context(), preemptor, client.MergeFrom(base2), client.FieldOwner("kube-scheduler")); err != nil {
		t.Fatal(err)
	}
	f.cluster.Nominations().Nominate(preemptor, f.claim.Name)

	f.reconcile(t)
	if got := f.refresh(t).Status.NominatedNodeName; got != "" {
		t.Fatalf("Reconcile set nominatedNodeName %q while the Node is unregistered", got)
	}

	if err := f.writer.HoldRoom(t.Context(), f.claim.Name, node.Name); err != nil {
		t.Fatal(err)
	}
	if got := f.refresh(t).Status.NominatedNodeName; got != node.Name {
		t.Errorf("after HoldRoom nominatedNodeName = %q, want %s", got, node.Name)
	}
	if err := f.env.Client.Get(t.Context(), client.ObjectKeyFromObject(preemptor), preemptor); err != nil {
		t.Fatal(err)
	}
	if got := preemptor.Status.NominatedNodeName; got != "victims-node" {
		t.Errorf("HoldRoom overwrote kube-scheduler's value: %q", got)
	}

	// A pod no longer planned there is not touched.
	f.cluster.Nominations().Release(f.pod)
	f.setNominatedNodeName(t, "", client.FieldOwner("kube-scheduler"))
	if err := f.writer.HoldRoom(t.Context(), f.claim.Name, node.Name); err != nil {
		t.Fatal(err)
	}
	if got := f.refresh(t).Status.NominatedNodeName; got != "" {
		t.Errorf("HoldRoom named the node for a pod no longer planned there: %q", got)
	}
}

// TestNominationWriterHoldsRoomAheadOfTheCache: registration calls HoldRoom
// for a NodeClaim the writer's cache does not hold (a cache behind the
// registering one). HoldRoom still names the Node for the planned pods: it
// knows the NodeClaim's Node from registration itself.
func TestNominationWriterHoldsRoomAheadOfTheCache(t *testing.T) {
	f := newWriterFixture(t)
	f.launchedClaim(t)
	node := f.unregisteredNode(t)
	f.interceptWriter(t, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*v1.NodeClaim); ok {
				return apierrors.NewNotFound(v1.SchemeGroupVersion.WithResource("nodeclaims").GroupResource(), key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	if err := f.writer.HoldRoom(t.Context(), f.claim.Name, node.Name); err != nil {
		t.Fatal(err)
	}
	if got := f.refresh(t).Status.NominatedNodeName; got != node.Name {
		t.Errorf("after HoldRoom nominatedNodeName = %q, want %s", got, node.Name)
	}
}

// TestNominationWriterAfterRestart: a new joiner process (or leader)
// finds values in status.nominatedNodeName it has no memory of. The ones
// joiner wrote (the API server's managedFields say so) are adopted: kept
// while the new process plans the pod there again, cleared otherwise, so
// the pod is planned again rather than mistaken for a preemption. A value
// another component wrote stays.
func TestNominationWriterAfterRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		// act runs in the restarted process before its first reconcile.
		act       func(t *testing.T, f *writerFixture)
		want      string
		wantOwned bool
	}{
		{name: "clears its own value when the new process has no plan for the pod", want: "", act: func(*testing.T, *writerFixture) {}},
		{name: "keeps its own value when the new process plans the pod there again", want: "planned", wantOwned: true, act: func(t *testing.T, f *writerFixture) {
			f.cluster.UpdateNodeClaim(f.claim)
			f.cluster.Nominations().Nominate(f.pod, f.claim.Name)
		}},
		{name: "moves its own value to the new plan", want: "moved", wantOwned: true, act: func(t *testing.T, f *writerFixture) {
			f.cluster.Nominations().Nominate(f.pod, f.nodeClaim(t, "moved").Name)
		}},
		{name: "leaves a value another component wrote", want: "preemptor", act: func(t *testing.T, f *writerFixture) {
			f.setNominatedNodeName(t, "preemptor", client.FieldOwner("kube-scheduler"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newWriterFixture(t)
			f.claim = f.nodeClaim(t, "planned")
			f.cluster.Nominations().Nominate(f.pod, f.claim.Name)
			f.reconcile(t)
			if got := f.refresh(t).Status.NominatedNodeName; got != "planned" {
				t.Fatalf("before the restart nominatedNodeName = %q, want planned", got)
			}

			f.restart(t)
			tc.act(t, f)
			f.reconcile(t)
			key := client.ObjectKeyFromObject(f.pod)
			if got := f.refresh(t).Status.NominatedNodeName; got != tc.want {
				t.Fatalf("nominatedNodeName = %q, want %q", got, tc.want)
			}
			if owned, ok := f.cluster.Nominations().NominatedNodeName(key); ok != tc.wantOwned || (ok && owned != tc.want) {
				t.Fatalf("the new process records %q (%v) as its own, want %q (%v)", owned, ok, tc.want, tc.wantOwned)
			}
		})
	}
}

// TestNominationWriterDoesNotOverwriteAConcurrentChange: another
// component writes the pod between the writer's read and its patch. A
// value kube-scheduler set (preemption) or a binding wins, and the writer
// decides again; kube-scheduler rewriting only the PodScheduled
// condition, as it does at each attempt, does not stop the write (with a
// resourceVersion precondition nearly every write of a burst failed so).
func TestNominationWriterDoesNotOverwriteAConcurrentChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		race func(t *testing.T, f *writerFixture)
		// want is the value after the racing reconcile and after the
		// next one; requeue is whether the first must decide again.
		want    string
		requeue bool
	}{
		{name: "kube-scheduler nominates the pod for a preemption", want: "preemptor", requeue: true, race: func(t *testing.T, f *writerFixture) {
			f.setNominatedNodeName(t, "preemptor", client.FieldOwner("kube-scheduler"))
		}},
		{name: "the pod is bound elsewhere", want: "", requeue: true, race: func(t *testing.T, f *writerFixture) {
			binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: f.pod.Name, Namespace: f.pod.Namespace}, Target: corev1.ObjectReference{Kind: "Node", Name: "elsewhere"}}
			if err := f.env.Client.SubResource("binding").Create(t.Context(), f.pod.DeepCopy(), binding); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "kube-scheduler rewrites the PodScheduled condition", want: "planned", race: func(t *testing.T, f *writerFixture) {
			pod := &corev1.Pod{}
			if err := f.env.Client.Get(t.Context(), client.ObjectKeyFromObject(f.pod), pod); err != nil {
				t.Fatal(err)
			}
			base := pod.DeepCopy()
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available", LastTransitionTime: metav1.Now()}}
			if err := f.env.Client.Status().Patch(t.Context(), pod, client.MergeFrom(base), client.FieldOwner("kube-scheduler")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newWriterFixture(t)
			f.claim = f.nodeClaim(t, "planned")
			f.cluster.Nominations().Nominate(f.pod, f.claim.Name)
			raced := false
			f.interceptWriter(t, interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if err := c.Get(ctx, key, obj, opts...); err != nil {
						return err
					}
					if _, isPod := obj.(*corev1.Pod); isPod && !raced {
						raced = true
						tc.race(t, f)
					}
					return nil
				},
			})
			res, err := f.writer.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(f.pod)})
			if err != nil {
				t.Fatal(err)
			}
			if !raced {
				t.Fatal("the writer never read the pod")
			}
			if got := f.refresh(t).Status.NominatedNodeName; got != tc.want {
				t.Fatalf("nominatedNodeName = %q after the race, want %q", got, tc.want)
			}
			if requeued := res.RequeueAfter > 0 && res.RequeueAfter < time.Second; requeued != tc.requeue {
				t.Fatalf("decide again soon = %v (RequeueAfter %v), want %v", requeued, res.RequeueAfter, tc.requeue)
			}
			f.reconcile(t)
			if got := f.refresh(t).Status.NominatedNodeName; got != tc.want {
				t.Fatalf("deciding again, nominatedNodeName = %q, want %q", got, tc.want)
			}
		})
	}
}

type writerFixture struct {
	env     *test.Environment
	ns      string
	cluster *state.Cluster
	writer  *nomination.Writer
	pod     *corev1.Pod
	claim   *v1.NodeClaim
}

func newWriterFixture(t *testing.T) *writerFixture {
	env := test.Env(t)
	cluster, err := state.NewCluster(state.Options{Reader: env.Client})
	if err != nil {
		t.Fatal(err)
	}
	f := &writerFixture{env: env, ns: env.Namespace(t), cluster: cluster}
	f.writer = nomination.NewWriter(env.Client, cluster.Nominations())
	f.pod = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}}}},
	}
	env.Create(t, f.pod)
	return f
}

// nodeClaim creates a NodeClaim, registered as node when node is set.
func (f *writerFixture) nodeClaim(t *testing.T, node string) *v1.NodeClaim {
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "nc")},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}},
			NodeClassRef: &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: "default"},
		},
	}
	if node != "" {
		nc.Name += "-" + node
	}
	f.env.Create(t, nc)
	t.Cleanup(func() { _ = f.env.Client.Delete(t.Context(), nc) })
	f.cluster.UpdateNodeClaim(nc)
	if node != "" {
		f.register(t, nc, node)
	}
	return nc
}

// launchedClaim sets f.claim to a launched NodeClaim (a provider ID, no
// Node yet) that f.pod is nominated to.
func (f *writerFixture) launchedClaim(t *testing.T) {
	f.claim = f.nodeClaim(t, "")
	f.cluster.Nominations().Nominate(f.pod, f.claim.Name)
	base := f.claim.DeepCopy()
	f.claim.Status.ProviderID = "fake:///" + f.claim.Name
	if err := f.env.Client.Status().Patch(t.Context(), f.claim, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	f.cluster.UpdateNodeClaim(f.claim)
}

// unregisteredNode creates f.claim's Node, still carrying the
// unregistered taint.
func (f *writerFixture) unregisteredNode(t *testing.T) *corev1.Node {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "node")},
		Spec: corev1.NodeSpec{ProviderID: f.claim.Status.ProviderID, Taints: []corev1.Taint{
			{Key: v1.TaintKeyUnregistered, Effect: corev1.TaintEffectNoExecute},
		}},
	}
	f.env.Create(t, node)
	t.Cleanup(func() { _ = f.env.Client.Delete(t.Context(), node) })
	f.cluster.UpdateNode(node)
	return node
}

func (f *writerFixture) register(t *testing.T, nc *v1.NodeClaim, node string) {
	base := nc.DeepCopy()
	nc.Status.NodeName = node
	if err := f.env.Client.Status().Patch(t.Context(), nc, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	f.cluster.UpdateNodeClaim(nc)
}

// setNominatedNodeName writes the pod's nominated node name as another
// component would.
func (f *writerFixture) setNominatedNodeName(t *testing.T, node string, opts ...client.SubResourcePatchOption) {
	pod := &corev1.Pod{}
	if err := f.env.Client.Get(t.Context(), client.ObjectKeyFromObject(f.pod), pod); err != nil {
		t.Fatal(err)
	}
	base := pod.DeepCopy()
	pod.Status.NominatedNodeName = node
	if err := f.env.Client.Status().Patch(t.Context(), pod, client.MergeFrom(base), opts...); err != nil {
		t.Fatal(err)
	}
}

// restart replaces the model and the writer with a new process's: no
// memory of nominations or of the values written.
func (f *writerFixture) restart(t *testing.T) {
	cluster, err := state.NewCluster(state.Options{Reader: f.env.Client})
	if err != nil {
		t.Fatal(err)
	}
	f.cluster = cluster
	f.writer = nomination.NewWriter(f.env.Client, cluster.Nominations())
}

// interceptWriter replaces f.writer with one whose client, talking to the
// real API server, goes through funcs.
func (f *writerFixture) interceptWriter(t *testing.T, funcs interceptor.Funcs) {
	t.Helper()
	base, err := client.NewWithWatch(f.env.Config, client.Options{Scheme: f.env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	f.writer = nomination.NewWriter(interceptor.NewClient(base, funcs), f.cluster.Nominations())
}

func (f *writerFixture) reconcile(t *testing.T) {
	t.Helper()
	if _, err := f.writer.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: f.pod.Namespace, Name: f.pod.Name}}); err != nil {
		t.Fatal(err)
	}
}

func (f *writerFixture) refresh(t *testing.T) *corev1.Pod {
	t.Helper()
	if err := f.env.Client.Get(t.Context(), client.ObjectKeyFromObject(f.pod), f.pod); err != nil {
		t.Fatal(err)
	}
	return f.pod
}

// TestNominationWriterSkipsAStaleRead: a reconcile that reads the pod as
// it was before the writer's own last patch (the cache has not shown the
// patch yet) writes nothing, where it used to write again and fail; once
// the cache shows a newer version the writer decides on it as before.
func TestNominationWriterSkipsAStaleRead(t *testing.T) {
	f := newWriterFixture(t)
	f.claim = f.nodeClaim(t, "planned")
	f.cluster.Nominations().Nominate(f.pod, f.claim.Name)
	var stale *corev1.Pod
	patches := 0
	f.interceptWriter(t, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if pod, ok := obj.(*corev1.Pod); ok && stale != nil {
				stale.DeepCopyInto(pod)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			patches++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	before := f.refresh(t).DeepCopy()
	f.reconcile(t)
	if got := f.refresh(t).Status.NominatedNodeName; got != "planned" || patches != 1 {
		t.Fatalf("first reconcile: nominatedNodeName = %q after %d patches, want planned after 1", got, patches)
	}

	stale = before
	res, err := f.writer.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(f.pod)})
	if err != nil {
		t.Fatal(err)
	}
	if patches != 1 {
		t.Fatalf("a reconcile of the copy older than its own patch patched again (%d patches)", patches)
	}
	if res.RequeueAfter == 0 {
		t.Fatal("a stale read must be decided again later, in case no watch event comes")
	}

	stale = nil
	f.setNominatedNodeName(t, "", client.FieldOwner("kube-scheduler"))
	f.reconcile(t)
	if got := f.refresh(t).Status.NominatedNodeName; got != "planned" || patches != 2 {
		t.Fatalf("after the cache caught up: nominatedNodeName = %q after %d patches, want planned after 2", got, patches)
	}
}

// TestNominationWriterReportsAnInvalidPatch: a 422 that is not a failed
// JSON patch test (validation, an admission policy: it names the pod and
// its causes) is an error to report, not a change to decide again on
// every 200 ms.
func TestNominationWriterReportsAnInvalidPatch(t *testing.T) {
	f := newWriterFixture(t)
	f.claim = f.nodeClaim(t, "planned")
	f.cluster.Nominations().Nominate(f.pod, f.claim.Name)
	f.interceptWriter(t, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, obj.GetName(), field.ErrorList{
				field.Invalid(field.NewPath("status", "nominatedNodeName"), "planned", "denied by policy"),
			})
		},
	})
	if _, err := f.writer.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(f.pod)}); err == nil {
		t.Fatal("Reconcile hid a validation error as a change to decide again on")
	}
}
