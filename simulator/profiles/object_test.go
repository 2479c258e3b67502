package profiles

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// declaredObject has whitespace, a nested value, an HTML-escapable character
// and keys out of order: verbatim placement must keep every byte.
const declaredObject = `{ "zeta": 1, "charge": {"id": "ch_9", "amount": 4200}, "note": "a<b & c", "alpha": [true, null] }`

// valueAt walks a "$.a.b" path through decoded JSON.
func valueAt(t *testing.T, body []byte, path string) json.RawMessage {
	t.Helper()
	cur := json.RawMessage(body)
	if path == "$" {
		return cur
	}
	for _, k := range strings.Split(strings.TrimPrefix(path, "$."), ".") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(cur, &m); err != nil {
			t.Fatalf("%s: at %q: %v\n%s", path, k, err, body)
		}
		v, ok := m[k]
		if !ok {
			t.Fatalf("%s: %q missing in\n%s", path, k, body)
		}
		cur = v
	}
	return cur
}

func TestDeclaredObjectPlacedVerbatim(t *testing.T) {
	for _, p := range goProfiles() {
		t.Run(p.ID(), func(t *testing.T) {
			ev := testEvent(p.ID())
			ev.Object = json.RawMessage(declaredObject)
			sec := []string{secretFor(t, p.ID(), 3)}
			at := Attempt{N: 1, DeliveryID: "d1", SignedAt: time.Unix(1700000000, 0)}
			f := p.Facts()
			if strings.HasPrefix(p.ID(), "adyen") {
				ev.ID = ""
				_, _, err := Render(p, ev, at, sec)
				if err == nil || !strings.Contains(err.Error(), p.ID()+":") || !strings.Contains(err.Error(), "not supported") {
					t.Fatalf("want an error naming %s and saying declared objects are not supported, got %v", p.ID(), err)
				}
				if f.DeclaredObjectJSONPath != "" {
					t.Fatalf("DeclaredObjectJSONPath %q for a profile without declared objects", f.DeclaredObjectJSONPath)
				}
				return
			}
			body, h, err := Render(p, ev, at, sec)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(body) {
				t.Fatalf("body is not JSON:\n%s", body)
			}
			if got := valueAt(t, body, f.DeclaredObjectJSONPath); !bytes.Equal(got, ev.Object) {
				t.Fatalf("%s holds\n%s\nwant the declared bytes\n%s", f.DeclaredObjectJSONPath, got, ev.Object)
			}
			for _, field := range []string{`"pi_123"`, `1130`, `"eur"`} {
				if bytes.Contains(body, []byte(field)) {
					t.Errorf("built-in object field %s still rendered:\n%s", field, body)
				}
			}
			// The envelope keeps the event's ID and type where the profile puts them.
			if f.EventIDJSONPath != "" {
				if got := valueAt(t, body, f.EventIDJSONPath); string(got) != `"`+ev.ID+`"` {
					t.Errorf("%s = %s, want the event ID", f.EventIDJSONPath, got)
				}
			}
			if f.EventIDHeader != "" && h.Get(f.EventIDHeader) != ev.ID {
				t.Errorf("%s = %q, want the event ID", f.EventIDHeader, h.Get(f.EventIDHeader))
			}
			if wantType := strings.TrimSuffix(ev.Type, ".succeeded"); f.EventTypeHeader != "" && h.Get(f.EventTypeHeader) != ev.Type && !(p.ID() == "github" && h.Get(f.EventTypeHeader) == wantType) {
				t.Errorf("%s = %q, want the event type", f.EventTypeHeader, h.Get(f.EventTypeHeader))
			}
			if err := verifyAsReceiver(p.ID(), body, h, sec[0]); err != nil {
				t.Fatalf("receiver-side verification: %v", err)
			}
			// Without an object ID: it is not rendered, so not required.
			ev.ObjectID = ""
			if _, _, err := Render(p, ev, at, sec); err != nil {
				t.Fatalf("declared object without object ID: %v", err)
			}
		})
	}
}

func TestDeclaredObjectWholeBody(t *testing.T) {
	for _, id := range []string{"github", "shopify"} {
		p, _ := Lookup(id)
		ev := testEvent(id)
		ev.Object = json.RawMessage(declaredObject)
		body, err := p.Body(ev)
		if err != nil {
			t.Fatal(err)
		}
		if string(body) != declaredObject {
			t.Fatalf("%s body\n%s\nwant exactly the object", id, body)
		}
		body[0] = 'X' // the body must not alias the event's bytes
		if ev.Object[0] != '{' {
			t.Fatalf("%s: Body returned the event's own object bytes", id)
		}
	}
}

func TestDeclaredObjectMustBeAJSONObject(t *testing.T) {
	for _, bad := range []string{`[1,2]`, `"s"`, `null`, `{"a":`, ``, `  `, `{"a":1} {"b":2}`} {
		for _, p := range goProfiles() {
			ev := testEvent(p.ID())
			if strings.HasPrefix(p.ID(), "adyen") {
				continue
			}
			ev.Object = json.RawMessage(bad)
			if _, err := p.Body(ev); err == nil || !strings.Contains(err.Error(), "event.object") {
				t.Errorf("%s: object %q: got %v, want an event.object error", p.ID(), bad, err)
			}
		}
	}
	if err := CheckObject([]byte("\n {\"a\": 1}\n")); err != nil {
		t.Fatalf("whitespace around an object: %v", err)
	}
}

// TestNilObjectUnchanged: an empty but non-nil object is a declared object; a
// nil one renders the built-in fields (the oracle tests hold those bytes).
func TestNilObjectUnchanged(t *testing.T) {
	for _, p := range goProfiles() {
		if strings.HasPrefix(p.ID(), "adyen") {
			continue
		}
		ev := testEvent(p.ID())
		a, err := p.Body(ev)
		if err != nil {
			t.Fatal(err)
		}
		ev.Object = json.RawMessage(`{}`)
		b, err := p.Body(ev)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(a, []byte(`"pi_123"`)) || bytes.Contains(b, []byte(`"pi_123"`)) {
			t.Fatalf("%s: nil object\n%s\nempty object\n%s", p.ID(), a, b)
		}
	}
}
