package provisioning

import (
	"sync"
	"time"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// inflightTTL bounds how long a NodeClaim the provisioner created is assumed
// to exist while the cache has not shown it yet.
const inflightTTL = 30 * time.Second

// inflight remembers the NodeClaims this provisioner created until the
// cache shows them, so a batch that starts right after another one does not
// plan the same pods again (the cache lags the provisioner's own writes).
type inflight struct {
	mu      sync.Mutex
	created map[string]inflightClaim
}

type inflightClaim struct {
	claim *v1.NodeClaim
	at    time.Time
}

func (f *inflight) add(nc *v1.NodeClaim, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.created == nil {
		f.created = map[string]inflightClaim{}
	}
	f.created[nc.Name] = inflightClaim{claim: nc, at: now}
}

// merge returns the cached NodeClaims plus the created ones the cache does
// not show yet, forgetting those it shows and those older than inflightTTL.
func (f *inflight) merge(cached []v1.NodeClaim, now time.Time) []*v1.NodeClaim {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*v1.NodeClaim, 0, len(cached)+len(f.created))
	seen := make(map[string]bool, len(cached))
	for i := range cached {
		out = append(out, &cached[i])
		seen[cached[i].Name] = true
	}
	for name, c := range f.created {
		if seen[name] || now.Sub(c.at) > inflightTTL {
			delete(f.created, name)
			continue
		}
		out = append(out, c.claim)
	}
	return out
}
