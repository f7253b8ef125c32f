// Package options holds joiner's operator settings: every one is a flag
// whose default comes from an environment variable (as Karpenter's do), so
// the same binary is configured by a Helm chart's env or by a shell's flags.
// It decides names, defaults and validation; it never starts anything.
package options

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/schedulerconfig"
)

// Cloud providers joiner can run with.
const (
	CloudProviderSim = "sim"
	CloudProviderAWS = "aws"
)

// Values of PreferencePolicy and MinValuesPolicy (Karpenter's).
const (
	PreferencePolicyRespect   = "Respect"
	PreferencePolicyIgnore    = "Ignore"
	MinValuesPolicyStrict     = "Strict"
	MinValuesPolicyBestEffort = "BestEffort"

	// PriceModelBilled prices a node as the bill does (scheduling.NodePrice);
	// PriceModelList at its offering's list price, as Karpenter does.
	PriceModelBilled = "Billed"
	PriceModelList   = "List"
)

// Options are the operator's settings. Those Karpenter has keep its names,
// defaults and meaning; docs/settings.md lists them all, generated from
// AddFlags.
type Options struct {
	// ClusterName is the cluster identity stamped on every instance joiner
	// launches; garbage collection only ever touches instances carrying it.
	ClusterName string
	// CloudProvider is "sim" (the embedded simulated cloud) or "aws".
	CloudProvider string
	// SimStorePath is where the simulated cloud keeps its instances so they
	// survive a controller restart ("" lets the cloud pick its default).
	SimStorePath string
	// SimCallFaults make the simulated cloud's API calls fail at seeded
	// rates (sim.ParseCallFaults syntax), for the chaos suite.
	SimCallFaults string

	BatchIdleDuration time.Duration
	BatchMaxDuration  time.Duration
	// RegistrationTTL is how long a launched NodeClaim may wait for its Node
	// before it is deleted with an explanatory event.
	RegistrationTTL time.Duration
	// InitializationTTL is how long a registered NodeClaim may wait to be
	// initialized (Ready, startup taints gone, extended resources
	// registered) before it is deleted with an explanatory event.
	InitializationTTL time.Duration
	// LaunchBackoffMax caps the wait before launching again an instance
	// type or image whose NodeClaims failed to register or initialise: the
	// wait doubles from the TTL with each consecutive failure.
	LaunchBackoffMax time.Duration
	// UnavailableOfferingsTTL is how long an offering (instance type,
	// zone, capacity type) that failed to launch for lack of capacity is
	// skipped, in both clouds (Karpenter's is a fixed 3 minutes).
	UnavailableOfferingsTTL time.Duration

	MetricsPort     int
	HealthProbePort int
	// EnableProfiling serves pprof on the metrics port.
	EnableProfiling bool
	// DisableControllerWarmup keeps a standby replica's informers stopped
	// until it leads.
	DisableControllerWarmup bool
	// DisableClusterStateObservability drops the cluster state gauges.
	DisableClusterStateObservability bool
	// KarpenterService is accepted and unused: joiner serves no webhook.
	KarpenterService string

	DisableLeaderElection   bool
	LeaderElectionName      string
	LeaderElectionNamespace string

	KubeClientQPS   int
	KubeClientBurst int

	// MemoryLimit (bytes) sets the GC soft limit to 90% of it when positive.
	MemoryLimit int64
	// CPURequests (millicores) sizes the controllers' default concurrency.
	CPURequests int

	// LogLevel is debug, info or error.
	LogLevel string
	// LogOutputPaths and LogErrorOutputPaths are comma-separated zap sinks.
	LogOutputPaths      string
	LogErrorOutputPaths string

	// PreferencePolicy is Respect or Ignore; MinValuesPolicy is Strict or
	// BestEffort.
	PreferencePolicy string
	MinValuesPolicy  string
	// PriceModel is Billed or List: how nodes are priced when provisioning
	// and consolidation compare them.
	PriceModel string
	// IgnoreDRARequests leaves pods with Dynamic Resource Allocation claims
	// unprovisioned (Karpenter's default); false plans nodes whose devices
	// meet the claims (docs/dra.md).
	IgnoreDRARequests bool
	// SchedulerConfig is kube-scheduler's configuration (a file path or the
	// document: a KubeSchedulerConfiguration or Karpenter's
	// podTopologySpread document) whose default topology spread joiner
	// plans with; DefaultSpread is what Validate read from it.
	SchedulerConfig string
	DefaultSpread   map[string][]corev1.TopologySpreadConstraint
	// Scoring is each profile's resource scoring that Validate read from
	// SchedulerConfig: consolidation replays kube-scheduler with it.
	Scoring map[string]schedulerconfig.Scoring

	// AWS provider settings, named as Karpenter's.
	//
	// ClusterEndpoint is the API server URL nodes join; empty asks EKS
	// DescribeCluster.
	ClusterEndpoint string
	// ClusterCABundle is the base64 PEM CA nodes trust; empty uses EKS's,
	// else joiner's own.
	ClusterCABundle string
	// ClusterCIDR is the cluster's service CIDR written into AL2023
	// NodeConfigs; empty asks EKS DescribeCluster.
	ClusterCIDR string
	// IsolatedVPC skips the Pricing API (no route to it).
	IsolatedVPC bool
	// EKSControlPlane must be false.
	EKSControlPlane bool
	// VMMemoryOverheadPercent is subtracted from each instance type's memory.
	VMMemoryOverheadPercent float64
	// ReservedENIs are kept out of the ENI-limited pod count.
	ReservedENIs int
	// SSMParameterRoot replaces /aws/service in AMI alias parameter names,
	// so a local endpoint (which reserves /aws/) can serve them.
	SSMParameterRoot string
	// InterruptionQueue names the SQS queue EventBridge forwards spot
	// interruptions, rebalance recommendations, scheduled changes, state
	// changes and capacity reservation interruptions to; empty disables
	// interruption handling.
	InterruptionQueue string
	// DisableDryRun is accepted and unused: joiner does no dry runs.
	DisableDryRun bool
	// EnableZonalShift must be false.
	EnableZonalShift bool
	// AMIRefreshInterval and SubnetRefreshInterval: joiner resolves a node
	// class's AMIs and subnets together, at the shorter of the two.
	AMIRefreshInterval    time.Duration
	SubnetRefreshInterval time.Duration
	// AWSFeatureGatesFlag is Karpenter's --aws-feature-gates.
	AWSFeatureGatesFlag string

	// GCInterval and GCGracePeriod tune garbage collection of orphan
	// instances (0 keeps the controller's defaults). They are hidden flags,
	// for tests that cannot wait minutes.
	GCInterval    time.Duration
	GCGracePeriod time.Duration

	// FeatureGatesFlag is Karpenter's --feature-gates / FEATURE_GATES
	// ("SpotToSpotConsolidation=true,NodeRepair=false"); Validate parses
	// it into FeatureGates.
	FeatureGatesFlag string
	FeatureGates     FeatureGates
	// ConsolidationMinSavings is the least share of the replaced nodes'
	// price a consolidation replacement must save to be worth its
	// evictions (joiner's; 0.05 by default).
	ConsolidationMinSavings float64
	// DisruptionPollInterval and DisruptionValidationPeriod tune the
	// disruption loop (0 keeps Karpenter's 10 s and 15 s). They are hidden
	// flags, for tests that cannot wait.
	DisruptionPollInterval     time.Duration
	DisruptionValidationPeriod time.Duration

	// StatusPage serves joiner's read-only status page (nodes, cost over
	// time, pending pods and their verdicts) on StatusPageAddress; off by
	// default in the controller, on in `joiner run`.
	StatusPage bool
	// StatusPageAddress is host:port, loopback by default: the page has no
	// authentication and names pods, nodes and prices.
	StatusPageAddress string
	// StatusPageListener, when set by a program embedding the operator
	// (`joiner run`, which prints the URL), is served on instead of
	// StatusPageAddress. It is not a flag.
	StatusPageListener net.Listener

	// envErrs are malformed environment variables, reported by Validate.
	envErrs []error
}

