package operator

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joiner-dev/joiner/pkg/controllers"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/lifecycle"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/operator/options"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/statuspage"
)

// Run builds the manager, the cloud and every controller from settings,
// and runs them against cfg's cluster until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, settings *options.Options, logger logr.Logger) error {
	ctx = log.IntoContext(ctx, logger)
	// client-go logs (leader election, reflectors) through klog: send them
	// to the same JSON stream.
	klog.SetLogger(logger)
	mgr, err := NewManager(cfg, settings, logger)
	if err != nil {
		return err
	}
	if settings.MemoryLimit > 0 {
		// Karpenter's MEMORY_LIMIT: collect harder as the container nears
		// its limit, instead of being OOM-killed.
		debug.SetMemoryLimit(int64(float64(settings.MemoryLimit) * 0.9))
	}
	solverOpts := SolverOptions(settings)
	clk := clock.RealClock{}
	// One event writer and one recorder, so that every controller,
	// joiner's and the cloud's, shares its queue and rate limits.
	recorder, err := events.ForManager(mgr, clk)
	if err != nil {
		return err
	}
	cloud, err := NewCloud(mgr, settings, clk, recorder)
	if err != nil {
		return err
	}
	if err := controllers.Register(ctx, controllers.Options{
		Manager:       mgr,
		CloudProvider: cloud.Provider,
		Clock:         clk,
		Recorder:      recorder,
		Solve: func(s *scheduling.Snapshot) (*scheduling.Plan, error) {
			return scheduling.Solve(s, solverOpts)
		},
		Scheduling:                 solverOpts,
		ClusterStateObservability:  !settings.DisableClusterStateObservability,
		Runnables:                  cloud.Runnables,
		CloudControllers:           cloud.Controllers,
		BatchIdleDuration:          settings.BatchIdleDuration,
		BatchMaxDuration:           settings.BatchMaxDuration,
		RegistrationTTL:            settings.RegistrationTTL,
		InitializationTTL:          settings.InitializationTTL,
		LaunchBackoffMax:           settings.LaunchBackoffMax,
		LifecycleWorkers:           settings.ScaledWorkers(lifecycle.DefaultMaxConcurrentReconciles, 5000),
		NodeRepair:                 settings.FeatureGates.NodeRepair,
		StaticCapacity:             settings.FeatureGates.StaticCapacity,
		CapacityBuffer:             settings.FeatureGates.CapacityBuffer,
		DefaultSpread:              settings.DefaultSpread,
		Scoring:                    settings.Scoring,
		NodeOverlay:                settings.FeatureGates.NodeOverlay,
		SpotToSpotConsolidation:    settings.FeatureGates.SpotToSpotConsolidation,
		ConsolidationMinSavings:    settings.ConsolidationMinSavings,
		DisruptionPollInterval:     settings.DisruptionPollInterval,
		DisruptionValidationPeriod: settings.DisruptionValidationPeriod,
		GCInterval:                 settings.GCInterval,
		GCGracePeriod:              settings.GCGracePeriod,
		StatusPage:                 statusPage(settings),
		ClusterName:                settings.ClusterName,
		Namespace:                  leaderElectionNamespace(settings.LeaderElectionNamespace),
	}); err != nil {
		return fmt.Errorf("registering controllers: %w", err)
	}
	logger.Info("starting joiner", logging.ClusterName, settings.ClusterName, logging.CloudProvider, settings.CloudProvider,
		logging.BatchIdleDuration, settings.BatchIdleDuration.String(), logging.BatchMaxDuration, settings.BatchMaxDuration.String(),
		logging.RegistrationTTL, settings.RegistrationTTL.String(), logging.InitializationTTL, settings.InitializationTTL.String(), logging.LaunchBackoffMax, settings.LaunchBackoffMax.String(),
		logging.UnavailableOfferingsTTL, settings.UnavailableOfferingsTTL.String(),
		logging.FeatureGates, settings.FeatureGatesFlag, logging.LeaderElection, !settings.DisableLeaderElection,
		logging.LeaderElectionName, settings.LeaderElectionName, logging.PreferencePolicy, settings.PreferencePolicy, logging.MinValuesPolicy, settings.MinValuesPolicy, logging.PriceModel, settings.PriceModel)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// SolverOptions are the solver's settings: PREFERENCE_POLICY,
// MIN_VALUES_POLICY and PRICE_MODEL, for provisioning and consolidation
// alike.
func SolverOptions(settings *options.Options) scheduling.Options {
	return scheduling.Options{
		IgnorePreferences:   settings.PreferencePolicy == options.PreferencePolicyIgnore,
		MinValuesBestEffort: settings.MinValuesPolicy == options.MinValuesPolicyBestEffort,
		ListPrices:          settings.PriceModel == options.PriceModelList,
		// IGNORE_DRA_REQUESTS=false: the live model reads the DRA objects
		// and the solver plans devices.
		PlanDynamicResources: !settings.IgnoreDRARequests,
		// The ReservedCapacity gate off: reserved offerings are not planned.
		IgnoreReservedCapacity: !settings.FeatureGates.ReservedCapacity,
	}
}

// statusPage is the status page's settings, nil when it is off.
func statusPage(settings *options.Options) *statuspage.Options {
	if !settings.StatusPage {
		return nil
	}
	return &statuspage.Options{Listener: settings.StatusPageListener, Address: settings.StatusPageAddress, Title: settings.ClusterName}
}
