package reference

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/reference/signature"
)

// Endpoint is one delivery URL of the receiver. The event key's source and account
// are taken from here, never from the request body.
type Endpoint struct {
	// Profile is the provider contract used to verify and read deliveries
	// (one of signature.Supported()).
	Profile string `yaml:"profile" json:"profile"`
	// Source is the key's source; defaults to Profile. Set it to tell test from
	// live traffic of one provider (e.g. "stripe-test").
	Source string `yaml:"source,omitempty" json:"source,omitempty"`
	// Account is the account scope of every event delivered here.
	Account string `yaml:"account" json:"account"`
	// Path is the URL path, e.g. /webhooks/stripe/acct_A.
	Path string `yaml:"path" json:"path"`
	// Secret is the signing secret in the provider's format. Never logged.
	Secret string `yaml:"secret,omitempty" json:"-"`
	// SecretEnv names an environment variable holding the secret instead.
	SecretEnv string `yaml:"secret_env,omitempty" json:"secret_env,omitempty"`
	// KeyTTL is how long event keys are kept (0: DefaultKeyTTL of the profile,
	// which covers its redelivery horizon). See Retention.
	KeyTTL Duration `yaml:"key_ttl,omitempty" json:"key_ttl,omitempty"`
	// PayloadTTL is how long stored payloads are kept (0: DefaultPayloadTTL).
	PayloadTTL Duration `yaml:"payload_ttl,omitempty" json:"payload_ttl,omitempty"`
	// AllowShortKeyTTL lets KeyTTL be shorter than the profile's redelivery
	// horizon (logged loudly at start); otherwise such a config is refused.
	AllowShortKeyTTL bool `yaml:"allow_short_key_ttl,omitempty" json:"allow_short_key_ttl,omitempty"`
}

// KeySource returns the source recorded in the event key.
func (e Endpoint) KeySource() string {
	if e.Source != "" {
		return e.Source
	}
	return e.Profile
}

// Config is the receiver's endpoints file.
type Config struct {
	Endpoints []Endpoint `yaml:"endpoints"`
}

// DefaultEndpoints is the endpoint set used without a config file. The secrets are
// public TEST secrets taken from providers' documentation and library tests (sources
// beside each value); they are printed at start on purpose and must never guard
// real traffic.
func DefaultEndpoints() []Endpoint {
	// whsec_test_secret: stripe-go webhook/client_test.go (providers.yaml stripe.test_vectors).
	const stripeSecret = "whsec_test_secret"
	// Standard Webhooks Go/JS library test secret (standard-webhooks libraries/go/webhook_test.go,
	// providers.yaml standard_webhooks.test_vectors[0]); Svix uses the same format.
	const swSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	return []Endpoint{
		{Profile: "stripe", Account: "acct_A", Path: "/webhooks/stripe/acct_A", Secret: stripeSecret},
		// A second account with its own secret (hookcert's own test value; Stripe
		// secrets are arbitrary strings used as the HMAC key, docs.stripe.com/webhooks).
		{Profile: "stripe", Account: "acct_B", Path: "/webhooks/stripe/acct_B", Secret: "whsec_test_secret_acct_B"},
		{Profile: "standard-webhooks", Account: "acct_A", Path: "/webhooks/standard-webhooks/acct_A", Secret: swSecret},
		// "It's a Secret to Everybody": GitHub docs, validating-webhook-deliveries test values.
		{Profile: "github", Account: "acct_A", Path: "/webhooks/github/acct_A", Secret: "It's a Secret to Everybody"},
		// shpss_test_secret: providers.yaml shopify.test_vectors (derived, not published).
		{Profile: "shopify", Account: "acct_A", Path: "/webhooks/shopify/acct_A", Secret: "shpss_test_secret"},
		{Profile: "svix", Account: "acct_A", Path: "/webhooks/svix/acct_A", Secret: swSecret},
		// The Slack signing-secret doc example (python-slack-sdk test_signature_verifier.py,
		// providers.yaml slack_events.test_vectors).
		{Profile: "slack", Account: "acct_A", Path: "/webhooks/slack/acct_A", Secret: "8f742231b10e8888abcd99yyyzzz85a5"},
	}
}

// LoadConfig reads and validates an endpoints YAML file. Unknown fields are errors.
func LoadConfig(path string) (Config, error) {
	return LoadConfigWithDefects(path, nil)
}

