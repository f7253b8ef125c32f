package metrics

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSeriesPublishesEachIntervalWhole: a scrape sees the last flushed
// interval only: a series set again keeps its value, one whose labels
// changed is replaced, one not set is gone, a series set twice takes the
// last value, and what is set before the next Flush is not seen yet.
func TestSeriesPublishesEachIntervalWhole(t *testing.T) {
	s := newSeries(prometheus.GaugeOpts{Name: "test_pods_state", Help: "h"}, "name", "phase")
	type want map[[2]string]float64
	check := func(step string, w want) {
		t.Helper()
		if got := testutil.CollectAndCount(s); got != len(w) || s.Len() != len(w) {
			t.Fatalf("%s: %d series collected (Len %d), want %d", step, got, s.Len(), len(w))
		}
		for labels, v := range w {
			if got, ok := s.Value(labels[0], labels[1]); !ok || got != v {
				t.Fatalf("%s: %v = %v (%v), want %v", step, labels, got, ok, v)
			}
		}
	}
	published := want{}
	for _, interval := range []struct {
		name string
		set  [][3]any // value, name, phase
		want want
	}{
		{name: "first", set: [][3]any{{1.0, "a", "Pending"}, {1.0, "b", "Running"}, {1.0, "c", "Running"}},
			want: want{{"a", "Pending"}: 1, {"b", "Running"}: 1, {"c", "Running"}: 1}},
		{name: "a runs, b is gone, c twice", set: [][3]any{{1.0, "a", "Running"}, {3.0, "c", "Running"}, {2.0, "c", "Running"}},
			want: want{{"a", "Running"}: 1, {"c", "Running"}: 2}},
		{name: "nothing", want: want{}},
	} {
		for _, v := range interval.set {
			s.Set(v[0].(float64), v[1].(string), v[2].(string))
		}
		check(interval.name+", before Flush", published)
		s.Flush()
		check(interval.name, interval.want)
		published = interval.want
	}
}

// TestSeriesExposesItsLabels: what a scrape reads is the gauge with its
// help and each series' label values in their places, empty ones included.
func TestSeriesExposesItsLabels(t *testing.T) {
	s := newSeries(prometheus.GaugeOpts{Namespace: "karpenter", Subsystem: "pods", Name: "state", Help: "Pod state."}, "name", "node", "phase")
	s.Set(1, "web-1", "", "Pending")
	s.Set(1, "web-0", "node-a", "Running")
	s.Flush()
	want := `# HELP karpenter_pods_state Pod state.
# TYPE karpenter_pods_state gauge
karpenter_pods_state{name="web-0",node="node-a",phase="Running"} 1
karpenter_pods_state{name="web-1",node="",phase="Pending"} 1
`
	if err := testutil.CollectAndCompare(s, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

// TestSeriesKeepsAScrapeValid: a label value that is not UTF-8, or holds
// the NUL the key is joined with, is published cleaned, and the scrape
// (which would fail whole on one invalid value) still succeeds.
func TestSeriesKeepsAScrapeValid(t *testing.T) {
	s := newSeries(prometheus.GaugeOpts{Name: "test_pods_state", Help: "h"}, "name", "phase")
	s.Set(1, "bad\xffname", "Running")
	s.Set(2, "nul\x00name", "Pending")
	s.Flush()
	want := `# HELP test_pods_state h
# TYPE test_pods_state gauge
test_pods_state{name="bad�name",phase="Running"} 1
test_pods_state{name="nul�name",phase="Pending"} 2
`
	if err := testutil.CollectAndCompare(s, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

// TestSeriesReusesItsKeysAcrossIntervals: setting again the series of the
// last interval allocates nothing per series (joining the labels into a
// new key per series and interval was tens of thousands of strings per
// interval at 10,000 pods), and a series costs far less than a gauge
// vector's.
func TestSeriesReusesItsKeysAcrossIntervals(t *testing.T) {
	s := newSeries(prometheus.GaugeOpts{Name: "test_pods_state", Help: "h"}, "name", "namespace", "phase")
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("pod-%03d", i)
	}
	interval := func() {
		for _, n := range names {
			s.Set(1, n, "default", "Running")
		}
		s.Flush()
	}
	interval() // the first interval creates the series and their keys
	if perSeries := testing.AllocsPerRun(20, interval) / float64(len(names)); perSeries > 0.1 {
		t.Errorf("an interval allocated %.2f times per series, want none beyond the interval's own index", perSeries)
	}
	if got := testutil.CollectAndCount(s); got != len(names) {
		t.Errorf("%d series, want %d", got, len(names))
	}
}

// BenchmarkSeriesMemory reports the heap a series holds, against a gauge
// vector's, for karpenter_pods_state's ten labels.
func BenchmarkSeriesMemory(b *testing.B) {
	labels := []string{"name", "namespace", "owner", "node", "nodepool", "zone", "arch", "capacity_type", "instance_type", "phase"}
	values := func(i int) []string {
		return []string{fmt.Sprintf("load-7d9f8c6b5-%05d", i), "load-test", "apps/v1/namespaces/load-test/replicasets/load-7d9f8c6b5",
			fmt.Sprintf("node-%04d", i/10), "default", "zone-a", "amd64", "on-demand", "m5.large", "Running"}
	}
	const n = 10000
	for _, kind := range []string{"series", "gauge-vec"} {
		b.Run(kind, func(b *testing.B) {
			for range b.N {
				before := heapInUse()
				var keep any
				switch kind {
				case "series":
					s := newSeries(prometheus.GaugeOpts{Name: "m", Help: "h"}, labels...)
					for i := range n {
						s.Set(1, values(i)...)
					}
					s.Flush()
					keep = s
				default:
					v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "m", Help: "h"}, labels)
					for i := range n {
						v.WithLabelValues(values(i)...).Set(1)
					}
					keep = v
				}
				b.ReportMetric(float64(heapInUse()-before)/n, "B/series")
				runtime.KeepAlive(keep)
			}
		})
	}
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
