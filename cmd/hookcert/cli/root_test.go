package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpWidth is the widest line a command's own help text may have: the
// width of the texts written by hand, which a terminal of 100 columns shows
// unwrapped.
const helpWidth = 90

// Every command's help follows the same conventions: a short line, long text
// wrapped like the others, and flags whose type column pflag can render (it
// takes the first back-quoted word of a usage as the value's name, so a
// back-quoted command would be shown as the type) with one default each.
func TestHelpConventions(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := c.CommandPath()
		if c.Short == "" {
			t.Errorf("%s: no short description", path)
		}
		for i, line := range strings.Split(c.Long, "\n") {
			if n := len([]rune(line)); n > helpWidth {
				t.Errorf("%s: long help line %d is %d columns (at most %d): %q", path, i+1, n, helpWidth, line)
			}
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			name, _ := pflag.UnquoteUsage(f)
			if strings.ContainsAny(name, " -") && strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: the back-quoted %q would show as the value's type", path, f.Name, name)
			}
		})
		for _, line := range strings.Split(c.LocalFlags().FlagUsages(), "\n") {
			if strings.Count(line, "(default") > 1 {
				t.Errorf("%s: a flag says its default twice: %q", path, strings.TrimSpace(line))
			}
		}
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub)
			}
		}
	}
	walk(NewRoot(io.Discard, io.Discard))
}

// demo --help shows --defect's value as NAME, not as a command.
func TestDemoHelpShowsDefectName(t *testing.T) {
	code, out, _ := mainOut("demo", "--help")
	if code != ExitOK || !strings.Contains(out, "--defect NAME ") || strings.Contains(out, "--defect hookcert") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// hookcert --version prints the line hookcert version prints; hookcert
// --help has the exit-status table.
func TestVersionFlagAndRootHelp(t *testing.T) {
	_, flag, _ := mainOut("--version")
	_, cmd, _ := mainOut("version")
	if flag == "" || flag != cmd || !strings.HasPrefix(flag, "hookcert ") {
		t.Errorf("--version printed %q, version printed %q", flag, cmd)
	}
	_, help, _ := mainOut("--help")
	for _, want := range []string{"Exit statuses", "\n  1  a guarantee failed", "\n  5  nothing failed, but something could not be judged", `"verdict"`} {
		if !strings.Contains(help, want) {
			t.Errorf("hookcert --help lacks %q:\n%s", want, help)
		}
	}
}

// An error is printed once, with one "hookcert:" prefix, naming the
// subcommand that refused it; usage errors exit 2.
func TestErrorsPrintedOnce(t *testing.T) {
	for args, want := range map[string]string{
		"certify --bogus":          "hookcert: certify: unknown flag: --bogus (see hookcert certify --help)\n",
		"--bogus":                  "hookcert: unknown flag: --bogus (see hookcert --help)\n",
		"reference serve --bogus":  "hookcert: reference serve: unknown flag: --bogus (see hookcert reference serve --help)\n",
		"guarantees --format=yaml": "hookcert: ",
		"nope":                     "hookcert: unknown command \"nope\" for \"hookcert\"\n",
		"check --from":             "hookcert: check: flag needs an argument: --from (see hookcert check --help)\n",
	} {
		code, _, errOut := mainOut(strings.Fields(args)...)
		if code != ExitUsage || !strings.HasPrefix(errOut, want) || strings.Count(errOut, "hookcert:") != 1 || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", args, code, errOut, want)
		}
	}
}

func mainOut(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}
