// Command gcrepro reproduces, at small scale, the cleanup of upstream's
// performance suite (test/conformance): kwok Nodes held by a stand-in for
// joiner's termination finalizer and thousands of Deployment pods, all
// deleted at once with foreground propagation and deleted again every pass
// until gone, as upstream's CleanupObjects does, while
// kube-controller-manager's garbage collector and kube-apiserver are
// sampled. It is a manual measurement, not a test (minutes, and its figures
// depend on the machine's load):
//
//	JOINER_K8S_BIN=bin/k8s nice -n 19 go run ./hack/gcrepro -dir "$RUN" -nodes 200 -pods 2000 \
//	  [-kcm-args=--concurrent-gc-syncs=100]
//
// It prints the garbage collector's rate while it drains the pods (items a
// second, seconds of work an item, its client's latency), kube-apiserver's
// CPU and the share of its request time spent on the cleanup's repeated
// deletes, and how long released Nodes waited for the collector; the
// samples (every 5 s) are in $RUN/samples.tsv. docs/conformance.md reads
// them.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/procfs"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/joiner-dev/joiner/pkg/controlplane"
)

const (
	label     = "testing/cluster"
	finalizer = "joiner.sh/stand-in"
)

func main() {
	nodes := flag.Int("nodes", 300, "kwok Nodes")
	pods := flag.Int("pods", 3000, "pods, over -deployments Deployments")
	deployments := flag.Int("deployments", 3, "Deployments")
	dir := flag.String("dir", "", "run directory")
	kcmArgs := flag.String("kcm-args", "", "extra kube-controller-manager flags, space separated")
	hold := flag.Duration("hold", 20*time.Second, "how long the stand-in keeps a deleted Node after its pods are gone")
	deadline := flag.Duration("deadline", 15*time.Minute, "give up the cleanup after this long")
	flag.Parse()

	extra := map[string][]string{
		"kube-controller-manager": {"--node-monitor-grace-period=10m", "--node-startup-grace-period=10m"},
		"kwok":                    {"--node-lease-duration-seconds=120"},
	}
	if *kcmArgs != "" {
		extra["kube-controller-manager"] = append(extra["kube-controller-manager"], strings.Fields(*kcmArgs)...)
	}
	cp, err := controlplane.New(controlplane.Options{RunDir: *dir, Scheduler: true, ControllerManager: true, Kwok: true, ExtraArgs: extra, StartTimeout: 5 * time.Minute})
	must(err)
	ctx := context.Background()
	must(cp.Start(ctx))
	defer func() {
		if err := cp.Stop(); err != nil {
			log.Printf("stopping the control plane: %v", err)
		}
	}()
	cfg := cp.Config()
	cfg.QPS, cfg.Burst = 1000, 2000
	kc := kubernetes.NewForConfigOrDie(cfg)
	logf("control plane up")

	sampler := startSampler(ctx, cp, kc, filepath.Join(*dir, "samples.tsv"))
	defer sampler()

	// Nodes, each with the stand-in finalizer.
	workqueue.ParallelizeUntil(ctx, 20, *nodes, func(i int) {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gc-node-%04d", i), Labels: map[string]string{label: "gc", "kubernetes.io/hostname": fmt.Sprintf("gc-node-%04d", i)}, Finalizers: []string{finalizer}},
			Status: corev1.NodeStatus{
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")},
			},
		}
		_, err := kc.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		must(err)
	})
	logf("created %d nodes", *nodes)
	ns := "default"
	per := int32(*pods / *deployments)
	for i := range *deployments {
		name := fmt.Sprintf("gc-%d", i)
		sel := map[string]string{"app": name, label: "gc"}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{label: "gc"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: &per,
				Selector: &metav1.LabelSelector{MatchLabels: sel},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: sel},
					Spec: corev1.PodSpec{
						Containers:  []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}}},
						Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
					},
				},
			},
		}
		_, err := kc.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		must(err)
	}
	for {
		pl, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: label, ResourceVersion: "0"})
		must(err)
		running := 0
		for _, p := range pl.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		logf("pods %d, running %d", len(pl.Items), running)
		if running >= *pods*95/100 {
			break
		}
		time.Sleep(10 * time.Second)
	}
	leases, err := kc.CoordinationV1().Leases("kube-node-lease").List(ctx, metav1.ListOptions{Limit: 1})
	must(err)
	if len(leases.Items) > 0 {
		logf("a node lease's ownerReferences: %+v", leases.Items[0].OwnerReferences)
	}

	// The stand-in for joiner's node termination: a deleted Node is tainted,
	// and released hold after no pod is bound to it.
	fac := informers.NewSharedInformerFactory(kc, 0)
	podInf := fac.Core().V1().Pods().Informer()
	must(podInf.AddIndexers(cache.Indexers{"node": func(o any) ([]string, error) { return []string{o.(*corev1.Pod).Spec.NodeName}, nil }}))
	nodeInf := fac.Core().V1().Nodes().Informer()
	var mu sync.Mutex
	deleted, released, gone := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	_, _ = nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, o any) {
			n := o.(*corev1.Node)
			if n.DeletionTimestamp != nil {
				mu.Lock()
				if _, ok := deleted[n.Name]; !ok {
					deleted[n.Name] = time.Now()
				}
				mu.Unlock()
			}
		},
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			mu.Lock()
			gone[o.(*corev1.Node).Name] = time.Now()
			mu.Unlock()
		},
	})
	fac.Start(ctx.Done())
	fac.WaitForCacheSync(ctx.Done())
	stop := make(chan struct{})
	go func() {
		empty := map[string]time.Time{}
		started := map[string]bool{}
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			for _, o := range nodeInf.GetStore().List() {
				n := o.(*corev1.Node)
				if n.DeletionTimestamp == nil || !hasFinalizer(n.Finalizers, finalizer) {
					continue
				}
				bound, _ := podInf.GetIndexer().ByIndex("node", n.Name)
				if len(bound) > 0 {
					delete(empty, n.Name)
					if !hasTaint(n) {
						patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"spec":{"taints":[{"key":"karpenter.sh/disrupted","effect":"NoSchedule"}]}}`, n.ResourceVersion)
						_, _ = kc.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
					}
					continue
				}
				if _, ok := empty[n.Name]; !ok {
					empty[n.Name] = time.Now()
				}
				if time.Since(empty[n.Name]) < *hold || started[n.Name] {
					continue
				}
				started[n.Name] = true
				name := n.Name
				go func() {
					// Re-read on conflict, as joiner's termination does: the
					// cleanup and the garbage collector rewrite the finalizers.
					for range 10 {
						fresh, err := kc.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
						if err != nil || !hasFinalizer(fresh.Finalizers, finalizer) {
							return
						}
						var keep []string
						for _, f := range fresh.Finalizers {
							if f != finalizer {
								keep = append(keep, f)
							}
						}
						patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q,"finalizers":%s}}`, fresh.ResourceVersion, jsonList(keep))
						if _, err := kc.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
							mu.Lock()
							released[name] = time.Now()
							mu.Unlock()
							return
						}
					}
				}()
			}
		}
	}()

	// The window in which the garbage collector drains the pods.
	before := snapshot(ctx, cp, kc)

	// Upstream's cleanup: every kind at once, foreground, 50 workers a kind,
	// again every 2 s until the kind is empty.
	start := time.Now()
	logf("cleanup starts")
	var wg sync.WaitGroup
	var deletes atomic.Int64
	// The kinds upstream's cleanup deletes that this run creates, listed and
	// deleted by their metadata only, as upstream does.
	mc := metadata.NewForConfigOrDie(cfg)
	kinds := map[string]metadata.ResourceInterface{
		"deployments": mc.Resource(appsv1.SchemeGroupVersion.WithResource("deployments")).Namespace(ns),
		"pods":        mc.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(ns),
		"nodes":       mc.Resource(corev1.SchemeGroupVersion.WithResource("nodes")),
	}
	done := map[string]time.Duration{}
	var doneMu sync.Mutex
	for kind := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < *deadline {
				list, err := kinds[kind].List(ctx, metav1.ListOptions{LabelSelector: label})
				if err == nil && len(list.Items) == 0 {
					if kind == "pods" {
						report(before, snapshot(ctx, cp, kc))
					}
					doneMu.Lock()
					done[kind] = time.Since(start)
					doneMu.Unlock()
					logf("%s: none left after %s", kind, time.Since(start).Round(time.Second))
					return
				}
				var items []metav1.PartialObjectMetadata
				if err == nil {
					items = list.Items
				}
				workqueue.ParallelizeUntil(ctx, 50, len(items), func(i int) {
					if err := kinds[kind].Delete(ctx, items[i].Name, foreground()); err != nil && !apierrors.IsNotFound(err) {
						log.Printf("deleting %s %s: %v", kind, items[i].Name, err)
					}
					deletes.Add(1)
				})
				time.Sleep(2 * time.Second)
			}
		}()
	}
	go func() {
		for {
			time.Sleep(15 * time.Second)
			mu.Lock()
			logf("t=%s deleted %d released %d gone %d (deletes sent %d)", time.Since(start).Round(time.Second), len(deleted), len(released), len(gone), deletes.Load())
			mu.Unlock()
		}
	}()
	wg.Wait()
	close(stop)
	logf("cleanup done in %s: %v", time.Since(start).Round(time.Second), done)
	mu.Lock()
	var lat []time.Duration
	var lastRelease, firstRelease time.Time
	for n, r := range released {
		if g, ok := gone[n]; ok {
			lat = append(lat, g.Sub(r))
		}
		if lastRelease.IsZero() || r.After(lastRelease) {
			lastRelease = r
		}
		if firstRelease.IsZero() || r.Before(firstRelease) {
			firstRelease = r
		}
	}
	var lastGone time.Time
	for _, g := range gone {
		if g.After(lastGone) {
			lastGone = g
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		logf("released nodes gone after: p50 %s p90 %s max %s (%d nodes); released from t=%s to t=%s, last gone at t=%s",
			lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*9/10].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), len(lat),
			firstRelease.Sub(start).Round(time.Second), lastRelease.Sub(start).Round(time.Second), lastGone.Sub(start).Round(time.Second))
	}
	mu.Unlock()
}

