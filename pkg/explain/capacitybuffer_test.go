package explain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/joiner-dev/joiner/pkg/explain"
)

// bufferYAML is a CapacityBuffer with the status the controller wrote.
func bufferYAML(status string) string {
	return `apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: room, namespace: shop}
spec:
  podTemplateRef: {name: chunk}
  replicas: 2
status:
` + status
}

// TestCapacityBuffer: explain capacitybuffer says from the buffer's status
// how many chunks it plans and where its room is (existing capacity, new
// capacity launching, nowhere and why, or not planned at all).
func TestCapacityBuffer(t *testing.T) {
	cond := func(typ, status, reason, msg string) string {
		return "  - {type: " + typ + ", status: \"" + status + "\", reason: " + reason + ", message: \"" + msg + "\", lastTransitionTime: \"2026-01-01T00:00:00Z\"}\n"
	}
	ready := cond("ReadyForProvisioning", "True", "Resolved", "2 chunk(s) of the pod template resolved")
	for _, tc := range []struct {
		name, status string
		want         []string
	}{
		{name: "room on existing capacity", status: "  replicas: 2\n  conditions:\n" + ready + cond("Provisioning", "True", "FitsExistingCapacity", "all 2 chunk(s) fit existing capacity"),
			want: []string{"CapacityBuffer shop/room: 2 chunk(s) of room held on existing capacity", "chunk:    PodTemplate chunk", "replicas: 2", "Provisioning=True FitsExistingCapacity"}},
		{name: "room launching", status: "  replicas: 2\n  conditions:\n" + ready + cond("Provisioning", "False", "RequiresNewCapacity", "2/2 chunk(s) need new capacity; joiner is launching it") + cond("LimitedByQuotas", "False", "WithinQuotas", "no ResourceQuota of the namespace limits the buffer"),
			want: []string{"room not all there: 2/2 chunk(s) need new capacity; joiner is launching it (RequiresNewCapacity)", "LimitedByQuotas=False WithinQuotas"}},
		{name: "not resolved", status: "  conditions:\n" + cond("ReadyForProvisioning", "False", "PodTemplateNotFound", "PodTemplate shop/chunk not found"),
			want: []string{"not planned: PodTemplate shop/chunk not found (PodTemplateNotFound)"}},
		{name: "no status", status: "  {}\n",
			want: []string{"not resolved yet", "CapacityBuffer=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := explain.Read("input", []byte(bufferYAML(tc.status)), explain.SnapshotOptions{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
			v, err := explain.CapacityBuffer(snap, "shop", "room")
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			if err := explain.Write(&out, v); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
	snap, err := explain.Read("input", []byte(bufferYAML("  {}\n")), explain.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := explain.CapacityBuffer(snap, "shop", "other"); err == nil || !strings.Contains(err.Error(), "shop/other not found") {
		t.Errorf("error %v, want not found", err)
	}
}
