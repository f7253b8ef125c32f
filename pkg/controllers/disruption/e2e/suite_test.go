// Package e2e runs the whole of joiner (every controller, as
// controllers.Register wires them) in-process with the simulated cloud on a
// real control plane with kube-scheduler, kube-controller-manager and kwok,
// and checks what voluntary disruption does: nodes given back after a
// scale-down, a cheaper replacement, and what blocks it (PDBs,
// do-not-disrupt on pods and nodes, budgets of zero and cron windows).
//
// One joiner serves every scenario; scenarios run in parallel, each with
// its own SimNodeClass, NodePool, namespace and Deployment whose pods
// select that NodePool, so no scenario moves another's pods. Disruption's
// waits are shortened (consolidateAfter 2 s, a decision every second, 2 s
// validation) so the suite stays within a few minutes.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-dev/joiner/pkg/controllers"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/test"
)

func TestMain(m *testing.M) {
	test.Main(m, controlplane.Options{
		Scheduler: true, ControllerManager: true, Kwok: true,
		CRDDirectories: []string{test.RepoPath("pkg/apis/crds")},
		Scheme:         test.Scheme(),
	})
}

// startJoiner runs every joiner controller with the simulated cloud until
// t ends. JOINER_TEST_LOG=FILE writes joiner's log there.
func startJoiner(t *testing.T) {
	t.Helper()
	env := test.Env(t)
	logger := logr.Discard()
	if path := os.Getenv("JOINER_TEST_LOG"); path != "" {
		zc := zap.NewDevelopmentConfig()
		zc.OutputPaths = []string{path}
		z, err := zc.Build()
		if err != nil {
			t.Fatal(err)
		}
		logger = zapr.NewLogger(z)
	}
	ctrl.SetLogger(logger)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 test.Scheme(),
		Logger:                 logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	clusterName := test.Name(t, "c")
	store := filepath.Join(t.TempDir(), "instances.json")
	cloud, err := sim.Build(mgr, sim.SetupOptions{StorePath: store, ClusterName: clusterName})
	if err != nil {
		t.Fatal(err)
	}
	recorder, err := events.ForManager(mgr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := controllers.Register(t.Context(), controllers.Options{
		Manager:       mgr,
		CloudProvider: cloud.Provider,
		Clock:         clock.RealClock{},
		Recorder:      recorder,
		Solve: func(s *scheduling.Snapshot) (*scheduling.Plan, error) {
			return scheduling.Solve(s, scheduling.Options{})
		},
		CloudControllers:  []controllers.Controller{cloud.NodeClasses},
		Runnables:         []manager.Runnable{cloud.Machines},
		BatchIdleDuration: 500 * time.Millisecond,
		BatchMaxDuration:  3 * time.Second,
		RegistrationTTL:   15 * time.Minute,
		// A replacement that never initialises is deleted quickly (the
		// safe drift scenario); healthy nodes initialise within seconds.
		InitializationTTL:          15 * time.Second,
		ConsolidationMinSavings:    0.05,
		DisruptionPollInterval:     time.Second,
		DisruptionValidationPeriod: 2 * time.Second,
	}); err != nil {
		t.Fatal(err)
	}
	test.StartManager(t, mgr)
}

// scenario is one NodePool with its node class, namespace and pods.
type scenario struct {
	t     *testing.T
	env   *test.Environment
	ns    string
	class *simv1alpha1.SimNodeClass
	pool  *v1.NodePool
	// afterProvisioning, when set, runs on the first NodeClaim once the
	// pods run (to annotate its Node, say).
	afterProvisioning func(v1.NodeClaim)
}

// newScenario builds (without creating) a fast SimNodeClass and an
// on-demand amd64 NodePool of c/m/r types that consolidates when empty or
// underutilised after 2 s, with a 100% budget unless mutate says
// otherwise.
func newScenario(t *testing.T) *scenario {
	env := test.Env(t)
	s := &scenario{t: t, env: env, ns: env.Namespace(t)}
	s.class = &simv1alpha1.SimNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "nc")},
		Spec: simv1alpha1.SimNodeClassSpec{
			LaunchDelay:       metav1.Duration{Duration: 100 * time.Millisecond},
			RegistrationDelay: metav1.Duration{Duration: 100 * time.Millisecond},
		},
	}
	s.pool = &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "np")},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				NodeClassRef: &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: s.class.Name},
				Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
					{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
					{Key: v1.LabelAWSInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
					{Key: v1.LabelAWSInstanceGeneration, Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}},
				},
				ExpireAfter: v1.MustParseNillableDuration("720h"),
			}},
			Disruption: v1.Disruption{
				ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
				ConsolidateAfter:    v1.MustParseNillableDuration("2s"),
				Budgets:             []v1.Budget{{Nodes: "100%"}},
			},
		},
	}
	return s
}

// apply creates the node class and NodePool.
func (s *scenario) apply() {
	s.env.Create(s.t, s.class, s.pool)
}

// deployment creates a Deployment whose pods select the scenario's pool.
func (s *scenario) deployment(name string, replicas int32, cpu string, mutate func(*corev1.PodTemplateSpec)) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{v1.LabelNodePool: s.pool.Name},
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{
						Name: "app", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("256Mi"),
						}},
					}},
				},
			},
		},
	}
	if mutate != nil {
		mutate(&d.Spec.Template)
	}
	s.env.Create(s.t, d)
	return d
}

