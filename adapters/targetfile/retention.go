package targetfile

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type rawRetention struct {
	KeyTTL     string    `yaml:"key_ttl"`
	PayloadTTL string    `yaml:"payload_ttl"`
	Purge      *rawPurge `yaml:"purge"`
}

type rawPurge struct {
	SQL     string        `yaml:"sql"`
	Command []string      `yaml:"command"`
	HTTP    *rawPurgeHTTP `yaml:"http"`
	Timeout string        `yaml:"timeout"`
}

type rawPurgeHTTP struct {
	Method string `yaml:"method"`
	Path   string `yaml:"path"`
}

// AsOfPlaceholder is replaced, in a purge command's arguments, by the as-of time
// (RFC 3339, UTC, nanoseconds) of each purge.
const AsOfPlaceholder = "{{.AsOf}}"

// DefaultPurgeTimeout bounds one purge call when retention.purge.timeout is absent.
const DefaultPurgeTimeout = 2 * time.Minute

// RetentionSpec is the target's declared retention (capability retention).
type RetentionSpec struct {
	// KeyTTL and PayloadTTL are the defaults of endpoints that set none (0 when
	// absent); each Endpoint carries its resolved values.
	KeyTTL     time.Duration
	PayloadTTL time.Duration
	Purge      Purge
}

// Purge is how the harness asks the receiver to purge as if the clock read a
// given time. Exactly one of SQL, Command and HTTPPath is set.
type Purge struct {
	// SQL runs on the observer's database with $1 = the as-of time (timestamptz).
	SQL string
	// Command is run directly (no shell), in lifecycle.dir with lifecycle.env;
	// AsOfPlaceholder in an argument is replaced by the as-of time.
	Command []string
	// HTTPMethod and HTTPPath: a request to BaseURL+HTTPPath with the JSON body
	// {"as_of": "<RFC 3339>"}; any 2xx is success.
	HTTPMethod string
	HTTPPath   string
	// Timeout bounds one purge.
	Timeout time.Duration
}

// Kind names the configured trigger: "sql", "command" or "http".
func (p Purge) Kind() string {
	switch {
	case p.SQL != "":
		return "sql"
	case len(p.Command) > 0:
		return "command"
	case p.HTTPPath != "":
		return "http"
	}
	return ""
}

