package targetfile

import (
	"fmt"
	"os"
	"time"
)

type rawSetup struct {
	SQLFile string   `yaml:"sql_file"`
	Command []string `yaml:"command"`
	Timeout string   `yaml:"timeout"`
}

// DefaultSetupTimeout bounds a setup hook when setup.timeout is absent: a
// schema's migrations take seconds.
const DefaultSetupTimeout = 2 * time.Minute

// MaxSetupTimeout is the longest setup.timeout a file may set.
const MaxSetupTimeout = time.Hour

// MaxSetupSQLBytes caps a setup's sql_file: a schema, not a data dump.
const MaxSetupSQLBytes = 16 << 20

// Setup prepares the receiver's database before the harness starts it, for a
// receiver that does not create its own schema. Exactly one of SQLFile and
// Command is set.
type Setup struct {
	// SQLFile is the path of an SQL script run on the receiver's database
	// (observe.postgres.url), resolved against the file's directory.
	SQLFile string
	// Command is a program and its arguments, run directly (no shell) in the
	// file's directory with lifecycle.env; exit status 0 is success.
	Command []string
	// Timeout bounds the hook.
	Timeout time.Duration
}

// Kind is "sql_file" or "command".
func (s Setup) Kind() string {
	if s.SQLFile != "" {
		return "sql_file"
	}
	return "command"
}

func (v *validator) setup(t *Target, rs *rawSetup) {
	if rs == nil {
		return
	}
	base := []any{"target", "setup"}
	s := &Setup{}
	switch {
	case rs.SQLFile != "" && len(rs.Command) > 0:
		v.fail(base, "set exactly one of sql_file and command (got both)")
	case rs.SQLFile == "" && len(rs.Command) == 0:
		v.fail(base, "set exactly one of sql_file (an SQL script run on the receiver's database) and command (a program that creates the schema)")
	}
	if rs.SQLFile != "" {
		p := v.resolvePath(rs.SQLFile)
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			v.fail(at(base, "sql_file"), "cannot read %s: %v", p, unwrapPathError(err))
		case !fi.Mode().IsRegular():
			v.fail(at(base, "sql_file"), "%s is not a regular file", p)
		case fi.Size() > MaxSetupSQLBytes:
			v.fail(at(base, "sql_file"), "%s is %d bytes, more than %d (16 MiB): a schema, not a data dump", p, fi.Size(), MaxSetupSQLBytes)
		default:
			s.SQLFile = p
		}
	}
	for i, a := range rs.Command {
		if i == 0 && a == "" {
			v.fail(at(base, "command", 0), "the program must not be empty")
		}
		r, _ := v.render(at(base, "command", i), a)
		if i == 0 {
			r = ResolveProgram(v.opts.baseDir, r)
		}
		s.Command = append(s.Command, r)
	}
	s.Timeout = v.duration(at(base, "timeout"), rs.Timeout, DefaultSetupTimeout, false)
	if s.Timeout > MaxSetupTimeout {
		v.fail(at(base, "timeout"), "must be at most %s (got %s)", MaxSetupTimeout, rs.Timeout)
	}
	t.Setup = s
}

// unwrapPathError drops the path an *os.PathError repeats.
func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// String describes the hook for the console (no secrets: the script's path or
// the program's name).
func (s Setup) String() string {
	if s.SQLFile != "" {
		return "sql_file " + s.SQLFile
	}
	if len(s.Command) == 0 {
		return "command"
	}
	return fmt.Sprintf("command %s", s.Command[0])
}
