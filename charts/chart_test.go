// Package charts tests the Helm chart charts/joiner with helm itself (the
// go.mod tool, `go tool helm`): lint, rendering with Karpenter's values,
// drift from the generated CRDs and RBAC, a server-side dry run and a real
// install on the local control plane (suite_test.go).
package charts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/joiner-dev/joiner/pkg/operator/options"
	"github.com/joiner-dev/joiner/pkg/test"
)

// helmBin is the helm binary of go.mod's tool directive, and helmHome its
// private config, cache and data directory; both set by TestMain.
var helmBin, helmHome string

// findHelm builds helm from go.mod's tool directive (or finds it in the
// build cache) and returns its path.
func findHelm() (string, error) {
	cmd := exec.Command("go", "tool", "-n", "helm")
	cmd.Dir = test.RepoPath(".")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			out = ee.Stderr
		}
		return "", fmt.Errorf("`go tool -n helm` (helm is a go.mod tool: `go get -tool helm.sh/helm/v4/cmd/helm`): %v\n%s", err, out)
	}
	path := strings.TrimSpace(string(out))
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("`go tool -n helm` named %q: %w", path, err)
	}
	return path, nil
}

// helm runs helm with args against the test control plane and returns its
// stdout; it fails t with helm's stderr.
func helm(t *testing.T, stdin io.Reader, args ...string) string {
	t.Helper()
	out, err := runHelm(t, stdin, args...)
	if err != nil {
		t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func runHelm(t *testing.T, stdin io.Reader, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin, args...)
	cmd.Stdin = stdin
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(helmHome, "config"),
		"HELM_CACHE_HOME="+filepath.Join(helmHome, "cache"),
		"HELM_DATA_HOME="+filepath.Join(helmHome, "data"),
		"KUBECONFIG="+test.Env(t).ControlPlane.KubeconfigPath(),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%w\n%s%s", err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// chartDir is the chart under test.
func chartDir() string { return test.RepoPath("charts/joiner") }

// valuesFile writes values as a values file and returns its path.
func valuesFile(t *testing.T, values map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// render is `helm template` of chart with values in namespace ns, decoded.
func render(t *testing.T, chart, ns string, values map[string]any, extra ...string) []*unstructured.Unstructured {
	t.Helper()
	args := append([]string{"template", "joiner", chart, "--namespace", ns, "-f", valuesFile(t, values)}, extra...)
	return decode(t, helm(t, nil, args...))
}

// decode splits a multi-document manifest into objects.
func decode(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("decoding rendered manifest: %v\n%s", err, manifest)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// find converts the one object of kind (and name, when not "") into out;
// it reports whether there was one.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string, out any) bool {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			found = append(found, o)
		}
	}
	switch len(found) {
	case 0:
		return false
	case 1:
		b, err := json.Marshal(found[0].Object)
		if err == nil {
			err = json.Unmarshal(b, out)
		}
		if err != nil {
			t.Fatalf("converting %s %s: %v", kind, name, err)
		}
		return true
	default:
		t.Fatalf("%d objects of kind %s named %q", len(found), kind, name)
		return false
	}
}

func count(objs []*unstructured.Unstructured, kind string) int {
	n := 0
	for _, o := range objs {
		if o.GetKind() == kind {
			n++
		}
	}
	return n
}

// TestLint runs `helm lint --strict` on the defaults and on values that turn
// every optional part on.
func TestLint(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
	}{
		{"defaults", nil},
		{"everything on", map[string]any{
			"serviceMonitor": map[string]any{"enabled": true, "additionalLabels": map[string]any{"release": "prometheus"}},
			"dashboards":     map[string]any{"enabled": true},
			"settings":       map[string]any{"clusterName": "my-cluster", "interruptionQueue": "my-cluster"},
			"serviceAccount": map[string]any{"annotations": map[string]any{"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/KarpenterControllerRole-my-cluster"}},
			"controller":     map[string]any{"image": map[string]any{"digest": "sha256:3ac8186a561ba3472a3759b7deb2d414c177089d78cc6d2da54d1e689ff2257e"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := helm(t, nil, "lint", "--strict", chartDir(), "-f", valuesFile(t, tc.values))
			if !strings.Contains(out, "0 chart(s) failed") {
				t.Fatalf("helm lint:\n%s", out)
			}
		})
	}
}

// TestCRDsAreGenerated fails when the chart's crds/ differ from
// pkg/apis/crds (controller-gen's output): run `make generate`.
func TestCRDsAreGenerated(t *testing.T) {
	generated, _ := filepath.Glob(test.RepoPath("pkg/apis/crds/*.yaml"))
	shipped, _ := filepath.Glob(filepath.Join(chartDir(), "crds", "*.yaml"))
	base := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			out = append(out, filepath.Base(p))
		}
		return out
	}
	if len(generated) == 0 || !slices.Equal(base(generated), base(shipped)) {
		t.Fatalf("charts/joiner/crds holds %v, pkg/apis/crds %v: run `make generate`", base(shipped), base(generated))
	}
	for _, g := range generated {
		want, _ := os.ReadFile(g)
		got, _ := os.ReadFile(filepath.Join(chartDir(), "crds", filepath.Base(g)))
		if !bytes.Equal(want, got) {
			t.Errorf("charts/joiner/crds/%s differs from pkg/apis/crds: run `make generate`", filepath.Base(g))
		}
	}
}