func foreground() metav1.DeleteOptions {
	p := metav1.DeletePropagationForeground
	return metav1.DeleteOptions{PropagationPolicy: &p, GracePeriodSeconds: new(int64)}
}

func hasFinalizer(fs []string, f string) bool {
	for _, x := range fs {
		if x == f {
			return true
		}
	}
	return false
}

func hasTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == "karpenter.sh/disrupted" {
			return true
		}
	}
	return false
}

func jsonList(s []string) string {
	if len(s) == 0 {
		return "[]"
	}
	return `["` + strings.Join(s, `","`) + `"]`
}

// startSampler writes, every 5 s, the garbage collector's queue metrics,
// kube-controller-manager's client latency, kube-apiserver's request
// latency, and the CPU of the control plane's processes.
func startSampler(ctx context.Context, cp *controlplane.ControlPlane, kc *kubernetes.Clientset, path string) func() {
	f, err := os.Create(path)
	must(err)
	w := bufio.NewWriter(f)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			now := time.Now().UTC().Format("15:04:05")
			if b, err := cp.Metrics(ctx, "kube-controller-manager"); err == nil {
				for _, l := range filterLines(b, []string{`name="garbage_collector_`, "rest_client_request_duration_seconds_sum", "rest_client_request_duration_seconds_count", "rest_client_rate_limiter_duration_seconds_sum", "rest_client_rate_limiter_duration_seconds_count", "garbagecollector_"}) {
					fmt.Fprintf(w, "%s\tkcm\t%s\n", now, l)
				}
			}
			if b, err := kc.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx); err == nil {
				for _, l := range filterLines(b, []string{"apiserver_request_duration_seconds_sum", "apiserver_request_duration_seconds_count", "apiserver_current_inflight_requests"}) {
					fmt.Fprintf(w, "%s\tapiserver\t%s\n", now, l)
				}
			}
			load, _ := os.ReadFile("/proc/loadavg")
			fmt.Fprintf(w, "%s\tload\t%s\n", now, strings.TrimSpace(string(load)))
			for pid, name := range children() {
				fmt.Fprintf(w, "%s\tcpu\t%s %d\n", now, name, cpuTicks(pid))
			}
			if err := w.Flush(); err != nil {
				log.Printf("writing samples: %v", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Second):
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
		if err := w.Flush(); err != nil {
			log.Printf("writing samples: %v", err)
		}
		f.Close()
	}
}

