package charts

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/operator/options"
	"github.com/joiner-dev/joiner/pkg/test"
)

func TestMain(m *testing.M) {
	code := func() int {
		bin, err := findHelm()
		if err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			return 1
		}
		helmBin = bin
		if helmHome, err = os.MkdirTemp("", "joiner-helm-"); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			return 1
		}
		defer func() {
			if err := os.RemoveAll(helmHome); err != nil {
				fmt.Fprintln(os.Stderr, "removing helm's home:", err)
			}
		}()
		// No CRDs up front: the install must bring its own.
		return test.Run(m, controlplane.Options{Scheduler: true, ControllerManager: true, Kwok: true})
	}()
	os.Exit(code)
}

// TestServerDryRun sends everything `helm template` renders (CRDs
// included) to the API server with --dry-run=server: schemas, defaulting
// and admission check what helm's lint cannot.
func TestServerDryRun(t *testing.T) {
	env := test.Env(t)
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("kubectl is needed for --dry-run=server: %v (install it, e.g. from https://dl.k8s.io or your distribution)", err)
	}
	ns := env.Namespace(t)
	for _, tc := range []struct {
		name   string
		values map[string]any
	}{
		{"defaults", nil},
		{"karpenter values", map[string]any{
			"dashboards":     map[string]any{"enabled": true},
			"settings":       map[string]any{"clusterName": "my-cluster", "interruptionQueue": "my-cluster", "featureGates": map[string]any{"spotToSpotConsolidation": true}},
			"serviceAccount": map[string]any{"annotations": map[string]any{"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/KarpenterControllerRole-my-cluster"}},
			"hostNetwork":    true, "dnsPolicy": "Default", "podDisruptionBudget": map[string]any{"name": "karpenter"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			manifest := helm(t, nil, "template", "joiner", chartDir(), "--namespace", ns, "--include-crds", "-f", valuesFile(t, tc.values))
			cmd := exec.Command("kubectl", "apply", "--dry-run=server", "-f", "-")
			cmd.Env = append(os.Environ(), "KUBECONFIG="+env.ControlPlane.KubeconfigPath())
			cmd.Stdin = strings.NewReader(manifest)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, out)
			}
			for _, want := range []string{"deployment.apps/joiner", "clusterrole.rbac.authorization.k8s.io/joiner", "role.rbac.authorization.k8s.io/joiner",
				"customresourcedefinition.apiextensions.k8s.io/nodepools.karpenter.sh", "poddisruptionbudget.policy/"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("kubectl apply --dry-run=server did not apply %s:\n%s", want, out)
				}
			}
		})
	}
}

