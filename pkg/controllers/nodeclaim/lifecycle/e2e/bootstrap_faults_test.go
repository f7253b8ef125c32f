package e2e

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/lifecycle"
	"github.com/joiner-dev/joiner/pkg/events"
)

// TestUnregisteredTaintMissingIsReported: a node whose bootstrap drops the
// karpenter.sh/unregistered taint registers, with a Warning saying how to
// fix the bootstrap.
func TestUnregisteredTaintMissingIsReported(t *testing.T) {
	h := start(t, options{faults: &simv1alpha1.Faults{UnregisteredTaintMissing: true}})
	nc := h.nodeClaim(t)
	h.create(t, nc)
	h.condition(t, nc.Name, v1.ConditionTypeRegistered, metav1.ConditionTrue, "")
	note := h.event(t, nc.Name, events.UnregisteredTaintMissing)
	requireMentions(t, note, "karpenter.sh/unregistered:NoExecute", "--register-with-taints")
}

// TestMissingStartupTaintsAreReported: a node registering without the
// NodePool's startup taints (a custom userData that loses
// --register-with-taints) is reported, not silently recycled.
func TestMissingStartupTaintsAreReported(t *testing.T) {
	h := start(t, options{faults: &simv1alpha1.Faults{DropStartupTaints: true}})
	nc := h.nodeClaim(t)
	h.create(t, nc)
	h.condition(t, nc.Name, v1.ConditionTypeRegistered, metav1.ConditionTrue, "")
	note := h.event(t, nc.Name, events.StartupTaintsMissing)
	requireMentions(t, note, startupTaintKey, "userData", "registerWithTaints")
}

// TestWrongArchitectureIsReported: an arm64 node for an amd64 NodeClaim is
// reported on the condition and as a Warning, and never marked initialized.
func TestWrongArchitectureIsReported(t *testing.T) {
	h := start(t, options{faults: &simv1alpha1.Faults{WrongArchitecture: true}})
	nc := h.nodeClaim(t)
	h.create(t, nc)
	got := h.condition(t, nc.Name, v1.ConditionTypeInitialized, metav1.ConditionFalse, lifecycle.ReasonArchitectureMismatch)
	want := "registered as arm64 but the NodeClaim requires amd64: check the AMI/image architecture"
	for _, c := range got.Status.Conditions {
		if c.Type == v1.ConditionTypeInitialized {
			requireMentions(t, c.Message, want)
		}
	}
	requireMentions(t, h.event(t, nc.Name, events.ArchitectureMismatch), want)
	if arch := h.node(t, got.Status.NodeName).Labels[v1.LabelArch]; arch != "arm64" {
		t.Errorf("the kubelet's arch label must survive label sync, got %q", arch)
	}
}
