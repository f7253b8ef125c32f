package state

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkNominationsScaleUp is a provisioning pass's use of the
// nominations in a 5,000-pod scale-up onto 500 in-flight NodeClaims: the
// plan's nominations, the snapshot's read of every StateNode with its
// nominated pods, and the pod trigger's Holds for each pod.
func BenchmarkNominationsScaleUp(b *testing.B) {
	b.Run("in-flight", func(b *testing.B) { benchmarkNominations(b, false) })
	// Pods planned onto NodeClaims whose nodes initialised (existing
	// capacity): each nomination takes in its NodeClaim's state at once.
	b.Run("initialised", func(b *testing.B) { benchmarkNominations(b, true) })
}

func benchmarkNominations(b *testing.B, init bool) {
	const claims, perClaim = 500, 10
	c, _, _ := newTestCluster(b)
	for i := range claims {
		nc := nodeClaim(fmt.Sprintf("nc-%d", i), "default", "")
		if init {
			nc = initialized(nc)
		}
		c.UpdateNodeClaim(nc)
	}
	pods := make([]*podAndClaim, 0, claims*perClaim)
	for i := range claims * perClaim {
		p := pod("ns", fmt.Sprintf("web-%d", i), "", "100m")
		pods = append(pods, &podAndClaim{key: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, claim: fmt.Sprintf("nc-%d", i/perClaim), pod: p})
	}
	n := c.Nominations()
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range pods {
			n.Nominate(p.pod, p.claim)
		}
		nominated := 0
		for _, sn := range c.ReadOnlyNodes() {
			nominated += len(sn.NominatedPods)
		}
		if nominated != len(pods) {
			b.Fatalf("%d nominated pods counted, want %d", nominated, len(pods))
		}
		for _, p := range pods {
			if _, _, ok := n.Holds(p.key); !ok {
				b.Fatalf("%s is not held", p.key)
			}
		}
	}
}

type podAndClaim struct {
	key   types.NamespacedName
	claim string
	pod   *corev1.Pod
}
