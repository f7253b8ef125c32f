package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Series keeps a gauge vector's per-object series from one interval to the
// next: Set writes this interval's values and Flush deletes the series not
// set since the last Flush. The alternative, Reset then set every series
// again, re-creates each series (its label pairs and metric) every
// interval: at 10,000 pods tens of MiB of garbage per interval, and a
// scrape between the Reset and the refill sees none of them.
type Series struct {
	vec *prometheus.GaugeVec
	// last and next are the label values set in the previous and the
	// current interval, keyed by their joined values (a series is its
	// label set: two objects with the same labels share one).
	last, next map[string][]string
}

// NewSeries keeps vec's series across intervals; vec must be set only
// through it.
func NewSeries(vec *prometheus.GaugeVec) *Series {
	return &Series{vec: vec, last: map[string][]string{}, next: map[string][]string{}}
}

// Set sets the series of labels to v for this interval.
func (s *Series) Set(v float64, labels ...string) {
	s.vec.WithLabelValues(labels...).Set(v)
	s.next[strings.Join(labels, "\x00")] = labels
}

// Flush deletes the series of the previous interval that were not set in
// this one, and starts the next interval.
func (s *Series) Flush() {
	for key, labels := range s.last {
		if _, ok := s.next[key]; !ok {
			s.vec.DeleteLabelValues(labels...)
		}
	}
	s.last, s.next = s.next, make(map[string][]string, len(s.next))
}
