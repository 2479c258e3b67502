// Package cli is the hookcert command line. Each subcommand lives in its own file,
// so the pieces of the binary can be written and tested apart; subcommands lists
// them all in one place.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes shared by every subcommand; documented in README.md, docs/ci.md
// and hookcert --help (exitStatuses). A CI job must be able to tell a receiver
// that broke a guarantee (1) from a run the harness could not judge (5).
const (
	ExitOK          = 0 // everything that was asked passed
	ExitFailed      = 1 // a guarantee was judged and failed
	ExitUsage       = 2 // bad flags or configuration
	ExitUnreachable = 3 // the target could not be reached or started
	ExitNothing     = 4 // nothing was judged: none selected, or every one not applicable
	ExitUnjudged    = 5 // nothing failed, but something could not be judged
	ExitThreshold   = 6 // a soak lost and duplicated nothing but breached a threshold
)

// exitStatuses is the exit-status table of hookcert --help.
const exitStatuses = `Exit statuses of the commands that judge (certify, demo, check, repro, soak):
  0  every guarantee judged passed, and at least one was judged
  1  a guarantee failed (a soak: a key lost or duplicated), whatever else happened
  2  usage or configuration error: a bad flag, the target file, a query that does
     not prepare, a failing setup hook
  3  the target could not be reached, or its receiver or database not started
  4  nothing was judged: no guarantee selected, or every selected one is not
     applicable to the target
  5  nothing failed, but something could not be judged: a guarantee's verdict is
     error (a read failed, a lock gate held nobody, the receiver did not come
     back), the run was interrupted, or the harness itself failed
  6  a soak lost and duplicated nothing, but breached a threshold (--threshold)
results.json says the same in "verdict" (passed, failed, error, no_verdict) or,
for a run that stopped before judging, in "outcome".`

// ExitError carries an exit code out of a subcommand.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// usageErr marks err as a usage or configuration error (exit 2).
func usageErr(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// subcommands are every subcommand (cobra lists them by name).
func subcommands() []*cobra.Command {
	return []*cobra.Command{
		newDemoCmd(), newCertifyCmd(), newSoakCmd(), newCheckCmd(), newReportCmd(), newReproCmd(),
		newValidateCmd(), newInitCmd(), newFireCmd(), newGuaranteesCmd(), newReferenceCmd(), newVersionCmd(),
	}
}

// NewRoot builds the command tree.
func NewRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "hookcert",
		Short: "Certify webhook receivers against their delivery guarantees",
		Long: `hookcert certifies webhook receivers: a simulated provider delivers events the
way real providers do on a bad day (concurrent duplicates, lost acknowledgements,
late and replayed events, crashes), the receiver's own state is read back, and
each documented guarantee is judged from the record of what happened.

` + exitStatuses,
		Version:       versionLine(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --version prints the same line as hookcert version.
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Read by Main before parsing (setupColor); declared so every subcommand
	// accepts it.
	root.PersistentFlags().Bool(noColorFlag, false, "no colour in the output (also: NO_COLOR set to any value; colour is only ever used on a terminal)")
	// Flag parse errors are usage errors (exit 2), as for any other bad input.
	// Main prefixes "hookcert: ", so the subcommand is named without it.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%s%w (see %s --help)", subcommandPrefix(c), err, c.CommandPath())}
	})
	root.AddCommand(subcommands()...)
	return root
}

// subcommandPrefix is "certify: " for hookcert certify, "" for hookcert itself.
func subcommandPrefix(c *cobra.Command) string {
	if !c.HasParent() {
		return ""
	}
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ") + ": "
}

// Main runs the command line and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	stdout, stderr = setupColor(args, stdout, stderr)
	root := NewRoot(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		fmt.Fprintf(stderr, "hookcert: %v\n", err)
		return ee.Code
	}
	// cobra reports unknown commands and wrong arguments as plain errors,
	// without saying which subcommand refused them.
	prefix := ""
	if cmd != nil {
		prefix = subcommandPrefix(cmd)
	}
	fmt.Fprintf(stderr, "hookcert: %s%v\n", prefix, err)
	return ExitUsage
}
