// Package providerapi serves the provider's read API for the objects the
// simulator delivers events about, so a receiver that refetches the object on
// every webhook (Stripe's advice against out-of-order events) can be
// certified. It answers with the object's state as of the simulator's model:
// the newest version delivered or about to be delivered, never an older
// event's. A deleted object answers 404. Faults are queued per object by the
// caller (from the scenario's seed): 404, 429 with Retry-After, 5xx, slow
// answers. Every call is kept, in arrival order, for the history.
package providerapi

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxDelay bounds a slow answer: a fault never holds a receiver's request
// longer than this.
const MaxDelay = 5 * time.Second

// route is one read endpoint of one provider's API: a path pattern whose
// groups are the resource and the object ID.
type route struct {
	provider string
	re       *regexp.Regexp
}

// routes are the read endpoints served, as data. Stripe: GET /v1/<resource>/<id>
// (https://docs.stripe.com/api, "Retrieve a …"); GitHub REST: GET
// /repos/{owner}/{repo}/issues/{number} and /pulls/{number}; Shopify Admin
// REST: GET /admin/api/{version}/orders/{id}.json.
var routes = []route{
	{"stripe", regexp.MustCompile(`^/v1/(customers|payment_intents|charges|subscriptions|invoices|refunds)/([^/]+)$`)},
	{"github", regexp.MustCompile(`^/repos/[^/]+/[^/]+/(issues|pulls)/([^/]+)$`)},
	{"shopify", regexp.MustCompile(`^/admin/api/[^/]+/(orders)/([^/]+)\.json$`)},
}

// alias is how a route whose ID is not the event's object ID finds the
// object in a webhook body, and what part of it the API answers: GitHub's
// issue and pull request events carry the resource under "issue" and
// "pull_request", fetched by their number; Shopify's order webhooks are the
// order itself, fetched by its numeric id.
type alias struct {
	resource, wrap, idField string
}

var aliases = []alias{
	{"issues", "issue", "number"},
	{"pulls", "pull_request", "number"},
	{"orders", "", "id"},
}

// target is what an alias resolves to: an object ID and the part answered.
type target struct {
	id, wrap string
}

// style is how one provider authenticates a call and shapes its errors.
type style struct {
	// authorized reports whether the request carries key as the provider
	// expects it.
	authorized func(r *http.Request, key string) bool
	// errBody is the provider's error body for status (msg is hookcert's words).
	errBody func(status int, msg string) any
}

// styles per provider. Stripe: a secret key as a Bearer token or as the basic
// auth user name; errors {"error": {"type", "code", "message"}}, a missing
// object "invalid_request_error"/"resource_missing" with 404. Stripe's body
// for 429 and 5xx is modelled on the same shape (types rate_limit_error and
// api_error); whether Stripe sends Retry-After on 429 is not documented in
// what hookcert cites: the header is the fault's. GitHub: "Bearer" or "token"
// and {"message", "documentation_url"}. Shopify: X-Shopify-Access-Token and
// {"errors": "..."}.
var styles = map[string]style{
	"stripe": {
		authorized: func(r *http.Request, key string) bool {
			if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
				return same(tok, key)
			}
			if u, _, ok := r.BasicAuth(); ok {
				return same(u, key)
			}
			return false
		},
		errBody: func(status int, msg string) any {
			e := map[string]string{"type": "invalid_request_error", "message": msg}
			switch {
			case status == http.StatusNotFound:
				e["code"] = "resource_missing"
				e["param"] = "id"
			case status == http.StatusTooManyRequests:
				e["type"], e["code"] = "invalid_request_error", "rate_limit"
			case status >= 500:
				e["type"] = "api_error"
			}
			return map[string]any{"error": e}
		},
	},
	"github": {
		authorized: func(r *http.Request, key string) bool {
			h := r.Header.Get("Authorization")
			for _, p := range []string{"Bearer ", "token "} {
				if tok, ok := strings.CutPrefix(h, p); ok {
					return same(tok, key)
				}
			}
			return false
		},
		errBody: func(status int, msg string) any {
			return map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"}
		},
	},
	"shopify": {
		authorized: func(r *http.Request, key string) bool {
			return same(r.Header.Get("X-Shopify-Access-Token"), key)
		},
		errBody: func(status int, msg string) any { return map[string]string{"errors": msg} },
	},
}