// generatedRBAC reads config/rbac/role.yaml, controller-gen's output from
// the +kubebuilder:rbac markers.
func generatedRBAC(t *testing.T) (rbacv1.ClusterRole, rbacv1.Role) {
	t.Helper()
	b, err := os.ReadFile(test.RepoPath("config/rbac/role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs := decode(t, string(b))
	var cr rbacv1.ClusterRole
	var r rbacv1.Role
	if !find(t, objs, "ClusterRole", "", &cr) || !find(t, objs, "Role", "", &r) {
		t.Fatal("config/rbac/role.yaml needs a ClusterRole and a Role (the leader election Lease's): run `make generate`")
	}
	return cr, r
}

// TestRBACIsGenerated fails when the chart's permissions are not exactly
// the generated ones: the ClusterRole's rules, plus
// additionalClusterRoleRules, and the Lease Role in the release namespace.
func TestRBACIsGenerated(t *testing.T) {
	want, _ := os.ReadFile(test.RepoPath("config/rbac/role.yaml"))
	got, _ := os.ReadFile(filepath.Join(chartDir(), "rbac", "role.yaml"))
	if !bytes.Equal(want, got) {
		t.Fatal("charts/joiner/rbac/role.yaml differs from config/rbac/role.yaml: run `make generate`")
	}
	cr, role := generatedRBAC(t)
	for _, r := range role.Rules {
		if !slices.Equal(r.Resources, []string{"leases"}) && !slices.Equal(r.Resources, []string{"configmaps"}) {
			t.Errorf("the namespaced Role grants %v: only the leader election Lease and the controller view's ConfigMap belong there", r.Resources)
		}
	}
	extra := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}
	objs := render(t, chartDir(), "karpenter", map[string]any{
		"additionalClusterRoleRules": []any{map[string]any{"apiGroups": extra.APIGroups, "resources": extra.Resources, "verbs": extra.Verbs}},
	})
	var gotCR rbacv1.ClusterRole
	var gotRole rbacv1.Role
	var crb rbacv1.ClusterRoleBinding
	var rb rbacv1.RoleBinding
	if !find(t, objs, "ClusterRole", "joiner", &gotCR) || !find(t, objs, "Role", "joiner", &gotRole) ||
		!find(t, objs, "ClusterRoleBinding", "joiner", &crb) || !find(t, objs, "RoleBinding", "joiner", &rb) {
		t.Fatal("the chart renders no ClusterRole, Role and their bindings named joiner")
	}
	if wantRules := append(slices.Clone(cr.Rules), extra); !reflect.DeepEqual(gotCR.Rules, wantRules) {
		t.Errorf("chart ClusterRole rules:\n%v\nwant the generated ones plus additionalClusterRoleRules:\n%v", gotCR.Rules, wantRules)
	}
	if !reflect.DeepEqual(gotRole.Rules, role.Rules) || gotRole.Namespace != "karpenter" {
		t.Errorf("chart Role in %q with rules %v, want the generated %v in the release namespace", gotRole.Namespace, gotRole.Rules, role.Rules)
	}
	for _, s := range [][]rbacv1.Subject{crb.Subjects, rb.Subjects} {
		if len(s) != 1 || s[0].Name != "joiner" || s[0].Namespace != "karpenter" {
			t.Errorf("binding subjects %v, want the ServiceAccount karpenter/joiner", s)
		}
	}
}

// TestAWSAuthRBACIsGenerated checks the read of kube-system/aws-auth: the
// chart's copy is config/rbac/awsauth/role.yaml, and the chart binds it in
// kube-system (where aws-auth lives) whatever the release's namespace, for
// that one ConfigMap only.
func TestAWSAuthRBACIsGenerated(t *testing.T) {
	want, err := os.ReadFile(test.RepoPath("config/rbac/awsauth/role.yaml"))
	if err != nil {
		t.Fatalf("%v: run `make generate`", err)
	}
	got, _ := os.ReadFile(filepath.Join(chartDir(), "rbac", "aws-auth-role.yaml"))
	if !bytes.Equal(want, got) {
		t.Fatal("charts/joiner/rbac/aws-auth-role.yaml differs from config/rbac/awsauth/role.yaml: run `make generate`")
	}
	var generated rbacv1.Role
	if !find(t, decode(t, string(want)), "Role", "", &generated) {
		t.Fatal("config/rbac/awsauth/role.yaml has no Role: run `make generate`")
	}
	for _, r := range generated.Rules {
		if !slices.Equal(r.Resources, []string{"configmaps"}) || !slices.Equal(r.ResourceNames, []string{"aws-auth"}) || !slices.Equal(r.Verbs, []string{"get"}) {
			t.Errorf("the aws-auth Role grants %v: only a get of the ConfigMap aws-auth belongs there", r)
		}
	}
	objs := render(t, chartDir(), "karpenter", nil)
	var role rbacv1.Role
	var rb rbacv1.RoleBinding
	if !find(t, objs, "Role", "joiner-aws-auth", &role) || !find(t, objs, "RoleBinding", "joiner-aws-auth", &rb) {
		t.Fatal("the chart renders no Role and RoleBinding joiner-aws-auth")
	}
	if role.Namespace != "kube-system" || rb.Namespace != "kube-system" || !reflect.DeepEqual(role.Rules, generated.Rules) {
		t.Errorf("chart Role %s/%s with rules %v (binding in %s), want the generated %v in kube-system", role.Namespace, role.Name, role.Rules, rb.Namespace, generated.Rules)
	}
	if len(rb.Subjects) != 1 || rb.Subjects[0].Name != "joiner" || rb.Subjects[0].Namespace != "karpenter" {
		t.Errorf("aws-auth binding subjects %v, want the ServiceAccount karpenter/joiner", rb.Subjects)
	}
}

// TestSimRBACIsGenerated checks the simulated cloud's Node rights: the
// chart's copy is config/rbac/sim/role.yaml, the chart grants them only
// with settings.cloudProvider=sim, and the core role never has them.
func TestSimRBACIsGenerated(t *testing.T) {
	want, err := os.ReadFile(test.RepoPath("config/rbac/sim/role.yaml"))
	if err != nil {
		t.Fatalf("%v: run `make generate`", err)
	}
	got, _ := os.ReadFile(filepath.Join(chartDir(), "rbac", "sim-role.yaml"))
	if !bytes.Equal(want, got) {
		t.Fatal("charts/joiner/rbac/sim-role.yaml differs from config/rbac/sim/role.yaml: run `make generate`")
	}
	var sim rbacv1.ClusterRole
	if !find(t, decode(t, string(want)), "ClusterRole", "", &sim) {
		t.Fatal("config/rbac/sim/role.yaml has no ClusterRole: run `make generate`")
	}
	core, _ := generatedRBAC(t)
	for _, r := range core.Rules {
		if slices.Contains(r.Resources, "nodes") && slices.Contains(r.Verbs, "create") {
			t.Errorf("the core ClusterRole may create nodes (%v): only the simulated cloud needs that", r)
		}
	}
	for _, tc := range []struct {
		cloudProvider string
		wantSim       bool
	}{{"aws", false}, {"sim", true}} {
		t.Run(tc.cloudProvider, func(t *testing.T) {
			objs := render(t, chartDir(), "karpenter", map[string]any{"settings": map[string]any{"cloudProvider": tc.cloudProvider}})
			var cr rbacv1.ClusterRole
			var crb rbacv1.ClusterRoleBinding
			hasRole, hasBinding := find(t, objs, "ClusterRole", "joiner-sim", &cr), find(t, objs, "ClusterRoleBinding", "joiner-sim", &crb)
			if hasRole != tc.wantSim || hasBinding != tc.wantSim {
				t.Fatalf("cloudProvider %s renders the sim ClusterRole %v and its binding %v, want %v", tc.cloudProvider, hasRole, hasBinding, tc.wantSim)
			}
			if !tc.wantSim {
				return
			}
			if !reflect.DeepEqual(cr.Rules, sim.Rules) {
				t.Errorf("sim ClusterRole rules %v, want the generated %v", cr.Rules, sim.Rules)
			}
			if crb.RoleRef.Name != "joiner-sim" || len(crb.Subjects) != 1 || crb.Subjects[0].Name != "joiner" || crb.Subjects[0].Namespace != "karpenter" {
				t.Errorf("sim binding %+v, want joiner-sim bound to the ServiceAccount karpenter/joiner", crb)
			}
		})
	}
	if out, err := runHelm(t, nil, "template", "joiner", chartDir(), "-f", valuesFile(t, map[string]any{"settings": map[string]any{"cloudProvider": "gcp"}})); err == nil || !strings.Contains(err.Error(), "settings.cloudProvider") {
		t.Errorf("cloudProvider gcp rendered (%v):\n%.200s", err, out)
	}
}

// controller returns the rendered Deployment and its controller container.
func controller(t *testing.T, objs []*unstructured.Unstructured) (appsv1.Deployment, corev1.Container) {
	t.Helper()
	var d appsv1.Deployment
	if !find(t, objs, "Deployment", "", &d) {
		t.Fatal("no Deployment rendered")
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "controller" {
			return d, c
		}
	}
	t.Fatal("no controller container")
	return d, corev1.Container{}
}

// envOf is the container's env as name → value ("fieldRef:<path>" for a
// field reference).
func envOf(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			env[e.Name] = "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
		case e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil:
			env[e.Name] = "resourceFieldRef:" + e.ValueFrom.ResourceFieldRef.Resource
		default:
			env[e.Name] = e.Value
		}
	}
	return env
}

