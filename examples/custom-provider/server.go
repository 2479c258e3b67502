package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultTolerance is Acme's documented clock skew: a signature whose
// timestamp is more than 5 minutes from now, in the past or the future, is
// refused.
const DefaultTolerance = 5 * time.Minute

// Acme's headers.
const (
	HeaderSignature = "Acme-Signature"
	HeaderEventID   = "Acme-Event-Id"
)

// Config is the receiver's behaviour, as serve's flags set it.
type Config struct {
	Tolerance    time.Duration
	MaxBodyBytes int64
	Defect       Defect
	// Secrets returns an account's signing secrets (none: no such endpoint);
	// default: the environment (ACME_SECRET_<ACCOUNT>).
	Secrets func(account string) []string
	// Now is the clock the timestamps are checked against (default time.Now).
	Now func() time.Time
}

// envSecrets reads ACME_SECRET_<ACCOUNT>: one secret, or several separated
// by commas while Acme rolls an endpoint's secret.
func envSecrets(account string) []string {
	var out []string
	for _, s := range strings.Split(os.Getenv("ACME_SECRET_"+strings.ToUpper(account)), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Server receives Acme webhooks.
type Server struct {
	pool *pgxpool.Pool
	cfg  Config
	log  *slog.Logger
}

func NewServer(pool *pgxpool.Pool, cfg Config, log *slog.Logger) *Server {
	if cfg.Tolerance <= 0 {
		cfg.Tolerance = DefaultTolerance
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.Secrets == nil {
		cfg.Secrets = envSecrets
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Server{pool: pool, cfg: cfg, log: log}
}

func (s *Server) Routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("POST /acme/{account}/events", s.webhook)
	return mux
}

var accountRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// Event is Acme's envelope; the event ID travels in Acme-Event-Id.
type Event struct {
	Type    string          `json:"type"`
	Created int64           `json:"created"`
	Data    json.RawMessage `json:"data"`
}

// Credit is the object of a credit.granted event.
type Credit struct {
	ID       string `json:"id"`
	Wallet   string `json:"wallet"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

func (s *Server) webhook(w http.ResponseWriter, r *http.Request) {
	account := r.PathValue("account")
	secrets := s.cfg.Secrets(account)
	if !accountRE.MatchString(account) || len(secrets) == 0 {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.reply(w, http.StatusRequestEntityTooLarge, "body too large", account, "")
			return
		}
		s.reply(w, http.StatusBadRequest, "cannot read body", account, "")
		return
	}
	id := r.Header.Get(HeaderEventID)
	if err := s.verify(r.Header.Get(HeaderSignature), id, body, secrets); err != nil {
		s.log.Warn("rejected delivery", "account", account, "err", err)
		s.reply(w, http.StatusUnauthorized, "invalid signature", account, id)
		return
	}
	if id == "" {
		s.reply(w, http.StatusBadRequest, "no "+HeaderEventID, account, id)
		return
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil || ev.Type == "" {
		s.reply(w, http.StatusBadRequest, "not an Acme event", account, id)
		return
	}
	if ev.Type != "credit.granted" {
		// Acme sends every type the endpoint subscribes to; the others are
		// acknowledged so that Acme stops sending them, and kept nowhere.
		s.reply(w, http.StatusOK, "ignored: "+ev.Type, account, id)
		return
	}
	var c Credit
	if err := json.Unmarshal(ev.Data, &c); err != nil || c.ID == "" || c.Amount <= 0 || len(c.Currency) != 3 {
		s.reply(w, http.StatusBadRequest, "credit.granted without a valid credit", account, id)
		return
	}
	if c.Wallet == "" {
		c.Wallet = "default"
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	dup, err := s.apply(ctx, account, id, ev.Type, body, c)
	switch {
	case err != nil:
		s.log.Error("processing failed", "account", account, "event_id", id, "err", err)
		s.reply(w, http.StatusInternalServerError, "internal error", account, id)
	case dup:
		s.reply(w, http.StatusOK, "duplicate", account, id)
	default:
		s.reply(w, http.StatusOK, "credited", account, id)
	}
}

// apply records the event and credits the wallet in one transaction: the
// key's insert decides, so concurrent copies wait on its row and all but one
// find it taken. The 200 goes out after the commit.
func (s *Server) apply(ctx context.Context, account, id, typ string, body []byte, c Credit) (dup bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var inserted string
	err = tx.QueryRow(ctx, `INSERT INTO acme_events (account, event_id, type, payload) VALUES ($1, $2, $3, $4)
		ON CONFLICT (account, event_id) DO NOTHING RETURNING event_id`, account, id, typ, body).Scan(&inserted)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO wallet_credits (account, event_id, credit_id, wallet, amount, currency) VALUES ($1, $2, $3, $4, $5, $6)`,
		account, id, c.ID, c.Wallet, c.Amount, strings.ToLower(c.Currency)); err != nil {
		return false, err
	}
	return false, tx.Commit(ctx)
}

// verify checks Acme-Signature, "t=<unix seconds>,s=<hex HMAC-SHA256>", over
// "<t>:<event ID>:<body>" with each of the account's secrets, and that t is
// within the tolerance of now, either way.
func (s *Server) verify(header, id string, body []byte, secrets []string) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "s":
			sig = v
		}
	}
	if ts == "" || sig == "" {
		return errors.New("no t= or s= in " + HeaderSignature)
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("timestamp %q is not Unix seconds", ts)
	}
	age := s.cfg.Now().Sub(time.Unix(t, 0))
	switch {
	case age > s.cfg.Tolerance && s.cfg.Defect != DefectStaleAccepted:
		return fmt.Errorf("timestamp %s old, tolerance %s", age.Round(time.Second), s.cfg.Tolerance)
	case -age > s.cfg.Tolerance && s.cfg.Defect != DefectFutureAccepted:
		return fmt.Errorf("timestamp %s ahead, tolerance %s", (-age).Round(time.Second), s.cfg.Tolerance)
	}
	given, err := hex.DecodeString(sig)
	if err != nil {
		return errors.New("signature is not hex")
	}
	for _, secret := range secrets {
		mac := hmac.New(sha256.New, []byte(secret))
		fmt.Fprintf(mac, "%s:%s:", ts, id)
		mac.Write(body)
		want := mac.Sum(nil)
		if s.cfg.Defect == DefectSignaturePrefix {
			// The planted bug: the given signature compared with as many
			// bytes of the expected one as it has.
			if len(given) > 0 && len(given) <= len(want) && hmac.Equal(want[:len(given)], given) {
				return nil
			}
			continue
		}
		if hmac.Equal(want, given) {
			return nil
		}
	}
	return errors.New("no valid signature")
}

func (s *Server) reply(w http.ResponseWriter, status int, note, account, id string) {
	s.log.Info("webhook", "status", status, "account", account, "event_id", id, "note", note)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if status == http.StatusOK {
		_, _ = io.WriteString(w, `{"ok":true}`+"\n")
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]string{"error": note})
}
