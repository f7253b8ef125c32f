package operator_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// bufferFor is a CapacityBuffer of replicas chunks shaped like the pods
// of the Deployment named app.
func (s *scenario) bufferFor(app string, replicas int32) *autoscalingv1beta1.CapacityBuffer {
	return &autoscalingv1beta1.CapacityBuffer{
		ObjectMeta: metav1.ObjectMeta{Name: app + "-buffer", Namespace: s.ns},
		Spec: autoscalingv1beta1.CapacityBufferSpec{
			ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: appsv1.GroupName, Kind: autoscalingv1beta1.KindDeployment, Name: app},
			Replicas:    ptr.To(replicas),
		},
	}
}

// freeChunks is how many pods of (cpu, memory) the scenario's ready,
// undisrupted nodes have room for, from their allocatable and the
// requests of the pods bound to them.
func (s *scenario) freeChunks(ctx context.Context, cpu, memory resource.Quantity) (int64, int, error) {
	nodes, err := s.nodes(ctx)
	if err != nil {
		return 0, 0, err
	}
	var pods corev1.PodList
	if err := s.env.Client.List(ctx, &pods); err != nil {
		return 0, 0, err
	}
	used := map[string][2]int64{}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		u := used[p.Spec.NodeName]
		for _, c := range p.Spec.Containers {
			u[0] += c.Resources.Requests.Cpu().MilliValue()
			u[1] += c.Resources.Requests.Memory().Value()
		}
		used[p.Spec.NodeName] = u
	}
	var chunks int64
	usable := 0
	for _, n := range nodes {
		if n.DeletionTimestamp != nil || !nodeReady(&n) || tainted(&n, v1.TaintKeyDisrupted) {
			continue
		}
		usable++
		u := used[n.Name]
		c := (n.Status.Allocatable.Cpu().MilliValue() - u[0]) / cpu.MilliValue()
		m := (n.Status.Allocatable.Memory().Value() - u[1]) / memory.Value()
		chunks += max(min(c, m), 0)
	}
	return chunks, usable, nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func tainted(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// TestCapacityBufferKeepsRoom: with the CapacityBuffer gate on and
// consolidation of empty and underutilized nodes after 0 s, a buffer of
// 2 × (2 cpu, 4 Gi) shaped like a Deployment's pods keeps a node with that
// room after the Deployment is scaled to zero (and launches it again as
// soon as pods bind into it), and reports
// Provisioning=True (FitsExistingCapacity); `joiner explain nodepool`,
// `explain capacitybuffer` and the status page show where its room is.
// Karpenter's operator_capacitybuffer_* metrics carry its conditions.
// Deleting the buffer lets consolidation take the nodes: it was the buffer
// that kept them.
func TestCapacityBufferKeepsRoom(t *testing.T) {
	s := newScenario(t)
	s.nodePool.Spec.Disruption = v1.Disruption{
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		ConsolidateAfter:    v1.MustParseNillableDuration("0s"),
	}
	s.apply()
	port := freePort(t)
	j := s.joiner("--feature-gates=CapacityBuffer=true", "--disruption-poll-interval=1s", "--disruption-validation-period=1s",
		"--status-page", "--status-page-address=127.0.0.1:0", "--metrics-port="+strconv.Itoa(port))
	cpu, memory := resource.MustParse("2"), resource.MustParse("4Gi")
	d := s.deployment("app", 2, cpu.String(), memory.String(), nil)
	cb := s.bufferFor("app", 2)
	s.env.Create(t, cb)
	s.waitRunning("app", 2, 120*time.Second)

	// The buffer's room exists beside the Deployment's pods.
	test.Eventually(t, 90*time.Second, func(ctx context.Context) error {
		got := &autoscalingv1beta1.CapacityBuffer{}
		if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(cb), got); err != nil {
			return err
		}
		if got.Status.Replicas == nil || *got.Status.Replicas != 2 {
			return fmt.Errorf("status.replicas %v, want 2", got.Status.Replicas)
		}
		c := meta.FindStatusCondition(got.Status.Conditions, autoscalingv1beta1.ConditionProvisioning)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "FitsExistingCapacity" {
			return fmt.Errorf("Provisioning %+v, want True/FitsExistingCapacity", c)
		}
		free, _, err := s.freeChunks(ctx, cpu, memory)
		if err != nil {
			return err
		}
		if free < 2 {
			return fmt.Errorf("room for %d chunk(s) beside the running pods, want 2", free)
		}
		return nil
	})

	// Scaled to zero: consolidation runs every second, and once the
	// NodeClaims stop changing the room is still there.
	s.scale(d, 0)
	s.waitRunning("app", 0, 60*time.Second)
	s.settle(20 * time.Second)
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		free, usable, err := s.freeChunks(ctx, cpu, memory)
		if err != nil {
			return err
		}
		if free < 2 {
			return fmt.Errorf("after scaling to zero, room for %d chunk(s) on %d node(s), want 2", free, usable)
		}
		t.Logf("after scaling to zero: room for %d chunk(s) on %d node(s)", free, usable)
		return nil
	})

	// Where the room is: the controller publishes it, and both
	// `joiner explain nodepool` and the status page show the buffer, its
	// 2 chunks and the node holding them.
	buffer := s.ns + "/" + cb.Name
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		nodes, err := s.nodes(ctx)
		if err != nil {
			return err
		}
		out, err := s.explain(ctx, "nodepool", s.nodePool.Name)
		if err != nil {
			return err
		}
		if !strings.Contains(out, "CapacityBuffers holding room here:") || !strings.Contains(out, buffer+": 2 of 2 chunk(s) held on node ") {
			return fmt.Errorf("explain nodepool does not show %s's 2 chunks:\n%s", buffer, out)
		}
		if !slices.ContainsFunc(nodes, func(n corev1.Node) bool { return strings.Contains(out, "node "+n.Name) }) {
			return fmt.Errorf("explain nodepool names none of the nodes %v:\n%s", nodeNames(nodes), out)
		}
		t.Logf("explain nodepool %s:\n%s", s.nodePool.Name, out)
		out, err = s.explain(ctx, "capacitybuffer", buffer)
		if err != nil {
			return err
		}
		if !strings.Contains(out, "room:     2 of 2 chunk(s) held on node ") {
			return fmt.Errorf("explain capacitybuffer does not show the room:\n%s", out)
		}
		return nil
	})
	// Karpenter's operator_capacitybuffer_* status condition metrics.
	expectSeries(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), []want{
		{"operator_capacitybuffer_status_condition_count", map[string]string{"namespace": s.ns, "name": cb.Name, "type": autoscalingv1beta1.ConditionProvisioning, "status": "True", "reason": "FitsExistingCapacity"}},
		{"operator_capacitybuffer_status_condition_count", map[string]string{"namespace": s.ns, "name": cb.Name, "type": autoscalingv1beta1.ConditionReadyForProvisioning, "status": "True"}},
		{"operator_capacitybuffer_status_condition_current_status_seconds", map[string]string{"name": cb.Name, "type": autoscalingv1beta1.ConditionLimitedByQuotas, "status": "False"}},
		{"operator_capacitybuffer_status_condition_transitions_total", map[string]string{"type": autoscalingv1beta1.ConditionProvisioning, "status": "True"}},
	})
	url := j.statusPage(t)
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		page, err := getPage(ctx, url)
		if err != nil {
			return err
		}
		if !strings.Contains(page, `data-buffer="`+buffer+`" data-held="2" data-chunks="2"`) {
			return fmt.Errorf("the status page does not show %s holding 2 chunks", buffer)
		}
		if !strings.Contains(page, "buffer chunk(s)</div>") {
			return fmt.Errorf("the status page marks no node as holding the buffer's room")
		}
		if strings.Contains(page, `data-pod="`+buffer+`-buffer-0"`) {
			return fmt.Errorf("the status page lists the buffer's virtual pod as pending")
		}
		return nil
	})

	// Pods that fit the room bind into it (kube-scheduler sees no virtual
	// pod, and they are never pending for joiner); leaving room for one
	// chunk, the buffer is planned again at the binds and a node is
	// launched for its other chunk.
	free, _, err := s.freeChunks(t.Context(), cpu, memory)
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.nodeClaims(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s.scale(d, int32(free-1))
	s.waitRunning("app", int(free-1), 60*time.Second)
	var bound time.Time
	pods, err := s.pods(t.Context(), "app")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && c.LastTransitionTime.After(bound) {
				bound = c.LastTransitionTime.Time
			}
		}
	}
	test.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		claims, err := s.nodeClaims(ctx)
		if err != nil {
			return err
		}
		for _, nc := range claims {
			if !slices.ContainsFunc(before, func(b v1.NodeClaim) bool { return b.Name == nc.Name }) {
				if wait := nc.CreationTimestamp.Sub(bound); wait > 15*time.Second {
					t.Errorf("the buffer's room was launched again %s after the pods bound into it, want at the binds (the resync is 30 s)", wait)
				} else {
					t.Logf("%d pod(s) bound into the room; nodeclaim %s launched for the buffer %s later", free-1, nc.Name, wait)
				}
				return nil
			}
		}
		return fmt.Errorf("no NodeClaim launched for the room %d pod(s) took", free-1)
	})
	s.scale(d, 0)
	s.waitRunning("app", 0, 60*time.Second)

	// Without the buffer the same nodes are empty and go.
	if err := s.env.Client.Delete(t.Context(), cb); err != nil {
		t.Fatal(err)
	}
	s.waitNoNodeClaims(90*time.Second, "after the buffer was deleted")
}