// ParseTTL reads a retention duration: a Go duration ("744h", "90m") or whole days
// ("31d").
func ParseTTL(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100*365 {
			return 0, fmt.Errorf("must be a duration like 72h or whole days like 30d (got %q)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("must be a duration like 72h or whole days like 30d (got %q)", s)
	}
	return d, nil
}

// ttl validates an optional retention duration.
func (v *validator) ttl(segs []any, s string) time.Duration {
	if s == "" {
		return 0
	}
	d, err := ParseTTL(s)
	if err != nil {
		v.fail(segs, "%v", err)
		return 0
	}
	if d <= 0 {
		v.fail(segs, "must be positive (got %s)", s)
		return 0
	}
	return d
}

// retention checks target.retention and the endpoints' TTLs, which default to
// its own.
func (v *validator) retention(t *Target, rr *rawRetention, eps []rawEndpoint) {
	base := []any{"target", "retention"}
	def := v.ttls(t, rr, eps)
	if rr == nil {
		return
	}
	pb := at(base, "purge")
	if rr.Purge == nil && v.opts.hooks.Purge {
		t.Retention = &def
		return
	}
	if rr.Purge == nil {
		v.fail(pb, "required (one of sql, command, http: how the harness triggers a purge as of a time)")
		t.Retention = &def
		return
	}
	def.Purge = v.purge(pb, rr.Purge)
	t.Retention = &def
}

// ttls resolves each endpoint's TTLs, its own else target.retention's, and
// returns target.retention's. With a retention section every endpoint needs
// both, and a payload cannot outlive its key.
func (v *validator) ttls(t *Target, rr *rawRetention, eps []rawEndpoint) RetentionSpec {
	base := []any{"target", "retention"}
	var def RetentionSpec
	if rr != nil {
		def.KeyTTL = v.ttl(at(base, "key_ttl"), rr.KeyTTL)
		def.PayloadTTL = v.ttl(at(base, "payload_ttl"), rr.PayloadTTL)
	}
	for i, re := range eps {
		if i >= len(t.Endpoints) {
			break
		}
		p := []any{"target", "endpoints", i}
		e := &t.Endpoints[i]
		e.KeyTTL = v.ttl(at(p, "key_ttl"), re.KeyTTL)
		e.PayloadTTL = v.ttl(at(p, "payload_ttl"), re.PayloadTTL)
		if e.KeyTTL == 0 {
			e.KeyTTL = def.KeyTTL
		}
		if e.PayloadTTL == 0 {
			e.PayloadTTL = def.PayloadTTL
		}
		if rr == nil {
			continue
		}
		switch {
		case e.KeyTTL == 0 && re.KeyTTL == "" && rr.KeyTTL == "":
			v.fail(at(p, "key_ttl"), "required when target.retention is given (here or as target.retention.key_ttl)")
		case e.PayloadTTL == 0 && re.PayloadTTL == "" && rr.PayloadTTL == "":
			v.fail(at(p, "payload_ttl"), "required when target.retention is given (here or as target.retention.payload_ttl)")
		case e.KeyTTL > 0 && e.PayloadTTL > e.KeyTTL:
			v.fail(at(p, "payload_ttl"), "%s is longer than the key TTL %s (a payload cannot outlive its key)", e.PayloadTTL, e.KeyTTL)
		}
	}
	return def
}

// purge checks target.retention.purge (at pb): exactly one trigger, each able
// to pass the as-of time.
func (v *validator) purge(pb []any, rp *rawPurge) Purge {
	var pu Purge
	set := 0
	for _, b := range []bool{rp.SQL != "", len(rp.Command) > 0, rp.HTTP != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		v.fail(pb, "set exactly one of sql, command and http (got %d)", set)
	}
	pu.Timeout = v.duration(at(pb, "timeout"), rp.Timeout, DefaultPurgeTimeout, false)
	if rp.SQL != "" {
		used, err := QueryParams(rp.SQL)
		switch {
		case err != nil:
			v.fail(at(pb, "sql"), "must use only $1 (the as-of time): %v", err)
		case len(used) != 1 || used[0] != 1:
			v.fail(at(pb, "sql"), "must reference $1 (the as-of time) and no other parameter")
		default:
			pu.SQL = rp.SQL
		}
	}
	if len(rp.Command) > 0 {
		pu.Command = v.purgeCommand(pb, rp.Command)
	}
	if rp.HTTP != nil {
		hb := at(pb, "http")
		m := strings.ToUpper(rp.HTTP.Method)
		switch m {
		case "":
			m = http.MethodPost
		case http.MethodPost, http.MethodPut:
		default:
			v.fail(at(hb, "method"), "must be POST or PUT (got %q)", rp.HTTP.Method)
		}
		pu.HTTPMethod = m
		pu.HTTPPath = v.path(at(hb, "path"), rp.HTTP.Path, true)
	}
	return pu
}

// purgeCommand renders a purge command, which must pass the as-of time in an
// argument.
func (v *validator) purgeCommand(pb []any, command []string) []string {
	var out []string
	hasAsOf := false
	for i, a := range command {
		if i == 0 && a == "" {
			v.fail(at(pb, "command", 0), "the program must not be empty")
		}
		// {{.AsOf}} is filled per purge, not at load: shield it from rendering.
		const shield = "\x00asof\x00"
		r, _ := v.render(at(pb, "command", i), strings.ReplaceAll(a, AsOfPlaceholder, shield))
		r = strings.ReplaceAll(r, shield, AsOfPlaceholder)
		if i == 0 {
			r = ResolveProgram(v.opts.baseDir, r)
		}
		hasAsOf = hasAsOf || strings.Contains(r, AsOfPlaceholder)
		out = append(out, r)
	}
	if !hasAsOf {
		v.fail(at(pb, "command"), "must pass the as-of time: put %s in an argument", AsOfPlaceholder)
	}
	return out
}
