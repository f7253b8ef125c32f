package explain_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/explain"
)

func TestParseKind(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want explain.Kind
	}{
		{"pod", explain.KindPod}, {"Pods", explain.KindPod}, {"po", explain.KindPod},
		{"node", explain.KindNode}, {"nodes", explain.KindNode}, {"no", explain.KindNode},
		{"nodeclaim", explain.KindNodeClaim}, {"NodeClaims", explain.KindNodeClaim},
		{"nodepool", explain.KindNodePool}, {"nodepools", explain.KindNodePool},
		{"capacitybuffer", explain.KindCapacityBuffer}, {"capacitybuffers", explain.KindCapacityBuffer}, {"cb", explain.KindCapacityBuffer},
		{"deployment", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := explain.ParseKind(tc.in)
			if got != tc.want || (err != nil) != (tc.want == "") {
				t.Errorf("ParseKind(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), "want pod, node, nodeclaim, nodepool or capacitybuffer") {
				t.Errorf("error %q does not list the kinds", err)
			}
		})
	}
}

// TestText: the text of a verdict from objects as a client lists them is
// what Write prints for the verdict; NoEvents leaves out only the events.
func TestText(t *testing.T) {
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-abc"},
		Spec:       v1.NodeClaimSpec{NodeClassRef: &v1.NodeClassReference{Group: "karpenter.sh.sim", Kind: "SimNodeClass", Name: "default"}},
		Status:     v1.NodeClaimStatus{NodeName: "node-a", ProviderID: "sim:///zone-a/i-1"},
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: corev1.NodeSpec{ProviderID: "sim:///zone-a/i-1"}}
	note := "Cannot disrupt NodeClaim: state node is nominated for a pending pod"
	event := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e1"}, EventTime: metav1.NewMicroTime(now.Add(-time.Minute)),
		Regarding: corev1.ObjectReference{Kind: "NodeClaim", Name: nc.Name}, Reason: events.DisruptionBlocked, Type: corev1.EventTypeNormal, Note: note,
		ReportingController: "joiner", ReportingInstance: "joiner", Action: "Disrupt"}
	objs := []runtime.Object{nc, node, event}

	snap, err := explain.FromObjects(objs, explain.SnapshotOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	want := string(render(t, snap, "nodeclaim", nc.Name))
	got, err := explain.Text(objs, now, explain.Query{Kind: explain.KindNodeClaim, Name: nc.Name})
	if err != nil {
		t.Fatal(err)
	}
	if got != want || !strings.Contains(got, note) {
		t.Errorf("Text:\n%s\nwant (with the event %q):\n%s", got, note, want)
	}
	quiet, err := explain.Text(objs, now, explain.Query{Kind: explain.KindNode, Name: node.Name, NoEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(quiet, note) || !strings.Contains(quiet, nc.Name) {
		t.Errorf("Text with NoEvents shows the event or lost the NodeClaim:\n%s", quiet)
	}
	if _, err := explain.Text(objs, now, explain.Query{Kind: explain.KindNodePool, Name: "missing"}); err == nil {
		t.Errorf("Text of a NodePool that does not exist gave no error")
	}
}
