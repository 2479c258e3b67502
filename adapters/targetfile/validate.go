package targetfile

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	tparse "text/template/parse"
	"time"

	"go.yaml.in/yaml/v3"
)

var (
	// slugRE: profile names and capabilities are lower-case slugs.
	slugRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)
	// envNameRE: POSIX environment variable names.
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// identRE: one PostgreSQL identifier part of event_table (quoted verbatim later).
	identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]{0,62}$`)
	// noEntryRE extracts the variable name from text/template's missingkey error.
	noEntryRE = regexp.MustCompile(`no entry for key "([^"]*)"`)
)

// varNames are the template variables, sorted, for error messages.
var varNames = []string{"BaseURL", "DatabaseURL", "ListenAddr", "Port", "SinkURL"}

type validator struct {
	root *yaml.Node
	vars Vars
	errs []*FieldError
	// bad are the paths the shape check found unusable (see shapeChecker).
	bad  map[string]bool
	opts options
	// used are the template variables the file's templates reference.
	used map[string]bool
	// envValues are the values {{env}} read (see Target.EnvSecrets).
	envValues []string
}

// fail records a FieldError at path segs, unless the shape check already reported
// that field or one above it. The rule may quote a rendered template, so
// passwords are taken out of it.
func (v *validator) fail(segs []any, format string, args ...any) {
	if v.broken(segs) {
		return
	}
	rule := redactText(fmt.Sprintf(format, args...), v.vars.DatabaseURL)
	v.errs = append(v.errs, &FieldError{Path: pathString(segs), Rule: rule, Line: lineOf(v.root, segs)})
}

// broken reports whether the value at segs, or one of its parents, had the wrong
// shape.
func (v *validator) broken(segs []any) bool {
	if len(v.bad) == 0 {
		return false
	}
	for i := len(segs); i >= 0; i-- {
		p := pathString(segs[:i])
		if p == "" {
			p = "(top level)"
		}
		if v.bad[p] {
			return true
		}
	}
	return false
}

// brokenPath is broken for a dotted path such as "target.observe.postgres.queries.object".
func (v *validator) brokenPath(p string) bool {
	var segs []any
	for _, s := range strings.Split(p, ".") {
		segs = append(segs, s)
	}
	return v.broken(segs)
}

func pathString(segs []any) string {
	return joinPath(segs, func(i int) string { return "[" + strconv.Itoa(i) + "]" })
}

// joinPath renders a field path: names joined by dots, list indexes as index
// renders them.
func joinPath(segs []any, index func(int) string) string {
	var b strings.Builder
	for i, s := range segs {
		switch k := s.(type) {
		case string:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(k)
		case int:
			b.WriteString(index(k))
		}
	}
	return b.String()
}

func at(base []any, more ...any) []any {
	out := make([]any, 0, len(base)+len(more))
	return append(append(out, base...), more...)
}

// render expands template variables in s; ok is false when it recorded an error.
// {{env}} is refused: only lifecycle.env values may read the harness's
// environment (renderEnv).
func (v *validator) render(segs []any, s string) (string, bool) {
	return v.renderTemplate(segs, s, false)
}

// renderEnv is render for a lifecycle.env value, where {{env "NAME"}} passes
// the harness's variable NAME; the values it reads are kept as secrets.
func (v *validator) renderEnv(segs []any, s string) (string, bool) {
	return v.renderTemplate(segs, s, true)
}

