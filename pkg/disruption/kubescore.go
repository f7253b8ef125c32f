package disruption

import (
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"

	"github.com/joiner-dev/joiner/pkg/schedulerconfig"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// kubeScores holds what the replay's kube-scheduler score reads, for one
// decision: each scheduler profile's scoring (Options.Scoring), and each
// pod's and existing node's usage of its resources, computed once and
// shared by every simulation of the decision.
type kubeScores struct {
	profiles map[string]schedulerconfig.Scoring
	nodes    map[string]*scheduling.ExistingNode
	podUse   map[string]map[*corev1.Pod]schedulerconfig.Usage
	nodeUse  map[string]map[string]schedulerconfig.Usage
	// daemons are the cluster's DaemonSets, one pod each, and pools its
	// NodePools by name: what a replacement will run beside the pods.
	daemons []*corev1.Pod
	pools   map[string]*scheduling.NodePool
}

// scores is built on first use: only consolidation replays.
func (s *simulator) scores() *kubeScores {
	if s.kube == nil {
		k := &kubeScores{
			profiles: map[string]schedulerconfig.Scoring{"": schedulerconfig.DefaultScoring()},
			nodes:    make(map[string]*scheduling.ExistingNode, len(s.base.Nodes)),
			podUse:   map[string]map[*corev1.Pod]schedulerconfig.Usage{},
			nodeUse:  map[string]map[string]schedulerconfig.Usage{},
			daemons:  s.base.DaemonSets,
			pools:    make(map[string]*scheduling.NodePool, len(s.base.NodePools)),
		}
		for _, np := range s.base.NodePools {
			k.pools[np.Name] = np
		}
		for name, sc := range s.in.Options.Scoring {
			k.profiles[name] = sc
		}
		for _, n := range s.base.Nodes {
			k.nodes[n.Name] = n
		}
		s.kube = k
	}
	return s.kube
}

// profile is the key of the scoring kube-scheduler ranks p's nodes with:
// its scheduler's profile, "" (kube-scheduler's defaults) when
// SCHEDULER_CONFIG has none for it.
func (k *kubeScores) profile(p *corev1.Pod) string {
	name := p.Spec.SchedulerName
	if name == "" {
		name = schedulerconfig.DefaultScheduler
	}
	if _, ok := k.profiles[name]; ok {
		return name
	}
	return ""
}

func (k *kubeScores) usage(profile string, p *corev1.Pod) schedulerconfig.Usage {
	m := k.podUse[profile]
	if m == nil {
		m = map[*corev1.Pod]schedulerconfig.Usage{}
		k.podUse[profile] = m
	}
	u, ok := m[p]
	if !ok {
		u = k.profiles[profile].Usage(p)
		m[p] = u
	}
	return u
}

// existing is an existing node as a destination: its pods' usage so far.
func (k *kubeScores) existing(name string) *destination {
	n := k.nodes[name]
	d := &destination{used: map[string]schedulerconfig.Usage{}}
	if n == nil {
		return d
	}
	d.alloc = n.Allocatable
	d.start = func(profile string) schedulerconfig.Usage {
		m := k.nodeUse[profile]
		if m == nil {
			m = map[string]schedulerconfig.Usage{}
			k.nodeUse[profile] = m
		}
		u, ok := m[name]
		if !ok {
			u = k.profiles[profile].Usage(&corev1.Pod{})
			for _, p := range n.Pods {
				u.Add(k.usage(profile, p))
			}
			m[name] = u
		}
		return u.Clone()
	}
	return d
}

// replacement is a replacement launched as type it and offering o as a
// destination, before the evicted pods land: its DaemonSets and the
// simulation's other pods (the pending ones it planned there).
func (k *kubeScores) replacement(it *scheduling.InstanceType, o scheduling.Offering, nc *scheduling.NewNodeClaim, moved map[*corev1.Pod]bool) *destination {
	d := &destination{alloc: it.Allocatable(), used: map[string]schedulerconfig.Usage{}}
	var daemons []*corev1.Pod
	if len(k.daemons) > 0 {
		pool := k.pools[nc.NodePool]
		launched := *nc
		launched.InstanceTypes = []*scheduling.InstanceType{it}
		labels := launchedLabels(&launched, "", pool)
		labels[v1.LabelTopologyZone], labels[v1.LabelCapacityType] = o.Zone, o.CapacityType
		var taints []corev1.Taint
		if pool != nil {
			taints = pool.Taints
		}
		daemons = scheduling.DaemonPodsFor(k.daemons, labels, taints)
	}
	d.start = func(profile string) schedulerconfig.Usage {
		// Requests are every pod's plus the DaemonSets': take the evicted
		// pods out, and add what the scores count beyond the requests of
		// the others, DaemonSet pods included (a container that requests
		// no cpu or memory counts 100m and 200 MiB: pods.NonZeroRequestsInto).
		req := k.profiles[profile].Allocatable(nc.Requests)
		u := schedulerconfig.Usage{Requested: req, NonZero: append([]int64(nil), req...)}
		for _, p := range nc.Pods {
			pu := k.usage(profile, p)
			for i := range u.Requested {
				if moved[p] {
					u.Requested[i] -= pu.Requested[i]
					u.NonZero[i] -= pu.Requested[i]
				} else {
					u.NonZero[i] += pu.NonZero[i] - pu.Requested[i]
				}
			}
		}
		for _, p := range daemons {
			pu := k.usage(profile, p)
			for i := range u.NonZero {
				u.NonZero[i] += pu.NonZero[i] - pu.Requested[i]
			}
		}
		return u
	}
	return d
}

// destination is a node the replay places pods on: its allocatable, its
// usage before the replay (start) and the pods the replay landed there.
type destination struct {
	alloc  corev1.ResourceList
	start  func(profile string) schedulerconfig.Usage
	landed []*corev1.Pod
	// used is the usage so far, by the profiles asked about.
	used map[string]schedulerconfig.Usage
}

func (d *destination) usage(k *kubeScores, profile string) schedulerconfig.Usage {
	u, ok := d.used[profile]
	if !ok {
		if d.start != nil {
			u = d.start(profile)
		} else {
			u = k.profiles[profile].Usage(&corev1.Pod{})
		}
		for _, p := range d.landed {
			u.Add(k.usage(profile, p))
		}
		d.used[profile] = u
	}
	return u
}

// score is kube-scheduler's resource score of d for a pod of profile that
// uses pod.
func (d *destination) score(k *kubeScores, profile string, pod schedulerconfig.Usage) int64 {
	sc := k.profiles[profile]
	return sc.Score(pod, d.usage(k, profile), sc.Allocatable(d.alloc))
}

// land counts p on d.
func (d *destination) land(k *kubeScores, p *corev1.Pod) {
	d.landed = append(d.landed, p)
	for name, u := range d.used {
		u.Add(k.usage(name, p))
		d.used[name] = u
	}
}

// unland takes back the last pod landed on d, p.
func (d *destination) unland(k *kubeScores, p *corev1.Pod) {
	d.landed = d.landed[:len(d.landed)-1]
	for name, u := range d.used {
		u.Sub(k.usage(name, p))
	}
}
