// Package e2e drives the interruption controller with messages sent to an
// SQS queue of the local AWS (moto_server, through localec2), acting on
// NodeClaims and Nodes of a real API server.
package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/apis"
	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/interruption"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

var sqsClient *sqs.Client

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apis.AddToScheme(s)
	return s
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	srv, err := localec2.Start(context.Background(), localec2.StartOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer func() { _ = srv.Stop() }() // Stop kills moto_server and always returns nil
	sqsClient = sqs.NewFromConfig(srv.Config())
	motoEndpoint = srv.Endpoint
	return test.Run(m, controlplane.Options{CRDDirectories: []string{test.RepoPath("pkg/apis/crds")}, Scheme: scheme()})
}

// offerings records MarkUnavailable calls.
type offerings struct {
	mu    sync.Mutex
	calls []string
}

func (o *offerings) MarkUnavailable(reason, instanceType, zone, capacityType string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, strings.Join([]string{reason, instanceType, zone, capacityType}, "/"))
}

// fixture is a NodeClaim with its Node, launched as instance id.
type fixture struct {
	nc   *v1.NodeClaim
	node *corev1.Node
}

func launched(t *testing.T, id, capacityType string, ref *v1.NodeClassReference) fixture {
	t.Helper()
	env := test.Env(t)
	name := test.Name(t, "nc-"+id)
	providerID := "aws:///us-east-1b/" + id
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	env.Create(t, node)
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{v1.TerminationFinalizer}, Labels: map[string]string{
			v1.LabelInstanceType: "m5.large", v1.LabelTopologyZone: "us-east-1b", v1.LabelCapacityType: capacityType,
		}},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: ref,
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{capacityType}}},
			Resources:    v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		},
	}
	env.Create(t, nc)
	nc.Status.ProviderID, nc.Status.NodeName = providerID, name
	if err := env.Client.Status().Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		got := &v1.NodeClaim{}
		if env.Client.Get(ctx, client.ObjectKeyFromObject(nc), got) == nil {
			got.Finalizers = nil
			_ = env.Client.Update(ctx, got)
		}
	})
	return fixture{nc: nc, node: node}
}

var ec2Ref = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}

