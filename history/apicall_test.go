package history

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// An api_call line survives the JSON Lines round trip, and one without its
// object is refused with its line number.
func TestAPICallRoundTrip(t *testing.T) {
	h := &History{APICalls: []APICall{{Scenario: 3, Seq: 7, Method: "GET", Path: "/v1/customers/cus_1", Provider: "stripe",
		Object: "cus_1", Status: 429, Fault: "429", AtNS: 12345}, {Seq: 8, Method: "GET", Path: "/v1/customers/cus_1", Status: 200, Key: 3}}}
	var b bytes.Buffer
	if err := h.WriteJSONL(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"kind":"api_call"`) {
		t.Fatalf("no api_call line in %s", b.String())
	}
	got, err := ReadJSONL(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.APICalls, h.APICalls) {
		t.Fatalf("read back %+v, want %+v", got.APICalls, h.APICalls)
	}
	_, err = ReadJSONL(strings.NewReader(`{"kind":"meta","meta":{"seed":1}}` + "\n" + `{"kind":"api_call"}` + "\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2: kind api_call without an api_call object") {
		t.Fatalf("an empty api_call line: %v", err)
	}
}
