package chaos

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joiner-dev/joiner/pkg/test"
)

// replica is one joiner replica of the cluster under test, kept running
// as kubelet keeps a Deployment's container: when its process exits on
// its own, the same binary starts again with the same name, arguments and
// environment after a back-off. controller-runtime's manager ends the
// process when it loses its lease, as Karpenter's does, and a
// kube-apiserver restart on a loaded machine can cost both replicas their
// leases (aws 3025 in the README): in a cluster their pods would come
// back, and a round must see what joiner does then, not a cluster with no
// controller. A process the harness stops or kills on purpose (stop,
// kill) is not restarted: the harness replaces a killed leader with a new
// replica itself.
type replica struct {
	name      string
	bin       string
	args, env []string
	// logDir holds its processes' logs; made on the test's goroutine, as
	// the supervisor, restarting from its own, cannot fail t.
	logDir string
	// t is the whole test's (a replica outlives a round); log is the
	// world's, which writes to the round under way.
	t   testing.TB
	log func(string, ...any)

	mu sync.Mutex
	// procs are the processes it ran, the current one last.
	procs    []*test.JoinerProcess
	restarts []restart
	// ended: stopped or killed on purpose, so never restarted again.
	ended bool
	// supervised is closed when the supervisor has returned: no restart
	// can follow.
	supervised chan struct{}
}

// restart is one exit of a replica's process on its own and what the
// supervisor did about it.
type restart struct {
	// exit is how the process ended: its status and its log's last line.
	exit string
	// ran is how long the process had run; backoff how long it stayed down.
	ran, backoff time.Duration
	// failed is why it could not be started again ("" once it was).
	failed string
}

func (r restart) String() string {
	s := fmt.Sprintf("exited after %s (%s), back after %s", r.ran.Round(time.Second), r.exit, r.backoff)
	if r.failed != "" {
		s = fmt.Sprintf("exited after %s (%s), not started again: %s", r.ran.Round(time.Second), r.exit, r.failed)
	}
	return s
}

// Back-off between a replica's exit and its restart: kubelet's shape
// (10 s doubling to 5 min, reset once the container ran 10 min), scaled to
// a round of minutes.
const (
	restartBackoffFirst = time.Second
	restartBackoffMax   = 16 * time.Second
	restartBackoffReset = time.Minute
)

// restartBackoff is the wait before the restart that follows n quick
// exits in a row (each after running less than restartBackoffReset).
func restartBackoff(n int) time.Duration {
	d := restartBackoffFirst
	for range n {
		d *= 2
		if d >= restartBackoffMax {
			return restartBackoffMax
		}
	}
	return d
}

// startReplicaProcess starts a replica's first process and supervises it.
func startReplicaProcess(t testing.TB, log func(string, ...any), name, bin string, args, env []string) *replica {
	r := &replica{name: name, bin: bin, args: args, env: env, logDir: t.TempDir(), t: t, log: log, supervised: make(chan struct{})}
	first, err := test.LaunchJoiner(t, r.logDir, bin, name, args, env)
	if err != nil {
		t.Fatal(err)
	}
	r.procs = []*test.JoinerProcess{first}
	go r.supervise(t.Context())
	return r
}

// supervise restarts the replica's process each time it exits on its
// own, until the replica is stopped or killed on purpose or ctx (the
// test's, cancelled before its cleanups stop the processes) ends.
func (r *replica) supervise(ctx context.Context) {
	defer close(r.supervised)
	quick := 0
	for {
		r.mu.Lock()
		j := r.procs[len(r.procs)-1]
		r.mu.Unlock()
		began := time.Now()
		select {
		case <-j.Done():
		case <-ctx.Done():
			return
		}
		ran := time.Since(began)
		r.mu.Lock()
		ended := r.ended
		r.mu.Unlock()
		if ended || ctx.Err() != nil {
			return
		}
		if ran >= restartBackoffReset {
			quick = 0
		}
		rs := restart{exit: exitOf(j), ran: ran, backoff: restartBackoff(quick)}
		quick++
		r.log("%s (pid %d) exited on its own after %s (%s): restarting it in %s with the same arguments", r.name, j.Pid(), ran.Round(time.Second), rs.exit, rs.backoff)
		select {
		case <-time.After(rs.backoff):
		case <-ctx.Done():
			return
		}
		r.mu.Lock()
		if r.ended || ctx.Err() != nil {
			r.mu.Unlock()
			return
		}
		next, err := test.LaunchJoiner(r.t, r.logDir, r.bin, r.name, r.args, r.env)
		if err != nil {
			rs.failed = err.Error()
			r.restarts = append(r.restarts, rs)
			r.mu.Unlock()
			r.log("%s could not be restarted: %v", r.name, err)
			return
		}
		r.procs = append(r.procs, next)
		r.restarts = append(r.restarts, rs)
		n := len(r.restarts)
		r.mu.Unlock()
		r.log("restarted %s (pid %d, restart %d)", r.name, next.Pid(), n)
	}
}

