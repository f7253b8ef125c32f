// Package controllers is the one place that builds and lists every joiner
// controller. It decides which controllers run and with which settings;
// each controller decides its own behaviour. The operator hands it plain
// values through Options: nothing here imports pkg/operator.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	capacitybufferctrl "github.com/joiner-dev/joiner/pkg/controllers/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/controllers/disruption"
	nodehealth "github.com/joiner-dev/joiner/pkg/controllers/node/health"
	nodetermination "github.com/joiner-dev/joiner/pkg/controllers/node/termination"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/consolidation"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/drift"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/expiration"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/lifecycle"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/podevents"
	nodeclaimtermination "github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/termination"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeoverlay"
	"github.com/joiner-dev/joiner/pkg/controllers/nodepool/awsauth"
	nodepoolcounter "github.com/joiner-dev/joiner/pkg/controllers/nodepool/counter"
	nodepoolhash "github.com/joiner-dev/joiner/pkg/controllers/nodepool/hash"
	nodepoolreadiness "github.com/joiner-dev/joiner/pkg/controllers/nodepool/readiness"
	"github.com/joiner-dev/joiner/pkg/controllers/nomination"
	"github.com/joiner-dev/joiner/pkg/controllers/observability"
	"github.com/joiner-dev/joiner/pkg/controllers/provisioning"
	"github.com/joiner-dev/joiner/pkg/controllers/provisioningrequest"
	"github.com/joiner-dev/joiner/pkg/controllers/static"
	"github.com/joiner-dev/joiner/pkg/controllers/status"
	"github.com/joiner-dev/joiner/pkg/controllerview"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/livemodel"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/nodeclaims"
	"github.com/joiner-dev/joiner/pkg/overlay"
	"github.com/joiner-dev/joiner/pkg/schedulerconfig"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/state"
	"github.com/joiner-dev/joiner/pkg/statuspage"
)

// Controller is what every joiner controller offers the manager.
type Controller interface {
	Register(mgr manager.Manager) error
}

// Options are the dependencies and settings the controllers share.
type Options struct {
	Manager       manager.Manager
	CloudProvider cloudprovider.CloudProvider
	Clock         clock.Clock
	// Recorder publishes the controllers' events (events.ForManager): one
	// for the process, so the cloud's controllers share its limits.
	Recorder events.Recorder
	// Solve runs the scheduling simulation for the provisioner.
	Solve provisioning.SolveFunc
	// Scheduling are the solver settings (PREFERENCE_POLICY,
	// MIN_VALUES_POLICY) consolidation's simulations use; Solve applies
	// them for the provisioner.
	Scheduling scheduling.Options
	// ClusterStateObservability publishes the cluster state gauges
	// (karpenter_nodes_*, karpenter_pods_state, karpenter_nodepools_*);
	// DISABLE_CLUSTER_STATE_OBSERVABILITY turns it off.
	ClusterStateObservability bool
	// CloudControllers are the cloud provider's own controllers (such as
	// the SimNodeClass status controller), registered after joiner's.
	CloudControllers []Controller
	// Runnables are extra processes to run in the manager, such as the
	// simulated cloud's machines.
	Runnables []manager.Runnable

	// BatchIdleDuration closes a provisioning batch after this long without
	// a new pending pod; BatchMaxDuration closes it in any case.
	BatchIdleDuration time.Duration
	BatchMaxDuration  time.Duration
	// RegistrationTTL is how long a launched NodeClaim may wait for its
	// Node before it is deleted.
	RegistrationTTL time.Duration
	// InitializationTTL is how long a registered NodeClaim may wait to be
	// initialized before it is deleted (0: the lifecycle default, 15m).
	InitializationTTL time.Duration
	// LaunchBackoffMax caps the back-off before launching again what failed
	// to register or initialise (0: the lifecycle default, 1h).
	LaunchBackoffMax time.Duration
	// LifecycleWorkers are the NodeClaim lifecycle controller's parallel
	// reconciles (0: the lifecycle default, 1,000).
	LifecycleWorkers int
	// NodeRepair runs node repair (the NodeRepair feature gate).
	NodeRepair bool
	// StaticCapacity keeps static NodePools (spec.replicas) at their
	// count (the StaticCapacity feature gate); off, they only get an event
	// naming the gate.
	StaticCapacity bool
	// NodeOverlay applies NodeOverlays to the instance types every
	// controller reads (the NodeOverlay feature gate); off, overlays only
	// get an event naming the gate.
	NodeOverlay bool
	// DefaultSpread are kube-scheduler's default topology spread
	// constraints by scheduler name (SCHEDULER_CONFIG), planned for pods
	// without their own; nil when unset.
	DefaultSpread map[string][]corev1.TopologySpreadConstraint
	// Scoring is kube-scheduler's resource scoring by scheduler name
	// (SCHEDULER_CONFIG): consolidation replays where kube-scheduler puts
	// the pods a command evicts with it; nil means kube-scheduler's
	// defaults.
	Scoring map[string]schedulerconfig.Scoring
	// CapacityBuffer plans CapacityBuffers' virtual pods (the
	// CapacityBuffer feature gate); off, buffers only get an event naming
	// the gate.
	CapacityBuffer bool
	// SpotToSpotConsolidation lets consolidation replace spot with cheaper
	// spot (the SpotToSpotConsolidation feature gate).
	SpotToSpotConsolidation bool
	// ConsolidationMinSavings is the least share of the replaced nodes'
	// price a consolidation replacement must save (0: any cheaper one).
	ConsolidationMinSavings float64
	// DisruptionPollInterval and DisruptionValidationPeriod tune the
	// disruption loop (0 keeps Karpenter's 10 s and 15 s).
	DisruptionPollInterval     time.Duration
	DisruptionValidationPeriod time.Duration
	// GCInterval and GCGracePeriod tune garbage collection of orphan
	// instances (0 keeps the controller's defaults).
	GCInterval    time.Duration
	GCGracePeriod time.Duration
	// StatusPage, when set, serves the read-only status page (joiner run's
	// "place to look") from the cluster state and the provisioner's
	// verdicts; its Source and Clock are filled here.
	StatusPage *statuspage.Options
	// ClusterName and Namespace, when both set, publish the controller view
	// (pkg/controllerview: the provider's instance types per NodePool and
	// the TTLs) in a ConfigMap of Namespace, the one source `joiner
	// explain` reads.
	ClusterName string
	Namespace   string
}

