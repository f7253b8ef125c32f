package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	clusteridentity "github.com/joiner-dev/joiner/pkg/cloudprovider/identity"
)

// DefaultStorePath is where the simulated cloud keeps its instances when no
// path is given: one file per machine, shared by every joiner process on
// it (the cluster identity tag keeps their instances apart).
func DefaultStorePath() string {
	return filepath.Join(os.TempDir(), "joiner-sim", "instances.json")
}

// SetupOptions configure Setup.
type SetupOptions struct {
	// StorePath is the instance store file; DefaultStorePath when empty.
	StorePath string
	// ClusterName is the cluster identity (see Options.ClusterName).
	ClusterName string
	// ClusterID is the cluster's unique identity; when empty, Setup reads
	// it from the cluster (ClusterID) so that clusters sharing a name stay
	// apart.
	ClusterID string
	// Clock defaults to the real clock.
	Clock clock.WithTicker
	// Catalog defaults to DefaultCatalog.
	Catalog CatalogFunc
	// CallFaults make the provider's API calls fail at seeded rates.
	CallFaults CallFaults
	// UnavailableOfferingsTTL is how long an offering that failed to
	// launch is skipped (0: cloudprovider.DefaultUnavailableOfferingsTTL).
	UnavailableOfferingsTTL time.Duration
}

// Cloud is the simulated cloud: the provider and what must run beside it.
type Cloud struct {
	Provider *Provider
	// Machines turns instances into Nodes; it runs on every replica.
	Machines *Machines
	// NodeClasses keeps SimNodeClass status (Ready, zones).
	NodeClasses *NodeClassController
}

// Build makes the simulated cloud for mgr's cluster without registering
// anything: it opens the store and, unless opts names it, identifies the
// cluster by its kube-system UID. Callers that list their own controllers
// register the parts themselves; Setup does it in one call.
func Build(mgr manager.Manager, opts SetupOptions) (*Cloud, error) {
	path := opts.StorePath
	if path == "" {
		path = DefaultStorePath()
	}
	var clk clock.WithTicker = clock.RealClock{}
	if opts.Clock != nil {
		clk = opts.Clock
	}
	if opts.ClusterID == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		id, err := clusteridentity.ClusterID(ctx, mgr.GetAPIReader())
		cancel()
		if err != nil {
			return nil, fmt.Errorf("setting up the simulated cloud: %w", err)
		}
		opts.ClusterID = id
	}
	store, err := OpenStore(path)
	if err != nil {
		return nil, fmt.Errorf("setting up the simulated cloud: %w", err)
	}
	provider, err := New(Options{Client: mgr.GetClient(), Store: store, ClusterName: opts.ClusterName, ClusterID: opts.ClusterID, Catalog: opts.Catalog, Clock: clk, CallFaults: opts.CallFaults, UnavailableOfferingsTTL: opts.UnavailableOfferingsTTL})
	if err != nil {
		return nil, fmt.Errorf("setting up the simulated cloud: %w", err)
	}
	machines, err := NewMachines(MachinesOptions{Client: mgr.GetClient(), Store: store, ClusterName: opts.ClusterName, ClusterID: opts.ClusterID, Clock: clk})
	if err != nil {
		return nil, fmt.Errorf("setting up the simulated cloud: %w", err)
	}
	status, err := NewNodeClassController(mgr.GetClient(), opts.Catalog)
	if err != nil {
		return nil, fmt.Errorf("setting up the simulated cloud: %w", err)
	}
	return &Cloud{Provider: provider, Machines: machines, NodeClasses: status}, nil
}

// Setup builds the simulated cloud on mgr and registers its machines and
// SimNodeClass status controller there, returning the provider.
func Setup(mgr manager.Manager, opts SetupOptions) (*Provider, error) {
	c, err := Build(mgr, opts)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(c.Machines); err != nil {
		return nil, fmt.Errorf("adding the simulated machines: %w", err)
	}
	if err := c.NodeClasses.Register(mgr); err != nil {
		return nil, fmt.Errorf("setting up the simulated cloud: %w", err)
	}
	return c.Provider, nil
}
