package targetfile

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/hookcert/hookcert/vocab"
)

// The declared event vocabulary: target.events, target.fixtures and
// target.acceptance (docs/target.md, "Declared events").

type rawEvents struct {
	Effect    *rawEffect         `yaml:"effect"`
	Lifecycle *rawEventLifecycle `yaml:"lifecycle"`
	Ordered   *rawOrdered        `yaml:"ordered"`
	Unhandled *rawRole           `yaml:"unhandled"`
}

type rawRole struct {
	Type     string `yaml:"type"`
	IDPrefix string `yaml:"id_prefix"`
	Object   string `yaml:"object"`
}

type rawEffect struct {
	Type     string `yaml:"type"`
	IDPrefix string `yaml:"id_prefix"`
	Object   string `yaml:"object"`
	Effects  string `yaml:"effects"`
}

type rawEventLifecycle struct {
	Object      string          `yaml:"object"`
	IDPrefix    string          `yaml:"id_prefix"`
	Initial     string          `yaml:"initial"`
	Create      *rawCreate      `yaml:"create"`
	Missing     string          `yaml:"missing"`
	Transitions []rawTransition `yaml:"transitions"`
	State       string          `yaml:"state"`
	Effects     string          `yaml:"effects"`
}

type rawCreate struct {
	Fixture string `yaml:"fixture"`
	Type    string `yaml:"type"`
	Object  string `yaml:"object"`
}

type rawTransition struct {
	Type    string   `yaml:"type"`
	From    []string `yaml:"from"`
	To      string   `yaml:"to"`
	Effect  bool     `yaml:"effect"`
	Missing string   `yaml:"missing"`
	Object  string   `yaml:"object"`
}

type rawOrdered struct {
	Type     string            `yaml:"type"`
	IDPrefix string            `yaml:"id_prefix"`
	Key      string            `yaml:"key"`
	Create   *rawOrderedCreate `yaml:"create"`
	Object   string            `yaml:"object"`
	State    string            `yaml:"state"`
	Delete   *rawOrderedDelete `yaml:"delete"`
}

// rawOrderedDelete is the event that deletes an ordered object; it carries the
// ordering key like an update.
type rawOrderedDelete struct {
	Type   string `yaml:"type"`
	Object string `yaml:"object"`
}

// rawOrderedCreate: an ordered object is made by a fixture or by its first
// update, never by an event of its own.
type rawOrderedCreate struct {
	Fixture string `yaml:"fixture"`
}

type rawFixture struct {
	SQL     string          `yaml:"sql"`
	Command []string        `yaml:"command"`
	HTTP    *rawFixtureHTTP `yaml:"http"`
}

type rawFixtureHTTP struct {
	Method string `yaml:"method"`
	Path   string `yaml:"path"`
	Body   string `yaml:"body"`
}

type rawAcceptance struct {
	Mode      string `yaml:"mode"`
	Settle    string `yaml:"settle"`
	Quiescent string `yaml:"quiescent"`
}

// Acceptance defaults and bounds (acceptance.settle).
const (
	// DefaultSyncSettle: a synchronous receiver has committed the effect before
	// its 2xx; a second covers the read racing the commit's visibility.
	DefaultSyncSettle = time.Second
	// DefaultAsyncSettle: a worker applying accepted events typically polls
	// every few hundred milliseconds.
	DefaultAsyncSettle = 5 * time.Second
	MaxSettle          = 10 * time.Minute
	// MaxAckTimeout bounds endpoints[].ack_timeout: no provider waits longer
	// than a few tens of seconds for an answer.
	MaxAckTimeout = 5 * time.Minute
)

// Acceptance modes.
const (
	AcceptSync  = "sync"
	AcceptAsync = "async"
)

// Fixture is a named hook that creates one business object in the receiver, as
// its own application would before events about it arrive. Exactly one of SQL,
// Command and HTTP is set.
type Fixture struct {
	Name string
	// SQL runs on the observer's database with $1 source, $2 account, $4 object
	// ID, $5 amount (bigint), $6 currency (any subset, $3 never).
	SQL string
	// Command is the program and its arguments, each a template over
	// vocab.ObjectData; run directly (no shell); exit status 0 = created.
	Command []*DataTemplate
	// HTTP is a request to the base URL; any 2xx = created.
	HTTP *FixtureHTTP
}

