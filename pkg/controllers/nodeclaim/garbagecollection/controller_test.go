package garbagecollection

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/joiner-dev/joiner/pkg/apis"
	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/fake"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/test"
)

var t0 = time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)

func newScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	// Every joiner API group, as the operator's scheme has them: the
	// simulated cloud resolves each node class kind it serves.
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apis.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func instance(pid, claimTag string, launched time.Time) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claimTag, CreationTimestamp: metav1.NewTime(launched),
			Labels: map[string]string{v1.LabelNodePool: "default"}},
		Status: v1.NodeClaimStatus{ProviderID: pid},
	}
}

func nodeClaim(name, pid string) *v1.NodeClaim {
	return test.NodeClaim(test.NodeClaimOptions{Name: name, ProviderID: pid})
}

func TestCollect(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(t0)
	cloud := fake.New()
	cloud.Instances = map[string]*v1.NodeClaim{
		"fake:///a/claimed":      instance("fake:///a/claimed", "claimed", t0.Add(-time.Hour)),
		"fake:///a/young-orphan": instance("fake:///a/young-orphan", "", t0.Add(-10*time.Second)),
		"fake:///a/old-orphan":   instance("fake:///a/old-orphan", "crashed-launch", t0.Add(-time.Minute)),
		"fake:///a/recording":    instance("fake:///a/recording", "launching", t0.Add(-time.Hour)),
	}
	// The instance of a NodeClaim whose launch is not recorded yet is
	// claimed by the NodeClaim's UID.
	cloud.Instances["fake:///a/recording"].UID = "launching-uid"
	launching := nodeClaim("launching", "")
	launching.UID = "launching-uid"
	// A NodeClaim of a node class this provider does not support is not its
	// to judge, even though its instance is unknown here.
	unmanaged := nodeClaim("unmanaged", "aws:///us-east-1a/i-0123")
	unmanaged.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	orphanNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "orphan-node"}, Spec: corev1.NodeSpec{ProviderID: "fake:///a/old-orphan"}}
	kube := fakeclient.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(
		nodeClaim("claimed", "fake:///a/claimed"),
		nodeClaim("gone", "fake:///a/terminated-outside"),
		launching,
		unmanaged,
		orphanNode,
	).Build()
	rec := &events.Buffer{}
	c, err := NewController(Options{Client: kube, APIReader: kube, CloudProvider: cloud, Recorder: rec, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}

	var live []string
	for pid := range cloud.Instances {
		live = append(live, pid)
	}
	slices.Sort(live)
	if want := []string{"fake:///a/claimed", "fake:///a/recording", "fake:///a/young-orphan"}; !slices.Equal(live, want) {
		t.Errorf("live instances = %v, want %v (only the old orphan terminated)", live, want)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(orphanNode), &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("the orphan's node was not deleted: %v", err)
	}
	for name, wantGone := range map[string]bool{"claimed": false, "gone": true, "launching": false, "unmanaged": false} {
		err := kube.Get(ctx, client.ObjectKey{Name: name}, &v1.NodeClaim{})
		if gone := apierrors.IsNotFound(err); gone != wantGone {
			t.Errorf("nodeclaim %s deleted = %v, want %v (%v)", name, gone, wantGone, err)
		}
	}
	reasons := rec.Reasons()
	slices.Sort(reasons)
	if want := []string{ReasonInstanceGone, ReasonOrphanInstanceTerminated}; !slices.Equal(reasons, want) {
		t.Errorf("events = %v, want %v", reasons, want)
	}

	// The young orphan is collected once it outlives the grace period.
	clk.Step(DefaultGracePeriod)
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := cloud.Instances["fake:///a/young-orphan"]; ok {
		t.Errorf("orphan older than the grace period survived")
	}
	if _, ok := cloud.Instances["fake:///a/claimed"]; !ok {
		t.Errorf("claimed instance terminated")
	}
}