// settle waits until the scenario's NodeClaims have not changed for
// quiet (no launch or deletion in flight), at most two minutes.
func (s *scenario) settle(quiet time.Duration) {
	s.t.Helper()
	last, since := "", time.Now()
	test.Eventually(s.t, 2*time.Minute, func(ctx context.Context) error {
		claims, err := s.nodeClaims(ctx)
		if err != nil {
			return err
		}
		var names []string
		for _, nc := range claims {
			names = append(names, fmt.Sprintf("%s/%t", nc.Name, nc.DeletionTimestamp != nil))
		}
		now := strings.Join(names, ",")
		if now != last {
			last, since = now, time.Now()
		}
		if time.Since(since) < quiet {
			return fmt.Errorf("NodeClaims changed %.0fs ago: %s", time.Since(since).Seconds(), now)
		}
		return nil
	})
}

// TestCapacityBufferGateOff: without the CapacityBuffer gate joiner
// starts, a buffer gets an event naming the gate, and nothing is launched
// for it.
func TestCapacityBufferGateOff(t *testing.T) {
	s := newScenario(t)
	s.apply()
	s.joiner()
	tmpl := &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "chunk", Namespace: s.ns},
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			NodeSelector: map[string]string{v1.LabelNodePool: s.nodePool.Name},
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			}}},
		}},
	}
	cb := &autoscalingv1beta1.CapacityBuffer{
		ObjectMeta: metav1.ObjectMeta{Name: "off", Namespace: s.ns},
		Spec: autoscalingv1beta1.CapacityBufferSpec{
			PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: tmpl.Name},
			Replicas:       ptr.To[int32](1),
		},
	}
	s.env.Create(t, tmpl, cb)
	test.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		var list corev1.EventList
		if err := s.env.Client.List(ctx, &list, client.InNamespace(s.ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == cb.Name && e.Reason == events.FeatureGateDisabled && strings.Contains(e.Message, "CapacityBuffer=true") {
				return nil
			}
		}
		return fmt.Errorf("no %s event naming CapacityBuffer on %s yet", events.FeatureGateDisabled, cb.Name)
	})
	claims, err := s.nodeClaims(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) > 0 {
		t.Fatalf("%d NodeClaim(s) launched for a buffer with the gate off", len(claims))
	}
}

// explain runs `joiner explain ARGS` against the scenario's cluster.
func (s *scenario) explain(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, joinerBin.Path(s.t), append([]string{"explain", "--kubeconfig=" + s.env.ControlPlane.KubeconfigPath()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("joiner explain %v: %w: %s", args, err, out)
	}
	return string(out), nil
}

func nodeNames(nodes []corev1.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

// scale sets the Deployment's replicas.
func (s *scenario) scale(d *appsv1.Deployment, replicas int32) {
	s.t.Helper()
	test.Eventually(s.t, 30*time.Second, func(ctx context.Context) error {
		got := &appsv1.Deployment{}
		if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(d), got); err != nil {
			return err
		}
		got.Spec.Replicas = ptr.To(replicas)
		return s.env.Client.Update(ctx, got)
	})
}
