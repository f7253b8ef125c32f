package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/apis"
	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/test"
)

func TestMain(m *testing.M) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := apis.AddToScheme(scheme); err != nil {
		panic(err)
	}
	test.Main(m, controlplane.Options{
		Kwok:           true,
		Scheme:         scheme,
		CRDDirectories: []string{test.RepoPath("pkg/apis/crds")},
	})
}

const startupTaintKey = "example.com/agent-not-ready"

// cloud is one cluster's view of a simulated cloud (its store, its
// cluster identity) with its machines running for the test's lifetime.
type cloud struct {
	provider  *sim.Provider
	store     *sim.Store
	cluster   string
	nodeClass string
}

// newCloud creates a SimNodeClass with short delays and faults, and a
// simulated cloud with its own store.
func newCloud(t *testing.T, faults *simv1alpha1.Faults) *cloud {
	t.Helper()
	nc := &simv1alpha1.SimNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "simnc")},
		Spec: simv1alpha1.SimNodeClassSpec{
			LaunchDelay:       metav1.Duration{Duration: 100 * time.Millisecond},
			RegistrationDelay: metav1.Duration{Duration: 100 * time.Millisecond},
			Catalog:           simv1alpha1.Catalog{InstanceFamilies: []string{"m5", "m6g"}},
			Faults:            faults,
		},
	}
	test.Env(t).Create(t, nc)
	store, err := sim.OpenStore(filepath.Join(t.TempDir(), "instances.json"))
	if err != nil {
		t.Fatal(err)
	}
	return joinCloud(t, store, test.Name(t, "cluster"), nc.Name)
}

// joinCloud is another cluster's view of the cloud behind store.
func joinCloud(t *testing.T, store *sim.Store, cluster, nodeClass string) *cloud {
	t.Helper()
	env := test.Env(t)
	p, err := sim.New(sim.Options{Client: env.Client, Store: store, ClusterName: cluster})
	if err != nil {
		t.Fatal(err)
	}
	m, err := sim.NewMachines(sim.MachinesOptions{Client: env.Client, Store: store, ClusterName: cluster, Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = m.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return &cloud{provider: p, store: store, cluster: cluster, nodeClass: nodeClass}
}

// launch creates an instance for a NodeClaim asking for arch and returns
// the hydrated NodeClaim; the Node is deleted when the test ends.
func (c *cloud) launch(t *testing.T, arch string) *v1.NodeClaim {
	t.Helper()
	claim := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "nc"), Labels: map[string]string{v1.LabelNodePool: "default", "team": "e2e"}},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: c.nodeClass},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}},
				{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			},
			StartupTaints: []corev1.Taint{{Key: startupTaintKey, Effect: corev1.TaintEffectNoSchedule}},
			Resources:     v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		},
	}
	created, err := c.provider.Create(t.Context(), claim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if node, _ := nodeFor(ctx, test.Env(t).Client, created.Status.ProviderID); node != nil {
			_ = test.Env(t).Client.Delete(ctx, node)
		}
	})
	return created
}

func nodeFor(ctx context.Context, c client.Client, providerID string) (*corev1.Node, error) {
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		if nodes.Items[i].Spec.ProviderID == providerID {
			return &nodes.Items[i], nil
		}
	}
	return nil, nil
}

// readyNode waits for the Node of providerID to exist and be Ready.
func readyNode(t *testing.T, providerID string) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	test.Eventually(t, 0, func(ctx context.Context) error {
		n, err := nodeFor(ctx, test.Env(t).Client, providerID)
		switch {
		case err != nil:
			return err
		case n == nil:
			return fmt.Errorf("no node with providerID %s registered", providerID)
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				node = n
				return nil
			}
		}
		return fmt.Errorf("node %s is not Ready: %v", n.Name, n.Status.Conditions)
	})
	return node
}

func hasTaint(node *corev1.Node, key string, effect corev1.TaintEffect) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key && t.Effect == effect })
}

