package reference

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/reference/store"
)

// Retention defaults (docs/reference.md, "Retention").
const (
	// DefaultPayloadTTL is how long a stored payload (the raw body) is kept when the
	// endpoint sets no payload_ttl. The synchronous receiver has finished with the
	// payload when it answers; a day leaves room to inspect a delivery after an
	// incident without keeping personal data for the key's whole life.
	DefaultPayloadTTL = 24 * time.Hour
	// KeyTTLMargin is added to the profile's redelivery horizon for the default key
	// TTL: providers' own clocks, queues and manual resends at the edge of their
	// window must still find the key.
	KeyTTLMargin = 24 * time.Hour
	// DefaultPurgeInterval is how often the in-process purger runs.
	DefaultPurgeInterval = 10 * time.Minute
	// shortRetentionTTL is the key TTL of the short-retention defect.
	shortRetentionTTL = time.Hour
	// AdminPurgePath is the admin route that purges as of a given time (mounted with
	// EnableFailpoints or EnableAdmin).
	AdminPurgePath = "/_hookcert/purge"
)

// PayloadPresentQuery is the harness query ($1 source, $2 account, $3 event ID;
// docs/reference.md, "Queries for a harness") saying whether any payload of one
// event is still stored, in its key row or in webhook_payload_archive: one row,
// present true or false, while either table holds a row for the key; no row once
// neither does.
const PayloadPresentQuery = `SELECT bool_or(present) AS present FROM (` +
	`SELECT payload IS NOT NULL AS present FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3 ` +
	`UNION ALL SELECT true FROM webhook_payload_archive WHERE source=$1 AND account_id=$2 AND event_id=$3) stored ` +
	`HAVING count(*) > 0`

// Horizon is how long after an event's first delivery its provider may deliver it
// again, with the documents that say so.
type Horizon struct {
	// Retry is the automatic retry horizon (0 when the provider does not retry).
	Retry time.Duration
	// Manual is how long after creation a person can resend the event (0 when the
	// provider documents no manual resend).
	Manual time.Duration
	// Source cites where both values were read (shared/providers.yaml).
	Source string
}

// Total is the longer of the automatic and the manual horizon: the key must
// outlive both.
func (h Horizon) Total() time.Duration { return max(h.Retry, h.Manual) }

// horizons are the providers' redelivery horizons, per shared/providers.yaml (the
// reference imports nothing from the simulator, so it carries its own copy).
var horizons = map[string]Horizon{
	// providers.yaml stripe.retries.live.horizon_seconds 259200 ("up to three days")
	// and stripe.manual_redelivery: Stripe CLI resend up to 30 days after creation
	// (Dashboard: 15 days).
	"stripe": {Retry: 72 * time.Hour, Manual: 30 * 24 * time.Hour,
		Source: "docs.stripe.com/webhooks: automatic retries for up to three days; manual resend (Stripe CLI) up to 30 days after creation"},
	// providers.yaml github.retries.horizon_seconds 0 ("GitHub does not automatically
	// redeliver failed deliveries") and github.manual_redelivery.window_days 3.
	"github": {Retry: 0, Manual: 3 * 24 * time.Hour,
		Source: "docs.github.com redelivering-webhooks: \"You can redeliver webhook deliveries that occurred in the past 3 days\"; no automatic retries"},
	// providers.yaml shopify.retries.horizon_seconds 14400 (8 retries over 4 hours);
	// shopify.manual_redelivery.available false.
	"shopify": {Retry: 4 * time.Hour,
		Source: "shopify.dev/changelog/updates-to-webhook-retry-mechanism: \"retried a total of 8 times over 4 hours\"; no manual resend"},
	// providers.yaml standard_webhooks.retries.example_total_seconds 272105 (75:35:05,
	// the spec's EXAMPLE schedule); manual replay only "recommended" to senders.
	"standard-webhooks": {Retry: 272105 * time.Second,
		Source: "standard-webhooks spec example retry schedule, 75h35m05s in all; manual replay undocumented"},
	// providers.yaml svix.retries.horizon_seconds 99305 (~27h35m05s); the manual
	// resend window is undocumented (payloads are retained 90 days).
	"svix": {Retry: 99305 * time.Second,
		Source: "docs.svix.com/retries: 8 attempts, 27h35m05s in all; manual resend window undocumented"},
	// providers.yaml slack_events.retries.delays_seconds [0, 60, 300] (6 min in
	// all); slack_events.manual_redelivery.available false.
	"slack": {Retry: 360 * time.Second,
		Source: "api.slack.com/apis/connections/events-api: retries nearly immediately, after 1 minute and after 5 minutes; no manual resend"},
}

// ProfileHorizon returns the documented redelivery horizon of a profile.
func ProfileHorizon(profile string) (Horizon, bool) {
	h, ok := horizons[profile]
	return h, ok
}

// DefaultKeyTTL is the key TTL of an endpoint of profile that sets none: the
// profile's redelivery horizon plus KeyTTLMargin.
func DefaultKeyTTL(profile string) time.Duration {
	h, _ := ProfileHorizon(profile)
	return h.Total() + KeyTTLMargin
}

