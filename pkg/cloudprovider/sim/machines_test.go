package sim

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// launchAndRegister launches one NodeClaim on a node class with faults and
// returns the hydrated NodeClaim and the Node its machine registered (nil
// when none did within a minute).
func launchAndRegister(t *testing.T, faults simv1alpha1.Faults) (*v1.NodeClaim, *corev1.Node) {
	t.Helper()
	e := newEnv(t, nodeClass("default", withFaults(faults)))
	ctx := context.Background()
	created, err := e.provider("c").Create(ctx, newNodeClaim("nc", "default", req(v1.LabelArch, corev1.NodeSelectorOpIn, "amd64")))
	if err != nil {
		t.Fatal(err)
	}
	m := e.machines("c")
	var inst Instance
	_ = e.store.View(func(st *StoreState) error {
		for _, i := range st.Instances {
			inst = *i
		}
		return nil
	})
	node := &corev1.Node{}
	getNode := func() error {
		return e.client.Get(ctx, types.NamespacedName{Name: inst.Registration.NodeName}, node)
	}
	// Before the launch and registration delays nothing registers.
	if err := m.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if err := getNode(); !apierrors.IsNotFound(err) {
		t.Fatalf("node registered before its delays: %v", err)
	}
	e.clock.Step(2 * time.Second)
	if err := m.Step(ctx); err != nil {
		t.Fatal(err)
	}
	_ = e.store.View(func(st *StoreState) error {
		if s := st.Instances[inst.ID].State; s != StateRunning {
			t.Errorf("instance is %s after its launch delay, want running", s)
		}
		return nil
	})
	if err := getNode(); !apierrors.IsNotFound(err) {
		t.Fatalf("node registered before the registration delay: %v", err)
	}
	e.clock.Step(time.Minute)
	if err := m.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if err := getNode(); apierrors.IsNotFound(err) {
		return created, nil
	} else if err != nil {
		t.Fatal(err)
	}
	return created, node
}

func hasTaint(node *corev1.Node, key string) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

func TestMachineRegistersNode(t *testing.T) {
	created, node := launchAndRegister(t, simv1alpha1.Faults{})
	if node == nil {
		t.Fatal("no node registered")
	}
	if node.Spec.ProviderID != created.Status.ProviderID {
		t.Errorf("node providerID %q, want %q", node.Spec.ProviderID, created.Status.ProviderID)
	}
	for _, key := range []string{v1.TaintKeyUnregistered, "dedicated", "example.com/agent-not-ready"} {
		if !hasTaint(node, key) {
			t.Errorf("node lacks taint %s: %v", key, node.Spec.Taints)
		}
	}
	for k, v := range map[string]string{
		v1.LabelInstanceType: "m5.large", v1.LabelArch: "amd64", v1.LabelTopologyZone: created.Labels[v1.LabelTopologyZone],
		v1.LabelTopologyRegion: "sim-east-1", v1.LabelNodePool: "default", "team": "a", v1.LabelHostname: node.Name,
		v1.LabelCapacityType: created.Labels[v1.LabelCapacityType],
	} {
		if node.Labels[k] != v {
			t.Errorf("node label %s = %q, want %q", k, node.Labels[k], v)
		}
	}
	if node.Status.Allocatable.Cpu().String() != "1930m" || node.Status.NodeInfo.Architecture != "amd64" {
		t.Errorf("unexpected node status: %+v", node.Status)
	}
}

func TestMachineFaults(t *testing.T) {
	t.Run("neverRegister", func(t *testing.T) {
		if _, node := launchAndRegister(t, simv1alpha1.Faults{NeverRegister: true}); node != nil {
			t.Errorf("a node registered: %s", node.Name)
		}
	})
	t.Run("dropStartupTaints", func(t *testing.T) {
		_, node := launchAndRegister(t, simv1alpha1.Faults{DropStartupTaints: true})
		if node == nil {
			t.Fatal("no node registered")
		}
		if hasTaint(node, "example.com/agent-not-ready") || !hasTaint(node, v1.TaintKeyUnregistered) || !hasTaint(node, "dedicated") {
			t.Errorf("taints = %v, want the unregistered and NodePool taints without the startup taint", node.Spec.Taints)
		}
	})
	t.Run("unregisteredTaintMissing", func(t *testing.T) {
		_, node := launchAndRegister(t, simv1alpha1.Faults{UnregisteredTaintMissing: true})
		if node == nil || hasTaint(node, v1.TaintKeyUnregistered) || !hasTaint(node, "example.com/agent-not-ready") {
			t.Errorf("node = %+v, want one without the unregistered taint", node)
		}
	})
	t.Run("wrongArchitecture", func(t *testing.T) {
		created, node := launchAndRegister(t, simv1alpha1.Faults{WrongArchitecture: true})
		if node == nil {
			t.Fatal("no node registered")
		}
		if created.Labels[v1.LabelArch] != "amd64" || node.Labels[v1.LabelArch] != "arm64" || node.Status.NodeInfo.Architecture != "arm64" {
			t.Errorf("nodeclaim arch %q, node arch %q/%q; want amd64 and arm64", created.Labels[v1.LabelArch],
				node.Labels[v1.LabelArch], node.Status.NodeInfo.Architecture)
		}
	})
}

func TestMachinesIgnoreOtherClustersAndRemoveTerminatedNodes(t *testing.T) {
	e := newEnv(t, nodeClass("default"))
	ctx := context.Background()
	a := e.provider("cluster-a")
	if _, err := e.provider("cluster-b").Create(ctx, newNodeClaim("b", "default")); err != nil {
		t.Fatal(err)
	}
	ncA, err := a.Create(ctx, newNodeClaim("a", "default"))
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Step(time.Minute)
	if err := e.machines("cluster-a").Step(ctx); err != nil {
		t.Fatal(err)
	}
	nodes := &corev1.NodeList{}
	if err := e.client.List(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 1 || nodes.Items[0].Spec.ProviderID != ncA.Status.ProviderID {
		t.Fatalf("cluster-a's machines registered %d nodes, want only cluster-a's", len(nodes.Items))
	}
	if err := a.Delete(ctx, ncA); err != nil {
		t.Fatal(err)
	}
	if err := e.machines("cluster-a").Step(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.client.List(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 0 {
		t.Errorf("the node of a terminated instance remains")
	}
}
