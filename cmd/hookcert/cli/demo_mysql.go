package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/adapters/mysqlstore"
	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/reference/mysqlref"
	"github.com/hookcert/hookcert/scenarios/certify"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// demoMySQLServer is the server "demo --store mysql" provisions its database
// on when neither --database-url nor $HOOKCERT_MYSQL_URL names one.
const demoMySQLServer = "mysql://root@127.0.0.1:3306/"

// demoMySQLCapabilities is everything the MySQL reference offers the harness:
// it has no failpoints, purge, inbox or outbox.
var demoMySQLCapabilities = []string{"crash", "lock-gating", "connection-loss"}

// demoMySQLAccounts are its Stripe endpoints' accounts: two, so the account
// scope of the event key is judged (DEDUP-3).
var demoMySQLAccounts = []string{"acct_A", "acct_B"}

// demoMySQLMaxConns is the receiver's pool: ACK-2's 64 concurrent deliveries
// queue for it briefly, and several demos fit MariaDB's 151 connections.
const demoMySQLMaxConns = 12

// runDemoMySQLCmd is "demo --store mysql": its flags checked, then the run.
func runDemoMySQLCmd(cmd *cobra.Command, f suiteFlags, mode string, workerProcs int, defects, caps []string) error {
	switch {
	case mode != reference.ModeSync:
		return usageErr("--mode: the MySQL reference has one design, sync; give no --mode with --store mysql")
	case workerProcs != 0:
		return usageErr("--worker-processes: the MySQL reference has no workers (--store mysql)")
	}
	if err := mysqlref.ValidateDefects(defects); err != nil {
		return usageErr("--defect: %v (see hookcert reference defects --store mysql)", err)
	}
	if !cmd.Flags().Changed("capabilities") {
		caps = demoMySQLCapabilities
	}
	for _, c := range caps {
		if c != "none" && !slices.Contains(demoMySQLCapabilities, c) {
			return usageErr("--capabilities: %q is not one the MySQL reference offers (%s, none)", c, strings.Join(demoMySQLCapabilities, ", "))
		}
	}
	if err := f.validate(); err != nil {
		return err
	}
	server := demoMySQLServerURL(f.databaseURL)
	if _, err := mysqlref.ParseURL(server); err != nil {
		return usageErr("--database-url: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return &ExitError{Code: ExitUnjudged, Err: fmt.Errorf("locating the hookcert binary: %w", err)}
	}
	out := cmd.OutOrStdout()
	if n := removeStaleDemoDirs(os.TempDir()); n > 0 {
		fmt.Fprintf(out, "removed %d stale demo %s left by a killed run\n", n, plural(n, "directory", "directories"))
	}
	return runDemoMySQL(cmd.Context(), out, exe, server, f, defects, caps)
}

// demoMySQLServerURL is the server the demo's database goes on: --database-url,
// else $HOOKCERT_MYSQL_URL (as certify reads it), else the local default.
func demoMySQLServerURL(flag string) string {
	switch {
	case flag != "":
		return flag
	case os.Getenv(certify.MySQLURLEnv) != "":
		return os.Getenv(certify.MySQLURLEnv)
	}
	return demoMySQLServer
}

// runDemoMySQL provisions a fresh database on server (mysqlstore.Provision),
// certifies the MySQL reference on it, and drops it unless --keep-database.
// The target names that database itself: certify provisions nothing more.
func runDemoMySQL(ctx context.Context, out io.Writer, exe, server string, f suiteFlags, defects, caps []string) error {
	secrets := []string{scrub.Password(server)}
	// The directory holds the endpoints file with the run's secrets; see runDemo.
	dir, err := newDemoDir()
	if err != nil {
		return &ExitError{Code: ExitUnjudged, Err: err}
	}
	defer os.RemoveAll(dir)
	dbURL, drop, err := mysqlstore.Provision(ctx, server)
	if err != nil {
		return &ExitError{Code: ExitUnreachable, Err: fmt.Errorf("no database for the MySQL reference on %s: %w",
			mysqlref.Where(server), scrub.New(secrets...).Error(err))}
	}
	defer func() {
		if f.keepDatabase {
			fmt.Fprintf(out, "database kept: %s\n", pgprovision.Redact(dbURL))
			return
		}
		// The run's context may be cancelled by now (SIGINT); the drop still runs.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := drop(dctx); err != nil {
			fmt.Fprintf(out, "dropping the demo database: %v\n", scrub.New(secrets...).Error(err))
		}
	}()
	fmt.Fprintf(out, "database: %s (a fresh database on the MySQL server)\n", pgprovision.Redact(dbURL))
	targetYAML, epSecrets, err := demoMySQLTarget(exe, dir, dbURL, defects, caps)
	if err != nil {
		return &ExitError{Code: ExitUnjudged, Err: err}
	}
	secrets = append(secrets, epSecrets...)
	if len(defects) > 0 {
		fmt.Fprintf(out, "MySQL reference receiver with defect(s): %s\n", strings.Join(defects, ", "))
	}
	opts := f.options(out, func(id string) string {
		c := fmt.Sprintf("hookcert repro %s --demo --store mysql --seed %d", id, f.seed)
		for _, d := range defects {
			c += " --defect " + d
		}
		return c
	})
	opts.DatabaseURL, opts.KeepDatabase = "", false
	opts.ConfigPath = "demo target (MySQL reference)"
	opts.ConfigData = targetYAML
	opts.Secrets = secrets
	err = runCertify(ctx, out, opts)
	var ee *ExitError
	if errors.As(err, &ee) {
		ee.Err = scrub.New(secrets...).Error(ee.Err)
	}
	return err
}

