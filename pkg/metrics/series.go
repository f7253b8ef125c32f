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
	// last and next are the series set in the previous and the current
	// interval, keyed by their label values joined by "\x00", each key
	// mapped to itself: a series set again reuses last's key instead of
	// allocating a new one each interval (tens of thousands of series at
	// 10,000 pods), and the label values are split out of the key only
	// to delete a series.
	last, next map[string]string
	// key is the buffer the joined label values are built in.
	key []byte
}

// NewSeries keeps vec's series across intervals; vec must be set only
// through it.
func NewSeries(vec *prometheus.GaugeVec) *Series {
	return &Series{vec: vec, last: map[string]string{}, next: map[string]string{}}
}

// Set sets the series of labels to v for this interval.
func (s *Series) Set(v float64, labels ...string) {
	s.vec.WithLabelValues(labels...).Set(v)
	s.key = s.key[:0]
	for i, l := range labels {
		if i > 0 {
			s.key = append(s.key, 0)
		}
		s.key = append(s.key, l...)
	}
	if _, ok := s.next[string(s.key)]; ok {
		return
	}
	k, ok := s.last[string(s.key)]
	if !ok {
		k = string(s.key)
	}
	s.next[k] = k
}

// Flush deletes the series of the previous interval that were not set in
// this one, and starts the next interval.
func (s *Series) Flush() {
	for key := range s.last {
		if _, ok := s.next[key]; !ok {
			s.vec.DeleteLabelValues(strings.Split(key, "\x00")...)
		}
	}
	s.last, s.next = s.next, make(map[string]string, len(s.next))
}
