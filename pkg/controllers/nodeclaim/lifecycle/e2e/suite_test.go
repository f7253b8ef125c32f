// Package e2e runs the NodeClaim lifecycle controller against a real
// kube-apiserver, with kwok playing the kubelets and the simulated cloud
// launching instances whose machines register Nodes.
package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/sim"
	nodetermination "github.com/joiner-dev/joiner/pkg/controllers/node/termination"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/lifecycle"
	nodeclaimtermination "github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/termination"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// kwokLabel marks the Nodes kwok keeps Ready; Nodes a test builds by hand
// go without it so the test owns their status.
const kwokLabel = "joiner.test/kwok"

const startupTaintKey = "example.com/agent-not-ready"

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	// kube-controller-manager's node lifecycle controller removes the
	// node.kubernetes.io/not-ready taint the API server puts on new Nodes.
	test.Main(m, controlplane.Options{
		ControllerManager: true,
		Kwok:              true,
		KwokNodeSelector:  kwokLabel + "=true",
		CRDDirectories:    []string{test.RepoPath("pkg/apis/crds")},
		Scheme:            test.Scheme(),
	})
}

// harness is one test's joiner: a manager running the lifecycle controller
// and NodeClaim termination over a simulated cloud of its own.
type harness struct {
	kube      client.Client
	cloud     *sim.Provider
	nodeClass string
	pool      string
}

type options struct {
	faults            *simv1alpha1.Faults
	imageVersion      string
	registrationTTL   time.Duration
	initializationTTL time.Duration
	// nominations feeds the lifecycle controller's nominated pods.
	nominations lifecycle.Nominations
	// disruption also runs the controllers that feed disruption: NodePool
	// hash, drift and expiration.
	disruption bool
	// repair runs node repair (the NodeRepair feature gate).
	repair bool
}

// The tests share one API server and each runs its own manager, whose
// lifecycle controller sees every NodeClaim; so they run one at a time and
// each manager only launches NodeClaims of its own NodePool (the sim
// provider rejects others' node classes).
func start(t *testing.T, o options) *harness {
	t.Helper()
	env := test.Env(t)
	h := &harness{kube: env.Client, pool: test.Name(t, "pool")}

	nc := &simv1alpha1.SimNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "simnc")},
		Spec: simv1alpha1.SimNodeClassSpec{
			LaunchDelay:       metav1.Duration{Duration: 100 * time.Millisecond},
			RegistrationDelay: metav1.Duration{Duration: 200 * time.Millisecond},
			Catalog:           simv1alpha1.Catalog{InstanceFamilies: []string{"m5", "m6g", "g5"}},
			ImageVersion:      o.imageVersion,
			Faults:            o.faults,
		},
	}
	env.Create(t, nc)
	h.nodeClass = nc.Name
	env.Create(t, &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: h.pool},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
			NodeClassRef: &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: nc.Name},
		}}},
	})

	store, err := sim.OpenStore(filepath.Join(t.TempDir(), "instances.json"))
	if err != nil {
		t.Fatal(err)
	}
	cluster := test.Name(t, "cluster")
	h.cloud, err = sim.New(sim.Options{Client: env.Client, Store: store, ClusterName: cluster})
	if err != nil {
		t.Fatal(err)
	}
	machines, err := sim.NewMachines(sim.MachinesOptions{Client: env.Client, Store: store, ClusterName: cluster, Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}

	mgr := env.NewManager(t)
	recorder, err := events.ForManager(mgr, nil)
	if err != nil {
		t.Fatal(err)
	}
	lc, err := lifecycle.NewController(lifecycle.Options{
		Client: mgr.GetClient(), CloudProvider: ownPool{h.cloud, h.pool}, Recorder: recorder, RegistrationTTL: o.registrationTTL,
		InitializationTTL: o.initializationTTL, Nominations: o.nominations,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := lc.Register(mgr); err != nil {
		t.Fatal(err)
	}
	term, err := nodeclaimtermination.NewController(nodeclaimtermination.Options{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), CloudProvider: h.cloud, Recorder: recorder})
	if err != nil {
		t.Fatal(err)
	}
	if err := term.Register(mgr); err != nil {
		t.Fatal(err)
	}
	// Node termination drains deleted Nodes and deletes their NodeClaims.
	nodeTerm, err := nodetermination.NewController(nodetermination.Options{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), CloudProvider: h.cloud, Recorder: recorder,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nodeTerm.Register(mgr); err != nil {
		t.Fatal(err)
	}
	if o.disruption {
		h.registerDisruption(t, mgr, recorder)
	}
	if o.repair {
		h.registerRepair(t, mgr, recorder)
	}
	if err := mgr.Add(machines); err != nil {
		t.Fatal(err)
	}
	test.StartManager(t, mgr)
	return h
}

// nodeClaim builds a NodeClaim of the harness's pool asking for amd64 with
// a startup taint; the kwok label reaches its Node through label sync.
func (h *harness) nodeClaim(t *testing.T) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "nc"), Labels: map[string]string{v1.LabelNodePool: h.pool, kwokLabel: "true"}},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: h.nodeClass},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
				{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			},
			StartupTaints: []corev1.Taint{{Key: startupTaintKey, Effect: corev1.TaintEffectNoSchedule}},
			Resources:     v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		},
	}
}

// create creates nc; when the test ends it is deleted and its Node too.
func (h *harness) create(t *testing.T, nc *v1.NodeClaim) {
	t.Helper()
	test.Env(t).Create(t, nc)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		got := &v1.NodeClaim{}
		if err := h.kube.Get(ctx, client.ObjectKeyFromObject(nc), got); err == nil && got.Status.NodeName != "" {
			_ = h.kube.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: got.Status.NodeName}})
			node := &corev1.Node{}
			if h.kube.Get(ctx, client.ObjectKey{Name: got.Status.NodeName}, node) == nil {
				node.Finalizers = nil
				_ = h.kube.Update(ctx, node)
			}
		}
	})
}

// condition waits until nc's condition typ has status (and reason, when
// set) and returns the NodeClaim.
func (h *harness) condition(t *testing.T, name, typ string, status metav1.ConditionStatus, reason string) *v1.NodeClaim {
	t.Helper()
	nc := &v1.NodeClaim{}
	test.Eventually(t, 0, func(ctx context.Context) error {
		if err := h.kube.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return err
		}
		c := meta.FindStatusCondition(nc.Status.Conditions, typ)
		if c == nil {
			return fmt.Errorf("no %s condition yet", typ)
		}
		if c.Status != status || (reason != "" && c.Reason != reason) {
			return fmt.Errorf("%s = %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
		}
		return nil
	})
	return nc
}

func (h *harness) node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := h.kube.Get(t.Context(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// event waits for an event with reason about the object named regarding,
// as stored by the API server, and returns its note.
func (h *harness) event(t *testing.T, regarding, reason string) string {
	t.Helper()
	var note string
	test.Eventually(t, 0, func(ctx context.Context) error {
		list := &eventsv1.EventList{}
		if err := h.kube.List(ctx, list); err != nil {
			return err
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name != regarding {
				continue
			}
			if e.Reason == reason {
				note = e.Note
				return nil
			}
			seen = append(seen, e.Reason)
		}
		return fmt.Errorf("no %s event about %s yet (seen %v)", reason, regarding, seen)
	})
	return note
}

func requireMentions(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%q does not mention %q", s, sub)
		}
	}
}