// exitOf says how an exited process ended: its status and its log's last
// line (joiner's main prints the error that ended it there).
func exitOf(j *test.JoinerProcess) string {
	status := "exit status 0"
	if err := j.Exit(); err != nil {
		status = err.Error()
	}
	last := exitLine(j.Tail(50))
	if len(last) > 200 {
		last = last[:200] + "…"
	}
	if last == "" {
		return status
	}
	return status + ": " + last
}

// exitLine is the line of a process's last log lines that says why it
// exited: joiner's own ("joiner: <error>", which main prints as it exits),
// else the last line. The manager's goroutines may still log a line after
// main printed its error (a replica that lost its lease logged "Stopping and
// waiting for non leader election runnables" after "joiner: running manager:
// leader election lost"), so the last line alone is not the cause.
func exitLine(tail string) string {
	lines := strings.Split(strings.TrimSpace(tail), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "joiner: ") {
			return strings.TrimSpace(lines[i])
		}
	}
	return strings.TrimSpace(lines[len(lines)-1])
}

// current is the replica's running (or last) process.
func (r *replica) current() *test.JoinerProcess {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.procs[len(r.procs)-1]
}

// processes are every process the replica ran, the first first.
func (r *replica) processes() []*test.JoinerProcess {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*test.JoinerProcess(nil), r.procs...)
}

// restartsSoFar are the replica's exits on its own so far.
func (r *replica) restartsSoFar() []restart {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]restart(nil), r.restarts...)
}

// alive reports whether the replica's current process runs.
func (r *replica) alive() bool { return r.current().Alive() }

// end stops supervising: the running process, if any, keeps running, and
// is not restarted once it exits.
func (r *replica) end() {
	r.mu.Lock()
	r.ended = true
	r.mu.Unlock()
}

// stop ends the replica gracefully (SIGTERM), for good.
func (r *replica) stop() {
	r.end()
	r.current().Stop()
}

// kill ends the replica as a crash would (SIGKILL), for good: the harness
// replaces a leader it kills by a new replica.
func (r *replica) kill() {
	r.end()
	r.current().Kill()
}

// dumpStacks ends the replica for good with SIGQUIT, on which the Go
// runtime writes every goroutine's stack to its log: what a stalled
// replica was doing, for a failed round's kept logs.
func (r *replica) dumpStacks() {
	r.end()
	r.current().DumpStacks()
}

// logs are the replica's processes' logs by the name each is kept under:
// replica-3.log for the first, replica-3.restart-1.log for the next.
func (r *replica) logs() map[string]string {
	out := map[string]string{}
	for i, j := range r.processes() {
		name := r.name + ".log"
		if i > 0 {
			name = fmt.Sprintf("%s.restart-%d.log", r.name, i)
		}
		out[name] = j.LogPath
	}
	return out
}

// readLogs is the text of every process's log, the first first.
func (r *replica) readLogs() string {
	var b strings.Builder
	for _, j := range r.processes() {
		data, _ := os.ReadFile(j.LogPath)
		b.Write(data)
	}
	return b.String()
}

// restartsReport counts the restarts of replicas and says what each was,
// for a round's report line.
func restartsReport(replicas []*replica) string {
	var parts []string
	n := 0
	for _, r := range replicas {
		for _, rs := range r.restartsSoFar() {
			n++
			parts = append(parts, r.name+" "+rs.String())
		}
	}
	switch n {
	case 0:
		return "0 replica restarts"
	case 1:
		return "1 replica restart (" + parts[0] + ")"
	}
	return fmt.Sprintf("%d replica restarts (%s)", n, strings.Join(parts, "; "))
}
