package capacitybuffer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	capacitybufferctrl "github.com/joiner-dev/joiner/pkg/controllers/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// The controller runs against a real kube-apiserver: it watches pods bind
// through the manager's cache and finds a Node's NodeClaim by the provider
// ID index.
func TestMain(m *testing.M) {
	test.Main(m, controlplane.Options{CRDDirectories: []string{test.RepoPath("pkg/apis/crds")}, Scheme: test.Scheme()})
}

// passes records the provisioning passes the controller asks for.
type passes chan types.UID

func (p passes) Trigger(uid types.UID) {
	select {
	case p <- uid:
	default:
	}
}

// TestBindReplansRoom: a pod that binds where a buffer's room was planned
// (the node itself, or the Node of the NodeClaim the room was planned on
// before it registered) asks the provisioner for a pass at once, well
// before the 30 s resync; a pod binding elsewhere does not. kube-scheduler
// sees no virtual pod, so such a pod binds into the room without ever
// being pending for joiner.
func TestBindReplansRoom(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	mgr := env.NewManager(t)
	store := &capacitybuffer.Store{}
	triggered := make(passes, 64)
	c, err := capacitybufferctrl.NewController(capacitybufferctrl.Options{
		Client: mgr.GetClient(), Store: store, Trigger: triggered, Recorder: &events.Buffer{}, Clock: clock.RealClock{}, Enabled: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Register(mgr); err != nil {
		t.Fatal(err)
	}
	test.StartManager(t, mgr)

	tmpl := &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "chunk", Namespace: ns},
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}},
	}
	env.Create(t, tmpl)
	for _, tc := range []struct {
		name string
		// bindTo is the Node the pod binds to.
		bindTo string
		// room is where the buffer's room was planned: a Node, or a
		// NodeClaim before its Node registered.
		room capacitybuffer.Place
		want bool
	}{
		{name: "room on the node", bindTo: "node-a", room: capacitybuffer.Place{Node: "node-a", NodeClaim: "claim-a", Chunks: 1}, want: true},
		{name: "room on the node's claim before it registered", bindTo: "node-b", room: capacitybuffer.Place{Node: "claim-b", NodeClaim: "claim-b", Chunks: 1}, want: true},
		{name: "room elsewhere", bindTo: "node-c", room: capacitybuffer.Place{Node: "node-a", NodeClaim: "claim-a", Chunks: 1}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			suffix := test.Name(t, "")
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tc.bindTo + suffix}, Spec: corev1.NodeSpec{ProviderID: "fake:///" + tc.bindTo + suffix}}
			env.Create(t, node)
			room := tc.room
			room.Node += suffix
			room.NodeClaim += suffix
			if room.NodeClaim == "claim-b"+suffix {
				nc := test.NodeClaim(test.NodeClaimOptions{Name: room.NodeClaim, Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
				}})
				env.Create(t, nc)
				nc.Status.ProviderID = node.Spec.ProviderID
				if err := env.Client.Status().Update(ctx, nc); err != nil {
					t.Fatal(err)
				}
			}
			cb := &autoscalingv1beta1.CapacityBuffer{
				ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "cb"), Namespace: ns},
				Spec:       autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: tmpl.Name}, Replicas: ptr.To[int32](1)},
			}
			env.Create(t, cb)
			key := types.NamespacedName{Namespace: ns, Name: cb.Name}
			// The buffer's first reconcile asks for a pass; the pass puts
			// its chunk at room (what the provisioner's Reporter records).
			waitPass(t, triggered, cb.UID, 10*time.Second)
			store.Record(map[types.NamespacedName]*capacitybuffer.Outcome{key: {Existing: 1, Places: []capacitybuffer.Place{room}}})
			if got := store.Rooms(); len(got) == 0 || got[len(got)-1].Plan == nil {
				t.Fatalf("the pass's room was not recorded: %+v", got)
			}

			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "taker"), Namespace: ns},
				Spec:       *tmpl.Template.Spec.DeepCopy(),
			}
			env.Create(t, pod)
			bound := time.Now()
			if err := env.Client.SubResource("binding").Create(ctx, pod, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns},
				Target:     corev1.ObjectReference{Kind: "Node", Name: node.Name},
			}); err != nil {
				t.Fatal(err)
			}
			if !tc.want {
				if err := nextPass(triggered, cb.UID, 3*time.Second); err == nil {
					t.Fatalf("a bind to %s, away from the room on %s, asked for a pass", node.Name, room)
				}
				return
			}
			// The resync would come 30 s after the first reconcile: a pass
			// within 10 s of the bind is the bind's.
			waitPass(t, triggered, cb.UID, 10*time.Second)
			t.Logf("pass asked %.2fs after the pod bound to %s (room on %s)", time.Since(bound).Seconds(), node.Name, room)
			store.Delete(key)
		})
	}
}

// waitPass waits for a pass asked for buffer uid.
func waitPass(t *testing.T, p passes, uid types.UID, timeout time.Duration) {
	t.Helper()
	if err := nextPass(p, uid, timeout); err != nil {
		t.Fatal(err)
	}
}

// nextPass waits up to timeout for a pass asked for buffer uid, dropping
// others.
func nextPass(p passes, uid types.UID, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		select {
		case got := <-p:
			if got == uid {
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("no provisioning pass asked for buffer %s within %s", uid, timeout)
		}
	}
}
