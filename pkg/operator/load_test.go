package operator_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// loadNodeType is the one instance type of the load test's NodePool, and
// loadPodCPU the pods' request: m5.4xlarge has 15.89 allocatable CPUs, so
// ten pods fill a node and the pods-to-nodes ratio is 10:1.
const (
	loadNodeType = "m5.4xlarge"
	loadPodCPU   = "1500m"
	loadPodsEach = 10
)

// loadQPS and loadBurst are joiner's client limits in the load test
// (KUBE_CLIENT_QPS and KUBE_CLIENT_BURST at their defaults).
const (
	loadQPS   = 200
	loadBurst = 300
)

// TestLoad is issue 12's load test: JOINER_LOAD_PODS pods (make load: 10,000)
// on nodes of ten pods each (1,000 kwok nodes), from one Deployment, with
// the simulated cloud at its default delays. It measures the time until
// every pod runs, joiner's peak RSS (the process's VmHWM), its CPU seconds
// and its requests to the API server (client-go's rest_client_requests_total
// from joiner's own metrics endpoint, every second), and checks the request
// rate stays within KUBE_CLIENT_QPS; then it scales the Deployment to zero
// and measures the time until consolidation (WhenEmpty, consolidateAfter
// 0s) has given every node back. Without JOINER_LOAD_PODS it is skipped;
// docs/performance.md has the figures.
func TestLoad(t *testing.T) {
	v := os.Getenv("JOINER_LOAD_PODS")
	if v == "" {
		t.Skip("set JOINER_LOAD_PODS (e.g. 10000) to run the load test: make load")
	}
	pods, err := strconv.Atoi(v)
	if err != nil || pods < loadPodsEach {
		t.Fatalf("JOINER_LOAD_PODS=%q: want a number of pods, at least %d", v, loadPodsEach)
	}
	// Each phase's bound: generous, as the machine's load sets the pace.
	phase := 10*time.Minute + time.Duration(pods)*150*time.Millisecond

	s := newScenario(t)
	s.nodePool.Spec.Template.Spec.Requirements = append(s.nodePool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{loadNodeType}})
	s.nodePool.Spec.Disruption = v1.Disruption{
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmpty,
		ConsolidateAfter:    v1.MustParseNillableDuration("0s"),
	}
	// JOINER_LOAD_BUDGET sets the NodePool's disruption budget (nodes: a
	// count or a percentage); unset, Karpenter's default of 10% applies.
	budget := os.Getenv("JOINER_LOAD_BUDGET")
	if budget != "" {
		s.nodePool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: budget}}
	}
	s.nodeClass.Spec.LaunchDelay.Duration = 2 * time.Second
	s.nodeClass.Spec.RegistrationDelay.Duration = time.Second
	s.apply()
	port := freePort(t)
	// One replica without leader election: on this loaded 2-core machine a
	// lease renewal can miss its 10 s deadline, and joiner then exits (as
	// it must) while no Deployment restarts it here.
	args := []string{fmt.Sprintf("--metrics-port=%d", port), "--disable-leader-election",
		fmt.Sprintf("--kube-client-qps=%d", loadQPS), fmt.Sprintf("--kube-client-burst=%d", loadBurst)}
	// JOINER_LOAD_HEAP_PROFILE=PATH serves pprof (ENABLE_PROFILING) and
	// saves joiner's heap profile to PATH once every pod runs (the most
	// pods and nodes in the caches), and to PATH.down once every node is
	// given back: `go tool pprof -top -inuse_space joiner PATH`.
	// JOINER_LOAD_MEMORY_LIMIT=BYTES runs joiner with MEMORY_LIMIT, as the
	// chart does from the container's memory limit: the Go GC's soft
	// limit is then 90% of it.
	if limit := os.Getenv("JOINER_LOAD_MEMORY_LIMIT"); limit != "" {
		args = append(args, "--memory-limit="+limit)
	}
	heapProfile := os.Getenv("JOINER_LOAD_HEAP_PROFILE")
	if heapProfile != "" {
		args = append(args, "--enable-profiling")
	}
	j := s.joiner(args...)
	m := &joinerMetrics{url: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), heapProfile: heapProfile}
	m.waitUp(t)
	stopSampling := m.sample(t)

	kube, err := kubernetes.NewForConfig(s.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	counter := watchRunning(t, ctx, kube, s.ns)
	upCtx, cancelUp := context.WithTimeout(ctx, phase)
	defer cancelUp()

	start := time.Now()
	d := s.deployment("load", int32(pods), loadPodCPU, "1Gi", nil)
	progress := func(what string) {
		claims, _ := s.nodeClaims(ctx)
		now := m.latest()
		t.Logf("%6.0fs %s: %d of %d pods Running, %d NodeClaims; joiner's Go heap %.0f MiB, %.0f goroutines, peak RSS so far %.0f MiB",
			time.Since(start).Seconds(), what, counter.running(), pods, len(claims), now.heap/(1<<20), now.goroutines, float64(readPeakRSS(j.Pid()))/1024)
	}
	if !waitFor(t, upCtx, func() bool { return counter.running() >= pods }, progress, "scaling up") {
		return
	}
	upDone := time.Since(start)
	upCPU := m.last().cpu
	upRSS := readPeakRSS(j.Pid())
	if heapProfile != "" {
		m.saveHeapProfile(t, heapProfile, true)
	}
	nodes, err := s.nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Scale to zero: every node empties and consolidation gives it back.
	downStart := time.Now()
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To[int32](0)
	if err := s.env.Client.Patch(ctx, d, patch); err != nil {
		t.Fatal(err)
	}
	left := func() (int, int) {
		claims, err1 := s.nodeClaims(ctx)
		ns, err2 := s.nodes(ctx)
		if err1 != nil || err2 != nil {
			return -1, -1
		}
		return len(claims), len(ns)
	}
	downCtx, cancelDown := context.WithTimeout(ctx, phase)
	defer cancelDown()
	// A scale-down that times out still reports the figures so far.
	waitFor(t, downCtx, func() bool { c, n := left(); return c == 0 && n == 0 }, func(string) {
		c, n := left()
		now := m.latest()
		t.Logf("%6.0fs scaling down: %d NodeClaims and %d Nodes left; joiner's Go heap %.0f MiB, %.0f goroutines, peak RSS so far %.0f MiB",
			time.Since(downStart).Seconds(), c, n, now.heap/(1<<20), now.goroutines, float64(readPeakRSS(j.Pid()))/1024)
	}, "scaling down")
	downDone := time.Since(downStart)
	_, nodesLeft := left()
	if heapProfile != "" {
		m.saveHeapProfile(t, heapProfile+".down", true)
	}
	samples := stopSampling()
	j.stop()

	up, down := rateStats(samples, start, start.Add(upDone)), rateStats(samples, downStart, downStart.Add(downDone))
	last := samples[len(samples)-1]
	var peakHeap, peakGoroutines float64
	for _, x := range samples {
		peakHeap, peakGoroutines = max(peakHeap, x.heap), max(peakGoroutines, x.goroutines)
	}
	if budget == "" {
		budget = "10% (default)"
	}
	t.Logf("load: %d pods on %d nodes (%s, %s CPU per pod), disruption budget %s\n"+
		"  scale-up:   all Running %.1fs after the Deployment; joiner CPU %.1fs; API requests %d, mean %.1f/s, highest 10s window %.1f/s\n"+
		"  scale-down: %d of %d nodes given back %.1fs after replicas=0; joiner CPU %.1fs; API requests %d, mean %.1f/s, highest 10s window %.1f/s\n"+
		"  joiner peak RSS %.0f MiB (VmHWM of the process; %.0f MiB when every pod ran); Go heap in use at most %.0f MiB, at most %.0f goroutines (sampled every second)\n"+
		"  KUBE_CLIENT_QPS %d, burst %d",
		pods, len(nodes), loadNodeType, loadPodCPU, budget,
		upDone.Seconds(), upCPU, up.requests, up.mean, up.peak,
		len(nodes)-nodesLeft, len(nodes), downDone.Seconds(), last.cpu-upCPU, down.requests, down.mean, down.peak,
		float64(j.peakRSS)/1024, float64(upRSS)/1024, peakHeap/(1<<20), peakGoroutines, loadQPS, loadBurst)
	for _, r := range []rates{up, down} {
		// The client's token bucket allows its burst on top of QPS × time.
		if limit := loadQPS + float64(loadBurst)/rateWindow.Seconds(); r.peak > limit {
			t.Errorf("joiner sent %.1f requests/s over 10s, above KUBE_CLIENT_QPS %d (with burst %d: %.0f/s)", r.peak, loadQPS, loadBurst, limit)
		}
	}
	if want := (pods + loadPodsEach - 1) / loadPodsEach; len(nodes) > want+want/10 {
		t.Errorf("%d nodes for %d pods: want about %d (ten pods each)", len(nodes), pods, want)
	}
}

