package cmdobserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookcert/hookcert/adapters/observe"
	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/sqlstore"
)

// HTTPConfig is target.observe.http, rendered.
type HTTPConfig struct {
	// BaseURL resolves relative query URLs (an absolute http or https URL;
	// "" when every query is absolute).
	BaseURL string
	// Timeout bounds one request, body included (DefaultTimeout when zero).
	Timeout time.Duration
	// MaxBody bounds one answer in bytes (DefaultMaxOutput when zero).
	MaxBody int
	// Capabilities is a URL answering {"queries": [names]} ("" for none).
	Capabilities string
	// Queries are the URLs by query name; $n is substituted URL-escaped.
	Queries map[string]string
	// FieldPath names a query's field in the target file (nil:
	// target.observe.http.queries.<name>).
	FieldPath func(string) string
	// Secrets are scrubbed from every error.
	Secrets []string
	// Client sends the requests (nil: a client of hookcert's own).
	Client *http.Client
}

const httpField = "target.observe.http"

// HTTP answers queries by GET requests. It is safe for concurrent use.
type HTTP struct {
	cfg         HTTPConfig
	base        *url.URL
	own         bool // the client is ours to close
	queries     map[string]*httpQuery
	unsupported map[string]string
	scrub       *scrub.Scrubber
}

type httpQuery struct {
	name, field, tpl string
	phs              []placeholder
	params           []int
	query            int // index in tpl where the query string starts (len(tpl) if none)
}

var _ observe.Reader = (*HTTP)(nil)