// Retention is one endpoint's resolved two-tier retention.
type Retention struct {
	// KeyTTL is how long the event key (source, account, event_id) is kept.
	KeyTTL time.Duration
	// PayloadTTL is how long the stored payload is kept; the key stays after it.
	PayloadTTL time.Duration
}

// Retention returns the endpoint's retention with defaults applied: key_ttl
// defaults to DefaultKeyTTL(profile), payload_ttl to DefaultPayloadTTL capped at the
// key TTL.
func (e Endpoint) Retention() Retention {
	r := Retention{KeyTTL: time.Duration(e.KeyTTL), PayloadTTL: time.Duration(e.PayloadTTL)}
	if r.KeyTTL == 0 {
		r.KeyTTL = DefaultKeyTTL(e.Profile)
	}
	if r.PayloadTTL == 0 {
		r.PayloadTTL = min(DefaultPayloadTTL, r.KeyTTL)
	}
	return r
}

// Duration is a time.Duration written in the endpoints file as a Go duration
// ("72h", "90m") or a whole number of days ("30d").
type Duration time.Duration

// ParseDuration reads "30d" or a Go duration.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100*365 {
			return 0, fmt.Errorf("invalid duration %q: want a Go duration like 72h or whole days like 30d", s)
		}
		return Duration(time.Duration(n) * 24 * time.Hour), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want a Go duration like 72h or whole days like 30d", s)
	}
	return Duration(d), nil
}

// String renders the duration the way time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText implements encoding.TextMarshaler (YAML and JSON).
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (YAML and JSON).
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// validateRetention checks one endpoint's retention fields; f records an error on a
// field of that endpoint. floor refuses a key TTL below the redelivery horizon
// (off only under the no-ttl-floor defect).
func validateRetention(e Endpoint, floor bool, f func(field, format string, args ...any)) {
	if e.KeyTTL < 0 {
		f("key_ttl", "must be positive, got %s", e.KeyTTL)
	}
	if e.PayloadTTL < 0 {
		f("payload_ttl", "must be positive, got %s", e.PayloadTTL)
	}
	if e.KeyTTL < 0 || e.PayloadTTL < 0 {
		return
	}
	r := e.Retention()
	if r.PayloadTTL > r.KeyTTL {
		f("payload_ttl", "%s is longer than the key TTL %s (a payload cannot outlive its key)", r.PayloadTTL, r.KeyTTL)
	}
	h, ok := ProfileHorizon(e.Profile)
	if floor && ok && r.KeyTTL < h.Total() && !e.AllowShortKeyTTL {
		f("key_ttl", "endpoint %s keeps keys %s, below the %s redelivery horizon %s (%s): a redelivery after the key is gone is applied twice; raise key_ttl or set allow_short_key_ttl: true",
			e.Path, r.KeyTTL, e.Profile, h.Total(), h.Source)
	}
}

// scopes returns the purge cut-offs of every endpoint as of asOf. Endpoints
// sharing a (source, account) key space keep the longer TTLs of the two: a
// shorter one must not delete keys the other still needs.
func (s *Server) scopes(asOf time.Time) []store.PurgeScope {
	type ttl struct{ key, payload time.Duration }
	byScope := map[[2]string]ttl{}
	var order [][2]string
	for _, e := range s.epList {
		r := e.Retention()
		k := [2]string{e.KeySource(), e.Account}
		cur, seen := byScope[k]
		if !seen {
			order = append(order, k)
		}
		byScope[k] = ttl{max(cur.key, r.KeyTTL), max(cur.payload, r.PayloadTTL)}
	}
	var out []store.PurgeScope
	for _, k := range order {
		t := byScope[k]
		out = append(out, s.steps.purgeScope(k[0], k[1], t.key, t.payload, asOf))
	}
	return out
}

// purgeScope is one key space's retention as cut-offs: keys received more than
// the key TTL before asOf go, payloads received more than the payload TTL before
// it go while their keys stay.
func purgeScope(source, account string, keyTTL, payloadTTL time.Duration, asOf time.Time) store.PurgeScope {
	return store.PurgeScope{Source: source, AccountID: account,
		KeyCutoff: asOf.Add(-keyTTL), PayloadCutoff: asOf.Add(-payloadTTL)}
}

// Purge removes what the endpoints' retention allows as if the clock read asOf:
// rows received before asOf minus the key TTL are deleted, payloads of rows
// received before asOf minus the payload TTL are set to NULL (the key stays). It
// works in bounded batches, each its own transaction, so deliveries go on; rows
// whose work is unfinished (processed_at NULL) are never touched.
func (s *Server) Purge(ctx context.Context, asOf time.Time) (store.PurgeResult, error) {
	res, err := s.steps.purge(ctx, s.pool, s.scopes(asOf), s.purgeOpts)
	if err != nil {
		return res, fmt.Errorf("reference: %w", err)
	}
	return res, nil
}

