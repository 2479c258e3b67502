package mysqlref

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/reference/signature"
)

// DefaultSource is the event key's source of an endpoint that sets none.
const DefaultSource = "stripe"

// Column bounds of the schema: longer values are refused with a 400 (or at
// start, for configuration) rather than failing the INSERT on every retry.
const (
	maxSourceLen  = 64
	maxAccountLen = 255
	maxIDLen      = 255
	maxTypeLen    = 255
	maxStatusLen  = 64
	maxCurrency   = 16
)

// Endpoint is one Stripe endpoint: the account its events belong to comes from
// here, never from the body.
type Endpoint struct {
	// Source is the event key's source (default "stripe"); a test-mode
	// endpoint of one account would say "stripe-test".
	Source  string `yaml:"source,omitempty"`
	Account string `yaml:"account"`
	Path    string `yaml:"path"`
	// Secret is the endpoint's signing secret (whsec_…).
	Secret string `yaml:"secret"`
}

// KeySource is the endpoint's source in the event key.
func (e Endpoint) KeySource() string {
	if e.Source == "" {
		return DefaultSource
	}
	return e.Source
}

// Config is the receiver's endpoints file.
type Config struct {
	Endpoints []Endpoint `yaml:"endpoints"`
}

// DefaultEndpoints are served when no config is given, with the PostgreSQL
// reference's public TEST secrets: whsec_test_secret is stripe-go's
// (webhook/client_test.go); acct_B's is hookcert's own test value.
func DefaultEndpoints() []Endpoint {
	return []Endpoint{
		{Account: "acct_A", Path: "/webhooks/stripe/acct_A", Secret: "whsec_test_secret"},
		{Account: "acct_B", Path: "/webhooks/stripe/acct_B", Secret: "whsec_test_secret_acct_B"},
	}
}

// LoadConfig reads an endpoints file (YAML, unknown fields refused) and
// validates it.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := ValidateEndpoints(cfg.Endpoints); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ValidateEndpoints checks each endpoint, naming it by its index and field;
// no message quotes a secret.
func ValidateEndpoints(eps []Endpoint) error {
	if len(eps) == 0 {
		return errors.New("endpoints: at least one is required")
	}
	paths := map[string]bool{}
	for i, e := range eps {
		at := fmt.Sprintf("endpoints[%d]", i)
		switch {
		case e.Account == "" || len(e.Account) > maxAccountLen || strings.ContainsAny(e.Account, " \t\r\n"):
			return fmt.Errorf("%s.account: required, without whitespace, at most %d bytes", at, maxAccountLen)
		case !strings.HasPrefix(e.Path, "/"):
			return fmt.Errorf("%s.path: must start with /", at)
		case paths[e.Path]:
			return fmt.Errorf("%s.path: %s is served by an earlier endpoint", at, e.Path)
		case len(e.KeySource()) > maxSourceLen:
			return fmt.Errorf("%s.source: at most %d bytes", at, maxSourceLen)
		}
		if err := signature.ValidateSecret(signature.ProfileStripe, e.Secret); err != nil {
			return fmt.Errorf("%s.secret: %w", at, err)
		}
		paths[e.Path] = true
	}
	return nil
}
