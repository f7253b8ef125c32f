package main

// TestExplainEndToEnd runs this test binary as the joiner command (see
// TestMain) against a real control plane, directly and as the kubectl
// plugin (`kubectl joiner explain ...` through kubectl on the PATH), and
// checks the verdicts read what is in the cluster: a pod no NodePool can
// take, a NodeClaim waiting to register, a node whose disruption a stored
// verdict blocks, a NodePool's limits and budgets.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/test"
)

// cliEnv makes the test binary run as the joiner command, so the
// end-to-end test needs no `go build`.
const cliEnv = "JOINER_TEST_RUN_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(cliEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestExplainEndToEnd(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is not on the PATH (install it, e.g. from https://dl.k8s.io/release/stable.txt): %v", err)
	}
	env := test.Start(t, controlplane.Options{
		CRDDirectories: []string{test.RepoPath("pkg/apis/crds")},
		Scheme:         test.Scheme(),
	})
	ns := env.Namespace(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, name := range []string{"joiner", "kubectl-joiner"} {
		// The plugin is the same binary under kubectl's plugin name.
		if err := os.Symlink(self, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	// A kubeconfig whose context's namespace is the test's, so
	// `explain pod NAME` must find the pod there.
	cfg, err := clientcmd.LoadFromFile(env.ControlPlane.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts[cfg.CurrentContext].Namespace = ns
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}

	name := test.Name(t, "x")
	class := &simv1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	pool := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				NodeClassRef: test.SimNodeClassRef(name),
				Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
					{Key: v1.LabelAWSInstanceCPU, Operator: corev1.NodeSelectorOpLt, Values: []string{"33"}},
				},
			}},
			Limits: v1.Limits{corev1.ResourceCPU: resource.MustParse("100")},
		},
	}
	amd64 := []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
	waiting := test.NodeClaim(test.NodeClaimOptions{Name: name + "-reg", NodePool: name, NodeClassRef: test.SimNodeClassRef(name), Requirements: amd64})
	ready := test.NodeClaim(test.NodeClaimOptions{Name: name + "-ready", NodePool: name, NodeClassRef: test.SimNodeClassRef(name), Requirements: amd64})
	ready.Annotations = map[string]string{v1.AnnotationDisruptionVerdict: disruption.Record{
		State: disruption.StateBlocked, Message: `pod has "karpenter.sh/do-not-disrupt" annotation (Pod=shop/db-0)`, PricePerHour: 0.192, Since: time.Now().UTC().Truncate(time.Second),
	}.Encode()}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-node", Labels: map[string]string{v1.LabelNodePool: name, v1.LabelArch: "amd64"}},
		Spec:       corev1.NodeSpec{ProviderID: "sim://sim-east-1a/" + name + "-ready"},
	}
	big := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}}}}},
	}
	env.Create(t, class, pool, waiting, ready, node, big)

	ctx := t.Context()
	ago := metav1.NewTime(time.Now().Add(-2 * time.Minute))
	waiting.Status.ProviderID = "sim://sim-east-1b/" + name + "-reg"
	waiting.Status.Conditions = []metav1.Condition{
		{Type: v1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: ago},
		{Type: v1.ConditionTypeRegistered, Status: metav1.ConditionUnknown, Reason: "NodeNotFound", Message: "Node not registered with cluster", LastTransitionTime: ago},
	}
	ready.Status.ProviderID, ready.Status.NodeName = node.Spec.ProviderID, node.Name
	ready.Status.Conditions = []metav1.Condition{
		{Type: v1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: ago},
		{Type: v1.ConditionTypeRegistered, Status: metav1.ConditionTrue, Reason: "Registered", LastTransitionTime: ago},
		{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: ago},
	}
	class.Status.Conditions = []metav1.Condition{{Type: v1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: ago}}
	if err := env.Client.Status().Update(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Status().Update(ctx, ready); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Status().Update(ctx, class); err != nil {
		t.Fatal(err)
	}

	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	run := func(t *testing.T, program string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, program, args...)
		cmd.Env = append(os.Environ(), "PATH="+path, "KUBECONFIG="+kubeconfig, cliEnv+"=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s%s", program, strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	for _, tc := range []struct {
		name    string
		program string
		args    []string
		want    []string
	}{
		{"kubectl plugin: a pod no NodePool can take, in the context's namespace", kubectl, []string{"joiner", "explain", "pod", "big"},
			[]string{"Pod " + ns + "/big cannot be scheduled", "NodePool " + name + ":", "lack 64 cpu", "What would fix it"}},
		{"a NodeClaim waiting to register", filepath.Join(bin, "joiner"), []string{"explain", "nodeclaim", waiting.Name, "--kubeconfig", kubeconfig},
			[]string{"is not registered after 2m", "of 15m0s (NodeNotFound)", "aws-auth"}},
		{"a TTL from the flag", filepath.Join(bin, "joiner"), []string{"explain", "nodeclaim", waiting.Name, "--registration-ttl", "1m"},
			[]string{"past its deadline"}},
		{"kubectl plugin: a node whose disruption is blocked", kubectl, []string{"joiner", "explain", "node", node.Name},
			[]string{"NodeClaim " + ready.Name + " is initialised and not being disrupted (Blocked)", "do-not-disrupt", "price $0.1920/h"}},
		{"kubectl plugin: a NodePool", kubectl, []string{"joiner", "explain", "nodepool", name},
			[]string{"NodePool " + name + " can launch nodes", "cpu: used", "of 100", "Disruptions allowed now"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := run(t, tc.program, tc.args...)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	t.Run("json output", func(t *testing.T) {
		var v struct {
			Phase string `json:"phase"`
			Steps []struct {
				Name string `json:"name"`
				Done bool   `json:"done"`
			} `json:"steps"`
		}
		if err := json.Unmarshal([]byte(run(t, kubectl, "joiner", "explain", "nodeclaim", waiting.Name, "-o", "json")), &v); err != nil {
			t.Fatal(err)
		}
		if v.Phase != "Registering" || len(v.Steps) != 3 || !v.Steps[0].Done || v.Steps[1].Done {
			t.Errorf("got phase %q steps %+v, want Registering with Launched done and Registered not", v.Phase, v.Steps)
		}
	})
}
