package e2e

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/state"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestSlowInformerKeepsCreatedNodeClaims: the provisioner records each
// NodeClaim it creates (NodeClaimCreated) so the next pass counts it before
// the NodeClaim informer delivers it. Under a slow kube-apiserver that
// informer can lag by more than state's CreatedTTL (30 s). The model must
// keep counting a NodeClaim the API server holds, with the pods nominated
// to it, however late the informer is: a model that forgot it released its
// pods to the next pass, which launched them again (one candidate for the
// 514 NodeClaims run P6 of the performance suite left for 500 pods that
// each need a node). A NodeClaim deleted before the informer delivered
// anything must still not linger: the first sync check past the TTL whose
// list no longer holds it drops it and ends its nominations.
//
// The informer is slowed for real: the NodeClaim informer's transform
// blocks while the test holds a gate, so its watch events wait, as a
// starved kube-apiserver or client makes them wait.
func TestSlowInformerKeepsCreatedNodeClaims(t *testing.T) {
	env := test.Env(t)
	var gate sync.Mutex
	opts := state.CacheOptions()
	opts.ByObject[&v1.NodeClaim{}] = cache.ByObject{Transform: func(obj any) (any, error) {
		gate.Lock()
		defer gate.Unlock()
		return cache.TransformStripManagedFields()(obj)
	}}
	mgr, err := manager.New(env.Config, manager.Options{
		Scheme: test.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, Cache: opts,
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := state.RegisterFieldIndexes(t.Context(), mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	cluster, err := state.NewCluster(state.Options{Reader: mgr.GetAPIReader(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Register(mgr); err != nil {
		t.Fatal(err)
	}
	test.StartManager(t, mgr)
	synced := func(ctx context.Context) error {
		if !cluster.Synced(ctx) {
			return errors.New("cluster state not synced")
		}
		return nil
	}
	test.Eventually(t, 0, synced)

	// From here the NodeClaim informer delivers nothing until released.
	gate.Lock()
	release := sync.OnceFunc(gate.Unlock)
	t.Cleanup(release) // before the manager stops: its informer waits on the gate

	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "nc"), Labels: map[string]string{v1.LabelNodePool: "slow-pool"}},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: "default"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
			Resources:    v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		},
	}
	env.Create(t, nc)
	cluster.NodeClaimCreated(nc)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "pod"), Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
	env.Create(t, pod)
	cluster.Nominations().Nominate(pod, nc.Name)
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}

	// Past the TTL and the sync check's reuse, with a fresh list from the
	// API server.
	lag := state.DefaultCreatedTTL + state.DefaultSyncedRecheckInterval + time.Second
	clk.Step(lag)
	test.Eventually(t, 0, synced)
	if _, ok := cluster.NodeByName(nc.Name); !ok {
		t.Fatalf("with its informer %s late, the model dropped NodeClaim %s, which the API server holds", lag, nc.Name)
	}
	if got, _, ok := cluster.Nominations().Holds(key); !ok || got != nc.Name {
		t.Fatalf("pod %s is released to the next provisioning pass (held by %q, %v) while its NodeClaim %s launches", key, got, ok, nc.Name)
	}
	for _, ended := range cluster.Nominations().TakeEnded() {
		t.Errorf("nomination of %s to %s ended (%s)", ended.Pod.Name, ended.NodeClaim, ended.Reason)
	}

	// Deleted before the informer delivered anything: the next list drops it.
	if err := env.Client.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	clk.Step(state.DefaultSyncedRecheckInterval + time.Second)
	test.Eventually(t, 0, synced)
	if _, ok := cluster.NodeByName(nc.Name); ok {
		t.Fatalf("NodeClaim %s, gone from the API server, is still in the model", nc.Name)
	}
	if _, _, ok := cluster.Nominations().Holds(key); ok {
		t.Fatalf("pod %s still waits for the deleted NodeClaim %s", key, nc.Name)
	}
	ended := cluster.Nominations().TakeEnded()
	if len(ended) != 1 || ended[0].Pod.Name != pod.Name || ended[0].Reason != state.EndedNodeClaimGone {
		t.Fatalf("ended nominations %+v, want the pod's, %s", ended, state.EndedNodeClaimGone)
	}

	// The informer catches up and agrees.
	release()
	test.Eventually(t, 0, func(ctx context.Context) error {
		if _, ok := cluster.NodeByName(nc.Name); ok {
			return errors.New("the informer brought the deleted NodeClaim back")
		}
		return synced(ctx)
	})
}