func (v *validator) renderTemplate(segs []any, s string, allowEnv bool) (string, bool) {
	if !strings.Contains(s, "{{") {
		return s, true
	}
	// The values {{env}} reads are never quoted: an unset variable is named, a
	// set one only kept to be scrubbed.
	var envErr error
	var read []string
	funcs := template.FuncMap{envFunc: func(name string) (string, error) {
		val, err := lookupEnv(name)
		if err != nil {
			envErr = err
			return "", err
		}
		read = append(read, val)
		return val, nil
	}}
	tpl, err := template.New(pathString(segs)).Option("missingkey=error").Funcs(funcs).Parse(s)
	if err != nil {
		v.fail(segs, "bad template: %v", err)
		return "", false
	}
	if !allowEnv && usesFunc(tpl.Tree.Root, envFunc) {
		v.fail(segs, "%s", envRefusal(pathString(segs)))
		return "", false
	}
	if v.used == nil {
		v.used = map[string]bool{}
	}
	templateVars(tpl.Tree.Root, v.used)
	data := map[string]string{}
	for k, val := range map[string]string{"BaseURL": v.vars.BaseURL, "DatabaseURL": v.vars.DatabaseURL,
		"ListenAddr": v.vars.ListenAddr, "Port": v.vars.Port, "SinkURL": v.vars.SinkURL} {
		if val != "" {
			data[k] = val
		}
	}
	var b strings.Builder
	if err := tpl.Execute(&b, data); err != nil {
		m := noEntryRE.FindStringSubmatch(err.Error())
		switch {
		case envErr != nil:
			v.fail(segs, "%v", envErr)
		case m == nil:
			v.fail(segs, "bad template: %v", err)
		case contains(varNames, m[1]):
			v.fail(segs, "template variable {{.%s}} is not set by the harness for this run", m[1])
		default:
			v.fail(segs, "unknown template variable {{.%s}} (valid: %s)", m[1], strings.Join(varNames, ", "))
		}
		return "", false
	}
	for _, val := range read {
		if len(val) >= minScrubbedEnv {
			v.envValues = append(v.envValues, val)
		}
	}
	return b.String(), true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (v *validator) duration(segs []any, s string, def time.Duration, allowZero bool) time.Duration {
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		v.fail(segs, "must be a duration like 30s or 1m (got %q)", s)
		return def
	}
	if d < 0 || (d == 0 && !allowZero) {
		v.fail(segs, "must be positive (got %s)", s)
	}
	return d
}

// boundedDuration is a positive duration of whole milliseconds (PostgreSQL's
// unit for timeouts) up to MaxObserveTimeout.
func (v *validator) boundedDuration(segs []any, s string, def time.Duration) time.Duration {
	d := v.duration(segs, s, def, false)
	switch {
	case d <= 0:
		return def
	case d > MaxObserveTimeout:
		v.fail(segs, "must be at most %s (got %s)", MaxObserveTimeout, s)
		return def
	case d%time.Millisecond != 0:
		v.fail(segs, "must be whole milliseconds (got %s)", s)
		return def
	}
	return d
}

// path checks a URL path field: starts with "/", no query or fragment.
func (v *validator) path(segs []any, s string, required bool) string {
	if s == "" {
		if required {
			v.fail(segs, "required")
		}
		return ""
	}
	r, ok := v.render(segs, s)
	if !ok {
		return ""
	}
	if !strings.HasPrefix(r, "/") {
		v.fail(segs, "must start with \"/\" (got %q)", r)
	} else if strings.ContainsAny(r, "?# \t") {
		v.fail(segs, "must be a plain path without query, fragment or spaces (got %q)", r)
	}
	return r
}

