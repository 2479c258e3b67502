package targetfile

import (
	"errors"
	"net"
	"net/url"
	"strings"
)

// build validates the whole file and builds the model in one pass; the sections
// are checked in an order where each finds what it depends on already built.
func (v *validator) build(doc *rawDoc) *Target {
	if doc.Target == nil {
		v.fail([]any{"target"}, "required (the file's top-level key)")
		return nil
	}
	rt := doc.Target
	base := []any{"target"}
	t := &Target{Name: rt.Name}
	v.target = t
	// Declared profiles first: endpoints may name them.
	v.declaredProfiles(t, doc.Profiles)
	if v.vars.Port == "" && v.vars.ListenAddr != "" {
		if _, p, err := net.SplitHostPort(v.vars.ListenAddr); err == nil {
			v.vars.Port = p
		}
	}
	if t.Name == "" {
		v.fail(at(base, "name"), "required")
	}

	// base_url first: the rendered value becomes {{.BaseURL}} for the other fields.
	v.baseURL(t, rt.BaseURL)

	v.endpoints(t, rt.Endpoints)
	v.lifecycle(t, rt.Lifecycle)
	v.setup(t, rt.Setup)
	// Before observe: an object-version receiver has no event_rows query.
	v.idempotency(t, rt.Idempotency)
	v.observe(t, rt)
	v.failpoints(t, rt.Failpoints)
	v.retention(t, rt.Retention, rt.Endpoints)
	// Fixtures before events, which name them; events and acceptance after
	// observe, whose query slots they fill.
	v.fixtures(t, rt.Fixtures)
	v.events(t, rt)
	v.objectVersionRules(t, rt)
	v.acceptance(t, rt.Acceptance)
	v.queues(t, rt)
	v.providerAPI(t, rt.ProviderAPI)
	// Capabilities last but for the worker: their needs read what the other
	// sections built (the templates' variables included).
	v.capabilities(t, rt)
	v.kindRules(t, rt)
	if rt.Lifecycle != nil && rt.Lifecycle.Worker != nil && !t.Has(Inbox) && !t.Has(Outbox) {
		v.fail([]any{"target", "lifecycle", "worker"}, "needs capability %q or %q: a worker process applies accepted events or sends outbox messages, and only those checks kill it alone", Inbox, Outbox)
	}
	v.limits(t, rt.Limits)
	return t
}

// baseURL checks target.base_url and sets it, and {{.BaseURL}} when the run
// does not set it, without a trailing slash.
func (v *validator) baseURL(t *Target, raw string) {
	base := []any{"target"}
	if raw == "" {
		v.fail(at(base, "base_url"), "required")
	} else if strings.Contains(raw, ".BaseURL") {
		v.fail(at(base, "base_url"), "cannot use {{.BaseURL}} (it is this field)")
	} else if r, ok := v.render(at(base, "base_url"), raw); ok {
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
}

// failpoints checks target.failpoints: the protocol's path under the base URL.
func (v *validator) failpoints(t *Target, rf *rawFailpoints) {
	if rf == nil {
		return
	}
	p := rf.Path
	if p == "" {
		p = DefaultFailpointsPath
	}
	t.FailpointsPath = v.path([]any{"target", "failpoints", "path"}, p, true)
}

// limits checks target.limits and applies its default.
func (v *validator) limits(t *Target, rl *rawLimits) {
	t.MaxBodyBytes = DefaultMaxBodyBytes
	if rl != nil && rl.MaxBodyBytes != 0 {
		if rl.MaxBodyBytes < 1024 {
			v.fail([]any{"target", "limits", "max_body_bytes"}, "must be at least 1024 (got %d)", rl.MaxBodyBytes)
		} else {
			t.MaxBodyBytes = rl.MaxBodyBytes
		}
	}
}