// waitFor polls done every second until it holds, logging progress every
// 15 seconds; it reports false (and fails the test) when ctx ends first.
func waitFor(t *testing.T, ctx context.Context, done func() bool, progress func(string), what string) bool {
	t.Helper()
	lastLog := time.Now()
	for !done() {
		select {
		case <-ctx.Done():
			progress(what + " timed out")
			t.Errorf("%s: timed out", what)
			return false
		case <-time.After(time.Second):
		}
		if time.Since(lastLog) >= 15*time.Second {
			progress(what)
			lastLog = time.Now()
		}
	}
	return true
}

// runningCounter counts the Running pods of a namespace from a watch:
// polling 10,000 pods would load the API server more than joiner does.
type runningCounter struct {
	mu  sync.Mutex
	set map[types.UID]bool
}

func (c *runningCounter) running() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.set)
}

func watchRunning(t *testing.T, ctx context.Context, kube kubernetes.Interface, ns string) *runningCounter {
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return kube.CoreV1().Pods(ns).Watch(ctx, o)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &runningCounter{set: map[types.UID]bool{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			c.mu.Lock()
			if ev.Type == watch.Deleted || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
				delete(c.set, pod.UID)
			} else {
				c.set[pod.UID] = true
			}
			c.mu.Unlock()
		}
	}()
	return c
}

