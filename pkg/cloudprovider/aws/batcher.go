package aws

import (
	"context"
	"sync"
	"time"

	"github.com/joiner-dev/joiner/pkg/metrics"
)

// idBatcher merges concurrent calls about single instance ids into one
// call about many (Karpenter's DescribeInstances and TerminateInstances
// batchers, §3.12): a batch closes after an idle window without a new id,
// at the maximum window, or at maxItems ids. The windows are real time:
// they bound latency, not logic.
type idBatcher[T any] struct {
	// name is the batched API, the batcher label of Karpenter's
	// karpenter_cloudprovider_batcher_* metrics.
	name      string
	idle, max time.Duration
	maxItems  int
	exec      func(ctx context.Context, ids []string) (map[string]T, error)

	mu  sync.Mutex
	cur *idBatch[T]
}

type idResult[T any] struct {
	value T
	found bool
	err   error
}

type idBatch[T any] struct {
	ids     []string
	waiters map[string][]chan idResult[T]
	added   chan struct{}
	full    chan struct{}
}

func newIDBatcher[T any](name string, idle, max time.Duration, maxItems int, exec func(context.Context, []string) (map[string]T, error)) *idBatcher[T] {
	return &idBatcher[T]{name: name, idle: idle, max: max, maxItems: maxItems, exec: exec}
}

// do adds id to the open batch and waits for its result; found is false
// when the call did not return the id.
func (b *idBatcher[T]) do(ctx context.Context, id string) (T, bool, error) {
	ch := make(chan idResult[T], 1)
	b.mu.Lock()
	batch := b.cur
	if batch == nil {
		batch = &idBatch[T]{waiters: map[string][]chan idResult[T]{}, added: make(chan struct{}, 1), full: make(chan struct{})}
		b.cur = batch
		go b.run(batch)
	}
	if _, ok := batch.waiters[id]; !ok {
		batch.ids = append(batch.ids, id)
	}
	batch.waiters[id] = append(batch.waiters[id], ch)
	if len(batch.ids) >= b.maxItems {
		b.cur = nil
		close(batch.full)
	} else {
		select {
		case batch.added <- struct{}{}:
		default:
		}
	}
	b.mu.Unlock()
	select {
	case r := <-ch:
		return r.value, r.found, r.err
	case <-ctx.Done():
		var zero T
		return zero, false, ctx.Err()
	}
}

func (b *idBatcher[T]) run(batch *idBatch[T]) {
	opened := time.Now()
	deadline := time.NewTimer(b.max)
	idle := time.NewTimer(b.idle)
wait:
	for {
		select {
		case <-batch.added:
			idle.Reset(b.idle)
		case <-idle.C:
			break wait
		case <-deadline.C:
			break wait
		case <-batch.full:
			break wait
		}
	}
	idle.Stop()
	deadline.Stop()
	b.mu.Lock()
	if b.cur == batch {
		b.cur = nil
	}
	ids := append([]string(nil), batch.ids...)
	waiters := batch.waiters
	b.mu.Unlock()
	metrics.BatcherBatchTime.WithLabelValues(b.name).Observe(time.Since(opened).Seconds())
	metrics.BatcherBatchSize.WithLabelValues(b.name).Observe(float64(len(ids)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	values, err := b.exec(ctx, ids)
	for id, chs := range waiters {
		v, ok := values[id]
		for _, ch := range chs {
			ch <- idResult[T]{value: v, found: ok, err: err}
		}
	}
}
