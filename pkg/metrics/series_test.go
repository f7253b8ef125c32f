package metrics

import (
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