func same(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// Fault is what one call on an object gets instead of, or before, its answer.
type Fault struct {
	// Status answered instead of the object (404, 429, 5xx); 0 answers the
	// object after Delay.
	Status int
	// RetryAfter is sent as Retry-After (whole seconds, at least 1) with a 429.
	RetryAfter time.Duration
	// Delay holds the answer this long first (bounded by MaxDelay).
	Delay time.Duration
}

// Name is the fault as the history records it ("404", "429", "503",
// "slow:250ms").
func (f Fault) Name() string {
	parts := []string{}
	if f.Status != 0 {
		parts = append(parts, strconv.Itoa(f.Status))
	}
	if f.Delay > 0 {
		parts = append(parts, "slow:"+f.Delay.String())
	}
	return strings.Join(parts, "+")
}

// Call is one request the receiver made.
type Call struct {
	Seq    int
	At     time.Time
	Method string
	Path   string
	// Provider and Object are the route's ("" when the path matched none).
	Provider string
	Object   string
	// Status answered; Fault is the injected fault's name ("" when none).
	Status int
	Fault  string
	// Key is the ordering key of the version answered (0 when none was).
	Key int64
}

// object is one object of the model.
type object struct {
	body    json.RawMessage
	key     int64
	deleted bool
	// resource is the route's resource the object belongs to ("" when any).
	resource string
}

// Server is the provider API. It is safe for concurrent use.
type Server struct {
	key string
	ln  net.Listener
	srv *http.Server

	mu      sync.Mutex
	objects map[string]*object
	// byRoute maps "<resource>/<id>" of an alias to its object.
	byRoute map[string]target
	faults  map[string][]Fault
	// calls are the calls not drained yet, at most maxKept; seq numbers
	// them all.
	calls []Call
	seq   int
}

// maxKept bounds the calls kept for Drain: a run drains them after every
// scenario; traffic no one drains (a soak) keeps only the newest.
const maxKept = 1 << 16

// New starts the API on a loopback port. key is the API key every call must
// carry (a call without it answers 401); it is never logged or echoed.
func New(key string) (*Server, error) {
	if key == "" {
		return nil, errors.New("providerapi: an API key is required")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("providerapi: listen: %w", err)
	}
	s := &Server{key: key, ln: ln, objects: map[string]*object{}, byRoute: map[string]target{}, faults: map[string][]Fault{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the API's base URL (no trailing slash).
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the API: calls in flight get a second to finish, then every
// connection is closed (net/http counts a connection that never sent a
// request as busy for 5 s, which would hold every run's end).
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}

// Put tells the model the object's state as of one event: body, at ordering
// key. The newest wins: a lower key never replaces a higher one, an equal key
// replaces it unless stale is set (an event the scenario sends as older than
// what the provider holds), and a deleted object stays deleted unless a
// strictly newer key brings it back.
func (s *Server) Put(id string, body json.RawMessage, key int64, stale bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[id]
	if ok && (key < o.key || key == o.key && (stale || o.deleted)) {
		return
	}
	s.objects[id] = &object{body: append(json.RawMessage(nil), body...), key: key, resource: resourceOf(body)}
	for _, a := range aliases {
		if ref, ok := aliasID(body, a); ok {
			s.byRoute[a.resource+"/"+ref] = target{id: id, wrap: a.wrap}
		}
	}
}

// aliasID is the route ID alias a finds in body (a number or a string).
func aliasID(body json.RawMessage, a alias) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return "", false
	}
	if a.wrap != "" {
		// A fresh map: decoding into m would merge the outer keys in.
		var inner map[string]json.RawMessage
		if json.Unmarshal(m[a.wrap], &inner) != nil || inner == nil {
			return "", false
		}
		m = inner
	}
	var v any
	if json.Unmarshal(m[a.idField], &v) != nil {
		return "", false
	}
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case string:
		return x, x != ""
	}
	return "", false
}

