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
		{name: "feature gates default", check: func(o *Options) bool {
			return !o.FeatureGates.NodeRepair && !o.FeatureGates.SpotToSpotConsolidation && o.FeatureGates.ReservedCapacity && o.InitializationTTL == 15*time.Minute
		}},
		{name: "feature gates from env", env: map[string]string{"FEATURE_GATES": "NodeRepair=true,SpotToSpotConsolidation=false,NodeOverlay=false"},
			check: func(o *Options) bool { return o.FeatureGates.NodeRepair && !o.FeatureGates.SpotToSpotConsolidation }},
		{name: "feature gates flag beats env", env: map[string]string{"FEATURE_GATES": "NodeRepair=true"}, args: []string{"--feature-gates=SpotToSpotConsolidation=true"},
			check: func(o *Options) bool { return o.FeatureGates.NodeRepair && o.FeatureGates.SpotToSpotConsolidation }},
		{name: "unknown feature gate in env", env: map[string]string{"FEATURE_GATES": "NodeRepair=true,Teleport=true"}, wantErr: `unknown feature gate "Teleport"`},
		{name: "unsupported feature gate enabled", env: map[string]string{"FEATURE_GATES": "StaticCapacity=true"}, wantErr: "feature gate StaticCapacity is not supported"},
		{name: "initialization ttl from env", env: map[string]string{"INITIALIZATION_TTL": "2m"}, check: func(o *Options) bool { return o.InitializationTTL == 2*time.Minute }},
		{name: "initialization ttl not positive", args: []string{"--initialization-ttl=0s"}, wantErr: "initialization-ttl 0s must be positive"},
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

func TestFeatureGatesFlag(t *testing.T) {
	for _, tc := range []struct {
		name, value, wantErr string
	}{
		{name: "valid", value: "NodeRepair=true"},
		{name: "unknown", value: "NodeRepiar=true", wantErr: `unknown feature gate "NodeRepiar"`},
		{name: "not a bool", value: "NodeRepair=yes please", wantErr: `feature gate NodeRepair="yes please"`},
		{name: "no value", value: "NodeRepair", wantErr: `feature gate "NodeRepair" needs a value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &Options{}
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			err := fs.Parse([]string{"--feature-gates=" + tc.value})
			if tc.wantErr == "" {
				if err != nil || !o.FeatureGates.NodeRepair {
					t.Fatalf("Parse = %v, gates %+v", err, o.FeatureGates)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
