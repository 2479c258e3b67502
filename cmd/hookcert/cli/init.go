package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/simulator/profiles"
)

func init() { register(newInitCmd) }

type initFlags struct {
	databaseURL, receiverURL, profile, out string
	force                                  bool
}

func newInitCmd() *cobra.Command {
	var f initFlags
	cmd := &cobra.Command{
		Use:   "init --database-url URL [--receiver-url URL] [--profile stripe] [--out target.yaml]",
		Short: "Propose a target file from the receiver's database schema",
		Long: `Init reads the schema of the receiver's database (the system catalogs only: no
table's rows but a few account names are read) and writes a commented target file
(docs/target.md): the table holding the event keys (an events-like table with a
unique key over an event ID column), the table the receiver writes its effects to
(one whose column refers to that event ID), the observer queries over the columns
it found, one endpoint for --profile, and the capabilities those tables justify.
What it cannot know is left as TODO comments: the endpoint's path, account and
secret, how to start the receiver, its event vocabulary. It prints that list.

Exit status: 0 a target was proposed; 1 no event table was found (a skeleton is
written); 2 usage error or an existing --out without --force; 3 the database cannot
be reached.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runInit(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.databaseURL, "database-url", "", "the receiver's database, whose schema is read (required)")
	fl.StringVar(&f.receiverURL, "receiver-url", "", "the receiver's base URL (default: a TODO placeholder)")
	fl.StringVar(&f.profile, "profile", "stripe", "the provider profile of the proposed endpoint")
	fl.StringVar(&f.out, "out", "target.yaml", `where the target file goes ("-": standard output)`)
	fl.BoolVar(&f.force, "force", false, "overwrite --out if it exists")
	return cmd
}

func runInit(ctx context.Context, out io.Writer, f initFlags) error {
	if f.databaseURL == "" {
		return usageErr("--database-url is required (the receiver's database)")
	}
	if _, err := profiles.Lookup(f.profile); err != nil {
		return usageErr("--profile: unknown profile %q (valid: %s)", f.profile, strings.Join(profiles.IDs(), ", "))
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
	cfg, err := pgx.ParseConfig(f.databaseURL)
	if err != nil {
		return usageErr("--database-url: cannot be parsed as a PostgreSQL connection string (not shown: it may hold a password)")
	}
	cfg.RuntimeParams["application_name"] = "hookcert-init"
	cfg.RuntimeParams["statement_timeout"] = "10000"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return &ExitError{Code: ExitUnreachable, Err: clean.Error(fmt.Errorf("database %s:%d/%s: %w", cfg.Host, cfg.Port, cfg.Database, err))}
	}
	defer conn.Close(context.WithoutCancel(ctx))
	sc, err := readSchema(ctx, conn)
	if err != nil {
		return &ExitError{Code: ExitUnreachable, Err: clean.Error(fmt.Errorf("reading the schema: %w", err))}
	}
	p := propose(sc, f, cfg.Database)
	p.sampleAccounts(ctx, conn)
	p.dbWhere = fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)

	// A bug here must not hand the user a file the loader refuses.
	if err := targetfile.Validate(p.render(true), profiles.IDs()); err != nil && p.event != nil {
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("the proposed target does not load (a bug in hookcert init): %w", clean.Error(err))}
	}
	checked := ""
	if p.event != nil {
		q := targetfile.Queries{EventRows: p.eventRows, Effects: p.effects}
		o, err := observe.Open(ctx, f.databaseURL, q)
		if err != nil {
			return &ExitError{Code: ExitFailed, Err: fmt.Errorf("the proposed queries do not prepare (a bug in hookcert init): %w", clean.Error(err))}
		}
		o.Close()
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
		return &ExitError{Code: ExitFailed, Err: errors.New("no event table found: none of the tables has an events-like name and a unique key over an event ID column; fill in observe.postgres by hand (docs/target.md)")}
	}
	return nil
}

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
	return sc, nil
}

// Column and table names init recognises, best first.
var (
	// eventIDColumns hold a provider's event or delivery ID; "id" counts only
	// in an events-like table.
	eventIDColumns = []string{"event_id", "webhook_event_id", "webhook_id", "delivery_id", "message_id", "msg_id", "id"}
	// accountColumns scope an event to an account ($2).
	accountColumns = []string{"account_id", "account", "acct_id", "tenant_id", "tenant", "shop_domain", "shop", "installation_id",
		"merchant_id", "merchant_account", "workspace_id", "team_id", "organization_id", "org_id"}
	// sourceColumns name the provider ($1).
	sourceColumns = []string{"source", "provider", "source_name", "provider_name"}
	// objectColumns hold a business object's ID ($4).
	objectColumns = []string{"object_id", "payment_id", "payment_intent_id", "charge_id", "order_id", "subscription_id", "invoice_id", "customer_id"}
	// payloadColumns hold the stored request body.
	payloadColumns = []string{"payload", "body", "raw_body", "data"}
	eventsLikeRE   = regexp.MustCompile(`event|webhook|hook|deliver|inbox|idempot|processed`)
	effectsLikeRE  = regexp.MustCompile(`ledger|entr|effect|transaction|credit|balance|booking|posting|movement`)
	notEffectsRE   = regexp.MustCompile(`archive|audit|log|payload|attempt|dead|outbox`)
	// tableFieldRE is what event_table and effect_table accept, per part.
	tableFieldRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)
)

func eventsLike(name string) bool { return eventsLikeRE.MatchString(strings.ToLower(name)) }

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

// eventPick is the proposed event table and why.
type eventPick struct {
	t        *table
	idCol    column
	key      *uniqueKey // nil: no unique key over the ID column (a warning)
	src, acc *column
	score    int
}

// effectPick is the proposed effect table and why.
type effectPick struct {
	t        *table
	idCol    column
	why      string
	src, acc *column
	obj      *column
	score    int
}

type proposal struct {
	f                        initFlags
	dbName, dbWhere          string
	event                    *eventPick
	others                   []string // other event-table candidates
	effect                   *effectPick
	otherEffects             []string
	eventRows, effects       string
	objectEffects, payloadQ  string
	accounts                 []string
	urlHasPassword, keyless  bool
	account, path, secretEnv string
}

// propose picks the event and effect tables and writes the queries over the
// columns they have.
func propose(sc *schema, f initFlags, dbName string) *proposal {
	p := &proposal{f: f, dbName: dbName}
	p.urlHasPassword = scrub.Password(f.databaseURL) != ""
	p.secretEnv = strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(f.profile)) + "_WEBHOOK_SECRET"
	p.account, p.path = "acct_TODO", "/webhooks/"+f.profile

	var picks []*eventPick
	for _, t := range sc.tables {
		if ep := eventCandidate(t); ep != nil {
			picks = append(picks, ep)
		}
	}
	sort.SliceStable(picks, func(i, j int) bool { return picks[i].score > picks[j].score })
	if len(picks) > 0 {
		p.event = picks[0]
		p.keyless = p.event.key == nil
		for _, o := range picks[1:] {
			p.others = append(p.others, o.t.display()+"."+o.idCol.name)
		}
	}
	if p.event == nil {
		return p
	}
	p.eventRows = countQuery(p.event.t, p.event.src, p.event.acc, p.event.idCol, "$3")
	if pc, ok := p.event.t.first(payloadColumns); ok {
		p.payloadQ = fmt.Sprintf("SELECT %s IS NOT NULL FROM %s WHERE %s", pc.quoted, p.event.t.ref(), where(p.event.src, p.event.acc, &p.event.idCol, "$3"))
	}

	var effs []*effectPick
	for _, t := range sc.tables {
		if t == p.event.t {
			continue
		}
		if e := effectCandidate(t, p.event); e != nil {
			effs = append(effs, e)
		}
	}
	sort.SliceStable(effs, func(i, j int) bool { return effs[i].score > effs[j].score })
	if len(effs) > 0 {
		p.effect = effs[0]
		for _, o := range effs[1:] {
			p.otherEffects = append(p.otherEffects, o.t.display()+"."+o.idCol.name)
		}
		e := p.effect
		p.effects = countQuery(e.t, e.src, e.acc, e.idCol, "$3")
		if e.obj != nil {
			p.objectEffects = countQuery(e.t, e.src, e.acc, *e.obj, "$4")
		}
	}
	return p
}

// eventCandidate is t as the event table: an events-like name and a unique
// key over an event ID column (else, as a last resort, such a column without
// one, which the proposal warns about).
func eventCandidate(t *table) *eventPick {
	if !t.eventsLikeName {
		return nil
	}
	var best *eventPick
	for rank, name := range eventIDColumns {
		c, ok := t.col(name)
		if !ok {
			continue
		}
		ep := &eventPick{t: t, idCol: c, score: 100 - 10*rank}
		if s, ok := t.first(sourceColumns); ok {
			ep.src = &s
		}
		if a, ok := t.first(accountColumns); ok {
			ep.acc = &a
		}
		for i := range t.uniques {
			k := &t.uniques[i]
			if k.partial || !slices.Contains(k.cols, name) {
				continue
			}
			// A key scoped by the event key's other parts is the receiver's
			// event key; a bare ID key still dedupes, less precisely.
			score := 0
			for _, other := range []*column{ep.src, ep.acc} {
				if other != nil && slices.Contains(k.cols, other.name) {
					score += 5
				}
			}
			if ep.key == nil || score > 0 {
				ep.key = k
			}
		}
		if ep.key == nil {
			if name == "id" {
				continue // an unkeyed "id" is no event ID
			}
			ep.score -= 200
		}
		if strings.Contains(strings.ToLower(t.name), "event") {
			ep.score += 5
		}
		if ep.src != nil {
			ep.score += 2
		}
		if ep.acc != nil {
			ep.score += 2
		}
		if best == nil || ep.score > best.score {
			best = ep
		}
	}
	return best
}

// effectCandidate is t as the effect table: a column referring to the event's
// ID, by foreign key or by name.
func effectCandidate(t *table, ev *eventPick) *effectPick {
	var best *effectPick
	consider := func(c column, score int, why string) {
		e := &effectPick{t: t, idCol: c, why: why, score: score}
		if s, ok := t.first(sourceColumns); ok && ev.src != nil {
			e.src = &s
			e.score += 5
		}
		if a, ok := t.first(accountColumns); ok && ev.acc != nil {
			e.acc = &a
			e.score += 5
		}
		if o, ok := t.first(objectColumns); ok {
			e.obj = &o
		}
		name := strings.ToLower(t.name)
		if effectsLikeRE.MatchString(name) {
			e.score += 20
		}
		if notEffectsRE.MatchString(name) {
			e.score -= 40
		}
		if t.eventsLikeName {
			e.score -= 30
		}
		if best == nil || e.score > best.score {
			best = e
		}
	}
	for _, fk := range t.fks {
		if fk.ref != ev.t.oid {
			continue
		}
		if i := slices.Index(fk.refCols, ev.idCol.name); i >= 0 {
			if c, ok := t.col(fk.cols[i]); ok {
				consider(c, 100, fmt.Sprintf("a foreign key %s(%s) references %s(%s)", t.display(), strings.Join(fk.cols, ", "), ev.t.display(), strings.Join(fk.refCols, ", ")))
			}
		}
	}
	names := []string{ev.idCol.name}
	if ev.idCol.name == "id" {
		// The event ID is the row's own id: effects refer to it by the table's
		// singular name (webhook_events → webhook_event_id) or as event_id.
		names = []string{strings.ToLower(strings.TrimSuffix(ev.t.name, "s")) + "_id", "event_id"}
	}
	for _, n := range names {
		if c, ok := t.col(n); ok {
			consider(c, 50, fmt.Sprintf("its column %s has the event ID's name", c.name))
		}
	}
	for _, c := range t.cols {
		if strings.HasSuffix(c.name, "_"+ev.idCol.name) && ev.idCol.name != "id" {
			consider(c, 10, fmt.Sprintf("its column %s is named after the event ID", c.name))
		}
	}
	return best
}

// countQuery counts t's rows matching the key parts it has.
func countQuery(t *table, src, acc *column, id column, param string) string {
	return fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", t.ref(), where(src, acc, &id, param))
}

func where(src, acc, id *column, param string) string {
	var conds []string
	if src != nil {
		conds = append(conds, src.quoted+" = $1")
	}
	if acc != nil {
		conds = append(conds, acc.quoted+" = $2")
	}
	conds = append(conds, id.quoted+" = "+param)
	return strings.Join(conds, " AND ")
}

// sampleAccounts reads a few of the accounts the event table holds for the
// profile's source, to propose the endpoint's account.
func (p *proposal) sampleAccounts(ctx context.Context, conn *pgx.Conn) {
	ev := p.event
	if ev == nil || ev.acc == nil {
		return
	}
	q := fmt.Sprintf("SELECT DISTINCT %s::text FROM %s", ev.acc.quoted, ev.t.ref())
	var args []any
	if ev.src != nil {
		q += fmt.Sprintf(" WHERE %s::text = $1", ev.src.quoted)
		args = append(args, p.f.profile)
	}
	rows, err := conn.Query(ctx, q+" ORDER BY 1 LIMIT 6", args...)
	if err != nil {
		return // only a hint
	}
	accts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	p.accounts = accts
	if len(accts) > 0 && !strings.ContainsAny(accts[0], " \t\r\n") {
		p.account = accts[0]
	}
}

// render writes the proposed target file. selfCheck puts an inline stand-in
// secret where the file names an environment variable, so that the loader can
// check everything else without it.
func (p *proposal) render(selfCheck bool) []byte {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	q := yamlScalar
	w("# hookcert target file proposed by `hookcert init` from the schema of the database")
	w("# %s (%s). Every field: docs/target.md. Lines marked TODO are left to you.", p.dbWhere, time.Now().UTC().Format("2006-01-02"))
	w("target:")
	w("  name: %s  # TODO: the receiver's name in reports", q(p.dbName))
	if p.f.receiverURL != "" {
		w("  base_url: %s", q(strings.TrimSuffix(p.f.receiverURL, "/")))
	} else {
		w("  # TODO: the receiver's root URL; endpoint paths are appended to it. With a lifecycle,")
		w("  # http://{{.ListenAddr}} and the harness picks the port.")
		w("  base_url: http://127.0.0.1:8080")
	}
	w("  endpoints:")
	w("    # One per event-key scope (source, account). TODO: the path the receiver serves")
	w("    # %s deliveries on, the account it files them under, and its signing secret", p.f.profile)
	w("    # (export %s; never commit a secret).", p.secretEnv)
	switch {
	case len(p.accounts) > 0:
		w("    # Accounts in %s.%s today: %s.", p.event.t.display(), p.event.acc.name, strings.Join(p.accounts, ", "))
	case p.event != nil && p.event.src != nil:
		w("    # The harness sends source %q ($1); set source: if the receiver records another.", p.f.profile)
	}
	w("    - profile: %s", q(p.f.profile))
	w("      account: %s", q(p.account))
	w("      path: %s", q(p.path))
	if selfCheck {
		w("      secret: stand-in")
	} else {
		w("      secret_env: %s", p.secretEnv)
	}
	w("  # TODO (optional): how the harness starts the receiver, so that it can crash and restart")
	w("  # it (capability crash). Without a lifecycle the receiver must already run at base_url.")
	w("  # lifecycle:")
	w("  #   command: [./bin/receiver, --listen, \"{{.ListenAddr}}\"]")
	w("  #   env: {DATABASE_URL: \"{{.DatabaseURL}}\"}   # a database of its own per run")
	w("  #   ready: {http: /healthz, timeout: 30s}")
	w("  observe:")
	w("    postgres:")
	switch {
	case selfCheck:
		w("      url: postgres://hookcert@127.0.0.1:5432/hookcert")
	case p.urlHasPassword:
		w("      # TODO: export HOOKCERT_RECEIVER_DATABASE_URL: the URL holds a password, so it is not written here.")
		w("      url_env: HOOKCERT_RECEIVER_DATABASE_URL")
	default:
		w("      # The database init read. With a lifecycle, \"{{.DatabaseURL}}\" gives each run its own.")
		w("      url: %s", q(p.f.databaseURL))
	}
	ev, ef := p.event, p.effect
	if ev == nil {
		w("      # TODO: no table of event keys was found (an events-like name with a unique key over")
		w("      # event_id, delivery_id, webhook_id or id). Name it and write the queries by hand.")
		w("      queries:")
		w("        # $1 source, $2 account, $3 event ID, $4 object ID")
		w("        event_rows: SELECT count(*) FROM TODO WHERE event_id = $3")
		w("        effects: SELECT count(*) FROM TODO WHERE event_id = $3")
		w("  capabilities: []")
		return []byte(b.String())
	}
	if ev.key != nil {
		kind := "unique index " + ev.key.name
		if ev.key.primary {
			kind = "primary key"
		}
		w("      # Event keys: %s, %s over (%s).", ev.t.display(), kind, strings.Join(ev.key.cols, ", "))
	} else {
		w("      # WARNING: %s has no unique key over %s: the database does not stop two copies of one", ev.t.display(), ev.idCol.name)
		w("      # event from both being stored, and DEDUP-1 will tell whether the receiver does.")
	}
	if len(p.others) > 0 {
		w("      # Other candidates: %s.", strings.Join(p.others, ", "))
	}
	if f := ev.t.field(); f != "" {
		w("      event_table: %s", q(f))
	}
	if ef != nil {
		w("      # Business effects: %s (%s).", ef.t.display(), ef.why)
		if len(p.otherEffects) > 0 {
			w("      # Other tables referring to the event: %s.", strings.Join(p.otherEffects, ", "))
		}
		if f := ef.t.field(); f != "" {
			w("      effect_table: %s", q(f))
		}
	}
	w("      queries:")
	w("        # $1 source, $2 account, $3 event ID, $4 object ID: each only where a matching column exists.")
	w("        event_rows: %s", q(p.eventRows))
	if ef != nil {
		w("        effects: %s", q(p.effects))
	} else {
		w("        # TODO: no table refers to %s.%s: count the event's business effects here.", ev.t.display(), ev.idCol.name)
		w("        effects: %s", q(p.eventRows))
	}
	if p.objectEffects != "" {
		w("        # TODO, if one payment is credited once whatever its events (capability domain-constraint):")
		w("        # object_effects: %s", p.objectEffects)
	}
	if p.payloadQ != "" {
		w("        # TODO, with a retention section (capability retention):")
		w("        # payload_present: %s", p.payloadQ)
	}
	w("        # TODO (capabilities ordering, state-machine): object and payment, docs/target.md \"Queries\".")
	var caps, why []string
	if ev.t.field() != "" {
		caps = append(caps, string(targetfile.LockGating))
		why = append(why, fmt.Sprintf("lock-gating: the harness may lock %s so concurrent copies of an event race", ev.t.display()))
	}
	if ef != nil && ef.t.field() != "" {
		caps = append(caps, string(targetfile.ConnectionLoss))
		why = append(why, fmt.Sprintf("connection-loss: it may lock %s and cut the receiver's sessions mid-transaction", ef.t.display()))
	}
	for _, l := range why {
		w("  # %s.", l)
	}
	w("  # TODO: crash needs a lifecycle; ordering, state-machine and domain-constraint their queries.")
	w("  capabilities: [%s]", strings.Join(caps, ", "))
	w("  # TODO (optional): without an events section the built-in conformance vocabulary applies")
	w("  # (docs/conformance-domain.md). If the receiver handles other event types, declare them by")
	w("  # role (effect, lifecycle, ordered, unhandled): docs/target.md, \"Declared events\".")
	return []byte(b.String())
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
		left = append(left, "observe.postgres.url_env: export HOOKCERT_RECEIVER_DATABASE_URL")
	}
	if p.event == nil {
		left = append(left, "observe.postgres: the event table and the queries (none found)")
	} else if p.effect == nil {
		left = append(left, "observe.postgres.queries.effects: no table refers to the event ID")
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

// yamlScalar renders s as a YAML scalar, quoted where YAML needs it.
func yamlScalar(s string) string {
	b, err := yaml.Marshal(s)
	if err != nil {
		return fmt.Sprintf("%q", s)
	}
	return strings.TrimSuffix(string(b), "\n")
}
