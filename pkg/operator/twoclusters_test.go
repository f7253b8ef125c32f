package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/catalog"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/identity"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestTwoClustersShareOneCloud runs two joiners with different cluster
// identities, each against its own API server, on one simulated cloud.
// Each launches instances for its own pods, and each one's garbage
// collection terminates its own orphan instance but never an instance of
// the other cluster.
func TestTwoClustersShareOneCloud(t *testing.T) {
	a := newScenario(t)
	a.apply()
	a.joiner()

	// Cluster b: a second API server (no scheduler, no kwok: its pods are
	// marked unschedulable by hand and its Nodes never turn Ready, which is
	// enough to own instances).
	opts := controlPlaneOptions()
	opts.Scheduler, opts.ControllerManager, opts.Kwok = false, false, false
	cpB, err := controlplane.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cpB.Stop() })
	if err := cpB.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	b := &scenario{t: t, env: &test.Environment{ControlPlane: cpB, Client: cpB.Client(), Config: cpB.Config()},
		ns: "default", nodePool: a.nodePool.DeepCopy(), nodeClass: a.nodeClass.DeepCopy(), clusterName: a.clusterName + "-b", store: a.store}
	b.nodePool.ResourceVersion, b.nodeClass.ResourceVersion = "", ""
	b.nodePool.UID, b.nodeClass.UID = "", ""
	if err := b.env.Client.Create(t.Context(), b.nodeClass); err != nil {
		t.Fatal(err)
	}
	if err := b.env.Client.Create(t.Context(), b.nodePool); err != nil {
		t.Fatal(err)
	}
	startJoiner(t, joinerConfig{kubeconfig: cpB.KubeconfigPath(), clusterName: b.clusterName, store: b.store})

	// Each cluster gets pods and so instances.
	a.deployment("a", 3, "1", "1Gi", nil)
	for i := range 3 {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b-%d", i), Namespace: b.ns},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{v1.LabelNodePool: b.nodePool.Name},
				Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			},
		}
		if err := b.env.Client.Create(t.Context(), pod); err != nil {
			t.Fatal(err)
		}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.Now()}}
		if err := b.env.Client.Status().Update(t.Context(), pod); err != nil {
			t.Fatal(err)
		}
	}
	a.waitRunning("a", 3, 90*time.Second)
	var instancesB int
	test.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		claims, err := b.nodeClaims(ctx)
		if err != nil {
			return err
		}
		launched := 0
		for _, nc := range claims {
			if nc.Status.ProviderID != "" {
				launched++
			}
		}
		if launched == 0 {
			return fmt.Errorf("cluster b: %d NodeClaims, none launched", len(claims))
		}
		instancesB = len(liveInstances(t, b.store, b.clusterName))
		return nil
	})
	instancesA := len(liveInstances(t, a.store, a.clusterName))

	// One orphan per cluster: an instance its cloud launched for a
	// NodeClaim that never reached the API server.
	orphanA := launchOrphan(t, a, a.env.Client)
	orphanB := launchOrphan(t, b, b.env.Client)
	t.Logf("cluster a: %d instances + orphan %s; cluster b: %d instances + orphan %s", instancesA, orphanA, instancesB, orphanB)

	test.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		for _, c := range []struct {
			s      *scenario
			orphan string
			want   int
		}{{a, orphanA, instancesA}, {b, orphanB, instancesB}} {
			live := liveInstances(t, c.s.store, c.s.clusterName)
			for _, inst := range live {
				if inst.Status.ProviderID == c.orphan {
					return fmt.Errorf("cluster %s: orphan %s not terminated yet", c.s.clusterName, c.orphan)
				}
			}
			if len(live) != c.want {
				return fmt.Errorf("cluster %s: %d live instances, want %d", c.s.clusterName, len(live), c.want)
			}
		}
		return nil
	})
	// And the clusters' instances stay, whatever the other's GC does.
	test.Consistently(t, 5*time.Second, func(ctx context.Context) error {
		if n := len(liveInstances(t, a.store, a.clusterName)); n != instancesA {
			return fmt.Errorf("cluster a: %d live instances, want %d", n, instancesA)
		}
		if n := len(liveInstances(t, b.store, b.clusterName)); n != instancesB {
			return fmt.Errorf("cluster b: %d live instances, want %d", n, instancesB)
		}
		return nil
	})

	// Cluster b's objects go with its control plane; its instances are
	// terminated so the shared store ends clean.
	claims, _ := b.nodeClaims(t.Context())
	for i := range claims {
		patch := client.MergeFrom(claims[i].DeepCopy())
		claims[i].Finalizers = nil
		_ = b.env.Client.Patch(t.Context(), &claims[i], patch)
	}
}

// launchOrphan launches an instance as s's cloud, for a NodeClaim that is
// not in the API server, and returns its provider ID. The instance carries
// the cluster's full identity (name and kube-system UID), as joiner's own
// launches do, so it is provably that cluster's to collect.
func launchOrphan(t *testing.T, s *scenario, c client.Client) string {
	t.Helper()
	st, err := sim.OpenStore(s.store)
	if err != nil {
		t.Fatal(err)
	}
	clusterID, err := identity.ClusterID(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.New(sim.Options{Client: c, Store: st, ClusterName: s.clusterName, ClusterID: clusterID, Catalog: func(nc *simv1alpha1.SimNodeClass) ([]*scheduling.InstanceType, error) {
		cat, err := catalog.Default(catalog.Options{Zones: simv1alpha1.DefaultZones})
		if err != nil {
			return nil, err
		}
		return cat.InstanceTypes(), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "orphan"), Labels: map[string]string{v1.LabelNodePool: s.nodePool.Name}},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: s.nodePool.Spec.Template.Spec.NodeClassRef.DeepCopy(),
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}},
		},
	}
	out, err := p.Create(t.Context(), nc)
	if err != nil {
		t.Fatalf("launching orphan for %s: %v", s.clusterName, err)
	}
	return out.Status.ProviderID
}
