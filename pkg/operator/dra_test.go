package operator_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	joinerevents "github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestDRAClaimOnLaunchedNode: with IGNORE_DRA_REQUESTS=false, a pod whose
// ResourceClaim (from a template) asks for 2 GPUs of a DeviceClass gets a
// node joiner launches for it, whose simulated driver publishes the GPUs
// in a ResourceSlice; the real kube-scheduler's DRA plugin allocates the 2
// devices from that slice and binds the pod there. Then a cheaper node
// without GPUs, with room for the pod's cpu, appears: consolidation
// considers the GPU node (an Unconsolidatable event) and leaves the pod
// where its devices are, where a device-blind consolidation would move it
// and delete the dearer node.
func TestDRAClaimOnLaunchedNode(t *testing.T) {
	s := newScenario(t)
	s.nodePool.Spec.Template.Spec.Requirements = append(s.nodePool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelAWSInstanceFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{"g4dn", "g5", "m5"}})
	s.nodePool.Spec.Disruption = v1.Disruption{ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized, ConsolidateAfter: v1.MustParseNillableDuration("0s")}
	s.apply()
	class := &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "gpu")},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`}}}},
	}
	tmpl := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "two-gpus"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class.Name, Count: 2}}}}}},
	}
	s.env.Create(t, class, tmpl)
	t.Cleanup(func() { _ = s.env.Client.Delete(context.Background(), class) })
	s.joiner("--ignore-dra-requests=false")

	s.deployment("trainer", 1, "500m", "1Gi", func(spec *corev1.PodSpec) {
		spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To(tmpl.Name)}}
		spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpus"}}
	})
	s.waitRunning("trainer", 1, 3*time.Minute)
	trainer, node := s.draPod(t)
	// The node is one joiner launched for the pod, with 2 or more GPUs.
	var nc v1.NodeClaim
	claims, err := s.nodeClaims(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		if c.Status.NodeName == node.Name {
			nc = c
		}
	}
	if nc.Name == "" {
		t.Fatalf("pod runs on %s, which no NodeClaim of the nodepool launched", node.Name)
	}
	if gpus, _ := strconv.Atoi(node.Labels[v1.LabelAWSInstanceGPUCount]); gpus < 2 {
		t.Fatalf("node %s (%s) has %d GPUs, want at least 2", node.Name, node.Labels[corev1.LabelInstanceTypeStable], gpus)
	}
	// kube-scheduler's DRA plugin allocated 2 devices of the node's slice.
	claim := s.podClaim(t, trainer)
	if claim.Status.Allocation == nil || len(claim.Status.Allocation.Devices.Results) != 2 {
		t.Fatalf("claim %s allocation %+v, want 2 devices", claim.Name, claim.Status.Allocation)
	}
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != "gpu.nvidia.com" || r.Pool != node.Name {
			t.Errorf("allocated device %s/%s/%s, want a gpu.nvidia.com device of node %s's pool", r.Driver, r.Pool, r.Device, node.Name)
		}
	}
	t.Logf("pod %s bound to %s (%s, nodeclaim %s) with devices %+v", trainer.Name, node.Name, node.Labels[corev1.LabelInstanceTypeStable], nc.Name, claim.Status.Allocation.Devices.Results)

	// A cheaper node without GPUs, with cpu to spare for the trainer.
	s.deployment("web", 1, "1500m", "1Gi", func(spec *corev1.PodSpec) {
		spec.NodeSelector[v1.LabelAWSInstanceFamily] = "m5"
	})
	s.waitRunning("web", 1, 2*time.Minute)
	var verdict string
	test.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		var list corev1.EventList
		if err := s.env.Client.List(ctx, &list); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Reason == joinerevents.Unconsolidatable && (e.InvolvedObject.Name == node.Name || e.InvolvedObject.Name == nc.Name) {
				verdict = e.Message
				return nil
			}
		}
		return errors.New("consolidation has not judged the GPU node yet")
	})
	t.Logf("consolidation's verdict on %s: %s", node.Name, verdict)
	// Consolidation keeps judging every few seconds: the pod stays with its
	// devices, and the GPU node stays.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		cur, curNode := s.draPod(t)
		if cur.UID != trainer.UID || curNode.Name != node.Name {
			t.Fatalf("the trainer moved (pod %s on %s), want pod %s to stay on %s with its GPUs", cur.Name, curNode.Name, trainer.Name, node.Name)
		}
		if curNode.DeletionTimestamp != nil || curNode.Spec.Unschedulable {
			t.Fatalf("the GPU node %s is being disrupted", node.Name)
		}
		time.Sleep(2 * time.Second)
	}
}

// draPod is the trainer's one running pod and its node.
func (s *scenario) draPod(t *testing.T) (*corev1.Pod, *corev1.Node) {
	t.Helper()
	pods, err := s.pods(t.Context(), "trainer")
	if err != nil {
		t.Fatal(err)
	}
	var p *corev1.Pod
	for i := range pods {
		if pods[i].Status.Phase == corev1.PodRunning && pods[i].DeletionTimestamp == nil {
			if p != nil {
				t.Fatalf("two trainer pods running: %s and %s", p.Name, pods[i].Name)
			}
			p = &pods[i]
		}
	}
	if p == nil {
		t.Fatalf("no trainer pod running (%d pods)", len(pods))
	}
	node := &corev1.Node{}
	if err := s.env.Client.Get(t.Context(), client.ObjectKey{Name: p.Spec.NodeName}, node); err != nil {
		t.Fatalf("node of pod %s: %v", p.Name, err)
	}
	return p, node
}

// podClaim is the ResourceClaim generated for the pod's "gpus" claim.
func (s *scenario) podClaim(t *testing.T, p *corev1.Pod) *resourcev1.ResourceClaim {
	t.Helper()
	for _, st := range p.Status.ResourceClaimStatuses {
		if st.Name == "gpus" && st.ResourceClaimName != nil {
			c := &resourcev1.ResourceClaim{}
			if err := s.env.Client.Get(t.Context(), client.ObjectKey{Namespace: p.Namespace, Name: *st.ResourceClaimName}, c); err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	t.Fatalf("pod %s has no generated claim: %+v", p.Name, p.Status.ResourceClaimStatuses)
	return nil
}