// OpenHTTP checks the base URL and every query URL, and fetches the
// capabilities URL if there is one. Errors name the field and wrap
// observe.ErrInvalidQuery, observe.ErrUnreachable or observe.ErrTimeout.
func OpenHTTP(ctx context.Context, cfg HTTPConfig) (*HTTP, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxOutput
	}
	if cfg.FieldPath == nil {
		cfg.FieldPath = func(name string) string { return httpField + ".queries." + name }
	}
	h := &HTTP{cfg: cfg, queries: map[string]*httpQuery{}, unsupported: map[string]string{}, scrub: scrub.New(cfg.Secrets...)}
	if h.cfg.Client == nil {
		h.cfg.Client, h.own = &http.Client{}, true
	}
	if cfg.BaseURL != "" {
		base, err := url.Parse(cfg.BaseURL)
		if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
			return nil, h.scrub.Error(classed(fmt.Sprintf("observe: %s.base_url: %q is not an absolute http or https URL", httpField, cfg.BaseURL), observe.ErrInvalidQuery))
		}
		h.base = base
	}
	var errs []error
	for _, name := range sortedNames(cfg.Queries) {
		q, err := h.parse(name, cfg.FieldPath(name), cfg.Queries[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		h.queries[name] = q
	}
	var capq *httpQuery
	if strings.TrimSpace(cfg.Capabilities) != "" {
		q, err := h.parse("capabilities", httpField+".capabilities", cfg.Capabilities)
		if err != nil {
			errs = append(errs, err)
		}
		capq = q
	}
	if err := errors.Join(errs...); err != nil {
		return nil, h.scrub.Error(err)
	}
	if capq != nil {
		body, err := h.get(ctx, capq, observe.Key{})
		if err != nil {
			return nil, err
		}
		listed, err := capabilities(body)
		if err != nil {
			return nil, h.scrub.Error(classed(fmt.Sprintf("observe: %s: %v", capq.field, err), observe.ErrInvalidQuery))
		}
		for name := range h.queries {
			if !listed[name] {
				h.unsupported[name] = h.scrub.String(fmt.Sprintf("the http observer's capabilities (%s) do not list %s", capq.tpl, name))
			}
		}
	}
	return h, nil
}

func (h *HTTP) parse(name, field, tpl string) (*httpQuery, error) {
	tpl = strings.TrimSpace(tpl)
	if tpl == "" {
		return nil, classed(fmt.Sprintf("observe: %s: empty: a query is a URL, relative to %s.base_url or absolute", field, httpField), observe.ErrInvalidQuery)
	}
	phs, err := scan(tpl)
	if err != nil {
		return nil, classed(fmt.Sprintf("observe: %s: %v", field, err), observe.ErrInvalidQuery)
	}
	q := &httpQuery{name: name, field: field, tpl: tpl, phs: phs, params: params(phs), query: len(tpl)}
	if i := strings.IndexByte(tpl, '?'); i >= 0 {
		q.query = i
	}
	// A URL with every parameter filled in must parse and be http(s).
	if _, err := h.url(q, observe.Key{Source: "s", Account: "a", EventID: "e", ObjectID: "o"}); err != nil {
		return nil, classed(fmt.Sprintf("observe: %s: %v", field, err), observe.ErrInvalidQuery)
	}
	return q, nil
}

// url is q's URL for k: each value escaped for where it stands (a path
// segment before the ?, a query parameter after it), resolved against the base.
func (h *HTTP) url(q *httpQuery, k observe.Key) (string, error) {
	var b strings.Builder
	last := 0
	for _, p := range q.phs {
		b.WriteString(q.tpl[last:p.start])
		v := param(k, p.n)
		if p.start < q.query {
			b.WriteString(url.PathEscape(v))
		} else {
			b.WriteString(url.QueryEscape(v))
		}
		last = p.end
	}
	b.WriteString(q.tpl[last:])
	ref, err := url.Parse(b.String())
	if err != nil {
		return "", fmt.Errorf("not a URL: %v", err)
	}
	u := ref
	if h.base != nil {
		u = h.base.ResolveReference(ref)
	} else if !ref.IsAbs() {
		return "", fmt.Errorf("%q is relative, and there is no %s.base_url to resolve it against", ref.Redacted(), httpField)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%q is not an http or https URL", u.Redacted())
	}
	return u.String(), nil
}

// Kind is "http".
func (h *HTTP) Kind() string { return "http" }

// Has reports whether the query is configured and the capabilities URL, if
// any, lists it.
func (h *HTTP) Has(name string) bool {
	_, ok := h.queries[name]
	return ok && h.unsupported[name] == ""
}

// Unsupported says, by query name, why a configured query is not answered.
func (h *HTTP) Unsupported() map[string]string {
	out := make(map[string]string, len(h.unsupported))
	for k, v := range h.unsupported {
		out[k] = v
	}
	return out
}

// Describe is the query's URL as configured.
func (h *HTTP) Describe(name string) string {
	if q, ok := h.queries[name]; ok {
		return h.scrub.String(q.tpl)
	}
	return ""
}

// Params are the parameters the query uses, in order of first use.
func (h *HTTP) Params(name string) []int {
	if q, ok := h.queries[name]; ok {
		return append([]int(nil), q.params...)
	}
	return nil
}

// Close drops the idle connections of hookcert's own client.
func (h *HTTP) Close() {
	if h.own {
		h.cfg.Client.CloseIdleConnections()
	}
}

// Read GETs the query's URL for k and reads the body as rows.
func (h *HTTP) Read(ctx context.Context, name string, k observe.Key) (sqlstore.Rows, error) {
	q, ok := h.queries[name]
	if !ok {
		return sqlstore.Rows{}, fmt.Errorf("observe: query %s: %w", name, observe.ErrNotConfigured)
	}
	if why := h.unsupported[name]; why != "" {
		return sqlstore.Rows{}, fmt.Errorf("observe: query %s: %s: %w", name, why, observe.ErrNotConfigured)
	}
	body, err := h.get(ctx, q, k)
	if err != nil {
		return sqlstore.Rows{}, err
	}
	rows, err := decodeRows(name, body)
	if err != nil {
		return sqlstore.Rows{}, h.scrub.Error(classed(fmt.Sprintf("observe: %s: %v", q.field, err), observe.ErrInvalidQuery))
	}
	return rows, nil
}

func (h *HTTP) get(ctx context.Context, q *httpQuery, k observe.Key) ([]byte, error) {
	b, err := h.getRaw(ctx, q, k)
	return b, h.scrub.Error(err)
}

func (h *HTTP) getRaw(ctx context.Context, q *httpQuery, k observe.Key) ([]byte, error) {
	u, err := h.url(q, k)
	if err != nil {
		return nil, classed(fmt.Sprintf("observe: %s: %v", q.field, err), observe.ErrInvalidQuery)
	}
	rctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, classed(fmt.Sprintf("observe: %s: %v", q.field, err), observe.ErrInvalidQuery)
	}
	req.Header.Set("Accept", "application/json")
	shown := "GET " + redact(u)
	fail := func(err error) error {
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("observe: %s: %s: %w", q.field, shown, ctx.Err())
		case rctx.Err() != nil:
			return classed(fmt.Sprintf("observe: %s: %s: no answer within %s (%s.timeout)", q.field, shown, h.cfg.Timeout, httpField), observe.ErrTimeout)
		}
		return classed(fmt.Sprintf("observe: %s: %s: %v", q.field, shown, err), observe.ErrUnreachable, err)
	}
	resp, err := h.cfg.Client.Do(req)
	if err != nil {
		return nil, fail(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(h.cfg.MaxBody)+1))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, classed(fmt.Sprintf("observe: %s: %s answered %s (a query answers 2xx with one JSON value)%s",
			q.field, shown, resp.Status, bodyNote(body)), observe.ErrUnreachable)
	}
	if len(body) > h.cfg.MaxBody {
		return nil, classed(fmt.Sprintf("observe: %s: %s answered more than %d bytes (%s.max_body_bytes)", q.field, shown, h.cfg.MaxBody, httpField), observe.ErrInvalidQuery)
	}
	if err != nil {
		return nil, fail(err)
	}
	return body, nil
}

// redact hides a URL's password; the scrubber hides the rest.
func redact(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return u
}

// bodyNote is the end of an error answer's body, where the reason usually is.
func bodyNote(b []byte) string {
	t := &tail{limit: 1024}
	_, _ = t.Write(b)
	if s := t.lines(5); s != "" {
		return "; its body ends:\n" + s
	}
	return ""
}
