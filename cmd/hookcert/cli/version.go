package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/hookcert/hookcert/scenarios/certify"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print hookcert's version, the commit it was built from and the Go version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			v, commit, modified := certify.BuildInfo()
			line := "hookcert " + v
			if commit != "" {
				line += " (commit " + commit
				if modified {
					line += ", modified"
				}
				line += ")"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s/%s\n", line, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		},
	}
}
