package disruption_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scenario"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/scheduling/lowerbound"
)

// loadCluster rebuilds a consolidation benchmark cluster; a missing file
// fails the benchmark (the figures in the README depend on it).
func loadCluster(tb testing.TB, name string) *scenario.Cluster {
	tb.Helper()
	c, err := scenario.LoadHalfCluster(name)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// bound is the LP+anti lower bound on the cost of the cluster's pods.
func bound(tb testing.TB, c *scenario.Cluster) float64 {
	tb.Helper()
	b, err := lowerbound.Compute(c.PendingSnapshot(time.Time{}), scheduling.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return b.LPAnti
}

// configBound is the configuration bound on the cost of the cluster's pods
// (pkg/scheduling/lowerbound's column generation), the tighter bound issue
// 33 asks the gap be measured against as well; 0 when the generation did
// not converge there, since an unconverged Farley bound may be below
// LP+anti and would flatter the ratio less than it should.
func configBound(tb testing.TB, c *scenario.Cluster) float64 {
	tb.Helper()
	cb, err := lowerbound.Configurations(c.PendingSnapshot(time.Time{}), scheduling.Options{}, lowerbound.ConfigLimits{})
	if err != nil {
		tb.Fatal(err)
	}
	if !cb.Converged {
		return 0
	}
	return cb.Value
}

// cpuTime is the process's user and system time: the machine is shared,
// so wall time alone overstates the engine's cost.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var benchClusters = []string{"diverse-1000", "diverse-5000", "diverse-10000"}

// benchNow is the benchmark's clock.
var benchNow = time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)

// convergence is one run of rounds until no method yields a command.
type convergence struct {
	rounds, solves   int
	compute, slowest time.Duration
	cpu, slowestCPU  time.Duration
	start, end       float64
	// atTen is the cost after the tenth command (the end when fewer):
	// issue 33 asks for the end within ten commands.
	atTen                     float64
	deleted, replaced, launch int
	methods                   map[disruption.Method]int
}

func converge(tb testing.TB, c *scenario.Cluster, opts disruption.Options, maxRounds int) convergence {
	tb.Helper()
	run := convergence{start: c.Cost(), methods: map[disruption.Method]int{}}
	var solves int
	opts = disruption.CountSolves(opts, &solves)
	for run.rounds < maxRounds {
		in := c.Input(benchNow, opts)
		c0, t0 := cpuTime(), time.Now()
		d, err := disruption.Decide(in)
		dt, dc := time.Since(t0), cpuTime()-c0
		if err != nil {
			tb.Fatal(err)
		}
		run.compute += dt
		run.slowest = max(run.slowest, dt)
		run.cpu += dc
		run.slowestCPU = max(run.slowestCPU, dc)
		if d.Command == nil {
			if testing.Verbose() {
				tb.Logf("last decision: no command, %v (cpu %v)", dt.Round(time.Millisecond), dc.Round(time.Millisecond))
			}
			break
		}
		checkCommand(tb, in, d)
		run.rounds++
		run.methods[d.Command.Method]++
		run.deleted += len(d.Command.Candidates)
		run.launch += len(d.Command.Replacements)
		if len(d.Command.Replacements) > 0 {
			run.replaced++
		}
		if testing.Verbose() {
			tb.Logf("round %d: %s %d→%d nodes, saves %.2f $/h, %v (cpu %v), %d solves so far", run.rounds, d.Command.Method, len(d.Command.Candidates), len(d.Command.Replacements), d.Command.SavingsPerHour, dt.Round(time.Millisecond), dc.Round(time.Millisecond), solves)
		}
		if err := c.Apply(d.Command); err != nil {
			tb.Fatalf("round %d: applying %s: %v", run.rounds, d.Command.Method, err)
		}
		if run.rounds == 10 {
			run.atTen = c.Cost()
		}
	}
	run.solves, run.end = solves, c.Cost()
	if run.rounds < 10 {
		run.atTen = run.end
	}
	return run
}

// BenchmarkConsolidation runs rounds of Decide on each consolidation
// cluster, applying each command at once (as upstream's measurement did),
// until no method finds a command, and reports the compute, the commands
// and the cost reached, at the end and after ten commands, against the
// LP+anti bound of the pods left and against their configuration bound.
func BenchmarkConsolidation(b *testing.B) {
	for _, name := range benchClusters {
		b.Run(name, func(b *testing.B) {
			var run convergence
			var lp, config float64
			for b.Loop() {
				b.StopTimer()
				c := loadCluster(b, name)
				lp = bound(b, c)
				if config == 0 {
					config = configBound(b, c)
				}
				b.StartTimer()
				run = converge(b, c, disruption.Options{}, 1000)
			}
			b.ReportMetric(float64(run.rounds), "commands")
			b.ReportMetric(run.compute.Seconds(), "compute-s")
			b.ReportMetric(run.slowest.Seconds(), "slowest-decision-s")
			b.ReportMetric(run.cpu.Seconds(), "cpu-s")
			b.ReportMetric(run.slowestCPU.Seconds(), "slowest-decision-cpu-s")
			b.ReportMetric(run.compute.Seconds()/float64(run.rounds+1), "s/decision")
			b.ReportMetric(float64(run.solves), "solves")
			b.ReportMetric(run.start, "start-$/h")
			b.ReportMetric(run.end, "end-$/h")
			b.ReportMetric(run.end/lp, "end/LP")
			b.ReportMetric(run.atTen/lp, "at10/LP")
			if config > 0 {
				b.ReportMetric(run.end/config, "end/config")
				b.ReportMetric(run.atTen/config, "at10/config")
			}
			b.Logf("%s: %d commands %v, %d nodes removed, %d launched, %.2f → %.2f $/h (%.2f after ten), LP+anti %.2f, configuration bound %.2f", name, run.rounds, run.methods, run.deleted, run.launch, run.start, run.end, run.atTen, lp, config)
		})
	}
}

// BenchmarkDecide times the first decision on each cluster.
func BenchmarkDecide(b *testing.B) {
	for _, name := range benchClusters {
		b.Run(name, func(b *testing.B) {
			c := loadCluster(b, name)
			in := c.Input(benchNow, disruption.Options{})
			var d *disruption.Decision
			for b.Loop() {
				var err error
				if d, err = disruption.Decide(in); err != nil {
					b.Fatal(err)
				}
			}
			if d.Command != nil {
				b.ReportMetric(float64(len(d.Command.Candidates)), "candidates")
				b.ReportMetric(d.Command.SavingsPerHour, "saves-$/h")
			}
		})
	}
}

// BenchmarkMultiNodeScaling times one multi-node decision on the first n
// nodes of the largest cluster (100 to 2,000 nodes), once emptiness has
// taken the empty ones: the budget is 10% of n.
func BenchmarkMultiNodeScaling(b *testing.B) {
	for _, n := range []int{100, 200, 500, 1000, 2000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c := loadCluster(b, "diverse-10000")
			c.Nodes = c.Nodes[:n]
			in := c.Input(benchNow, disruption.Options{})
			for {
				d, err := disruption.Decide(in)
				if err != nil {
					b.Fatal(err)
				}
				if d.Command == nil || d.Command.Method != disruption.MethodEmptiness {
					break
				}
				if err := c.Apply(d.Command); err != nil {
					b.Fatal(err)
				}
				in = c.Input(benchNow, disruption.Options{})
			}
			var d *disruption.Decision
			c0 := cpuTime()
			for b.Loop() {
				var err error
				if d, err = disruption.Decide(in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
			if d.Command == nil {
				b.Fatalf("%d nodes: no command", n)
			}
			b.ReportMetric(float64(len(d.Command.Candidates)), "candidates")
			b.ReportMetric(float64(len(d.Command.Replacements)), "replacements")
			b.ReportMetric(d.Command.SavingsPerHour, "saves-$/h")
			if d.Command.Method != disruption.MethodMultiNode {
				b.Errorf("%d nodes: %s, want a multi-node command", n, d.Command.Method)
			}
		})
	}
}
