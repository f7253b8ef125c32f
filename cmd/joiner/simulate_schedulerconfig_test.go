package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const spreadDeployment = onDemandPool + `apiVersion: apps/v1
kind: Deployment
metadata: {name: spread, namespace: default}
spec:
  replicas: 9
  selector: {matchLabels: {app: spread}}
  template:
    metadata: {labels: {app: spread}}
    spec:
      schedulerName: SCHEDULER
      containers:
      - name: c
        resources: {requests: {cpu: "1", memory: 1Gi}}
`

const zoneSpreadConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: zone-spread
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
`

// TestSimulateReadsSchedulerConfig: simulate --scheduler-config takes the
// controller's SCHEDULER_CONFIG (a file or the document) and plans pods
// without spread constraints of their own with their profile's defaults,
// as kube-scheduler will bind them; other profiles' pods are not spread,
// and a config kube-scheduler refuses is refused naming the field.
func TestSimulateReadsSchedulerConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(file, []byte(zoneSpreadConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, scheduler, config string
		zones                   int
		err                     string
	}{
		{name: "no config", scheduler: "zone-spread", zones: 1},
		{name: "file, profile with zone defaults", scheduler: "zone-spread", config: file, zones: 3},
		{name: "inline, profile with zone defaults", scheduler: "zone-spread", config: zoneSpreadConfig, zones: 3},
		{name: "pods of a scheduler the config has no profile for", scheduler: "other-scheduler", config: file, zones: 1},
		{name: "refused as kube-scheduler refuses it", scheduler: "zone-spread", config: strings.Replace(zoneSpreadConfig, "defaultingType: List", "defaultingType: Sometimes", 1),
			err: "defaultingType"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r struct {
				Summary struct {
					PodsScheduled int `json:"podsScheduled"`
				} `json:"summary"`
				Nodes []struct {
					Requirements map[string][]string `json:"requirements"`
					Pods         []string            `json:"pods"`
				} `json:"nodes"`
			}
			err := simulateJSON(t, strings.Replace(spreadDeployment, "SCHEDULER", tc.scheduler, 1), &r,
				"--zones", "us-east-1a,us-east-1b,us-east-1c", "--scheduler-config", tc.config)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--scheduler-config") {
					t.Fatalf("error %v, want one naming --scheduler-config and %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			perZone := map[string]int{}
			for _, n := range r.Nodes {
				zones := n.Requirements["topology.kubernetes.io/zone"]
				if len(zones) != 1 {
					if tc.zones > 1 {
						t.Fatalf("a node of the spread plan may land in zones %v, want one", zones)
					}
					zones = []string{strings.Join(zones, "|")}
				}
				perZone[zones[0]] += len(n.Pods)
			}
			if r.Summary.PodsScheduled != 9 || len(perZone) != tc.zones {
				t.Fatalf("%d pods planned in zones %v, want 9 in %d zones", r.Summary.PodsScheduled, perZone, tc.zones)
			}
			if tc.zones == 3 {
				counts := slices.Sorted(func(yield func(int) bool) {
					for _, c := range perZone {
						if !yield(c) {
							return
						}
					}
				})
				if !slices.Equal(counts, []int{3, 3, 3}) {
					t.Errorf("pods per zone %v, want 3/3/3 (maxSkew 1)", perZone)
				}
			}
		})
	}
}