// demoMySQLTarget writes the MySQL reference's endpoints file, with fresh
// secrets, into dir and returns the target file that starts, observes and
// certifies it on the database dbURL, and the secrets it holds. Its event vocabulary is declared:
// the MySQL reference handles charges, versioned subscriptions (deleted as
// tombstones) and acknowledges everything else.
func demoMySQLTarget(exe, dir, dbURL string, defects, caps []string) ([]byte, []string, error) {
	var cfg mysqlref.Config
	var secrets []string
	var teps []map[string]string
	for _, acct := range demoMySQLAccounts {
		sec, err := profiles.GenerateSecret("stripe", rand.Reader)
		if err != nil {
			return nil, nil, fmt.Errorf("secret for stripe: %w", err)
		}
		path := "/webhooks/stripe/" + acct
		cfg.Endpoints = append(cfg.Endpoints, mysqlref.Endpoint{Account: acct, Path: path, Secret: sec})
		teps = append(teps, map[string]string{"profile": "stripe", "account": acct, "path": path, "secret": sec})
		secrets = append(secrets, sec)
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, nil, err
	}
	cfgPath := filepath.Join(dir, "endpoints.yaml")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		return nil, nil, err
	}
	// The database URL goes in the environment, not the command line (ps).
	command := []string{exe, "reference", "serve", "--store", "mysql", "--listen", "{{.ListenAddr}}",
		"--config", cfgPath, "--max-conns", strconv.Itoa(demoMySQLMaxConns)}
	for _, d := range defects {
		command = append(command, "--defect", d)
	}
	name := "hookcert MySQL reference receiver"
	if len(defects) > 0 {
		name += " (defects: " + strings.Join(defects, ", ") + ")"
	}
	const scope = " WHERE source = $1 AND account_id = $2 AND "
	doc := map[string]any{"target": map[string]any{
		"name":      name,
		"base_url":  "http://{{.ListenAddr}}",
		"endpoints": teps,
		"lifecycle": map[string]any{
			"command":    command,
			"env":        map[string]string{pgprovision.EnvDatabaseURL: dbURL},
			"ready":      map[string]any{"http": "/healthz", "timeout": "30s"},
			"stop_grace": "5s",
		},
		"observe": map[string]any{"mysql": map[string]any{
			"url":          dbURL,
			"event_table":  mysqlref.EventTable,
			"effect_table": mysqlref.LedgerTable,
			"queries": map[string]string{
				"event_rows": "SELECT COUNT(*) FROM " + mysqlref.EventTable + scope + "event_id = $3",
			},
		}},
		"events": map[string]any{
			"effect": map[string]any{
				"type":      mysqlref.TypeChargeSucceeded,
				"id_prefix": "ch",
				"object":    `{"id": "{{.ObjectID}}", "object": "charge", "amount": {{.Amount}}, "currency": "{{.Currency}}", "paid": true, "status": "succeeded", "metadata": {}}`,
				"effects":   "SELECT COUNT(*) FROM " + mysqlref.LedgerTable + scope + "event_id = $3",
			},
			// The subscription's version orders its updates (key: field): the
			// MySQL reference keeps the newest, and a deletion's tombstone.
			"ordered": map[string]any{
				"type":      mysqlref.TypeSubscriptionUpdated,
				"id_prefix": "sub",
				"key":       "field",
				"object":    `{"id": "{{.ObjectID}}", "object": "subscription", "status": "active", "version": {{.Key}}, "metadata": {}}`,
				"state":     "SELECT version, status FROM " + mysqlref.ObjectTable + scope + "object_id = $4",
				"delete": map[string]any{
					"type":   mysqlref.TypeSubscriptionDeleted,
					"object": `{"id": "{{.ObjectID}}", "object": "subscription", "status": "canceled", "version": {{.Key}}, "metadata": {}}`,
				},
			},
			"unhandled": map[string]any{
				"type":      "invoice.upcoming",
				"id_prefix": "in",
				"object":    `{"id": "{{.ObjectID}}", "object": "invoice", "amount_due": {{.Amount}}, "currency": "{{.Currency}}"}`,
			},
		},
		"capabilities": slices.DeleteFunc(slices.Clone(caps), func(c string) bool { return c == "none" }),
	}}
	y, err := yaml.Marshal(doc)
	return y, secrets, err
}
