package termination_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/fake"
	"github.com/joiner-dev/joiner/pkg/controllers/node/termination"
	nodeclaimtermination "github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/termination"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// kwokSelector limits kwok to this package's nodes.
const kwokSelector = "joiner.test/termination=true"

// TestMain runs one control plane for the package. kube-controller-manager
// is needed: its disruption controller is what makes PodDisruptionBudgets
// allow or refuse evictions.
func TestMain(m *testing.M) {
	test.Main(m, controlplane.Options{
		ControllerManager: true,
		Kwok:              true,
		KwokNodeSelector:  kwokSelector,
		CRDDirectories:    []string{test.RepoPath("pkg/apis/crds")},
		Scheme:            test.Scheme(),
	})
}

// harness runs both termination controllers in a manager against the
// package's control plane, with a fake cloud and a buffered recorder.
type harness struct {
	client   client.Client
	cloud    *fake.CloudProvider
	recorder *events.Buffer
}

func start(t *testing.T) *harness {
	t.Helper()
	env := test.Env(t)
	mgr := env.NewManager(t)
	h := &harness{client: env.Client, cloud: fake.New(), recorder: &events.Buffer{}}
	nodeCtrl, err := termination.NewController(termination.Options{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), CloudProvider: h.cloud, Recorder: h.recorder,
	})
	if err != nil {
		t.Fatal(err)
	}
	ncCtrl, err := nodeclaimtermination.NewController(nodeclaimtermination.Options{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), CloudProvider: h.cloud, Recorder: h.recorder,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nodeCtrl.Register(mgr); err != nil {
		t.Fatal(err)
	}
	if err := ncCtrl.Register(mgr); err != nil {
		t.Fatal(err)
	}
	test.StartManager(t, mgr)
	return h
}

// launch makes a NodeClaim whose instance lives in the fake cloud and a
// registered Node for it, as the lifecycle controller would leave them.
func (h *harness) launch(t *testing.T, name string, tgp *metav1.Duration) (*v1.NodeClaim, *corev1.Node) {
	t.Helper()
	return h.launchWith(t, name, launchOptions{tgp: tgp, kubelet: true, nodeClass: simNodeClass})
}

// launchOptions vary the NodeClaim and Node launch makes.
type launchOptions struct {
	tgp *metav1.Duration
	// kubelet: kwok plays the node's kubelet (the node turns Ready and runs
	// its pods); without it the node behaves like a dead machine.
	kubelet   bool
	nodeClass *v1.NodeClassReference
}

var simNodeClass = &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: "default"}

func (h *harness) launchWith(t *testing.T, name string, o launchOptions) (*v1.NodeClaim, *corev1.Node) {
	t.Helper()
	tgp := o.tgp
	ctx := context.Background()
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{v1.TerminationFinalizer}, Labels: map[string]string{v1.LabelNodePool: "default"}},
		Spec: v1.NodeClaimSpec{
			NodeClassRef:           o.nodeClass,
			Requirements:           []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
			TerminationGracePeriod: tgp,
		},
	}
	launched, err := h.cloud.Create(ctx, nc)
	if err != nil {
		t.Fatalf("launching in the fake cloud: %v", err)
	}
	if err := h.client.Create(ctx, nc); err != nil {
		t.Fatalf("creating nodeclaim: %v", err)
	}
	nc.Status.ProviderID = launched.Status.ProviderID
	nc.Status.NodeName = name
	if err := h.client.Status().Update(ctx, nc); err != nil {
		t.Fatalf("updating nodeclaim status: %v", err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Labels:     map[string]string{corev1.LabelHostname: name, v1.LabelNodePool: "default"},
			Finalizers: []string{v1.TerminationFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodeClaim", Name: nc.Name, UID: nc.UID, BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.NodeSpec{ProviderID: launched.Status.ProviderID},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: *resourceQuantity("8"), corev1.ResourceMemory: *resourceQuantity("32Gi"), corev1.ResourcePods: *resourceQuantity("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: *resourceQuantity("8"), corev1.ResourceMemory: *resourceQuantity("32Gi"), corev1.ResourcePods: *resourceQuantity("110")},
		},
	}
	if o.kubelet {
		node.Labels["joiner.test/termination"] = "true"
	}
	if err := h.client.Create(ctx, node); err != nil {
		t.Fatalf("creating node: %v", err)
	}
	return nc, node
}

// gone waits until obj no longer exists.
func gone(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	test.Eventually(t, testTimeout, func(ctx context.Context) error {
		return expectGone(ctx, c, obj)
	})
}

func hasFinalizer(obj client.Object) bool {
	return controllerutil.ContainsFinalizer(obj, v1.TerminationFinalizer)
}
