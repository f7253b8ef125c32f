package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is stamped by the image build (hack/image) with -ldflags
// "-X main.version=..."; a plain `go build` leaves it "dev".
var version = "dev"

// newVersionCommand prints the version, so an image or a support request
// can say which joiner it runs.
func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print joiner's version, Go version and platform",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			goVersion := runtime.Version()
			if info, ok := debug.ReadBuildInfo(); ok {
				goVersion = info.GoVersion
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "joiner %s %s %s/%s\n", version, goVersion, runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