func (v *validator) build(doc *rawDoc) *Target {
	if doc.Target == nil {
		v.fail([]any{"target"}, "required (the file's top-level key)")
		return nil
	}
	rt := doc.Target
	base := []any{"target"}
	if v.vars.Port == "" && v.vars.ListenAddr != "" {
		if _, p, err := net.SplitHostPort(v.vars.ListenAddr); err == nil {
			v.vars.Port = p
		}
	}
	t := &Target{Name: rt.Name}
	if t.Name == "" {
		v.fail(at(base, "name"), "required")
	}

	// base_url first: the rendered value becomes {{.BaseURL}} for the other fields.
	if rt.BaseURL == "" {
		v.fail(at(base, "base_url"), "required")
	} else if strings.Contains(rt.BaseURL, ".BaseURL") {
		v.fail(at(base, "base_url"), "cannot use {{.BaseURL}} (it is this field)")
	} else if r, ok := v.render(at(base, "base_url"), rt.BaseURL); ok {
		u, err := url.Parse(r)
		switch {
		case err != nil:
			// url.Parse's error quotes the whole value; keep only its reason.
			var ue *url.Error
			reason := err
			if errors.As(err, &ue) {
				reason = ue.Err
			}
			v.fail(at(base, "base_url"), "must be a URL: %v (got %q)", reason, r)
		case u.Scheme != "http" && u.Scheme != "https":
			v.fail(at(base, "base_url"), "must be an http:// or https:// URL (got %q)", r)
		case u.Host == "":
			v.fail(at(base, "base_url"), "must have a host (got %q)", r)
		case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
			v.fail(at(base, "base_url"), "must not have credentials, a query or a fragment")
		default:
			t.BaseURL = strings.TrimRight(r, "/")
			if v.vars.BaseURL == "" {
				v.vars.BaseURL = t.BaseURL
			}
		}
	}

	v.endpoints(t, rt.Endpoints)
	v.lifecycle(t, rt.Lifecycle)
	v.setup(t, rt.Setup)
	v.observe(t, rt)
	if rt.Failpoints != nil {
		p := rt.Failpoints.Path
		if p == "" {
			p = DefaultFailpointsPath
		}
		t.FailpointsPath = v.path(at(base, "failpoints", "path"), p, true)
	}
	v.retention(t, rt.Retention, rt.Endpoints)
	// Fixtures before events, which name them; events and acceptance after
	// observe, whose query slots they fill.
	v.fixtures(t, rt.Fixtures)
	v.events(t, rt)
	v.acceptance(t, rt.Acceptance)
	v.queues(t, rt)
	v.capabilities(t, rt)
	if rt.Lifecycle != nil && rt.Lifecycle.Worker != nil && !t.Has(Inbox) && !t.Has(Outbox) {
		v.fail([]any{"target", "lifecycle", "worker"}, "needs capability %q or %q: a worker process applies accepted events or sends outbox messages, and only those checks kill it alone", Inbox, Outbox)
	}
	t.MaxBodyBytes = DefaultMaxBodyBytes
	if rt.Limits != nil && rt.Limits.MaxBodyBytes != 0 {
		if rt.Limits.MaxBodyBytes < 1024 {
			v.fail(at(base, "limits", "max_body_bytes"), "must be at least 1024 (got %d)", rt.Limits.MaxBodyBytes)
		} else {
			t.MaxBodyBytes = rt.Limits.MaxBodyBytes
		}
	}
	return t
}