// part is the part of body a route answers: the object under wrap, or all.
func part(body json.RawMessage, wrap string) json.RawMessage {
	if wrap == "" {
		return body
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	return m[wrap]
}

// Delete marks the object deleted: it answers 404 from now on.
func (s *Server) Delete(id string, key int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[id]
	if !ok {
		o = &object{}
		s.objects[id] = o
	}
	if key > o.key {
		o.key = key
	}
	o.deleted = true
}

// Fail queues faults for the next calls on the object, one per call.
func (s *Server) Fail(id string, fs ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[id] = append(s.faults[id], fs...)
}

// Calls returns the calls on one object not drained yet, in arrival order.
func (s *Server) Calls(id string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.Object == id {
			out = append(out, c)
		}
	}
	return out
}

// Drain returns every call since the previous Drain, in arrival order (of
// more than maxKept, the newest).
func (s *Server) Drain() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.calls
	s.calls = nil
	return out
}

// resourceOf is the Stripe resource an object belongs to, by its "object"
// field ("customer" → "customers"); "" when it has none.
func resourceOf(body json.RawMessage) string {
	var o struct {
		Object string `json:"object"`
	}
	if json.Unmarshal(body, &o) != nil || o.Object == "" {
		return ""
	}
	return o.Object + "s"
}

// ServeHTTP answers one call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := Call{At: time.Now(), Method: r.Method, Path: r.URL.Path}
	var st style
	var res string
	for _, rt := range routes {
		if m := rt.re.FindStringSubmatch(r.URL.Path); m != nil {
			c.Provider, res, c.Object = rt.provider, m[1], m[2]
			st = styles[rt.provider]
			break
		}
	}
	if c.Provider == "" {
		// No route: a plain 404, in no provider's shape.
		c.Status = http.StatusNotFound
		s.log(c)
		http.Error(w, "hookcert provider API: no such route", http.StatusNotFound)
		return
	}
	if !st.authorized(r, s.key) {
		c.Status = http.StatusUnauthorized
		s.log(c)
		// The key sent is never echoed.
		answer(w, c.Status, st.errBody(c.Status, "invalid API key provided"), 0)
		return
	}
	if r.Method != http.MethodGet {
		c.Status = http.StatusMethodNotAllowed
		s.log(c)
		answer(w, c.Status, st.errBody(c.Status, "the provider API simulated by hookcert is read-only"), 0)
		return
	}
	s.mu.Lock()
	wrap := ""
	if t, ok := s.byRoute[res+"/"+c.Object]; ok {
		// A route ID that is not the event's object ID (a GitHub issue's
		// number): the call is about the object it names.
		c.Object, wrap = t.id, t.wrap
	}
	var f Fault
	if q := s.faults[c.Object]; len(q) > 0 {
		f, s.faults[c.Object] = q[0], q[1:]
	}
	o, ok := s.objects[c.Object]
	var body json.RawMessage
	var key int64
	if ok && !o.deleted && (o.resource == "" || o.resource == res) {
		body, key = part(o.body, wrap), o.key
	}
	s.mu.Unlock()
	c.Fault = f.Name()
	if d := min(f.Delay, MaxDelay); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}
	switch {
	case f.Status != 0:
		c.Status = f.Status
		msg := "simulated failure"
		if f.Status == http.StatusNotFound {
			msg = fmt.Sprintf("No such %s: '%s'", strings.TrimSuffix(res, "s"), c.Object)
		}
		s.log(c)
		ra := time.Duration(0)
		if f.Status == http.StatusTooManyRequests {
			ra = max(f.RetryAfter, time.Second)
		}
		answer(w, c.Status, st.errBody(c.Status, msg), ra)
	case body == nil:
		c.Status = http.StatusNotFound
		s.log(c)
		answer(w, c.Status, st.errBody(c.Status, fmt.Sprintf("No such %s: '%s'", strings.TrimSuffix(res, "s"), c.Object)), 0)
	default:
		c.Status, c.Key = http.StatusOK, key
		s.log(c)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}
}

// log keeps a call, numbered in arrival order.
func (s *Server) log(c Call) {
	s.mu.Lock()
	s.seq++
	c.Seq = s.seq
	if len(s.calls) >= maxKept {
		s.calls = append(s.calls[:0], s.calls[maxKept/2:]...)
	}
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

func answer(w http.ResponseWriter, status int, body any, retryAfter time.Duration) {
	w.Header().Set("Content-Type", "application/json")
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((retryAfter+time.Second-1)/time.Second)))
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// Basic is the Authorization header value of HTTP basic auth with key as the
// user name and no password (how Stripe's curl examples pass a secret key).
func Basic(key string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(key+":"))
}
