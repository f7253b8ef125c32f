package readiness

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
)

// TestNodeRegistrationHealthy checks the condition derived from the launch
// health record, and the resets: a new node class generation clears the
// record, a back-off made under another template hash is dropped.
func TestNodeRegistrationHealthy(t *testing.T) {
	readyTrue := &metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}
	now := time.Now()
	failure := launchhealth.Failure{NodeClaim: "default-abc", Phase: launchhealth.PhaseRegistration, Reason: "NodeNotFound", Message: "no Node registered", Time: metav1.NewTime(now)}
	withRecord := func(np *v1.NodePool, do func(r *launchhealth.Record, hash string)) *v1.NodePool {
		var r launchhealth.Record
		do(&r, np.Hash())
		launchhealth.Set(np, r)
		return np
	}
	failTwice := func(r *launchhealth.Record, hash string) {
		scope := launchhealth.Scope{NodeClass: "default"}
		r.Failed(failure, scope, hash, time.Minute, time.Hour)
		r.Failed(failure, scope, hash, time.Minute, time.Hour)
	}
	cases := []struct {
		name           string
		np             *v1.NodePool
		generation     int64
		observed       int64
		status         metav1.ConditionStatus
		reason         string
		mentions       []string
		wantBackoffs   int
		wantAnnotation bool
	}{
		{name: "no launch yet is unknown", np: nodePool("fresh", "SimNodeClass", "default"), status: metav1.ConditionUnknown},
		{
			name:   "failures are unhealthy, naming the cause and the back-off",
			np:     withRecord(nodePool("failing", "SimNodeClass", "default"), failTwice),
			status: metav1.ConditionFalse, reason: ReasonRegistrationFailed,
			mentions:     []string{"2 of the last 2", "nodeclaim/default-abc", "NodeNotFound", "Backing off node class default after 2 consecutive failure(s)"},
			wantBackoffs: 1, wantAnnotation: true,
		},
		{
			name: "a success among few failures is healthy",
			np: withRecord(nodePool("mixed", "SimNodeClass", "default"), func(r *launchhealth.Record, hash string) {
				r.Succeeded("default", "m5.large")
				r.Succeeded("default", "m5.large")
				r.Failed(failure, launchhealth.Scope{NodeClass: "default", InstanceType: "g5.xlarge"}, hash, time.Minute, time.Hour)
			}),
			status: metav1.ConditionTrue, wantBackoffs: 1, wantAnnotation: true,
		},
		{
			name: "a back-off under another template is dropped",
			np: withRecord(nodePool("changed", "SimNodeClass", "default"), func(r *launchhealth.Record, _ string) {
				failTwice(r, "an-older-template")
			}),
			status: metav1.ConditionFalse, reason: ReasonRegistrationFailed, wantBackoffs: 0, wantAnnotation: true,
		},
		{
			name:       "a new node class generation resets the record",
			np:         withRecord(nodePool("reset", "SimNodeClass", "default"), failTwice),
			generation: 3, observed: 2,
			status: metav1.ConditionUnknown, wantBackoffs: 0, wantAnnotation: false,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			class := simClass("default", readyTrue)
			class.Generation = tc.generation
			tc.np.Status.NodeClassObservedGeneration = tc.observed
			got := run(t, tc.np, class)
			c := cond(got, v1.ConditionTypeNodeRegistrationHealthy)
			if c.Status != tc.status || (tc.reason != "" && c.Reason != tc.reason) {
				t.Fatalf("NodeRegistrationHealthy %s/%s (%s), want %s/%s", c.Status, c.Reason, c.Message, tc.status, tc.reason)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(c.Message, m) {
					t.Errorf("message %q does not mention %q", c.Message, m)
				}
			}
			if got.Status.NodeClassObservedGeneration != tc.generation {
				t.Errorf("nodeClassObservedGeneration %d, want %d", got.Status.NodeClassObservedGeneration, tc.generation)
			}
			if _, ok := got.Annotations[v1.AnnotationLaunchHealth]; ok != tc.wantAnnotation {
				t.Fatalf("annotation present %t, want %t (%v)", ok, tc.wantAnnotation, got.Annotations)
			}
			r, err := launchhealth.Get(got)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Backoffs) != tc.wantBackoffs {
				t.Errorf("back-offs %+v, want %d", r.Backoffs, tc.wantBackoffs)
			}
		})
	}
}
