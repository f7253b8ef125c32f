package nodeclaims

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/state"
	"github.com/joiner-dev/joiner/pkg/test"
)

// Creation runs against a real kube-apiserver: what a name may be is what
// the API server refuses (AlreadyExists) or accepts once a NodeClaim is
// gone.
func TestMain(m *testing.M) {
	test.Main(m, controlplane.Options{CRDDirectories: []string{test.RepoPath("pkg/apis/crds")}, Scheme: test.Scheme()})
}

// creatorFixture is one test's NodePool and the API server's NodeClaims.
type creatorFixture struct {
	t        *testing.T
	env      *test.Environment
	nodePool *v1.NodePool
}

func newCreatorFixture(t *testing.T) *creatorFixture {
	env := test.Env(t)
	np := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "np")},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: "default"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{},
		}}},
	}
	env.Create(t, np)
	f := &creatorFixture{t: t, env: env, nodePool: np}
	t.Cleanup(f.deleteNodeClaims)
	return f
}

// creator is a Creator with a cluster state of its own: a new one is a
// restarted joiner, which never saw what was deleted before.
func (f *creatorFixture) creator() (*Creator, *state.Cluster) {
	f.t.Helper()
	st, err := state.NewCluster(state.Options{Reader: f.env.Client})
	if err != nil {
		f.t.Fatal(err)
	}
	c, err := NewCreator(Options{Client: f.env.Client, State: st})
	if err != nil {
		f.t.Fatal(err)
	}
	return c, st
}

// planned is the solver's node for pods.
func (f *creatorFixture) planned(pods ...*corev1.Pod) *scheduling.NewNodeClaim {
	return &scheduling.NewNodeClaim{
		NodePool:      f.nodePool.Name,
		InstanceTypes: []*scheduling.InstanceType{testInstanceType("m5.large", "2", "8Gi")},
		Pods:          pods,
		Requests:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	}
}

// provision creates the NodeClaim planned for pods, as a provisioning pass
// does.
func (f *creatorFixture) provision(c *Creator, pods ...*corev1.Pod) *v1.NodeClaim {
	f.t.Helper()
	created, err := c.Create(f.t.Context(), []Planned{{NodePool: f.nodePool, Planned: f.planned(pods...)}})
	if err != nil {
		f.t.Fatalf("provisioning: %v", err)
	}
	return created[0]
}

// replace creates the replacement planned for pods of the NodeClaims
// candidates, as a disruption command does.
func (f *creatorFixture) replace(c *Creator, candidates []*v1.NodeClaim, pods ...*corev1.Pod) *v1.NodeClaim {
	f.t.Helper()
	uids := make([]types.UID, 0, len(candidates))
	for _, nc := range candidates {
		uids = append(uids, nc.UID)
	}
	created, err := c.CreateReplacements(f.t.Context(), map[string]*v1.NodePool{f.nodePool.Name: f.nodePool},
		[]*scheduling.NewNodeClaim{f.planned(pods...)}, "drifted", uids)
	if err != nil {
		f.t.Fatalf("replacing: %v", err)
	}
	return created[0]
}

// register marks nc Registered, as the lifecycle does once its node
// joined.
func (f *creatorFixture) register(nc *v1.NodeClaim) {
	f.t.Helper()
	latest := &v1.NodeClaim{}
	if err := f.env.Client.Get(f.t.Context(), client.ObjectKeyFromObject(nc), latest); err != nil {
		f.t.Fatal(err)
	}
	latest.StatusConditions().SetTrue(v1.ConditionTypeRegistered)
	if err := f.env.Client.Status().Update(f.t.Context(), latest); err != nil {
		f.t.Fatalf("registering %s: %v", nc.Name, err)
	}
}

// startDeleting deletes nc, whose termination finalizer keeps it, and
// returns it as the informer then delivers it.
func (f *creatorFixture) startDeleting(nc *v1.NodeClaim) *v1.NodeClaim {
	f.t.Helper()
	if err := f.env.Client.Delete(f.t.Context(), nc); err != nil {
		f.t.Fatalf("deleting %s: %v", nc.Name, err)
	}
	latest := &v1.NodeClaim{}
	if err := f.env.Client.Get(f.t.Context(), client.ObjectKeyFromObject(nc), latest); err != nil {
		f.t.Fatal(err)
	}
	if latest.DeletionTimestamp == nil {
		f.t.Fatalf("%s: no deletion timestamp", nc.Name)
	}
	return latest
}

