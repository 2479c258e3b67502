package scenarios

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
	"github.com/hookcert/hookcert/vocab"
)

// recordingAPI is the provider API seen from the session: what it was told.
type recordingAPI struct {
	told  []string
	calls []APICall
}

func (a *recordingAPI) Put(id string, body json.RawMessage, key int64, stale bool) {
	a.told = append(a.told, fmt.Sprintf("put %s %d stale=%v %s", id, key, stale, body))
}
func (a *recordingAPI) Delete(id string, key int64) {
	a.told = append(a.told, fmt.Sprintf("delete %s %d", id, key))
}
func (a *recordingAPI) Fail(id string, fs ...APIFault) {
	a.told = append(a.told, fmt.Sprintf("fail %s %d", id, len(fs)))
}
func (a *recordingAPI) Drain() []APICall {
	out := a.calls
	a.calls = nil
	return out
}

// The session tells the API each event's state: a late event as stale, a
// deletion as a delete, a forged delivery not at all; an event without a
// declared object as the built-in fields.
func TestSessionTellsTheProviderAPI(t *testing.T) {
	api := &recordingAPI{}
	v := vocab.BuiltinVocabulary()
	s := testSession(t, &Env{ProviderAPI: api, Vocab: v})
	ev := profiles.Event{ObjectID: "sub_1", Type: v.Ordered.Type, Version: 3, Status: "v3", Amount: 5, Currency: "usd", Object: json.RawMessage(`{"id":"sub_1"}`)}
	s.apiModel(roleUpdate, ev)
	s.apiModel(roleLate, ev)
	s.apiModel("bad:tamper", ev)
	del := ev
	del.Type, del.Version, del.Object = v.Ordered.Delete.Type, 4, nil
	s.apiModel(roleDelete, del)
	bare := ev
	bare.ObjectID, bare.Object = "sub_2", nil
	s.apiModel(roleUpdate, bare)
	want := []string{
		`put sub_1 3 stale=false {"id":"sub_1"}`,
		`put sub_1 3 stale=true {"id":"sub_1"}`,
		`delete sub_1 4`,
		`put sub_2 3 stale=false {"amount":5,"currency":"usd","id":"sub_2","status":"v3","version":3}`,
	}
	if !slices.Equal(api.told, want) {
		t.Fatalf("the API was told\n%q\nwant\n%q", api.told, want)
	}
}

// Calls are filed under the scenario they were drained for, on the run's clock.
func TestDrainedCallsAreFiledUnderTheScenario(t *testing.T) {
	api := &recordingAPI{}
	s := testSession(t, &Env{ProviderAPI: api})
	at := s.run.start.Add(2 * time.Millisecond)
	api.calls = []APICall{{Seq: 1, At: at, Method: "GET", Path: "/v1/customers/cus_1", Provider: "stripe", Object: "cus_1", Status: 429, Fault: "429"}}
	s.run.drainAPI(4)
	s.run.drainAPI(5) // nothing new
	h := s.run.History()
	if len(h.APICalls) != 1 {
		t.Fatalf("%d calls in the history, want 1", len(h.APICalls))
	}
	c := h.APICalls[0]
	if c.Scenario != 4 || c.AtNS != int64(2*time.Millisecond) || c.Status != 429 || c.Fault != "429" || c.Object != "cus_1" {
		t.Fatalf("filed %+v", c)
	}
}
