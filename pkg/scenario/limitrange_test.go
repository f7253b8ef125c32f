package scenario

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joiner-dev/joiner/pkg/pods"
)

// TestManifestsLimitRanges checks that the pods the input's workloads and
// DaemonSets would create take their namespace's LimitRange defaults, as
// the API server gives them, and so as the live cluster state counts a
// DaemonSet's overhead (both use pods.DaemonSetPod).
func TestManifestsLimitRanges(t *testing.T) {
	const input = `
apiVersion: v1
kind: LimitRange
metadata: {name: defaults, namespace: ops}
spec:
  limits:
  - type: Container
    defaultRequest: {cpu: 1500m}
    default: {memory: 2Gi}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: ops}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: i}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ops}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: i, resources: {requests: {cpu: 250m}}}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: other}
spec:
  selector: {matchLabels: {app: other}}
  template:
    metadata: {labels: {app: other}}
    spec: {containers: [{name: c, image: i}]}
`
	m := &Manifests{}
	if err := m.Read("test.yaml", []byte(input)); err != nil {
		t.Fatal(err)
	}
	s, err := m.Snapshot(SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]corev1.ResourceList{}
	for _, p := range append(s.Pods, s.DaemonSets...) {
		got[podKey(p)] = pods.Requests(p)
	}
	for _, tc := range []struct {
		pod, cpu, memory string
	}{
		{pod: "ops/agent", cpu: "1500m", memory: "2Gi"},
		{pod: "ops/web-0", cpu: "250m", memory: "2Gi"},
		{pod: "default/other", cpu: "0", memory: "0"},
	} {
		req, ok := got[tc.pod]
		if !ok {
			t.Errorf("no pod %s in %v", tc.pod, got)
			continue
		}
		if q := req[corev1.ResourceCPU]; q.Cmp(resource.MustParse(tc.cpu)) != 0 {
			t.Errorf("%s: cpu request %s, want %s", tc.pod, q.String(), tc.cpu)
		}
		if q := req[corev1.ResourceMemory]; q.Cmp(resource.MustParse(tc.memory)) != 0 {
			t.Errorf("%s: memory request %s, want %s", tc.pod, q.String(), tc.memory)
		}
	}
}
