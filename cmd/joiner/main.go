// Command joiner is a Kubernetes node autoscaler, API-compatible with
// Karpenter: it turns pending pods into the cheapest nodes that fit them.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "joiner:", err)
		os.Exit(1)
	}
}
