package operator

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/interruption"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-dev/joiner/pkg/controllers"
	"github.com/joiner-dev/joiner/pkg/events"
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

// NewCloud builds the cloud provider the settings name; its controllers
// publish their events through recorder.
func NewCloud(mgr manager.Manager, settings *options.Options, clk clock.WithTicker, recorder events.Recorder) (*Cloud, error) {
	switch settings.CloudProvider {
	case options.CloudProviderSim:
		faults, err := sim.ParseCallFaults(settings.SimCallFaults)
		if err != nil {
			return nil, fmt.Errorf("sim-call-faults: %w", err)
		}
		sc, err := sim.Build(mgr, sim.SetupOptions{
			StorePath:               settings.SimStorePath,
			ClusterName:             settings.ClusterName,
			Clock:                   clk,
			CallFaults:              faults,
			UnavailableOfferingsTTL: settings.UnavailableOfferingsTTL,
		})
		if err != nil {
			return nil, err
		}
		return &Cloud{
			Provider:    cloudprovider.Instrument(sc.Provider, clk),
			Controllers: []controllers.Controller{sc.NodeClasses},
			Runnables:   []manager.Runnable{sc.Machines},
		}, nil
	case options.CloudProviderAWS:
		ac, err := aws.Build(context.Background(), mgr, aws.SetupOptions{
			ClusterName:             settings.ClusterName,
			ClusterEndpoint:         settings.ClusterEndpoint,
			CABundle:                settings.ClusterCABundle,
			ClusterCIDR:             settings.ClusterCIDR,
			SSMParameterRoot:        settings.SSMParameterRoot,
			VMMemoryOverheadPercent: settings.VMMemoryOverheadPercent,
			ReservedENIs:            settings.ReservedENIs,
			IsolatedVPC:             settings.IsolatedVPC,
			IgnoreReservedCapacity:  !settings.FeatureGates.ReservedCapacity,
			NodeClassRefresh:        min(settings.AMIRefreshInterval, settings.SubnetRefreshInterval),
			UnavailableOfferingsTTL: settings.UnavailableOfferingsTTL,
			Clock:                   clk,
			Recorder:                recorder,
		})
		if err != nil {
			return nil, err
		}
		runnables := []manager.Runnable{ac.Pricing}
		if settings.InterruptionQueue != "" {
			ic, err := interruption.New(interruption.Options{
				Client: mgr.GetClient(), SQS: sqs.NewFromConfig(ac.Config), QueueName: settings.InterruptionQueue,
				EC2:       ec2.NewFromConfig(ac.Config),
				Offerings: ac.Provider, Recorder: recorder,
			})
			if err != nil {
				return nil, err
			}
			runnables = append(runnables, ic)
		}
		return &Cloud{
			Provider:    cloudprovider.Instrument(ac.Provider, clk),
			Controllers: []controllers.Controller{ac.NodeClasses},
			Runnables:   runnables,
		}, nil
	default:
		return nil, fmt.Errorf("unknown cloud provider %q", settings.CloudProvider)
	}
}