func (v *validator) endpoints(t *Target, eps []rawEndpoint) {
	base := []any{"target", "endpoints"}
	if len(eps) == 0 {
		v.fail(base, "at least one endpoint is required")
		return
	}
	byScope := map[[2]string]int{}
	byPath := map[string]int{}
	for i, re := range eps {
		p := at(base, i)
		e := Endpoint{Profile: re.Profile, Source: re.Source, Account: re.Account, SecretEnv: re.SecretEnv}
		if e.Source == "" {
			e.Source = re.Profile
		} else if !slugRE.MatchString(e.Source) {
			v.fail(at(p, "source"), "must be a lower-case name like stripe or stripe-test (got %q)", re.Source)
		}
		if re.Profile == "" {
			v.fail(at(p, "profile"), "required")
		} else if !slugRE.MatchString(re.Profile) {
			v.fail(at(p, "profile"), "must be a lower-case name like stripe or standard-webhooks (got %q)", re.Profile)
		} else if known := v.opts.profiles; len(known) > 0 && !contains(known, re.Profile) {
			sorted := append([]string(nil), known...)
			sort.Strings(sorted)
			v.fail(at(p, "profile"), "unknown profile %q (valid: %s)", re.Profile, strings.Join(sorted, ", "))
		}
		if re.Account == "" {
			v.fail(at(p, "account"), "required")
		} else if strings.ContainsAny(re.Account, " \t\n") {
			v.fail(at(p, "account"), "must not contain whitespace")
		}
		e.Path = v.path(at(p, "path"), re.Path, true)
		e.AckTimeout = v.ackTimeout(at(p, "ack_timeout"), re.AckTimeout)
		switch {
		case re.Secret != "" && re.SecretEnv != "":
			v.fail(at(p, "secret"), "set only one of secret and secret_env")
		case re.Secret != "":
			e.Secret = NewSecret(re.Secret)
		case re.SecretEnv != "":
			if !envNameRE.MatchString(re.SecretEnv) {
				v.fail(at(p, "secret_env"), "must be an environment variable name (got %q)", re.SecretEnv)
			} else if val, ok := os.LookupEnv(re.SecretEnv); !ok || val == "" {
				v.fail(at(p, "secret_env"), "environment variable %s is not set or empty", re.SecretEnv)
			} else {
				e.Secret = NewSecret(val)
			}
		default:
			v.fail(at(p, "secret"), "required (or secret_env)")
		}
		if re.Profile != "" && re.Account != "" {
			// One endpoint per event-key scope: a profile's live and test
			// endpoints of one account are two scopes when their sources differ.
			src := re.Source
			if src == "" {
				src = re.Profile
			}
			k := [2]string{src, re.Account}
			if j, dup := byScope[k]; dup {
				v.fail(p, "duplicate endpoint for source %q and account %q (also target.endpoints[%d]; give one a different source)", src, re.Account, j)
			} else {
				byScope[k] = i
			}
		}
		if e.Path != "" {
			key := e.Path
			if v.opts.placeholders && strings.Contains(re.Path, "{{") {
				// Rendered with stand-ins, two templates may collide where the real
				// values would not: only identical templates surely do.
				key = "\x00" + re.Path
			}
			if j, dup := byPath[key]; dup {
				v.fail(at(p, "path"), "duplicate path %q (also target.endpoints[%d]): the account scope comes from the endpoint", e.Path, j)
			} else {
				byPath[key] = i
			}
		}
		t.Endpoints = append(t.Endpoints, e)
	}
}

func (v *validator) lifecycle(t *Target, rl *rawLifecycle) {
	if rl == nil {
		return
	}
	base := []any{"target", "lifecycle"}
	l := &Lifecycle{Env: Env{}}
	if len(rl.Command) == 0 {
		v.fail(at(base, "command"), "required (the program and its arguments)")
	}
	l.Command = v.command(base, rl.Command)
	v.env(base, rl.Env, l.Env)
	// The working directory defaults to the file's; a relative one is under it.
	l.Dir = v.opts.baseDir
	if rl.Dir != "" {
		if d, ok := v.render(at(base, "dir"), rl.Dir); ok {
			l.Dir = v.resolvePath(d)
		}
	}
	if rl.Ready == nil {
		v.fail(at(base, "ready"), "required (ready.http: the path that answers 2xx once the receiver is ready)")
	} else {
		l.ReadyPath = v.path(at(base, "ready", "http"), rl.Ready.HTTP, true)
		l.ReadyTimeout = v.duration(at(base, "ready", "timeout"), rl.Ready.Timeout, DefaultReadyTimeout, false)
	}
	l.StopGrace = v.duration(at(base, "stop_grace"), rl.StopGrace, DefaultStopGrace, true)
	l.Worker = v.worker(l, rl.Worker)
	t.Lifecycle = l
}

