package cli

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/hookcert/hookcert/adapters/scrub"
)

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
	// accountWordRE and sourceWordRE classify the other columns of an event
	// key that the lists above miss (provider_account, stripe_account_id,
	// webhook_source): an account word wins, as in provider_account.
	accountWordRE = regexp.MustCompile(`(^|_)(account|acct|tenant|shop|merchant|workspace|team|org|organization|installation)(_|$)`)
	sourceWordRE  = regexp.MustCompile(`(^|_)(source|provider|origin|integration|vendor)(_|$)`)
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

// eventPick is the proposed event table and why.
type eventPick struct {
	t        *table
	idCol    column
	key      *uniqueKey // nil: no unique key over the ID column (a warning)
	src, acc *column
	// unmapped are the key's columns that are neither source, account nor
	// the event ID: no query parameter stands for them (a warning).
	unmapped []string
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
	f initFlags
	// kind is the observer section the file gets: "postgres" or "mysql".
	kind            string
	dbName, dbWhere string
	event           *eventPick
	others          []string // other event-table candidates
	effect          *effectPick
	otherEffects    []string
	// unwritten are the effect candidates nothing has written.
	unwritten                []string
	eventRows, effects       string
	objectEffects, payloadQ  string
	accounts                 []string
	urlHasPassword, keyless  bool
	account, path, secretEnv string
	// declaration is the profiles: section the file carries when --profile
	// is declared in --profile-file: that profile's entry, as written there.
	declaration []byte
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
	// A table nothing has written comes after every written one: the
	// receiver creates it, but its effects go elsewhere.
	sort.SliceStable(effs, func(i, j int) bool {
		if effs[i].t.unwritten != effs[j].t.unwritten {
			return !effs[i].t.unwritten
		}
		return effs[i].score > effs[j].score
	})
	for _, e := range effs {
		if e.t.unwritten {
			p.unwritten = append(p.unwritten, e.t.display())
		}
	}
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
			for _, col := range k.cols {
				if col != name && keyRole(col) != "" {
					score += 5
				}
			}
			if ep.key == nil || score > 0 {
				ep.key = k
			}
		}
		if ep.key != nil {
			ep.bindKey(t)
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

// keyRole says which part of the event key a column of a unique key holds:
// "source", "account", or "" when its name says neither.
func keyRole(col string) string {
	name := strings.ToLower(col)
	switch {
	case slices.Contains(accountColumns, name), accountWordRE.MatchString(name):
		return "account"
	case slices.Contains(sourceColumns, name), sourceWordRE.MatchString(name):
		return "source"
	}
	return ""
}

// bindKey maps every column of the event key to its parameter: a key column
// that holds the source or the account is the one the queries bind, over any
// column found by name alone, so that no query drops a part of the key (a
// count without the account would merge two accounts' events).
func (ep *eventPick) bindKey(t *table) {
	for _, name := range ep.key.cols {
		if name == ep.idCol.name {
			continue
		}
		c, ok := t.col(name)
		if !ok {
			continue
		}
		switch keyRole(name) {
		case "account":
			if ep.acc == nil || !slices.Contains(ep.key.cols, ep.acc.name) {
				ep.acc = &c
				continue
			}
		case "source":
			if ep.src == nil || !slices.Contains(ep.key.cols, ep.src.name) {
				ep.src = &c
				continue
			}
		}
		if (ep.acc == nil || ep.acc.name != name) && (ep.src == nil || ep.src.name != name) {
			ep.unmapped = append(ep.unmapped, name)
		}
	}
}

// partColumn is the column of t that holds the same part of the event key as
// the event table's column ev (nil when ev is nil or t has none): the same
// name first, else the first column whose name says that part.
func partColumn(t *table, ev *column, role string, names []string) *column {
	if ev == nil {
		return nil
	}
	if c, ok := t.col(ev.name); ok {
		return &c
	}
	if c, ok := t.first(names); ok {
		return &c
	}
	for _, c := range t.cols {
		if keyRole(c.name) == role {
			return &c
		}
	}
	return nil
}

// effectCandidate is t as the effect table: a column referring to the event's
// ID, by foreign key or by name.
func effectCandidate(t *table, ev *eventPick) *effectPick {
	var best *effectPick
	consider := func(c column, score int, why string) {
		e := &effectPick{t: t, idCol: c, why: why, score: score}
		if e.src = partColumn(t, ev.src, "source", sourceColumns); e.src != nil {
			e.score += 5
		}
		if e.acc = partColumn(t, ev.acc, "account", accountColumns); e.acc != nil {
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