// FixtureHTTP is an http fixture's request.
type FixtureHTTP struct {
	Method string
	// Path and Body are templates over vocab.ObjectData; Body is nil when
	// the request has none.
	Path *DataTemplate
	Body *DataTemplate
}

// Kind names the fixture's kind: "sql", "command" or "http".
func (f Fixture) Kind() string {
	switch {
	case f.SQL != "":
		return "sql"
	case len(f.Command) > 0:
		return "command"
	case f.HTTP != nil:
		return "http"
	}
	return ""
}

// DataTemplate is a fixture's command argument, request path or body: a Go
// text/template over vocab.ObjectData, with ref "prefix" like object
// templates. It is safe for concurrent use.
type DataTemplate struct {
	src string
	t   *template.Template
}

// sampleData renders templates once at load, as vocab.ParseObjectTemplate does.
var sampleData = vocab.ObjectData{EventID: "evt_sample", Type: "sample.type", ObjectID: "obj_sample", Source: "src",
	Account: "acct", Currency: "usd", State: "state", Amount: 1234, Created: 1700000000, Key: 1}

// dataVars are the template variables of object and fixture templates.
const dataVars = ".EventID .Type .ObjectID .Source .Account .Currency .State .Amount .Created .Key"

// ParseDataTemplate parses src and renders it once with sample values, so an
// unknown variable is refused at load.
func ParseDataTemplate(src string) (*DataTemplate, error) {
	t, err := template.New("fixture").Option("missingkey=error").Funcs(template.FuncMap{
		"ref": func(string) string { return "" },
	}).Parse(src)
	if err != nil {
		return nil, err
	}
	dt := &DataTemplate{src: src, t: t}
	if _, err := dt.Render(sampleData); err != nil {
		return nil, err
	}
	return dt, nil
}