func (o *Options) validate() error {
	var errs []error
	if o.Manager == nil {
		errs = append(errs, errors.New("manager is required"))
	}
	if o.CloudProvider == nil {
		errs = append(errs, errors.New("cloud provider is required"))
	}
	if o.Clock == nil {
		errs = append(errs, errors.New("clock is required"))
	}
	if o.Recorder == nil {
		errs = append(errs, errors.New("event recorder is required"))
	}
	if o.Solve == nil {
		errs = append(errs, errors.New("solve function is required"))
	}
	return errors.Join(errs...)
}

// New builds every controller, in the order they are listed here.
func New(ctx context.Context, o Options) ([]Controller, error) {
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("controller options: %w", err)
	}
	mgr := o.Manager
	recorder := o.Recorder
	// With the gate on, every controller reads instance types through the
	// overlays in force: the one place they are applied.
	overlays := &overlay.Store{}
	rawCloud := o.CloudProvider
	if o.NodeOverlay {
		o.CloudProvider = overlay.NewCloudProvider(rawCloud, overlays)
	}
	overlayCtrl, err := nodeoverlay.NewController(nodeoverlay.Options{
		Client: mgr.GetClient(), Cloud: rawCloud, NodeClasses: rawCloud.GetSupportedNodeClasses(),
		Store: overlays, Recorder: recorder, Clock: o.Clock, Enabled: o.NodeOverlay,
	})
	if err != nil {
		return nil, fmt.Errorf("building nodeoverlay validation: %w", err)
	}
	cluster, err := state.NewCluster(state.Options{Reader: mgr.GetAPIReader(), Clock: o.Clock, NominationTTL: state.NominationWindow(o.BatchMaxDuration)})
	if err != nil {
		return nil, fmt.Errorf("building cluster state: %w", err)
	}
	// The provisioner's batches and the metrics read the cache's own pods
	// (every pending pod, every pod) without copying them.
	pods, err := state.NewPodCache(ctx, mgr.GetCache())
	if err != nil {
		return nil, fmt.Errorf("building the pod cache: %w", err)
	}
	// Capacity held for ProvisioningRequests: the provisioner counts it,
	// the provisioningrequest controller keeps it.
	bookings := provisioningrequest.NewBookings()
	// CapacityBuffers' virtual pods: the capacitybuffer controller keeps
	// them, every snapshot plans them.
	buffers := &capacitybuffer.Store{}
	// One live model and one NodeClaim creator, shared by provisioning,
	// disruption and the status page: what consolidation simulates on is
	// what the provisioner plans on.
	model, err := livemodel.NewBuilder(livemodel.Options{Client: mgr.GetClient(), Pods: pods, State: cluster, Nominations: cluster.Nominations(), CloudProvider: o.CloudProvider, Clock: o.Clock, Bookings: bookings, Buffers: buffers,
		Devices: o.Scheduling.PlanDynamicResources, DefaultSpread: o.DefaultSpread})
	if err != nil {
		return nil, fmt.Errorf("building the live model: %w", err)
	}
	creator, err := nodeclaims.NewCreator(nodeclaims.Options{Client: mgr.GetClient(), State: cluster})
	if err != nil {
		return nil, fmt.Errorf("building the nodeclaim creator: %w", err)
	}
	// Provisioning and disruption act only once the bookings held before a
	// restart are held again.
	booked := bookedState{Cluster: cluster, bookings: bookings}
	// Where the provisioner planned each pod is told to kube-scheduler by
	// a controller of its own; registration asks it to hold a node's
	// room just before the node turns schedulable.
	nominationWriter := nomination.NewWriter(mgr.GetClient(), cluster.Nominations())
	prov, err := provisioning.NewController(provisioning.Options{
		Client:            mgr.GetClient(),
		Model:             model,
		NodeClaims:        creator,
		State:             booked,
		Nominations:       cluster.Nominations(),
		Recorder:          recorder,
		Clock:             o.Clock,
		Solve:             o.Solve,
		BatchIdleDuration: o.BatchIdleDuration,
		BatchMaxDuration:  o.BatchMaxDuration,
		Buffers:           &capacitybufferctrl.Reporter{Client: mgr.GetClient(), Clock: o.Clock, Store: buffers},
	})
	if err != nil {
		return nil, fmt.Errorf("building provisioner: %w", err)
	}
	bufferCtrl, err := capacitybufferctrl.NewController(capacitybufferctrl.Options{
		Client: mgr.GetClient(), Store: buffers, Trigger: prov.Provisioner, Recorder: recorder, Clock: o.Clock, Enabled: o.CapacityBuffer,
	})
	if err != nil {
		return nil, fmt.Errorf("building capacitybuffer: %w", err)
	}
	provReqs, err := provisioningrequest.NewController(provisioningrequest.Options{
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		Planner:       prov.Provisioner,
		CloudProvider: o.CloudProvider,
		Bookings:      bookings,
		Recorder:      recorder,
		Clock:         o.Clock,
	})
	if err != nil {
		return nil, fmt.Errorf("building provisioningrequest: %w", err)
	}
	lc, err := lifecycle.NewController(lifecycle.Options{
		Client:            mgr.GetClient(),
		CloudProvider:     o.CloudProvider,
		Recorder:          recorder,
		Clock:             o.Clock,
		RegistrationTTL:   o.RegistrationTTL,
		InitializationTTL: o.InitializationTTL,
		LaunchBackoffMax:  o.LaunchBackoffMax,
		APIReader:         mgr.GetAPIReader(),
		Nominations:       cluster.Nominations(),
		Room:              nominationWriter,

		MaxConcurrentReconciles: o.LifecycleWorkers,
	})
	if err != nil {
		return nil, fmt.Errorf("building nodeclaim lifecycle: %w", err)
	}
	gc, err := garbagecollection.NewController(garbagecollection.Options{
		Client:        mgr.GetClient(),
		CloudProvider: o.CloudProvider,
		Recorder:      recorder,
		Clock:         o.Clock,
		Interval:      o.GCInterval,
		GracePeriod:   o.GCGracePeriod,
		APIReader:     mgr.GetAPIReader(),
	})
	if err != nil {
		return nil, fmt.Errorf("building nodeclaim garbage collection: %w", err)
	}
	claimTermination, err := nodeclaimtermination.NewController(nodeclaimtermination.Options{
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		CloudProvider: o.CloudProvider,
		Recorder:      recorder,
		Clock:         o.Clock,
	})
	if err != nil {
		return nil, fmt.Errorf("building nodeclaim termination: %w", err)
	}
	nodeTermination, err := nodetermination.NewController(nodetermination.Options{
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		CloudProvider: o.CloudProvider,
		Recorder:      recorder,
		Clock:         o.Clock,
	})
	if err != nil {
		return nil, fmt.Errorf("building node termination: %w", err)
	}
	counter, err := nodepoolcounter.NewController(nodepoolcounter.Options{Client: mgr.GetClient(), Cluster: cluster})
	if err != nil {
		return nil, fmt.Errorf("building nodepool counter: %w", err)
	}
	readiness, err := nodepoolreadiness.NewController(nodepoolreadiness.Options{
		Client:      mgr.GetClient(),
		NodeClasses: o.CloudProvider.GetSupportedNodeClasses(),
		Clock:       o.Clock,
		Recorder:    recorder,
	})
	if err != nil {
		return nil, fmt.Errorf("building nodepool readiness: %w", err)
	}
	hash, err := nodepoolhash.NewController(nodepoolhash.Options{Client: mgr.GetClient()})
	if err != nil {
		return nil, fmt.Errorf("building nodepool hash: %w", err)
	}
	driftCtrl, err := drift.NewController(drift.Options{Client: mgr.GetClient(), CloudProvider: o.CloudProvider, Clock: o.Clock})
	if err != nil {
		return nil, fmt.Errorf("building nodeclaim drift: %w", err)
	}
	expirationCtrl, err := expiration.NewController(expiration.Options{
		Client: mgr.GetClient(), CloudProvider: o.CloudProvider, Recorder: recorder, Clock: o.Clock,
	})
	if err != nil {
		return nil, fmt.Errorf("building nodeclaim expiration: %w", err)
	}
	podEvents, err := podevents.NewController(podevents.Options{Client: mgr.GetClient(), CloudProvider: o.CloudProvider, Clock: o.Clock})
	if err != nil {
		return nil, fmt.Errorf("building nodeclaim podevents: %w", err)
	}
	consolidatable, err := consolidation.NewController(consolidation.Options{Client: mgr.GetClient(), CloudProvider: o.CloudProvider, Clock: o.Clock})
	if err != nil {
		return nil, fmt.Errorf("building nodeclaim consolidation: %w", err)
	}
	disrupt, err := disruption.NewController(disruption.Options{
		Client:             mgr.GetClient(),
		APIReader:          mgr.GetAPIReader(),
		CloudProvider:      o.CloudProvider,
		State:              booked,
		Model:              model,
		NodeClaims:         creator,
		Recorder:           recorder,
		Clock:              o.Clock,
		SpotToSpot:         o.SpotToSpotConsolidation,
		MinSavingsFraction: minSavings(o.ConsolidationMinSavings),
		Scheduling:         o.Scheduling,
		Scoring:            o.Scoring,
		PollInterval:       o.DisruptionPollInterval,
		ValidationPeriod:   o.DisruptionValidationPeriod,
	})
	if err != nil {
		return nil, fmt.Errorf("building disruption: %w", err)
	}
	kinds, err := cloudprovider.SupportedNodeClassKinds(o.CloudProvider, mgr.GetScheme())
	if err != nil {
		return nil, fmt.Errorf("building static nodepools: %w", err)
	}
	staticPools, err := static.NewController(static.Options{
		Client:        mgr.GetClient(),
		State:         cluster,
		Creator:       creator,
		InstanceTypes: o.CloudProvider,
		NodeClasses:   kinds,
		Recorder:      recorder,
		Clock:         o.Clock,
		Enabled:       o.StaticCapacity,
	})
	if err != nil {
		return nil, fmt.Errorf("building static nodepools: %w", err)
	}
	out := []Controller{
		cluster,
		prov,
		nominationWriter,
		provReqs,
		lc,
		claimTermination,
		nodeTermination,
		gc,
		counter,
		readiness,
		hash,
		driftCtrl,
		expirationCtrl,
		podEvents,
		consolidatable,
		disrupt,
		staticPools,
		overlayCtrl,
		bufferCtrl,
	}
	statusCtrls, err := statusControllers(mgr, o)
	if err != nil {
		return nil, err
	}
	out = append(out, statusCtrls...)
	if o.ClusterStateObservability {
		obs, err := observability.NewController(observability.Options{
			Client: mgr.GetClient(), Pods: pods, Cluster: cluster, Decisions: cluster.Nominations(), InstanceTypes: o.CloudProvider, Clock: o.Clock,
		})
		if err != nil {
			return nil, fmt.Errorf("building cluster state observability: %w", err)
		}
		out = append(out, obs)
	}
	authReset, err := awsauth.NewController(awsauth.Options{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder, Clock: o.Clock, Trigger: prov.Provisioner.Trigger,
		Access: func(ctx context.Context) (string, error) { return cloudprovider.AccessDigest(ctx, o.CloudProvider) },
	})
	if err != nil {
		return nil, fmt.Errorf("building the aws-auth back-off reset: %w", err)
	}
	out = append(out, authReset)
	if o.ClusterName != "" && o.Namespace != "" {
		view, err := controllerview.NewPublisher(controllerview.PublisherOptions{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), InstanceTypes: o.CloudProvider, Clock: o.Clock,
			Namespace: o.Namespace, ClusterName: o.ClusterName,
			RegistrationTTL: lc.RegistrationTTL(), InitializationTTL: lc.InitializationTTL(),
			PlanDynamicResources: o.Scheduling.PlanDynamicResources, Buffers: buffers,
		})
		if err != nil {
			return nil, fmt.Errorf("building the controller view: %w", err)
		}
		out = append(out, view)
	}
	if o.StatusPage != nil {
		opts := *o.StatusPage
		opts.Clock = o.Clock
		opts.Source = liveStatus(model, prov.Provisioner, buffers, o.Scheduling.ListPrices)
		page, err := statuspage.NewServer(opts)
		if err != nil {
			return nil, fmt.Errorf("building status page: %w", err)
		}
		out = append(out, page)
	}
	if o.NodeRepair {
		health, err := nodehealth.NewController(nodehealth.Options{
			Client: mgr.GetClient(), CloudProvider: o.CloudProvider, Recorder: recorder, Clock: o.Clock,
		})
		if err != nil {
			return nil, fmt.Errorf("building node health: %w", err)
		}
		out = append(out, health)
	}
	return append(out, o.CloudControllers...), nil
}