// remove deletes nc for good (its finalizer released, as termination does)
// and waits until the API server no longer has it.
func (f *creatorFixture) remove(nc *v1.NodeClaim) {
	f.t.Helper()
	ctx := f.t.Context()
	latest := &v1.NodeClaim{}
	if err := f.env.Client.Get(ctx, client.ObjectKeyFromObject(nc), latest); err != nil {
		f.t.Fatal(err)
	}
	base := latest.DeepCopy()
	latest.Finalizers = nil
	if err := f.env.Client.Patch(ctx, latest, client.MergeFrom(base)); err != nil {
		f.t.Fatal(err)
	}
	if err := f.env.Client.Delete(ctx, latest); err != nil && !apierrors.IsNotFound(err) {
		f.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f.env.Client.Get(ctx, client.ObjectKeyFromObject(nc), &v1.NodeClaim{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%s still there: %v", nc.Name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// names are the API server's NodeClaims of the fixture's NodePool, with
// their UIDs.
func (f *creatorFixture) names() map[string]types.UID {
	f.t.Helper()
	var list v1.NodeClaimList
	if err := f.env.Client.List(f.t.Context(), &list, client.MatchingLabels{v1.LabelNodePool: f.nodePool.Name}); err != nil {
		f.t.Fatal(err)
	}
	out := map[string]types.UID{}
	for i := range list.Items {
		out[list.Items[i].Name] = list.Items[i].UID
	}
	return out
}

// deleteNodeClaims removes the NodePool's NodeClaims, finalizers first (no
// termination controller runs here).
func (f *creatorFixture) deleteNodeClaims() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var list v1.NodeClaimList
	if err := f.env.Client.List(ctx, &list, client.MatchingLabels{v1.LabelNodePool: f.nodePool.Name}); err != nil {
		return
	}
	for i := range list.Items {
		nc := &list.Items[i]
		base := nc.DeepCopy()
		nc.Finalizers = nil
		_ = f.env.Client.Patch(ctx, nc, client.MergeFrom(base))
		_ = f.env.Client.Delete(ctx, nc)
	}
}

// TestReplacementNeverTakesAnOldName is upstream's "Drift Budgets should
// respect budgets for non-empty replace drift" failure, in joiner's terms.
// The provisioner launched first-a for pod a and first-b for pod b, but
// kube-scheduler bound a on first-b's node and b on first-a's. Drift
// replaced first-a (its replacement planned for b) and then first-b, whose
// replacement is planned for pod a: the pod first-a was launched for. That
// replacement must be a new name whatever became of first-a (the spec
// waits for the originals' names to be gone, and one came back 3 s after
// it was deleted), and the same command made again (a restart
// mid-command) must find that replacement, not launch a second.
func TestReplacementNeverTakesAnOldName(t *testing.T) {
	for _, tc := range []struct {
		name string
		// then is what became of first-a before first-b's replacement; it
		// returns the Creator that makes the replacement.
		then func(f *creatorFixture, c *Creator, st *state.Cluster, firstA *v1.NodeClaim) *Creator
	}{
		{name: "first-a still runs", then: func(_ *creatorFixture, c *Creator, _ *state.Cluster, _ *v1.NodeClaim) *Creator { return c }},
		{name: "first-a is being deleted", then: func(f *creatorFixture, c *Creator, st *state.Cluster, firstA *v1.NodeClaim) *Creator {
			st.UpdateNodeClaim(f.startDeleting(firstA))
			return c
		}},
		{name: "first-a was deleted seconds ago", then: func(f *creatorFixture, c *Creator, st *state.Cluster, firstA *v1.NodeClaim) *Creator {
			st.UpdateNodeClaim(f.startDeleting(firstA))
			f.remove(firstA)
			st.DeleteNodeClaim(firstA.Name)
			return c
		}},
		{name: "first-a was deleted before joiner restarted", then: func(f *creatorFixture, _ *Creator, _ *state.Cluster, firstA *v1.NodeClaim) *Creator {
			f.remove(firstA)
			c, _ := f.creator()
			return c
		}},
		{name: "first-a was deleted before the informer told", then: func(f *creatorFixture, c *Creator, _ *state.Cluster, firstA *v1.NodeClaim) *Creator {
			f.remove(firstA)
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCreatorFixture(t)
			c, st := f.creator()
			podA, podB := testPod("a-"+f.nodePool.Name), testPod("b-"+f.nodePool.Name)
			firstA, firstB := f.provision(c, podA), f.provision(c, podB)
			f.register(firstA)
			f.register(firstB)
			// kube-scheduler bound a on first-b and b on first-a.
			replA := f.replace(c, []*v1.NodeClaim{firstA}, podB)

			c = tc.then(f, c, st, firstA)
			before := f.names()
			replB := f.replace(c, []*v1.NodeClaim{firstB}, podA)
			for _, old := range []*v1.NodeClaim{firstA, firstB, replA} {
				if replB.Name == old.Name {
					t.Fatalf("first-b's replacement for pod a took the name %s of an older NodeClaim (first-a %s, first-b %s, first-a's replacement %s)",
						replB.Name, firstA.Name, firstB.Name, replA.Name)
				}
			}
			if _, ok := before[replB.Name]; ok {
				t.Fatalf("first-b's replacement %s is a NodeClaim that existed before it", replB.Name)
			}

			// The same command made again, by this joiner or one restarted
			// mid-command, finds its replacement.
			restarted, _ := f.creator()
			for _, again := range []*Creator{c, restarted} {
				got := f.replace(again, []*v1.NodeClaim{firstB}, podA)
				if got.Name != replB.Name || got.UID != replB.UID {
					t.Errorf("the same command made again got %s (%s), want its replacement %s (%s)", got.Name, got.UID, replB.Name, replB.UID)
				}
			}
			if after := f.names(); len(after) != len(before)+1 {
				t.Errorf("NodeClaims %v after the replacement and its retries, want those before (%d) and one more", slices.Sorted(maps.Keys(after)), len(before))
			}
		})
	}
}

// TestNewNodeClaimNeverTakesARetiredName: the same plan made again after
// its NodeClaim went away (a provisioning pass for pods still pending after
// their empty NodeClaim was deleted; a disruption command decided again
// after a rollback deleted its replacement) is a new NodeClaim, under a new
// name, while the NodeClaim of that name is gone or still being deleted.
func TestNewNodeClaimNeverTakesARetiredName(t *testing.T) {
	for _, tc := range []struct {
		name string
		// create makes the plan's NodeClaim; candidate is a NodeClaim a
		// replacement may replace.
		create func(f *creatorFixture, c *Creator, candidate *v1.NodeClaim, pod *corev1.Pod) *v1.NodeClaim
		// gone deletes the NodeClaim for good, rather than leaving it
		// being deleted.
		gone bool
	}{
		{name: "provisioning, the NodeClaim gone", create: provisionFor, gone: true},
		{name: "provisioning, the NodeClaim being deleted", create: provisionFor},
		{name: "replacement rolled back, gone", create: replaceFor, gone: true},
		{name: "replacement rolled back, being deleted", create: replaceFor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCreatorFixture(t)
			c, st := f.creator()
			candidate := f.provision(c, testPod("running-"+f.nodePool.Name))
			pod := testPod("p-" + f.nodePool.Name)
			first := tc.create(f, c, candidate, pod)
			st.UpdateNodeClaim(f.startDeleting(first))
			if tc.gone {
				f.remove(first)
				st.DeleteNodeClaim(first.Name)
			}
			again := tc.create(f, c, candidate, pod)
			if again.Name == first.Name {
				t.Fatalf("the plan made again took the name %s of its deleted NodeClaim", first.Name)
			}
			// A retry of the new one finds it, and so does a restarted
			// joiner, whose state never saw the old name retired.
			if retry := tc.create(f, c, candidate, pod); retry.UID != again.UID {
				t.Errorf("a retry got %s (%s), want %s (%s)", retry.Name, retry.UID, again.Name, again.UID)
			}
			restarted, _ := f.creator()
			if retry := tc.create(f, restarted, candidate, pod); retry.UID != again.UID {
				t.Errorf("a restarted joiner's retry got %s (%s), want %s (%s): the same plan launched twice", retry.Name, retry.UID, again.Name, again.UID)
			}
		})
	}
}

func provisionFor(f *creatorFixture, c *Creator, _ *v1.NodeClaim, pod *corev1.Pod) *v1.NodeClaim {
	return f.provision(c, pod)
}

func replaceFor(f *creatorFixture, c *Creator, candidate *v1.NodeClaim, pod *corev1.Pod) *v1.NodeClaim {
	return f.replace(c, []*v1.NodeClaim{candidate}, pod)
}
