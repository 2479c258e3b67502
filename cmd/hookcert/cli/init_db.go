package cli

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/adapters/mysqlstore"
	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/sqlstore"
	"github.com/hookcert/hookcert/adapters/targetfile"
)

// Observer sections init writes.
const (
	kindPostgres = "postgres"
	kindMySQL    = "mysql"
)

// initDB is the receiver's database as init reads it, whatever the server.
type initDB interface {
	// kind is the observer section the proposal gets (kindPostgres, kindMySQL).
	kind() string
	name() string
	// where names the server and database for the file's header (never a password).
	where() string
	readSchema(ctx context.Context) (*schema, error)
	// sampleAccounts reads a few of the accounts the event table holds for
	// the profile's source, to propose the endpoint's account (only a hint:
	// nothing on error).
	sampleAccounts(ctx context.Context, p *proposal) []string
	// check prepares the proposed queries on the server as certify will.
	check(ctx context.Context, q targetfile.Queries) error
	close()
}

func isMySQLURL(u string) bool {
	return strings.HasPrefix(u, "mysql://") || strings.HasPrefix(u, "mariadb://")
}

// pgInitDB reads PostgreSQL's catalogs.
type pgInitDB struct {
	conn *pgx.Conn
	cfg  *pgx.ConnConfig
	url  string
}

func openInitPostgres(ctx context.Context, url string) (initDB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, usageErr("--database-url: cannot be parsed as a PostgreSQL connection string (not shown: it may hold a password)")
	}
	cfg.RuntimeParams["application_name"] = "hookcert-init"
	cfg.RuntimeParams["statement_timeout"] = "10000"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database %s:%d/%s: %w", cfg.Host, cfg.Port, cfg.Database, err)
	}
	return &pgInitDB{conn: conn, cfg: cfg, url: url}, nil
}

func (d *pgInitDB) kind() string { return kindPostgres }
func (d *pgInitDB) name() string { return d.cfg.Database }
func (d *pgInitDB) where() string {
	return fmt.Sprintf("%s:%d/%s", d.cfg.Host, d.cfg.Port, d.cfg.Database)
}
func (d *pgInitDB) close() { _ = d.conn.Close(context.Background()) }

func (d *pgInitDB) readSchema(ctx context.Context) (*schema, error) { return readSchema(ctx, d.conn) }

func (d *pgInitDB) sampleAccounts(ctx context.Context, p *proposal) []string {
	ev := p.event
	if ev == nil || ev.acc == nil {
		return nil
	}
	q := fmt.Sprintf("SELECT DISTINCT %s::text FROM %s", ev.acc.quoted, ev.t.ref())
	var args []any
	if ev.src != nil {
		q += fmt.Sprintf(" WHERE %s::text = $1", ev.src.quoted)
		args = append(args, p.f.profile)
	}
	rows, err := d.conn.Query(ctx, q+" ORDER BY 1 LIMIT 6", args...)
	if err != nil {
		return nil
	}
	accts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil
	}
	return accts
}

func (d *pgInitDB) check(ctx context.Context, q targetfile.Queries) error {
	o, err := observe.Open(ctx, d.url, q)
	if err != nil {
		return err
	}
	o.Close()
	return nil
}

// myInitDB reads a MySQL or MariaDB database's information_schema.
type myInitDB struct{ db *mysqlstore.DB }

