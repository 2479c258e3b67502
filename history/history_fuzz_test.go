package history

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzReadJSONL: the history reader takes files from outside (a stored run
// handed to `hookcert check`). Whatever it is given, it returns a history or an
// error naming the line, never panics, and a history it accepts survives a write
// and a second read unchanged.
func FuzzReadJSONL(f *testing.F) {
	h := &History{
		Meta:         Meta{RunID: "r1", Seed: 7, Profile: "stripe", TimeScale: 3600, Started: time.Unix(1700000000, 0).UTC()},
		Scenarios:    []Scenario{{Index: 1, Guarantee: "DEDUP-1", Name: "x", State: ScenarioRan, Facts: map[string]string{"a": "b"}}},
		Attempts:     []Attempt{{Scenario: 1, Role: "copy", Attempt: 1, Outcome: OutcomeAcknowledged, Status: 200}},
		Releases:     []Release{{Scenario: 1, Copies: 16, Released: 16}},
		Observations: []Observation{{Scenario: 1, Query: "event_rows", Params: []string{"s", "a", "e", ""}, Phase: "after", Found: true, Count: 1}},
		APICalls:     []APICall{{Scenario: 1, Seq: 1, Method: "GET", Path: "/v1/customers/cus_1", Provider: "stripe", Object: "cus_1", Status: 429, Fault: "429"}},
	}
	var good bytes.Buffer
	if err := h.WriteJSONL(&good); err != nil {
		f.Fatal(err)
	}
	f.Add(good.Bytes())
	f.Add([]byte(`{"kind":"meta","meta":{"schema":"hookcert.history/v9"}}`))
	f.Add([]byte(`{"kind":"attempt"}`))
	f.Add([]byte("{\"kind\":\"meta\",\"meta\":{}}\n{\"kind\":\"observation\",\"observation\":{\"count\":1e400}}"))
	f.Add([]byte(strings.Repeat("{", 10000)))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ReadJSONL(bytes.NewReader(b))
		if err != nil {
			if !strings.Contains(err.Error(), "history") {
				t.Fatalf("error does not say what it read: %v", err)
			}
			return
		}
		var again bytes.Buffer
		if err := h.WriteJSONL(&again); err != nil {
			t.Fatalf("write back: %v", err)
		}
		h2, err := ReadJSONL(&again)
		if err != nil {
			t.Fatalf("a history it accepted does not read back: %v", err)
		}
		if !reflect.DeepEqual(normalize(h), normalize(h2)) {
			t.Fatalf("round trip changed the history:\n%+v\n%+v", h, h2)
		}
	})
}

// normalize makes nil and empty slices and maps compare equal.
func normalize(h *History) *History {
	c := *h
	if len(c.Scenarios) == 0 {
		c.Scenarios = nil
	}
	for i := range c.Scenarios {
		if len(c.Scenarios[i].Facts) == 0 {
			c.Scenarios[i].Facts = nil
		}
		if len(c.Scenarios[i].Notes) == 0 {
			c.Scenarios[i].Notes = nil
		}
	}
	if len(c.Attempts) == 0 {
		c.Attempts = nil
	}
	for i := range c.Attempts {
		if len(c.Attempts[i].Faults) == 0 {
			c.Attempts[i].Faults = nil
		}
	}
	if len(c.Releases) == 0 {
		c.Releases = nil
	}
	if len(c.Observations) == 0 {
		c.Observations = nil
	}
	for i := range c.Observations {
		if len(c.Observations[i].Params) == 0 {
			c.Observations[i].Params = nil
		}
	}
	if len(c.Meta.Run) == 0 {
		c.Meta.Run = nil
	} else {
		// Written back compacted: compare the JSON, not its spacing.
		var b bytes.Buffer
		if json.Compact(&b, c.Meta.Run) == nil {
			c.Meta.Run = b.Bytes()
		}
	}
	return &c
}
