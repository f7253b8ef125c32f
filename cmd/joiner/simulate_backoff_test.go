package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
)

// TestSimulateHonoursLaunchBackoffs: a NodePool dumped from a cluster
// carries its launch-health record; while its back-off waits, simulate
// plans as the provisioner would (the pod waits, with the BackingOff
// reason), and once it is over the pod gets a node.
func TestSimulateHonoursLaunchBackoffs(t *testing.T) {
	failedAt := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	np := &v1.NodePool{TypeMeta: metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodePool"}, ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	var r launchhealth.Record
	r.Failed(launchhealth.Failure{NodeClaim: "default-abcde", Phase: launchhealth.PhaseRegistration, Reason: "NodeNotFound", Time: metav1.NewTime(failedAt)},
		launchhealth.Scope{NodeClass: "default"}, np.Hash(), 15*time.Minute, time.Hour)
	launchhealth.Set(np, r)
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	manifest := func(np *v1.NodePool) string {
		var docs []string
		for _, obj := range []any{np, pod} {
			b, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, string(b))
		}
		return strings.Join(docs, "\n---\n")
	}
	type result struct {
		Summary struct {
			PodsScheduled int `json:"podsScheduled"`
		} `json:"summary"`
		Unschedulable []struct {
			Reasons map[string]struct {
				Kind    string `json:"kind"`
				Message string `json:"message"`
			} `json:"reasons"`
		} `json:"unschedulable"`
	}
	broken := np.DeepCopy()
	broken.Annotations[v1.AnnotationLaunchHealth] = "{not json"
	for _, tc := range []struct {
		name          string
		now           time.Time
		input         string
		wantScheduled int
		wantReason    string
		wantErr       string
	}{
		{name: "during the back-off the pod waits", now: failedAt.Add(time.Minute), input: manifest(np), wantReason: "BackingOff"},
		{name: "after the back-off the pod is planned", now: failedAt.Add(16 * time.Minute), input: manifest(np), wantScheduled: 1},
		{name: "an unreadable record names the annotation", now: failedAt, input: manifest(broken), wantErr: "metadata.annotations[joiner.dev/launch-health]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := simulateNow
			simulateNow = func() time.Time { return tc.now }
			t.Cleanup(func() { simulateNow = old })
			cmd := newRootCommand()
			var out strings.Builder
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetIn(strings.NewReader(tc.input))
			cmd.SetArgs([]string{"simulate", "-f", "-", "-o", "json"})
			err := cmd.Execute()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			var doc result
			if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if doc.Summary.PodsScheduled != tc.wantScheduled {
				t.Fatalf("scheduled %d pods, want %d\n%s", doc.Summary.PodsScheduled, tc.wantScheduled, out.String())
			}
			if tc.wantReason != "" {
				if len(doc.Unschedulable) != 1 || doc.Unschedulable[0].Reasons["default"].Kind != tc.wantReason {
					t.Fatalf("unschedulable %+v, want reason %s from nodepool default", doc.Unschedulable, tc.wantReason)
				}
				if msg := doc.Unschedulable[0].Reasons["default"].Message; !strings.Contains(msg, "backing off") {
					t.Errorf("message %q does not say the NodePool is backing off", msg)
				}
			}
		})
	}
}