// TestInstall installs the chart for real: kube-scheduler places the two
// replicas on two kwok nodes in two zones, never on the node joiner
// manages, and kwok reports them Running. kwok runs no containers, so two
// real `joiner controller` processes then run out of cluster with the
// installed Deployment's args and env and the chart's ServiceAccount token:
// one holds the Lease, and when it stops the other takes over, with no
// permission the chart did not grant.
func TestInstall(t *testing.T) {
	env := test.Env(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	clusterName := test.Name(t, "c")
	for _, n := range []struct {
		name, zone string
		managed    bool
	}{{"system-a", "zone-a", false}, {"system-b", "zone-b", false}, {"managed", "zone-c", true}} {
		env.Create(t, kwokNode(test.Name(t, n.name), n.zone, n.managed))
	}

	start := time.Now()
	release := helm(t, nil, "install", "joiner", chartDir(), "--namespace", ns, "--wait", "--timeout", "90s",
		"-f", valuesFile(t, map[string]any{"settings": map[string]any{"clusterName": clusterName, "cloudProvider": "sim"}}))
	t.Logf("helm install --wait took %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if _, err := runHelm(t, nil, "uninstall", "joiner", "--namespace", ns, "--wait", "--timeout", "60s"); err != nil {
			t.Errorf("helm uninstall: %v", err)
		}
	})
	if !strings.Contains(release, "STATUS: deployed") {
		t.Fatalf("helm install:\n%s", release)
	}

	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": "joiner"}); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || strings.Contains(p.Spec.NodeName, "managed") {
			t.Errorf("pod %s is %s on %q, want Running on a system node", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
		nodes[p.Spec.NodeName] = true
	}
	if len(pods.Items) != 2 || len(nodes) != 2 {
		t.Fatalf("%d pods on nodes %v, want 2 on 2 nodes", len(pods.Items), nodes)
	}
	// Two replicas as the Deployment runs them, out of cluster.
	deploy, err := kubernetes.NewForConfigOrDie(env.Config).AppsV1().Deployments(ns).Get(ctx, "joiner", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := deploy.Spec.Template.Spec
	kubeconfig := serviceAccountKubeconfig(t, env.Config, ns, pod.ServiceAccountName)
	binary := joinerBinary(t)
	replicas := []*replica{
		startReplica(t, binary, kubeconfig, pod.Containers[0], ns),
		startReplica(t, binary, kubeconfig, pod.Containers[0], ns),
	}

	leaseName := options.Default().LeaderElectionName
	holder := func(ctx context.Context) (string, error) {
		var lease coordinationv1.Lease
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: leaseName}, &lease); err != nil {
			return "", err
		}
		return ptr.Deref(lease.Spec.HolderIdentity, ""), nil
	}
	var leader, standby *replica
	var firstHolder string
	test.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		h, err := holder(ctx)
		if err != nil {
			return fmt.Errorf("%w (a replica that cannot list or watch what it needs with the chart's RBAC never gets there)", err)
		}
		var leaders []*replica
		for _, r := range replicas {
			if r.acquired() {
				leaders = append(leaders, r)
			}
		}
		if h == "" || len(leaders) != 1 {
			return fmt.Errorf("lease %s/%s held by %q, %d replicas say they lead (a replica that cannot list or watch what it needs with the chart's RBAC never gets there)", ns, leaseName, h, len(leaders))
		}
		firstHolder, leader = h, leaders[0]
		return nil
	})
	standby = replicas[0]
	if standby == leader {
		standby = replicas[1]
	}
	// The leader's controllers started with the chart's permissions only.
	test.Eventually(t, 60*time.Second, func(context.Context) error {
		if !strings.Contains(leader.log(), "Starting workers") {
			return fmt.Errorf("the leader's controllers have not started")
		}
		return nil
	})
	for _, r := range replicas {
		if err := r.forbidden(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("lease held by %s; stopping the leader", firstHolder)

	stopped := time.Now()
	leader.stop(t)
	test.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		h, err := holder(ctx)
		if err != nil {
			return err
		}
		if h == "" || h == firstHolder || !standby.acquired() {
			return fmt.Errorf("lease held by %q (was %q), standby acquired: %v", h, firstHolder, standby.acquired())
		}
		return nil
	})
	t.Logf("the standby took the lease over %s after the leader stopped", time.Since(stopped).Round(time.Millisecond))
	if err := standby.forbidden(); err != nil {
		t.Fatal(err)
	}

	// Least privilege, seen from the ServiceAccount: the Lease of another
	// namespace and Secrets are out of reach.
	saClient := kubernetes.NewForConfigOrDie(restFromKubeconfig(t, kubeconfig))
	for _, attrs := range []authorizationv1.ResourceAttributes{
		{Namespace: "default", Verb: "create", Group: "coordination.k8s.io", Resource: "leases"},
		{Namespace: ns, Verb: "list", Resource: "secrets"},
	} {
		review, err := saClient.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed {
			t.Errorf("the chart's ServiceAccount may %s %s in %q: not needed by joiner", attrs.Verb, attrs.Resource, attrs.Namespace)
		}
	}
}

// TestCloudProviderAccess applies the chart's RBAC for each cloud provider
// to the control plane and asks the API server, through access reviews,
// what its ServiceAccount may do to Nodes: the simulated cloud plays the
// kubelet, so it may create Nodes and write their status; with aws, whose
// nodes register themselves, the ServiceAccount may not.
func TestCloudProviderAccess(t *testing.T) {
	env := test.Env(t)
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("kubectl is needed to apply the chart's RBAC: %v", err)
	}
	admin := kubernetes.NewForConfigOrDie(env.Config)
	for _, tc := range []struct {
		cloudProvider string
		simRights     bool
	}{{"aws", false}, {"sim", true}} {
		t.Run(tc.cloudProvider, func(t *testing.T) {
			ns := env.Namespace(t)
			release := test.Name(t, "j")
			manifest := helm(t, nil, "template", release, chartDir(), "--namespace", ns,
				"--show-only", "templates/rbac.yaml", "--show-only", "templates/serviceaccount.yaml",
				"-f", valuesFile(t, map[string]any{"settings": map[string]any{"cloudProvider": tc.cloudProvider}}))
			kubectl := func(args ...string) {
				cmd := exec.Command("kubectl", args...)
				cmd.Env = append(os.Environ(), "KUBECONFIG="+env.ControlPlane.KubeconfigPath())
				cmd.Stdin = strings.NewReader(manifest)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
			kubectl("apply", "-f", "-")
			t.Cleanup(func() { kubectl("delete", "--ignore-not-found", "-f", "-") })
			var sa corev1.ServiceAccountList
			if err := env.Client.List(t.Context(), &sa, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			user := ""
			for _, a := range sa.Items {
				if strings.HasPrefix(a.Name, release) {
					user = "system:serviceaccount:" + ns + ":" + a.Name
				}
			}
			if user == "" {
				t.Fatalf("the chart made no ServiceAccount in %s", ns)
			}
			for _, tt := range []struct {
				attrs authorizationv1.ResourceAttributes
				want  bool
			}{
				{authorizationv1.ResourceAttributes{Verb: "create", Resource: "nodes"}, tc.simRights},
				{authorizationv1.ResourceAttributes{Verb: "update", Resource: "nodes", Subresource: "status"}, tc.simRights},
				// What every provider needs: the termination finalizer's
				// delete, and reading Nodes.
				{authorizationv1.ResourceAttributes{Verb: "delete", Resource: "nodes"}, true},
				{authorizationv1.ResourceAttributes{Verb: "watch", Resource: "nodes"}, true},
				{authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods"}, false},
			} {
				review, err := admin.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
					Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}, ResourceAttributes: &tt.attrs},
				}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if review.Status.Allowed != tt.want {
					t.Errorf("cloudProvider %s: %s may %s %s/%s: %v, want %v", tc.cloudProvider, user, tt.attrs.Verb, tt.attrs.Resource, tt.attrs.Subresource, review.Status.Allowed, tt.want)
				}
			}
		})
	}
}