// command renders base.command: each element a template, the program resolved
// against the file's directory.
func (v *validator) command(base []any, raw []string) []string {
	var out []string
	for i, a := range raw {
		if i == 0 && a == "" {
			v.fail(at(base, "command", 0), "the program must not be empty")
		}
		r, _ := v.render(at(base, "command", i), a)
		if i == 0 {
			r = ResolveProgram(v.opts.baseDir, r)
		}
		out = append(out, r)
	}
	return out
}

// env renders base.env into dst, in name order so errors come sorted.
func (v *validator) env(base []any, raw map[string]string, dst Env) {
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !envNameRE.MatchString(k) {
			v.fail(at(base, "env", k), "must be an environment variable name")
			continue
		}
		r, _ := v.renderEnv(at(base, "env", k), raw[k])
		dst[k] = r
	}
}

// worker validates lifecycle.worker: its command and env render like the
// receiver's, its env goes over the receiver's, and its directory defaults to
// the receiver's.
func (v *validator) worker(l *Lifecycle, rw *rawWorker) *Worker {
	if rw == nil {
		return nil
	}
	base := []any{"target", "lifecycle", "worker"}
	w := &Worker{Env: Env{}, Dir: l.Dir, Processes: 1}
	if len(rw.Command) == 0 {
		v.fail(at(base, "command"), "required (the worker program and its arguments)")
	}
	w.Command = v.command(base, rw.Command)
	for k, val := range l.Env {
		w.Env[k] = val
	}
	v.env(base, rw.Env, w.Env)
	if rw.Dir != "" {
		if d, ok := v.render(at(base, "dir"), rw.Dir); ok {
			w.Dir = v.resolvePath(d)
		}
	}
	if rw.Processes != nil {
		if n := *rw.Processes; n < 1 || n > MaxWorkerProcesses {
			v.fail(at(base, "processes"), "must be between 1 and %d, got %d", MaxWorkerProcesses, n)
		} else {
			w.Processes = n
		}
	}
	return w
}

func (v *validator) observe(t *Target, rt *rawTarget) {
	ro := rt.Observe
	base := []any{"target", "observe", "postgres"}
	if ro == nil || ro.Postgres == nil {
		v.fail(base, "required (the harness judges guarantees from the receiver's state)")
		return
	}
	rp := ro.Postgres
	switch {
	case rp.URL != "" && rp.URLEnv != "":
		v.fail(at(base, "url"), "set only one of url and url_env")
	case rp.URL != "":
		if r, ok := v.render(at(base, "url"), rp.URL); ok {
			t.Postgres.URL = NewSecret(r)
		}
	case rp.URLEnv != "":
		if !envNameRE.MatchString(rp.URLEnv) {
			v.fail(at(base, "url_env"), "must be an environment variable name (got %q)", rp.URLEnv)
		} else if val, ok := os.LookupEnv(rp.URLEnv); !ok || val == "" {
			v.fail(at(base, "url_env"), "environment variable %s is not set or empty", rp.URLEnv)
		} else {
			t.Postgres.URL = NewSecret(val)
		}
	default:
		v.fail(at(base, "url"), "required (or url_env)")
	}
	if rp.EventTable != "" {
		parts := strings.Split(rp.EventTable, ".")
		ok := len(parts) <= 2
		for _, p := range parts {
			ok = ok && identRE.MatchString(p)
		}
		if !ok {
			v.fail(at(base, "event_table"), "must be a table name or schema.table of letters, digits and _ (got %q)", rp.EventTable)
		} else {
			t.Postgres.EventTable = rp.EventTable
		}
	}
	if rp.EffectTable != "" {
		if !tableNameOK(rp.EffectTable) {
			v.fail(at(base, "effect_table"), "must be a table name or schema.table of letters, digits and _ (got %q)", rp.EffectTable)
		} else {
			t.Postgres.EffectTable = rp.EffectTable
		}
	}
	t.Postgres.ConnectTimeout = v.boundedDuration(at(base, "connect_timeout"), rp.ConnectTimeout, DefaultConnectTimeout)
	t.Postgres.StatementTimeout = v.boundedDuration(at(base, "statement_timeout"), rp.StatementTimeout, DefaultStatementTimeout)
	t.Postgres.LockTimeout = v.boundedDuration(at(base, "lock_timeout"), rp.LockTimeout, DefaultLockTimeout)
	if rp.Queries == nil {
		if declaredEffects(rt) {
			v.fail(at(base, "queries"), "required (at least event_rows)")
		} else {
			v.fail(at(base, "queries"), "required (at least event_rows and effects)")
		}
		return
	}
	q := Queries{EventRows: rp.Queries.EventRows, Effects: rp.Queries.Effects,
		ObjectEffects: rp.Queries.ObjectEffects, Object: rp.Queries.Object, Payment: rp.Queries.Payment,
		PayloadPresent: rp.Queries.PayloadPresent}
	for _, nq := range q.list() {
		p := at(base, "queries", nq.name)
		if strings.TrimSpace(nq.sql) == "" {
			switch {
			case nq.name == QueryEventRows:
				v.fail(p, "required")
			case nq.name == QueryEffects && !declaredEffects(rt):
				if rt.Events != nil && rt.Events.Effect != nil {
					v.fail(p, "required (or target.events.effect.effects)")
				} else {
					v.fail(p, "required")
				}
			}
			continue
		}
		v.queryParams(p, nq.sql, nq.needs)
	}
	t.Postgres.Queries = q
}