// scale sets the Deployment's replicas.
func (s *scenario) scale(d *appsv1.Deployment, replicas int32) {
	s.t.Helper()
	cur := &appsv1.Deployment{}
	if err := s.env.Client.Get(s.t.Context(), client.ObjectKeyFromObject(d), cur); err != nil {
		s.t.Fatal(err)
	}
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Replicas = ptr.To(replicas)
	if err := s.env.Client.Patch(s.t.Context(), cur, patch); err != nil {
		s.t.Fatal(err)
	}
}

// editPool changes the scenario's NodePool.
func (s *scenario) editPool(edit func(*v1.NodePool)) {
	s.t.Helper()
	np := &v1.NodePool{}
	if err := s.env.Client.Get(s.t.Context(), client.ObjectKeyFromObject(s.pool), np); err != nil {
		s.t.Fatal(err)
	}
	patch := client.MergeFrom(np.DeepCopy())
	edit(np)
	if err := s.env.Client.Patch(s.t.Context(), np, patch); err != nil {
		s.t.Fatal(err)
	}
}

// resize changes the cpu the Deployment's pods ask for and waits until
// its one pod runs with it (a rolling update: the new pod lands on the
// node the old one leaves).
func (s *scenario) resize(d *appsv1.Deployment, cpu string) {
	s.t.Helper()
	cur := &appsv1.Deployment{}
	if err := s.env.Client.Get(s.t.Context(), client.ObjectKeyFromObject(d), cur); err != nil {
		s.t.Fatal(err)
	}
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	if err := s.env.Client.Patch(s.t.Context(), cur, patch); err != nil {
		s.t.Fatal(err)
	}
	want := resource.MustParse(cpu)
	test.Eventually(s.t, 2*time.Minute, func(ctx context.Context) error {
		pods, err := s.runningPods(ctx, d.Name, int(*d.Spec.Replicas))
		if err != nil {
			return err
		}
		for _, p := range pods {
			if got := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.Cmp(want) != 0 {
				return fmt.Errorf("pod %s still asks for %s cpu", p.Name, got.String())
			}
		}
		return nil
	})
}

// running waits until replicas pods of app run and returns them.
func (s *scenario) running(app string, replicas int, timeout time.Duration) []corev1.Pod {
	s.t.Helper()
	var out []corev1.Pod
	test.Eventually(s.t, timeout, func(ctx context.Context) error {
		var err error
		out, err = s.runningPods(ctx, app, replicas)
		return err
	})
	return out
}

// runningPods returns app's pods when exactly replicas exist and run.
func (s *scenario) runningPods(ctx context.Context, app string, replicas int) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := s.env.Client.List(ctx, &pods, client.InNamespace(s.ns), client.MatchingLabels{"app": app}); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			out = append(out, p)
		}
	}
	if len(out) != replicas || len(pods.Items) != replicas {
		return nil, fmt.Errorf("%d of %d pods of %s running (%d exist)", len(out), replicas, app, len(pods.Items))
	}
	return out, nil
}

// claims lists the pool's NodeClaims (deleting ones included).
func (s *scenario) claims(ctx context.Context) ([]v1.NodeClaim, error) {
	var list v1.NodeClaimList
	if err := s.env.Client.List(ctx, &list, client.MatchingLabels{v1.LabelNodePool: s.pool.Name}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// liveClaims are the pool's NodeClaims not being deleted.
func (s *scenario) liveClaims(ctx context.Context) ([]v1.NodeClaim, error) {
	all, err := s.claims(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(nc v1.NodeClaim) bool { return nc.DeletionTimestamp != nil }), nil
}

// nodeCount waits until the pool has exactly want NodeClaims (and Nodes)
// left, none of them deleting, each naming its node.
func (s *scenario) nodeCount(want int, timeout time.Duration) []v1.NodeClaim {
	s.t.Helper()
	var out []v1.NodeClaim
	test.Eventually(s.t, timeout, func(ctx context.Context) error {
		all, err := s.claims(ctx)
		if err != nil {
			return err
		}
		var nodes corev1.NodeList
		if err := s.env.Client.List(ctx, &nodes, client.MatchingLabels{v1.LabelNodePool: s.pool.Name}); err != nil {
			return err
		}
		if len(all) != want || len(nodes.Items) != want {
			return fmt.Errorf("nodepool %s has %d nodeclaims and %d nodes, want %d", s.pool.Name, len(all), len(nodes.Items), want)
		}
		for _, nc := range all {
			if nc.DeletionTimestamp != nil {
				return fmt.Errorf("nodeclaim %s still deleting", nc.Name)
			}
			// Registration removes the unregistered taint before its
			// status write names the node: pods can run on a Node whose
			// NodeClaim does not name it yet, and callers read the name.
			if nc.Status.NodeName == "" {
				return fmt.Errorf("nodeclaim %s does not name its node yet", nc.Name)
			}
		}
		out = all
		return nil
	})
	return out
}

// events lists the events of the given reason about objects named name.
func (s *scenario) events(ctx context.Context, reason, name string) ([]eventsv1.Event, error) {
	var list eventsv1.EventList
	if err := s.env.Client.List(ctx, &list); err != nil {
		return nil, err
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Reason == reason && (name == "" || e.Regarding.Name == name) {
			out = append(out, e)
		}
	}
	return out, nil
}

// waitEvent waits for an event of reason about name whose note contains
// text, and returns its note.
func (s *scenario) waitEvent(reason, name, text string, timeout time.Duration) string {
	s.t.Helper()
	var note string
	test.Eventually(s.t, timeout, func(ctx context.Context) error {
		evs, err := s.events(ctx, reason, name)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if text == "" || strings.Contains(e.Note, text) {
				note = e.Note
				return nil
			}
		}
		return fmt.Errorf("no %s event about %s containing %q (%d others)", reason, name, text, len(evs))
	})
	return note
}
