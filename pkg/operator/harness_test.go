package operator_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/test"
)

// These tests run the real joiner binary (`joiner controller`) against a
// shared local control plane with kube-scheduler, kube-controller-manager
// and kwok, and the simulated cloud. They run one at a time: each has its
// own NodePool, SimNodeClass, namespace, cluster identity and instance
// store, and its pods select their NodePool, so a test never acts on
// another's objects.
func TestMain(m *testing.M) {
	// The joiner binary the tests run lives in a directory of this test
	// binary's own: a fixed path shared by concurrent runs would let one run
	// overwrite the executable another is starting.
	dir, err := os.MkdirTemp("", "joiner-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: creating the joiner binary's directory:", err)
		os.Exit(1)
	}
	joinerBin.Dir = dir
	code := func() int {
		defer func() {
			if err := os.RemoveAll(dir); err != nil {
				fmt.Fprintln(os.Stderr, "removing the joiner binary's directory:", err)
			}
		}()
		return test.Run(m, controlPlaneOptions())
	}()
	os.Exit(code)
}

func controlPlaneOptions() controlplane.Options {
	opts := controlplane.Options{
		Scheduler: true, ControllerManager: true, Kwok: true,
		SchedulerProfiles: schedulerProfiles,
		CRDDirectories:    []string{test.RepoPath("pkg/apis/crds")},
		Scheme:            test.Scheme(),
	}
	if os.Getenv("JOINER_BENCH_PROFILE") != "" {
		// kube-apiserver logs at level 1 the watchers it closes for not
		// keeping up; the latency profile keeps its log.
		opts.ExtraArgs = map[string][]string{"kube-apiserver": {"--v=1"}}
	}
	return opts
}

// joinerBin is the joiner binary the tests run, built once into TestMain's
// private directory.
var joinerBin test.JoinerBinary

// joiner is one `joiner controller` process.
type joiner struct {
	*test.JoinerProcess
	logPath string
	peakRSS int64 // KiB, read just before the process stops
}

// joinerConfig says how to run a joiner process.
type joinerConfig struct {
	kubeconfig  string
	clusterName string
	store       string
	extraArgs   []string
}

// startJoiner runs joiner until the test ends (or stop/kill).
func startJoiner(t *testing.T, cfg joinerConfig) *joiner {
	t.Helper()
	if cfg.kubeconfig == "" {
		cfg.kubeconfig = test.Env(t).ControlPlane.KubeconfigPath()
	}
	args := []string{
		"controller",
		"--kubeconfig=" + cfg.kubeconfig,
		"--cluster-name=" + cfg.clusterName,
		"--sim-store=" + cfg.store,
		"--metrics-port=0",
		"--health-probe-port=0",
		"--leader-election-name=" + cfg.clusterName,
		"--gc-interval=1s",
		"--gc-grace-period=5s",
	}
	args = append(args, cfg.extraArgs...)
	j := &joiner{}
	// Registered before the process starts, so it runs after the process's
	// own cleanup has stopped it: JOINER_TEST_KEEP_LOGS=DIR keeps every
	// joiner log, whole, in DIR.
	t.Cleanup(func() {
		if dir := os.Getenv("JOINER_TEST_KEEP_LOGS"); dir != "" && j.logPath != "" {
			_ = os.MkdirAll(dir, 0o755)
			b, _ := os.ReadFile(j.logPath)
			_ = os.WriteFile(filepath.Join(dir, t.Name()+"-"+filepath.Base(j.logPath)), b, 0o644)
		}
	})
	j.JoinerProcess = test.StartJoiner(t, joinerBin.Path(t), "joiner", args, nil)
	j.logPath = j.LogPath
	return j
}

// stop ends the process gracefully (SIGTERM), recording its peak RSS.
func (j *joiner) stop() {
	j.recordPeakRSS()
	j.Stop()
}

// kill ends the process as a crash would (SIGKILL).
func (j *joiner) kill() {
	j.recordPeakRSS()
	j.Kill()
}

func (j *joiner) recordPeakRSS() {
	if !j.Alive() {
		return
	}
	if rss := readPeakRSS(j.Pid()); rss > 0 {
		j.peakRSS = rss
	}
}

// readPeakRSS returns VmHWM of pid in KiB (0 when unknown).
func readPeakRSS(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// scenario is one test's NodePool, SimNodeClass, namespace and cloud.
type scenario struct {
	t           *testing.T
	env         *test.Environment
	ns          string
	nodePool    *v1.NodePool
	nodeClass   *simv1alpha1.SimNodeClass
	clusterName string
	store       string
}

func newScenario(t *testing.T) *scenario {
	env := test.Env(t)
	s := &scenario{
		t:           t,
		env:         env,
		ns:          env.Namespace(t),
		clusterName: test.Name(t, "c"),
		store:       filepath.Join(t.TempDir(), "instances.json"),
	}
	if len(s.clusterName) > 40 {
		s.clusterName = s.clusterName[len(s.clusterName)-40:]
		s.clusterName = strings.TrimLeft(s.clusterName, "-")
	}
	s.nodeClass = &simv1alpha1.SimNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "nc")},
		Spec: simv1alpha1.SimNodeClassSpec{
			LaunchDelay:       metav1.Duration{Duration: 500 * time.Millisecond},
			RegistrationDelay: metav1.Duration{Duration: 500 * time.Millisecond},
		},
	}
	s.nodePool = &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "np")},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				NodeClassRef: &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: s.nodeClass.Name},
				Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand}},
				},
				ExpireAfter: v1.MustParseNillableDuration("720h"),
			}},
			Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration("Never")},
		},
	}
	t.Cleanup(s.cleanup)
	return s
}

