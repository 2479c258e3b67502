package targetfile

import (
	"fmt"
	"log/slog"
	"net/url"
)

// redacted is what every rendering of a Secret prints.
const redacted = "[redacted]"

// Secret holds a signing secret or a credential-bearing URL. Every way of printing
// it (fmt verbs, String, JSON, text, YAML, slog) prints "[redacted]"; only Reveal
// returns the value, so a secret reaches a log only by an explicit, greppable call.
type Secret struct{ v string }

// NewSecret wraps a value.
func NewSecret(v string) Secret { return Secret{v: v} }

// Reveal returns the secret value. Call it only where the value is used (signing,
// connecting), never to print it.
func (s Secret) Reveal() string { return s.v }

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.v == "" }

// String implements fmt.Stringer with a redacted value.
func (s Secret) String() string { return redacted }

// GoString implements fmt.GoStringer (%#v) with a redacted value.
func (s Secret) GoString() string { return "target.Secret{" + redacted + "}" }

// Format implements fmt.Formatter so that every verb (%s, %v, %q, %x, %d...) redacts.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(s.GoString()))
		return
	}
	_, _ = f.Write([]byte(redacted))
}

// MarshalJSON implements json.Marshaler with a redacted value.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText implements encoding.TextMarshaler with a redacted value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// MarshalYAML implements yaml.Marshaler with a redacted value.
func (s Secret) MarshalYAML() (any, error) { return redacted, nil }

// LogValue implements slog.LogValuer with a redacted value.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// Secrets are every secret value the target holds, for the harness to scrub
// from everything it prints or writes: the endpoints' signing secrets, the
// database URL's password and the values {{env}} passed (EnvSecrets).
func (t *Target) Secrets() []string {
	var out []string
	for _, ep := range t.Endpoints {
		out = append(out, ep.Secret.Reveal())
	}
	if u := t.Store.URL.Reveal(); u != "" {
		if pu, err := url.Parse(u); err == nil && pu.User != nil {
			if pw, ok := pu.User.Password(); ok && pw != "" {
				out = append(out, pw)
			}
		}
	}
	if t.ProviderAPI != nil && !t.ProviderAPI.Key.IsZero() {
		out = append(out, t.ProviderAPI.Key.Reveal())
	}
	return append(out, t.EnvSecrets()...)
}

// EnvSecrets are the values {{env}} passed from the harness's environment into
// lifecycle.env (at least 4 characters long): the harness scrubs them from
// everything it prints or writes, as it does the endpoints' secrets.
func (t *Target) EnvSecrets() []string { return append([]string(nil), t.envValues...) }
