package provisioning_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/state"
	"github.com/joiner-dev/joiner/pkg/test"
)

func TestProvisionCreatesNodeClaimsForPendingPods(t *testing.T) {
	f := newFixture(t)
	f.createNodePool(nil)
	pods := f.pendingPods(10, "1", nil)

	res := f.replica().provision()
	if res.Pending != 10 || len(res.Created) == 0 || len(res.Unschedulable) != 0 {
		t.Fatalf("pending %d, created %d, unschedulable %d", res.Pending, len(res.Created), len(res.Unschedulable))
	}
	claims := f.nodeClaims()
	if len(claims) != len(res.Created) {
		t.Fatalf("%d NodeClaims in the API, %d reported created", len(claims), len(res.Created))
	}
	for _, nc := range claims {
		if len(nc.OwnerReferences) != 1 || nc.OwnerReferences[0].Name != f.nodePool.Name {
			t.Errorf("%s: owner references %+v", nc.Name, nc.OwnerReferences)
		}
		if nc.Labels["sim.joiner.dev/simnodeclass"] != "default" {
			t.Errorf("%s: labels %v lack the node class label", nc.Name, nc.Labels)
		}
		if !strings.HasPrefix(nc.Name, f.nodePool.Name+"-") {
			t.Errorf("%s: name does not start with the NodePool's", nc.Name)
		}
		var types []string
		for _, r := range nc.Spec.Requirements {
			if r.Key == v1.LabelInstanceType {
				types = r.Values
			}
			if r.Key == v1.LabelCapacityType && (len(r.Values) != 1 || r.Values[0] != v1.CapacityTypeOnDemand) {
				t.Errorf("%s: capacity type requirement %v, want the NodePool's on-demand", nc.Name, r.Values)
			}
		}
		if len(types) == 0 {
			t.Errorf("%s: no instance-type requirement", nc.Name)
		}
		if _, ok := nc.Spec.Resources.Requests[corev1.ResourceCPU]; !ok {
			t.Errorf("%s: no cpu request", nc.Name)
		}
	}
	nominated := 0
	for _, e := range f.events() {
		if strings.Contains(e, "Nominated") {
			nominated++
		}
	}
	if nominated != len(pods) {
		t.Errorf("%d Nominated events, want one per pod (%d)", nominated, len(pods))
	}
}

func TestProvisionDoesNotDuplicate(t *testing.T) {
	f := newFixture(t)
	f.createNodePool(nil)
	f.pendingPods(6, "1", nil)

	r := f.replica()
	first := r.provision()
	want := len(f.nodeClaims())
	if want == 0 || len(first.Created) != want {
		t.Fatalf("first pass created %d NodeClaims, API has %d", len(first.Created), want)
	}

	// The same replica again: the pods are nominated to the in-flight
	// NodeClaims.
	if res := r.provision(); len(res.Created) != 0 || res.Pending != 0 {
		t.Fatalf("second pass: %d pending, %d created; want none", res.Pending, len(res.Created))
	}
	// Even when its informers never deliver the NodeClaims, a replica's
	// second pass plans nothing: the first recorded the NodeClaims it made
	// (here: found under the same names) in the cluster state.
	lagging := f.replica()
	lagging.staleClaims = true
	lagging.provision()
	if res := lagging.provision(); len(res.Created) != 0 || res.Pending != 0 {
		t.Fatalf("second pass with lagging informers: %d pending, %d created; want none", res.Pending, len(res.Created))
	}
	if got := len(f.nodeClaims()); got != want {
		t.Fatalf("second pass: %d NodeClaims, want %d", got, want)
	}

	// A second replica whose state has not seen the NodeClaims plans the
	// same nodes, computes the same names and creates nothing new.
	other := f.replica()
	other.staleClaims = true
	res := other.provision()
	if len(res.Created) != want {
		t.Fatalf("stale replica planned %d NodeClaims, want the same %d", len(res.Created), want)
	}
	if got := len(f.nodeClaims()); got != want {
		t.Fatalf("stale replica: %d NodeClaims, want %d (a duplicate was created)", got, want)
	}
}

