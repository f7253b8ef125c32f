package scheduling_test

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func TestDebugPlan(t *testing.T) {
	name := os.Getenv("DEBUG_SCENARIO")
	if name == "" {
		t.Skip()
	}
	snap := loadShared(t, name)
	plan, err := scheduling.Solve(snap, scheduling.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var tc, tm int64
	for _, p := range snap.Pods {
		for _, c := range p.Spec.Containers {
			tc += c.Resources.Requests.Cpu().MilliValue()
			tm += c.Resources.Requests.Memory().Value()
		}
	}
	fmt.Printf("total cpu %d m, mem %d Mi\n", tc, tm>>20)
	if os.Getenv("DEBUG_NODES") == "" {
		return
	}
	for i, n := range plan.NewNodeClaims {
		it := n.InstanceTypes[0]
		a := it.Allocatable()
		r := n.Requests
		fmt.Printf("%d %s pods=%d cpu %d/%d mem %d/%d price %.2f\n", i, it.Name, len(n.Pods), r.Cpu().MilliValue(), a.Cpu().MilliValue(), r.Memory().Value()>>20, a.Memory().Value()>>20, n.Price)
		_ = corev1.ResourceCPU
	}
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestDebugCPU(t *testing.T) {
	if os.Getenv("DEBUG_CPU") == "" {
		t.Skip()
	}
	for _, name := range benchScenarios {
		snap := loadShared(t, name)
		scheduling.Solve(snap, scheduling.Options{})
		n := 5
		start := cpuNow()
		w := time.Now()
		for i := 0; i < n; i++ {
			scheduling.Solve(snap, scheduling.Options{})
		}
		fmt.Printf("%s cpu/op %v wall/op %v\n", name, (cpuNow()-start)/time.Duration(n), time.Since(w)/time.Duration(n))
	}
}
