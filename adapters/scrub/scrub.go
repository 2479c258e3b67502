package scrub

import (
	"encoding/json"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// Redacted replaces every secret value.
const Redacted = "[REDACTED]"

// keyPatterns are secret formats scrubbed even when nobody listed the value. The
// prefix stays so a reader still sees which kind of value was there.
var keyPatterns = []struct {
	marker string // a substring every match contains: most text has none, and a substring test is far cheaper than a regexp
	re     *regexp.Regexp
}{
	// Standard Webhooks / Svix / Stripe signing secrets are "whsec_" + base64 or
	// alphanumerics; asymmetric Standard Webhooks secret keys are "whsk_" + base64
	// (../shared/providers.yaml, standard-webhooks.secret_format).
	{"whsec_", regexp.MustCompile(`(whsec_)[A-Za-z0-9+/=_\-]{4,}`)},
	{"whsk_", regexp.MustCompile(`(whsk_)[A-Za-z0-9+/=_\-]{4,}`)},
	// Stripe secret and restricted API keys (sk_live_…, sk_test_…, rk_live_…, rk_test_…).
	{"k_live_", regexp.MustCompile(`\b([sr]k_live_)[A-Za-z0-9]{8,}`)},
	{"k_test_", regexp.MustCompile(`\b([sr]k_test_)[A-Za-z0-9]{8,}`)},
	// Shopify app secrets and access tokens (shpss_, shpat_, shpca_, shppa_ + hex).
	{"shp", regexp.MustCompile(`\b(shp(?:ss|at|ca|pa)_)[A-Fa-f0-9]{16,}`)},
	// GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_).
	{"gh", regexp.MustCompile(`\b(gh[pousr]_)[A-Za-z0-9]{20,}`)},
	{"github_pat_", regexp.MustCompile(`\b(github_pat_)[A-Za-z0-9_]{20,}`)},
}

var (
	// urlRE finds URL-shaped tokens in free text; each is parsed and, when it has
	// a password, replaced by its url.URL.Redacted form.
	urlRE = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.\\-]*://[^\\s\"'<>`]+")
	// userinfoRE is the fallback for a token url.Parse rejects: the password in
	// scheme://user:password@.
	userinfoRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*):[^\s/]*@`)
	// kvPasswordRE is the password of a libpq keyword/value connection string
	// (password=..., password='...'), and of PGPASSWORD=..., DB_PASSWORD=....
	// A password= right after ? or & is a URL's query parameter, left to the URL
	// rule (its value ends at &, not at a space).
	kvPasswordRE = regexp.MustCompile(`(?i)(^|[^?&])(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s']+)`)
	// queryPasswordRE is a password query parameter of a URL url.Parse rejects.
	queryPasswordRE = regexp.MustCompile(`(?i)([?&]password=)[^&#\s]*`)
	// jsonPasswordRE is a password in JSON: "password":"..." (also "db_password").
	jsonPasswordRE = regexp.MustCompile(`(?i)("[a-z_]*password"\s*:\s*")(?:[^"\\]|\\.)*"`)
)

// Scrubber replaces a run's secrets and well-known secret patterns in text. The
// zero value scrubs patterns only. It is safe for concurrent use.
type Scrubber struct {
	secrets []string // longest first, so a secret containing another is removed whole
}

// New returns a Scrubber for the given secrets (empty values are ignored). Besides
// each value it removes the forms the value takes once encoded: URL query and path
// escaping, JSON string escaping, and a whsec_ secret without its prefix.
func New(secrets ...string) *Scrubber {
	s := &Scrubber{}
	seen := map[string]bool{}
	add := func(v string) {
		if v != "" && !seen[v] {
			seen[v] = true
			s.secrets = append(s.secrets, v)
		}
	}
	for _, v := range secrets {
		if v == "" {
			continue
		}
		add(v)
		add(url.QueryEscape(v))
		add(url.PathEscape(v))
		if b, err := json.Marshal(v); err == nil {
			add(string(b[1 : len(b)-1]))
		}
		// Standard Webhooks libraries also accept the secret without its prefix
		// (../shared/providers.yaml, standard-webhooks test vector note), so the bare
		// base64 part may show up in a receiver's error text too.
		if rest, ok := strings.CutPrefix(v, "whsec_"); ok && len(rest) >= 8 {
			add(rest)
		}
	}
	sort.SliceStable(s.secrets, func(i, j int) bool { return len(s.secrets[i]) > len(s.secrets[j]) })
	return s
}

