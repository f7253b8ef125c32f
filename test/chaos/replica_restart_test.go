package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/test"
)

// TestReplicaRestartsAfterLosingItsLease: a replica whose lease is taken
// from it exits on its own ("leader election lost": controller-runtime's
// manager ends the process, as Karpenter's does; aws 3025 lost both
// replicas so after a kube-apiserver restart). The harness starts it
// again as kubelet would a Deployment's container: the same command line
// and environment, after a short back-off, said in the round's log and
// counted; and it leads again within a bound. A replica the harness kills
// on purpose stays down (the harness replaces it by a new replica).
func TestReplicaRestartsAfterLosingItsLease(t *testing.T) {
	env := test.Env(t)
	var mu sync.Mutex
	var logged []string
	w := &world{t: t, cloud: &simCloud{}, env: env, ns: env.Namespace(t), clusterName: "chaos-restart", offeringsTTL: offeringsUnavailableTTL,
		logTo: func(format string, args ...any) {
			mu.Lock()
			logged = append(logged, fmt.Sprintf(format, args...))
			mu.Unlock()
			t.Logf(format, args...)
		}}
	w.cloud.start(t, w)
	w.startReplica(rand.New(rand.NewPCG(1, 1)))
	r := w.replicas[0]
	defer r.end()

	test.Eventually(t, 2*time.Minute, func(context.Context) error {
		if !leads(r.current()) {
			return fmt.Errorf("%s does not lead yet", r.name)
		}
		return nil
	})
	first := r.current()
	cmdline, environ := procFile(t, first.Pid(), "cmdline"), procFile(t, first.Pid(), "environ")

	// Another holder takes the lease for longer than the replica's renew
	// deadline (controller-runtime's 10 s), so the replica cannot renew
	// and loses it.
	// The replica renews the lease every few seconds, so the taking is
	// retried on the latest version, as a real contender's would be.
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: "kube-system", Name: w.clusterName + "-" + w.ns}
	if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if err := env.Client.Get(t.Context(), key, lease); err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.HolderIdentity = ptr.To("chaos-test-thief")
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](20)
		lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
		lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
		return env.Client.Update(t.Context(), lease)
	}); err != nil {
		t.Fatalf("taking the replicas' lease: %v", err)
	}
	stolen := time.Now()

	select {
	case <-first.Done():
	case <-time.After(time.Minute):
		t.Fatalf("%s still runs a minute after its lease was taken", r.name)
	}
	// Back, and leading once the taken lease expired, within a bound.
	const bound = 2 * time.Minute
	test.Eventually(t, bound-time.Since(stolen), func(context.Context) error {
		j := r.current()
		if j == first {
			return fmt.Errorf("%s exited (%s) and was not started again", r.name, exitOf(first))
		}
		if !j.Alive() || !leads(j) {
			return fmt.Errorf("%s's restarted process (pid %d) does not lead yet", r.name, j.Pid())
		}
		return nil
	})
	t.Logf("%s leads again %.0fs after its lease was taken", r.name, time.Since(stolen).Seconds())

	restarts := r.restartsSoFar()
	if len(restarts) != 1 {
		t.Fatalf("%d restarts recorded, want 1: %v", len(restarts), restarts)
	}
	if !strings.Contains(restarts[0].exit, "leader election lost") {
		t.Errorf("the restart records the exit as %q, want joiner's %q", restarts[0].exit, "leader election lost")
	}
	if restarts[0].backoff != restartBackoffFirst {
		t.Errorf("back-off %s before the first restart, want %s", restarts[0].backoff, restartBackoffFirst)
	}
	again := r.current()
	if got := procFile(t, again.Pid(), "cmdline"); got != cmdline {
		t.Errorf("restarted with the command line %q, want the first process's %q", got, cmdline)
	}
	if got := procFile(t, again.Pid(), "environ"); got != environ {
		t.Errorf("restarted with another environment than the first process's")
	}
	if report := restartsReport(w.replicas); !strings.HasPrefix(report, "1 replica restart (replica-1 exited after") || !strings.Contains(report, "leader election lost") {
		t.Errorf("the round's report says %q, want the restart counted and its cause", report)
	}
	mu.Lock()
	saidExit := lineHolds(logged, "replica-1 (pid ", "exited on its own", "restarting it in 1s")
	saidBack := lineHolds(logged, "restarted replica-1 (pid ")
	mu.Unlock()
	if !saidExit || !saidBack {
		t.Errorf("the round's log does not say the replica exited and was restarted: %q", logged)
	}

	// Killed on purpose: stays down, no second restart.
	r.kill()
	select {
	case <-r.supervised:
	case <-time.After(time.Minute):
		t.Fatal("the supervisor of a replica killed by the harness is still running a minute later")
	}
	if r.alive() || len(r.processes()) != 2 || len(r.restartsSoFar()) != 1 {
		t.Errorf("a replica killed by the harness was started again: %d processes, %d restarts, alive %v", len(r.processes()), len(r.restartsSoFar()), r.alive())
	}

	// A failed round's replicas dump their goroutines and stay down.
	w.startReplica(rand.New(rand.NewPCG(2, 2)))
	r2 := w.replicas[1]
	defer r2.end()
	test.Eventually(t, 2*time.Minute, func(context.Context) error {
		if !leads(r2.current()) {
			return fmt.Errorf("%s does not lead yet", r2.name)
		}
		return nil
	})
	r2.dumpStacks()
	time.Sleep(restartBackoffFirst + 5*time.Second)
	if r2.alive() || len(r2.processes()) != 1 {
		t.Errorf("a replica whose goroutines were dumped was started again: %d processes, alive %v", len(r2.processes()), r2.alive())
	}
	// The main goroutine is in every full dump; which controllers'
	// goroutines show depends on what each is doing at that instant (an
	// idle controller-runtime worker names no controller's package).
	if j := r2.current(); !j.LogContains("SIGQUIT") || !j.LogContains("goroutine 1 ") || !j.LogContains("main.main(") {
		t.Errorf("%s's log holds no goroutine dump (SIGQUIT, goroutine 1 in main.main):\n%s", r2.name, j.Tail(20))
	}
}

