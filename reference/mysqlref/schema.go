package mysqlref

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Table and index names, as the target file's queries use them.
const (
	EventTable  = "webhook_events"
	LedgerTable = "ledger_entries"
	ObjectTable = "subscriptions"
	// EventKeyIndex is the UNIQUE key that arbitrates concurrent copies.
	EventKeyIndex = "webhook_events_key"
	// eventLookupIndex serves the check-then-insert defect's SELECT once the
	// unique key is gone.
	eventLookupIndex = "webhook_events_lookup"
)

// ErrDuplicateKeys is returned at start when the event table holds one key
// twice (a check-then-insert run's damage): the unique key cannot be created.
var ErrDuplicateKeys = errors.New("the event table holds duplicate event keys, so its unique key cannot be created (a check-then-insert run left them; use a fresh database)")

// Identifiers are VARBINARY: compared byte for byte, so event IDs differing
// only in letter case or trailing spaces stay distinct events, on MySQL 8 and
// MariaDB alike (their default collations fold both).
var schema = []string{
	`CREATE TABLE IF NOT EXISTS webhook_events (
		id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
		source      VARBINARY(64)  NOT NULL,
		account_id  VARBINARY(255) NOT NULL,
		event_id    VARBINARY(255) NOT NULL,
		event_type  VARCHAR(255)   NOT NULL,
		received_at DATETIME(6)    NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
		UNIQUE KEY webhook_events_key (source, account_id, event_id)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
	// One row per applied charge: a second application of one event shows as a
	// second row, so nothing here may be unique on the event.
	`CREATE TABLE IF NOT EXISTS ledger_entries (
		id         BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
		source     VARBINARY(64)  NOT NULL,
		account_id VARBINARY(255) NOT NULL,
		event_id   VARBINARY(255) NOT NULL,
		object_id  VARBINARY(255) NOT NULL,
		amount     BIGINT         NOT NULL,
		currency   VARCHAR(16)    NOT NULL,
		created_at DATETIME(6)    NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
		KEY ledger_entries_event (source, account_id, event_id),
		KEY ledger_entries_object (source, account_id, object_id)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
	// A deleted subscription stays as a tombstone (status 'deleted') at its
	// deletion's version, so an older update arriving later changes nothing.
	`CREATE TABLE IF NOT EXISTS subscriptions (
		source     VARBINARY(64)  NOT NULL,
		account_id VARBINARY(255) NOT NULL,
		object_id  VARBINARY(255) NOT NULL,
		version    BIGINT         NOT NULL,
		status     VARCHAR(64)    NOT NULL,
		updated_at DATETIME(6)    NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
		PRIMARY KEY (source, account_id, object_id)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
}

// Migrate creates the tables (idempotent) and makes sure the unique event key
// exists; withoutUniqueKey (check-then-insert) drops it instead. MySQL commits
// DDL implicitly, so this is a sequence of idempotent steps, not a transaction.
func Migrate(ctx context.Context, db *sql.DB, withoutUniqueKey bool) error {
	for _, stmt := range schema {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("schema: %w", err)
		}
	}
	unique, err := hasIndex(ctx, db, EventTable, EventKeyIndex)
	if err != nil {
		return err
	}
	lookup, err := hasIndex(ctx, db, EventTable, eventLookupIndex)
	if err != nil {
		return err
	}
	var steps []string
	switch {
	case withoutUniqueKey:
		if unique {
			steps = append(steps, "ALTER TABLE webhook_events DROP INDEX webhook_events_key")
		}
		if !lookup {
			steps = append(steps, "ALTER TABLE webhook_events ADD KEY webhook_events_lookup (source, account_id, event_id)")
		}
	case !unique:
		// A database a check-then-insert run used: the clean receiver restores
		// the key, and refuses to start on duplicates it cannot arbitrate.
		steps = append(steps, "ALTER TABLE webhook_events ADD UNIQUE KEY webhook_events_key (source, account_id, event_id)")
	}
	for _, stmt := range steps {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			if isMySQLError(err, erDupEntry) {
				return ErrDuplicateKeys
			}
			return fmt.Errorf("schema: %w", err)
		}
	}
	return nil
}

func hasIndex(ctx context.Context, db *sql.DB, table, index string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME = ?`, table, index).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("schema: reading the indexes of %s: %w", table, err)
	}
	return n > 0, nil
}
