package options

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestOptions(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		check   func(*Options) bool
		wantErr string
	}{
		{name: "defaults are valid", check: func(o *Options) bool {
			return o.BatchIdleDuration == time.Second && o.BatchMaxDuration == 10*time.Second &&
				o.RegistrationTTL == 15*time.Minute && !o.DisableLeaderElection && o.CloudProvider == CloudProviderSim
		}},
		{name: "env sets the default", env: map[string]string{"BATCH_IDLE_DURATION": "2s"}, check: func(o *Options) bool { return o.BatchIdleDuration == 2*time.Second }},
		{name: "flag beats env", env: map[string]string{"BATCH_IDLE_DURATION": "2s"}, args: []string{"--batch-idle-duration=3s"}, check: func(o *Options) bool { return o.BatchIdleDuration == 3*time.Second }},
		{name: "malformed env is an error", env: map[string]string{"METRICS_PORT": "http"}, wantErr: `METRICS_PORT="http" is not an integer`},
		{name: "max shorter than idle", args: []string{"--batch-max-duration=500ms"}, wantErr: "must not be shorter"},
		{name: "unknown cloud", args: []string{"--cloud-provider=gcp"}, wantErr: `cloud-provider "gcp"`},
		{name: "unknown log level", args: []string{"--log-level=warn"}, wantErr: `log-level "warn"`},
		{name: "feature gates default off", check: func(o *Options) bool {
			return !o.FeatureGates.SpotToSpotConsolidation && !o.FeatureGates.NodeRepair && o.ConsolidationMinSavings == 0.05 && o.InitializationTTL == 15*time.Minute
		}},
		{name: "feature gates from env", env: map[string]string{"FEATURE_GATES": "SpotToSpotConsolidation=true"}, check: func(o *Options) bool {
			return o.FeatureGates.SpotToSpotConsolidation && !o.FeatureGates.NodeRepair
		}},
		{name: "unknown feature gate", args: []string{"--feature-gates=Drift=true"}, wantErr: "unrecognized feature gate: Drift"},
		{name: "min savings out of range", env: map[string]string{"CONSOLIDATION_MIN_SAVINGS": "1.5"}, wantErr: "consolidation-min-savings 1.5"},
		{name: "node repair from env", env: map[string]string{"FEATURE_GATES": "NodeRepair=true,SpotToSpotConsolidation=false"},
			check: func(o *Options) bool { return o.FeatureGates.NodeRepair && !o.FeatureGates.SpotToSpotConsolidation }},
		{name: "karpenter chart's default feature gates", env: map[string]string{"FEATURE_GATES": "SpotToSpotConsolidation=false,NodeRepair=false,ReservedCapacity=true,NodeOverlay=false,StaticCapacity=false"},
			check: func(o *Options) bool { return !o.FeatureGates.NodeRepair && !o.FeatureGates.SpotToSpotConsolidation }},
		{name: "karpenter's alpha API gates", args: []string{"--feature-gates=NodeOverlay=true,StaticCapacity=true,CapacityBuffer=false"},
			check: func(o *Options) bool {
				return o.FeatureGates.NodeOverlay && o.FeatureGates.StaticCapacity && !o.FeatureGates.NodeRepair
			}},
		{name: "karpenter's alpha API gates off by default", args: nil,
			check: func(o *Options) bool {
				return !o.FeatureGates.NodeOverlay && !o.FeatureGates.StaticCapacity && !o.FeatureGates.CapacityBuffer
			}},
		{name: "CapacityBuffer", args: []string{"--feature-gates=CapacityBuffer=true"}, check: func(o *Options) bool { return o.FeatureGates.CapacityBuffer }},
		{name: "karpenter gate joiner lacks, enabled", args: []string{"--feature-gates=NodeClassCEL=true"}, wantErr: "joiner does not implement Karpenter's NodeClassCEL yet"},
		{name: "unknown feature gate names it", env: map[string]string{"FEATURE_GATES": "NodeRepair=true,Teleport=true"}, wantErr: "unrecognized feature gate: Teleport"},
		{name: "initialization ttl from env", env: map[string]string{"INITIALIZATION_TTL": "2m"}, check: func(o *Options) bool { return o.InitializationTTL == 2*time.Minute }},
		{name: "initialization ttl not positive", args: []string{"--initialization-ttl=0s"}, wantErr: "initialization-ttl 0s must be positive"},
		{name: "unavailable offerings ttl is Karpenter's 3m", check: func(o *Options) bool { return o.UnavailableOfferingsTTL == 3*time.Minute }},
		{name: "unavailable offerings ttl from env", env: map[string]string{"UNAVAILABLE_OFFERINGS_TTL": "30s"}, check: func(o *Options) bool { return o.UnavailableOfferingsTTL == 30*time.Second }},
		{name: "unavailable offerings ttl not positive", args: []string{"--unavailable-offerings-ttl=0s"}, wantErr: "unavailable-offerings-ttl 0s must be positive"},
		{name: "aws defaults are Karpenter's", check: func(o *Options) bool {
			return o.VMMemoryOverheadPercent == 0.075 && o.ReservedENIs == 0 && !o.IsolatedVPC && o.SSMParameterRoot == "/aws/service" && o.ClusterEndpoint == ""
		}},
		{name: "aws settings from env", env: map[string]string{"VM_MEMORY_OVERHEAD_PERCENT": "0.1", "RESERVED_ENIS": "1", "ISOLATED_VPC": "true", "CLUSTER_ENDPOINT": "https://example.eks.amazonaws.com", "SSM_PARAMETER_ROOT": "/joiner-local/service"},
			check: func(o *Options) bool {
				return o.VMMemoryOverheadPercent == 0.1 && o.ReservedENIs == 1 && o.IsolatedVPC && o.ClusterEndpoint == "https://example.eks.amazonaws.com" && o.SSMParameterRoot == "/joiner-local/service"
			}},
		{name: "overhead out of range", args: []string{"--vm-memory-overhead-percent=1.5"}, wantErr: "vm-memory-overhead-percent 1.5 must be in [0, 1)"},
		{name: "malformed overhead env", env: map[string]string{"VM_MEMORY_OVERHEAD_PERCENT": "lots"}, wantErr: `VM_MEMORY_OVERHEAD_PERCENT="lots" is not a number`},
		{name: "negative reserved ENIs", args: []string{"--reserved-enis=-1"}, wantErr: "reserved-enis -1 must not be negative"},
		{name: "endpoint not a URL", args: []string{"--cluster-endpoint=eks-cluster"}, wantErr: `cluster-endpoint "eks-cluster" is not a URL`},
		{name: "karpenter's core defaults", check: func(o *Options) bool {
			return o.LeaderElectionName == "karpenter-leader-election" && o.LeaderElectionNamespace == "" &&
				o.MetricsPort == 8080 && o.HealthProbePort == 8081 && o.KubeClientQPS == 200 && o.KubeClientBurst == 300 &&
				!o.EnableProfiling && o.DisableControllerWarmup && !o.DisableClusterStateObservability &&
				o.MemoryLimit == -1 && o.CPURequests == 1000 && o.LogLevel == "info" &&
				o.LogOutputPaths == "stdout" && o.LogErrorOutputPaths == "stderr" &&
				o.PreferencePolicy == PreferencePolicyRespect && o.MinValuesPolicy == MinValuesPolicyStrict &&
				o.IgnoreDRARequests && o.SchedulerConfig == "" && o.KarpenterService == ""
		}},
		{name: "karpenter's aws defaults", check: func(o *Options) bool {
			return !o.EKSControlPlane && !o.DisableDryRun && !o.EnableZonalShift &&
				o.AMIRefreshInterval == time.Minute && o.SubnetRefreshInterval == time.Minute && o.InterruptionQueue == ""
		}},
		{name: "policies from env", env: map[string]string{"PREFERENCE_POLICY": "Ignore", "MIN_VALUES_POLICY": "BestEffort"}, check: func(o *Options) bool {
			return o.PreferencePolicy == PreferencePolicyIgnore && o.MinValuesPolicy == MinValuesPolicyBestEffort
		}},
		{name: "karpenter chart's env is accepted", env: map[string]string{
			"KARPENTER_SERVICE": "karpenter", "MEMORY_LIMIT": "1073741824", "CPU_REQUESTS": "1000", "ENABLE_PROFILING": "false",
			"DISABLE_CLUSTER_STATE_OBSERVABILITY": "false", "IGNORE_DRA_REQUESTS": "true", "EKS_CONTROL_PLANE": "false",
			"DISABLE_DRY_RUN": "false", "ENABLE_ZONAL_SHIFT": "false", "AMI_REFRESH_INTERVAL": "1m", "SUBNET_REFRESH_INTERVAL": "5m",
			"AWS_FEATURE_GATES": "NodeClassCEL=false", "LOG_OUTPUT_PATHS": "stdout", "LOG_ERROR_OUTPUT_PATHS": "stderr",
		}, check: func(o *Options) bool { return o.MemoryLimit == 1<<30 && o.SubnetRefreshInterval == 5*time.Minute }},
		{name: "unknown preference policy", env: map[string]string{"PREFERENCE_POLICY": "respect"}, wantErr: `preference-policy "respect" is not one of Respect, Ignore`},
		{name: "unknown min values policy", args: []string{"--min-values-policy=Loose"}, wantErr: `min-values-policy "Loose" is not one of Strict, BestEffort`},
		{name: "malformed memory limit", env: map[string]string{"MEMORY_LIMIT": "1Gi"}, wantErr: `MEMORY_LIMIT="1Gi" is not an integer`},
		{name: "zero memory limit", args: []string{"--memory-limit=0"}, wantErr: "memory-limit 0 must be a positive number of bytes, or -1"},
		{name: "malformed cpu requests", env: map[string]string{"CPU_REQUESTS": "1.5"}, wantErr: `CPU_REQUESTS="1.5" is not an integer`},
		{name: "cpu requests not positive", args: []string{"--cpu-requests=0"}, wantErr: "cpu-requests 0 must be a positive"},
		{name: "malformed profiling", env: map[string]string{"ENABLE_PROFILING": "yes"}, wantErr: `ENABLE_PROFILING="yes" is not a boolean`},
		{name: "malformed batch duration", env: map[string]string{"BATCH_MAX_DURATION": "10"}, wantErr: `BATCH_MAX_DURATION="10" is not a duration`},
		{name: "qps not positive", env: map[string]string{"KUBE_CLIENT_QPS": "0"}, wantErr: "kube-client-qps 0"},
		{name: "empty lease name", env: map[string]string{"LEADER_ELECTION_NAME": ""}, wantErr: "leader-election-name must not be empty"},
		{name: "empty log output", args: []string{"--log-output-paths="}, wantErr: "log-output-paths and log-error-output-paths must not be empty"},
		{name: "scheduler config file missing", args: []string{"--scheduler-config=/nonexistent/sched.yaml"}, wantErr: "scheduler-config: reading /nonexistent/sched.yaml"},
		{name: "scheduler config inline", env: map[string]string{"SCHEDULER_CONFIG": "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}\n"},
			check: func(o *Options) bool { return len(o.DefaultSpread[""]) == 1 }},
		{name: "scheduler config refused as kube-scheduler refuses it", env: map[string]string{"SCHEDULER_CONFIG": "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultConstraints:\n      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}\n"},
			wantErr: "defaultConstraints must be empty when defaultingType is System"},
		{name: "eks control plane", env: map[string]string{"EKS_CONTROL_PLANE": "true"}, wantErr: "eks-control-plane=true"},
		{name: "zonal shift", env: map[string]string{"ENABLE_ZONAL_SHIFT": "true"}, wantErr: "enable-zonal-shift=true"},
		{name: "refresh interval under a minute", env: map[string]string{"AMI_REFRESH_INTERVAL": "30s"}, wantErr: "ami-refresh-interval 30s must be at least 1m"},
		{name: "aws gate enabled", env: map[string]string{"AWS_FEATURE_GATES": "NodeClassCEL=true"}, wantErr: "joiner does not implement NodeClassCEL"},
		{name: "unknown aws gate", args: []string{"--aws-feature-gates=Teleport=true"}, wantErr: "unrecognized feature gate: Teleport"},
		{name: "unknown flag", args: []string{"--batch-idle=1s"}, wantErr: "unknown flag: --batch-idle"},
		{name: "malformed flag", args: []string{"--kube-client-qps=fast"}, wantErr: `invalid argument "fast" for "--kube-client-qps"`},
		{name: "relative parameter root", args: []string{"--ssm-parameter-root=aws/service"}, wantErr: `ssm-parameter-root "aws/service" must be an absolute parameter path`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			o := &Options{}
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				if tt.wantErr != "" && strings.Contains(err.Error(), tt.wantErr) {
					return
				}
				t.Fatal(err)
			}
			err := o.Validate()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			if !tt.check(o) {
				t.Fatalf("unexpected options %+v", o)
			}
		})
	}
}

// TestScaledWorkers: Karpenter's linear scaling of worker counts with the
// container's CPU requests (1,000 to 5,000 for the NodeClaim lifecycle).
func TestScaledWorkers(t *testing.T) {
	for _, tc := range []struct {
		millicores int
		want       int
	}{
		{millicores: 500, want: 1000},
		{millicores: 1000, want: 1000},
		{millicores: 1500, want: 1067}, // counts as 2 cores
		{millicores: 15000, want: 1949},
		{millicores: 60000, want: 5000},
		{millicores: 100000, want: 5000},
	} {
		o := &Options{CPURequests: tc.millicores}
		if got := o.ScaledWorkers(1000, 5000); got != tc.want {
			t.Errorf("CPURequests %d: %d workers, want %d", tc.millicores, got, tc.want)
		}
	}
}
