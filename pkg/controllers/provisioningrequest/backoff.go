package provisioningrequest

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// backoff is each request's retry delay after attempts that failed:
// base, doubling per failure, at most limit.
type backoff struct {
	mu          sync.Mutex
	base, limit time.Duration
	failures    map[types.NamespacedName]int
	next        map[types.NamespacedName]time.Time
}

func newBackoff(base, limit time.Duration) *backoff {
	return &backoff{base: base, limit: limit, failures: map[types.NamespacedName]int{}, next: map[types.NamespacedName]time.Time{}}
}

// failed records a failed attempt at now and returns the wait before the
// next one.
func (b *backoff) failed(key types.NamespacedName, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.failures[key]
	b.failures[key] = n + 1
	d := min(b.base<<min(n, 16), b.limit)
	b.next[key] = now.Add(d)
	return d
}

// wait is how long before key may be attempted again (0: now).
func (b *backoff) wait(key types.NamespacedName, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.next[key]; ok && now.Before(t) {
		return t.Sub(now)
	}
	return 0
}

func (b *backoff) forget(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.failures, key)
	delete(b.next, key)
}