// statusControllers publish the status condition metrics of NodeClaims,
// NodePools, Nodes, the cloud provider's node classes and, with the
// CapacityBuffer gate, CapacityBuffers.
func statusControllers(mgr manager.Manager, o Options) ([]Controller, error) {
	kinds := append([]client.Object{&v1.NodeClaim{}, &v1.NodePool{}, &corev1.Node{}}, o.CloudProvider.GetSupportedNodeClasses()...)
	if o.CapacityBuffer && o.ClusterStateObservability {
		// Karpenter publishes the buffers' conditions with the gate on,
		// unless cluster state observability is off.
		kinds = append(kinds, &autoscalingv1beta1.CapacityBuffer{})
	}
	var out []Controller
	for _, obj := range kinds {
		gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
		if err != nil {
			return nil, fmt.Errorf("building status metrics: %w", err)
		}
		m := metrics.StatusMetricsFor(gvk.Kind)
		if m == nil {
			return nil, fmt.Errorf("building status metrics: kind %s has no status metrics in pkg/metrics", gvk.Kind)
		}
		proto := obj
		c, err := status.NewController(status.Options{
			Client: mgr.GetClient(), Clock: o.Clock, Metrics: m,
			Object: func() client.Object { return proto.DeepCopyObject().(client.Object) },
		})
		if err != nil {
			return nil, fmt.Errorf("building status metrics of %s: %w", gvk.Kind, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// liveStatus draws the status page from what the provisioner would plan on
// now, the verdicts of its last pass and where the CapacityBuffers hold
// their room (the Store the controller view publishes too), pricing nodes
// as the solver does (list prices alone under PRICE_MODEL=List).
func liveStatus(model *livemodel.Builder, p *provisioning.Provisioner, buffers *capacitybuffer.Store, listPrices bool) statuspage.Source {
	return func(ctx context.Context) (statuspage.Input, error) {
		snap, err := model.Build(ctx)
		if err != nil {
			return statuspage.Input{}, err
		}
		return statuspage.Input{
			Subtitle:      "live",
			Snapshot:      snap.Cluster,
			InstanceTypes: snap.InstanceTypes,
			Skipped:       snap.Skipped,
			Buffers:       buffers.Rooms(),
			Plan:          &scheduling.Plan{Unschedulable: p.Unschedulable(), ListPrices: listPrices},
		}, nil
	}
}

// minSavings maps the setting to the engine's convention: 0 there means
// its default, so a setting of 0 (any cheaper replacement) is negative.
func minSavings(setting float64) float64 {
	if setting == 0 {
		return -1
	}
	return setting
}

// Register builds every controller and registers it, the field indexes
// they list by, and the runnables with the manager.
func Register(ctx context.Context, o Options) error {
	cs, err := New(ctx, o)
	if err != nil {
		return err
	}
	if err := state.RegisterFieldIndexes(ctx, o.Manager.GetFieldIndexer()); err != nil {
		return err
	}
	for _, c := range cs {
		if err := c.Register(o.Manager); err != nil {
			return err
		}
	}
	for _, r := range o.Runnables {
		if err := o.Manager.Add(r); err != nil {
			return fmt.Errorf("adding runnable %T: %w", r, err)
		}
	}
	return nil
}

// bookedState is the cluster state whose Synced also waits for the
// ProvisioningRequest bookings that existed before a restart to be held
// again (provisioningrequest.Bookings.Synced): planning or consolidating
// before that could hand a booked node's room to other pods.
type bookedState struct {
	*state.Cluster
	bookings *provisioningrequest.Bookings
}

func (s bookedState) Synced(ctx context.Context) bool {
	return s.Cluster.Synced(ctx) && s.bookings.Synced()
}
