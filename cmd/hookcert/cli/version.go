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
		Long:  "version prints the line hookcert --version prints: the module version, the commit\nthe binary was built from (\"modified\" when the tree had changes), the Go version\nand the platform.",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), versionLine())
		},
	}
}

// versionLine is what hookcert version and hookcert --version print, read
// from the binary's build information.
func versionLine() string {
	v, commit, modified := certify.BuildInfo()
	line := "hookcert " + v
	if commit != "" {
		line += " (commit " + commit
		if modified {
			line += ", modified"
		}
		line += ")"
	}
	return fmt.Sprintf("%s %s %s/%s", line, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