// AddFlags registers every option on fs, with defaults read from the
// environment. Each flag carries its environment variable (the "env"
// annotation) and its scope ("core" or "aws"), which the generated
// docs/settings.md lists.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	r := registrar{o: o, fs: fs}
	// Karpenter's core settings.
	r.str(&o.KarpenterService, "karpenter-service", "KARPENTER_SERVICE", "", "Accepted for compatibility; no effect: Karpenter names its webhook Service with it, and joiner serves no webhook (its APIs are v1 only, validated by CEL in the CRDs)")
	r.int(&o.MetricsPort, "metrics-port", "METRICS_PORT", 8080, "Port of the Prometheus /metrics endpoint; 0 disables it")
	r.int(&o.HealthProbePort, "health-probe-port", "HEALTH_PROBE_PORT", 8081, "Port of /healthz and /readyz; 0 disables them")
	r.int(&o.KubeClientQPS, "kube-client-qps", "KUBE_CLIENT_QPS", 200, "Queries per second to the API server")
	r.int(&o.KubeClientBurst, "kube-client-burst", "KUBE_CLIENT_BURST", 300, "Burst of queries to the API server")
	r.bool(&o.EnableProfiling, "enable-profiling", "ENABLE_PROFILING", false, "Serve Go's pprof handlers under /debug/pprof/ on the metrics port")
	r.bool(&o.DisableControllerWarmup, "disable-controller-warmup", "DISABLE_CONTROLLER_WARMUP", true, "Do not start the controllers' informers before this replica is elected leader (false warms them up on standby replicas, for a faster takeover)")
	r.bool(&o.DisableLeaderElection, "disable-leader-election", "DISABLE_LEADER_ELECTION", false, "Run without leader election (only safe with a single replica)")
	r.bool(&o.DisableClusterStateObservability, "disable-cluster-state-observability", "DISABLE_CLUSTER_STATE_OBSERVABILITY", false, "Do not publish the cluster state gauges (karpenter_nodes_*, karpenter_pods_state, karpenter_nodepools_usage, ...), which cost a pass over every node and pod every 5s")
	r.str(&o.LeaderElectionName, "leader-election-name", "LEADER_ELECTION_NAME", "karpenter-leader-election", "Name of the leader election Lease: Karpenter's, so Karpenter and joiner in one namespace never act on a cluster at the same time")
	r.str(&o.LeaderElectionNamespace, "leader-election-namespace", "LEADER_ELECTION_NAMESPACE", "", "Namespace of the leader election Lease; empty means the namespace joiner runs in (kube-system outside a cluster)")
	r.int64(&o.MemoryLimit, "memory-limit", "MEMORY_LIMIT", -1, "Memory limit of the container in bytes; when positive, the Go GC soft limit (GOMEMLIMIT) is set to 90% of it")
	r.int(&o.CPURequests, "cpu-requests", "CPU_REQUESTS", 1000, "CPU requests of the container in millicores; controllers without a fixed concurrency run one worker per core requested")
	r.str(&o.LogLevel, "log-level", "LOG_LEVEL", "info", "Log level: debug, info or error")
	r.str(&o.LogOutputPaths, "log-output-paths", "LOG_OUTPUT_PATHS", "stdout", "Comma-separated paths logs are written to (stdout, stderr or files)")
	r.str(&o.LogErrorOutputPaths, "log-error-output-paths", "LOG_ERROR_OUTPUT_PATHS", "stderr", "Comma-separated paths the logger's own errors are written to")
	r.duration(&o.BatchMaxDuration, "batch-max-duration", "BATCH_MAX_DURATION", 10*time.Second, "A provisioning batch never stays open longer than this")
	r.duration(&o.BatchIdleDuration, "batch-idle-duration", "BATCH_IDLE_DURATION", time.Second, "A provisioning batch closes after this long without a new pending pod")
	r.str(&o.PreferencePolicy, "preference-policy", "PREFERENCE_POLICY", PreferencePolicyRespect, "Respect: preferred affinities and ScheduleAnyway spreads are honoured, relaxed one at a time when they cannot be; Ignore: they are dropped before simulating")
	r.str(&o.MinValuesPolicy, "min-values-policy", "MIN_VALUES_POLICY", MinValuesPolicyStrict, "Strict: a pod whose NodePool's minValues cannot be met stays pending; BestEffort: minValues is lowered to what the instance types offer, and the NodeClaim says so (karpenter.sh/nodeclaim-min-values-relaxed)")
	r.bool(&o.IgnoreDRARequests, "ignore-dra-requests", "IGNORE_DRA_REQUESTS", true, "Leave pods with Dynamic Resource Allocation claims unprovisioned, as Karpenter does by default; false plans nodes whose devices meet the claims (docs/dra.md)")
	r.str(&o.FeatureGatesFlag, "feature-gates", "FEATURE_GATES", "", "Optional features: SpotToSpotConsolidation, NodeRepair, StaticCapacity, NodeOverlay, CapacityBuffer (each =true|false, false by default), ReservedCapacity (true by default; capacity reservations of EC2NodeClasses), comma separated")
	r.str(&o.SchedulerConfig, "scheduler-config", "SCHEDULER_CONFIG", "", "kube-scheduler's configuration: its default topology spread, planned for pods without constraints of their own, and its resource scoring (NodeResourcesFit's scoringStrategy, NodeResourcesBalancedAllocation), with which consolidation replays where kube-scheduler puts the pods a command evicts; a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1; each profile's PodTopologySpread defaultConstraints, defaultingType List or System) or Karpenter's podTopologySpread document, inline or as a file path")
	// Karpenter's AWS settings.
	r.aws().str(&o.ClusterName, "cluster-name", "CLUSTER_NAME", "joiner", "Cluster identity stamped on every instance joiner launches (with the cluster's kube-system UID); garbage collection only touches instances carrying it")
	r.aws().str(&o.ClusterEndpoint, "cluster-endpoint", "CLUSTER_ENDPOINT", "", "API server URL nodes join; empty asks EKS DescribeCluster")
	r.aws().str(&o.ClusterCIDR, "cluster-cidr", "CLUSTER_CIDR", "", "Service CIDR of the cluster (IPv4, or IPv6 for an IPv6 cluster), which AL2023 nodes' nodeadm requires; empty asks EKS DescribeCluster, and start-up fails when neither gives it")
	r.aws().str(&o.ClusterCABundle, "cluster-ca-bundle", "CLUSTER_CA_BUNDLE", "", "Base64 PEM CA bundle nodes trust; empty uses EKS's or joiner's own")
	r.aws().bool(&o.IsolatedVPC, "isolated-vpc", "ISOLATED_VPC", false, "The VPC has no route to the Pricing API; use the built-in prices")
	r.aws().bool(&o.EKSControlPlane, "eks-control-plane", "EKS_CONTROL_PLANE", false, "Karpenter run by EKS itself (EKS Auto Mode); joiner never is, so only false is accepted")
	r.aws().float(&o.VMMemoryOverheadPercent, "vm-memory-overhead-percent", "VM_MEMORY_OVERHEAD_PERCENT", 0.075, "Share of each instance type's memory the hypervisor keeps")
	r.aws().str(&o.InterruptionQueue, "interruption-queue", "INTERRUPTION_QUEUE", "", "SQS queue of EC2 interruption events (spot interruption, rebalance, scheduled change, state change); empty disables interruption handling")
	r.aws().int(&o.ReservedENIs, "reserved-enis", "RESERVED_ENIS", 0, "Network interfaces kept out of the pod density computation")
	r.aws().bool(&o.DisableDryRun, "disable-dry-run", "DISABLE_DRY_RUN", false, "Accepted for compatibility; no effect: Karpenter's startup and EC2NodeClass dry-run authorization checks are not done by joiner, whose missing permissions surface as the NodeClaim's Launched condition and an event")
	r.aws().bool(&o.EnableZonalShift, "enable-zonal-shift", "ENABLE_ZONAL_SHIFT", false, "Avoid zones under an ARC zonal shift; joiner does not watch zonal shifts yet, so only false is accepted")
	r.aws().duration(&o.AMIRefreshInterval, "ami-refresh-interval", "AMI_REFRESH_INTERVAL", time.Minute, "How often a Ready EC2NodeClass's AMIs are resolved again (at least 1m; joiner resolves AMIs, subnets and security groups together, at the shorter interval)")
	r.aws().duration(&o.SubnetRefreshInterval, "subnet-refresh-interval", "SUBNET_REFRESH_INTERVAL", time.Minute, "How often a Ready EC2NodeClass's subnets are resolved again (at least 1m)")
	r.aws().str(&o.AWSFeatureGatesFlag, "aws-feature-gates", "AWS_FEATURE_GATES", "", "AWS provider features: NodeClassCEL (accepted only as false: joiner does not evaluate CEL in kubelet settings)")
	// joiner's own settings.
	r.joiner().str(&o.CloudProvider, "cloud-provider", "CLOUD_PROVIDER", CloudProviderSim, "Cloud provider: sim (the embedded simulated cloud) or aws")
	r.joiner().str(&o.SimStorePath, "sim-store", "SIM_STORE", "", "Where the simulated cloud keeps its instances across restarts")
	// A test setting (hidden): the chaos suite's cloud faults.
	fs.StringVar(&o.SimCallFaults, "sim-call-faults", os.Getenv("SIM_CALL_FAULTS"), "sim: make cloud calls fail at seeded rates, e.g. seed=7,throttle=0.1,5xx=0.05,capacity=0.1,slow=0.2,slow-for=2s,ghost=0.1 [SIM_CALL_FAULTS]")
	r.joiner().duration(&o.RegistrationTTL, "registration-ttl", "REGISTRATION_TTL", 15*time.Minute, "A launched NodeClaim whose Node has not registered after this long is deleted (Karpenter's is a fixed 15m)")
	r.joiner().duration(&o.LaunchBackoffMax, "launch-backoff-max", "LAUNCH_BACKOFF_MAX", time.Hour, "Longest wait before launching again a node class, or an instance type and image, whose NodeClaims failed to register or initialise; the wait doubles from the TTL with each consecutive failure")
	r.joiner().duration(&o.InitializationTTL, "initialization-ttl", "INITIALIZATION_TTL", 15*time.Minute, "A registered NodeClaim not initialized after this long is deleted, naming the check that failed")
	r.joiner().duration(&o.UnavailableOfferingsTTL, "unavailable-offerings-ttl", "UNAVAILABLE_OFFERINGS_TTL", 3*time.Minute, "An offering (instance type, zone, capacity type) that failed to launch for lack of capacity is skipped this long before it is tried again (Karpenter's is a fixed 3m)")
	r.joiner().float(&o.ConsolidationMinSavings, "consolidation-min-savings", "CONSOLIDATION_MIN_SAVINGS", 0.05, "Least share of the replaced nodes' price a consolidation replacement must save, between 0 and 1")
	r.joiner().str(&o.PriceModel, "price-model", "PRICE_MODEL", PriceModelBilled, "Billed: a node costs what EC2 bills for it, its offering's price plus a burstable type's surplus CPU credits for the CPU its pods request above the baseline (T3, T3a, T4g run in unlimited mode) plus its EBS volumes; List: its offering's price alone, as Karpenter counts it")
	r.joiner().str(&o.SSMParameterRoot, "ssm-parameter-root", "SSM_PARAMETER_ROOT", "/aws/service", "aws: root of the public SSM parameters behind AMI aliases (a local endpoint reserves /aws/)")
	fs.DurationVar(&o.GCInterval, "gc-interval", 0, "How often orphan instances are looked for (0: the default)")
	fs.DurationVar(&o.GCGracePeriod, "gc-grace-period", 0, "How old an instance without a NodeClaim must be before it is terminated (0: the default)")
	fs.DurationVar(&o.DisruptionPollInterval, "disruption-poll-interval", 0, "Time between two disruption decisions (0: the default, 10s)")
	fs.DurationVar(&o.DisruptionValidationPeriod, "disruption-validation-period", 0, "How long emptiness and consolidation commands wait before they are re-checked (0: the default, 15s)")
	r.joiner().bool(&o.StatusPage, "status-page", "STATUS_PAGE", false, "Serve a read-only status page (nodes filled by their pods' requests, cost per hour over time, pending pods and their verdicts)")
	r.joiner().str(&o.StatusPageAddress, "status-page-address", "STATUS_PAGE_ADDRESS", "127.0.0.1:8082", "host:port of the status page; it has no authentication and names pods, nodes and prices, so keep it on loopback unless the network is trusted")
	_ = fs.MarkHidden("sim-call-faults")
	_ = fs.MarkHidden("gc-interval")
	_ = fs.MarkHidden("gc-grace-period")
	_ = fs.MarkHidden("disruption-poll-interval")
	_ = fs.MarkHidden("disruption-validation-period")
}