// PurgeDatabase runs the purge of a receiver configured with endpoints and defects
// on pool, without serving (hookcert reference purge).
func PurgeDatabase(ctx context.Context, pool *pgxpool.Pool, endpoints []Endpoint, defects []string, asOf time.Time, opts store.PurgeOptions) (store.PurgeResult, error) {
	if err := ValidateDefects(defects); err != nil {
		return store.PurgeResult{}, fmt.Errorf("reference: %w", err)
	}
	if err := ValidateEndpointsWithDefects(endpoints, defects); err != nil {
		return store.PurgeResult{}, fmt.Errorf("reference: %w", err)
	}
	s := &Server{pool: pool, epList: endpoints, purgeOpts: opts}
	s.steps = s.correctSteps()
	installServerDefects(s, defects)
	return s.Purge(ctx, asOf)
}

// runPurger purges as of the current time every interval until ctx ends. The
// first run waits up to a minute, so a receiver restarted often still purges while
// a start is never slowed by it.
func (s *Server) runPurger(ctx context.Context) {
	wait := min(s.purgeEvery, time.Minute)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		s.purgeOnce(ctx, s.now())
		wait = s.purgeEvery
	}
}

func (s *Server) purgeOnce(ctx context.Context, asOf time.Time) {
	start := time.Now()
	res, err := s.Purge(ctx, asOf)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			s.log.Warn("purge failed", "err", err, "keys_deleted", res.KeysDeleted, "payloads_purged", res.PayloadsPurged)
		}
		return
	}
	if res.KeysDeleted > 0 || res.PayloadsPurged > 0 {
		s.log.Info("purge", "as_of", asOf.UTC().Format(time.RFC3339), "keys_deleted", res.KeysDeleted,
			"payloads_purged", res.PayloadsPurged, "batches", res.Batches, "duration", time.Since(start).String())
	}
}

// purgeRequest is the admin call's body.
type purgeRequest struct {
	AsOf string `json:"as_of"`
}

// servePurge is POST /_hookcert/purge {"as_of": RFC 3339}: purge as if the clock
// read as_of (an empty as_of means now). Testing and operations only.
func (s *Server) servePurge(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeAny(w, http.StatusMethodNotAllowed, map[string]string{"error": "method: use POST"})
		return
	}
	var req purgeRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
	if err == nil && len(strings.TrimSpace(string(body))) > 0 {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		writeAny(w, http.StatusBadRequest, map[string]string{"error": "body: want JSON {\"as_of\": \"RFC 3339 time\"}"})
		return
	}
	if q := r.URL.Query().Get("as_of"); q != "" && req.AsOf == "" {
		req.AsOf = q
	}
	asOf := s.now()
	if req.AsOf != "" {
		if asOf, err = time.Parse(time.RFC3339Nano, req.AsOf); err != nil {
			writeAny(w, http.StatusBadRequest, map[string]string{"error": "as_of: must be an RFC 3339 time like 2026-01-02T15:04:05Z"})
			return
		}
	}
	start := time.Now()
	res, err := s.Purge(context.WithoutCancel(r.Context()), asOf)
	if err != nil {
		s.log.Warn("admin purge failed", "err", err)
		writeAny(w, http.StatusInternalServerError, map[string]string{"error": "purge failed"})
		return
	}
	s.log.Info("admin purge", "as_of", asOf.UTC().Format(time.RFC3339Nano), "keys_deleted", res.KeysDeleted,
		"payloads_purged", res.PayloadsPurged, "batches", res.Batches, "duration", time.Since(start).String())
	writeAny(w, http.StatusOK, map[string]any{"as_of": asOf.UTC().Format(time.RFC3339Nano),
		"keys_deleted": res.KeysDeleted, "payloads_purged": res.PayloadsPurged, "batches": res.Batches})
}

func writeAny(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// logRetention logs every endpoint's retention at start and, loudly, every key TTL
// below its provider's redelivery horizon that allow_short_key_ttl let through.
func (s *Server) logRetention() {
	for _, e := range s.epList {
		r := e.Retention()
		h, _ := ProfileHorizon(e.Profile)
		s.log.Info("retention", "path", e.Path, "key_ttl", r.KeyTTL.String(), "payload_ttl", r.PayloadTTL.String(),
			"redelivery_horizon", h.Total().String())
		if r.KeyTTL < h.Total() {
			s.steps.shortKeyTTL(e, r, h)
		}
	}
}

// warnShortKeyTTL says loudly that an endpoint keeps keys for less than its
// provider may redeliver (allowed only by allow_short_key_ttl).
func (s *Server) warnShortKeyTTL(e Endpoint, r Retention, h Horizon) {
	s.log.Warn("SHORT KEY TTL ALLOWED: endpoint "+e.Path+" keeps keys "+r.KeyTTL.String()+", below the "+e.Profile+
		" redelivery horizon "+h.Total().String()+" ("+h.Source+"); redeliveries after that are applied twice",
		"path", e.Path, "allow_short_key_ttl", true)
}
