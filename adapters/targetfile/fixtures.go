package targetfile

import (
	"net/http"
	"regexp"
	"sort"
	"strings"
)

// Fixtures (target.fixtures) create the business objects events are about,
// as the receiver's own application would before the provider sends anything.

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

// Fixture is a named hook that creates one business object in the receiver, as
// its own application would before events about it arrive. Exactly one of SQL,
// Command and HTTP is set.
type Fixture struct {
	Name string
	// SQL runs on the observer's database with $1 source, $2 account, $4 object
	// ID, $5 amount (bigint), $6 currency, $7 the parent object's ID (any
	// subset, $3 never).
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

// fixtureNameRE: fixture names, referenced from create.fixture.
var fixtureNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

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
			f.SQL = v.fixtureSQL(at(p, "sql"), rf.SQL)
		}
		f.Command = v.fixtureCommand(p, rf.Command)
		if h := rf.HTTP; h != nil {
			f.HTTP = v.fixtureHTTP(at(p, "http"), h)
		}
		t.Fixtures[name] = f
	}
}

// fixtureSQL checks a fixture's sql: it names the object ($4), and no event
// ($3), as none exists yet. It returns "" when refused.
func (v *validator) fixtureSQL(segs []any, sql string) string {
	used, err := FixtureParams(sql)
	switch {
	case err != nil:
		v.fail(segs, "must use only parameters $1 source, $2 account, $4 object ID, $5 amount, $6 currency, $7 parent ID: %v", err)
	case containsInt(used, 3):
		v.fail(segs, "must not use $3: a fixture runs before any event exists (parameters: $1 source, $2 account, $4 object ID, $5 amount, $6 currency, $7 parent ID)")
	case !containsInt(used, 4):
		v.fail(segs, "must reference $4 (the object ID)")
	default:
		return sql
	}
	return ""
}

// fixtureCommand checks a fixture's command (under p, the fixture): each
// argument a data template, without {{env}}.
func (v *validator) fixtureCommand(p []any, command []string) []*DataTemplate {
	var out []*DataTemplate
	for i, a := range command {
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
		out = append(out, dt)
	}
	return out
}

// fixtureHTTP checks a fixture's http request: a writing method, a path under
// the base URL, an optional body.
func (v *validator) fixtureHTTP(hp []any, h *rawFixtureHTTP) *FixtureHTTP {
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
	return fh
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
