package explain_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/controllerview"
	"github.com/joiner-dev/joiner/pkg/explain"
	"github.com/joiner-dev/joiner/pkg/scheduling"
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

// TestBufferRoomInNodePool: explain nodepool lists, from the controller
// view, the buffers holding room in the pool (chunks and the nodes holding
// them) and those short of room it cannot give, with the pool's reason;
// explain capacitybuffer shows the whole room. Without a view that says,
// it tells where the room would come from.
func TestBufferRoomInNodePool(t *testing.T) {
	cb := &autoscalingv1beta1.CapacityBuffer{
		TypeMeta:   metav1.TypeMeta{APIVersion: autoscalingv1beta1.SchemeGroupVersion.String(), Kind: "CapacityBuffer"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "room"},
		Spec:       autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "chunk"}, Replicas: ptr.To[int32](4)},
	}
	room := capacitybuffer.Room{Buffer: "shop/room", Chunks: 4, Plan: &capacitybuffer.Outcome{
		Existing: 2, New: 1, Failed: 1, Why: "NodePool spot: limit", Short: map[string]string{"spot": "nodepool spot's cpu limit is reached"},
		Places: []capacitybuffer.Place{
			{NodePool: "general", Node: "node-a", NodeClaim: "general-abc", Chunks: 2},
			{NodePool: "spot", New: true, Index: 1, NodeClaim: "spot-xyz", Chunks: 1},
		},
	}}
	types := []*scheduling.InstanceType{viewType("m.large", "amd64")}
	view := controllerview.View{ClusterName: "c", NodePools: map[string]controllerview.NodePoolTypes{"general": {InstanceTypes: types}, "spot": {InstanceTypes: types}}}
	pools := []runtime.Object{viewPool("general", "default"), viewPool("spot", "default"), viewPool("idle", "default"), cb}
	withRoom := view
	withRoom.NodePools = map[string]controllerview.NodePoolTypes{"general": {InstanceTypes: types}, "spot": {InstanceTypes: types}, "idle": {InstanceTypes: types}}
	withRoom.Buffers = []capacitybuffer.Room{room}
	for _, tc := range []struct {
		name, pool string
		view       *controllerview.View
		want       []string
		absent     string
	}{
		{name: "held on a node", pool: "general", view: &withRoom,
			want: []string{"CapacityBuffers holding room here:", "shop/room: 2 of 4 chunk(s) held on node node-a (nodeclaim general-abc) (2)"}, absent: "short"},
		{name: "launching and short", pool: "spot", view: &withRoom,
			want: []string{"shop/room: 1 of 4 chunk(s) held on new nodeclaim spot-xyz (launching) (1)", "1 chunk(s) short; here: nodepool spot's cpu limit is reached"}},
		{name: "no room in the pool", pool: "idle", view: &withRoom, absent: "shop/room"},
		{name: "no view", pool: "general", want: []string{"the cluster has 1 CapacityBuffer(s), but no controller view says where their room is"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := slices.Clone(pools)
			if tc.view != nil {
				objs = append(objs, viewConfigMap(t, *tc.view))
			}
			snap, err := explain.FromObjects(objs, explain.SnapshotOptions{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			out := string(render(t, snap, "nodepool", tc.pool))
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tc.absent != "" && strings.Contains(out, tc.absent) {
				t.Errorf("output has %q:\n%s", tc.absent, out)
			}
		})
	}

	snap, err := explain.FromObjects(append(slices.Clone(pools), viewConfigMap(t, withRoom)), explain.SnapshotOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	out := string(render(t, snap, "capacitybuffer", "shop/room"))
	if want := "room:     3 of 4 chunk(s) held on node node-a (nodeclaim general-abc): 2, new nodeclaim spot-xyz (launching): 1; 1 on capacity being launched; 1 short"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}