func filterLines(b []byte, keep []string) []string {
	var out []string
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(l) == 0 || l[0] == '#' {
			continue
		}
		for _, k := range keep {
			if bytes.Contains(l, []byte(k)) {
				out = append(out, string(l))
				break
			}
		}
	}
	return out
}

// children names this process's direct children (the control plane's
// components) by pid.
func children() map[int]string {
	out := map[int]string{}
	me := os.Getpid()
	procs, _ := procfs.AllProcs()
	for _, p := range procs {
		if st, err := p.Stat(); err == nil && st.PPID == me {
			out[p.PID] = st.Comm
		}
	}
	return out
}

// cpuTicks is pid's user and system CPU time in clock ticks, -1 when it
// cannot be read.
func cpuTicks(pid int) int {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return -1
	}
	st, err := p.Stat()
	if err != nil {
		return -1
	}
	return int(st.UTime + st.STime)
}

func logf(format string, args ...any) {
	fmt.Printf("%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

// sample is one reading of the counters report compares.
type sample struct {
	at      time.Time
	metrics map[string]float64
	// apiserverTicks is kube-apiserver's CPU time in clock ticks.
	apiserverTicks int
}

func snapshot(ctx context.Context, cp *controlplane.ControlPlane, kc *kubernetes.Clientset) sample {
	s := sample{at: time.Now(), metrics: map[string]float64{}}
	if b, err := cp.Metrics(ctx, "kube-controller-manager"); err == nil {
		for _, l := range filterLines(b, []string{`name="garbage_collector_attempt_to_delete"`, "rest_client_request_duration_seconds_"}) {
			addMetric(s.metrics, "kcm ", l)
		}
	}
	if b, err := kc.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx); err == nil {
		for _, l := range filterLines(b, []string{"apiserver_request_duration_seconds_sum", "apiserver_request_duration_seconds_count"}) {
			addMetric(s.metrics, "apiserver ", l)
		}
	}
	for pid, name := range children() {
		if name == "kube-apiserver" {
			s.apiserverTicks = cpuTicks(pid)
		}
	}
	return s
}

func addMetric(m map[string]float64, prefix, line string) {
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return
	}
	if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
		m[prefix+line[:i]] = v
	}
}

