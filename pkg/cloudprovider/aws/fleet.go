package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// maxFleetBatch bounds how many identical launches one CreateFleet carries
// (Karpenter: 1000).
const maxFleetBatch = 1000

// fleetInstance is one instance a fleet launched.
type fleetInstance struct {
	ID, InstanceType, SubnetID, Lifecycle, LaunchTemplate string
	// PlacementGroupID is the placement group it launched into.
	PlacementGroupID string
}

// fleetResult is what one launch request gets back: its instance, or the
// fleet's errors when there was none for it.
type fleetResult struct {
	instance *fleetInstance
	errors   []ec2types.CreateFleetError
	err      error
}

// fleetBatcher merges concurrent identical CreateFleet requests (same
// templates, overrides, capacity type and tags) into one call whose target
// capacity is their count, and splits the instances back (§3.12). A batch
// closes after an idle window without a new request, or at the maximum
// window. The windows are real time: they bound latency, not logic.
type fleetBatcher struct {
	ec2       EC2API
	idle, max time.Duration

	mu      sync.Mutex
	pending map[string]*fleetBatch
}

type fleetBatch struct {
	input   *ec2.CreateFleetInput
	waiters []chan fleetResult
	added   chan struct{}
}

func newFleetBatcher(e EC2API, idle, max time.Duration) *fleetBatcher {
	return &fleetBatcher{ec2: e, idle: idle, max: max, pending: map[string]*fleetBatch{}}
}

// launch asks for one instance of in (whose target capacity is ignored)
// and waits for the batch it joins.
func (b *fleetBatcher) launch(ctx context.Context, in *ec2.CreateFleetInput) fleetResult {
	keyBytes, _ := json.Marshal(in)
	key := string(keyBytes)
	ch := make(chan fleetResult, 1)
	b.mu.Lock()
	batch, ok := b.pending[key]
	if !ok || len(batch.waiters) >= maxFleetBatch {
		batch = &fleetBatch{input: in, added: make(chan struct{}, 1)}
		b.pending[key] = batch
		go b.run(key, batch)
	}
	batch.waiters = append(batch.waiters, ch)
	select {
	case batch.added <- struct{}{}:
	default:
	}
	b.mu.Unlock()
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return fleetResult{err: ctx.Err()}
	}
}

func (b *fleetBatcher) run(key string, batch *fleetBatch) {
	deadline := time.Now().Add(b.max)
	idle := time.NewTimer(b.idle)
	<-batch.added // the first request
wait:
	for {
		select {
		case <-batch.added:
			if time.Now().After(deadline) {
				break wait
			}
			idle.Reset(b.idle)
		case <-idle.C:
			break wait
		}
	}
	idle.Stop()
	b.mu.Lock()
	if b.pending[key] == batch {
		delete(b.pending, key)
	}
	waiters := batch.waiters
	b.mu.Unlock()

	in := *batch.input
	spec := *in.TargetCapacitySpecification
	spec.TotalTargetCapacity = aws.Int32(int32(len(waiters)))
	in.TargetCapacitySpecification = &spec
	// The launches already waited; they get their own deadline.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := b.ec2.CreateFleet(ctx, &in)
	if err != nil {
		for _, w := range waiters {
			w <- fleetResult{err: fmt.Errorf("creating fleet: %w", err)}
		}
		return
	}
	var instances []fleetInstance
	for _, fi := range out.Instances {
		var typ, subnet, lt string
		if o := fi.LaunchTemplateAndOverrides; o != nil {
			if o.Overrides != nil {
				typ, subnet = string(o.Overrides.InstanceType), aws.ToString(o.Overrides.SubnetId)
			}
			if o.LaunchTemplateSpecification != nil {
				lt = aws.ToString(o.LaunchTemplateSpecification.LaunchTemplateName)
			}
		}
		if typ == "" {
			typ = string(fi.InstanceType)
		}
		for _, id := range fi.InstanceIds {
			instances = append(instances, fleetInstance{ID: id, InstanceType: typ, SubnetID: subnet, Lifecycle: string(fi.Lifecycle), LaunchTemplate: lt})
		}
	}
	for i, w := range waiters {
		if i < len(instances) {
			w <- fleetResult{instance: &instances[i], errors: out.Errors}
		} else {
			w <- fleetResult{errors: out.Errors}
		}
	}
}