// joinerMetrics scrapes joiner's metrics endpoint.
type joinerMetrics struct {
	url string
	// heapProfile, when set, is where the sampler saves a heap profile
	// (as heapProfile.peak) each time the heap in use passes its highest
	// yet by a quarter.
	heapProfile string
	mu          sync.Mutex
	all         []metricSample
}

// metricSample is joiner's request count, CPU seconds, Go heap in use
// and goroutines at a time.
type metricSample struct {
	at         time.Time
	requests   float64
	cpu        float64
	heap       float64
	goroutines float64
}

func (m *joinerMetrics) waitUp(t *testing.T) {
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := m.scrape(); err == nil {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("joiner's metrics endpoint: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// scrape reads rest_client_requests_total (summed over code, method and
// host), process_cpu_seconds_total, go_memstats_heap_inuse_bytes and
// go_goroutines.
func (m *joinerMetrics) scrape() (metricSample, error) {
	s := metricSample{at: time.Now()}
	resp, err := http.Get(m.url)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("GET %s: %s", m.url, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		var to *float64
		switch name {
		case "rest_client_requests_total":
			to = &s.requests
		case "process_cpu_seconds_total":
			to = &s.cpu
		case "go_memstats_heap_inuse_bytes":
			to = &s.heap
		case "go_goroutines":
			to = &s.goroutines
		default:
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return s, fmt.Errorf("metric line %q: %w", line, err)
		}
		*to += v
	}
	return s, sc.Err()
}

// sample scrapes every second until the returned stop is called, which
// returns the samples.
func (m *joinerMetrics) sample(t *testing.T) func() []metricSample {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var profiled float64
		for {
			if s, err := m.scrape(); err == nil {
				m.mu.Lock()
				m.all = append(m.all, s)
				m.mu.Unlock()
				if m.heapProfile != "" && s.heap > profiled*1.25 {
					profiled = s.heap
					m.saveHeapProfile(t, m.heapProfile+".peak", false)
				}
			}
			select {
			case <-done:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return func() []metricSample {
		close(done)
		<-stopped
		m.mu.Lock()
		defer m.mu.Unlock()
		if len(m.all) == 0 {
			t.Fatal("no sample of joiner's metrics")
		}
		return m.all
	}
}

// latest is the last sample taken (zero before the first).
func (m *joinerMetrics) latest() metricSample {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.all) == 0 {
		return metricSample{}
	}
	return m.all[len(m.all)-1]
}

func (m *joinerMetrics) last() metricSample {
	s, err := m.scrape()
	if err != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.all[len(m.all)-1]
	}
	return s
}

// saveHeapProfile writes joiner's heap profile (pprof's /debug/pprof/heap;
// with gc, after a collection so in-use figures are current) to path.
func (m *joinerMetrics) saveHeapProfile(t *testing.T, path string, gc bool) {
	t.Helper()
	url := strings.TrimSuffix(m.url, "/metrics") + "/debug/pprof/heap"
	if gc {
		url += "?gc=1"
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Errorf("heap profile: %v", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("heap profile: GET %s: %s", url, resp.Status)
		return
	}
	b, err := io.ReadAll(resp.Body)
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Errorf("heap profile: %v", err)
		return
	}
	t.Logf("heap profile saved to %s (Go heap %.0f MiB)", path, m.latest().heap/(1<<20))
}

// rateWindow is the window the request rate is checked over.
const rateWindow = 10 * time.Second

// rates are joiner's API requests in a phase.
type rates struct {
	requests   int
	mean, peak float64
}

// rateStats counts the requests between from and to, their mean rate and
// the highest rate over any rateWindow of samples inside.
func rateStats(samples []metricSample, from, to time.Time) rates {
	var in []metricSample
	for _, s := range samples {
		if !s.at.Before(from.Add(-time.Second)) && !s.at.After(to.Add(time.Second)) {
			in = append(in, s)
		}
	}
	var r rates
	if len(in) < 2 {
		return r
	}
	first, last := in[0], in[len(in)-1]
	r.requests = int(last.requests - first.requests)
	r.mean = (last.requests - first.requests) / last.at.Sub(first.at).Seconds()
	for i, a := range in {
		for _, b := range in[i+1:] {
			if b.at.Sub(a.at) >= rateWindow {
				r.peak = max(r.peak, (b.requests-a.requests)/b.at.Sub(a.at).Seconds())
				break
			}
		}
	}
	return r
}