// declaredEffects reports whether the file gives events.effect.effects, which
// replaces observe.postgres.queries.effects.
func declaredEffects(rt *rawTarget) bool {
	return rt.Events != nil && rt.Events.Effect != nil && strings.TrimSpace(rt.Events.Effect.Effects) != ""
}

func containsInt(list []int, n int) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

func (v *validator) capabilities(t *Target, rt *rawTarget) {
	base := []any{"target", "capabilities"}
	valid := make([]string, len(Capabilities))
	for i, c := range Capabilities {
		valid[i] = string(c)
	}
	seen := map[Capability]int{}
	for i, s := range rt.Capabilities {
		p := at(base, i)
		c := Capability(s)
		if !contains(valid, s) {
			v.fail(p, "unknown capability %q (valid: %s)", s, strings.Join(valid, ", "))
			continue
		}
		if j, dup := seen[c]; dup {
			v.fail(p, "duplicate capability %q (also target.capabilities[%d])", s, j)
			continue
		}
		seen[c] = i
		t.Capabilities = append(t.Capabilities, c)
		var pg *rawPostgres
		if rt.Observe != nil {
			pg = rt.Observe.Postgres
		}
		missing := ""
		switch c {
		case Crash:
			if rt.Lifecycle == nil && !v.opts.hooks.Controller {
				missing = "target.lifecycle"
			}
		case LockGating:
			if pg == nil || pg.EventTable == "" {
				missing = "target.observe.postgres.event_table"
			}
		case ConnectionLoss:
			if pg == nil || pg.EffectTable == "" {
				missing = "target.observe.postgres.effect_table"
			}
		case Failpoints:
			if rt.Failpoints == nil {
				missing = "target.failpoints"
			}
		// A declared role's query satisfies the capability that reads its slot.
		case Deletion:
			if ev := rt.Events; ev != nil && ev.Ordered != nil {
				if ev.Ordered.Delete == nil {
					missing = "target.events.ordered.delete"
				}
			} else if pg == nil || pg.Queries == nil || pg.Queries.Object == "" {
				missing = "target.observe.postgres.queries.object"
			}
		case Ordering:
			if ev := rt.Events; ev != nil && ev.Ordered != nil {
				if ev.Ordered.State == "" {
					missing = "target.events.ordered.state"
				}
			} else if pg == nil || pg.Queries == nil || pg.Queries.Object == "" {
				missing = "target.observe.postgres.queries.object"
			}
		case StateMachine:
			if ev := rt.Events; ev != nil && ev.Lifecycle != nil {
				if ev.Lifecycle.State == "" {
					missing = "target.events.lifecycle.state"
				}
			} else if pg == nil || pg.Queries == nil || pg.Queries.Payment == "" {
				missing = "target.observe.postgres.queries.payment"
			}
		case DomainConstraint:
			if ev := rt.Events; ev != nil && ev.Lifecycle != nil {
				if ev.Lifecycle.Effects == "" {
					missing = "target.events.lifecycle.effects"
				}
			} else if pg == nil || pg.Queries == nil || pg.Queries.ObjectEffects == "" {
				missing = "target.observe.postgres.queries.object_effects"
			}
		case Inbox:
			switch {
			case rt.Inbox == nil:
				missing = "target.inbox"
			case rt.Acceptance == nil || rt.Acceptance.Mode != AcceptAsync:
				v.fail(p, "capability %q needs target.acceptance.mode async (an inbox receiver answers before its workers apply)", s)
			}
		case Outbox:
			switch {
			case rt.Outbox == nil:
				missing = "target.outbox"
			case !v.used["SinkURL"]:
				v.fail(p, "capability %q needs the receiver to be given {{.SinkURL}} (in target.lifecycle.command or target.lifecycle.env), where the harness's sink listens", s)
			}
		case Retention:
			switch {
			case rt.Retention == nil:
				missing = "target.retention"
			case pg == nil || pg.Queries == nil || pg.Queries.PayloadPresent == "":
				missing = "target.observe.postgres.queries.payload_present"
			}
		}
		if missing != "" && !v.brokenPath(missing) {
			v.fail(p, "capability %q needs %s, which is missing", s, missing)
		}
	}
}

