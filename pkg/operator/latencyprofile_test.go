package operator_test

import (
	"bytes"
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

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// latencyProfile captures, for JOINER_BENCH_PROFILE=DIR, joiner's CPU
// profile over a latency run (consecutive 20 s profiles, merged with
// `go tool pprof -proto DIR/<run>-cpu-*.pprof`) and, at the run's end, the
// metrics of joiner (client-go's rate limiter waits, workqueue depths and
// latencies) and of kube-apiserver (request latencies), with joiner's log
// and kube-apiserver's (the watchers it closed for not keeping up).
type latencyProfile struct {
	dir, run string
	s        *scenario
	port     int
	j        *joiner
	stop     chan struct{}
	wg       sync.WaitGroup

	// kube-scheduler's active queue, sampled every 2 s: its peak, and
	// how many samples held 100 pods or more.
	mu            sync.Mutex
	activePeak    float64
	activeCrowded int
	activeSamples int
}

// queueSample is how often the profile reads kube-scheduler's queue.
const queueSample = 2 * time.Second

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
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(queueSample)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
				p.sampleQueue()
			}
		}
	}()
	return p
}

// sampleQueue records kube-scheduler's active queue length.
func (p *latencyProfile) sampleQueue() {
	ctx, cancel := context.WithTimeout(context.Background(), queueSample)
	defer cancel()
	b, err := p.s.env.ControlPlane.Metrics(ctx, "kube-scheduler")
	if err != nil {
		return // loaded: the next sample
	}
	families, err := parseMetrics(bytes.NewReader(b))
	if err != nil || families["scheduler_pending_pods"] == nil {
		return
	}
	active := sumSeries(families["scheduler_pending_pods"], map[string]string{"queue": "active"})
	p.mu.Lock()
	defer p.mu.Unlock()
	p.activeSamples++
	p.activePeak = max(p.activePeak, active)
	if active >= 100 {
		p.activeCrowded++
	}
}

// sumSeries sums the gauge or counter values of the series of f that
// carry labels.
func sumSeries(f *dto.MetricFamily, labels map[string]string) float64 {
	var sum float64
	for _, m := range f.GetMetric() {
		if hasLabels(m, labels) {
			sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return sum
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
	if b, err := os.ReadFile(filepath.Join(p.s.env.ControlPlane.LogDir(), "kube-apiserver.log")); err == nil {
		_ = os.WriteFile(filepath.Join(p.dir, p.run+"-kube-apiserver.log"), b, 0o644)
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
	p.reportWrites(t, b)
	p.countEvents(ctx, t, kube)
	p.reportScheduler(ctx, t)
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

// reportScheduler saves kube-scheduler's metrics and logs how it spent the
// run: its attempts by result and how crowded its active queue was (a pod
// whose node is ready waits there behind the others; see
// docs/performance/log-2026-11-24-to-29.md, "Bursts: whose wait is it?").
func (p *latencyProfile) reportScheduler(ctx context.Context, t *testing.T) {
	b, err := p.s.env.ControlPlane.Metrics(ctx, "kube-scheduler")
	if err != nil {
		t.Logf("kube-scheduler metrics: %v", err)
		return
	}
	if err := os.WriteFile(filepath.Join(p.dir, p.run+"-scheduler-metrics.txt"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	families, err := parseMetrics(bytes.NewReader(b))
	if err != nil {
		t.Logf("parsing kube-scheduler metrics: %v", err)
		return
	}
	attempts := families["scheduler_schedule_attempts_total"]
	scheduled := sumSeries(attempts, map[string]string{"result": "scheduled"})
	unschedulable := sumSeries(attempts, map[string]string{"result": "unschedulable"})
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Logf("kube-scheduler: %.0f attempts scheduled, %.0f unschedulable; active queue peak %.0f pods, at 100 or more in %d of %d samples %s apart",
		scheduled, unschedulable, p.activePeak, p.activeCrowded, p.activeSamples, queueSample)
}

// reportWrites logs kube-apiserver's write requests on NodeClaims, Nodes
// and pods over the run, by subresource, verb and answer, with their mean
// duration: a NodeClaim write costs the API server several times a Node's
// or a pod's (docs/performance/log-2026-11-24-to-29.md, "Bursts: whose wait is it?"), so joiner
// keeps their number per NodeClaim down.
func (p *latencyProfile) reportWrites(t *testing.T, apiserverMetrics []byte) {
	families, err := parseMetrics(bytes.NewReader(apiserverMetrics))
	if err != nil {
		t.Logf("parsing kube-apiserver metrics: %v", err)
		return
	}
	type key struct{ resource, subresource, verb, code string }
	counts := map[key]float64{}
	seconds := map[key]float64{}
	label := func(m *dto.Metric, name string) string {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == name {
				return lp.GetValue()
			}
		}
		return ""
	}
	for _, m := range families["apiserver_request_total"].GetMetric() {
		k := key{label(m, "resource"), label(m, "subresource"), label(m, "verb"), label(m, "code")}
		switch k.verb {
		case "POST", "PATCH", "PUT", "DELETE":
		default:
			continue
		}
		switch k.resource {
		case "nodeclaims", "nodes", "pods":
			counts[k] += m.GetCounter().GetValue()
		}
	}
	// Durations are per resource, subresource and verb (not per answer).
	requests := map[key]float64{}
	for _, m := range families["apiserver_request_duration_seconds"].GetMetric() {
		k := key{label(m, "resource"), label(m, "subresource"), label(m, "verb"), ""}
		seconds[k] += m.GetHistogram().GetSampleSum()
		requests[k] += float64(m.GetHistogram().GetSampleCount())
	}
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.resource, b.resource), cmp.Compare(a.subresource, b.subresource), cmp.Compare(a.verb, b.verb), cmp.Compare(a.code, b.code))
	})
	claims := counts[key{"nodeclaims", "", "POST", "201"}]
	var lines []string
	for _, k := range keys {
		line := fmt.Sprintf("  %-10s %-8s %-6s %s %6.0f", k.resource, k.subresource, k.verb, k.code, counts[k])
		if claims > 0 && k.resource == "nodeclaims" {
			line += fmt.Sprintf("  (%.2f per NodeClaim)", counts[k]/claims)
		}
		if v := (key{k.resource, k.subresource, k.verb, ""}); requests[v] > 0 {
			line += fmt.Sprintf("  mean %.0f ms", 1000*seconds[v]/requests[v])
		}
		lines = append(lines, line)
	}
	t.Logf("kube-apiserver writes on nodeclaims, nodes and pods (resource, subresource, verb, code, count; mean duration of the verb):\n%s", strings.Join(lines, "\n"))
}
