package test

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/joiner-dev/joiner/pkg/apis"
	"github.com/joiner-dev/joiner/pkg/state"
)

// Scheme is client-go's built-in types plus every joiner API group: what
// a controller test's manager and client need.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apis.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// StartManager runs mgr until the test ends, then stops it and waits for it
// to return, so no controller outlives the test that started it.
func StartManager(t testing.TB, mgr manager.Manager) {
	t.Helper()
	StartRunnable(t, mgr)
}

// StartRunnable runs r (a manager, an events.Writer, ...) until the test
// ends, then stops it and waits for it to return; an error other than the
// cancellation fails t.
func StartRunnable(t testing.TB, r manager.Runnable) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("%T: %v", r, err)
		}
	})
}

// NewManager returns a manager for t against the package's control plane,
// as the operator would build it for the controllers: joiner's Scheme, the
// field indexes of state.RegisterFieldIndexes, no metrics endpoint, and no
// check that controller names are unique (each test runs its own manager,
// and names repeat across tests). Start it with StartManager.
func (e *Environment) NewManager(t testing.TB) manager.Manager {
	t.Helper()
	mgr, err := manager.New(e.Config, manager.Options{
		Scheme:     Scheme(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      state.CacheOptions(),
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	if err := state.RegisterFieldIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		t.Fatalf("registering field indexes: %v", err)
	}
	return mgr
}
