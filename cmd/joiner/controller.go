package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/joiner-dev/joiner/pkg/operator"
	"github.com/joiner-dev/joiner/pkg/operator/options"
)

// newControllerCommand runs joiner's controllers against a cluster.
func newControllerCommand() *cobra.Command {
	settings := &options.Options{}
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run joiner's controllers against a cluster",
		Long: `Run joiner's controllers (provisioning, NodeClaim lifecycle, termination,
garbage collection, NodePool status) against the cluster of --kubeconfig, or
of $KUBECONFIG, or in-cluster. Every flag also reads an environment variable,
named in brackets in its help.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := settings.Validate(); err != nil {
				return err
			}
			logger, err := operator.NewLoggerToPaths(settings.LogLevel, settings.LogOutputPaths, settings.LogErrorOutputPaths)
			if err != nil {
				return err
			}
			ctrl.SetLogger(logger)
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return operator.Run(ctx, cfg, settings, logger)
		},
	}
	settings.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty means $KUBECONFIG, then in-cluster")
	return cmd
}

// restConfig loads the config of a kubeconfig file, or the default
// loading rules (KUBECONFIG, ~/.kube/config, in-cluster) when path is "".
func restConfig(path string) (*rest.Config, error) {
	if path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("finding a cluster (set --kubeconfig or KUBECONFIG): %w", err)
	}
	return cfg, nil
}
