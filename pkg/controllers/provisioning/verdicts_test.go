package provisioning_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestUnschedulableKeepsTheLastPassVerdicts checks what the status page
// reads: the last pass's unschedulable pods with their typed reasons,
// replaced by the next pass (and emptied when nothing is pending).
func TestUnschedulableKeepsTheLastPassVerdicts(t *testing.T) {
	f := newFixture(t)
	f.createNodePool(nil)
	pods := f.pendingPods(2, "1", func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{v1.LabelArch: "s390x"}
	})
	r := f.replica()
	if got := r.p.Unschedulable(); len(got) != 0 {
		t.Fatalf("before any pass: %d verdicts", len(got))
	}
	r.provision()
	got := r.p.Unschedulable()
	if len(got) != 2 {
		t.Fatalf("after a pass: %d verdicts, want 2", len(got))
	}
	for _, pe := range got {
		reason, ok := pe.NodePools[f.nodePool.Name]
		if !ok || reason.Kind() != scheduling.KindNoInstanceType {
			t.Errorf("pod %s: reasons %v, want a NoInstanceType reason for nodepool %s", pe.Pod.Name, pe.NodePools, f.nodePool.Name)
		}
	}

	for _, p := range pods {
		if err := f.env.Client.Delete(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	r.provision()
	if got := r.p.Unschedulable(); len(got) != 0 {
		t.Errorf("after a pass with nothing pending: %d verdicts, want none", len(got))
	}
}
