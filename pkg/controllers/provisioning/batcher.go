package provisioning

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Batcher gathers provisioning triggers into windows. A window opens on the
// first trigger; every new trigger extends it by the idle duration, up to
// the max duration from its first trigger. Triggers for a pod already in the
// open window do not extend it, so one pod's status churn cannot hold a
// batch open.
type Batcher struct {
	clock clock.Clock
	idle  time.Duration
	max   time.Duration

	mu      sync.Mutex
	seen    map[types.UID]struct{}
	trigger chan struct{}
}

// NewBatcher returns a Batcher with the given window bounds.
func NewBatcher(clk clock.Clock, idle, max time.Duration) *Batcher {
	return &Batcher{
		clock:   clk,
		idle:    idle,
		max:     max,
		seen:    map[types.UID]struct{}{},
		trigger: make(chan struct{}, 1),
	}
}

// Trigger records that the pod with uid may need capacity. It never blocks.
func (b *Batcher) Trigger(uid types.UID) {
	b.mu.Lock()
	if _, ok := b.seen[uid]; ok {
		b.mu.Unlock()
		return
	}
	b.seen[uid] = struct{}{}
	b.mu.Unlock()
	select {
	case b.trigger <- struct{}{}:
	default:
	}
}

// Wait blocks until a window has opened and closed, and reports whether one
// did: false means ctx ended first. The pods that triggered the window are
// forgotten, so the next window starts from nothing.
func (b *Batcher) Wait(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-b.trigger:
	}
	deadline := b.clock.NewTimer(b.max)
	defer deadline.Stop()
	idle := b.clock.NewTimer(b.idle)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-b.trigger:
			if !idle.Stop() {
				select {
				case <-idle.C():
				default:
				}
			}
			idle.Reset(b.idle)
		case <-idle.C():
			b.reset()
			return true
		case <-deadline.C():
			b.reset()
			return true
		}
	}
}

func (b *Batcher) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seen = map[types.UID]struct{}{}
	// A trigger that raced in after the window closed belongs to the next
	// window; leave it in the channel.
}
