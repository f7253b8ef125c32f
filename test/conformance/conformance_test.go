package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/joiner-dev/joiner/pkg/apis"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/test"
)

// focused is the selection `make test` runs: fast specs of upstream's
// regression suite that cover NodePool validation, the NodePool hash, the
// DaemonSet overhead with LimitRange defaults, provisioning from a
// standalone NodeClaim on the KWOKNodeClass, termination, drift onto a
// NodePool whose new taint the pods only prefer not to meet, and a
// CapacityBuffer following its PodTemplate.
var focused = []string{
	`^Integration Validation NodePool `,
	`^Integration CRD Hash `,
	`^Integration DaemonSet should account for LimitRange Default on daemonSet pods for resources$`,
	`^NodeClaim StandaloneNodeClaim should create a standard NodeClaim$`,
	`^Termination should terminate the node and the instance on deletion$`,
	`^Drift NodePool Drift Taints$`,
	`^CapacityBuffer PodTemplateRef Provisioning should update buffer status when PodTemplate is updated$`,
}

// TestConformanceFocused runs the focused selection of upstream's
// regression suite in one process (a few minutes); every spec must pass.
func TestConformanceFocused(t *testing.T) {
	h := newHarness(t)
	s := h.build(t, "regression")
	specs := h.list(t, &s)
	var selected []Spec
	for _, spec := range specs {
		for _, f := range focused {
			if regexp.MustCompile(f).MatchString(spec.Text) {
				selected = append(selected, spec)
				break
			}
		}
	}
	if len(selected) < len(focused) {
		t.Fatalf("the focused selection matched %d specs of %d listed: upstream renamed them? patterns %q", len(selected), len(specs), focused)
	}
	h.start(t)
	results, err := Run(t.Context(), s, selected, RunOptions{Kubeconfig: h.kubeconfig, Timeout: 12 * time.Minute, Dir: h.dir, Name: "focused"})
	if err != nil {
		t.Fatal(err)
	}
	h.finish(t, "focused selection of upstream's regression suite", results)
}

