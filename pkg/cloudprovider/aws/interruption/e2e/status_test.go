package e2e

import (
	"net/http"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/interruption"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// motoEndpoint is the local EC2 the package's tests share.
var motoEndpoint string

// Instance status polling (DescribeInstanceStatus through aws-sdk-go-v2 on
// the wire; the local EC2's front answers what moto cannot report): an
// instance with a pending scheduled event and one whose status check is
// impaired are cordoned and their NodeClaims deleted with an
// InstanceUnhealthy event; a healthy one is left alone.
func TestInstanceStatusPolling(t *testing.T) {
	ctx := t.Context()
	kube := test.Env(t).Client
	retiring := launched(t, "i-00000000retiring", v1.CapacityTypeOnDemand, ec2Ref)
	impaired := launched(t, "i-00000000impaired", v1.CapacityTypeOnDemand, ec2Ref)
	healthy := launched(t, "i-000000000healthy", v1.CapacityTypeOnDemand, ec2Ref)
	front := localec2.NewStatusFront(nil)
	front.SetHealth("i-00000000retiring", localec2.InstanceHealth{Events: []string{"instance-retirement"}})
	front.SetHealth("i-00000000impaired", localec2.InstanceHealth{Impaired: true})
	front.SetHealth("i-000000000healthy", localec2.InstanceHealth{})
	cfg := localec2.Config(motoEndpoint, localec2.Region)
	cfg.HTTPClient = &http.Client{Transport: front}
	recorder := &events.Buffer{}
	c, err := interruption.New(interruption.Options{Client: kube, SQS: sqsClient, QueueName: "unused", Offerings: &offerings{}, Recorder: recorder,
		EC2: ec2.NewFromConfig(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PollInstanceStatus(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f       fixture
		deleted bool
	}{{retiring, true}, {impaired, true}, {healthy, false}} {
		got := &v1.NodeClaim{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(tc.f.nc), got); err != nil {
			t.Fatal(err)
		}
		if deleted := !got.DeletionTimestamp.IsZero(); deleted != tc.deleted {
			t.Errorf("nodeclaim %s deleted = %v, want %v", tc.f.nc.Name, deleted, tc.deleted)
		}
		node := &corev1.Node{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(tc.f.node), node); err != nil {
			t.Fatal(err)
		}
		cordoned := slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&v1.DisruptedNoScheduleTaint) })
		if cordoned != tc.deleted {
			t.Errorf("node %s cordoned = %v, want %v", node.Name, cordoned, tc.deleted)
		}
	}
	if n := slices.Index(recorder.Reasons(), interruption.ReasonInstanceUnhealthy); n < 0 {
		t.Errorf("no %s event; published %v", interruption.ReasonInstanceUnhealthy, recorder.Reasons())
	}
}
