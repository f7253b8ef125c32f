package main

import "github.com/spf13/cobra"

// newRootCommand builds the joiner command tree. Each subcommand lives in its
// own file and registers itself here, so the tree is visible in one place.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "joiner",
		Short:         "A Kubernetes node autoscaler, API-compatible with Karpenter",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newControllerCommand())
	root.AddCommand(newRunCommand())
	root.AddCommand(newSimulateCommand())
	root.AddCommand(newExplainCommand())
	root.AddCommand(newDoctorCommand())
	root.AddCommand(newVersionCommand())
	return root
}
