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
	proc    procfs.Proc
	start   time.Time
	cpu0    float64
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	last    float64
	peak    int
	samples int
}

// sampleUsage starts sampling process pid every interval; Stop ends it.
// A process /proc cannot read yields a zero Usage.
func sampleUsage(pid int, every time.Duration) *usageSampler {
	s := &usageSampler{start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	p, err := procfs.NewProc(pid)
	if err != nil {
		close(s.done)
		return s
	}
	s.proc = p
	s.cpu0, _ = s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				_, _ = s.sample()
			}
		}
	}()
	return s
}

// sample records one reading and returns the CPU seconds so far.
func (s *usageSampler) sample() (float64, error) {
	st, err := s.proc.Stat()
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = st.CPUTime()
	s.peak = max(s.peak, st.ResidentMemory())
	s.samples++
	return s.last, nil
}

// Stop ends sampling, takes a last reading and returns the span's usage.
func (s *usageSampler) Stop() Usage {
	if s.stop == nil {
		return Usage{}
	}
	select {
	case <-s.done:
	default:
		close(s.stop)
		<-s.done
	}
	if s.proc.PID == 0 {
		return Usage{}
	}
	_, _ = s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	return Usage{
		CPU:     time.Duration((s.last - s.cpu0) * float64(time.Second)),
		Wall:    time.Since(s.start),
		PeakRSS: s.peak,
		Samples: s.samples,
	}
}