// Default returns the options as they are with no flag and no environment.
func Default() *Options {
	o := &Options{}
	fs := pflag.NewFlagSet("defaults", pflag.ContinueOnError)
	o.AddFlags(fs)
	// The gates' defaults (ReservedCapacity is on), as Validate parses them.
	o.FeatureGates, _ = parseFeatureGates(o.FeatureGatesFlag)
	return o
}

// Validate reports every invalid option at once.
func (o *Options) Validate() error {
	errs := append([]error(nil), o.envErrs...)
	if o.ClusterName == "" {
		errs = append(errs, errors.New("cluster-name must not be empty"))
	}
	switch o.CloudProvider {
	case CloudProviderSim, CloudProviderAWS:
	default:
		errs = append(errs, fmt.Errorf("cloud-provider %q is not one of sim, aws", o.CloudProvider))
	}
	if o.BatchIdleDuration <= 0 {
		errs = append(errs, fmt.Errorf("batch-idle-duration %s must be positive", o.BatchIdleDuration))
	}
	if o.BatchMaxDuration < o.BatchIdleDuration {
		errs = append(errs, fmt.Errorf("batch-max-duration %s must not be shorter than batch-idle-duration %s", o.BatchMaxDuration, o.BatchIdleDuration))
	}
	if o.RegistrationTTL <= 0 {
		errs = append(errs, fmt.Errorf("registration-ttl %s must be positive", o.RegistrationTTL))
	}
	if o.LaunchBackoffMax <= 0 {
		errs = append(errs, fmt.Errorf("launch-backoff-max %s must be positive", o.LaunchBackoffMax))
	}
	if o.InitializationTTL <= 0 {
		errs = append(errs, fmt.Errorf("initialization-ttl %s must be positive", o.InitializationTTL))
	}
	if o.UnavailableOfferingsTTL <= 0 {
		errs = append(errs, fmt.Errorf("unavailable-offerings-ttl %s must be positive", o.UnavailableOfferingsTTL))
	}
	if o.GCInterval < 0 || o.GCGracePeriod < 0 {
		errs = append(errs, errors.New("gc-interval and gc-grace-period must not be negative"))
	}
	if gates, err := parseFeatureGates(o.FeatureGatesFlag); err != nil {
		errs = append(errs, err)
	} else {
		o.FeatureGates = gates
	}
	if o.ConsolidationMinSavings < 0 || o.ConsolidationMinSavings >= 1 {
		errs = append(errs, fmt.Errorf("consolidation-min-savings %g must be at least 0 and below 1 (0.05 asks a replacement to save 5%%)", o.ConsolidationMinSavings))
	}
	if o.DisruptionPollInterval < 0 || o.DisruptionValidationPeriod < 0 {
		errs = append(errs, errors.New("disruption-poll-interval and disruption-validation-period must not be negative"))
	}
	for name, port := range map[string]int{"metrics-port": o.MetricsPort, "health-probe-port": o.HealthProbePort} {
		if port < 0 || port > 65535 {
			errs = append(errs, fmt.Errorf("%s %d is not a port", name, port))
		}
	}
	if !o.DisableLeaderElection && o.LeaderElectionName == "" {
		errs = append(errs, errors.New("leader-election-name must not be empty (Karpenter's is karpenter-leader-election)"))
	}
	if o.KubeClientQPS <= 0 || o.KubeClientBurst <= 0 {
		errs = append(errs, fmt.Errorf("kube-client-qps %d and kube-client-burst %d must be positive", o.KubeClientQPS, o.KubeClientBurst))
	}
	if o.CPURequests <= 0 {
		errs = append(errs, fmt.Errorf("cpu-requests %d must be a positive number of millicores", o.CPURequests))
	}
	if o.MemoryLimit == 0 || o.MemoryLimit < -1 {
		errs = append(errs, fmt.Errorf("memory-limit %d must be a positive number of bytes, or -1 for none", o.MemoryLimit))
	}
	if o.LogOutputPaths == "" || o.LogErrorOutputPaths == "" {
		errs = append(errs, errors.New("log-output-paths and log-error-output-paths must not be empty (stdout, stderr or file paths)"))
	}
	switch o.PreferencePolicy {
	case PreferencePolicyRespect, PreferencePolicyIgnore:
	default:
		errs = append(errs, fmt.Errorf("preference-policy %q is not one of Respect, Ignore", o.PreferencePolicy))
	}
	switch o.PriceModel {
	case PriceModelBilled, PriceModelList:
	default:
		errs = append(errs, fmt.Errorf("price-model %q is not one of Billed, List", o.PriceModel))
	}
	switch o.MinValuesPolicy {
	case MinValuesPolicyStrict, MinValuesPolicyBestEffort:
	default:
		errs = append(errs, fmt.Errorf("min-values-policy %q is not one of Strict, BestEffort", o.MinValuesPolicy))
	}
	if spread, err := schedulerconfig.Load(o.SchedulerConfig); err != nil {
		errs = append(errs, err)
	} else if scoring, err := schedulerconfig.LoadScoring(o.SchedulerConfig); err != nil {
		errs = append(errs, err)
	} else {
		o.DefaultSpread, o.Scoring = spread, scoring
	}
	if o.EKSControlPlane {
		errs = append(errs, errors.New("eks-control-plane=true: that mode is EKS's own Karpenter (Auto Mode); joiner runs in the cluster, set it to false"))
	}
	if o.EnableZonalShift {
		errs = append(errs, errors.New("enable-zonal-shift=true: joiner does not watch ARC zonal shifts yet; set it to false"))
	}
	for name, d := range map[string]time.Duration{"ami-refresh-interval": o.AMIRefreshInterval, "subnet-refresh-interval": o.SubnetRefreshInterval} {
		if d < time.Minute {
			errs = append(errs, fmt.Errorf("%s %s must be at least 1m", name, d))
		}
	}
	if err := parseAWSFeatureGates(o.AWSFeatureGatesFlag); err != nil {
		errs = append(errs, err)
	}
	if o.StatusPage && o.StatusPageListener == nil {
		if _, port, err := net.SplitHostPort(o.StatusPageAddress); err != nil {
			errs = append(errs, fmt.Errorf("status-page-address %q is not host:port, such as 127.0.0.1:8082", o.StatusPageAddress))
		} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			errs = append(errs, fmt.Errorf("status-page-address %q: %q is not a port", o.StatusPageAddress, port))
		}
	}
	if o.VMMemoryOverheadPercent < 0 || o.VMMemoryOverheadPercent >= 1 {
		errs = append(errs, fmt.Errorf("vm-memory-overhead-percent %v must be in [0, 1)", o.VMMemoryOverheadPercent))
	}
	if o.ReservedENIs < 0 {
		errs = append(errs, fmt.Errorf("reserved-enis %d must not be negative", o.ReservedENIs))
	}
	if o.ClusterEndpoint != "" {
		if u, err := url.Parse(o.ClusterEndpoint); err != nil || u.Scheme == "" || u.Host == "" {
			errs = append(errs, fmt.Errorf("cluster-endpoint %q is not a URL such as https://ABC.gr7.us-east-1.eks.amazonaws.com", o.ClusterEndpoint))
		}
	}
	if o.SSMParameterRoot == "" || o.SSMParameterRoot[0] != '/' {
		errs = append(errs, fmt.Errorf("ssm-parameter-root %q must be an absolute parameter path such as /aws/service", o.SSMParameterRoot))
	}
	switch o.LogLevel {
	case "debug", "info", "error":
	default:
		errs = append(errs, fmt.Errorf("log-level %q is not one of debug, info, error", o.LogLevel))
	}
	return errors.Join(errs...)
}

// ScaledWorkers is a controller's worker count for CPURequests, scaled as
// Karpenter scales its busiest controllers: least at one core or less, most
// at 60 cores or more, linear between (cores counted up to whole ones).
func (o *Options) ScaledWorkers(least, most int) int {
	cores := (o.CPURequests + 999) / 1000
	n := least + int(float64(most-least)/59*float64(cores-1))
	return min(max(n, least), most)
}
