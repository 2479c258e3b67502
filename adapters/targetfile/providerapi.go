package targetfile

import "os"

// rawProviderAPI is target.provider_api: the API key the receiver must send
// to the harness's provider API, inline or from the harness's environment.
type rawProviderAPI struct {
	Key    string `yaml:"key"`
	KeyEnv string `yaml:"key_env"`
}

// ProviderAPISpec is the declared provider API.
type ProviderAPISpec struct {
	// Key is the API key every call must carry (Stripe: a Bearer token or the
	// basic auth user name; GitHub: Bearer or token; Shopify:
	// X-Shopify-Access-Token); a call without it answers 401.
	Key Secret
}

// providerAPI checks target.provider_api: exactly one of key and key_env.
func (v *validator) providerAPI(t *Target, rp *rawProviderAPI) {
	if rp == nil {
		if v.used["ProviderAPIURL"] {
			v.fail([]any{"target", "provider_api"}, "required when the receiver is given {{.ProviderAPIURL}}: the API key the receiver sends (key or key_env)")
		}
		return
	}
	p := []any{"target", "provider_api"}
	switch {
	case rp.Key != "" && rp.KeyEnv != "":
		v.fail(at(p, "key"), "set only one of key and key_env")
	case rp.Key != "":
		t.ProviderAPI = &ProviderAPISpec{Key: NewSecret(rp.Key)}
	case rp.KeyEnv != "":
		if !envNameRE.MatchString(rp.KeyEnv) {
			v.fail(at(p, "key_env"), "must be an environment variable name (got %q)", rp.KeyEnv)
		} else if val, ok := os.LookupEnv(rp.KeyEnv); !ok || val == "" {
			v.fail(at(p, "key_env"), "environment variable %s is not set or empty", rp.KeyEnv)
		} else {
			t.ProviderAPI = &ProviderAPISpec{Key: NewSecret(val)}
		}
	default:
		v.fail(at(p, "key"), "required (or key_env): the API key the receiver sends to the provider API")
	}
}

// refetchNeeds: a refetching receiver needs the API's key and its URL.
func (v *validator) refetchNeeds(p []any, rt *rawTarget) string {
	if rt.ProviderAPI == nil {
		return "target.provider_api"
	}
	if !v.used["ProviderAPIURL"] {
		v.fail(p, "capability %q needs the receiver to be given {{.ProviderAPIURL}} (in target.lifecycle.command or target.lifecycle.env), where the harness's provider API listens", Refetch)
	}
	return ""
}