// procFile reads /proc/<pid>/<name> of a running child process.
func procFile(t *testing.T, pid int, name string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
	if err != nil {
		t.Fatalf("reading the process's %s: %v", name, err)
	}
	return string(b)
}

// lineHolds reports whether a line of lines holds every one of subs.
func lineHolds(lines []string, subs ...string) bool {
	for _, l := range lines {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(l, s)
		}
		if all {
			return true
		}
	}
	return false
}

func TestRestartBackoff(t *testing.T) {
	for _, c := range []struct {
		name  string
		quick int
		want  time.Duration
	}{
		{name: "first restart", quick: 0, want: time.Second},
		{name: "second quick exit doubles", quick: 1, want: 2 * time.Second},
		{name: "fourth quick exit", quick: 3, want: 8 * time.Second},
		{name: "reaches the cap", quick: 4, want: 16 * time.Second},
		{name: "stays at the cap", quick: 9, want: 16 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := restartBackoff(c.quick); got != c.want {
				t.Errorf("restartBackoff(%d) = %s, want %s", c.quick, got, c.want)
			}
		})
	}
}

// TestExitLine: the cause of a replica's exit is joiner's own last words,
// even when the manager logs after them.
func TestExitLine(t *testing.T) {
	for _, tc := range []struct {
		name, tail, want string
	}{
		{"joiner's line last", "{\"level\":\"INFO\"}\njoiner: running manager: leader election lost", "joiner: running manager: leader election lost"},
		{"the manager logs after it", "{\"message\":\"Failed to renew lease\"}\njoiner: running manager: leader election lost\n{\"message\":\"Stopping and waiting for non leader election runnables\"}\n", "joiner: running manager: leader election lost"},
		{"the latest of two", "joiner: first\nx\njoiner: second\ny", "joiner: second"},
		{"no line of joiner's", "{\"level\":\"INFO\"}\npanic: boom\n", "panic: boom"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := exitLine(tc.tail); got != tc.want {
				t.Errorf("exitLine = %q, want %q", got, tc.want)
			}
		})
	}
}