// Summary is a target description safe to print in reports: no secret values,
// database passwords replaced by "xxxxx", lifecycle env given by names only.
type Summary struct {
	Name      string            `json:"name"`
	Source    string            `json:"source,omitempty"`
	BaseURL   string            `json:"base_url"`
	Endpoints []EndpointSummary `json:"endpoints"`
	Command   []string          `json:"command,omitempty"`
	EnvNames  []string          `json:"env_names,omitempty"`
	// WorkerCommand and WorkerProcesses describe lifecycle.worker.
	WorkerCommand   []string          `json:"worker_command,omitempty"`
	WorkerProcesses int               `json:"worker_processes,omitempty"`
	DatabaseURL     string            `json:"database_url"`
	EventTable      string            `json:"event_table,omitempty"`
	Queries         map[string]string `json:"queries"`
	Failpoints      string            `json:"failpoints,omitempty"`
	Capabilities    []Capability      `json:"capabilities"`
	// Setup names the setup hook (its script's path or its program).
	Setup string `json:"setup,omitempty"`
}

// EndpointSummary describes an endpoint without its secret.
type EndpointSummary struct {
	Profile string `json:"profile"`
	Source  string `json:"source"`
	Account string `json:"account"`
	URL     string `json:"url"`
	// SecretFrom is "inline" or "env:NAME".
	SecretFrom string `json:"secret_from"`
}

