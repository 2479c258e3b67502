package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/simulator/profiles"
)

type initFlags struct {
	databaseURL, receiverURL, profile, out string
	profileFile                            string
	force                                  bool
}

func newInitCmd() *cobra.Command {
	var f initFlags
	cmd := &cobra.Command{
		Use:   "init --database-url URL [--receiver-url URL] [--profile stripe] [--out target.yaml]",
		Short: "Propose a target file from the receiver's database schema",
		Long: `Init reads the schema of the receiver's database — PostgreSQL (postgres://...),
MySQL or MariaDB (mysql://user[:password]@host[:port]/database) — from the system
catalogs only (no table's rows but a few account names are read) and writes a
commented target file (docs/target.md) observing it (observe.postgres or
observe.mysql, queries in the server's dialect): the table holding the event keys
(an events-like table with a unique key over an event ID column), the table the
receiver writes its effects to (one whose column refers to that event ID), the
observer queries over the columns it found, one endpoint for --profile, and the
capabilities those tables justify. What it cannot know is left as TODO comments:
the endpoint's path, account and secret, how to start the receiver, its event
vocabulary. It prints that list.

A provider hookcert has no built-in profile for is declared in a profile file
(--profile-file, a top-level profiles: list, docs/target.md "Declaring a provider"):
--profile names it, and the proposed file carries its declaration, as written there,
in its own profiles: section.

Exit status: 0 a target was proposed; 1 no event table was found (a skeleton is
written); 2 usage error or an existing --out without --force; 3 the database cannot
be reached.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runInit(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.databaseURL, "database-url", "", "the receiver's database, whose schema is read (required; postgres:// or mysql://)")
	fl.StringVar(&f.receiverURL, "receiver-url", "", "the receiver's base URL (default: a TODO placeholder)")
	fl.StringVar(&f.profile, "profile", "stripe", "the provider profile of the proposed endpoint (built in, or declared in --profile-file)")
	fl.StringVar(&f.profileFile, "profile-file", "", "a YAML file whose top-level profiles: list declares --profile; the proposed file keeps its declaration")
	fl.StringVar(&f.out, "out", "target.yaml", `where the target file goes ("-": standard output)`)
	fl.BoolVar(&f.force, "force", false, "overwrite --out if it exists")
	return cmd
}

func runInit(ctx context.Context, out io.Writer, f initFlags) error {
	if f.databaseURL == "" {
		return usageErr("--database-url is required (the receiver's database)")
	}
	d, err := readDeclared(f.profileFile, "")
	if err != nil {
		return err
	}
	if _, err := profiles.LookupIn(f.profile, d.contracts); err != nil {
		return usageErr("--profile: unknown profile %q (valid: %s)", f.profile, strings.Join(d.ids(), ", "))
	}
	var declaration []byte
	if d.isDeclared(f.profile) {
		if declaration, err = profileDeclaration(f.profileFile, f.profile); err != nil {
			return usageErr("--profile-file: %v", err)
		}
	}
	if f.receiverURL != "" {
		if u, err := url.Parse(f.receiverURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageErr("--receiver-url: must be an http:// or https:// URL with a host")
		}
	}
	if f.out != "-" && !f.force {
		if _, err := os.Stat(f.out); err == nil {
			return usageErr("--out %s exists (--force overwrites it)", f.out)
		}
	}
	clean := scrub.New(scrub.Password(f.databaseURL))
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var db initDB
	if isMySQLURL(f.databaseURL) {
		db, err = openInitMySQL(ctx, f.databaseURL)
	} else {
		db, err = openInitPostgres(ctx, f.databaseURL)
	}
	if err != nil {
		var ee *ExitError
		if errors.As(err, &ee) {
			return err
		}
		return &ExitError{Code: ExitUnreachable, Err: clean.Error(err)}
	}
	defer db.close()
	sc, err := db.readSchema(ctx)
	if err != nil {
		return &ExitError{Code: ExitUnreachable, Err: clean.Error(fmt.Errorf("reading the schema: %w", err))}
	}
	p := propose(sc, f, db.name())
	p.declaration = declaration
	p.kind = db.kind()
	p.accounts = db.sampleAccounts(ctx, p)
	if len(p.accounts) > 0 && !strings.ContainsAny(p.accounts[0], " \t\r\n") {
		p.account = p.accounts[0]
	}
	p.dbWhere = db.where()

	// A bug here must not hand the user a file the loader refuses.
	if err := targetfile.Validate(p.render(true), profiles.IDs()); err != nil && p.event != nil {
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("the proposed target does not load (a bug in hookcert init): %w", clean.Error(err))}
	}
	checked := ""
	if p.event != nil {
		q := targetfile.Queries{EventRows: p.eventRows, Effects: p.effects, Base: "target.observe." + p.kind}
		if err := db.check(ctx, q); err != nil {
			return &ExitError{Code: ExitFailed, Err: fmt.Errorf("the proposed queries do not prepare (a bug in hookcert init): %w", clean.Error(err))}
		}
		checked = "event_rows"
		if p.effects != "" {
			checked += " and effects"
		}
	}

	data := p.render(false)
	if f.out == "-" {
		if _, err := out.Write(data); err != nil {
			return err
		}
	} else if err := os.WriteFile(f.out, data, 0o644); err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	p.printSummary(out, f.out, checked)
	if p.event == nil {
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("no event table found: none of the tables has an events-like name and a unique key over an event ID column; fill in observe.%s by hand (docs/target.md)", p.kind)}
	}
	return nil
}

// printSummary says what init found and what is left.
func (p *proposal) printSummary(out io.Writer, path, checked string) {
	if path == "-" {
		out = os.Stderr
		path = "standard output"
	}
	fmt.Fprintf(out, "wrote %s\n", path)
	if ev := p.event; ev != nil {
		fmt.Fprintf(out, "event table:  %s (event ID %s", ev.t.display(), ev.idCol.name)
		if ev.acc != nil {
			fmt.Fprintf(out, ", account %s", ev.acc.name)
		}
		if ev.src != nil {
			fmt.Fprintf(out, ", source %s", ev.src.name)
		}
		fmt.Fprintln(out, ")")
		for _, c := range ev.unmapped {
			fmt.Fprintf(out, "  warning: key column %s is neither a source nor an account: no query binds it\n", c)
		}
		if p.keyless {
			fmt.Fprintf(out, "  warning: no unique key over %s.%s\n", ev.t.display(), ev.idCol.name)
		}
	}
	if ef := p.effect; ef != nil {
		fmt.Fprintf(out, "effect table: %s (%s)\n", ef.t.display(), ef.why)
	}
	if checked != "" {
		fmt.Fprintf(out, "checked: %s prepare against the database\n", checked)
	}
	fmt.Fprintln(out, "left to fill in:")
	left := []string{
		fmt.Sprintf("endpoints[0].path and account: where the receiver takes %s deliveries, and their account", p.f.profile),
		fmt.Sprintf("the signing secret: export %s", p.secretEnv),
	}
	if p.f.receiverURL == "" {
		left = append(left, "base_url: the receiver's URL (or a lifecycle and http://{{.ListenAddr}})")
	} else if err := dialable(p.f.receiverURL); err != nil {
		left = append(left, fmt.Sprintf("base_url: %s does not accept connections now (%v); start the receiver before certify", p.f.receiverURL, err))
	}
	if p.urlHasPassword {
		left = append(left, fmt.Sprintf("observe.%s.url_env: export HOOKCERT_RECEIVER_DATABASE_URL", p.kind))
	}
	if p.event == nil {
		left = append(left, fmt.Sprintf("observe.%s: the event table and the queries (none found)", p.kind))
	} else if p.effect == nil {
		left = append(left, fmt.Sprintf("observe.%s.queries.effects: no table refers to the event ID", p.kind))
	}
	left = append(left,
		"lifecycle (optional): how to start the receiver, for capability crash",
		"events (optional): the receiver's event types, unless it handles the built-in conformance vocabulary",
		"more capabilities (optional): ordering, state-machine, domain-constraint, retention, failpoints with their queries and sections")
	for _, l := range left {
		fmt.Fprintf(out, "  - %s\n", l)
	}
	if path != "standard output" {
		fmt.Fprintf(out, "then: hookcert certify --config %s\n", path)
	}
}

func dialable(base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[bool]string{true: "443", false: "80"}[u.Scheme == "https"])
	}
	c, err := net.DialTimeout("tcp", host, 2*time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}