// String returns v with every secret and secret pattern replaced by Redacted.
func (s *Scrubber) String(v string) string {
	if s != nil {
		for _, sec := range s.secrets {
			if strings.Contains(v, sec) {
				v = strings.ReplaceAll(v, sec, Redacted)
			}
		}
	}
	for _, p := range keyPatterns {
		if strings.Contains(v, p.marker) {
			v = p.re.ReplaceAllString(v, "${1}"+Redacted)
		}
	}
	if strings.Contains(v, "://") {
		v = urlRE.ReplaceAllStringFunc(v, redactURL)
	}
	if containsFold(v, "password") {
		v = kvPasswordRE.ReplaceAllString(v, "${1}${2}"+Redacted)
		v = jsonPasswordRE.ReplaceAllString(v, "${1}"+Redacted+`"`)
	}
	return v
}

// Strings scrubs each element into a new slice.
func (s *Scrubber) Strings(vs []string) []string {
	if vs == nil {
		return nil
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = s.String(v)
	}
	return out
}

// Error returns err with a scrubbed message, nil for nil, and err itself when its
// message carries nothing to scrub. The original stays in the chain (errors.Is
// and errors.As see it); only its message is hidden.
func (s *Scrubber) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := s.String(msg)
	if clean == msg {
		return err
	}
	return &scrubbed{msg: clean, err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// String scrubs v of the given secrets and of secret patterns.
func String(v string, secrets ...string) string { return New(secrets...).String(v) }

// URL returns u with its password (userinfo or a password query parameter)
// replaced by Redacted; a u that does not parse as a URL is scrubbed as text.
func URL(u string) string { return redactURL(u) }

// Password returns the password a URL or keyword/value connection string carries
// ("" when none), so a caller can add it to a Scrubber's secrets: a driver may
// quote it in an error without the URL around it.
func Password(dsn string) string {
	if p, err := url.Parse(dsn); err == nil && p.Scheme != "" {
		if p.User != nil {
			if pw, ok := p.User.Password(); ok {
				return pw
			}
		}
		return p.Query().Get("password")
	}
	if m := kvPasswordRE.FindStringSubmatch(dsn); m != nil {
		pw := m[3]
		if len(pw) >= 2 && pw[0] == '\'' && pw[len(pw)-1] == '\'' {
			pw = strings.ReplaceAll(strings.ReplaceAll(pw[1:len(pw)-1], `\'`, `'`), `\\`, `\`)
		}
		return pw
	}
	return ""
}

// redactURL redacts one URL-shaped token with url.URL.Redacted, which replaces the
// userinfo password; a password query parameter (libpq accepts one) goes too.
func redactURL(tok string) string {
	p, err := url.Parse(tok)
	if err != nil || p.Opaque != "" {
		// Unparseable (a stray % escape, a truncated line): fall back to the
		// userinfo shape, and hide the whole query if it names a password.
		tok = userinfoRE.ReplaceAllString(tok, "${1}:"+Redacted+"@")
		return queryPasswordRE.ReplaceAllString(tok, "${1}"+Redacted)
	}
	if p.User != nil {
		if pw, has := p.User.Password(); has && pw != Redacted {
			// Redacted writes "xxxxx"; the marker is made the one every other
			// path prints, so a reader looks for one string.
			tok = strings.Replace(p.Redacted(), ":xxxxx@", ":"+Redacted+"@", 1)
		}
	}
	if p.Query().Has("password") {
		// Rewritten in place, not re-encoded: the other parameters keep their order.
		tok = queryPasswordRE.ReplaceAllString(tok, "${1}"+Redacted)
	}
	return tok
}

// containsFold reports whether s contains the lower-case ASCII word, in any case.
func containsFold(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		if c := s[i] | 0x20; c == word[0] && strings.EqualFold(s[i:i+len(word)], word) {
			return true
		}
	}
	return false
}
