// Package metrics defines the Prometheus metrics joiner's controllers share,
// registered once on controller-runtime's metrics.Registry so they are served
// on the manager's metrics endpoint.
//
// Names follow Karpenter's (namespace "karpenter") so existing dashboards and
// alerts keep working against joiner. The package only defines metrics and
// tiny helpers that keep label sets consistent; it never decides anything and
// never reads cluster state.
package metrics
