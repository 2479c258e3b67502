package profiles

import (
	"strings"
	"testing"
)

// TestRegistryServesContractsWithoutGo: a contract without a Go profile is
// served by the engine, with no other change (IDs, Lookup, NewEventID and
// GenerateSecret work from the data).
func TestRegistryServesContractsWithoutGo(t *testing.T) {
	fx := fixtures(t)
	var extra []Contract
	for _, id := range fixtureIDs(fx) {
		if fx[id].SameAs == "" {
			extra = append(extra, fx[id])
		}
	}
	m, err := buildRegistry([]Profile{newStripe()}, append(Contracts(), extra...))
	if err != nil {
		t.Fatal(err)
	}
	if _, isGo := m["stripe"].(stripeProfile); !isGo {
		t.Error("stripe must stay the Go fast path")
	}
	for _, c := range append(Contracts(), extra...) {
		p, ok := m[c.ID]
		if !ok {
			t.Errorf("%s: not served", c.ID)
			continue
		}
		if c.ID != "stripe" && unwrapContract(p) == nil {
			t.Errorf("%s: not served by the engine", c.ID)
		}
	}
	bad := extra[0]
	bad.Name = ""
	if _, err := buildRegistry(nil, []Contract{bad}); err == nil || !strings.Contains(err.Error(), "name: must not be empty") {
		t.Errorf("a broken contract: %v", err)
	}
}

func TestEmbeddedContracts(t *testing.T) {
	cs := Contracts()
	if len(cs) < len(goBacked) {
		t.Fatalf("%d contracts", len(cs))
	}
	for i, c := range cs {
		if i > 0 && cs[i-1].ID >= c.ID {
			t.Error("Contracts() is not sorted by ID")
		}
		if err := c.Validate("contracts/" + c.ID + ".yaml"); err != nil {
			t.Error(err)
		}
		if got, ok := ContractOf(c.ID); !ok || got.ID != c.ID {
			t.Errorf("ContractOf(%s)", c.ID)
		}
		if _, err := Lookup(c.ID); err != nil {
			t.Errorf("%s is embedded but not served: %v", c.ID, err)
		}
	}
	if _, ok := ContractOf("adyen"); ok {
		t.Error("adyen is Go only")
	}
}

// TestLookupIn: a target file's declared profiles resolve beside the
// built-ins, may build on them with same_as, and may not shadow them.
func TestLookupIn(t *testing.T) {
	fx := fixtures(t)
	declared := []Contract{fx["x-zoom"], fx["x-clerk"]}
	p, err := LookupIn("x-zoom", declared)
	if err != nil || p.ID() != "x-zoom" {
		t.Fatalf("declared: %v", err)
	}
	clerk, err := LookupIn("x-clerk", declared)
	if err != nil {
		t.Fatal(err)
	}
	if f := clerk.Facts(); f.EventIDHeader != "svix-id" || f.Name != "Clerk (Svix's format)" || f.Retry.Source != "providers.yaml clerk.retries (the Svix schedule)" || f.Retry.MaxAttempts != 8 {
		t.Errorf("same_as svix: %+v", f)
	}
	// Clerk signs as Svix does.
	ev := testEvent("x-clerk")
	at := Attempt{N: 1, SignedAt: ev.Created}
	sec := []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	b1, h1, err1 := Render(clerk, ev, at, sec)
	b2, h2, err2 := Render(mustLookup(t, "svix"), ev, at, sec)
	if err1 != nil || err2 != nil || string(b1) != string(b2) || h1.Get("svix-signature") != h2.Get("svix-signature") {
		t.Errorf("clerk and svix differ: %v %v", err1, err2)
	}
	if p, err := LookupIn("stripe", declared); err != nil || p.ID() != "stripe" {
		t.Errorf("built-in beside declared: %v", err)
	}
	if _, err := LookupIn("nope", declared); err == nil || !strings.Contains(err.Error(), "x-zoom") || !strings.Contains(err.Error(), "stripe") {
		t.Errorf("unknown: %v", err)
	}
	shadow := fx["x-zoom"]
	shadow.ID = "stripe"
	if _, err := LookupIn("stripe", []Contract{shadow}); err == nil || !strings.Contains(err.Error(), `profiles[0].id: "stripe" is a built-in profile`) {
		t.Errorf("shadowing: %v", err)
	}
	if _, err := LookupIn("x-zoom", []Contract{fx["x-zoom"], fx["x-zoom"]}); err == nil || !strings.Contains(err.Error(), "declared twice") {
		t.Errorf("duplicate: %v", err)
	}
	broken := fx["x-zoom"]
	broken.Signature.Algorithm = "hmac-md5"
	if err := ValidateDeclared([]Contract{broken}, "target.profiles"); err == nil || !strings.Contains(err.Error(), `target.profiles[0].signature.algorithm: "hmac-md5" is not one of`) {
		t.Errorf("declared rules: %v", err)
	}
	// A same_as chain among declared profiles, and a circle.
	a, b := fx["x-zoom"], Contract{ID: "x-zoom2", SameAs: "x-zoom", Name: "Zoom 2"}
	if _, err := LookupIn("x-zoom2", []Contract{a, b}); err != nil {
		t.Errorf("chain: %v", err)
	}
	c1, c2 := Contract{ID: "x-a", SameAs: "x-b"}, Contract{ID: "x-b", SameAs: "x-a"}
	if err := ValidateDeclared([]Contract{c1, c2}, "profiles"); err == nil || !strings.Contains(err.Error(), "circle") {
		t.Errorf("circle: %v", err)
	}
}

// TestSameAsMerge: fields left empty are the other's; a location is taken
// whole; vectors are not inherited.
func TestSameAsMerge(t *testing.T) {
	svix, _ := ContractOf("svix")
	own := Contract{ID: "x-own", SameAs: "svix", EventType: ContractLocation{JSONPath: "$.data"},
		Delivery: ContractDelivery{Timeout: "30s"}}
	r, err := resolveContract(own, ContractOf)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "x-own" || r.Name != svix.Name || r.EventType.JSONPath != "$.data" || r.EventType.Header != "" ||
		r.Delivery.Timeout != "30s" || r.Delivery.StopHeader != svix.Delivery.StopHeader || len(r.Vectors) != 0 || r.SameAs != "" {
		t.Errorf("merged %+v", r)
	}
	if r.Timestamp == svix.Timestamp {
		t.Error("a merged pointer must not share the other's value")
	}
}