// A NodeClaim of the planned name whose node already registered and still
// did not take the pods (kube-scheduler filled it with others, say) must not
// absorb them again: the pass moves to the next name in the sequence.
func TestProvisionDoesNotReuseARegisteredNodeClaim(t *testing.T) {
	f := newFixture(t)
	f.createNodePool(nil)
	f.pendingPods(1, "1", nil)

	first := f.replica().provision()
	if len(first.Created) != 1 {
		t.Fatalf("first pass created %d NodeClaims, want 1", len(first.Created))
	}
	claims := f.nodeClaims()
	registered := claims[0].DeepCopy()
	registered.StatusConditions().SetTrue(v1.ConditionTypeRegistered)
	if err := test.Env(t).Client.Status().Update(context.Background(), registered); err != nil {
		t.Fatal(err)
	}

	// A replica whose state does not show the claim (its nomination expired)
	// plans the same node for the same pod.
	other := f.replica()
	other.staleClaims = true
	res := other.provision()
	if len(res.Created) != 1 {
		t.Fatalf("second pass created %d NodeClaims, want 1", len(res.Created))
	}
	if res.Created[0].Name == registered.Name {
		t.Fatalf("the pod was nominated again to registered NodeClaim %s", registered.Name)
	}
	if got := len(f.nodeClaims()); got != 2 {
		t.Fatalf("%d NodeClaims, want the registered one and a new one", got)
	}
}

func TestProvisionHoldsNodePoolLimits(t *testing.T) {
	f := newFixture(t)
	f.createNodePool(func(np *v1.NodePool) {
		np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("8")}
	})
	f.pendingPods(20, "1", nil)

	res := f.replica().provision()
	// Every claim is counted at its largest option's capacity.
	total := resource.Quantity{}
	for _, nc := range f.nodeClaims() {
		largest := resource.Quantity{}
		for _, r := range nc.Spec.Requirements {
			if r.Key != v1.LabelInstanceType {
				continue
			}
			for _, name := range r.Values {
				for _, it := range f.cloud.InstanceTypes {
					if it.Name == name && it.Capacity.Cpu().Cmp(largest) > 0 {
						largest = *it.Capacity.Cpu()
					}
				}
			}
		}
		total.Add(largest)
	}
	if total.Cmp(resource.MustParse("8")) > 0 {
		t.Fatalf("NodeClaims may launch %s cpu, over the NodePool's limit of 8", total.String())
	}
	if len(res.Unschedulable) == 0 {
		t.Fatal("20 cpu of pods fit under an 8 cpu limit")
	}
	t.Logf("%d NodeClaims, %s cpu at most; %d pods over the limit, e.g. %v", len(f.nodeClaims()), total.String(), len(res.Unschedulable), res.Unschedulable[0].NodePools)
	for _, pe := range res.Unschedulable {
		if !strings.Contains(scheduling.Message(pe.NodePools[f.nodePool.Name]), "limit") {
			t.Errorf("pod %s: reasons %v do not mention the limit", pe.Pod.Name, pe.NodePools)
		}
	}
}

func TestProvisionReportsUnschedulablePodsOnce(t *testing.T) {
	f := newFixture(t)
	f.createNodePool(nil)
	f.pendingPods(3, "1", func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{v1.LabelArch: "s390x"}
	})

	r := f.replica()
	for range 2 {
		res := r.provision()
		if len(res.Created) != 0 || len(res.Unschedulable) != 3 {
			t.Fatalf("created %d, unschedulable %d; want 0 and 3", len(res.Created), len(res.Unschedulable))
		}
	}
	var failed []string
	for _, e := range f.events() {
		if strings.Contains(e, "FailedScheduling") {
			failed = append(failed, e)
		}
	}
	if len(failed) != 3 {
		t.Fatalf("%d FailedScheduling events over two passes, want one per pod:\n%s", len(failed), strings.Join(failed, "\n"))
	}
	t.Logf("event: %s", failed[0])
	if !strings.Contains(failed[0], f.nodePool.Name) {
		t.Errorf("event %q does not name the NodePool", failed[0])
	}
}

func TestProvisionIgnoresPodsItMustNotPlace(t *testing.T) {
	f := newFixture(t)
	f.createNodePool(nil)
	f.pendingPods(1, "1", func(p *corev1.Pod) {
		p.OwnerReferences = nil
		p.Name = "daemon"
		p.OwnerReferences = append(p.OwnerReferences, daemonSetOwner())
	})
	res := f.replica().provision()
	if res.Pending != 0 || len(res.Created) != 0 {
		t.Fatalf("a DaemonSet pod was provisioned for: pending %d, created %d", res.Pending, len(res.Created))
	}
}

