package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// newCmdVersion prints the build's version.
func newCmdVersion(f *factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of nodegc",
		Long:  "Print the version of nodegc, and the Go toolchain and platform it was built with.",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(f.Out, "nodegc %s (%s %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