// TestInterruptionMessages sends one message of each kind, plus one that
// does not parse and one about another provider's NodeClaim, and checks
// what the controller did to the NodeClaims, the Nodes, the offerings, the
// queue and the metrics.
func TestInterruptionMessages(t *testing.T) {
	ctx := t.Context()
	queue := test.Name(t, "q")
	q, err := sqsClient.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(queue)})
	if err != nil {
		t.Fatal(err)
	}
	kube := test.Env(t).Client
	spot := launched(t, "i-0000000000000spot", v1.CapacityTypeSpot, ec2Ref)
	rebalance := launched(t, "i-000000000rebalance", v1.CapacityTypeSpot, ec2Ref)
	stopping := launched(t, "i-0000000000stopping", v1.CapacityTypeOnDemand, ec2Ref)
	health := launched(t, "i-00000000000health", v1.CapacityTypeOnDemand, ec2Ref)
	reserved := launched(t, "i-0000000000reserved", v1.CapacityTypeReserved, ec2Ref)
	other := launched(t, "i-000000000000other", v1.CapacityTypeSpot, &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: "x"})

	bodies := []string{
		`{"version":"0","id":"1","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","time":"2026-01-01T00:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1b:instance/i-0000000000000spot"],"detail":{"instance-id":"i-0000000000000spot","instance-action":"terminate"}}`,
		`{"version":"0","id":"2","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","time":"2026-01-01T00:00:00Z","region":"us-east-1","resources":[],"detail":{"instance-id":"i-000000000rebalance"}}`,
		`{"version":"0","id":"3","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","time":"2026-01-01T00:00:00Z","region":"us-east-1","resources":[],"detail":{"instance-id":"i-0000000000stopping","state":"stopping"}}`,
		`{"version":"0","id":"4","detail-type":"AWS Health Event","source":"aws.health","time":"2026-01-01T00:00:00Z","region":"us-east-1","resources":[],"detail":{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"i-00000000000health"}]}}`,
		`{"version":"0","id":"5","detail-type":"EC2 Capacity Reservation Instance Interruption Warning","source":"aws.ec2","time":"2026-01-01T00:00:00Z","region":"us-east-1","resources":[],"detail":{"capacity-reservation-id":"cr-0123","instance-id":"i-0000000000reserved"}}`,
		`{"version":"0","id":"6","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","time":"2026-01-01T00:00:00Z","region":"us-east-1","resources":[],"detail":{"instance-id":"i-000000000000other"}}`,
		`this is not an event`,
	}
	for _, b := range bodies {
		if _, err := sqsClient.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}

	offers := &offerings{}
	recorder := &events.Buffer{}
	c, err := interruption.New(interruption.Options{Client: kube, SQS: sqsClient, QueueName: queue, Offerings: offers, Recorder: recorder})
	if err != nil {
		t.Fatal(err)
	}
	unknown := testutil.ToFloat64(interruption.ReceivedMessages.WithLabelValues("unknown"))
	deleted := testutil.ToFloat64(interruption.DeletedMessages)
	// moto hands out at most 10 messages per receive; poll until the
	// queue is drained.
	for range 3 {
		if err := c.Poll(ctx, time.Second); err != nil {
			t.Fatal(err)
		}
	}

	for _, f := range []fixture{spot, stopping, health, reserved} {
		got := &v1.NodeClaim{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(f.nc), got); err != nil {
			t.Fatal(err)
		}
		if got.DeletionTimestamp.IsZero() {
			t.Errorf("nodeclaim %s was not deleted", f.nc.Name)
		}
		node := &corev1.Node{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(f.node), node); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&v1.DisruptedNoScheduleTaint) }) {
			t.Errorf("node %s was not cordoned: taints %v", node.Name, node.Spec.Taints)
		}
	}
	for _, f := range []fixture{rebalance, other} {
		got := &v1.NodeClaim{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(f.nc), got); err != nil {
			t.Fatal(err)
		}
		if !got.DeletionTimestamp.IsZero() {
			t.Errorf("nodeclaim %s was deleted, want it left alone", f.nc.Name)
		}
	}

	wantCalls := []string{
		"CapacityReservationInterruption/m5.large/us-east-1b/reserved",
		"SpotInterruption/m5.large/us-east-1b/spot",
	}
	slices.Sort(offers.calls)
	if !slices.Equal(offers.calls, wantCalls) {
		t.Errorf("MarkUnavailable calls = %v, want %v", offers.calls, wantCalls)
	}

	reasons := recorder.Reasons()
	for _, want := range []string{
		interruption.ReasonSpotInterrupted, interruption.ReasonSpotRebalanceRecommendation, interruption.ReasonInstanceStopping,
		interruption.ReasonInstanceUnhealthy, interruption.ReasonCapacityReservationInstanceInterrupted, interruption.ReasonTerminatingOnInterruption,
	} {
		if !slices.Contains(reasons, want) {
			t.Errorf("no %s event; published %v", want, reasons)
		}
	}
	for _, e := range recorder.Events() {
		if strings.Contains(e.Message, "i-000000000000other") {
			t.Errorf("another provider's NodeClaim got an event: %s %s", e.Reason, e.Message)
		}
	}

	if got := testutil.ToFloat64(interruption.ReceivedMessages.WithLabelValues("unknown")) - unknown; got != 1 {
		t.Errorf("unparsable messages counted = %v, want 1", got)
	}
	if got := testutil.ToFloat64(interruption.DeletedMessages) - deleted; got != float64(len(bodies)) {
		t.Errorf("deleted messages = %v, want %d (every message, the unparsable one too)", got, len(bodies))
	}
	attrs, err := sqsClient.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"}})
	if err != nil {
		t.Fatal(err)
	}
	if attrs.Attributes["ApproximateNumberOfMessages"] != "0" || attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] != "0" {
		t.Errorf("queue still holds messages: %v", attrs.Attributes)
	}
}

// TestMissingQueueSaysWhatToDo: a queue name that does not exist is an
// error naming the setting.
func TestMissingQueueSaysWhatToDo(t *testing.T) {
	c, err := interruption.New(interruption.Options{Client: test.Env(t).Client, SQS: sqsClient, QueueName: "no-such-queue", Offerings: &offerings{}, Recorder: &events.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Poll(t.Context(), 0)
	if err == nil || !strings.Contains(err.Error(), "INTERRUPTION_QUEUE") || !strings.Contains(err.Error(), "no-such-queue") {
		t.Fatalf("Poll = %v, want an error naming INTERRUPTION_QUEUE and the queue", err)
	}
}
