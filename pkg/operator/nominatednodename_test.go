package operator_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/test"
)

// TestKubeSchedulerHonoursNominatedNodeName checks, on the real
// kube-scheduler, what joiner's nomination.Writer relies on (KEP-5278): a
// pending pod whose status.nominatedNodeName names a node has room kept
// for it there. Pod "planned" cannot schedule yet (it needs a label the
// node gets later, as a planned pod waits for its node to initialise);
// pod "other" fits the node only if the planned pod's room is not kept.
func TestKubeSchedulerHonoursNominatedNodeName(t *testing.T) {
	for _, tc := range []struct {
		name      string
		nominated bool
	}{
		{name: "nominated: room kept", nominated: true},
		{name: "not nominated: room taken", nominated: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := test.Env(t)
			ns := env.Namespace(t)
			c := env.Client
			nodeName := test.Name(t, "n")
			node := &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{corev1.LabelHostname: nodeName, "joiner.test/node": nodeName}},
				Status: corev1.NodeStatus{
					Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")},
					Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")},
				},
			}
			env.Create(t, node)
			t.Cleanup(func() { _ = c.Delete(context.Background(), node) })
			test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
				if err := c.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
					return err
				}
				for _, cond := range node.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
						return nil
					}
				}
				return errors.New("node not Ready yet")
			})

			planned := cpuPod(ns, "planned", map[string]string{"joiner.test/node": nodeName, "joiner.test/initialized": "true"})
			env.Create(t, planned)
			waitUnschedulable(t, c, planned)
			if tc.nominated {
				nominate(t, c, planned, nodeName)
			}

			other := cpuPod(ns, "other", map[string]string{"joiner.test/node": nodeName})
			env.Create(t, other)
			if !tc.nominated {
				test.Eventually(t, 30*time.Second, func(ctx context.Context) error { return boundTo(ctx, c, other, nodeName) })
				return
			}
			// kube-scheduler counted the nominated pod on the node: the
			// other pod does not fit. (It keeps doing so until it next
			// tries the nominated pod and finds no node, when it clears
			// the field; joiner's nomination.Writer then sets it again.)
			waitUnschedulable(t, c, other)
		})
	}
}

// nominate sets pod's status.nominatedNodeName to node.
func nominate(t *testing.T, c client.Client, pod *corev1.Pod, node string) {
	base := pod.DeepCopy()
	pod.Status.NominatedNodeName = node
	if err := c.Status().Patch(context.Background(), pod, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("setting nominatedNodeName: %v", err)
	}
}

// cpuPod is a pod of 1.5 CPU (two cannot share the 2-CPU test node).
func cpuPod(ns, name string, selector map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector:                  selector,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
			}}},
		},
	}
}

// waitUnschedulable waits until kube-scheduler has tried pod and found no
// node for it.
func waitUnschedulable(t *testing.T, c client.Client, pod *corev1.Pod) {
	t.Helper()
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				return nil
			}
		}
		if pod.Spec.NodeName != "" {
			return fmt.Errorf("pod %s bound to %s, want it unschedulable", pod.Name, pod.Spec.NodeName)
		}
		return fmt.Errorf("pod %s not yet marked unschedulable", pod.Name)
	})
}

func boundTo(ctx context.Context, c client.Client, pod *corev1.Pod, node string) error {
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		return err
	}
	if pod.Spec.NodeName != node {
		return fmt.Errorf("pod %s is on %q, want %s", pod.Name, pod.Spec.NodeName, node)
	}
	return nil
}