// report prints the garbage collector's rate and kube-apiserver's load
// between two samples.
func report(a, b sample) {
	d := func(k string) float64 { return b.metrics[k] - a.metrics[k] }
	secs := b.at.Sub(a.at).Seconds()
	q := `{name="garbage_collector_attempt_to_delete"}`
	items := d("kcm workqueue_work_duration_seconds_count" + q)
	logf("garbage collector while the pods drained (%.0fs): %.0f items, %.1f/s, %.2fs of work an item, %.1fs queued an item",
		secs, items, items/secs, d("kcm workqueue_work_duration_seconds_sum"+q)/max(items, 1), d("kcm workqueue_queue_duration_seconds_sum"+q)/max(items, 1))
	for _, verb := range []string{"GET", "PATCH"} {
		for k := range b.metrics {
			if strings.HasPrefix(k, "kcm rest_client_request_duration_seconds_count") && strings.Contains(k, `verb="`+verb+`"`) {
				n := d(k)
				logf("kube-controller-manager %s: %.1f/s, %.3fs each", verb, n/secs, d(strings.Replace(k, "_count", "_sum", 1))/max(n, 1))
			}
		}
	}
	var total, cleanup float64
	for k := range b.metrics {
		if !strings.HasPrefix(k, "apiserver apiserver_request_duration_seconds_sum") || strings.Contains(k, `verb="WATCH"`) {
			continue
		}
		total += d(k)
		if strings.Contains(k, `verb="DELETE"`) && (strings.Contains(k, `resource="pods"`) || strings.Contains(k, `resource="nodes"`)) {
			cleanup += d(k)
		}
	}
	logf("kube-apiserver: %.2f cores; %.0f%% of its request time on DELETEs of pods and nodes",
		float64(b.apiserverTicks-a.apiserverTicks)/100/secs, 100*cleanup/max(total, 1))
}
