package targetfile

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestProviderAPIContract: capability refetch needs target.provider_api and
// the receiver given {{.ProviderAPIURL}}; the key is one of key and key_env,
// is a secret, and bad values name the field and the rule.
func TestProviderAPIContract(t *testing.T) {
	base := `target:
  name: t
  base_url: http://{{.ListenAddr}}
  endpoints: [{profile: stripe, account: a, path: /w, secret: whsec_x}]
  lifecycle: {command: [rx, "%s"], ready: {http: /healthz}}
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries: {event_rows: "SELECT 1 WHERE $3 <> ''", effects: "SELECT 1 WHERE $3 <> ''"}
%s  capabilities: [refetch]
`
	t.Setenv("HOOKCERT_TEST_API_KEY", "sk_test_fromenv_0123456789")
	t.Setenv("HOOKCERT_TEST_EMPTY", "")
	cases := []struct{ arg, extra, want string }{
		{"{{.ProviderAPIURL}}", "", `target.provider_api: required when the receiver is given {{.ProviderAPIURL}}`},
		{"x", "", `target.capabilities[0]: capability "refetch" needs target.provider_api, which is missing`},
		{"x", "  provider_api: {key: sk_test_x}\n", `needs the receiver to be given {{.ProviderAPIURL}}`},
		{"{{.ProviderAPIURL}}", "  provider_api: {}\n", `target.provider_api.key: required (or key_env)`},
		{"{{.ProviderAPIURL}}", "  provider_api: {key: a, key_env: B}\n", `target.provider_api.key: set only one of key and key_env`},
		{"{{.ProviderAPIURL}}", "  provider_api: {key_env: 1B}\n", `target.provider_api.key_env: must be an environment variable name`},
		{"{{.ProviderAPIURL}}", "  provider_api: {key_env: HOOKCERT_TEST_EMPTY}\n", `target.provider_api.key_env: environment variable HOOKCERT_TEST_EMPTY is not set or empty`},
		{"{{.ProviderAPIURL}}", "  provider_api: {kee: x}\n", `target.provider_api.kee`},
	}
	for _, c := range cases {
		_, err := Parse([]byte(fmt.Sprintf(base, c.arg, c.extra)), testVars)
		if err == nil || !strings.Contains(regexp.MustCompile(` \(line \d+\)`).ReplaceAllString(err.Error(), ""), c.want) {
			t.Errorf("%q / %q: err = %v, want it to contain %q", c.arg, c.extra, err, c.want)
		}
	}
	vars := testVars
	vars.ProviderAPIURL = "http://127.0.0.1:18090"
	tg, err := Parse([]byte(fmt.Sprintf(base, "{{.ProviderAPIURL}}", "  provider_api: {key_env: HOOKCERT_TEST_API_KEY}\n")), vars)
	if err != nil {
		t.Fatal(err)
	}
	if !tg.Has(Refetch) || tg.ProviderAPI == nil || tg.ProviderAPI.Key.Reveal() != "sk_test_fromenv_0123456789" || tg.Lifecycle.Command[1] != vars.ProviderAPIURL || !tg.Uses("ProviderAPIURL") {
		t.Errorf("parsed %+v %v", tg.ProviderAPI, tg.Lifecycle.Command)
	}
	if !slices.Contains(tg.Secrets(), "sk_test_fromenv_0123456789") {
		t.Error("the API key is not among the target's secrets: it would not be scrubbed")
	}
	if s := fmt.Sprint(tg.ProviderAPI); strings.Contains(s, "fromenv") {
		t.Errorf("the API key prints: %s", s)
	}
}

// TestRefetchExampleLoads keeps the refetching example honest: its target
// file loads, declares refetch, and gives the receiver the API's URL and key.
func TestRefetchExampleLoads(t *testing.T) {
	t.Setenv("REFETCH_WEBHOOK_SECRET", "whsec_test_refetch_example")
	t.Setenv("REFETCH_STRIPE_API_KEY", "sk_test_refetch_example")
	vars := testVars
	vars.ProviderAPIURL = "http://127.0.0.1:18090"
	tg, err := Load("../../examples/refetch-receiver/target.yaml", vars)
	if err != nil {
		t.Fatal(err)
	}
	if !tg.Has(Refetch) || tg.ProviderAPI == nil || tg.ProviderAPI.Key.Reveal() != "sk_test_refetch_example" ||
		tg.Lifecycle.Env["STRIPE_API_BASE"] != vars.ProviderAPIURL || tg.Lifecycle.Env["STRIPE_API_KEY"] != "sk_test_refetch_example" {
		t.Errorf("refetch example: capabilities %v, provider_api %v, env names %d", tg.Capabilities, tg.ProviderAPI != nil, len(tg.Lifecycle.Env))
	}
}