// Summary returns the redacted description of t.
func (t *Target) Summary() Summary {
	s := Summary{Name: t.Name, Source: t.Source, BaseURL: t.BaseURL, DatabaseURL: redactURL(t.Postgres.URL.Reveal()),
		EventTable: t.Postgres.EventTable, Queries: map[string]string{}, Failpoints: t.FailpointsPath,
		Capabilities: t.Capabilities}
	if t.Setup != nil {
		s.Setup = t.Setup.String()
	}
	// A declared query is named by its own field (events.lifecycle.state), not
	// by the observer slot it fills.
	q := t.Postgres.Queries
	for name, sql := range q.Named() {
		if from := q.From[name]; from != "" {
			name = strings.TrimPrefix(from, "target.")
		}
		s.Queries[name] = sql
	}
	for _, e := range t.Endpoints {
		from := "inline"
		if e.SecretEnv != "" {
			from = "env:" + e.SecretEnv
		}
		s.Endpoints = append(s.Endpoints, EndpointSummary{Profile: e.Profile, Source: e.Source, Account: e.Account, URL: t.URL(e.Path), SecretFrom: from})
	}
	if t.Lifecycle != nil {
		for _, a := range t.Lifecycle.Command {
			// An argument may embed a URL ("--db=postgres://u:pw@h/db").
			s.Command = append(s.Command, redactText(redactURL(a), t.Postgres.URL.Reveal()))
		}
		for k := range t.Lifecycle.Env {
			s.EnvNames = append(s.EnvNames, k)
		}
		sort.Strings(s.EnvNames)
		if w := t.Lifecycle.Worker; w != nil {
			for _, a := range w.Command {
				s.WorkerCommand = append(s.WorkerCommand, redactText(redactURL(a), t.Postgres.URL.Reveal()))
			}
			s.WorkerProcesses = w.Processes
		}
	}
	return s
}

// String renders the summary on one line per field, for logs.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "target %s at %s\n", s.Name, s.BaseURL)
	for _, e := range s.Endpoints {
		fmt.Fprintf(&b, "  endpoint %s/%s %s (secret %s)\n", e.Profile, e.Account, e.URL, e.SecretFrom)
	}
	if len(s.Command) > 0 {
		fmt.Fprintf(&b, "  command %s (env: %s)\n", strings.Join(s.Command, " "), strings.Join(s.EnvNames, ", "))
	}
	if len(s.WorkerCommand) > 0 {
		fmt.Fprintf(&b, "  worker %s (%d %s)\n", strings.Join(s.WorkerCommand, " "), s.WorkerProcesses, map[bool]string{true: "process", false: "processes"}[s.WorkerProcesses == 1])
	}
	fmt.Fprintf(&b, "  postgres %s", s.DatabaseURL)
	if s.EventTable != "" {
		fmt.Fprintf(&b, " event_table=%s", s.EventTable)
	}
	b.WriteString("\n")
	caps := make([]string, len(s.Capabilities))
	for i, c := range s.Capabilities {
		caps[i] = string(c)
	}
	fmt.Fprintf(&b, "  capabilities %s\n", strings.Join(caps, ", "))
	if s.Setup != "" {
		fmt.Fprintf(&b, "  setup %s\n", s.Setup)
	}
	return b.String()
}

func tableNameOK(name string) bool {
	parts := strings.Split(name, ".")
	ok := len(parts) <= 2
	for _, p := range parts {
		ok = ok && identRE.MatchString(p)
	}
	return ok
}

// templateVars adds the variables ({{.Name}}) a template's parse tree refers to.
func templateVars(n tparse.Node, into map[string]bool) {
	switch n := n.(type) {
	case *tparse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				templateVars(c, into)
			}
		}
	case *tparse.ActionNode:
		templateVars(n.Pipe, into)
	case *tparse.PipeNode:
		if n != nil {
			for _, c := range n.Cmds {
				templateVars(c, into)
			}
		}
	case *tparse.CommandNode:
		for _, a := range n.Args {
			templateVars(a, into)
		}
	case *tparse.FieldNode:
		if len(n.Ident) > 0 {
			into[n.Ident[0]] = true
		}
	case *tparse.IfNode:
		templateVars(n.Pipe, into)
		templateVars(n.List, into)
		templateVars(n.ElseList, into)
	case *tparse.RangeNode:
		templateVars(n.Pipe, into)
		templateVars(n.List, into)
		templateVars(n.ElseList, into)
	case *tparse.WithNode:
		templateVars(n.Pipe, into)
		templateVars(n.List, into)
		templateVars(n.ElseList, into)
	}
}