// LoadConfigWithDefects is LoadConfig for a receiver started with defects: under
// no-ttl-floor a key TTL below the provider's redelivery horizon is accepted.
func LoadConfigWithDefects(path string, defects []string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	cfg, err := ParseConfigWithDefects(data, defects)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig decodes and validates an endpoints YAML document, resolving
// secret_env references from the environment.
func ParseConfig(data []byte) (Config, error) {
	return ParseConfigWithDefects(data, nil)
}

// ParseConfigWithDefects is ParseConfig for a receiver started with defects (see
// LoadConfigWithDefects).
func ParseConfigWithDefects(data []byte, defects []string) (Config, error) {
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("parse: %w", err)
	}
	for i := range cfg.Endpoints {
		if env := cfg.Endpoints[i].SecretEnv; env != "" && cfg.Endpoints[i].Secret == "" {
			cfg.Endpoints[i].Secret = os.Getenv(env)
			if cfg.Endpoints[i].Secret == "" {
				return Config{}, fmt.Errorf("endpoints[%d].secret_env: environment variable %s is empty or unset", i, env)
			}
		}
	}
	if err := ValidateEndpointsWithDefects(cfg.Endpoints, defects); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// reservedPaths are served by the receiver itself.
var reservedPaths = []string{"/healthz", "/metrics", "/_hookcert/"}

// ValidateEndpoints checks an endpoint list; errors name the field path and rule,
// e.g. "endpoints[2].secret: required". Secrets never appear in errors.
func ValidateEndpoints(eps []Endpoint) error {
	return ValidateEndpointsWithDefects(eps, nil)
}

// ValidateEndpointsWithDefects is ValidateEndpoints for a receiver started with
// defects: no-ttl-floor drops the check of key TTLs against the provider's
// redelivery horizon.
func ValidateEndpointsWithDefects(eps []Endpoint, defects []string) error {
	floor := true
	for _, d := range defects {
		if d == DefectNoTTLFloor {
			floor = false
		}
	}
	if len(eps) == 0 {
		return errors.New("endpoints: at least one endpoint required")
	}
	supported := signature.Supported()
	paths := map[string]int{}
	scopes := map[[2]string]int{}
	var errs []error
	for i, e := range eps {
		f := func(field, format string, args ...any) {
			errs = append(errs, fmt.Errorf("endpoints[%d].%s: %s", i, field, fmt.Sprintf(format, args...)))
		}
		switch {
		case e.Profile == "":
			f("profile", "required (one of %s)", strings.Join(supported, ", "))
		case !contains(supported, e.Profile):
			f("profile", "unknown profile %q (valid: %s)", e.Profile, strings.Join(supported, ", "))
		}
		if e.Account == "" {
			f("account", "required")
		} else if strings.TrimSpace(e.Account) != e.Account || strings.ContainsAny(e.Account, " \t\r\n") {
			f("account", "must not contain whitespace")
		}
		if e.Source != "" && strings.ContainsAny(e.Source, " \t\r\n") {
			f("source", "must not contain whitespace")
		}
		switch {
		case e.Path == "":
			f("path", "required")
		case !strings.HasPrefix(e.Path, "/"):
			f("path", "must start with /")
		default:
			for _, r := range reservedPaths {
				if e.Path == strings.TrimSuffix(r, "/") || strings.HasPrefix(e.Path, r) {
					f("path", "%s is reserved by the receiver", r)
				}
			}
			if j, dup := paths[e.Path]; dup {
				f("path", "duplicate of endpoints[%d].path", j)
			} else {
				paths[e.Path] = i
			}
		}
		if e.Secret == "" {
			f("secret", "required (or secret_env naming a set environment variable)")
		} else if contains(supported, e.Profile) {
			if err := signature.ValidateSecret(e.Profile, e.Secret); err != nil {
				var se *signature.Error
				if errors.As(err, &se) {
					f("secret", "%s", se.Detail) // names the rule, never the secret
				} else {
					f("secret", "invalid for profile %s", e.Profile)
				}
			}
		}
		if e.Secret != "" && e.SecretEnv != "" && e.Secret != os.Getenv(e.SecretEnv) {
			f("secret", "set only one of secret and secret_env")
		}
		if contains(supported, e.Profile) {
			validateRetention(e, floor, f)
		}
		// Two endpoints with one (source, account) would share one key space, which
		// is allowed (e.g. secret rotation to a new URL) but a likely mistake if the
		// profiles differ.
		scope := [2]string{e.KeySource(), e.Account}
		if j, dup := scopes[scope]; dup && eps[j].Profile != e.Profile {
			f("source", "endpoints[%d] has the same source %q and account with another profile", j, e.KeySource())
		} else if !dup {
			scopes[scope] = i
		}
	}
	return errors.Join(errs...)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
