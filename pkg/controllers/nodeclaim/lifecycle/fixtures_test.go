package lifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/joiner-dev/joiner/pkg/apis"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	fakecloud "github.com/joiner-dev/joiner/pkg/cloudprovider/fake"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/state"
)

// unit is a lifecycle controller over controller-runtime's fake client, the
// fake cloud and a fake clock: it tests each step's decisions without an
// API server. The envtest_*_test.go files run the same flows against a
// real kube-apiserver.
type unit struct {
	t      *testing.T
	ctx    context.Context
	kube   client.Client
	cloud  *fakecloud.CloudProvider
	events *events.Buffer
	clock  *clocktesting.FakeClock
	ctrl   *Controller
}

func newUnit(t *testing.T, objs ...client.Object) *unit {
	t.Helper()
	return newUnitWith(t, interceptor.Funcs{}, objs...)
}

// newUnitWith is newUnit with API calls intercepted (to inject failures).
func newUnitWith(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) *unit {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&v1.NodeClaim{}, &v1.NodePool{}).
		WithIndex(&corev1.Node{}, state.IndexNodeProviderID, func(o client.Object) []string {
			return []string{o.(*corev1.Node).Spec.ProviderID}
		}).
		WithIndex(&v1.NodeClaim{}, state.IndexNodeClaimProviderID, func(o client.Object) []string {
			return []string{o.(*v1.NodeClaim).Status.ProviderID}
		}).WithInterceptorFuncs(funcs).Build()
	u := &unit{t: t, ctx: context.Background(), kube: kube, cloud: fakecloud.New(), events: &events.Buffer{},
		clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	c, err := NewController(Options{Client: kube, APIReader: kube, CloudProvider: u.cloud, Recorder: u.events, Clock: u.clock,
		RegistrationTTL: 15 * time.Minute, LaunchTTL: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	u.ctrl = c
	return u
}

func (u *unit) reconcile(name string) reconcile.Result {
	u.t.Helper()
	res, err := u.ctrl.Reconcile(u.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	if err != nil {
		u.t.Fatalf("reconcile %s: %v", name, err)
	}
	return res
}

func (u *unit) nodeClaim(name string) *v1.NodeClaim {
	u.t.Helper()
	nc := &v1.NodeClaim{}
	if err := u.kube.Get(u.ctx, client.ObjectKey{Name: name}, nc); err != nil {
		u.t.Fatalf("getting nodeclaim %s: %v", name, err)
	}
	return nc
}

func (u *unit) node(name string) *corev1.Node {
	u.t.Helper()
	n := &corev1.Node{}
	if err := u.kube.Get(u.ctx, client.ObjectKey{Name: name}, n); err != nil {
		u.t.Fatalf("getting node %s: %v", name, err)
	}
	return n
}

func (u *unit) create(obj client.Object) {
	u.t.Helper()
	if err := u.kube.Create(u.ctx, obj); err != nil {
		u.t.Fatalf("creating %T: %v", obj, err)
	}
}

// event returns the first published event with reason, or fails.
func (u *unit) event(reason string) events.Event {
	u.t.Helper()
	for _, e := range u.events.Events() {
		if e.Reason == reason {
			return e
		}
	}
	u.t.Fatalf("no %s event; published: %v", reason, u.events.Reasons())
	return events.Event{}
}

func (u *unit) noEvent(reason string) {
	u.t.Helper()
	for _, e := range u.events.Events() {
		if e.Reason == reason {
			u.t.Fatalf("unexpected %s event: %s", reason, e.Message)
		}
	}
}

func condition(nc *v1.NodeClaim, t string) metav1.Condition {
	if c := meta.FindStatusCondition(nc.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{Type: t}
}

func requireCondition(t *testing.T, nc *v1.NodeClaim, typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	c := condition(nc, typ)
	if c.Status != status || (reason != "" && c.Reason != reason) {
		t.Fatalf("%s = %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
	return c
}

func contains(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%q does not mention %q", s, sub)
		}
	}
}

func testNodeClaim(name string) *v1.NodeClaim {
	return &v1.NodeClaim{
		// The API server gives every object a UID (the fake client does
		// not); the UID is the cloud's client token for the launch.
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{v1.LabelNodePool: "default", "team": "web"}},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
				{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"fake.small", "fake.large"}},
			},
			Taints:        []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}},
			StartupTaints: []corev1.Taint{{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}},
			Resources:     v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			NodeClassRef:  &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: "default"},
		},
	}
}

// registeringNode is the Node a launched NodeClaim's instance registers
// as: the unregistered and startup taints, kubelet labels, Ready.
func registeringNode(name, providerID, arch string, startupTaints ...corev1.Taint) *corev1.Node {
	taints := append([]corev1.Taint{v1.UnregisteredNoExecuteTaint}, startupTaints...)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelArch: arch, v1.LabelHostname: name}},
		Spec:       corev1.NodeSpec{ProviderID: providerID, Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1900m")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// launch creates nc and reconciles it until Launched.
func (u *unit) launch(nc *v1.NodeClaim) *v1.NodeClaim {
	u.t.Helper()
	u.create(nc)
	u.reconcile(nc.Name)
	got := u.nodeClaim(nc.Name)
	requireCondition(u.t, got, v1.ConditionTypeLaunched, metav1.ConditionTrue, "")
	return got
}

func requestFor(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}
}

var errFull = errorString("subnet full")

type errorString string

func (e errorString) Error() string { return string(e) }
