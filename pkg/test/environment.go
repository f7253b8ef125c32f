package test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/controlplane"
)

// Environment is the control plane shared by the tests of one package.
type Environment struct {
	// ControlPlane is the running control plane: kubeconfig, logs, CRDs.
	ControlPlane *controlplane.ControlPlane
	// Client is an uncached admin client with the scheme of the options.
	Client client.Client
	// Config is the admin *rest.Config; copy it before changing it.
	Config *rest.Config
}

// env is the environment Main started for this test binary.
var env *Environment

// Main starts one control plane for the test package, runs its tests, stops
// the control plane and exits. Call it from TestMain:
//
//	func TestMain(m *testing.M) {
//		test.Main(m, controlplane.Options{Scheduler: true, ControllerManager: true, Kwok: true})
//	}
//
// When the control plane cannot start (binaries missing, a component
// failing), Main prints why and exits 1 without running the tests.
func Main(m *testing.M, opts controlplane.Options) {
	os.Exit(Run(m, opts))
}

// Run is Main without the exit: it returns the exit code, for a TestMain
// that has its own cleanup to do after the tests.
func Run(m *testing.M, opts controlplane.Options) int {
	if !flag.Parsed() {
		flag.Parse() // m.Run would; testing.Verbose needs it now
	}
	start := time.Now()
	cp, err := controlplane.New(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: test control plane:", err)
		return 1
	}
	// Stop on every way out: return, panic in TestMain, or an interrupt.
	defer stop(cp)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-signals
		fmt.Fprintf(os.Stderr, "test control plane: %s, stopping\n", sig)
		stop(cp)
		os.Exit(1)
	}()

	if err := cp.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: test control plane:", err)
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "test control plane ready in %s (kubeconfig %s, logs %s)\n",
			time.Since(start).Round(time.Millisecond), cp.KubeconfigPath(), cp.LogDir())
	}
	env = &Environment{ControlPlane: cp, Client: cp.Client(), Config: cp.Config()}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "control plane logs were in %s\n", cp.LogDir())
	}
	return code
}

func stop(cp *controlplane.ControlPlane) {
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "test control plane:", err)
	}
}

// Env returns the environment Main started; it fails t when there is none
// (TestMain does not call Main).
func Env(t testing.TB) *Environment {
	t.Helper()
	if env == nil {
		t.Fatal("no test control plane: call test.Main from TestMain")
	}
	return env
}

// Start starts a control plane for t alone and stops it when t ends. Prefer
// the shared one of Main; use this for a test that needs other options (a
// kwok node selector, extra flags) or that breaks its control plane.
func Start(t testing.TB, opts controlplane.Options) *Environment {
	t.Helper()
	cp, err := controlplane.New(opts)
	if err != nil {
		t.Fatalf("test control plane: %v", err)
	}
	t.Cleanup(func() { stop(cp) })
	if err := cp.Start(t.Context()); err != nil {
		t.Fatalf("test control plane: %v", err)
	}
	return &Environment{ControlPlane: cp, Client: cp.Client(), Config: cp.Config()}
}

// Namespace creates a namespace whose name is unique to t and deletes it
// when t ends. Without kube-controller-manager the namespace is only marked
// for deletion.
func (e *Environment) Namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Name(t, "ns")}}
	e.Create(t, ns)
	return ns.Name
}

// Create creates objs, failing t on error, and deletes them (in the
// background, ignoring those already gone) when t ends.
func (e *Environment) Create(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := e.Client.Create(t.Context(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
		}
		t.Cleanup(func() {
			// t.Context is canceled before cleanups run.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := e.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
			}
		})
	}
}

// RepoPath returns the absolute path of rel, a slash-separated path relative
// to the root of the repository (the nearest directory above the working
// directory holding a go.mod); for example RepoPath("pkg/apis/crds").
func RepoPath(rel string) string {
	dir, err := os.Getwd()
	if err != nil {
		panic(fmt.Errorf("finding repository root: %w", err))
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, filepath.FromSlash(rel))
		} else if !errors.Is(err, os.ErrNotExist) {
			panic(fmt.Errorf("finding repository root: %w", err))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("finding repository root: no go.mod above the working directory")
		}
		dir = parent
	}
}
