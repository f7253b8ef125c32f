package provisioning

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// inflightTTL bounds how long a NodeClaim the provisioner created is assumed
// to exist while the cluster state has not shown it yet.
const inflightTTL = 30 * time.Second

// inflight remembers the NodeClaims this provisioner created, with the pods
// nominated to them, until the cluster state shows them, so a batch that
// starts right after another one does not plan the same pods again (the
// state lags the provisioner's own writes by an informer round trip).
type inflight struct {
	mu      sync.Mutex
	created map[string]*inflightClaim
}

type inflightClaim struct {
	claim *v1.NodeClaim
	pods  []*corev1.Pod
	at    time.Time
}

func (f *inflight) add(nc *v1.NodeClaim, pods []*corev1.Pod, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.created == nil {
		f.created = map[string]*inflightClaim{}
	}
	f.created[nc.Name] = &inflightClaim{claim: nc, pods: pods, at: now}
}

// nominate adds pods to a remembered claim (no-op for other claims).
func (f *inflight) nominate(name string, pods []*corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.created[name]; ok {
		c.pods = append(c.pods, pods...)
	}
}

// unseen returns the remembered claims the state has not shown, forgetting
// those it shows and those older than inflightTTL.
func (f *inflight) unseen(seen map[string]bool, now time.Time) []*inflightClaim {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*inflightClaim
	for name, c := range f.created {
		if seen[name] || now.Sub(c.at) > inflightTTL {
			delete(f.created, name)
			continue
		}
		out = append(out, &inflightClaim{claim: c.claim, pods: append([]*corev1.Pod(nil), c.pods...), at: c.at})
	}
	return out
}