// TestKarpenterValues renders the chart with Karpenter's values and checks
// each lands where Karpenter's chart puts it; the settings' environment is
// then parsed by joiner's own options, so a value joiner would reject at
// start fails here.
func TestKarpenterValues(t *testing.T) {
	const ns = "karpenter"
	selector := map[string]string{"app.kubernetes.io/name": "joiner", "app.kubernetes.io/instance": "joiner"}
	for _, tc := range []struct {
		name   string
		values map[string]any
		check  func(t *testing.T, objs []*unstructured.Unstructured)
	}{{
		name: "defaults are Karpenter's",
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			d, c := controller(t, objs)
			spec := d.Spec.Template.Spec
			if *d.Spec.Replicas != 2 || spec.PriorityClassName != "system-cluster-critical" || spec.DNSPolicy != corev1.DNSClusterFirst || spec.HostNetwork {
				t.Errorf("replicas %d, priorityClassName %q, dnsPolicy %q, hostNetwork %v; want 2, system-cluster-critical, ClusterFirst, false",
					*d.Spec.Replicas, spec.PriorityClassName, spec.DNSPolicy, spec.HostNetwork)
			}
			terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			if len(terms) != 1 || terms[0].MatchExpressions[0].Key != "karpenter.sh/nodepool" || terms[0].MatchExpressions[0].Operator != corev1.NodeSelectorOpDoesNotExist {
				t.Errorf("node affinity %v, want karpenter.sh/nodepool DoesNotExist (never on a node joiner manages)", terms)
			}
			anti := spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
			if len(anti) != 1 || anti[0].TopologyKey != "kubernetes.io/hostname" || !reflect.DeepEqual(anti[0].LabelSelector.MatchLabels, selector) {
				t.Errorf("pod anti-affinity %+v, want one per hostname selecting %v", anti, selector)
			}
			tsc := spec.TopologySpreadConstraints
			if len(tsc) != 1 || tsc[0].TopologyKey != "topology.kubernetes.io/zone" || !reflect.DeepEqual(tsc[0].LabelSelector.MatchLabels, selector) {
				t.Errorf("topology spread %+v, want zones selecting %v", tsc, selector)
			}
			if len(spec.Tolerations) != 1 || spec.Tolerations[0].Key != "CriticalAddonsOnly" {
				t.Errorf("tolerations %v, want CriticalAddonsOnly", spec.Tolerations)
			}
			sc := c.SecurityContext
			if sc == nil || *sc.RunAsUser != 65532 || !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation {
				t.Errorf("container securityContext %+v, want nonroot 65532, read-only root, no privilege escalation", sc)
			}
			if c.Image != "ghcr.io/joiner-dev/joiner:0.1.0" || !slices.Equal(c.Args, []string{"controller"}) {
				t.Errorf("image %q args %v, want the chart's appVersion and `controller`", c.Image, c.Args)
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("resources %v, want a CPU request and a memory limit", c.Resources)
			}
			var pdb policyv1.PodDisruptionBudget
			if !find(t, objs, "PodDisruptionBudget", "", &pdb) || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 ||
				!reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, selector) {
				t.Errorf("PodDisruptionBudget %+v, want maxUnavailable 1 over the pods", pdb.Spec)
			}
			if n := count(objs, "ServiceMonitor") + count(objs, "ConfigMap"); n != 0 {
				t.Errorf("%d ServiceMonitors and dashboard ConfigMaps by default, want none", n)
			}
			env := envOf(c)
			if env["LEADER_ELECTION_NAMESPACE"] != ns || env["CPU_REQUESTS"] != "resourceFieldRef:requests.cpu" || env["MEMORY_LIMIT"] != "resourceFieldRef:limits.memory" {
				t.Errorf("LEADER_ELECTION_NAMESPACE %q, CPU_REQUESTS %q, MEMORY_LIMIT %q; want the release namespace (where the chart's Role grants the Lease) and the container's resources",
					env["LEADER_ELECTION_NAMESPACE"], env["CPU_REQUESTS"], env["MEMORY_LIMIT"])
			}
		},
	}, {
		name: "settings become Karpenter's environment variables",
		values: map[string]any{
			"logLevel": "debug",
			"settings": map[string]any{
				"clusterName": "my-cluster", "clusterEndpoint": "https://ABC.gr7.eu-west-1.eks.amazonaws.com",
				"interruptionQueue": "my-queue", "batchMaxDuration": "20s", "batchIdleDuration": "2s",
				"isolatedVPC": true, "vmMemoryOverheadPercent": 0.1, "reservedENIs": "1",
				"featureGates": map[string]any{"spotToSpotConsolidation": true, "nodeRepair": true},
			},
		},
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			_, c := controller(t, objs)
			env := envOf(c)
			for k, want := range map[string]string{
				"CLUSTER_NAME": "my-cluster", "CLUSTER_ENDPOINT": "https://ABC.gr7.eu-west-1.eks.amazonaws.com",
				"INTERRUPTION_QUEUE": "my-queue", "BATCH_MAX_DURATION": "20s", "BATCH_IDLE_DURATION": "2s",
				"ISOLATED_VPC": "true", "VM_MEMORY_OVERHEAD_PERCENT": "0.1", "RESERVED_ENIS": "1", "LOG_LEVEL": "debug",
				"FEATURE_GATES":  "ReservedCapacity=true,SpotToSpotConsolidation=true,NodeRepair=true,NodeOverlay=false,StaticCapacity=false",
				"CLOUD_PROVIDER": "aws", "METRICS_PORT": "8080", "HEALTH_PROBE_PORT": "8081",
			} {
				if env[k] != want {
					t.Errorf("env %s = %q, want %q", k, env[k], want)
				}
			}
			// joiner reads the same environment at start.
			for k, v := range env {
				if !strings.HasPrefix(v, "fieldRef:") && !strings.HasPrefix(v, "resourceFieldRef:") {
					t.Setenv(k, v)
				}
			}
			o := options.Default()
			if err := o.Validate(); err != nil {
				t.Fatalf("joiner rejects the chart's environment: %v", err)
			}
			if o.ClusterName != "my-cluster" || o.InterruptionQueue != "my-queue" || o.BatchMaxDuration.String() != "20s" ||
				o.BatchIdleDuration.String() != "2s" || !o.IsolatedVPC || o.VMMemoryOverheadPercent != 0.1 || o.ReservedENIs != 1 ||
				!o.FeatureGates.SpotToSpotConsolidation || !o.FeatureGates.NodeRepair || o.LogLevel != "debug" || o.CloudProvider != "aws" {
				t.Errorf("joiner parsed the chart's environment as %+v", o)
			}
		},
	}, {
		name:   "the Lease in Karpenter's namespace through leaderElection.namespace",
		values: map[string]any{"leaderElection": map[string]any{"namespace": "kube-system"}},
		check:  leaseIn("kube-system", 1),
	}, {
		name:   "the Lease in Karpenter's namespace through controller.env, as docs/migrating.md says",
		values: map[string]any{"controller": map[string]any{"env": []any{map[string]any{"name": "LEADER_ELECTION_NAMESPACE", "value": "karpenter-old"}}}},
		check:  leaseIn("karpenter-old", 1),
	}, {
		name:   "no CPU_REQUESTS without a CPU request (joiner rejects 0)",
		values: map[string]any{"controller": map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": nil}}}},
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			if _, c := controller(t, objs); envOf(c)["CPU_REQUESTS"] != "" {
				t.Errorf("CPU_REQUESTS = %q without a CPU request", envOf(c)["CPU_REQUESTS"])
			}
		},
	}, {
		name: "IRSA annotation on the chart's ServiceAccount",
		values: map[string]any{"serviceAccount": map[string]any{"annotations": map[string]any{
			"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/KarpenterControllerRole-my-cluster"}}},
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			var sa corev1.ServiceAccount
			if !find(t, objs, "ServiceAccount", "joiner", &sa) || sa.Annotations["eks.amazonaws.com/role-arn"] == "" {
				t.Errorf("ServiceAccount %+v, want the role-arn annotation", sa.ObjectMeta)
			}
		},
	}, {
		name:   "an existing ServiceAccount (Pod Identity association made outside the chart)",
		values: map[string]any{"serviceAccount": map[string]any{"create": false, "name": "karpenter"}},
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			d, _ := controller(t, objs)
			var crb rbacv1.ClusterRoleBinding
			find(t, objs, "ClusterRoleBinding", "", &crb)
			if count(objs, "ServiceAccount") != 0 || d.Spec.Template.Spec.ServiceAccountName != "karpenter" || crb.Subjects[0].Name != "karpenter" {
				t.Errorf("serviceAccount.create=false: %d ServiceAccounts, pod runs as %q, bound %v; want none, karpenter, karpenter",
					count(objs, "ServiceAccount"), d.Spec.Template.Spec.ServiceAccountName, crb.Subjects)
			}
		},
	}, {
		name: "serviceMonitor and image digest and hostNetwork and dnsPolicy",
		values: map[string]any{
			"serviceMonitor": map[string]any{"enabled": true, "additionalLabels": map[string]any{"release": "prometheus"}, "endpointConfig": map[string]any{"interval": "15s"}},
			"controller":     map[string]any{"image": map[string]any{"tag": "v1.2.3", "digest": "sha256:3ac8186a561ba3472a3759b7deb2d414c177089d78cc6d2da54d1e689ff2257e"}},
			"hostNetwork":    true, "dnsPolicy": "Default",
		},
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			var sm struct {
				Metadata struct{ Labels map[string]string }
				Spec     struct {
					Endpoints []map[string]any
					Selector  struct{ MatchLabels map[string]string }
				}
			}
			if !find(t, objs, "ServiceMonitor", "joiner", &sm) || sm.Metadata.Labels["release"] != "prometheus" ||
				len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0]["port"] != "http-metrics" || sm.Spec.Endpoints[0]["interval"] != "15s" ||
				!reflect.DeepEqual(sm.Spec.Selector.MatchLabels, selector) {
				t.Errorf("ServiceMonitor %+v, want the release label, the http-metrics endpoint every 15s, the pods' selector", sm)
			}
			var svc corev1.Service
			if !find(t, objs, "Service", "joiner", &svc) || svc.Spec.Ports[0].Name != "http-metrics" || svc.Spec.Ports[0].Port != 8080 {
				t.Errorf("Service %+v, want port http-metrics 8080", svc.Spec)
			}
			d, c := controller(t, objs)
			if c.Image != "ghcr.io/joiner-dev/joiner:v1.2.3@sha256:3ac8186a561ba3472a3759b7deb2d414c177089d78cc6d2da54d1e689ff2257e" {
				t.Errorf("image %q, want the tag pinned by the digest", c.Image)
			}
			if !d.Spec.Template.Spec.HostNetwork || d.Spec.Template.Spec.DNSPolicy != corev1.DNSDefault {
				t.Errorf("hostNetwork %v dnsPolicy %q", d.Spec.Template.Spec.HostNetwork, d.Spec.Template.Spec.DNSPolicy)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, render(t, chartDir(), ns, tc.values))
		})
	}
}

