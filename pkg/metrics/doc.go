// Package metrics defines the Prometheus metrics joiner's controllers share,
// registered once on controller-runtime's metrics.Registry so they are served
// on the manager's metrics endpoint.
//
// Names follow Karpenter's (namespace "karpenter", and the "operator_"
// status condition metrics of awslabs/operatorpkg and the "aws_sdk_go_"
// request metrics Karpenter's AWS provider serves) so existing dashboards
// and alerts keep working against joiner; joiner's own are "joiner_". The
// package only defines metrics and small helpers that keep label sets
// consistent (and the times the provisioning latencies are measured from);
// it never decides anything and never reads cluster state.
package metrics
