package operator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-dev/joiner/pkg/controllers"
	"github.com/joiner-dev/joiner/pkg/operator/options"
)

// Cloud is a cloud provider with the controllers and processes it needs
// beside joiner's own: for the simulated cloud, the SimNodeClass status
// controller and the machines that turn instances into Nodes.
type Cloud struct {
	Provider    cloudprovider.CloudProvider
	Controllers []controllers.Controller
	Runnables   []manager.Runnable
}

// NewCloud builds the cloud provider the settings name.
func NewCloud(mgr manager.Manager, settings *options.Options, clk clock.WithTicker) (*Cloud, error) {
	switch settings.CloudProvider {
	case options.CloudProviderSim:
		path := settings.SimStorePath
		if path == "" {
			path = sim.DefaultStorePath()
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("creating simulated cloud store directory: %w", err)
		}
		store, err := sim.OpenStore(path)
		if err != nil {
			return nil, fmt.Errorf("opening simulated cloud store %s: %w", path, err)
		}
		// The cluster's kube-system UID joins its name on every instance, so
		// two clusters configured with the same --cluster-name still never
		// adopt or garbage-collect each other's instances.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		clusterID, err := sim.ClusterID(ctx, mgr.GetAPIReader())
		cancel()
		if err != nil {
			return nil, err
		}
		provider, err := sim.New(sim.Options{
			Client:      mgr.GetClient(),
			Store:       store,
			ClusterName: settings.ClusterName,
			ClusterID:   clusterID,
			Catalog:     sim.DefaultCatalog,
			Clock:       clk,
		})
		if err != nil {
			return nil, err
		}
		machines, err := sim.NewMachines(sim.MachinesOptions{
			Client:      mgr.GetClient(),
			Store:       store,
			ClusterName: settings.ClusterName,
			ClusterID:   clusterID,
			Clock:       clk,
		})
		if err != nil {
			return nil, err
		}
		nodeClasses, err := sim.NewNodeClassController(mgr.GetClient(), sim.DefaultCatalog)
		if err != nil {
			return nil, err
		}
		return &Cloud{Provider: cloudprovider.Instrument(provider, clk), Controllers: []controllers.Controller{nodeClasses}, Runnables: []manager.Runnable{machines}}, nil
	case options.CloudProviderAWS:
		return nil, errors.New("the aws cloud provider is not available yet; use --cloud-provider=sim")
	default:
		return nil, fmt.Errorf("unknown cloud provider %q", settings.CloudProvider)
	}
}
