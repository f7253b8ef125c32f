package interruption

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/logging"
)

// SQSAPI is the part of the SQS client the controller calls.
type SQSAPI interface {
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// UnavailableOfferings is implemented by the provider's offering cache: an
// interrupted offering is not launched again until the cache expires it.
type UnavailableOfferings interface {
	MarkUnavailable(reason, instanceType, zone, capacityType string)
}

// Reasons passed to MarkUnavailable.
const (
	UnavailableSpotInterruption                = "SpotInterruption"
	UnavailableCapacityReservationInterruption = "CapacityReservationInterruption"
)

// Defaults, Karpenter's.
const (
	DefaultWaitTime          = 20 * time.Second
	DefaultVisibilityTimeout = 20 * time.Second
	DefaultWorkers           = 10
	maxMessages              = 10
)

// Options configure the controller.
type Options struct {
	// Client reads NodeClaims and Nodes, taints Nodes and deletes
	// NodeClaims.
	Client client.Client
	SQS    SQSAPI
	// QueueName is the INTERRUPTION_QUEUE setting.
	QueueName string
	// Offerings learns which offerings were interrupted.
	Offerings UnavailableOfferings
	Recorder  events.Recorder
	// NodeClassKinds are the node classes whose NodeClaims the controller
	// acts on; by default EC2NodeClass.
	NodeClassKinds cloudprovider.NodeClassKinds
	// EC2, when set, is polled for instance status (DescribeInstanceStatus)
	// every StatusInterval (default DefaultStatusInterval): scheduled
	// events and impaired status checks are acted on as messages are.
	EC2            EC2StatusAPI
	StatusInterval time.Duration
	// WaitTime is the long-poll wait of one receive (default
	// DefaultWaitTime); Workers the messages handled in parallel.
	WaitTime time.Duration
	Workers  int
	Clock    clock.Clock
}

// Controller drains the interruption queue: see the package doc.
type Controller struct {
	opts Options

	mu       sync.Mutex
	queueURL string
}

var (
	_ manager.Runnable               = (*Controller)(nil)
	_ manager.LeaderElectionRunnable = (*Controller)(nil)
)

// New validates opts and returns the controller; add it to a manager.
func New(opts Options) (*Controller, error) {
	var errs []error
	if opts.Client == nil || opts.SQS == nil || opts.Offerings == nil || opts.Recorder == nil {
		errs = append(errs, errors.New("Client, SQS, Offerings and Recorder are required"))
	}
	if opts.QueueName == "" {
		errs = append(errs, errors.New("QueueName (INTERRUPTION_QUEUE) is required"))
	}
	if opts.WaitTime < 0 || opts.WaitTime > DefaultWaitTime || opts.Workers < 0 {
		errs = append(errs, errors.New("WaitTime must be within [0, 20s] and Workers must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("interruption options: %w", err)
	}
	if opts.NodeClassKinds == nil {
		opts.NodeClassKinds = cloudprovider.NodeClassKinds{schema.GroupKind{Group: awsv1.Group, Kind: "EC2NodeClass"}: true}
	}
	if opts.Workers == 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Controller{opts: opts}, nil
}

// NeedLeaderElection: only the leader acts on interruptions.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start polls the queue until ctx is done. A failing poll (the queue does
// not exist yet, throttling) is logged and retried after a pause.
func (c *Controller) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("interruption").WithValues(logging.Queue, c.opts.QueueName)
	ctx = log.IntoContext(ctx, logger)
	wait := c.opts.WaitTime
	if wait == 0 {
		wait = DefaultWaitTime
	}
	if c.opts.EC2 != nil {
		go c.pollStatus(ctx)
	}
	for ctx.Err() == nil {
		if err := c.Poll(ctx, wait); err != nil && ctx.Err() == nil {
			logger.Error(err, "polling the interruption queue")
			select {
			case <-ctx.Done():
			case <-c.opts.Clock.After(10 * time.Second):
			}
		}
	}
	return nil
}

func (c *Controller) url(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queueURL != "" {
		return c.queueURL, nil
	}
	out, err := c.opts.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(c.opts.QueueName)})
	if err != nil {
		return "", fmt.Errorf("finding the interruption queue %s (INTERRUPTION_QUEUE; create it with its EventBridge rules, or unset the setting): %w", c.opts.QueueName, err)
	}
	c.queueURL = aws.ToString(out.QueueUrl)
	return c.queueURL, nil
}

