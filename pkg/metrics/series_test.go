package metrics

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSeriesKeepsWhatIsSetAndDeletesWhatIsGone: across intervals a series
// set again keeps its value, one whose labels changed is replaced, one not
// set is deleted, and two objects with one label set share a series.
func TestSeriesKeepsWhatIsSetAndDeletesWhatIsGone(t *testing.T) {
	vec := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "test_pods_state"}, []string{"name", "phase"})
	s := NewSeries(vec)
	type want map[[2]string]float64
	check := func(step string, w want) {
		t.Helper()
		if got := testutil.CollectAndCount(vec); got != len(w) {
			t.Fatalf("%s: %d series, want %d", step, got, len(w))
		}
		for labels, v := range w {
			if got := testutil.ToFloat64(vec.WithLabelValues(labels[0], labels[1])); got != v {
				t.Fatalf("%s: %v = %v, want %v", step, labels, got, v)
			}
		}
	}
	for _, interval := range []struct {
		name string
		set  [][3]any // value, name, phase
		want want
	}{
		{name: "first", set: [][3]any{{1.0, "a", "Pending"}, {1.0, "b", "Running"}, {1.0, "c", "Running"}},
			want: want{{"a", "Pending"}: 1, {"b", "Running"}: 1, {"c", "Running"}: 1}},
		{name: "a runs, b is gone, c twice", set: [][3]any{{1.0, "a", "Running"}, {2.0, "c", "Running"}, {2.0, "c", "Running"}},
			want: want{{"a", "Running"}: 1, {"c", "Running"}: 2}},
		{name: "nothing", want: want{}},
	} {
		for _, v := range interval.set {
			s.Set(v[0].(float64), v[1].(string), v[2].(string))
		}
		s.Flush()
		check(interval.name, interval.want)
	}
}

// TestSeriesReusesItsKeysAcrossIntervals: setting again the series of the
// last interval allocates nothing beyond the gauge vector's own lookup
// (joining the labels into a new key per series and interval was tens of
// thousands of strings per interval at 10,000 pods).
func TestSeriesReusesItsKeysAcrossIntervals(t *testing.T) {
	vec := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "test_pods_state"}, []string{"name", "namespace", "phase"})
	s := NewSeries(vec)
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("pod-%03d", i)
	}
	interval := func(set func(name string)) func() {
		return func() {
			for _, n := range names {
				set(n)
			}
			s.Flush()
		}
	}
	viaSeries := interval(func(n string) { s.Set(1, n, "default", "Running") })
	viaVec := interval(func(n string) { vec.WithLabelValues(n, "default", "Running").Set(1) })
	viaSeries() // the first interval creates the series and their keys
	extra := (testing.AllocsPerRun(20, viaSeries) - testing.AllocsPerRun(20, viaVec)) / float64(len(names))
	if extra > 0.1 {
		t.Errorf("Set allocated %.2f times per series beyond the vector's lookup, want none", extra)
	}
	if got := testutil.CollectAndCount(vec); got != len(names) {
		t.Errorf("%d series, want %d", got, len(names))
	}
}