func TestInstanceRegistersAsReadyNode(t *testing.T) {
	c := newCloud(t, nil)
	claim := c.launch(t, "amd64")
	node := readyNode(t, claim.Status.ProviderID)

	if !hasTaint(node, v1.TaintKeyUnregistered, corev1.TaintEffectNoExecute) {
		t.Errorf("node lacks %s:NoExecute: %v", v1.TaintKeyUnregistered, node.Spec.Taints)
	}
	if !hasTaint(node, startupTaintKey, corev1.TaintEffectNoSchedule) {
		t.Errorf("node lacks its startup taint: %v", node.Spec.Taints)
	}
	for _, key := range []string{v1.LabelInstanceType, v1.LabelTopologyZone, v1.LabelCapacityType, v1.LabelArch, v1.LabelOS, v1.LabelTopologyRegion, v1.LabelAWSInstanceFamily} {
		if node.Labels[key] == "" || node.Labels[key] != claim.Labels[key] {
			t.Errorf("node label %s = %q, nodeclaim says %q", key, node.Labels[key], claim.Labels[key])
		}
	}
	if node.Labels["team"] != "e2e" || node.Labels[v1.LabelNodePool] != "default" || node.Labels[v1.LabelHostname] != node.Name {
		t.Errorf("node lacks the nodeclaim's labels or its hostname: %v", node.Labels)
	}
	if !node.Status.Allocatable.Cpu().Equal(*claim.Status.Allocatable.Cpu()) || !node.Status.Capacity.Memory().Equal(*claim.Status.Capacity.Memory()) {
		t.Errorf("node resources %v / %v differ from the nodeclaim's %v / %v", node.Status.Capacity, node.Status.Allocatable,
			claim.Status.Capacity, claim.Status.Allocatable)
	}

	// Terminating the instance removes its Node.
	if err := c.provider.Delete(t.Context(), claim); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, 0, func(ctx context.Context) error {
		n, err := nodeFor(ctx, test.Env(t).Client, claim.Status.ProviderID)
		if err != nil {
			return err
		}
		if n != nil && n.DeletionTimestamp.IsZero() {
			return fmt.Errorf("node %s of the terminated instance remains", n.Name)
		}
		return nil
	})
	if err := c.provider.Delete(t.Context(), claim); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Delete after termination = %v, want not found", err)
	}
}

func TestNeverRegisterFault(t *testing.T) {
	c := newCloud(t, &simv1alpha1.Faults{NeverRegister: true})
	claim := c.launch(t, "amd64")
	if _, err := c.provider.Get(t.Context(), claim.Status.ProviderID); err != nil {
		t.Fatalf("the instance should run although it never registers: %v", err)
	}
	test.Consistently(t, 2*time.Second, func(ctx context.Context) error {
		n, err := nodeFor(ctx, test.Env(t).Client, claim.Status.ProviderID)
		if err != nil {
			return err
		}
		if n != nil {
			return fmt.Errorf("node %s registered despite neverRegister", n.Name)
		}
		return nil
	})
}

func TestDropStartupTaintsFault(t *testing.T) {
	c := newCloud(t, &simv1alpha1.Faults{DropStartupTaints: true})
	claim := c.launch(t, "amd64")
	node := readyNode(t, claim.Status.ProviderID)
	if hasTaint(node, startupTaintKey, corev1.TaintEffectNoSchedule) {
		t.Errorf("node has the startup taint despite dropStartupTaints: %v", node.Spec.Taints)
	}
	if !hasTaint(node, v1.TaintKeyUnregistered, corev1.TaintEffectNoExecute) {
		t.Errorf("node lost the unregistered taint too: %v", node.Spec.Taints)
	}
}

func TestWrongArchitectureFault(t *testing.T) {
	c := newCloud(t, &simv1alpha1.Faults{WrongArchitecture: true})
	claim := c.launch(t, "arm64")
	node := readyNode(t, claim.Status.ProviderID)
	if claim.Labels[v1.LabelArch] != "arm64" {
		t.Fatalf("nodeclaim arch %q, want the arm64 the instance type has", claim.Labels[v1.LabelArch])
	}
	if node.Labels[v1.LabelArch] != "amd64" || node.Status.NodeInfo.Architecture != "amd64" {
		t.Errorf("node arch label %q, nodeInfo %q; want amd64 (the wrong one)", node.Labels[v1.LabelArch], node.Status.NodeInfo.Architecture)
	}
}
