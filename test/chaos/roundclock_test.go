package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat's times.
const clockTicks = 100

// treeCPU is the CPU time (user and system) of this process and every
// live descendant, each with its reaped children's: a descendant that
// ended and was waited for counts in its parent's.
func treeCPU() time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	parent := map[int]int{}
	ticks := map[int]int64{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis: state is
		// field 3, ppid 4, utime 14, stime 15, cutime 16, cstime 17.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 15 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		parent[pid] = ppid
		var sum int64
		for _, i := range []int{11, 12, 13, 14} {
			n, _ := strconv.ParseInt(f[i], 10, 64)
			sum += n
		}
		ticks[pid] = sum
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