func TestListFailureTouchesNothing(t *testing.T) {
	cloud := fake.New()
	cloud.ListError = apierrors.NewServiceUnavailable("cloud down")
	kube := fakeclient.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(nodeClaim("a", "fake:///a/x")).Build()
	c, err := NewController(Options{Client: kube, APIReader: kube, CloudProvider: cloud, Recorder: &events.Buffer{}, Clock: clocktesting.NewFakeClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Collect(context.Background()); err == nil {
		t.Fatal("Collect succeeded although List failed")
	}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: "a"}, &v1.NodeClaim{}); err != nil {
		t.Errorf("nodeclaim deleted although the cloud could not be listed: %v", err)
	}
}

// Two clusters share one simulated cloud: each one's collector terminates
// its own orphans and never the other's instances, even with identical
// NodeClaim names.
func TestOtherClustersInstancesAreNeverTouched(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(t0)
	nc := &simv1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	nc.ApplyDefaults()
	scheme := newScheme(t)
	store, err := sim.OpenStore(filepath.Join(t.TempDir(), "instances.json"))
	if err != nil {
		t.Fatal(err)
	}
	catalog := func(*simv1alpha1.SimNodeClass) ([]*scheduling.InstanceType, error) {
		it := fake.NewInstanceType("m5.large", "amd64", "2", "8Gi", 0, 0.1)
		it.Offerings = []scheduling.Offering{{Zone: "sim-east-1a", CapacityType: v1.CapacityTypeOnDemand, Price: 0.1, Available: true}}
		return []*scheduling.InstanceType{it}, nil
	}
	type cluster struct {
		kube     client.Client
		provider *sim.Provider
		gc       *Controller
		pid      string
	}
	clusters := map[string]*cluster{}
	for _, name := range []string{"a", "b"} {
		kube := fakeclient.NewClientBuilder().WithScheme(scheme).WithObjects(nc.DeepCopy()).Build()
		p, err := sim.New(sim.Options{Client: kube, Store: store, ClusterName: name, Catalog: catalog, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "same-name"}}
		claim.Spec.NodeClassRef = &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: "default"}
		created, err := p.Create(ctx, claim)
		if err != nil {
			t.Fatal(err)
		}
		gc, err := NewController(Options{Client: kube, APIReader: kube, CloudProvider: p, Recorder: &events.Buffer{}, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		clusters[name] = &cluster{kube: kube, provider: p, gc: gc, pid: created.Status.ProviderID}
	}
	// Cluster a records its NodeClaim; cluster b's launch crashed before it
	// could, so b's instance is an orphan of b.
	a, b := clusters["a"], clusters["b"]
	if err := a.kube.Create(ctx, nodeClaim("same-name", a.pid)); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	// a's collector: b's instance has no NodeClaim in a, but is not a's.
	if err := a.gc.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.provider.Get(ctx, b.pid); err != nil {
		t.Fatalf("cluster a's collector touched cluster b's instance: %v", err)
	}
	// b's collector terminates its own orphan and leaves a's instance.
	if err := b.gc.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.provider.Get(ctx, b.pid); err == nil {
		t.Errorf("cluster b's orphan survived its own collector")
	}
	if _, err := a.provider.Get(ctx, a.pid); err != nil {
		t.Errorf("cluster b's collector touched cluster a's instance: %v", err)
	}
}

func TestOptionsAreValidated(t *testing.T) {
	if _, err := NewController(Options{}); err == nil {
		t.Error("NewController accepted empty options")
	}
	// Without a reader past the cache an orphan could not be confirmed:
	// the operator must not be able to leave it out.
	kube := fakeclient.NewClientBuilder().WithScheme(newScheme(t)).Build()
	_, err := NewController(Options{Client: kube, CloudProvider: fake.New(), Recorder: &events.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "APIReader is required") {
		t.Errorf("NewController without APIReader: %v, want APIReader is required", err)
	}
}

// A NodeClaim whose instance exists but is not this cluster's (launched by
// Karpenter before a migration, or the cluster was restored under a new
// kube-system UID) is kept: deleting it would drain a node whose instance
// keeps running unmanaged. One event says what to do.
func TestNodeClaimOfUnownedInstanceIsKept(t *testing.T) {
	tests := []struct {
		name       string
		getErr     error
		wantKept   bool
		wantReason string
	}{
		{name: "not owned", getErr: cloudprovider.NewNodeClaimNotOwnedError(errors.New("instance i-1 lacks this cluster's identity tags joiner.dev/cluster-id=uid-new")), wantKept: true, wantReason: ReasonInstanceNotOwned},
		{name: "not found", getErr: cloudprovider.NewNodeClaimNotFoundError(errors.New("instance i-1 not found")), wantKept: false, wantReason: ReasonInstanceGone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			cloud := fake.New()
			cloud.NextGetError = tt.getErr
			kube := fakeclient.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(nodeClaim("migrated", "fake:///a/i-1")).Build()
			rec := &events.Buffer{}
			c, err := NewController(Options{Client: kube, APIReader: kube, CloudProvider: cloud, Recorder: rec, Clock: clocktesting.NewFakeClock(t0)})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Collect(ctx); err != nil {
				t.Fatal(err)
			}
			err = kube.Get(ctx, client.ObjectKey{Name: "migrated"}, &v1.NodeClaim{})
			if kept := err == nil; kept != tt.wantKept {
				t.Errorf("nodeclaim kept = %v, want %v (%v)", kept, tt.wantKept, err)
			}
			evts := rec.Events()
			if len(evts) != 1 || evts[0].Reason != tt.wantReason {
				t.Fatalf("events = %v, want one %s", rec.Reasons(), tt.wantReason)
			}
			if tt.wantKept {
				for _, want := range []string{"fake:///a/i-1", "joiner.dev/cluster-id=uid-new", "tag the instance", "delete this NodeClaim and the instance by hand"} {
					if !strings.Contains(evts[0].Message, want) {
						t.Errorf("event message %q does not mention %q", evts[0].Message, want)
					}
				}
			}
		})
	}
}

// TestOrphanIsConfirmedPastTheCache: an instance whose NodeClaim the cache
// does not show yet (the watch lags) is terminated only when the API server
// confirms that no NodeClaim holds it; a failed confirmation leaves it.
func TestOrphanIsConfirmedPastTheCache(t *testing.T) {
	const pid = "fake:///a/i-new"
	deleting := nodeClaim("claim", "")
	deleting.UID = "uid-1"
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	deleting.Finalizers = []string{v1.TerminationFinalizer}
	namesake := nodeClaim("claim", "")
	namesake.UID = "uid-2"
	launching := nodeClaim("claim", "")
	launching.UID = "uid-1"
	for _, tc := range []struct {
		name       string
		api        []client.Object // what the API server holds (the cache holds nothing)
		readErr    error
		terminated bool
	}{
		{name: "the NodeClaim recorded the instance", api: []client.Object{nodeClaim("claim", pid)}},
		{name: "the NodeClaim is launching it (same UID)", api: []client.Object{launching}},
		{name: "no NodeClaim", terminated: true},
		{name: "another NodeClaim of the same name", api: []client.Object{namesake}, terminated: true},
		{name: "the NodeClaim recorded another instance", api: []client.Object{nodeClaim("claim", "fake:///a/i-other")}, terminated: true},
		{name: "the NodeClaim is deleting before its launch was recorded", api: []client.Object{deleting}, terminated: true},
		{name: "the confirmation failed", readErr: errors.New("apiserver unavailable")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := fake.New()
			inst := instance(pid, "claim", t0.Add(-time.Hour))
			inst.UID = "uid-1"
			cloud.Instances = map[string]*v1.NodeClaim{pid: inst}
			cache := fakeclient.NewClientBuilder().WithScheme(newScheme(t)).Build()
			api := fakeclient.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(tc.api...).Build()
			var reader client.Reader = api
			if tc.readErr != nil {
				reader = interceptor.NewClient(api, interceptor.Funcs{
					Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
						return tc.readErr
					},
				})
			}
			c, err := NewController(Options{Client: cache, APIReader: reader, CloudProvider: cloud, Recorder: &events.Buffer{}, Clock: clocktesting.NewFakeClock(t0)})
			if err != nil {
				t.Fatal(err)
			}
			err = c.Collect(context.Background())
			if (err != nil) != (tc.readErr != nil) {
				t.Fatalf("Collect: %v", err)
			}
			if _, live := cloud.Instances[pid]; live == tc.terminated {
				t.Fatalf("instance terminated = %v, want %v", !live, tc.terminated)
			}
		})
	}
}
