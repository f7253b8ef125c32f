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
)

// Cloud providers joiner can run with.
const (
	CloudProviderSim = "sim"
	CloudProviderAWS = "aws"
)

// Options are the operator's settings.
type Options struct {
	// ClusterName is the cluster identity stamped on every instance joiner
	// launches; garbage collection only ever touches instances carrying it.
	ClusterName string
	// CloudProvider is "sim" (the embedded simulated cloud) or "aws".
	CloudProvider string
	// SimStorePath is where the simulated cloud keeps its instances so they
	// survive a controller restart ("" lets the cloud pick its default).
	SimStorePath string

	BatchIdleDuration time.Duration
	BatchMaxDuration  time.Duration
	// RegistrationTTL is how long a launched NodeClaim may wait for its Node
	// before it is deleted with an explanatory event.
	RegistrationTTL time.Duration
	// InitializationTTL is how long a registered NodeClaim may wait to be
	// initialized (Ready, startup taints gone, extended resources
	// registered) before it is deleted with an explanatory event.
	InitializationTTL time.Duration

	MetricsPort     int
	HealthProbePort int

	DisableLeaderElection   bool
	LeaderElectionName      string
	LeaderElectionNamespace string

	KubeClientQPS   int
	KubeClientBurst int

	// LogLevel is debug, info or error.
	LogLevel string

	// AWS provider settings, named as Karpenter's.
	//
	// ClusterEndpoint is the API server URL nodes join; empty asks EKS
	// DescribeCluster.
	ClusterEndpoint string
	// ClusterCABundle is the base64 PEM CA nodes trust; empty uses EKS's,
	// else joiner's own.
	ClusterCABundle string
	// IsolatedVPC skips the Pricing API (no route to it).
	IsolatedVPC bool
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
// environment.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ClusterName, "cluster-name", env("CLUSTER_NAME", "joiner"), "Cluster identity stamped on every instance joiner launches; garbage collection only touches instances carrying it [CLUSTER_NAME]")
	fs.StringVar(&o.CloudProvider, "cloud-provider", env("CLOUD_PROVIDER", CloudProviderSim), "Cloud provider: sim (the embedded simulated cloud) or aws [CLOUD_PROVIDER]")
	fs.StringVar(&o.SimStorePath, "sim-store", env("SIM_STORE", ""), "Where the simulated cloud keeps its instances across restarts [SIM_STORE]")
	fs.DurationVar(&o.BatchIdleDuration, "batch-idle-duration", o.envDuration("BATCH_IDLE_DURATION", time.Second), "A provisioning batch closes after this long without a new pending pod [BATCH_IDLE_DURATION]")
	fs.DurationVar(&o.BatchMaxDuration, "batch-max-duration", o.envDuration("BATCH_MAX_DURATION", 10*time.Second), "A provisioning batch never stays open longer than this [BATCH_MAX_DURATION]")
	fs.DurationVar(&o.RegistrationTTL, "registration-ttl", o.envDuration("REGISTRATION_TTL", 15*time.Minute), "A launched NodeClaim whose Node has not registered after this long is deleted [REGISTRATION_TTL]")
	fs.DurationVar(&o.InitializationTTL, "initialization-ttl", o.envDuration("INITIALIZATION_TTL", 15*time.Minute), "A registered NodeClaim not initialized after this long is deleted, naming the check that failed [INITIALIZATION_TTL]")
	fs.IntVar(&o.MetricsPort, "metrics-port", o.envInt("METRICS_PORT", 8080), "Port of the Prometheus /metrics endpoint; 0 disables it [METRICS_PORT]")
	fs.IntVar(&o.HealthProbePort, "health-probe-port", o.envInt("HEALTH_PROBE_PORT", 8081), "Port of /healthz and /readyz; 0 disables them [HEALTH_PROBE_PORT]")
	fs.BoolVar(&o.DisableLeaderElection, "disable-leader-election", o.envBool("DISABLE_LEADER_ELECTION", false), "Run without leader election (only safe with a single replica) [DISABLE_LEADER_ELECTION]")
	fs.StringVar(&o.LeaderElectionName, "leader-election-name", env("LEADER_ELECTION_NAME", "joiner-leader-election"), "Name of the leader election Lease [LEADER_ELECTION_NAME]")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", env("LEADER_ELECTION_NAMESPACE", "kube-system"), "Namespace of the leader election Lease [LEADER_ELECTION_NAMESPACE]")
	fs.IntVar(&o.KubeClientQPS, "kube-client-qps", o.envInt("KUBE_CLIENT_QPS", 200), "Queries per second to the API server [KUBE_CLIENT_QPS]")
	fs.IntVar(&o.KubeClientBurst, "kube-client-burst", o.envInt("KUBE_CLIENT_BURST", 300), "Burst of queries to the API server [KUBE_CLIENT_BURST]")
	fs.StringVar(&o.LogLevel, "log-level", env("LOG_LEVEL", "info"), "Log level: debug, info or error [LOG_LEVEL]")
	fs.StringVar(&o.ClusterEndpoint, "cluster-endpoint", env("CLUSTER_ENDPOINT", ""), "aws: API server URL nodes join; empty asks EKS DescribeCluster [CLUSTER_ENDPOINT]")
	fs.StringVar(&o.ClusterCABundle, "cluster-ca-bundle", env("CLUSTER_CA_BUNDLE", ""), "aws: base64 PEM CA bundle nodes trust; empty uses EKS's or joiner's own [CLUSTER_CA_BUNDLE]")
	fs.BoolVar(&o.IsolatedVPC, "isolated-vpc", o.envBool("ISOLATED_VPC", false), "aws: the VPC has no route to the Pricing API; use the built-in prices [ISOLATED_VPC]")
	fs.Float64Var(&o.VMMemoryOverheadPercent, "vm-memory-overhead-percent", o.envFloat("VM_MEMORY_OVERHEAD_PERCENT", 0.075), "aws: share of each instance type's memory the hypervisor keeps [VM_MEMORY_OVERHEAD_PERCENT]")
	fs.IntVar(&o.ReservedENIs, "reserved-enis", o.envInt("RESERVED_ENIS", 0), "aws: network interfaces kept out of the pod density computation [RESERVED_ENIS]")
	fs.StringVar(&o.SSMParameterRoot, "ssm-parameter-root", env("SSM_PARAMETER_ROOT", "/aws/service"), "aws: root of the public SSM parameters behind AMI aliases [SSM_PARAMETER_ROOT]")
	fs.StringVar(&o.InterruptionQueue, "interruption-queue", env("INTERRUPTION_QUEUE", ""), "aws: SQS queue of EC2 interruption events (spot interruption, rebalance, scheduled change, state change); empty disables interruption handling [INTERRUPTION_QUEUE]")
	fs.DurationVar(&o.GCInterval, "gc-interval", 0, "How often orphan instances are looked for (0: the default)")
	fs.DurationVar(&o.GCGracePeriod, "gc-grace-period", 0, "How old an instance without a NodeClaim must be before it is terminated (0: the default)")
	fs.StringVar(&o.FeatureGatesFlag, "feature-gates", env("FEATURE_GATES", ""), "Optional features: SpotToSpotConsolidation=true|false, NodeRepair=true|false (ReservedCapacity accepted; NodeOverlay, StaticCapacity, CapacityBuffer, NodeClassCEL only as false), comma separated [FEATURE_GATES]")
	fs.Float64Var(&o.ConsolidationMinSavings, "consolidation-min-savings", o.envFloat("CONSOLIDATION_MIN_SAVINGS", 0.05), "Least share of the replaced nodes' price a consolidation replacement must save, between 0 and 1 [CONSOLIDATION_MIN_SAVINGS]")
	fs.DurationVar(&o.DisruptionPollInterval, "disruption-poll-interval", 0, "Time between two disruption decisions (0: the default, 10s)")
	fs.DurationVar(&o.DisruptionValidationPeriod, "disruption-validation-period", 0, "How long emptiness and consolidation commands wait before they are re-checked (0: the default, 15s)")
	fs.BoolVar(&o.StatusPage, "status-page", o.envBool("STATUS_PAGE", false), "Serve a read-only status page (nodes filled by their pods' requests, cost per hour over time, pending pods and their verdicts) [STATUS_PAGE]")
	fs.StringVar(&o.StatusPageAddress, "status-page-address", env("STATUS_PAGE_ADDRESS", "127.0.0.1:8082"), "host:port of the status page; it has no authentication and names pods, nodes and prices, so keep it on loopback unless the network is trusted [STATUS_PAGE_ADDRESS]")
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
	if o.InitializationTTL <= 0 {
		errs = append(errs, fmt.Errorf("initialization-ttl %s must be positive", o.InitializationTTL))
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
	if o.StatusPage && o.StatusPageListener == nil {
		if _, port, err := net.SplitHostPort(o.StatusPageAddress); err != nil {
			errs = append(errs, fmt.Errorf("status-page-address %q is not host:port, such as 127.0.0.1:8082", o.StatusPageAddress))
		} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			errs = append(errs, fmt.Errorf("status-page-address %q: %q is not a port", o.StatusPageAddress, port))
		}
	}
	if !o.DisableLeaderElection && (o.LeaderElectionName == "" || o.LeaderElectionNamespace == "") {
		errs = append(errs, errors.New("leader election needs a leader-election-name and a leader-election-namespace"))
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

func env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

// The typed env readers fall back to the default on a malformed value and
// remember the mistake for Validate, so a typo in a chart is an error at
// start, not a silently ignored setting.
func (o *Options) envDuration(key string, def time.Duration) time.Duration {
	v, ok := os.LookupEnv(key)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		o.envErrs = append(o.envErrs, fmt.Errorf("environment variable %s=%q is not a duration", key, v))
		return def
	}
	return d
}

func (o *Options) envInt(key string, def int) int {
	v, ok := os.LookupEnv(key)
	if !ok {
		return def
	}
	i, err := strconv.Atoi(v)
	if err != nil {
		o.envErrs = append(o.envErrs, fmt.Errorf("environment variable %s=%q is not an integer", key, v))
		return def
	}
	return i
}

func (o *Options) envFloat(key string, def float64) float64 {
	v, ok := os.LookupEnv(key)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		o.envErrs = append(o.envErrs, fmt.Errorf("environment variable %s=%q is not a number", key, v))
		return def
	}
	return f
}

func (o *Options) envBool(key string, def bool) bool {
	v, ok := os.LookupEnv(key)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		o.envErrs = append(o.envErrs, fmt.Errorf("environment variable %s=%q is not a boolean", key, v))
		return def
	}
	return b
}
