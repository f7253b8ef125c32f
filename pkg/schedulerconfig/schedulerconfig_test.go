package schedulerconfig_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/schedulerconfig"
)

const header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

func TestParse(t *testing.T) {
	zone := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}
	for _, tc := range []struct {
		name    string
		doc     string
		want    map[string][]corev1.TopologySpreadConstraint
		wantErr string
	}{
		{name: "no profiles: System defaults for default-scheduler", doc: header,
			want: map[string][]corev1.TopologySpreadConstraint{"default-scheduler": schedulerconfig.SystemDefaults()}},
		{name: "List in a named profile", doc: header + `profiles:
- schedulerName: spread
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
`, want: map[string][]corev1.TopologySpreadConstraint{"spread": {zone}}},
		{name: "List with no constraints", doc: header + `profiles:
- pluginConfig:
  - name: PodTopologySpread
    args: {defaultingType: List}
`, want: map[string][]corev1.TopologySpreadConstraint{"default-scheduler": nil}},
		{name: "plugin disabled", doc: header + `profiles:
- plugins:
    multiPoint:
      disabled: [{name: PodTopologySpread}]
`, want: map[string][]corev1.TopologySpreadConstraint{"default-scheduler": {}}},
		{name: "karpenter's document", doc: "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}\n",
			want: map[string][]corev1.TopologySpreadConstraint{"": {zone}}},
		{name: "System with constraints", doc: header + `profiles:
- pluginConfig:
  - name: PodTopologySpread
    args:
      defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]
`, wantErr: "defaultConstraints must be empty when defaultingType is System"},
		{name: "selector refused", doc: "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {a: b}}}\n",
			wantErr: "defaultConstraints[0].labelSelector must be empty"},
		{name: "zero skew", doc: "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n", wantErr: "maxSkew 0 must be greater than 0"},
		{name: "repeated", doc: "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n  - {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n", wantErr: "repeats [0]"},
		{name: "unknown field", doc: header + "profile: []\n", wantErr: "unknown field"},
		{name: "other kind", doc: "apiVersion: v1\nkind: ConfigMap\n", wantErr: "is not a kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := schedulerconfig.Parse([]byte(tc.doc))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for name, want := range tc.want {
				have, ok := got[name]
				if !ok || len(have) != len(want) {
					t.Fatalf("profile %q: got %v, want %v", name, have, want)
				}
				for i := range want {
					if have[i].TopologyKey != want[i].TopologyKey || have[i].MaxSkew != want[i].MaxSkew || have[i].WhenUnsatisfiable != want[i].WhenUnsatisfiable {
						t.Fatalf("profile %q constraint %d: got %+v, want %+v", name, i, have[i], want[i])
					}
				}
			}
		})
	}
}
