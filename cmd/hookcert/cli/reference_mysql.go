package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/reference/mysqlref"
)

// Stores the reference receivers keep their state in.
const (
	storePostgres = "postgres"
	storeMySQL    = "mysql"
)

func addStoreFlag(cmd *cobra.Command, store *string, help string) {
	cmd.Flags().StringVar(store, "store", storePostgres, help)
}

func validStore(store string) error {
	if store != storePostgres && store != storeMySQL {
		return usageErr("--store: must be %s or %s, got %q", storePostgres, storeMySQL, store)
	}
	return nil
}

func printMySQLDefects(w io.Writer) {
	for _, d := range mysqlref.Defects() {
		fmt.Fprintf(w, "%-22s %s\n", d.Name, d.Description)
	}
}

// mysqlServeFlags are the flags of "reference serve" that the MySQL reference
// honours; the others configure what it does not have (failpoints, purge,
// inbox and outbox, provisioning).
var mysqlServeFlags = []string{"store", "listen", "database-url", "config", "defect", "log-format", "max-body-bytes", "max-conns", "tolerance"}

// runReferenceServeMySQL serves reference/mysqlref until SIGINT or SIGTERM.
func runReferenceServeMySQL(cmd *cobra.Command, f referenceServeFlags) error {
	var unusable []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if !slices.Contains(mysqlServeFlags, fl.Name) {
			unusable = append(unusable, "--"+fl.Name)
		}
	})
	if len(unusable) > 0 {
		return usageErr("%s: not with --store mysql (the MySQL reference has no failpoints, purge, inbox or outbox; it takes --%s)",
			strings.Join(unusable, ", "), strings.Join(mysqlServeFlags[1:], ", --"))
	}
	if err := mysqlref.ValidateDefects(f.defects); err != nil {
		return usageErr("--defect: %v (see hookcert reference defects --store mysql)", err)
	}
	switch {
	case f.maxBodyBytes <= 0:
		return usageErr("--max-body-bytes: must be positive, got %d", f.maxBodyBytes)
	case f.tolerance < 0:
		return usageErr("--tolerance: must not be negative, got %s", f.tolerance)
	case f.maxConns < 1 || f.maxConns > 1000:
		return usageErr("--max-conns: must be between 1 and 1000, got %d", f.maxConns)
	}
	maxConns := f.maxConns
	if !cmd.Flags().Changed("max-conns") {
		maxConns = mysqlref.DefaultMaxConns
	}
	log, err := serveLogger(cmd.ErrOrStderr(), f.logFormat)
	if err != nil {
		return err
	}
	endpoints := mysqlref.DefaultEndpoints()
	if f.config != "" {
		cfg, err := mysqlref.LoadConfig(f.config)
		if err != nil {
			return usageErr("--config: %v", err)
		}
		endpoints = cfg.Endpoints
	} else {
		printDefaultMySQLEndpoints(cmd.OutOrStdout(), endpoints)
	}
	dbURL := givenDatabaseURL(log, f.databaseURL)
	if dbURL == "" {
		return usageErr("--store mysql: needs its database in --database-url or $HOOKCERT_DATABASE_URL (mysql://user@host:port/database); none is provisioned")
	}
	if _, err := mysqlref.ParseURL(dbURL); err != nil {
		return usageErr("--database-url: %v", err)
	}
	ctx := cmd.Context()
	srv, err := mysqlref.Open(ctx, dbURL, mysqlref.Options{
		Endpoints:    endpoints,
		Defects:      f.defects,
		MaxBodyBytes: f.maxBodyBytes,
		Tolerance:    f.tolerance,
		MaxConns:     maxConns,
		Logger:       log,
	})
	if err != nil {
		// A driver error may quote the password; Main prints this one.
		err = scrub.New(scrub.Password(dbURL)).Error(err)
		if errors.Is(err, mysqlref.ErrUnreachable) {
			return &ExitError{Code: ExitUnreachable, Err: err}
		}
		return &ExitError{Code: ExitFailed, Err: err}
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("--listen: %w", err)}
	}
	if err := srv.Serve(ctx, ln); err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	return nil
}

// printDefaultMySQLEndpoints prints the default endpoints WITH their secrets:
// public test values, which a user needs to sign requests.
func printDefaultMySQLEndpoints(w io.Writer, eps []mysqlref.Endpoint) {
	fmt.Fprintln(w, "No --config: serving the default endpoints. Their secrets are PUBLIC TEST SECRETS (TEST ONLY, never for real traffic):")
	for _, e := range eps {
		fmt.Fprintf(w, "  %-28s profile=stripe account=%-7s secret=%s\n", e.Path, e.Account, e.Secret)
	}
}
