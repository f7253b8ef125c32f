package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controllers/node/health"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// Node repair on AWS: with the AWS provider's policies (Karpenter's), a
// node launched on the local EC2 whose Ready condition has been Unknown for
// 29 minutes is left alone and looked at again when the 30 minutes are up;
// past them its NodeClaim is deleted (replaced), and deleting it
// terminates the instance.
func TestNodeRepairReplacesAnUnreachableNode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		unknown  time.Duration
		repaired bool
	}{
		{name: "Ready Unknown for 29m", unknown: 29 * time.Minute},
		{name: "Ready Unknown for 31m", unknown: 31 * time.Minute, repaired: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			env := test.Env(t)
			p := newProvider(t, "cluster-a")
			nc := readyNodeClass(t, p, nodeClass(t))
			claim := nodeClaim(t, nc)
			claim.UID = ""
			claim.Spec.Requirements[0].Values = []string{"m5.large"}
			env.Create(t, claim)
			launched, err := p.Create(ctx, claim)
			if err != nil {
				t.Fatal(err)
			}
			claim.Status = launched.Status
			if err := env.Client.Status().Update(ctx, claim); err != nil {
				t.Fatal(err)
			}
			now := time.Now().Truncate(time.Second)
			node := &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{
					Name:            test.Name(t, "node"),
					Labels:          map[string]string{v1.LabelNodePool: claim.Labels[v1.LabelNodePool]},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodeClaim", Name: claim.Name, UID: claim.UID}},
				},
				Spec: corev1.NodeSpec{ProviderID: claim.Status.ProviderID},
			}
			env.Create(t, node)
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
				LastTransitionTime: metav1.NewTime(now.Add(-tc.unknown)), LastHeartbeatTime: metav1.NewTime(now.Add(-tc.unknown))}}
			if err := env.Client.Status().Update(ctx, node); err != nil {
				t.Fatal(err)
			}
			recorder := &events.Buffer{}
			c, err := health.NewController(health.Options{Client: env.Client, CloudProvider: p, Recorder: recorder, Clock: clocktesting.NewFakeClock(now)})
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: node.Name}})
			if err != nil {
				t.Fatal(err)
			}
			got := &v1.NodeClaim{}
			err = env.Client.Get(ctx, client.ObjectKeyFromObject(claim), got)
			deleted := err != nil || got.DeletionTimestamp != nil
			if deleted != tc.repaired {
				t.Fatalf("NodeClaim deleted = %v, want %v (requeue after %s, events %v)", deleted, tc.repaired, res.RequeueAfter, recorder.Reasons())
			}
			if !tc.repaired {
				if want := 30*time.Minute - tc.unknown; res.RequeueAfter != want {
					t.Errorf("requeue after %s, want %s (when the policy's 30m are up)", res.RequeueAfter, want)
				}
				return
			}
			// The termination controller's part: the instance goes.
			if err := p.Delete(ctx, claim); err != nil {
				t.Fatal(err)
			}
			waitTerminated(t, aws.ToString(describeInstance(t, claim.Status.ProviderID).InstanceId))
		})
	}
}
