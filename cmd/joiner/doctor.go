package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/controllerview"
	"github.com/joiner-dev/joiner/pkg/doctor"
	"github.com/joiner-dev/joiner/pkg/operator/options"
)

// doctorOptions are `joiner doctor`'s flags.
type doctorOptions struct {
	kubeconfig         string
	clusterName        string
	cloudProvider      string
	controllerSelector string
	output             string
	ssmParameterRoot   string
}

// newDoctorCommand checks a live cluster (and its AWS account) for the
// mistakes that keep nodes from joining or pods from scheduling.
func newDoctorCommand() *cobra.Command {
	o := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check a cluster (and its AWS account) for what keeps joiner's nodes from working",
		Long: `Check a live cluster, and with --cloud-provider=aws its AWS account, for the
mistakes that keep nodes from joining or pods from scheduling: joiner's own
pods on nodes it manages, custom userData without the unregistered or startup
taints, a node role not mapped in aws-auth or an access entry, images of an
architecture no allowed instance type has, another controller using this
clusterName, NodePools no instance type serves, subnets close to exhaustion,
pods without requests, in-tree volumes and Windows build mismatches.

One line per finding, with its fix. Exits non-zero when there is an error;
warnings alone exit zero. It only reads.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := restConfig(o.kubeconfig)
			if err != nil {
				return err
			}
			report, err := runDoctor(cmd.Context(), cfg, o)
			if err != nil {
				return err
			}
			if err := writeDoctorReport(cmd.OutOrStdout(), report, o.output); err != nil {
				return err
			}
			if n := report.Errors(); n > 0 {
				return fmt.Errorf("doctor found %d error(s)", n)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty means $KUBECONFIG, then in-cluster")
	f.StringVar(&o.clusterName, "cluster-name", os.Getenv("CLUSTER_NAME"), "The clusterName joiner runs with; default: the running controller's (its view ConfigMap, so `joiner run`'s joiner-local too), else joiner [CLUSTER_NAME]")
	f.StringVar(&o.ssmParameterRoot, "ssm-parameter-root", envOr("SSM_PARAMETER_ROOT", "/aws/service"), "aws: root of the public SSM parameters behind AMI aliases [SSM_PARAMETER_ROOT]")
	f.StringVar(&o.cloudProvider, "cloud-provider", envOr("CLOUD_PROVIDER", options.CloudProviderSim), "sim, or aws to check the AWS account too (the SDK's usual configuration: AWS_REGION, AWS_ENDPOINT_URL, credentials) [CLOUD_PROVIDER]")
	f.StringVar(&o.controllerSelector, "controller-selector", doctor.DefaultControllerSelector, "Label selector of joiner's Deployment")
	f.StringVarP(&o.output, "output", "o", "text", "Output format: text or json")
	return cmd
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// runDoctor loads the AWS configuration when asked and runs doctor.
func runDoctor(ctx context.Context, cfg *rest.Config, o *doctorOptions) (doctor.Report, error) {
	if o.output != "text" && o.output != "json" {
		return doctor.Report{}, fmt.Errorf("--output %q: use text or json", o.output)
	}
	if o.clusterName == "" {
		o.clusterName = runningClusterName(ctx, cfg)
	}
	ro := doctor.RunOptions{ClusterName: o.clusterName, ControllerSelector: o.controllerSelector, SSMParameterRoot: o.ssmParameterRoot}
	switch o.cloudProvider {
	case options.CloudProviderAWS:
		awsCfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return doctor.Report{}, fmt.Errorf("loading the AWS configuration: %w", err)
		}
		ro.AWS = &awsCfg
	case options.CloudProviderSim:
	default:
		return doctor.Report{}, fmt.Errorf("--cloud-provider %q is not one of sim, aws", o.cloudProvider)
	}
	return doctor.Run(ctx, cfg, ro)
}

// writeDoctorReport prints the findings one per line (errors first) and a
// summary, or the report as JSON.
func writeDoctorReport(w io.Writer, r doctor.Report, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	for _, f := range r.Findings {
		if _, err := fmt.Fprintln(w, f.String()); err != nil {
			return err
		}
	}
	for _, s := range r.Skipped {
		if _, err := fmt.Fprintln(w, "skipped "+s); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%d error(s), %d warning(s)\n", r.Errors(), len(r.Findings)-r.Errors())
	return err
}

// runningClusterName is the CLUSTER_NAME of the controller running in the
// cluster, read from the view it publishes (pkg/controllerview), so doctor
// and the controller (or `joiner run`) agree without a flag; "joiner", the
// controller's default, when there is not exactly one.
func runningClusterName(ctx context.Context, cfg *rest.Config) string {
	const fallback = "joiner"
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fallback
	}
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.HasLabels{controllerview.LabelView}); err != nil {
		return fallback
	}
	names := map[string]bool{}
	for i := range cms.Items {
		if v, ok, err := controllerview.Decode(&cms.Items[i]); ok && err == nil && v.ClusterName != "" {
			names[v.ClusterName] = true
		}
	}
	if len(names) != 1 {
		return fallback
	}
	for n := range names {
		return n
	}
	return fallback
}
