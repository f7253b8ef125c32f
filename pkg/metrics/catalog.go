package metrics

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Definition describes one metric joiner serves: docs/metrics.md is
// generated from them, and the dashboard test checks its queries against
// them.
type Definition struct {
	Name   string
	Type   string
	Help   string
	Labels []string
}

var (
	catalogMu sync.Mutex
	catalog   = map[string]Definition{}
)

// Catalog returns every metric defined through this package's
// constructors, by name (those of packages not linked into the binary
// excepted).
func Catalog() []Definition {
	catalogMu.Lock()
	defer catalogMu.Unlock()
	out := make([]Definition, 0, len(catalog))
	for _, d := range catalog {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func define(typ, namespace, subsystem, name, help string, labels []string) {
	catalogMu.Lock()
	defer catalogMu.Unlock()
	fq := prometheus.BuildFQName(namespace, subsystem, name)
	catalog[fq] = Definition{Name: fq, Type: typ, Help: help, Labels: labels}
}

// The constructors below build a metric, register it on controller-runtime's
// registry (served on the manager's /metrics) and record it in the catalog.
// Every joiner metric goes through them, so the generated reference cannot
// miss one.

// NewCounterVec defines a counter with labels.
func NewCounterVec(opts prometheus.CounterOpts, labels ...string) *prometheus.CounterVec {
	define("counter", opts.Namespace, opts.Subsystem, opts.Name, opts.Help, labels)
	c := prometheus.NewCounterVec(opts, labels)
	crmetrics.Registry.MustRegister(c)
	return c
}

// NewCounter defines a counter without labels.
func NewCounter(opts prometheus.CounterOpts) prometheus.Counter {
	define("counter", opts.Namespace, opts.Subsystem, opts.Name, opts.Help, nil)
	c := prometheus.NewCounter(opts)
	crmetrics.Registry.MustRegister(c)
	return c
}

// NewGaugeVec defines a gauge with labels.
func NewGaugeVec(opts prometheus.GaugeOpts, labels ...string) *prometheus.GaugeVec {
	define("gauge", opts.Namespace, opts.Subsystem, opts.Name, opts.Help, labels)
	g := prometheus.NewGaugeVec(opts, labels)
	crmetrics.Registry.MustRegister(g)
	return g
}

// NewGauge defines a gauge without labels.
func NewGauge(opts prometheus.GaugeOpts) prometheus.Gauge {
	define("gauge", opts.Namespace, opts.Subsystem, opts.Name, opts.Help, nil)
	g := prometheus.NewGauge(opts)
	crmetrics.Registry.MustRegister(g)
	return g
}

// NewHistogramVec defines a histogram with labels.
func NewHistogramVec(opts prometheus.HistogramOpts, labels ...string) *prometheus.HistogramVec {
	define("histogram", opts.Namespace, opts.Subsystem, opts.Name, opts.Help, labels)
	h := prometheus.NewHistogramVec(opts, labels)
	crmetrics.Registry.MustRegister(h)
	return h
}

// NewHistogram defines a histogram without labels.
func NewHistogram(opts prometheus.HistogramOpts) prometheus.Histogram {
	define("histogram", opts.Namespace, opts.Subsystem, opts.Name, opts.Help, nil)
	h := prometheus.NewHistogram(opts)
	crmetrics.Registry.MustRegister(h)
	return h
}
