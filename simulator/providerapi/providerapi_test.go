package providerapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

const key = "sk_test_providerapi_0123456789"

func get(t *testing.T, url string, hdr map[string]string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, resp.Header, m
}

func TestNewestVersionWinsAndDeletedIs404(t *testing.T) {
	s, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bearer := map[string]string{"Authorization": "Bearer " + key}
	s.Put("cus_1", json.RawMessage(`{"id":"cus_1","object":"customer","v":1}`), 1, false)
	s.Put("cus_1", json.RawMessage(`{"id":"cus_1","object":"customer","v":3}`), 3, false)
	s.Put("cus_1", json.RawMessage(`{"id":"cus_1","object":"customer","v":2}`), 2, false)
	st, _, m := get(t, s.URL()+"/v1/customers/cus_1", bearer)
	if st != 200 || m["v"] != float64(3) {
		t.Fatalf("GET customer: %d %v, want 200 and version 3 (the newest, not the last put)", st, m)
	}
	// Basic auth with the key as the user name is Stripe's other form.
	if st, _, _ := get(t, s.URL()+"/v1/customers/cus_1", map[string]string{"Authorization": Basic(key)}); st != 200 {
		t.Fatalf("basic auth: %d, want 200", st)
	}
	// Another resource's path does not find it.
	if st, _, _ := get(t, s.URL()+"/v1/charges/cus_1", bearer); st != 404 {
		t.Fatalf("GET charge with a customer's ID: %d, want 404", st)
	}
	s.Delete("cus_1", 4)
	st, _, m = get(t, s.URL()+"/v1/customers/cus_1", bearer)
	e, _ := m["error"].(map[string]any)
	if st != 404 || e["code"] != "resource_missing" || e["type"] != "invalid_request_error" {
		t.Fatalf("deleted: %d %v, want 404 resource_missing", st, m)
	}
	// A stale put after the deletion does not bring it back.
	s.Put("cus_1", json.RawMessage(`{"id":"cus_1","object":"customer","v":2}`), 2, false)
	if st, _, _ := get(t, s.URL()+"/v1/customers/cus_1", bearer); st != 404 {
		t.Fatalf("stale put after delete: %d, want 404", st)
	}
	// An equal key replaces unless the put is stale.
	s.Put("pi_1", json.RawMessage(`{"id":"pi_1","status":"succeeded"}`), 0, false)
	s.Put("pi_1", json.RawMessage(`{"id":"pi_1","status":"processing"}`), 0, true)
	if _, _, m := get(t, s.URL()+"/v1/payment_intents/pi_1", bearer); m["status"] != "succeeded" {
		t.Fatalf("stale put with an equal key replaced the object: %v", m)
	}
	calls := s.Calls("cus_1")
	if len(calls) != 5 || calls[0].Status != 200 || calls[0].Key != 3 || calls[3].Status != 404 {
		t.Fatalf("calls on cus_1: %+v", calls)
	}
}

func TestAuthAndFaults(t *testing.T) {
	s, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Put("42", json.RawMessage(`{"number":42,"state":"open"}`), 0, false)
	url := s.URL() + "/repos/octo/hello/issues/42"
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Authorization": "token " + key + "x"}} {
		st, _, m := get(t, url, h)
		if st != 401 {
			t.Fatalf("auth %v: %d, want 401", h, st)
		}
		if b, _ := json.Marshal(m); strings.Contains(string(b), key) {
			t.Fatalf("the 401 body echoes the key: %s", b)
		}
	}
	tok := map[string]string{"Authorization": "token " + key}
	s.Fail("42", Fault{Status: 429, RetryAfter: 2 * time.Second}, Fault{Status: 503}, Fault{Status: 404}, Fault{Delay: 150 * time.Millisecond})
	st, h, _ := get(t, url, tok)
	if st != 429 || h.Get("Retry-After") != "2" {
		t.Fatalf("fault 1: %d Retry-After %q, want 429 and 2", st, h.Get("Retry-After"))
	}
	if st, _, _ := get(t, url, tok); st != 503 {
		t.Fatalf("fault 2: %d, want 503", st)
	}
	if st, _, m := get(t, url, tok); st != 404 || m["message"] == nil {
		t.Fatalf("fault 3: %d %v, want GitHub's 404", st, m)
	}
	t0 := time.Now()
	if st, _, m := get(t, url, tok); st != 200 || m["state"] != "open" || time.Since(t0) < 150*time.Millisecond {
		t.Fatalf("fault 4: %d %v after %s, want the object after 150ms", st, m, time.Since(t0))
	}
	if st, _, _ := get(t, url, tok); st != 200 {
		t.Fatalf("after the faults: %d, want 200", st)
	}
	// Shopify's route and header.
	s.Put("450789469", json.RawMessage(`{"order":{"id":450789469}}`), 0, false)
	if st, _, _ := get(t, s.URL()+"/admin/api/2024-01/orders/450789469.json", map[string]string{"X-Shopify-Access-Token": key}); st != 200 {
		t.Fatalf("shopify: %d, want 200", st)
	}
	var faults []string
	for _, c := range s.Drain() {
		faults = append(faults, c.Fault)
	}
	if got := strings.Join(faults, ","); got != ",,,429,503,404,slow:150ms,," {
		t.Fatalf("faults recorded: %q", got)
	}
	if len(s.Drain()) != 0 {
		t.Fatal("a second drain returned calls again")
	}
}