// Render renders the template for d.
func (dt *DataTemplate) Render(d vocab.ObjectData) (string, error) {
	// ref reads the data being rendered: a clone per call keeps Render safe for
	// concurrent use.
	t, err := dt.t.Clone()
	if err != nil {
		return "", err
	}
	t.Funcs(template.FuncMap{"ref": func(prefix string) string { return vocab.Ref(prefix, d.ObjectID) }})
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Source returns the template text.
func (dt *DataTemplate) Source() string { return dt.src }

var (
	// idPrefixRE: the object IDs' prefix. No "_": ref derives a related ID from
	// what follows the first one.
	idPrefixRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,15}$`)
	// fixtureNameRE: fixture names, referenced from create.fixture.
	fixtureNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
)

var missingRules = []string{vocab.MissingRetry, vocab.MissingCreate, vocab.MissingIgnore}

// templateError explains a template that does not parse or render.
func templateError(err error) string {
	msg := err.Error()
	if strings.Contains(msg, "can't evaluate field") || strings.Contains(msg, "not defined") {
		return fmt.Sprintf("bad template: %s (variables: %s; function: ref \"prefix\")", msg, dataVars)
	}
	return "bad template: " + msg
}

// objectTemplate parses an optional object template.
func (v *validator) objectTemplate(segs []any, src string) *vocab.ObjectTemplate {
	if strings.TrimSpace(src) == "" {
		return nil
	}
	ot, err := vocab.ParseObjectTemplate(src)
	if err != nil {
		v.fail(segs, "%s", templateError(err))
		return nil
	}
	return ot
}

// usesKey reports whether a template refers to {{.Key}}.
func usesKey(src string) bool {
	t, err := template.New("k").Funcs(template.FuncMap{"ref": func(string) string { return "" }}).Parse(src)
	if err != nil {
		return false
	}
	vars := map[string]bool{}
	templateVars(t.Tree.Root, vars)
	return vars["Key"]
}

// idPrefix checks an optional id_prefix (default "obj").
func (v *validator) idPrefix(segs []any, s string) string {
	if s == "" {
		return "obj"
	}
	if !idPrefixRE.MatchString(s) {
		v.fail(segs, "must be a letter then up to 15 letters or digits, no _ (got %q)", s)
	}
	return s
}

// eventType checks a role's event type and that no other role uses it.
func (v *validator) eventType(segs []any, s string, seen map[string]string) string {
	switch {
	case strings.TrimSpace(s) == "":
		v.fail(segs, "required (the provider's event type)")
	case strings.ContainsAny(s, " \t\n"):
		v.fail(segs, "must not contain whitespace (got %q)", s)
	default:
		if other, dup := seen[s]; dup {
			v.fail(segs, "event type %q is also %s: each event type plays one role", s, other)
		} else {
			seen[s] = pathString(segs)
		}
	}
	return s
}

// declaredQuery checks a query of the declared vocabulary: parameters $1..$4 and
// one of needs referenced. required says whether it must be given.
func (v *validator) declaredQuery(segs []any, sql string, required bool, needs ...int) string {
	if strings.TrimSpace(sql) == "" {
		if required {
			v.fail(segs, "required")
		}
		return ""
	}
	if !v.queryParams(segs, sql, needs) {
		return ""
	}
	return sql
}

// queryParams checks a query's parameters: within $1..$4, and at least one of
// needs referenced (no needs: no parameter at all).
func (v *validator) queryParams(segs []any, sql string, needs []int) bool {
	used, err := QueryParams(sql)
	if err != nil {
		v.fail(segs, "must use only parameters $1..$%d ($1 source, $2 account, $3 event ID, $4 object ID): %v", MaxParam, err)
		return false
	}
	if len(needs) == 0 {
		if len(used) > 0 {
			v.fail(segs, "must take no parameters (got $%d)", used[0])
			return false
		}
		return true
	}
	for _, n := range needs {
		if containsInt(used, n) {
			return true
		}
	}
	alts := make([]string, len(needs))
	for i, n := range needs {
		alts[i] = fmt.Sprintf("$%d (the %s)", n, ParamNames[n-1])
	}
	v.fail(segs, "must reference %s", strings.Join(alts, " or "))
	return false
}

// fixtureExists checks a create.fixture reference against the file's fixtures.
func (v *validator) fixtureExists(segs []any, name string, fixtures map[string]rawFixture) {
	if _, ok := fixtures[name]; ok || contains(v.opts.hooks.Fixtures, name) {
		return
	}
	names := make([]string, 0, len(fixtures))
	for k := range fixtures {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) == 0 {
		v.fail(segs, "no fixture %q: target.fixtures declares none", name)
		return
	}
	v.fail(segs, "no fixture %q under target.fixtures (declared: %s)", name, strings.Join(names, ", "))
}

// events builds the declared vocabulary and puts its queries in the observer's
// slots: effect.effects → effects, lifecycle.state → payment, lifecycle.effects
// → object_effects, ordered.state → object.
func (v *validator) events(t *Target, rt *rawTarget) {
	re := rt.Events
	if re == nil {
		return
	}
	base := []any{"target", "events"}
	voc := &vocab.Vocabulary{Declared: true}
	if re.Effect == nil && re.Lifecycle == nil && re.Ordered == nil && re.Unhandled == nil {
		v.fail(base, "declare at least one of effect, lifecycle, ordered, unhandled (or remove events: the built-in vocabulary then applies)")
	}
	var rq *rawQueries
	if rt.Observe != nil && rt.Observe.Postgres != nil {
		rq = rt.Observe.Postgres.Queries
	}
	q := &t.Postgres.Queries
	from := func(name string, segs []any) {
		if q.From == nil {
			q.From = map[string]string{}
		}
		q.From[name] = pathString(segs)
	}
	// conflict refuses a built-in query slot the declared role fills itself.
	conflict := func(name string, declared []any) {
		if rq == nil {
			return
		}
		set := map[string]string{QueryObjectEffects: rq.ObjectEffects, QueryObject: rq.Object, QueryPayment: rq.Payment}[name]
		if strings.TrimSpace(set) != "" {
			v.fail([]any{"target", "observe", "postgres", "queries", name},
				"must not be set beside %s, which reads the same state (give the query there)", pathString(declared))
		}
	}
	types := map[string]string{}

	if r := re.Effect; r != nil {
		p := at(base, "effect")
		role := &vocab.EventRole{Type: v.eventType(at(p, "type"), r.Type, types), IDPrefix: v.idPrefix(at(p, "id_prefix"), r.IDPrefix),
			Object: v.objectTemplate(at(p, "object"), r.Object)}
		if sql := v.declaredQuery(at(p, "effects"), r.Effects, false, 3, 4); sql != "" {
			// It replaces observe.postgres.queries.effects, which may then be absent.
			q.Effects = sql
			from(QueryEffects, at(p, "effects"))
		}
		voc.Effect = role
	}

	if rl := re.Lifecycle; rl != nil {
		p := at(base, "lifecycle")
		l := &vocab.Lifecycle{Object: rl.Object, IDPrefix: v.idPrefix(at(p, "id_prefix"), rl.IDPrefix), Initial: rl.Initial}
		if l.Object == "" {
			l.Object = "object"
		}
		if strings.TrimSpace(rl.Initial) == "" {
			v.fail(at(p, "initial"), "required (the state of a freshly created object, as the state query reads it)")
		}
		switch c := rl.Create; {
		case c == nil:
			v.fail(at(p, "create"), "required: one of fixture (a fixture creates the object) and type (an event creates it)")
		case (c.Fixture == "") == (c.Type == ""):
			v.fail(at(p, "create"), "set exactly one of fixture and type")
		case c.Fixture != "":
			if c.Object != "" {
				v.fail(at(p, "create", "object"), "only with create.type (a fixture's object is the fixture's business)")
			}
			v.fixtureExists(at(p, "create", "fixture"), c.Fixture, rt.Fixtures)
			l.Fixture = c.Fixture
		default:
			role := &vocab.EventRole{Type: v.eventType(at(p, "create", "type"), c.Type, types), IDPrefix: l.IDPrefix}
			if strings.TrimSpace(c.Object) == "" {
				v.fail(at(p, "create", "object"), "required with create.type (the created object's template)")
			} else {
				role.Object = v.objectTemplate(at(p, "create", "object"), c.Object)
			}
			l.Create = role
		}
		l.Missing = v.missing(at(p, "missing"), rl.Missing, vocab.MissingRetry)
		if len(rl.Transitions) == 0 {
			v.fail(at(p, "transitions"), "at least one transition is required")
		}
		for i, rtr := range rl.Transitions {
			tp := at(p, "transitions", i)
			tr := vocab.Transition{
				EventRole: vocab.EventRole{Type: v.eventType(at(tp, "type"), rtr.Type, types), IDPrefix: l.IDPrefix,
					Object: v.objectTemplate(at(tp, "object"), rtr.Object)},
				From: rtr.From, To: rtr.To, Effect: rtr.Effect, Missing: v.missing(at(tp, "missing"), rtr.Missing, ""),
			}
			if strings.TrimSpace(rtr.To) == "" {
				v.fail(at(tp, "to"), "required (the state the transition moves the object to)")
			}
			if len(rtr.From) == 0 {
				v.fail(at(tp, "from"), "at least one state is required (the states the transition is allowed from)")
			}
			l.Transitions = append(l.Transitions, tr)
		}
		// Every from state must be one an object can be in.
		known := map[string]bool{rl.Initial: true}
		for _, tr := range rl.Transitions {
			known[tr.To] = true
		}
		for i, tr := range rl.Transitions {
			for j, s := range tr.From {
				if strings.TrimSpace(s) == "" {
					v.fail(at(p, "transitions", i, "from", j), "must not be empty")
				} else if !known[s] && rl.Initial != "" {
					v.fail(at(p, "transitions", i, "from", j), "state %q is neither initial (%q) nor any transition's to", s, rl.Initial)
				}
			}
		}
		if sql := v.declaredQuery(at(p, "state"), rl.State, true, 4); sql != "" {
			q.Payment = sql
			from(QueryPayment, at(p, "state"))
		}
		conflict(QueryPayment, at(p, "state"))
		if sql := v.declaredQuery(at(p, "effects"), rl.Effects, false, 4); sql != "" {
			q.ObjectEffects = sql
			from(QueryObjectEffects, at(p, "effects"))
			l.CountsEffects = true
		}
		conflict(QueryObjectEffects, at(p, "effects"))
		voc.Lifecycle = l
	}

	if ro := re.Ordered; ro != nil {
		p := at(base, "ordered")
		o := &vocab.Ordered{EventRole: vocab.EventRole{Type: v.eventType(at(p, "type"), ro.Type, types),
			IDPrefix: v.idPrefix(at(p, "id_prefix"), ro.IDPrefix), Object: v.objectTemplate(at(p, "object"), ro.Object)}, Key: ro.Key}
		switch ro.Key {
		case vocab.OrderCreated:
		case vocab.OrderField:
			if !usesKey(ro.Object) {
				v.fail(at(p, "object"), "must put {{.Key}} in a field: with key: field the object carries the ordering key")
			}
		case "":
			v.fail(at(p, "key"), "required: created (the event's created time orders updates) or field (the object's {{.Key}} field does)")
		default:
			v.fail(at(p, "key"), "must be created or field (got %q)", ro.Key)
		}
		if ro.Create != nil {
			switch {
			case ro.Create.Fixture == "" && v.brokenUnder(at(p, "create")):
			case ro.Create.Fixture == "":
				v.fail(at(p, "create", "fixture"), "required in create (or remove create: the first update creates the object)")
			default:
				v.fixtureExists(at(p, "create", "fixture"), ro.Create.Fixture, rt.Fixtures)
				o.Fixture = ro.Create.Fixture
			}
		}
		if sql := v.declaredQuery(at(p, "state"), ro.State, true, 4); sql != "" {
			q.Object = sql
			from(QueryObject, at(p, "state"))
		}
		conflict(QueryObject, at(p, "state"))
		if rd := ro.Delete; rd != nil {
			dp := at(p, "delete")
			o.Delete = &vocab.EventRole{Type: v.eventType(at(dp, "type"), rd.Type, types),
				IDPrefix: o.IDPrefix, Object: v.objectTemplate(at(dp, "object"), rd.Object)}
			if ro.Key == vocab.OrderField && rd.Object != "" && !usesKey(rd.Object) {
				v.fail(at(dp, "object"), "must put {{.Key}} in a field: with key: field the deletion carries the ordering key too")
			}
		}
		voc.Ordered = o
	}

	if r := re.Unhandled; r != nil {
		p := at(base, "unhandled")
		voc.Unhandled = &vocab.EventRole{Type: v.eventType(at(p, "type"), r.Type, types),
			IDPrefix: v.idPrefix(at(p, "id_prefix"), r.IDPrefix), Object: v.objectTemplate(at(p, "object"), r.Object)}
	}
	t.Events = voc
}

// brokenUnder reports whether the shape check refused anything at or below segs.
func (v *validator) brokenUnder(segs []any) bool {
	p := pathString(segs)
	for b := range v.bad {
		if b == p || strings.HasPrefix(b, p+".") || strings.HasPrefix(b, p+"[") {
			return true
		}
	}
	return v.broken(segs)
}

// missing checks a missing rule; "" gives def.
func (v *validator) missing(segs []any, s, def string) string {
	if s == "" {
		return def
	}
	if !contains(missingRules, s) {
		v.fail(segs, "must be one of %s (got %q)", strings.Join(missingRules, ", "), s)
		return def
	}
	return s
}

// fixtures checks target.fixtures: exactly one kind each, templates that render.
func (v *validator) fixtures(t *Target, fs map[string]rawFixture) {
	if len(fs) == 0 {
		return
	}
	base := []any{"target", "fixtures"}
	names := make([]string, 0, len(fs))
	for k := range fs {
		names = append(names, k)
	}
	sort.Strings(names)
	t.Fixtures = map[string]Fixture{}
	for _, name := range names {
		rf := fs[name]
		p := at(base, name)
		if !fixtureNameRE.MatchString(name) {
			v.fail(p, "fixture names are letters, digits, _ . - (got %q)", name)
			continue
		}
		f := Fixture{Name: name}
		set := 0
		for _, b := range []bool{rf.SQL != "", len(rf.Command) > 0, rf.HTTP != nil} {
			if b {
				set++
			}
		}
		if set != 1 {
			v.fail(p, "set exactly one of sql, command and http (got %d)", set)
		}
		if rf.SQL != "" {
			used, err := FixtureParams(rf.SQL)
			switch {
			case err != nil:
				v.fail(at(p, "sql"), "must use only parameters $1 source, $2 account, $4 object ID, $5 amount, $6 currency: %v", err)
			case containsInt(used, 3):
				v.fail(at(p, "sql"), "must not use $3: a fixture runs before any event exists (parameters: $1 source, $2 account, $4 object ID, $5 amount, $6 currency)")
			case !containsInt(used, 4):
				v.fail(at(p, "sql"), "must reference $4 (the object ID)")
			default:
				f.SQL = rf.SQL
			}
		}
		for i, a := range rf.Command {
			if i == 0 && strings.TrimSpace(a) == "" {
				v.fail(at(p, "command", 0), "the program must not be empty")
				continue
			}
			if UsesEnv(a) {
				v.fail(at(p, "command", i), "%s", envRefusal(pathString(at(p, "command", i))))
				continue
			}
			dt, err := ParseDataTemplate(a)
			if err != nil {
				v.fail(at(p, "command", i), "%s", templateError(err))
				continue
			}
			f.Command = append(f.Command, dt)
		}
		if h := rf.HTTP; h != nil {
			hp := at(p, "http")
			fh := &FixtureHTTP{Method: strings.ToUpper(h.Method)}
			switch fh.Method {
			case "":
				fh.Method = http.MethodPost
			case http.MethodPost, http.MethodPut, http.MethodPatch:
			default:
				v.fail(at(hp, "method"), "must be POST, PUT or PATCH (got %q)", h.Method)
			}
			if h.Path == "" {
				v.fail(at(hp, "path"), "required")
			} else if dt, err := ParseDataTemplate(h.Path); err != nil {
				v.fail(at(hp, "path"), "%s", templateError(err))
			} else if s, _ := dt.Render(sampleData); !strings.HasPrefix(s, "/") || strings.ContainsAny(s, "# \t") {
				v.fail(at(hp, "path"), "must be a path starting with \"/\", without fragment or spaces (got %q)", s)
			} else {
				fh.Path = dt
			}
			if h.Body != "" {
				if dt, err := ParseDataTemplate(h.Body); err != nil {
					v.fail(at(hp, "body"), "%s", templateError(err))
				} else {
					fh.Body = dt
				}
			}
			f.HTTP = fh
		}
		t.Fixtures[name] = f
	}
}

// acceptance checks target.acceptance and applies its defaults.
func (v *validator) acceptance(t *Target, ra *rawAcceptance) {
	t.Acceptance = vocab.Acceptance{Settle: DefaultSyncSettle}
	if ra == nil {
		return
	}
	base := []any{"target", "acceptance"}
	switch ra.Mode {
	case "", AcceptSync:
	case AcceptAsync:
		t.Acceptance = vocab.Acceptance{Async: true, Settle: DefaultAsyncSettle}
	default:
		v.fail(at(base, "mode"), "must be sync or async (got %q)", ra.Mode)
	}
	if ra.Settle != "" {
		d := v.duration(at(base, "settle"), ra.Settle, 0, false)
		switch {
		case d <= 0:
		case d > MaxSettle:
			v.fail(at(base, "settle"), "must be at most %s (got %s)", MaxSettle, ra.Settle)
		default:
			t.Acceptance.Settle = d
		}
	}
	if strings.TrimSpace(ra.Quiescent) != "" && v.queryParams(at(base, "quiescent"), ra.Quiescent, nil) {
		t.Postgres.Queries.Quiescent = ra.Quiescent
		if t.Postgres.Queries.From == nil {
			t.Postgres.Queries.From = map[string]string{}
		}
		t.Postgres.Queries.From[QueryQuiescent] = "target.acceptance.quiescent"
	}
}

// ackTimeout checks an endpoint's ack_timeout: positive, at most MaxAckTimeout.
func (v *validator) ackTimeout(segs []any, s string) time.Duration {
	if s == "" {
		return 0
	}
	d := v.duration(segs, s, 0, false)
	if d > MaxAckTimeout {
		v.fail(segs, "must be at most %s (got %s)", MaxAckTimeout, s)
		return 0
	}
	return max(d, 0)
}

// Query names, as the observer knows them.
const (
	QueryEventRows      = "event_rows"
	QueryEffects        = "effects"
	QueryObjectEffects  = "object_effects"
	QueryObject         = "object"
	QueryPayment        = "payment"
	QueryPayloadPresent = "payload_present"
	QueryQuiescent      = "quiescent"
)