// Poll receives one batch of messages (waiting up to wait for the first)
// and handles them. Tests call it directly.
func (c *Controller) Poll(ctx context.Context, wait time.Duration) error {
	url, err := c.url(ctx)
	if err != nil {
		return err
	}
	out, err := c.opts.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         maxMessages,
		WaitTimeSeconds:             int32(wait / time.Second),
		VisibilityTimeout:           int32(DefaultVisibilityTimeout / time.Second),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
	})
	if err != nil {
		return fmt.Errorf("receiving from the interruption queue %s: %w", c.opts.QueueName, err)
	}
	if len(out.Messages) == 0 {
		return nil
	}
	nodeClaims := &v1.NodeClaimList{}
	if err := c.opts.Client.List(ctx, nodeClaims); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	byInstance := map[string]*v1.NodeClaim{}
	for i := range nodeClaims.Items {
		nc := &nodeClaims.Items[i]
		if id := instanceID(nc.Status.ProviderID); id != "" {
			byInstance[id] = nc
		}
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, c.opts.Workers)
	)
	for _, m := range out.Messages {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := c.handle(ctx, url, m, byInstance); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// instanceID is the instance id of an aws:///<zone>/<id> providerID.
func instanceID(providerID string) string {
	if !strings.HasPrefix(providerID, "aws://") {
		return ""
	}
	return providerID[strings.LastIndex(providerID, "/")+1:]
}

// handle acts on one message and deletes it; a message whose action failed
// stays in the queue and comes back after its visibility timeout.
func (c *Controller) handle(ctx context.Context, url string, m sqstypes.Message, byInstance map[string]*v1.NodeClaim) error {
	logger := logr.FromContextOrDiscard(ctx)
	msg, err := Parse(aws.ToString(m.Body))
	if err != nil {
		ReceivedMessages.WithLabelValues("unknown").Inc()
		logger.Info("deleting an interruption message that does not parse", logging.Error, err.Error(), logging.MessageID, aws.ToString(m.MessageId))
		return c.delete(ctx, url, m)
	}
	ReceivedMessages.WithLabelValues(string(msg.Kind)).Inc()
	var errs []error
	for _, id := range msg.InstanceIDs {
		nc := byInstance[id]
		if nc == nil || !c.opts.NodeClassKinds.Manages(nc.Spec.NodeClassRef) {
			continue // not an instance of this provider's NodeClaims
		}
		if err := c.act(ctx, msg, id, nc); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("handling %s message for %s: %w", msg.Kind, strings.Join(msg.InstanceIDs, ", "), err)
	}
	return c.delete(ctx, url, m)
}

func (c *Controller) delete(ctx context.Context, url string, m sqstypes.Message) error {
	if _, err := c.opts.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		return fmt.Errorf("deleting interruption message %s: %w", aws.ToString(m.MessageId), err)
	}
	DeletedMessages.Inc()
	if ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		MessageQueueDuration.Observe(c.opts.Clock.Since(time.UnixMilli(ms)).Seconds())
	}
	return nil
}

// act publishes the message's event and takes its action on nc.
func (c *Controller) act(ctx context.Context, msg Message, instance string, nc *v1.NodeClaim) error {
	node, err := c.node(ctx, nc)
	if err != nil {
		return err
	}
	ev := kindEvents[msg.Kind]
	publish := func(reason, format string, args ...any) {
		mk := events.Normal
		if ev.warning {
			mk = events.Warning
		}
		evts := []events.Event{mk(nc, reason, "Interrupt", format, args...)}
		if node != nil {
			evts = append(evts, mk(node, reason, "Interrupt", format, args...))
		}
		c.opts.Recorder.Publish(evts...)
	}
	if ev.reason != "" {
		publish(ev.reason, ev.note, instance)
	}
	instanceType, zone := nc.Labels[v1.LabelInstanceType], nc.Labels[v1.LabelTopologyZone]
	switch msg.Kind {
	case KindRebalanceRecommendation, KindNoOp:
		return nil
	case KindSpotInterruption:
		if instanceType != "" && zone != "" {
			c.opts.Offerings.MarkUnavailable(UnavailableSpotInterruption, instanceType, zone, v1.CapacityTypeSpot)
		}
	case KindCapacityReservationInterupt:
		if instanceType != "" && zone != "" {
			c.opts.Offerings.MarkUnavailable(UnavailableCapacityReservationInterruption, instanceType, zone, v1.CapacityTypeReserved)
		}
	}
	if !nc.DeletionTimestamp.IsZero() {
		return nil
	}
	if node != nil {
		if err := c.cordon(ctx, node); err != nil {
			return err
		}
	}
	if err := c.opts.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err)
	}
	publish(ReasonTerminatingOnInterruption, "Interrupted by %s: cordoned, draining and replacing NodeClaim %s", msg.Kind, nc.Name)
	log.FromContext(ctx).Info("deleted nodeclaim on interruption", logging.NodeClaim, klog.KObj(nc), logging.Instance, instance, logging.ProviderID, nc.Status.ProviderID, logging.MessageType, string(msg.Kind))
	return nil
}

// node is nc's Node, nil when it has none.
func (c *Controller) node(ctx context.Context, nc *v1.NodeClaim) (*corev1.Node, error) {
	if nc.Status.NodeName == "" {
		return nil, nil
	}
	node := &corev1.Node{}
	if err := c.opts.Client.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return node, nil
}

// cordon adds the karpenter.sh/disrupted:NoSchedule taint, so nothing new
// lands on the node before termination drains it.
func (c *Controller) cordon(ctx context.Context, node *corev1.Node) error {
	if v1.HasDisruptedTaint(node.Spec.Taints) {
		return nil
	}
	stored := node.DeepCopy()
	node.Spec.Taints = append(node.Spec.Taints, v1.DisruptedNoScheduleTaint)
	if err := c.opts.Client.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("cordoning node %s: %w", node.Name, client.IgnoreNotFound(err))
	}
	return nil
}