// leaseIn checks that the Lease's Role, its binding and
// LEADER_ELECTION_NAMESPACE (set once) all name ns.
func leaseIn(ns string, envCount int) func(t *testing.T, objs []*unstructured.Unstructured) {
	return func(t *testing.T, objs []*unstructured.Unstructured) {
		t.Helper()
		var role rbacv1.Role
		var rb rbacv1.RoleBinding
		// The Lease's Role and binding: not the aws-auth read's, which is
		// always in kube-system.
		var leaseObjs []*unstructured.Unstructured
		for _, o := range objs {
			if !strings.HasSuffix(o.GetName(), "-aws-auth") {
				leaseObjs = append(leaseObjs, o)
			}
		}
		find(t, leaseObjs, "Role", "", &role)
		find(t, leaseObjs, "RoleBinding", "", &rb)
		_, c := controller(t, objs)
		n := 0
		for _, e := range c.Env {
			if e.Name == "LEADER_ELECTION_NAMESPACE" {
				n++
			}
		}
		if role.Namespace != ns || rb.Namespace != ns || envOf(c)["LEADER_ELECTION_NAMESPACE"] != ns || n != envCount {
			t.Errorf("Role in %q, RoleBinding in %q, LEADER_ELECTION_NAMESPACE %q set %d times; want %q, once",
				role.Namespace, rb.Namespace, envOf(c)["LEADER_ELECTION_NAMESPACE"], n, ns)
		}
	}
}