// kwokNode is a Node kwok plays the kubelet for, in zone; managed marks it
// as a node of a NodePool (joiner's own capacity).
func kwokNode(name, zone string, managed bool) *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
		corev1.LabelTopologyZone: zone, "type": "kwok",
	}
	if managed {
		labels["karpenter.sh/nodepool"] = "default"
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
		Status:     corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount with a token from the TokenRequest API, as the pod would.
func serviceAccountKubeconfig(t *testing.T, admin *rest.Config, ns, sa string) string {
	t.Helper()
	tr, err := kubernetes.NewForConfigOrDie(admin).CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for ServiceAccount %s/%s: %v", ns, sa, err)
	}
	ca := admin.CAData
	if len(ca) == 0 && admin.CAFile != "" {
		if ca, err = os.ReadFile(admin.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: sa, Namespace: ns}
	cfg.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "sa-kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func restFromKubeconfig(t *testing.T, path string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// joinerBinary builds cmd/joiner once for the test binary.
func joinerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binary = filepath.Join(helmHome, "joiner")
		cmd := exec.Command("go", "build", "-o", binary, "github.com/joiner-dev/joiner/cmd/joiner")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building joiner: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// replica is one `joiner controller` process run as the pod would run it.
type replica struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

// startReplica runs the container's args with its env: values as written,
// the namespace field as the release namespace, the memory limit and CPU
// request from the container's resources. Only the ports differ: the two processes share
// one network namespace, which pods do not, so they bind none (0).
func startReplica(t *testing.T, binary, kubeconfig string, c corev1.Container, ns string) *replica {
	t.Helper()
	dir := t.TempDir()
	environ := []string{"HOME=" + dir, "TMPDIR=" + dir, "SIM_STORE=" + filepath.Join(dir, "sim.json")}
	for _, e := range c.Env {
		value := e.Value
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			value = ns
		case e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
			value = fmt.Sprint(c.Resources.Limits.Memory().Value())
		case e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "requests.cpu":
			value = fmt.Sprint(c.Resources.Requests.Cpu().MilliValue())
		case e.ValueFrom != nil:
			t.Fatalf("env %s: the test does not know how to resolve %+v", e.Name, e.ValueFrom)
		}
		if e.Name == "METRICS_PORT" || e.Name == "HEALTH_PROBE_PORT" {
			value = "0"
		}
		environ = append(environ, e.Name+"="+value)
	}
	r := &replica{logPath: filepath.Join(dir, "joiner.log"), done: make(chan struct{})}
	logFile, err := os.Create(r.logPath)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(binary, append(append([]string{}, c.Args...), "--kubeconfig="+kubeconfig)...)
	r.cmd.Env = environ
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = r.cmd.Wait()
		logFile.Close()
		close(r.done)
	}()
	t.Cleanup(func() {
		r.stop(t)
		if t.Failed() {
			t.Logf("replica log %s:\n%s", r.logPath, tail(r.log(), 40))
		}
	})
	return r
}

func (r *replica) log() string {
	b, _ := os.ReadFile(r.logPath)
	return string(b)
}

// acquired reports whether the replica's log says it became leader.
func (r *replica) acquired() bool { return strings.Contains(r.log(), "Successfully acquired lease") }

// forbidden returns the replica's log lines where the API server refused
// it, or an early exit.
func (r *replica) forbidden() error {
	select {
	case <-r.done:
		return fmt.Errorf("replica exited early (%v):\n%s", r.cmd.ProcessState, tail(r.log(), 40))
	default:
	}
	var lines []string
	for _, l := range strings.Split(r.log(), "\n") {
		if strings.Contains(l, "forbidden") {
			lines = append(lines, l)
		}
	}
	if len(lines) > 0 {
		return fmt.Errorf("the chart's RBAC refused joiner %d times:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	return nil
}

// stop sends SIGTERM (the leader releases its Lease) and waits for exit.
func (r *replica) stop(t *testing.T) {
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
		t.Errorf("replica did not stop within 20s of SIGTERM")
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
