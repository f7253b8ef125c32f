package reference

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joiner-dev/joiner/pkg/metrics"
	// The operator links every package that defines a metric, so the
	// catalog is complete.
	_ "github.com/joiner-dev/joiner/pkg/operator"
	"github.com/joiner-dev/joiner/pkg/operator/options"
)

// scopeTitles order and name the settings' sections.
var scopeTitles = []struct{ scope, title, intro string }{
	{options.ScopeCore, "Karpenter's core settings", "Same names, defaults and meaning as Karpenter's (kubernetes-sigs/karpenter `pkg/operator/options`). Where a setting does not apply to joiner, the description says why and which values are accepted."},
	{options.ScopeAWS, "Karpenter's AWS provider settings", "Same names, defaults and meaning as the AWS provider's (aws/karpenter-provider-aws `pkg/operator/options`)."},
	{options.ScopeJoiner, "joiner's own settings", "Settings Karpenter does not have."},
}

// Settings renders docs/settings.md. Every setting is a flag whose default
// comes from its environment variable; the defaults shown are those with
// an empty environment.
func Settings() (string, error) {
	fs := pflag.NewFlagSet("reference", pflag.ContinueOnError)
	o := &options.Options{}
	o.AddFlags(fs)
	var b strings.Builder
	b.WriteString("<!-- Generated from pkg/operator/options by `make generate`; do not edit. -->\n")
	b.WriteString("# Settings\n\n")
	b.WriteString("Every setting of `joiner controller` (and `joiner run`) is a flag whose default comes from an environment variable, as in Karpenter: a Karpenter Helm chart's `env` configures joiner unchanged. ")
	b.WriteString("A malformed value, an unknown flag, or a value joiner cannot honour stops joiner at start with an error naming the setting. ")
	b.WriteString("(An unknown environment variable cannot be detected: the environment holds many variables that are not joiner's.)\n")
	for _, sec := range scopeTitles {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", sec.title, sec.intro)
		b.WriteString("| Environment variable | Flag | Default | Description |\n|---|---|---|---|\n")
		var rowErr error
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			env, scope, def := f.Annotations[options.AnnotationEnv], f.Annotations[options.AnnotationScope], f.Annotations[options.AnnotationDefault]
			if len(env) != 1 || len(scope) != 1 || len(def) != 1 {
				rowErr = fmt.Errorf("flag --%s has no environment variable or scope annotation", f.Name)
				return
			}
			if scope[0] != sec.scope {
				return
			}
			shown := def[0]
			if shown == "" {
				shown = `""`
			}
			usage := strings.TrimSuffix(f.Usage, " ["+env[0]+"]")
			fmt.Fprintf(&b, "| `%s` | `--%s` | `%s` | %s |\n", env[0], f.Name, shown, strings.ReplaceAll(usage, "|", `\|`))
		})
		if rowErr != nil {
			return "", rowErr
		}
	}
	return b.String(), nil
}

// Metrics renders docs/metrics.md from the catalog.
func Metrics() string {
	var b strings.Builder
	b.WriteString("<!-- Generated from pkg/metrics.Catalog by `make generate`; do not edit. -->\n")
	b.WriteString("# Metrics\n\n")
	b.WriteString("joiner serves Prometheus metrics on `:8080/metrics` (`METRICS_PORT`). Metrics Karpenter also has keep its name (prefix `karpenter_`) and its labels, so Karpenter's dashboards and alerts work unchanged; joiner's own additions are prefixed `joiner_`. ")
	b.WriteString("controller-runtime's `controller_runtime_*`, `workqueue_*`, `rest_client_*`, `leader_election_*` and Go's `go_*`/`process_*` metrics are served too, as in Karpenter.\n\n")
	b.WriteString("The cluster state gauges (`karpenter_nodes_allocatable`, `karpenter_nodes_total_*`, `karpenter_nodes_system_overhead`, `karpenter_nodes_current_lifetime_seconds`, `karpenter_pods_state`, `karpenter_nodepools_usage`/`_limit`, `karpenter_cluster_utilization_percent`, `karpenter_cloudprovider_instance_type_*`) are recomputed every 5 seconds by the leader, and are off with `DISABLE_CLUSTER_STATE_OBSERVABILITY=true`.\n\n")
	b.WriteString("The status condition metrics (`operator_<kind>_status_condition_*` and `operator_<kind>_termination_*`) are Karpenter's per-kind names from awslabs/operatorpkg, for `nodeclaim`, `nodepool`, `node` and `ec2nodeclass`; the simulated cloud's SimNodeClass, which Karpenter does not have, has the same set as `joiner_simnodeclass_*`. The `aws_sdk_go_request_*` metrics count the calls of every AWS client joiner builds (EC2, IAM, SSM, Pricing, EKS, SQS).\n\n")
	b.WriteString("Karpenter metrics joiner does not serve: `karpenter_voluntary_disruption_consolidation_timeouts_total` (joiner's consolidation search is bounded and has no timeout), `karpenter_interruption_instance_status_unhealthy_total` (joiner does not poll EC2 instance status checks; it acts on the interruption queue's events), and the deprecated kind-labelled `operator_status_condition_*`/`operator_termination_*` (the per-kind names replace them). The `operator_capacitybuffer_*` set is served with the CapacityBuffer gate on (and cluster state observability not disabled), as Karpenter serves it.\n\n")
	section := ""
	for _, d := range metrics.Catalog() {
		if s := sectionOf(d.Name); s != section {
			section = s
			fmt.Fprintf(&b, "## %s\n\n| Metric | Type | Labels | Description |\n|---|---|---|---|\n", s)
		}
		labels := "—"
		if len(d.Labels) > 0 {
			labels = "`" + strings.Join(d.Labels, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d.Name, d.Type, labels, strings.ReplaceAll(d.Help, "|", `\|`))
	}
	return strings.ReplaceAll(b.String(), "|\n## ", "|\n\n## ")
}

// sectionOf groups metrics by owner and subsystem: "karpenter nodes",
// "joiner pods", ...
func sectionOf(name string) string {
	parts := strings.SplitN(name, "_", 3)
	if len(parts) < 3 {
		return parts[0]
	}
	return parts[0] + " " + parts[1]
}
