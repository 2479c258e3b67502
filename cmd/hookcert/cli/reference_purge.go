package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/reference/store"
)

type referencePurgeFlags struct {
	databaseURL, config, asOf string
	defects                   []string
	batch                     int
	pause                     time.Duration
}

func newReferencePurgeCmd() *cobra.Command {
	var f referencePurgeFlags
	cmd := &cobra.Command{
		Use:   "purge --as-of TIME",
		Short: "Apply the endpoints' key and payload TTLs once, as if the clock read TIME",
		Long: `Purge removes what the reference receiver's retention allows, as if the clock read
--as-of (RFC 3339; default now): keys received before TIME minus the endpoint's key
TTL are deleted, payloads received before TIME minus its payload TTL are removed
while their keys stay. It works in bounded batches, each its own transaction, so a
running receiver keeps ingesting; rows whose work is unfinished are never touched.
Use the same --config and --defect as the receiver. Prints the counts as JSON.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runReferencePurge(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.databaseURL, "database-url", "", "the receiver's PostgreSQL URL (default $HOOKCERT_DATABASE_URL; a password here is visible in ps, prefer the variable)")
	fl.StringVar(&f.config, "config", "", "the receiver's endpoints YAML file (default: the documented test endpoints)")
	fl.StringVar(&f.asOf, "as-of", "", "purge as if the clock read this RFC 3339 time (default now)")
	fl.StringArrayVar(&f.defects, "defect", nil, "the receiver's defects (repeatable), so the purge behaves as that receiver's")
	fl.IntVar(&f.batch, "batch-size", store.DefaultPurgeBatch, "rows per purge transaction")
	fl.DurationVar(&f.pause, "pause", 0, "least rest between batches (0: 25ms; every rest is also at least as long as the batch took)")
	return cmd
}

func runReferencePurge(cmd *cobra.Command, f referencePurgeFlags) error {
	if err := reference.ValidateDefects(f.defects); err != nil {
		return usageErr("--defect: %v", err)
	}
	if f.batch <= 0 {
		return usageErr("--batch-size: must be positive, got %d", f.batch)
	}
	asOf := time.Now()
	if f.asOf != "" {
		t, err := time.Parse(time.RFC3339Nano, f.asOf)
		if err != nil {
			return usageErr("--as-of: must be an RFC 3339 time like 2026-01-02T15:04:05Z, got %q", f.asOf)
		}
		asOf = t
	}
	endpoints := reference.DefaultEndpoints()
	if f.config != "" {
		cfg, err := reference.LoadConfigWithDefects(f.config, f.defects)
		if err != nil {
			return usageErr("--config: %v", err)
		}
		endpoints = cfg.Endpoints
	}
	dbURL := f.databaseURL
	if dbURL == "" {
		dbURL = pgprovision.URLFromEnv()
	}
	if dbURL == "" {
		return usageErr("--database-url: required (or $%s)", pgprovision.EnvDatabaseURL)
	}
	ctx := cmd.Context()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		// pgx's parse errors can quote the URL, password included.
		return usageErr("--database-url: cannot be parsed as a PostgreSQL connection string")
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return &ExitError{Code: ExitUnreachable, Err: scrub.New(scrub.Password(dbURL)).Error(fmt.Errorf("database %s: %w", pgprovision.Redact(dbURL), err))}
	}
	start := time.Now()
	res, err := reference.PurgeDatabase(ctx, pool, endpoints, f.defects, asOf, store.PurgeOptions{BatchSize: f.batch, Pause: f.pause})
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	out, _ := json.Marshal(map[string]any{"as_of": asOf.UTC().Format(time.RFC3339Nano), "keys_deleted": res.KeysDeleted,
		"payloads_purged": res.PayloadsPurged, "batches": res.Batches, "duration_ms": time.Since(start).Milliseconds()})
	fmt.Fprintln(cmd.OutOrStdout(), string(out))
	return nil
}
