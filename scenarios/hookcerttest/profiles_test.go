package hookcerttest

import (
	"strings"
	"testing"

	"github.com/hookcert/hookcert/simulator/profiles"
)

func acmeContract() profiles.Contract {
	c := profiles.Contract{ID: "acme", Name: "Acme", Sources: []string{"acme docs"}}
	c.Body.Envelope = `{"type": {{json .Type}}, "data": {{.Object}}}`
	c.Body.ObjectPath = "$.data"
	c.EventID.Header = "Acme-Event-Id"
	c.EventType.JSONPath = "$.type"
	c.Timestamp = &profiles.ContractTimestamp{Tolerance: "5m", Source: "acme docs"}
	c.Signature = profiles.ContractSignature{Algorithm: "hmac-sha256", Signed: "{{.Timestamp}}:{{.ID}}:{{.Body}}",
		Header: "Acme-Signature", Format: "t={{.Timestamp}},s={{.Signature}}", Source: "acme docs"}
	c.Delivery.Timeout = "10s"
	return c
}

// A Target declares providers as a file does: its endpoints name them, the
// model resolves them, and a broken declaration is named by its Go field.
func TestTargetDeclaresProfiles(t *testing.T) {
	tg := validTarget()
	tg.Profiles = []profiles.Contract{acmeContract()}
	tg.Endpoints = append(tg.Endpoints, Endpoint{Profile: "acme", Account: "acct_A", Path: "/acme", Secret: "acme_secret"})
	model, _, err := tg.check()
	if err != nil {
		t.Fatalf("a target declaring acme was refused: %v", err)
	}
	if p, err := model.LookupProfile("acme"); err != nil || p.Facts().EventIDHeader != "Acme-Event-Id" {
		t.Errorf("LookupProfile(acme) = %v, %v", p, err)
	}

	tg.Profiles[0].Signature.Algorithm = "hmac-md5"
	_, _, err = tg.check()
	if err == nil || !strings.Contains(err.Error(), "Target.Profiles[0].signature.algorithm: ") ||
		!strings.Contains(err.Error(), `Target.Endpoints[1].Profile: profile "acme" is declared at Target.Profiles[0], which has errors`) {
		t.Errorf("error does not name the Go fields: %v", err)
	}
}
