package conformance

import (
	"sync"
	"time"

	"github.com/prometheus/procfs"
)

// Usage is what joiner's process spent while a spec ran: the figures
// upstream's performance suite asserts of Karpenter's pod (which it reads
// from a karpenter pod's metrics endpoint, absent here), taken from /proc
// instead.
type Usage struct {
	// CPU is the process's user and system CPU time over the span.
	CPU time.Duration
	// Wall is the span's length.
	Wall time.Duration
	// PeakRSS is the largest resident set seen by a sample, in bytes.
	PeakRSS int
	// Samples counts the samples taken.
	Samples int
	// series holds every sample, for Within.
	series []usageSample
}

// usageSample is one reading of the process.
type usageSample struct {
	at  time.Time
	cpu float64 // seconds since the process started
	rss int
}

// Within is the usage over [from, to], from the samples taken inside it
// (zero when fewer than two were).
func (u Usage) Within(from, to time.Time) Usage {
	var in []usageSample
	for _, s := range u.series {
		if !s.at.Before(from) && !s.at.After(to) {
			in = append(in, s)
		}
	}
	if len(in) < 2 {
		return Usage{}
	}
	out := Usage{Samples: len(in), series: in,
		CPU:  time.Duration((in[len(in)-1].cpu - in[0].cpu) * float64(time.Second)),
		Wall: in[len(in)-1].at.Sub(in[0].at)}
	for _, s := range in {
		out.PeakRSS = max(out.PeakRSS, s.rss)
	}
	return out
}

// Cores is the average number of cores the process used over the span.
func (u Usage) Cores() float64 {
	if u.Wall <= 0 {
		return 0
	}
	return u.CPU.Seconds() / u.Wall.Seconds()
}

// usageSampler reads a process's /proc entry at an interval.
type usageSampler struct {
	proc   procfs.Proc
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	series []usageSample
}

// sampleUsage starts sampling process pid every interval; Stop ends it.
// A process /proc cannot read yields a zero Usage.
func sampleUsage(pid int, every time.Duration) *usageSampler {
	s := &usageSampler{stop: make(chan struct{}), done: make(chan struct{})}
	p, err := procfs.NewProc(pid)
	if err != nil {
		close(s.done)
		return s
	}
	s.proc = p
	s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

// sample records one reading; a process that has gone leaves no sample.
func (s *usageSampler) sample() {
	st, err := s.proc.Stat()
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.series = append(s.series, usageSample{at: time.Now(), cpu: st.CPUTime(), rss: st.ResidentMemory()})
}

// Stop ends sampling, takes a last reading and returns the span's usage.
func (s *usageSampler) Stop() Usage {
	select {
	case <-s.done:
	default:
		close(s.stop)
		<-s.done
	}
	if s.proc.PID == 0 {
		return Usage{}
	}
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.series) == 0 {
		return Usage{}
	}
	all := s.series
	return Usage{series: all}.Within(all[0].at, all[len(all)-1].at)
}