// TestProvisionEvaluatesNamespaceSelectors checks that the snapshot carries
// the namespaces with their labels, so a pod anti-affinity term's
// namespaceSelector counts only pods in the namespaces it matches: two
// pods that repel pods of team=x namespaces share a node unless their own
// namespace is labelled team=x.
func TestProvisionEvaluatesNamespaceSelectors(t *testing.T) {
	tests := []struct {
		name       string
		label      bool
		wantClaims int
	}{
		{name: "own namespace not selected", wantClaims: 1},
		{name: "own namespace selected", label: true, wantClaims: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.label {
				ns := &corev1.Namespace{}
				if err := f.env.Client.Get(t.Context(), client.ObjectKey{Name: f.ns}, ns); err != nil {
					t.Fatal(err)
				}
				if ns.Labels == nil {
					ns.Labels = map[string]string{}
				}
				ns.Labels["team"] = "x"
				if err := f.env.Client.Update(t.Context(), ns); err != nil {
					t.Fatal(err)
				}
			}
			f.createNodePool(nil)
			f.pendingPods(2, "100m", func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
						TopologyKey:       corev1.LabelHostname,
						LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "test"}},
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}},
					}},
				}}
			})
			res := f.replica().provision()
			if len(res.Created) != tt.wantClaims || len(res.Unschedulable) != 0 {
				t.Fatalf("created %d NodeClaims (want %d), %d unschedulable", len(res.Created), tt.wantClaims, len(res.Unschedulable))
			}
		})
	}
}

// A pod whose nomination ended before its NodeClaim's Node registered (it
// held state.MaxNominationHold, the NodeClaim never coming up) is planned
// again onto the in-flight room (Karpenter re-simulates with in-flight
// NodeClaims as capacity), not onto a new NodeClaim: otherwise every
// nomination that ends would launch the burst once more.
func TestProvisionReusesInFlightNodeClaimsAfterTheWindow(t *testing.T) {
	tests := []struct {
		name string
		// launch marks the NodeClaims launched (provider ID, capacity).
		launch bool
		// node creates each launched NodeClaim's Node as its kubelet
		// registers it: still tainted karpenter.sh/unregistered.
		node bool
	}{
		{name: "not launched yet"},
		{name: "launched, no Node yet", launch: true},
		{name: "Node created, not registered yet", launch: true, node: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.createNodePool(nil)
			f.pendingPods(4, "1", nil)
			r := f.replica()
			first := r.provision()
			want := len(f.nodeClaims())
			if want == 0 || len(first.Created) != want {
				t.Fatalf("first pass created %d NodeClaims, API has %d", len(first.Created), want)
			}
			if tt.launch {
				for i, nc := range f.nodeClaims() {
					nc.Status.ProviderID = fmt.Sprintf("fake:///zone-a/i-%d", i)
					nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
					nc.Status.Allocatable = nc.Status.Capacity
					nc.StatusConditions().SetTrue(v1.ConditionTypeLaunched)
					if err := f.env.Client.Status().Update(t.Context(), &nc); err != nil {
						t.Fatal(err)
					}
					if !tt.node {
						continue
					}
					name := fmt.Sprintf("node-%d", i)
					labels := map[string]string{corev1.LabelHostname: name}
					for k, v := range nc.Labels {
						labels[k] = v
					}
					node := &corev1.Node{
						ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
						Spec:       corev1.NodeSpec{ProviderID: nc.Status.ProviderID, Taints: []corev1.Taint{v1.UnregisteredNoExecuteTaint}},
					}
					f.env.Create(t, node)
					node.Status.Capacity, node.Status.Allocatable = nc.Status.Capacity, nc.Status.Allocatable
					if err := f.env.Client.Status().Update(t.Context(), node); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = f.env.Client.Delete(context.Background(), node) })
				}
			}
			f.clock.Step(state.DefaultNominationTTL + time.Second)
			if res := r.provision(); len(res.Created) != 0 {
				t.Errorf("past the window, the NodeClaims not initialised: %d NodeClaims created; want the pods still nominated to theirs", len(res.Created))
			}
			f.clock.Step(state.MaxNominationHold)
			res := r.provision()
			if len(res.Created) != 0 {
				t.Errorf("after the hold: %d pending, %d NodeClaims created; want the pods planned onto the %d in flight", res.Pending, len(res.Created), want)
			}
			if got := len(f.nodeClaims()); got != want {
				t.Errorf("%d NodeClaims, want %d", got, want)
			}
		})
	}
}
