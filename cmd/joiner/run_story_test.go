package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
)

// TestStoryNodePools checks what `make run` prints about NodePools: nothing
// for a healthy one (the default demo's story is unchanged), the back-off
// of a failing one once per change, and its recovery.
func TestStoryNodePools(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	failing := func(failures int) v1.NodePool {
		np := v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: demoFaultPool}}
		np.Status.Conditions = []metav1.Condition{{Type: v1.ConditionTypeNodeRegistrationHealthy, Status: metav1.ConditionFalse, Reason: "RegistrationFailed"}}
		var r launchhealth.Record
		for i := range failures {
			r.Failed(launchhealth.Failure{Phase: launchhealth.PhaseRegistration, Reason: "NodeNotFound", Time: metav1.NewTime(now.Add(time.Duration(i) * time.Second))},
				launchhealth.Scope{NodeClass: demoFaultNodeClass}, np.Hash(), 20*time.Second, time.Hour)
		}
		launchhealth.Set(&np, r)
		return np
	}
	healthy := v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: demoNodePool}}
	var out bytes.Buffer
	s := newStory(&out)
	s.clock = clocktesting.NewFakePassiveClock(now)
	steps := []struct {
		pools []v1.NodePool
		want  string // "" is silence
	}{
		{pools: []v1.NodePool{healthy}},
		{pools: []v1.NodePool{healthy, failing(1)}, want: "nodepool   never-registers backing off: node class never-registers failed to register 1 time(s) in a row (NodeNotFound); next attempt in 20s"},
		{pools: []v1.NodePool{healthy, failing(1)}},
		{pools: []v1.NodePool{healthy, failing(2)}, want: "failed to register 2 time(s) in a row (NodeNotFound); next attempt in 4"},
		{pools: []v1.NodePool{healthy, {ObjectMeta: metav1.ObjectMeta{Name: demoFaultPool}}}, want: "nodepool   never-registers NodeRegistrationHealthy again"},
	}
	for i, step := range steps {
		out.Reset()
		s.observeNodePools(step.pools)
		got := out.String()
		if step.want == "" && got != "" || !strings.Contains(got, step.want) {
			t.Errorf("step %d printed %q, want %q", i, got, step.want)
		}
	}
}
