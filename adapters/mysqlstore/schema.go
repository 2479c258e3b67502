package mysqlstore

import (
	"context"
	"fmt"
	"sort"
)

// Table is one base table of the database, as hookcert init reads it.
type Table struct {
	Name    string
	Columns []Column
	// Keys are the primary key and the unique keys (a key over an expression,
	// MySQL 8's functional index, is left out: no column holds it).
	Keys        []Key
	ForeignKeys []ForeignKey
}

// Column is a table's column and its type as the server writes it
// ("varchar(255)", "bigint(20) unsigned").
type Column struct {
	Name, Type string
}

// Key is a primary or unique key, its columns in order.
type Key struct {
	Name    string
	Columns []string
	Primary bool
}

// ForeignKey is a foreign key, its columns in order and those it refers to.
type ForeignKey struct {
	Name       string
	Columns    []string
	RefSchema  string // the referred table's database
	RefTable   string
	RefColumns []string
}

// Schema reads the base tables of db's database from information_schema:
// their columns, primary and unique keys and foreign keys, tables and
// columns in their order, keys by name.
func Schema(ctx context.Context, db *DB) ([]Table, error) {
	schema := db.Database()
	if schema == "" {
		return nil, fmt.Errorf("mysqlstore: schema: the database URL names no database")
	}
	rows, err := db.Query(ctx, `
		SELECT c.TABLE_NAME, c.COLUMN_NAME, c.COLUMN_TYPE
		FROM information_schema.COLUMNS c
		JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME
		WHERE c.TABLE_SCHEMA = $1 AND t.TABLE_TYPE = 'BASE TABLE'
		ORDER BY c.TABLE_NAME, c.ORDINAL_POSITION`, schema)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: schema: columns: %w", err)
	}
	var tables []Table
	byName := map[string]int{}
	for _, r := range rows.Values {
		name := str(r[0])
		i, ok := byName[name]
		if !ok {
			i = len(tables)
			byName[name] = i
			tables = append(tables, Table{Name: name})
		}
		tables[i].Columns = append(tables[i].Columns, Column{Name: str(r[1]), Type: str(r[2])})
	}

	rows, err = db.Query(ctx, `
		SELECT TABLE_NAME, INDEX_NAME, COLUMN_NAME
		FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = $1 AND NON_UNIQUE = 0
		ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`, schema)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: schema: keys: %w", err)
	}
	type keyRef struct{ table, name string }
	keys := map[keyRef]*Key{}
	functional := map[keyRef]bool{}
	var order []keyRef
	for _, r := range rows.Values {
		k := keyRef{str(r[0]), str(r[1])}
		if r[2] == nil {
			functional[k] = true
		}
		if keys[k] == nil {
			keys[k] = &Key{Name: k.name, Primary: k.name == "PRIMARY"}
			order = append(order, k)
		}
		keys[k].Columns = append(keys[k].Columns, str(r[2]))
	}
	for _, k := range order {
		if i, ok := byName[k.table]; ok && !functional[k] {
			tables[i].Keys = append(tables[i].Keys, *keys[k])
		}
	}

	rows, err = db.Query(ctx, `
		SELECT TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME
		FROM information_schema.KEY_COLUMN_USAGE
		WHERE TABLE_SCHEMA = $1 AND REFERENCED_TABLE_NAME IS NOT NULL
		ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION`, schema)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: schema: foreign keys: %w", err)
	}
	fks := map[keyRef]*ForeignKey{}
	order = nil
	for _, r := range rows.Values {
		k := keyRef{str(r[0]), str(r[1])}
		fk := fks[k]
		if fk == nil {
			fk = &ForeignKey{Name: k.name, RefSchema: str(r[3]), RefTable: str(r[4])}
			fks[k] = fk
			order = append(order, k)
		}
		fk.Columns = append(fk.Columns, str(r[2]))
		fk.RefColumns = append(fk.RefColumns, str(r[5]))
	}
	for _, k := range order {
		if i, ok := byName[k.table]; ok {
			tables[i].ForeignKeys = append(tables[i].ForeignKeys, *fks[k])
		}
	}
	sort.SliceStable(tables, func(i, j int) bool { return tables[i].Name < tables[j].Name })
	return tables, nil
}

func str(v any) string {
	if v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}
