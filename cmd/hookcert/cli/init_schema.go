package cli

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// schema is what init reads of the database: its tables, their columns,
// unique keys and foreign keys.
type schema struct{ tables []*table }

type table struct {
	oid            uint32
	schema, name   string
	qschema, qname string // quote_ident'ed
	visible        bool   // found through the search path without its schema
	cols           []column
	uniques        []uniqueKey
	fks            []foreignKey
	eventsLikeName bool
	// unwritten: the table has no rows and its statistics show none ever
	// inserted or updated (PostgreSQL only; false when unknown).
	unwritten bool
}

type column struct{ name, quoted, typ string }

type uniqueKey struct {
	name    string
	cols    []string
	primary bool
	partial bool
}

type foreignKey struct {
	cols, refCols []string
	ref           uint32
}

func readSchema(ctx context.Context, conn *pgx.Conn) (*schema, error) {
	rows, err := conn.Query(ctx, `
		SELECT c.oid, n.nspname, c.relname, quote_ident(n.nspname), quote_ident(c.relname), pg_table_is_visible(c.oid),
		       a.attname, quote_ident(a.attname), format_type(a.atttypid, a.atttypmod)
		FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
		  AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\_%'
		ORDER BY n.nspname, c.relname, a.attnum`)
	if err != nil {
		return nil, err
	}
	sc := &schema{}
	byOID := map[uint32]*table{}
	for rows.Next() {
		var t table
		var col column
		if err := rows.Scan(&t.oid, &t.schema, &t.name, &t.qschema, &t.qname, &t.visible, &col.name, &col.quoted, &col.typ); err != nil {
			rows.Close()
			return nil, err
		}
		tt := byOID[t.oid]
		if tt == nil {
			tt = &t
			byOID[t.oid] = tt
			sc.tables = append(sc.tables, tt)
		}
		tt.cols = append(tt.cols, col)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = conn.Query(ctx, `
		SELECT i.indrelid, ic.relname, i.indisprimary, i.indpred IS NOT NULL,
		       ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
		             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.ord)
		FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
		WHERE i.indisunique AND i.indisvalid AND i.indexprs IS NULL
		ORDER BY ic.relname`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var oid uint32
		var k uniqueKey
		if err := rows.Scan(&oid, &k.name, &k.primary, &k.partial, &k.cols); err != nil {
			rows.Close()
			return nil, err
		}
		if t := byOID[oid]; t != nil {
			t.uniques = append(t.uniques, k)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = conn.Query(ctx, `
		SELECT con.conrelid, con.confrelid,
		       ARRAY(SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
		             JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum ORDER BY k.ord),
		       ARRAY(SELECT a.attname::text FROM unnest(con.confkey) WITH ORDINALITY AS k(attnum, ord)
		             JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum ORDER BY k.ord)
		FROM pg_constraint con WHERE con.contype = 'f'
		ORDER BY con.conname`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var oid uint32
		var fk foreignKey
		if err := rows.Scan(&oid, &fk.ref, &fk.cols, &fk.refCols); err != nil {
			rows.Close()
			return nil, err
		}
		if t := byOID[oid]; t != nil {
			t.fks = append(t.fks, fk)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, t := range sc.tables {
		t.eventsLikeName = eventsLike(t.name)
	}
	if err := readWrites(ctx, conn, sc); err != nil {
		return nil, err
	}
	return sc, nil
}

// readWrites marks the tables nothing has written: no row now, and no row
// inserted or updated since the statistics were reset. A table the receiver
// creates but never writes looks so once it has handled events here; on a
// database that never saw an event every table does, and none is marked.
func readWrites(ctx context.Context, conn *pgx.Conn, sc *schema) error {
	if len(sc.tables) == 0 || len(sc.tables) > 500 {
		return nil // a schema that large is read for its shape only
	}
	var unwritten []*table
	for _, t := range sc.tables {
		var rows bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+t.ref()+")").Scan(&rows); err != nil {
			return nil // no privilege to read it: say nothing of it
		}
		var writes int64
		err := conn.QueryRow(ctx, `SELECT coalesce(n_tup_ins + n_tup_upd, 0) FROM pg_stat_user_tables WHERE relid = $1`, t.oid).Scan(&writes)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if !rows && writes == 0 {
			unwritten = append(unwritten, t)
		}
	}
	if len(unwritten) == len(sc.tables) {
		return nil
	}
	for _, t := range unwritten {
		t.unwritten = true
	}
	return nil
}

func (t *table) col(name string) (column, bool) {
	for _, c := range t.cols {
		if c.name == name {
			return c, true
		}
	}
	return column{}, false
}

// first returns the first of names the table has.
func (t *table) first(names []string) (column, bool) {
	for _, n := range names {
		if c, ok := t.col(n); ok {
			return c, true
		}
	}
	return column{}, false
}

// ref is how a query names the table: unqualified when the search path finds it.
func (t *table) ref() string {
	if t.visible {
		return t.qname
	}
	return t.qschema + "." + t.qname
}

// field is the table as event_table and effect_table take it ("" when its
// name has characters those fields refuse).
func (t *table) field() string {
	if !tableFieldRE.MatchString(t.name) || (!t.visible && !tableFieldRE.MatchString(t.schema)) {
		return ""
	}
	if t.visible {
		return t.name
	}
	return t.schema + "." + t.name
}

func (t *table) display() string {
	if t.visible {
		return t.name
	}
	return t.schema + "." + t.name
}
