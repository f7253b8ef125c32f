package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// roundClock records how long each step of a round took and how much CPU
// the test's whole process tree (the harness and observer, the control
// plane, kwok, the replicas, moto_server) spent meanwhile, so a round's
// wall time can be split between waiting and computing.
type roundClock struct {
	start, last time.Time
	cpu0        time.Duration
	steps       []string
}

func newRoundClock() *roundClock {
	now := time.Now()
	return &roundClock{start: now, last: now, cpu0: treeCPU()}
}

// step ends the step named name.
func (c *roundClock) step(name string) {
	now := time.Now()
	c.steps = append(c.steps, fmt.Sprintf("%s %.0fs", name, now.Sub(c.last).Seconds()))
	c.last = now
}

func (c *roundClock) String() string {
	wall := time.Since(c.start)
	cpu := treeCPU() - c.cpu0
	return fmt.Sprintf("%.0fs wall (%s), %.0fs CPU of the process tree (%.2f cores)",
		wall.Seconds(), strings.Join(c.steps, ", "), cpu.Seconds(), cpu.Seconds()/wall.Seconds())
}

// treeCPU is the CPU time (user and system) of this process and every
// live descendant, each with its reaped children's: a descendant that
// ended and was waited for counts in its parent's.
func treeCPU() time.Duration {
	procs, err := procfs.AllProcs()
	if err != nil {
		return 0
	}
	parent := map[int]int{}
	ticks := map[int]int64{}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue
		}
		parent[p.PID] = st.PPID
		ticks[p.PID] = int64(st.UTime) + int64(st.STime) + int64(st.CUTime) + int64(st.CSTime)
	}
	self := os.Getpid()
	var total int64
	for pid, t := range ticks {
		for p := pid; p > 1; p = parent[p] {
			if p == self {
				total += t
				break
			}
		}
	}
	return time.Duration(total) * time.Second / clockTicks
}

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat's times
// (procfs reports them unconverted).
const clockTicks = 100

// TestTreeCPUCountsDescendants pins what a round's CPU figure includes: a
// child's CPU counts while it runs and, once reaped, in this process's
// children's times.
func TestTreeCPUCountsDescendants(t *testing.T) {
	before := treeCPU()
	child := exec.Command("sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
	if err := child.Run(); err != nil {
		t.Fatalf("running the busy child: %v", err)
	}
	spent := child.ProcessState.UserTime() + child.ProcessState.SystemTime()
	if spent < 100*time.Millisecond {
		t.Fatalf("the busy child spent only %v of CPU; the test needs at least 100ms", spent)
	}
	if got := treeCPU() - before; got < spent-2*time.Second/clockTicks {
		t.Errorf("treeCPU grew by %v while a reaped child spent %v", got, spent)
	}
}