// apply creates the node class and NodePool.
func (s *scenario) apply() {
	s.env.Create(s.t, s.nodeClass, s.nodePool)
}

// joiner starts a joiner process for the scenario.
func (s *scenario) joiner(extraArgs ...string) *joiner {
	return startJoiner(s.t, joinerConfig{clusterName: s.clusterName, store: s.store, extraArgs: extraArgs})
}

// deployment creates a Deployment whose pods select the scenario's
// NodePool.
func (s *scenario) deployment(name string, replicas int32, cpu, memory string, mutate func(*corev1.PodSpec)) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	spec := corev1.PodSpec{
		NodeSelector:                  map[string]string{v1.LabelNodePool: s.nodePool.Name},
		TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers: []corev1.Container{{
			Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
			}},
		}},
	}
	if mutate != nil {
		mutate(&spec)
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
	s.env.Create(s.t, d)
	return d
}

// pods lists the pods of the app in the scenario's namespace.
func (s *scenario) pods(ctx context.Context, app string) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := s.env.Client.List(ctx, &list, client.InNamespace(s.ns), client.MatchingLabels{"app": app}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

func running(pods []corev1.Pod) int {
	n := 0
	for i := range pods {
		if pods[i].Status.Phase == corev1.PodRunning && pods[i].DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// nodeClaims lists the scenario's NodeClaims.
func (s *scenario) nodeClaims(ctx context.Context) ([]v1.NodeClaim, error) {
	var list v1.NodeClaimList
	if err := s.env.Client.List(ctx, &list, client.MatchingLabels{v1.LabelNodePool: s.nodePool.Name}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// waitNoNodeClaims waits until none of the scenario's NodeClaims is left;
// why (such as "after the scale-down") follows the count left in the
// error of a wait that times out.
func (s *scenario) waitNoNodeClaims(timeout time.Duration, why string) {
	s.t.Helper()
	test.Eventually(s.t, timeout, func(ctx context.Context) error {
		claims, err := s.nodeClaims(ctx)
		if err != nil {
			return err
		}
		if len(claims) > 0 {
			return fmt.Errorf("%d NodeClaim(s) left %s", len(claims), why)
		}
		return nil
	})
}

// nodes lists the scenario's Nodes.
func (s *scenario) nodes(ctx context.Context) ([]corev1.Node, error) {
	var list corev1.NodeList
	if err := s.env.Client.List(ctx, &list, client.MatchingLabels{v1.LabelNodePool: s.nodePool.Name}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// waitRunning waits until n pods of app run.
func (s *scenario) waitRunning(app string, n int, timeout time.Duration) {
	s.t.Helper()
	start := time.Now()
	defer func() { s.t.Logf("%d pods of %s running after %.1fs", n, app, time.Since(start).Seconds()) }()
	test.Eventually(s.t, timeout, func(ctx context.Context) error {
		pods, err := s.pods(ctx, app)
		if err != nil {
			return err
		}
		if r := running(pods); r != n {
			return fmt.Errorf("%d of %d pods running", r, n)
		}
		return nil
	})
}

// liveInstances reads the store as the given cluster's cloud sees it.
func liveInstances(t *testing.T, store, clusterName string) []*v1.NodeClaim {
	t.Helper()
	st, err := sim.OpenStore(store)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.New(sim.Options{Client: test.Env(t).Client, Store: st, ClusterName: clusterName, Catalog: func(*simv1alpha1.SimNodeClass) ([]*scheduling.InstanceType, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// cleanup removes the scenario's NodeClaims and Nodes while the test's
// joiner may already be gone: finalizers are dropped after a short wait.
func (s *scenario) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := s.env.Client
	_ = c.DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace(s.ns))
	claims, _ := s.nodeClaims(ctx)
	for i := range claims {
		_ = c.Delete(ctx, &claims[i])
	}
	_ = test.Poll(ctx, 10*time.Second, func(ctx context.Context) error {
		claims, err := s.nodeClaims(ctx)
		if err != nil {
			return err
		}
		if len(claims) > 0 {
			return fmt.Errorf("%d nodeclaims left", len(claims))
		}
		return nil
	})
	claims, _ = s.nodeClaims(ctx)
	for i := range claims {
		patch := client.MergeFrom(claims[i].DeepCopy())
		claims[i].Finalizers = nil
		_ = c.Patch(ctx, &claims[i], patch)
	}
	nodes, _ := s.nodes(ctx)
	for i := range nodes {
		patch := client.MergeFrom(nodes[i].DeepCopy())
		nodes[i].Finalizers = nil
		_ = c.Patch(ctx, &nodes[i], patch)
		_ = c.Delete(ctx, &nodes[i])
	}
}