// TestConformance runs whole suites, one spec per process, when
// JOINER_CONFORMANCE=1 (make conformance). CONFORMANCE_SUITES (default
// "regression performance"), CONFORMANCE_FOCUS and CONFORMANCE_SKIP
// (regular expressions on the spec's full text), CONFORMANCE_SPEC_TIMEOUT
// (default 20m) and CONFORMANCE_REPORT (default bin/conformance/report.md)
// shape the run; a focus and skip that leave no spec to run fail it.
func TestConformance(t *testing.T) {
	if os.Getenv("JOINER_CONFORMANCE") != "1" {
		t.Skip("the whole suites take hours: make conformance (JOINER_CONFORMANCE=1)")
	}
	suites := strings.Fields(envOr("CONFORMANCE_SUITES", "regression performance"))
	sel := Selection{Focus: os.Getenv("CONFORMANCE_FOCUS"), Skip: os.Getenv("CONFORMANCE_SKIP")}
	timeout, err := time.ParseDuration(envOr("CONFORMANCE_SPEC_TIMEOUT", "20m"))
	if err != nil {
		t.Fatalf("CONFORMANCE_SPEC_TIMEOUT: %v", err)
	}
	// The suites are built and their specs chosen before any cluster
	// starts, so a selection of nothing fails at once.
	h := newHarness(t)
	built := make([]Suite, len(suites))
	lists := make([][]Spec, len(suites))
	for i, name := range suites {
		built[i] = h.build(t, name)
		lists[i] = h.list(t, &built[i])
	}
	selected, err := sel.Specs(lists...)
	if err != nil {
		t.Fatalf("CONFORMANCE_FOCUS/CONFORMANCE_SKIP: %v", err)
	}
	h.start(t)
	header := fmt.Sprintf("upstream suites %s against joiner", strings.Join(suites, ", "))
	var results []Result
	for i, s := range built {
		for _, spec := range selected[i] {
			if reason := Excluded(spec); reason != "" {
				results = append(results, Result{Spec: spec, State: "excluded", Message: reason})
				continue
			}
			rs, err := Run(t.Context(), s, []Spec{spec}, RunOptions{
				Kubeconfig: h.kubeconfig, Timeout: timeout, Dir: h.dir, Name: s.Name + "-" + slug(spec.Text), JoinerPid: h.joiner.Pid(),
			})
			if err != nil {
				t.Fatal(err)
			}
			r := rs[0]
			t.Logf("%s: %s (%s; joiner %s cpu, peak RSS %d MiB) %s", r.State, r.Text, r.Duration.Round(time.Second),
				r.Joiner.CPU.Round(time.Second), r.Joiner.PeakRSS>>20, firstLine(r.Message))
			results = append(results, r)
			h.writeReport(t, header, results)
			if !r.Passed() {
				// A failed spec may leave objects behind; the next spec
				// expects a clean cluster.
				h.scrub(t)
			}
		}
	}
	h.finish(t, header, results)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// featureGates are those upstream's own end-to-end runs enable (its
// Makefile's HELM_OPTS: nodeRepair, staticCapacity, capacityBuffer), so
// their specs meet the behaviour they test.
const featureGates = "NodeRepair=true,StaticCapacity=true,CapacityBuffer=true"

// starvedKubelets keeps kube-controller-manager from declaring kwok's
// nodes lost when kwok, one process playing every kubelet, falls behind:
// at the performance suite's scale (500 to 2,000 nodes) on a shared
// 2-core machine, kwok renewed the node Leases late, the node lifecycle
// controller marked Nodes Unknown and tainted them unreachable (13
// minutes into a scale-out, 378 of 501 Nodes were NotReady), and pods
// waited for nodes that were in fact fine. Real kubelets each have their
// node's CPU; upstream's e2e clusters give kwok its own. No spec of
// upstream's suites waits for the node lifecycle controller: the repair
// specs set the node's conditions themselves.
var starvedKubelets = map[string][]string{
	"kube-controller-manager": {"--node-monitor-grace-period=10m", "--node-startup-grace-period=10m"},
	"kwok":                    {"--node-lease-duration-seconds=120"},
}

// gcWorkers keeps kube-controller-manager's garbage collector abreast of
// upstream's cleanup. The cleanup deletes every pod, Node, NodeClaim and
// the NodePool with foreground propagation, so each waits for the garbage
// collector to remove its foregroundDeletion finalizer, and it deletes them
// again on every pass (50 requests at a time per kind) until they are gone.
// Each item of the collector's queue costs three API calls in a row (two
// GETs and a PATCH), so its rate is its worker count over kube-apiserver's
// latency, not its client's QPS, its rate limiter or its graph builder.
// hack/gcrepro (200 kwok Nodes, 2,000 pods, the same cleanup) measured, with
// kube-apiserver getting about a quarter of a core on a loaded machine: 18
// items a second at the default 20 workers, 33 at 50, 39 at 100
// (docs/conformance.md). In
// upstream's XL spec the Nodes wait in that queue behind thousands of pods,
// and went at about one a second (P18). Large clusters run more workers
// than the default (Gardener's shoot control planes run 30); 50 keeps most
// of the gain.
var gcWorkers = map[string][]string{
	"kube-controller-manager": {"--concurrent-gc-syncs=50"},
}

// controlPlaneArgs are the components' extra flags: starvedKubelets and
// gcWorkers.
func controlPlaneArgs() map[string][]string {
	args := map[string][]string{}
	for _, m := range []map[string][]string{starvedKubelets, gcWorkers} {
		for component, flags := range m {
			args[component] = append(args[component], flags...)
		}
	}
	return args
}

// harness is one control plane with joiner running on the simulated cloud.
type harness struct {
	env        *test.Environment
	kubeconfig string
	// dir keeps the suites' binaries, reports and logs.
	dir string
	// module is the upstream module's directory (upstream/).
	module string
	joiner *test.JoinerProcess
}

// newHarness prepares the harness's directory; start brings up its
// cluster and joiner.
func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{dir: t.TempDir(), module: test.RepoPath("test/conformance/upstream")}
	if d := os.Getenv("CONFORMANCE_DIR"); d != "" {
		h.dir = d
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// start brings up the control plane and joiner on the simulated cloud.
func (h *harness) start(t *testing.T) {
	t.Helper()
	crdDirs := []string{test.RepoPath("pkg/apis/crds"), h.upstreamOnlyCRDs(t)}
	h.env = test.Start(t, controlplane.Options{
		Scheduler: true, ControllerManager: true, Kwok: true,
		Scheme:         test.Scheme(),
		CRDDirectories: crdDirs,
		ExtraArgs:      controlPlaneArgs(),
	})
	h.kubeconfig = h.env.ControlPlane.KubeconfigPath()
	bin := (&test.JoinerBinary{Dir: h.dir}).Path(t)
	h.joiner = test.StartJoiner(t, bin, "joiner", []string{
		"controller",
		"--kubeconfig=" + h.kubeconfig,
		"--cluster-name=conformance",
		"--disable-leader-election",
		"--metrics-port=0",
		"--health-probe-port=0",
		"--sim-store=" + filepath.Join(h.dir, "sim-instances.json"),
		"--feature-gates=" + featureGates,
	}, nil)
}

// upstreamOnlyCRDs writes, into a directory of its own, upstream's CRDs
// for kinds joiner does not define (upstream's cleanup lists every kind it
// may create, such as NodeOverlay and CapacityBuffer), so those lists
// succeed; joiner's own CRDs are always the ones installed for its kinds.
func (h *harness) upstreamOnlyCRDs(t *testing.T) string {
	t.Helper()
	out := filepath.Join(h.dir, "upstream-crds")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	ours, err := apis.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, c := range ours {
		have[c.Name] = true
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/karpenter")
	cmd.Dir = h.module
	cmd.Env = append(os.Environ(), "GOWORK=off")
	dirOut, err := cmd.Output()
	if err != nil {
		t.Fatalf("finding the upstream module (go mod download in test/conformance/upstream): %v", err)
	}
	upstream := filepath.Join(strings.TrimSpace(string(dirOut)), "pkg", "apis", "crds")
	files, err := filepath.Glob(filepath.Join(upstream, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s: %v", upstream, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			t.Fatalf("decoding %s: %v", f, err)
		}
		if have[crd.Name] {
			continue
		}
		t.Logf("installing upstream's CRD %s: joiner does not serve the kind", crd.Name)
		if err := os.WriteFile(filepath.Join(out, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func (h *harness) build(t *testing.T, name string) Suite {
	t.Helper()
	start := time.Now()
	s, err := BuildSuite(t.Context(), h.module, h.dir, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built upstream's %s suite in %s", name, time.Since(start).Round(time.Second))
	return s
}

func (h *harness) list(t *testing.T, s *Suite) []Spec {
	t.Helper()
	specs, err := ListSpecs(t.Context(), s, h.dir)
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

// scrub deletes what upstream's specs create (everything carrying its
// testing/cluster label, and every NodePool and KWOKNodeClass) and waits
// until joiner has given every node back.
func (h *harness) scrub(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	kubectl := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig=" + h.kubeconfig}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	for _, kind := range []string{"deployments.apps", "daemonsets.apps", "poddisruptionbudgets.policy", "pods", "limitranges", "persistentvolumeclaims"} {
		if err := kubectl("delete", kind, "-A", "-l", "testing/cluster", "--wait=false", "--grace-period=0", "--force"); err != nil {
			t.Logf("scrub: %v", err)
		}
	}
	for _, kind := range []string{"nodepools.karpenter.sh", "nodeclaims.karpenter.sh", "kwoknodeclasses.karpenter.kwok.sh"} {
		if err := kubectl("delete", kind, "--all", "--wait=false"); err != nil {
			t.Logf("scrub: %v", err)
		}
	}
	err := test.Poll(ctx, 8*time.Minute, func(ctx context.Context) error {
		cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig="+h.kubeconfig, "get", "nodes,nodeclaims.karpenter.sh", "-o", "name")
		out, err := cmd.Output()
		if err != nil {
			return err
		}
		if n := len(bytes.Fields(out)); n > 0 {
			return fmt.Errorf("%d nodes and nodeclaims remain", n)
		}
		return nil
	})
	if err != nil {
		t.Logf("scrub: %v", err)
	}
}

// finish writes the report and fails t for every spec that neither
// passed nor was excluded.
func (h *harness) finish(t *testing.T, header string, results []Result) {
	t.Helper()
	t.Log("\n" + h.writeReport(t, header, results))
	failed := 0
	for _, r := range results {
		if !r.Passed() && r.State != "excluded" {
			failed++
			t.Errorf("%s: %s: %s", r.State, r.Text, firstLine(r.Message))
		}
	}
	if failed > 0 {
		t.Logf("%d of %d specs failed; logs and reports in %s", failed, len(results), h.dir)
	}
}

// writeReport writes the pass table of results to CONFORMANCE_REPORT, when
// set, and returns it. TestConformance writes it after every spec, so a run
// cut short keeps the table of the specs it finished.
func (h *harness) writeReport(t *testing.T, header string, results []Result) string {
	t.Helper()
	var b strings.Builder
	if err := WriteReport(&b, fmt.Sprintf("# %s\n\njoiner commit %s; upstream %s", header, gitHead(), upstreamVersion(t, h.module)), results); err != nil {
		t.Fatal(err)
	}
	if path := os.Getenv("CONFORMANCE_REPORT"); path != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("report: %s", path)
	}
	return b.String()
}

func gitHead() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func upstreamVersion(t *testing.T, module string) string {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Path}}@{{.Version}}", "sigs.k8s.io/karpenter")
	cmd.Dir = module
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Logf("reading upstream's version: %v", err)
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
