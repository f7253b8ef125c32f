package interruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// EC2StatusAPI is the EC2 call instance status polling makes.
type EC2StatusAPI interface {
	DescribeInstanceStatus(context.Context, *ec2.DescribeInstanceStatusInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceStatusOutput, error)
}

// KindInstanceImpaired is an instance whose EC2 status check (instance or
// system) reports impaired: found by polling, not by a queue message.
const KindInstanceImpaired Kind = "instance_impaired"

// DefaultStatusInterval is how often instance status is polled.
const DefaultStatusInterval = time.Minute

// statusBatch is DescribeInstanceStatus's most instance ids per call.
const statusBatch = 100

// PollInstanceStatus asks EC2 for the status of every NodeClaim's
// instance and acts as on an interruption message: an instance with a
// scheduled event (retirement, reboot, maintenance) not yet completed or
// canceled as on an AWS Health scheduled change, one whose instance or
// system status check is impaired as on an unhealthy instance: cordoned,
// and its NodeClaim deleted so it is replaced. This catches what the
// queue misses when EventBridge rules are absent.
func (c *Controller) PollInstanceStatus(ctx context.Context) error {
	if c.opts.EC2 == nil {
		return nil
	}
	nodeClaims := &v1.NodeClaimList{}
	if err := c.opts.Client.List(ctx, nodeClaims); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	byInstance := map[string]*v1.NodeClaim{}
	var ids []string
	for i := range nodeClaims.Items {
		nc := &nodeClaims.Items[i]
		if id := instanceID(nc.Status.ProviderID); id != "" && nc.DeletionTimestamp.IsZero() && c.opts.NodeClassKinds.Manages(nc.Spec.NodeClassRef) {
			byInstance[id] = nc
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var errs []error
	for start := 0; start < len(ids); start += statusBatch {
		batch := ids[start:min(start+statusBatch, len(ids))]
		out, err := c.opts.EC2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{InstanceIds: batch})
		if err != nil {
			errs = append(errs, fmt.Errorf("describing instance status: %w", err))
			continue
		}
		for _, st := range out.InstanceStatuses {
			id := aws.ToString(st.InstanceId)
			nc := byInstance[id]
			if nc == nil {
				continue
			}
			kind := statusKind(st)
			if kind == "" {
				continue
			}
			if err := c.act(ctx, Message{Kind: kind, InstanceIDs: []string{id}}, id, nc); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// statusKind is what an instance status calls for: a pending scheduled
// event is a scheduled change, an impaired check an impaired instance.
func statusKind(st ec2types.InstanceStatus) Kind {
	for _, e := range st.Events {
		d := aws.ToString(e.Description)
		if !strings.HasPrefix(d, "[Completed]") && !strings.HasPrefix(d, "[Canceled]") {
			return KindScheduledChange
		}
	}
	impaired := func(s *ec2types.InstanceStatusSummary) bool {
		return s != nil && s.Status == ec2types.SummaryStatusImpaired
	}
	if impaired(st.InstanceStatus) || impaired(st.SystemStatus) {
		return KindInstanceImpaired
	}
	return ""
}

// pollStatus runs PollInstanceStatus every interval until ctx is done.
func (c *Controller) pollStatus(ctx context.Context) {
	interval := c.opts.StatusInterval
	if interval == 0 {
		interval = DefaultStatusInterval
	}
	for {
		if err := c.PollInstanceStatus(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "polling instance status")
		}
		select {
		case <-ctx.Done():
			return
		case <-c.opts.Clock.After(interval):
		}
	}
}
