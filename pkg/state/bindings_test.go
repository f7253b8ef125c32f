package state

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestBoundPodsCountOnTheirNode(t *testing.T) {
	c, _, _ := newTestCluster(t)
	c.UpdateNodeClaim(launched(nodeClaim("nc-1", "default", "sim:///a/i-1"), "4", "16Gi"))
	c.UpdateNode(node("node-1", "sim:///a/i-1", nil))

	c.UpdatePod(pod("ns", "web-1", "node-1", "500m"))
	c.UpdatePod(pod("ns", "web-2", "node-1", "250m"))
	c.UpdatePod(daemonPod("kube-system", "agent-x", "node-1", "100m"))
	c.UpdatePod(pod("ns", "pending", "", "8"))
	done := pod("ns", "job-1", "node-1", "2")
	done.Status.Phase = corev1.PodSucceeded
	c.UpdatePod(done)

	sn, _ := c.NodeByName("node-1")
	if len(sn.Pods) != 3 {
		t.Fatalf("bound non-terminal pods: got %d, want 3", len(sn.Pods))
	}
	if got := cpu(sn.PodRequests()); got != "850m" {
		t.Errorf("pod requests = %s, want 850m", got)
	}
	if got := cpu(sn.DaemonSetRequests()); got != "100m" {
		t.Errorf("daemonset requests = %s, want 100m", got)
	}
	if got := cpu(sn.Available()); got != "2950m" {
		t.Errorf("available = %s, want 2950m (3800m - 850m)", got)
	}

	// A pod that finishes, or is deleted, stops counting.
	finished := pod("ns", "web-1", "node-1", "500m")
	finished.Status.Phase = corev1.PodFailed
	c.UpdatePod(finished)
	c.DeletePod(types.NamespacedName{Namespace: "ns", Name: "web-2"})
	sn, _ = c.NodeByName("node-1")
	if len(sn.Pods) != 1 || sn.Pods[0].Name != "agent-x" {
		t.Fatalf("after finish and delete only the daemon pod remains, got %d pods", len(sn.Pods))
	}
	en := sn.ExistingNode()
	if en.NodeClaim != "nc-1" || en.NodePool != "default" || len(en.Pods) != 1 {
		t.Errorf("ExistingNode: %+v", en)
	}
}

func TestPodsBoundBeforeTheirNodeAppearAreKept(t *testing.T) {
	c, _, _ := newTestCluster(t)
	c.UpdatePod(pod("ns", "early", "node-late", "1"))
	c.UpdateNode(node("node-late", "sim:///a/i-2", nil))
	sn, ok := c.NodeByName("node-late")
	if !ok || len(sn.Pods) != 1 {
		t.Fatalf("a pod seen before its node must count once the node appears")
	}
	c.DeleteNode("node-late")
	c.UpdateNode(node("node-late", "sim:///a/i-2", nil))
	sn, _ = c.NodeByName("node-late")
	if len(sn.Pods) != 0 {
		t.Fatalf("deleting a node forgets its bindings; got %d pods", len(sn.Pods))
	}
}

func TestDaemonSetPodsAreListedPerDaemonSet(t *testing.T) {
	c, _, _ := newTestCluster(t)
	c.UpdateDaemonSetPod(types.NamespacedName{Namespace: "kube-system", Name: "b"}, daemonPod("kube-system", "b", "", "50m"))
	c.UpdateDaemonSetPod(types.NamespacedName{Namespace: "kube-system", Name: "a"}, daemonPod("kube-system", "a", "", "50m"))
	ds := c.DaemonSetPods()
	if len(ds) != 2 || ds[0].Name != "a" {
		t.Fatalf("daemonset pods sorted by daemonset: %v", ds)
	}
	c.DeleteDaemonSet(types.NamespacedName{Namespace: "kube-system", Name: "a"})
	if len(c.DaemonSetPods()) != 1 {
		t.Fatalf("a deleted daemonset is forgotten")
	}
}
