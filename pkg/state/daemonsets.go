package state

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// UpdateDaemonSetPod records the pod a DaemonSet would put on a new node.
func (c *Cluster) UpdateDaemonSetPod(daemonSet types.NamespacedName, pod *corev1.Pod) {
	pod = pod.DeepCopy()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.daemonSets[daemonSet] = pod
	c.changedLocked()
}

// DeleteDaemonSet forgets a DaemonSet.
func (c *Cluster) DeleteDaemonSet(daemonSet types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.daemonSets, daemonSet)
	c.changedLocked()
}

// DaemonSetPods returns one pod per DaemonSet, built from its template,
// ordered by DaemonSet.
func (c *Cluster) DaemonSetPods() []*corev1.Pod {
	c.mu.RLock()
	keys := make([]types.NamespacedName, 0, len(c.daemonSets))
	for k := range c.daemonSets {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	out := make([]*corev1.Pod, 0, len(keys))
	for _, k := range keys {
		out = append(out, c.daemonSets[k].DeepCopy())
	}
	c.mu.RUnlock()
	return out
}
