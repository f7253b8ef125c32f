package provisioning_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/fake"
	"github.com/joiner-dev/joiner/pkg/controllers/provisioning"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/livemodel"
	"github.com/joiner-dev/joiner/pkg/nodeclaims"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/state"
	"github.com/joiner-dev/joiner/pkg/test"
)

// The provisioner's tests run one pass at a time against a real
// kube-apiserver (no scheduler: the tests mark pods unschedulable
// themselves) with the fake cloud for instance types.
func TestMain(m *testing.M) {
	test.Main(m, controlplane.Options{CRDDirectories: []string{test.RepoPath("pkg/apis/crds")}, Scheme: test.Scheme()})
}

// fixture is one test's provisioner and cluster objects.
type fixture struct {
	t        *testing.T
	env      *test.Environment
	ns       string
	nodePool *v1.NodePool
	cloud    *fake.CloudProvider
	recorder *events.Buffer
	clock    *clocktesting.FakeClock
}

func newFixture(t *testing.T) *fixture {
	env := test.Env(t)
	f := &fixture{
		t:        t,
		env:      env,
		ns:       env.Namespace(t),
		cloud:    fake.New(),
		recorder: &events.Buffer{},
		clock:    clocktesting.NewFakeClock(time.Now()),
	}
	f.nodePool = &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "np")},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				NodeClassRef: &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: "default"},
				Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
				},
			}},
			Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration("Never")},
		},
	}
	t.Cleanup(f.deleteNodeClaims)
	return f
}

// createNodePool creates the fixture's NodePool after mutate.
func (f *fixture) createNodePool(mutate func(*v1.NodePool)) {
	if mutate != nil {
		mutate(f.nodePool)
	}
	f.env.Create(f.t, f.nodePool)
}

// deleteNodeClaims removes every NodeClaim. They are created with the
// termination finalizer and no termination controller runs here to release
// it, so it is dropped first.
func (f *fixture) deleteNodeClaims() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var list v1.NodeClaimList
	if err := f.env.Client.List(ctx, &list); err == nil {
		for i := range list.Items {
			nc := &list.Items[i]
			if len(nc.Finalizers) > 0 {
				base := nc.DeepCopy()
				nc.Finalizers = nil
				_ = f.env.Client.Patch(ctx, nc, client.MergeFrom(base))
			}
		}
	}
	_ = f.env.Client.DeleteAllOf(ctx, &v1.NodeClaim{})
}

// pendingPods creates n pods requesting cpu each and marks them
// unschedulable, as kube-scheduler would.
func (f *fixture) pendingPods(n int, cpu string, mutate func(*corev1.Pod)) []*corev1.Pod {
	f.t.Helper()
	var pods []*corev1.Pod
	for i := range n {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: f.ns, Labels: map[string]string{"app": "test"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Image: "pause",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
			}}},
		}
		if mutate != nil {
			mutate(pod)
		}
		f.env.Create(f.t, pod)
		pod.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/0 nodes are available", LastTransitionTime: metav1.Now(),
		}}
		if err := f.env.Client.Status().Update(f.t.Context(), pod); err != nil {
			f.t.Fatalf("marking pod %s unschedulable: %v", pod.Name, err)
		}
		pods = append(pods, pod)
	}
	return pods
}

// replica is one provisioner with its own cluster state, fed by hand from
// the API server before each pass (as the state's informers would).
type replica struct {
	f     *fixture
	p     *provisioning.Provisioner
	state *state.Cluster
	// staleClaims hides NodeClaims from the state, like informers that
	// lag.
	staleClaims bool
}

func (f *fixture) replica() *replica {
	f.t.Helper()
	st, err := state.NewCluster(state.Options{Reader: f.env.Client, Clock: f.clock})
	if err != nil {
		f.t.Fatal(err)
	}
	model, err := livemodel.NewBuilder(livemodel.Options{Client: f.env.Client, State: st, Nominations: st.Nominations(), CloudProvider: f.cloud, Clock: f.clock})
	if err != nil {
		f.t.Fatal(err)
	}
	creator, err := nodeclaims.NewCreator(nodeclaims.Options{Client: f.env.Client, State: st})
	if err != nil {
		f.t.Fatal(err)
	}
	p, err := provisioning.NewProvisioner(provisioning.Options{
		Client:      f.env.Client,
		State:       st,
		Nominations: st.Nominations(),
		Model:       model,
		NodeClaims:  creator,
		Recorder:    f.recorder,
		Clock:       f.clock,
		Solve: func(s *scheduling.Snapshot) (*scheduling.Plan, error) {
			return scheduling.Solve(s, scheduling.Options{})
		},
		BatchIdleDuration: time.Second,
		BatchMaxDuration:  10 * time.Second,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return &replica{f: f, p: p, state: st}
}

// provision feeds the state and runs one pass.
func (r *replica) provision() *provisioning.Result {
	t := r.f.t
	t.Helper()
	ctx := t.Context()
	var (
		nodes  corev1.NodeList
		claims v1.NodeClaimList
		pods   corev1.PodList
	)
	if err := r.f.env.Client.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	for i := range nodes.Items {
		r.state.UpdateNode(&nodes.Items[i])
	}
	if !r.staleClaims {
		if err := r.f.env.Client.List(ctx, &claims); err != nil {
			t.Fatal(err)
		}
		for i := range claims.Items {
			r.state.UpdateNodeClaim(&claims.Items[i])
		}
	}
	if err := r.f.env.Client.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		r.state.UpdatePod(&pods.Items[i])
	}
	res, err := r.p.Provision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// nodeClaims lists the NodeClaims of the fixture's NodePool.
func (f *fixture) nodeClaims() []v1.NodeClaim {
	f.t.Helper()
	var list v1.NodeClaimList
	if err := f.env.Client.List(f.t.Context(), &list, client.MatchingLabels{v1.LabelNodePool: f.nodePool.Name}); err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

// events renders the published events as "type reason message".
func (f *fixture) events() []string {
	var out []string
	for _, e := range f.recorder.Events() {
		out = append(out, e.Type+" "+e.Reason+" "+e.Message)
	}
	return out
}

func daemonSetOwner() metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid", Controller: &t}
}