func openInitMySQL(ctx context.Context, url string) (initDB, error) {
	cfg, err := mysqlstore.ParseURL(url)
	if err != nil {
		return nil, usageErr("--database-url: %v", err) // ParseURL's errors never quote the URL
	}
	if cfg.DBName == "" {
		return nil, usageErr("--database-url: names no database (mysql://user[:password]@host[:port]/DATABASE)")
	}
	db, err := mysqlstore.Open(ctx, url, sqlstore.Timeouts{Statement: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	return &myInitDB{db: db}, nil
}

func (d *myInitDB) kind() string  { return kindMySQL }
func (d *myInitDB) name() string  { return d.db.Database() }
func (d *myInitDB) where() string { return d.db.Where() }
func (d *myInitDB) close()        { d.db.Close() }

func (d *myInitDB) readSchema(ctx context.Context) (*schema, error) {
	tables, err := mysqlstore.Schema(ctx, d.db)
	if err != nil {
		return nil, err
	}
	return schemaFromMySQL(d.db.Database(), tables), nil
}

func (d *myInitDB) sampleAccounts(ctx context.Context, p *proposal) []string {
	ev := p.event
	if ev == nil || ev.acc == nil {
		return nil
	}
	q := fmt.Sprintf("SELECT DISTINCT CAST(%s AS CHAR) FROM %s", ev.acc.quoted, ev.t.ref())
	var args []any
	if ev.src != nil {
		q += fmt.Sprintf(" WHERE CAST(%s AS CHAR) = $1", ev.src.quoted)
		args = append(args, p.f.profile)
	}
	rows, err := d.db.Query(ctx, q+" ORDER BY 1 LIMIT 6", args...)
	if err != nil {
		return nil
	}
	var accts []string
	for _, r := range rows.Values {
		if s, ok := r[0].(string); ok {
			accts = append(accts, s)
		}
	}
	return accts
}

// check prepares the queries through the observer certify opens on
// observe.mysql (parameters, column count and types).
func (d *myInitDB) check(ctx context.Context, q targetfile.Queries) error {
	o, err := observe.NewSQL(ctx, d.db, q)
	if err != nil {
		return err
	}
	o.Close()
	return nil
}

// schemaFromMySQL is a MySQL database's tables as init's proposal reads
// them: every table of the URL's database is found without its database's
// name, and its names are backquoted where MySQL needs it.
func schemaFromMySQL(database string, tables []mysqlstore.Table) *schema {
	sc := &schema{}
	byName := map[string]*table{}
	for i, t := range tables {
		tt := &table{oid: uint32(i + 1), schema: database, name: t.Name, qschema: mysqlIdent(database), qname: mysqlIdent(t.Name),
			visible: true, eventsLikeName: eventsLike(t.Name)}
		for _, c := range t.Columns {
			tt.cols = append(tt.cols, column{name: c.Name, quoted: mysqlIdent(c.Name), typ: c.Type})
		}
		for _, k := range t.Keys {
			tt.uniques = append(tt.uniques, uniqueKey{name: k.Name, cols: k.Columns, primary: k.Primary})
		}
		byName[t.Name] = tt
		sc.tables = append(sc.tables, tt)
	}
	for i, t := range tables {
		for _, fk := range t.ForeignKeys {
			if ref := byName[fk.RefTable]; ref != nil && fk.RefSchema == database {
				sc.tables[i].fks = append(sc.tables[i].fks, foreignKey{cols: fk.Columns, refCols: fk.RefColumns, ref: ref.oid})
			}
		}
	}
	return sc
}

var plainMySQLIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// mysqlIdent is a name as a MySQL query writes it: bare when it can be,
// else backquoted.
func mysqlIdent(s string) string {
	if plainMySQLIdent.MatchString(s) && !mysqlReserved[strings.ToUpper(s)] {
		return s
	}
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// mysqlReserved are the words MySQL 8 or MariaDB reserve: a column named so
// must be backquoted. (Keywords they do not reserve, such as STATUS or
// SOURCE, are names like any other.)
var mysqlReserved = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`ACCESSIBLE ADD ALL ALTER ANALYZE AND AS ASC ASENSITIVE BEFORE BETWEEN BIGINT
		BINARY BLOB BOTH BY CALL CASCADE CASE CHANGE CHAR CHARACTER CHECK COLLATE COLUMN CONDITION
		CONSTRAINT CONTINUE CONVERT CREATE CROSS CUBE CUME_DIST CURRENT_DATE CURRENT_ROLE CURRENT_TIME
		CURRENT_TIMESTAMP CURRENT_USER CURSOR DATABASE DATABASES DAY_HOUR DAY_MICROSECOND DAY_MINUTE
		DAY_SECOND DEC DECIMAL DECLARE DEFAULT DELAYED DELETE DELETE_DOMAIN_ID DENSE_RANK DESC DESCRIBE
		DETERMINISTIC DISTINCT DISTINCTROW DIV DO_DOMAIN_IDS DOUBLE DROP DUAL EACH ELSE ELSEIF EMPTY
		ENCLOSED ESCAPED EXCEPT EXISTS EXIT EXPLAIN FALSE FETCH FIRST_VALUE FLOAT FLOAT4 FLOAT8 FOR FORCE
		FOREIGN FROM FULLTEXT FUNCTION GENERAL GENERATED GET GRANT GROUP GROUPING GROUPS HAVING
		HIGH_PRIORITY HOUR_MICROSECOND HOUR_MINUTE HOUR_SECOND IF IGNORE IGNORE_DOMAIN_IDS
		IGNORE_SERVER_IDS IN INDEX INFILE INNER INOUT INSENSITIVE INSERT INT INT1 INT2 INT3 INT4 INT8
		INTEGER INTERSECT INTERVAL INTO IO_AFTER_GTIDS IO_BEFORE_GTIDS IS ITERATE JOIN JSON_TABLE KEY KEYS
		KILL LAG LAST_VALUE LATERAL LEAD LEADING LEAVE LEFT LIKE LIMIT LINEAR LINES LOAD LOCALTIME
		LOCALTIMESTAMP LOCK LONG LONGBLOB LONGTEXT LOOP LOW_PRIORITY MASTER_BIND MASTER_HEARTBEAT_PERIOD
		MASTER_SSL_VERIFY_SERVER_CERT MATCH MAXVALUE MEDIUMBLOB MEDIUMINT MEDIUMTEXT MIDDLEINT
		MINUTE_MICROSECOND MINUTE_SECOND MOD MODIFIES NATURAL NOT NO_WRITE_TO_BINLOG NTH_VALUE NTILE NULL
		NUMERIC OF OFFSET ON OPTIMIZE OPTIMIZER_COSTS OPTION OPTIONALLY OR ORDER OUT OUTER OUTFILE OVER
		PAGE_CHECKSUM PARSE_VCOL_EXPR PARTITION PERCENT_RANK POSITION PRECISION PRIMARY PROCEDURE PURGE
		RANGE RANK READ READS READ_WRITE REAL RECURSIVE REF_SYSTEM_ID REFERENCES REGEXP RELEASE RENAME
		REPEAT REPLACE REQUIRE RESIGNAL RESTRICT RETURN RETURNING REVOKE RIGHT RLIKE ROW ROWS ROW_NUMBER
		SCHEMA SCHEMAS SECOND_MICROSECOND SELECT SENSITIVE SEPARATOR SET SHOW SIGNAL SLOW SMALLINT SPATIAL
		SPECIFIC SQL SQLEXCEPTION SQLSTATE SQLWARNING SQL_BIG_RESULT SQL_CALC_FOUND_ROWS SQL_SMALL_RESULT
		SSL STARTING STATS_AUTO_RECALC STATS_PERSISTENT STATS_SAMPLE_PAGES STORED STRAIGHT_JOIN SYSTEM
		TABLE TERMINATED THEN TINYBLOB TINYINT TINYTEXT TO TRAILING TRIGGER TRUE UNDO UNION UNIQUE UNLOCK
		UNSIGNED UPDATE USAGE USE USING UTC_DATE UTC_TIME UTC_TIMESTAMP VALUES VARBINARY VARCHAR
		VARCHARACTER VARYING VIRTUAL WHEN WHERE WHILE WINDOW WITH WRITE XOR YEAR_MONTH ZEROFILL`) {
		m[w] = true
	}
	return m
}()
