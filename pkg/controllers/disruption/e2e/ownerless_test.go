package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/explain"
	"github.com/joiner-dev/joiner/pkg/test"
)

// ownerlessPod: a bare pod (no controller owner) shares a node with a
// Deployment's pod; once the Deployment is gone the node is worth
// consolidating. The bare pod does not block it (Karpenter v1 does not
// either), but the controller warns on the Node first (OwnerlessPods, the
// same words `joiner explain` prints from the stored verdict), and says
// after that the drain removed it for good (OwnerlessPodEvicted).
func ownerlessPod(t *testing.T) {
	s := newScenario(t)
	s.apply()
	d := s.deployment("big", 1, "6", nil)
	s.running("big", 1, 2*time.Minute)
	claims := s.nodeCount(1, time.Minute)
	nodeName := claims[0].Status.NodeName
	bare := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: s.ns, Labels: map[string]string{"app": "bare"}},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{v1.LabelNodePool: s.pool.Name},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			}}},
		},
	}
	s.env.Create(t, bare)
	running := s.running("bare", 1, time.Minute)
	if running[0].Spec.NodeName != nodeName {
		t.Fatalf("the bare pod runs on %s, not beside the Deployment's pod on %s", running[0].Spec.NodeName, nodeName)
	}
	s.scale(d, 0)

	// Before: the stored verdict of the candidate names the pod, and
	// explain prints the controller's event text word for word.
	want := []string{s.ns + "/bare"}
	var objs []runtime.Object
	var rec disruption.Record
	test.Eventually(t, time.Minute, func(ctx context.Context) error {
		nc := &v1.NodeClaim{}
		if err := s.env.Client.Get(ctx, client.ObjectKey{Name: claims[0].Name}, nc); err != nil {
			return err
		}
		r, err := disruption.DecodeRecord(nc.Annotations[v1.AnnotationDisruptionVerdict])
		if err != nil {
			return err
		}
		if r.State != disruption.StateCandidate && r.State != disruption.StateDisrupting {
			return fmt.Errorf("verdict %s: %s", r.State, r.Message)
		}
		if !slices.Equal(r.Ownerless, want) {
			return fmt.Errorf("verdict %s names ownerless pods %q, want %q", r.State, r.Ownerless, want)
		}
		node := &corev1.Node{}
		if err := s.env.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			return err
		}
		rec, objs = r, []runtime.Object{nc, node, s.pool, s.class}
		return nil
	})
	note := s.waitEvent(events.OwnerlessPods, nodeName, s.ns+"/bare", time.Minute)
	if wantNote := disruption.OwnerlessWarning(rec.Ownerless); note != wantNote {
		t.Errorf("OwnerlessPods event %q, want %q", note, wantNote)
	}
	s.waitEvent(events.OwnerlessPods, claims[0].Name, s.ns+"/bare", time.Minute)
	evs, err := s.events(t.Context(), events.OwnerlessPods, nodeName)
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		objs = append(objs, &evs[i])
	}
	out, err := explain.Text(objs, time.Now(), explain.Query{Kind: explain.KindNodeClaim, Name: claims[0].Name})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "warning: "+note) {
		t.Errorf("explain does not print the controller's warning %q:\n%s", note, out)
	}

	// After: the pod was evicted for good, and the Node says so.
	s.waitEvent(events.OwnerlessPodEvicted, nodeName, "Pod "+s.ns+"/bare was evicted", 2*time.Minute)
	test.Eventually(t, time.Minute, func(ctx context.Context) error {
		return expectNoPod(ctx, s.env.Client, bare)
	})
}

func expectNoPod(ctx context.Context, c client.Client, p *corev1.Pod) error {
	err := c.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{})
	if err == nil {
		return fmt.Errorf("pod %s/%s still exists", p.Namespace, p.Name)
	}
	return client.IgnoreNotFound(err)
}
