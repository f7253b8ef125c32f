// Command joiner is a Kubernetes node autoscaler, API-compatible with
// Karpenter: it turns pending pods into the cheapest nodes that fit them.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

func main() {
	root := newRootCommand()
	// The same binary installed as kubectl-joiner is the kubectl plugin:
	// `kubectl joiner explain pod web-1` runs `kubectl-joiner explain pod web-1`.
	if strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe") == "kubectl-joiner" {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl joiner"}
	}
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "joiner:", err)
		os.Exit(1)
	}
}
