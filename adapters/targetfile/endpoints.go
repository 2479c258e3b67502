package targetfile

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// MaxAckTimeout bounds endpoints[].ack_timeout: no provider waits longer
// than a few tens of seconds for an answer.
const MaxAckTimeout = 5 * time.Minute

// endpoints checks target.endpoints: each endpoint's fields, and one endpoint
// per event-key scope and per path.
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
		} else if known := v.opts.profiles; len(known) > 0 && !contains(known, re.Profile) && t.declared[re.Profile] == nil {
			if i, ok := declaredIndex(t.DeclaredProfiles, re.Profile); ok {
				v.fail(at(p, "profile"), "profile %q is declared at profiles[%d], which has errors", re.Profile, i)
			} else {
				v.fail(at(p, "profile"), "unknown profile %q (valid: %s)", re.Profile, strings.Join(t.KnownProfiles(known), ", "))
			}
		}
		if re.Account == "" {
			v.fail(at(p, "account"), "required")
		} else if strings.ContainsAny(re.Account, " \t\n") {
			v.fail(at(p, "account"), "must not contain whitespace")
		}
		e.Path = v.path(at(p, "path"), re.Path, true)
		e.AckTimeout = v.ackTimeout(at(p, "ack_timeout"), re.AckTimeout)
		e.Secret = v.endpointSecret(p, re)
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

// endpointSecret reads an endpoint's signing secret: inline or from the
// harness's environment, exactly one of them.
func (v *validator) endpointSecret(p []any, re rawEndpoint) Secret {
	switch {
	case re.Secret != "" && re.SecretEnv != "":
		v.fail(at(p, "secret"), "set only one of secret and secret_env")
	case re.Secret != "":
		return NewSecret(re.Secret)
	case re.SecretEnv != "":
		if !envNameRE.MatchString(re.SecretEnv) {
			v.fail(at(p, "secret_env"), "must be an environment variable name (got %q)", re.SecretEnv)
		} else if val, ok := os.LookupEnv(re.SecretEnv); !ok || val == "" {
			v.fail(at(p, "secret_env"), "environment variable %s is not set or empty", re.SecretEnv)
		} else {
			return NewSecret(val)
		}
	default:
		v.fail(at(p, "secret"), "required (or secret_env)")
	}
	return Secret{}
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

// CheckProfiles reports endpoints whose profile is not in known (the simulator's
// profile registry, which this package does not import). Parse with WithProfiles
// reports the same beside the file's other errors, with their lines.
func (t *Target) CheckProfiles(known []string) error {
	ok := map[string]bool{}
	for _, k := range known {
		ok[k] = true
	}
	for id := range t.declared {
		ok[id] = true
	}
	sorted := t.KnownProfiles(known)
	var errs []error
	for i, e := range t.Endpoints {
		if !ok[e.Profile] {
			errs = append(errs, &FieldError{Path: fmt.Sprintf("target.endpoints[%d].profile", i),
				Rule: fmt.Sprintf("unknown profile %q (valid: %s)", e.Profile, strings.Join(sorted, ", "))})
		}
	}
	return errors.Join(errs...)
}
