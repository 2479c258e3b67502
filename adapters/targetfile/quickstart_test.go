package targetfile

import (
	"testing"
)

// TestQuickStartLoads keeps the quick start of docs/target.md (the file it
// shows, examples/quickstart/target.yaml) loading with the real loader, and
// as small as it claims: one endpoint, no lifecycle, no capability, the
// effect and unhandled roles. scenarios/selftest's TestQuickStart certifies
// it against the reference receiver.
func TestQuickStartLoads(t *testing.T) {
	t.Setenv("STRIPE_WEBHOOK_SECRET", "whsec_test_secret")
	t.Setenv("DATABASE_URL", "postgres://app:pw@127.0.0.1:5432/webhooks?sslmode=disable")
	tg, err := Load("../../examples/quickstart/target.yaml", Vars{})
	if err != nil {
		t.Fatalf("the quick start does not load: %v", err)
	}
	if len(tg.Endpoints) != 1 || tg.Lifecycle != nil || len(tg.Capabilities) != 0 {
		t.Errorf("the quick start is no longer minimal: %d endpoints, lifecycle %v, capabilities %v", len(tg.Endpoints), tg.Lifecycle != nil, tg.Capabilities)
	}
	if e, ok := tg.Endpoint("stripe", "acct_A"); !ok || e.Secret.Reveal() != "whsec_test_secret" {
		t.Errorf("endpoint stripe/acct_A: %+v, %v", e, ok)
	}
	v := tg.Events
	if v == nil || v.Effect == nil || v.Unhandled == nil || v.Lifecycle != nil || v.Ordered != nil {
		t.Errorf("the quick start declares other roles than effect and unhandled: %+v", v)
	}
	if tg.BaseURL != "http://127.0.0.1:8080" {
		t.Errorf("base_url = %q: the quick start runs against `hookcert reference serve`'s default address", tg.BaseURL)
	}
}