// TestDashboards checks that every file of the chart's dashboards/ becomes
// a ConfigMap Grafana's sidecar picks up, and none when disabled. It runs
// on a copy of the chart with two dashboards of its own, so it does not
// depend on which dashboards the chart holds today.
func TestDashboards(t *testing.T) {
	chart := filepath.Join(t.TempDir(), "joiner")
	if err := os.CopyFS(chart, os.DirFS(chartDir())); err != nil {
		t.Fatal(err)
	}
	own, _ := filepath.Glob(filepath.Join(chart, "dashboards", "*.json"))
	if err := os.MkdirAll(filepath.Join(chart, "dashboards"), 0o755); err != nil {
		t.Fatal(err)
	}
	dashboards := map[string]string{"Capacity_Test.json": `{"title":"capacity"}`, "performance-test.json": `{"title":"performance"}`}
	for name, body := range dashboards {
		if err := os.WriteFile(filepath.Join(chart, "dashboards", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if objs := render(t, chart, "karpenter", nil); count(objs, "ConfigMap") != 0 {
		t.Errorf("dashboards.enabled=false rendered %d ConfigMaps", count(objs, "ConfigMap"))
	}
	objs := render(t, chart, "monitoring", map[string]any{"dashboards": map[string]any{
		"enabled": true, "annotations": map[string]any{"grafana_folder": "Karpenter"}}})
	if got, want := count(objs, "ConfigMap"), len(own)+len(dashboards); got != want {
		t.Fatalf("%d dashboard ConfigMaps, want one per file of dashboards/ (%d)", got, want)
	}
	for name, body := range dashboards {
		cmName := "joiner-dashboard-" + strings.ReplaceAll(strings.ToLower(strings.TrimSuffix(name, ".json")), "_", "-")
		var cm corev1.ConfigMap
		if !find(t, objs, "ConfigMap", cmName, &cm) {
			t.Errorf("no ConfigMap %s for dashboards/%s", cmName, name)
			continue
		}
		if cm.Labels["grafana_dashboard"] != "1" || cm.Annotations["grafana_folder"] != "Karpenter" || cm.Data[name] != body || cm.Namespace != "monitoring" {
			t.Errorf("ConfigMap %s: labels %v annotations %v namespace %s data %v; want grafana_dashboard=1, the folder, the file's JSON",
				cmName, cm.Labels, cm.Annotations, cm.Namespace, cm.Data)
		}
	}
}
