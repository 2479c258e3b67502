package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"
)

// Config is the receiver's behaviour, as the serve flags set it.
type Config struct {
	// MaxBodyBytes caps a webhook body (Stripe's events are far below 1 MiB).
	MaxBodyBytes int64
	// Tolerance is the accepted age of the Stripe-Signature timestamp.
	Tolerance time.Duration
	// Secrets finds each endpoint's signing secret(s).
	Secrets SecretSource
	// ProcessTimeout bounds one delivery's database work.
	ProcessTimeout time.Duration
	// Defect enables one planted bug (README.md, "Planted defects").
	Defect Defect
}

// SecretSource returns the signing secrets of an endpoint; none means the
// endpoint does not exist.
type SecretSource interface {
	Secrets(mode, account string) []string
}

// envSecrets reads secrets from the environment: the variable --secret-env
// names for the endpoint, else SHOP_SECRET_<MODE>_<ACCOUNT>. A value may hold
// several secrets separated by commas, for the 24 hours of a secret roll.
type envSecrets struct{ explicit map[string]string }

func (e envSecrets) Secrets(mode, account string) []string {
	name, ok := e.explicit[mode+"/"+account]
	if !ok {
		name = SecretEnvName(mode, account)
	}
	var out []string
	for _, s := range strings.Split(os.Getenv(name), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// SecretEnvName is the conventional variable of an endpoint's secret:
// SHOP_SECRET_LIVE_ACCT_123 for live/acct_123.
func SecretEnvName(mode, account string) string {
	return "SHOP_SECRET_" + strings.ToUpper(mode) + "_" + strings.ToUpper(account)
}

var accountRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

func validMode(m string) bool    { return m == "live" || m == "test" }
func validAccount(a string) bool { return accountRE.MatchString(a) }
func (c Config) withDefaults() Config {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.Tolerance <= 0 {
		c.Tolerance = webhook.DefaultTolerance
	}
	if c.ProcessTimeout <= 0 {
		c.ProcessTimeout = 30 * time.Second
	}
	if c.Secrets == nil {
		c.Secrets = envSecrets{}
	}
	return c
}

// Server receives Stripe webhooks.
type Server struct {
	pool *pgxpool.Pool
	cfg  Config
	log  *slog.Logger
	// seen is the memory-dedup defect's process-local set of processed events.
	seen sync.Map
}

func NewServer(pool *pgxpool.Pool, cfg Config, log *slog.Logger) *Server {
	return &Server{pool: pool, cfg: cfg.withDefaults(), log: log}
}

func (s *Server) Routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		// Liveness only: the schema was migrated before the listener opened, and
		// a busy pool must not make the process look dead.
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("POST /stripe/webhook/{mode}/{account}", s.webhook)
	return mux
}

// Endpoint identifies the endpoint a delivery came in on: the scope of its
// event ID.
type Endpoint struct{ Mode, Account string }

func (s *Server) webhook(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ep := Endpoint{Mode: r.PathValue("mode"), Account: r.PathValue("account")}
	if !validMode(ep.Mode) || !validAccount(ep.Account) {
		http.NotFound(w, r)
		return
	}
	secrets := s.cfg.Secrets.Secrets(ep.Mode, ep.Account)
	if len(secrets) == 0 {
		// No secret configured: not one of our endpoints.
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.reply(w, http.StatusRequestEntityTooLarge, "body too large", ep, nil, start)
			return
		}
		s.reply(w, http.StatusBadRequest, "cannot read body", ep, nil, start)
		return
	}
	ev, err := s.verify(body, r.Header.Get("Stripe-Signature"), secrets)
	if err != nil {
		s.log.Warn("rejected delivery", "mode", ep.Mode, "account", ep.Account, "err", err)
		s.reply(w, http.StatusBadRequest, "invalid event", ep, nil, start)
		return
	}
	if ev.ID == "" {
		s.reply(w, http.StatusBadRequest, "event has no id", ep, &ev, start)
		return
	}
	if ev.Account != "" && ev.Account != ep.Account {
		// A Connect event names its account; one sent to another account's
		// endpoint is misrouted, and its ID must not be booked under this one.
		s.reply(w, http.StatusBadRequest, "event account does not match the endpoint", ep, &ev, start)
		return
	}
	if ev.Livemode != (ep.Mode == "live") {
		s.log.Warn("livemode does not match the endpoint", "mode", ep.Mode, "account", ep.Account, "event_id", ev.ID, "livemode", ev.Livemode)
	}
	h, ok := handlers[ev.Type]
	if !ok {
		// Not subscribed to on purpose (the Dashboard may add types): acknowledge
		// so Stripe stops sending it, and keep nothing.
		s.reply(w, http.StatusOK, "ignored: unhandled type", ep, &ev, start)
		return
	}
	if ev.Data == nil || len(ev.Data.Raw) == 0 {
		s.reply(w, http.StatusBadRequest, "event has no data.object", ep, &ev, start)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.ProcessTimeout)
	defer cancel()
	res, err := s.process(ctx, ep, &ev, body, h)
	switch {
	case errors.Is(err, errBadObject):
		s.reply(w, http.StatusBadRequest, err.Error(), ep, &ev, start)
	case err != nil:
		s.log.Error("processing failed", "mode", ep.Mode, "account", ep.Account, "event_id", ev.ID, "type", ev.Type, "err", err)
		s.reply(w, http.StatusInternalServerError, "internal error", ep, &ev, start)
	case res.retry:
		// Rolled back: Stripe retries, and the event is applied once its
		// precondition holds (the order row committed, the payment succeeded).
		s.reply(w, http.StatusConflict, res.note, ep, &ev, start)
	default:
		s.reply(w, http.StatusOK, res.note, ep, &ev, start)
	}
}

// verify checks the signature against each of the endpoint's secrets and
// parses the event.
func (s *Server) verify(body []byte, header string, secrets []string) (stripe.Event, error) {
	var err error
	for _, secret := range secrets {
		var ev stripe.Event
		ev, err = webhook.ConstructEventWithOptions(body, header, secret, webhook.ConstructEventOptions{Tolerance: s.cfg.Tolerance})
		if err == nil {
			return ev, nil
		}
		if !errors.Is(err, webhook.ErrNoValidSignature) {
			// Not a matter of which secret: stale, unsigned or unparsable.
			return ev, err
		}
	}
	return stripe.Event{}, err
}

func (s *Server) reply(w http.ResponseWriter, status int, note string, ep Endpoint, ev *stripe.Event, start time.Time) {
	attrs := []any{"status", status, "mode", ep.Mode, "account", ep.Account, "note", note, "ms", time.Since(start).Milliseconds()}
	if ev != nil {
		attrs = append(attrs, "event_id", ev.ID, "type", ev.Type)
	}
	s.log.Info("webhook", attrs...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if status == http.StatusOK {
		_, _ = io.WriteString(w, `{"received":true}`+"\n")
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]string{"error": note})
}
