package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrateLockKey is the advisory lock that serialises Migrate across receivers
// starting at once on one database ("hookcert" in ASCII).
const migrateLockKey int64 = 0x686f6f6b63657274

// EventKeyIndex is the unique index on (source, account_id, event_id) that lets the
// database arbitrate concurrent duplicates.
const EventKeyIndex = "processed_webhook_events_key"

// ErrDuplicateKeys is returned by Migrate when the unique event-key index cannot be
// recreated because duplicate keys are present (left by a check-then-insert or
// memory-dedup run).
var ErrDuplicateKeys = errors.New("processed_webhook_events holds duplicate event keys")

// Migrate applies the embedded migrations that are not yet recorded in
// schema_migrations, in one transaction under an advisory lock, then makes sure the
// unique event-key index exists. It is idempotent and safe when several receivers
// start at once on one database. It returns the names of the migrations it applied.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	return migrate(ctx, pool, Schema{})
}

// Schema selects which safety indexes a defective receiver runs without. The zero
// value is the correct schema.
type Schema struct {
	// WithoutEventKeyIndex drops the unique event-key index (check-then-insert,
	// memory-dedup).
	WithoutEventKeyIndex bool
	// WithoutDomainConstraint drops the one-credit-and-one-refund-per-payment
	// index (no-domain-constraint, refund-check-then-act).
	WithoutDomainConstraint bool
}

// MigrateSchema applies the migrations and then makes the safety indexes match
// schema: a clean schema recreates any index a defective run dropped.
func MigrateSchema(ctx context.Context, pool *pgxpool.Pool, schema Schema) ([]string, error) {
	return migrate(ctx, pool, schema)
}

// MigrateWithoutEventKeyIndex applies the migrations like Migrate and then DROPS the
// unique event-key index, under the same lock. Only the check-then-insert defect
// uses it: without the index nothing but a racy SELECT stands between two
// concurrent copies of one event. It succeeds on a database that already holds
// duplicate keys from an earlier defective run (Migrate refuses such a database).
func MigrateWithoutEventKeyIndex(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	return migrate(ctx, pool, Schema{WithoutEventKeyIndex: true})
}

// DomainConstraintIndex is the partial unique index that credits one payment once
// whatever the number of events that claim it.
const DomainConstraintIndex = "ledger_entries_one_per_payment"

func migrate(ctx context.Context, pool *pgxpool.Pool, schema Schema) ([]string, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	sort.Strings(names)
	var applied []string
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Transaction-scoped: released by commit or rollback, never leaked.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey); err != nil {
			return fmt.Errorf("take migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    text        PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		for _, name := range names {
			version := strings.TrimSuffix(strings.TrimPrefix(name, "migrations/"), ".sql")
			var done bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, version).Scan(&done); err != nil {
				return fmt.Errorf("check migration %s: %w", version, err)
			}
			if done {
				continue
			}
			sql, err := migrationFS.ReadFile(name)
			if err != nil {
				return fmt.Errorf("read migration %s: %w", version, err)
			}
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return fmt.Errorf("apply migration %s: %w", version, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, version); err != nil {
				return fmt.Errorf("record migration %s: %w", version, err)
			}
			applied = append(applied, version)
		}
		// Both safety indexes are (re)created on every clean start, not only in 0001,
		// because defects drop them; a clean receiver must never run without them.
		if schema.WithoutDomainConstraint {
			if _, err := tx.Exec(ctx, `DROP INDEX IF EXISTS `+DomainConstraintIndex); err != nil {
				return fmt.Errorf("drop index %s: %w", DomainConstraintIndex, err)
			}
		} else if err := createUnique(ctx, tx, DomainConstraintIndex,
			`ON ledger_entries (source, account_id, object_id, kind) WHERE kind IN ('payment', 'refund')`, "no-domain-constraint"); err != nil {
			return err
		}
		if schema.WithoutEventKeyIndex {
			if _, err := tx.Exec(ctx, `DROP INDEX IF EXISTS `+EventKeyIndex); err != nil {
				return fmt.Errorf("drop index %s: %w", EventKeyIndex, err)
			}
			return nil
		}
		if err := createUnique(ctx, tx, EventKeyIndex, `ON processed_webhook_events (source, account_id, event_id)`, "check-then-insert or memory-dedup"); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return applied, nil
}

// createUnique creates a unique index if it is missing, with a clear message when
// rows left by a defective run violate it. An index already in place is left
// alone without a statement on its table: CREATE INDEX IF NOT EXISTS takes the
// table's SHARE lock before it looks, so a process starting beside a running
// receiver (a restarted worker) would queue behind every writer.
func createUnique(ctx context.Context, tx pgx.Tx, name, def, defect string) error {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&exists); err != nil {
		return fmt.Errorf("look up index %s: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err := tx.Exec(ctx, `CREATE UNIQUE INDEX IF NOT EXISTS `+name+` `+def)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return fmt.Errorf("create unique index %s: %w (left by a %s defect run?); "+
			"use a fresh database or delete the duplicate rows first", name, ErrDuplicateKeys, defect)
	}
	if err != nil {
		return fmt.Errorf("create unique index %s: %w", name, err)
	}
	return nil
}
