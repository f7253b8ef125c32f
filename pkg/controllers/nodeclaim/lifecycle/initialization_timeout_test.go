package lifecycle

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

func TestInitializationTimeoutMessage(t *testing.T) {
	for _, tc := range []struct {
		name        string
		init        metav1.Condition
		annotations map[string]string
		wantReason  string
		mentions    []string
		absent      []string
	}{
		{name: "not ready", init: metav1.Condition{Reason: ReasonNodeNotReady, Message: "Node n1 is not Ready (KubeletNotReady: container runtime network not ready)"},
			wantReason: ReasonNodeNotReady, mentions: []string{"never became Ready", "container runtime network not ready", "journalctl -u kubelet", "15m0s"}},
		{name: "startup taint left", init: metav1.Condition{Reason: ReasonStartupTaintsExist, Message: "waiting for startup taint(s) example.com/agent-not-ready:NoSchedule to be removed"},
			wantReason: ReasonStartupTaintsExist, mentions: []string{"example.com/agent-not-ready:NoSchedule", "DaemonSet that owns each taint"}, absent: []string{"registered without", "legacy"}},
		{name: "startup taint the bootstrap dropped", init: metav1.Condition{Reason: ReasonStartupTaintsExist, Message: "waiting for startup taint(s) example.com/agent-not-ready:NoSchedule"},
			annotations: map[string]string{v1.AnnotationStartupTaintsMissing: "example.com/agent-not-ready:NoSchedule"},
			wantReason:  ReasonStartupTaintsExist, mentions: []string{"registered without the startup taint(s) example.com/agent-not-ready:NoSchedule", "--register-with-taints"}},
		{name: "legacy taint", init: metav1.Condition{Reason: ReasonLegacyUninitializedTaint, Message: "Node n1 carries the legacy taint karpenter.sh/uninitialized"},
			wantReason: ReasonStartupTaintsExist, mentions: []string{"legacy taint karpenter.sh/uninitialized", "karpenter.sh/unregistered:NoExecute"}},
		{name: "gpu never registered", init: metav1.Condition{Reason: ReasonResourceNotRegistered, Message: "waiting for nvidia.com/gpu to be registered"},
			wantReason: ReasonResourceNotRegistered, mentions: []string{"expected resources never appeared", "nvidia.com/gpu", "device plugin"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &v1.NodeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "nc1", Annotations: tc.annotations, Labels: map[string]string{v1.LabelInstanceType: "g5.xlarge"}},
				Status:     v1.NodeClaimStatus{NodeName: "n1", ImageID: "sim-image-1"},
			}
			reason, msg := initializationTimeoutMessage(nc, tc.init, 15*time.Minute)
			if reason != tc.wantReason {
				t.Errorf("reason = %s, want %s", reason, tc.wantReason)
			}
			for _, m := range append(tc.mentions, "nc1", "g5.xlarge", "sim-image-1") {
				if !strings.Contains(msg, m) {
					t.Errorf("%q does not mention %q", msg, m)
				}
			}
			for _, m := range tc.absent {
				if strings.Contains(msg, m) {
					t.Errorf("%q mentions %q", msg, m)
				}
			}
		})
	}
}