func TestConcurrentPutsAndCalls(t *testing.T) {
	s, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for i := int64(1); i <= 20; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			s.Put("sub_1", json.RawMessage(`{"id":"sub_1","object":"subscription","k":`+jsonInt(i)+`}`), i, false)
		}()
		go func() {
			defer wg.Done()
			get(t, s.URL()+"/v1/subscriptions/sub_1", map[string]string{"Authorization": "Bearer " + key})
		}()
	}
	wg.Wait()
	if _, _, m := get(t, s.URL()+"/v1/subscriptions/sub_1", map[string]string{"Authorization": "Bearer " + key}); m["k"] != float64(20) {
		t.Fatalf("after concurrent puts: %v, want key 20", m)
	}
	if n := len(s.Calls("sub_1")); n != 21 {
		t.Fatalf("%d calls recorded, want 21", n)
	}
}

func jsonInt(i int64) string { b, _ := json.Marshal(i); return string(b) }

// GitHub's issue events carry the issue under "issue", fetched by its
// number; Shopify's order webhooks are the order, fetched by its id: both
// answer the newest state, and calls are recorded under the event's object.
func TestRoutesFindObjectsByTheirOwnIDs(t *testing.T) {
	s, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Put("I_kwDO1", json.RawMessage(`{"action":"opened","issue":{"number":1347,"node_id":"I_kwDO1","state":"open"}}`), 0, false)
	s.Put("I_kwDO1", json.RawMessage(`{"action":"closed","issue":{"number":1347,"node_id":"I_kwDO1","state":"closed"}}`), 0, false)
	tok := map[string]string{"Authorization": "Bearer " + key}
	st, _, m := get(t, s.URL()+"/repos/octocat/hello/issues/1347", tok)
	if st != 200 || m["state"] != "closed" || m["action"] != nil {
		t.Fatalf("GitHub issue 1347: %d %v, want the closed issue itself", st, m)
	}
	// A pull request event's top-level number is not its pull request's:
	// only the wrapped object's own field counts.
	s.Put("PR_1", json.RawMessage(`{"action":"opened","number":77,"pull_request":{"node_id":"PR_1"}}`), 0, false)
	if st, _, _ := get(t, s.URL()+"/repos/octocat/hello/pulls/77", tok); st != 404 {
		t.Fatalf("a pull request found by the event's top-level number: %d, want 404", st)
	}
	if st, _, _ := get(t, s.URL()+"/repos/octocat/hello/pulls/1347", tok); st != 404 {
		t.Fatalf("an issue's number as a pull request: %d, want 404", st)
	}
	s.Put("gid_order_1", json.RawMessage(`{"id":450789469,"financial_status":"paid"}`), 0, false)
	st, _, m = get(t, s.URL()+"/admin/api/2024-01/orders/450789469.json", map[string]string{"X-Shopify-Access-Token": key})
	if st != 200 || m["financial_status"] != "paid" {
		t.Fatalf("Shopify order: %d %v", st, m)
	}
	s.Delete("I_kwDO1", 0)
	if st, _, _ := get(t, s.URL()+"/repos/octocat/hello/issues/1347", tok); st != 404 {
		t.Fatalf("deleted issue: %d, want 404", st)
	}
	if c := s.Calls("I_kwDO1"); len(c) != 2 || c[0].Provider != "github" || c[1].Status != 404 {
		t.Fatalf("calls on the issue: %+v", c)
	}
}

// Calls no one drains (a soak's) are bounded: the newest are kept, numbered
// in arrival order.
func TestUndrainedCallsAreBounded(t *testing.T) {
	s := &Server{}
	for i := 0; i < maxKept+10; i++ {
		s.log(Call{Object: "cus_1"})
	}
	got := s.Drain()
	if len(got) > maxKept || len(got) == 0 || got[len(got)-1].Seq != maxKept+10 || got[0].Seq >= got[len(got)-1].Seq {
		t.Fatalf("kept %d calls, seqs %d..%d", len(got), got[0].Seq, got[len(got)-1].Seq)
	}
}
