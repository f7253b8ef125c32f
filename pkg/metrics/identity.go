package metrics

import "github.com/prometheus/client_golang/prometheus"

// ClusterNamesakes is the number of other clusters whose instances carry
// this cluster's name (seed 004: two clusters sharing a clusterName). joiner
// leaves their instances alone, but tooling that trusts the name does not;
// a non-zero value is worth an alert, the fix is renaming one cluster.
var ClusterNamesakes = NewGauge(prometheus.GaugeOpts{
	Namespace: JoinerNamespace, Subsystem: "cluster", Name: "namesakes",
	Help: "Number of other clusters seen in the cloud with this cluster's name (their instances are left alone; give the clusters distinct names).",
})
