package operator_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// latencyProfile captures, for JOINER_BENCH_PROFILE=DIR, joiner's CPU
// profile over a latency run (consecutive 20 s profiles, merged with
// `go tool pprof -proto DIR/<run>-cpu-*.pprof`) and, at the run's end, the
// metrics of joiner (client-go's rate limiter waits, workqueue depths and
// latencies) and of kube-apiserver (request latencies).
type latencyProfile struct {
	dir, run string
	s        *scenario
	port     int
	j        *joiner
	stop     chan struct{}
	wg       sync.WaitGroup
}

// startProfiling starts joiner for the latency run, with pprof and a
// metrics port when JOINER_BENCH_PROFILE is set.
func startProfiling(t *testing.T, s *scenario) *latencyProfile {
	// One replica without leader election, as in TestLoad: on the loaded
	// build machine a lease renewal can take longer than its 10 s deadline
	// in the middle of a burst, and a joiner that lost its lease exits (as
	// it must); in a cluster its Deployment restarts it, here nothing
	// would, and the run would measure a dead controller.
	const single = "--disable-leader-election"
	dir := os.Getenv("JOINER_BENCH_PROFILE")
	if dir == "" {
		s.joiner(single)
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &latencyProfile{dir: dir, run: filepath.Base(t.Name()), s: s, port: freePort(t), stop: make(chan struct{})}
	p.j = s.joiner(single, fmt.Sprintf("--metrics-port=%d", p.port), "--enable-profiling")
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for i := 1; ; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			if err := p.fetch(fmt.Sprintf("/debug/pprof/profile?seconds=%d", 20), fmt.Sprintf("cpu-%03d.pprof", i)); err != nil {
				select {
				case <-p.stop:
					return
				case <-time.After(time.Second): // joiner not serving yet
				}
			}
		}
	}()
	return p
}

// fetch saves one of joiner's debug or metrics pages into the directory.
func (p *latencyProfile) fetch(path, name string) error {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", p.port, path))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(p.dir, p.run+"-"+name), b, 0o644)
}

// finish waits for the profile in progress and saves both metrics pages.
func (p *latencyProfile) finish(t *testing.T) {
	if p == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	if err := p.fetch("/metrics", "joiner-metrics.txt"); err != nil {
		t.Logf("joiner metrics: %v", err)
	}
	if b, err := os.ReadFile(p.j.logPath); err == nil {
		_ = os.WriteFile(filepath.Join(p.dir, p.run+"-joiner.log"), b, 0o644)
	}
	kube, err := kubernetes.NewForConfig(p.s.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Logf("kube-apiserver metrics: %v", err)
		return
	}
	if err := os.WriteFile(filepath.Join(p.dir, p.run+"-apiserver-metrics.txt"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	p.countEvents(ctx, t, kube)
	t.Logf("profile and metrics of %s in %s", p.run, p.dir)
}

// countEvents logs how many events each component wrote, by reason (the
// API server's writes they cost: one per event or series update).
func (p *latencyProfile) countEvents(ctx context.Context, t *testing.T, kube kubernetes.Interface) {
	list, err := kube.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("events: %v", err)
		return
	}
	counts := map[string]int32{}
	for _, e := range list.Items {
		by := e.ReportingController
		if by == "" {
			by = e.Source.Component
		}
		n := max(e.Count, 1)
		if e.Series != nil {
			n = max(e.Series.Count, 1)
		}
		counts[by+" "+e.InvolvedObject.Kind+" "+e.Reason] += n
	}
	keys := slices.Sorted(maps.Keys(counts))
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(counts[b], counts[a]) })
	var lines []string
	for _, k := range keys {
		lines = append(lines, fmt.Sprintf("  %6d  %s", counts[k], k))
	}
	t.Logf("events by component, object kind and reason (%d objects):\n%s", len(list.Items), strings.Join(lines, "\n"))
}
