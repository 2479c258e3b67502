package selftest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/reference/signature"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios/hookcerttest"
)

// A flag-only receiver: its handled event sets a flag on an order (paid) and
// nothing it stores counts how often. Its effects query can show that the
// event applied, never that it applied twice. Declared as a state effect
// without a witness, no guarantee whose check looks for a second application
// may pass (each is not applicable, with the reason), even when the receiver
// applies every duplicate; with its audit rows declared as the witness, the
// same guarantees pass on the correct receiver and catch the planted double
// application.

// flagTarget is the flag receiver's target file; %s is the witness line.
const flagTarget = `target:
  name: flag receiver
  base_url: http://127.0.0.1:{{.Port}}
  endpoints:
    - {profile: stripe, account: acct_F, path: /stripe, secret_env: HOOKCERT_FLAG_STRIPE}
  observe:
    postgres:
      url: "{{.DatabaseURL}}"
      queries:
        event_rows: SELECT count(*) FROM flag_events WHERE event_id = $3
  capabilities: [crash]
  events:
    effect:
      type: charge.succeeded
      id_prefix: ord
      effects_kind: state
      effects: SELECT count(*) FROM flag_orders WHERE id = $4 AND paid
      create: {fixture: order}
%s
  fixtures:
    order: {sql: "INSERT INTO flag_orders (id) VALUES ($4)"}
`

const flagWitness = "      witness: SELECT count(*) FROM flag_audit WHERE order_id = $4"

// doubleChecks are the guarantees certified here whose verdict rests on an
// event applied twice (ACK-1's redeliveries after a kill among them).
var doubleChecks = []string{"DEDUP-1", "DEDUP-2", "DEDUP-7", "ACK-1"}

// flagReceiver builds the flag receiver on the incarnation's pool. With
// twice, it records every delivery's key but applies the event whether or not
// the key was new: each duplicate sets the flag again and writes an audit row.
func flagReceiver(dbURL string, twice bool) hookcerttest.Factory {
	return func(ctx context.Context, inc *hookcerttest.Incarnation) (http.Handler, error) {
		cfg, err := pgxpool.ParseConfig(dbURL)
		if err != nil {
			return nil, err
		}
		cfg.MaxConns = 8
		pool, err := inc.PoolWithConfig(ctx, cfg)
		if err != nil {
			return nil, err
		}
		if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS flag_events (event_id text PRIMARY KEY);
			CREATE TABLE IF NOT EXISTS flag_orders (id text PRIMARY KEY, paid boolean NOT NULL DEFAULT false);
			CREATE TABLE IF NOT EXISTS flag_audit (event_id text NOT NULL, order_id text NOT NULL)`); err != nil {
			return nil, err
		}
		secret := os.Getenv("HOOKCERT_FLAG_STRIPE")
		mux := http.NewServeMux()
		mux.HandleFunc("POST /stripe", func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				http.Error(w, "read", http.StatusBadRequest)
				return
			}
			if err := signature.Verify("stripe", r.Header, body, secret, time.Time{}, signature.Options{}); err != nil {
				http.Error(w, "signature", http.StatusBadRequest)
				return
			}
			var ev struct {
				ID   string `json:"id"`
				Type string `json:"type"`
				Data struct {
					Object struct {
						ID string `json:"id"`
					} `json:"object"`
				} `json:"data"`
			}
			if json.Unmarshal(body, &ev) != nil || ev.ID == "" {
				http.Error(w, "event", http.StatusBadRequest)
				return
			}
			if err := flagApply(r.Context(), pool, ev.ID, ev.Type, ev.Data.Object.ID, twice); err != nil {
				http.Error(w, "retry", http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		return mux, nil
	}
}

// flagApply records the event's key and, for a new key (any key, twice),
// sets its order's flag and writes an audit row, in one transaction.
func flagApply(ctx context.Context, pool *pgxpool.Pool, id, typ, order string, twice bool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO flag_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, id)
		if err != nil {
			return err
		}
		if (tag.RowsAffected() == 0 && !twice) || typ != "charge.succeeded" {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE flag_orders SET paid = true WHERE id = $1`, order); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO flag_audit (event_id, order_id) VALUES ($1, $2)`, id, order)
		return err
	})
}

// flagRecorder is a testing.TB that keeps what the suite reports, so that a
// planted defect's failures are judged here rather than failing the test.
type flagRecorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *flagRecorder) Helper() {}
func (r *flagRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *flagRecorder) Logf(string, ...any) {}
func (r *flagRecorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// certifyFlag certifies the flag receiver's DEDUP family and ACK-1 and
// returns the results.
func certifyFlag(t *testing.T, witness string, twice bool) *reports.Results {
	t.Helper()
	path := filepath.Join(t.TempDir(), "target.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(flagTarget, witness)), 0o600); err != nil {
		t.Fatal(err)
	}
	db := hookcerttest.Database(t, "")
	var res *reports.Results
	r := &flagRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		hookcerttest.RunFile(r, path, hookcerttest.WithDatabaseURL(db), hookcerttest.WithGeneratedSecrets(),
			hookcerttest.WithReceiver(flagReceiver(db, twice)), hookcerttest.WithLabelFilter("DEDUP || ACK-1"), hookcerttest.WithSeed(21),
			hookcerttest.OnResults(func(x *reports.Results) { res = x }))
	}()
	<-done
	if res == nil {
		t.Fatalf("no results: %q", r.errors)
	}
	return res
}

func TestFlagReceiverStateEffects(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: certifies an in-process receiver four times")
	}
	for _, c := range []struct {
		name, witness string
		twice         bool
	}{
		{"no witness", "", false},
		{"no witness, applied twice", "", true},
		{"witness", flagWitness, false},
		{"witness, applied twice", flagWitness, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := certifyFlag(t, c.witness, c.twice)
			byID := map[string]reports.Guarantee{}
			for _, g := range res.Guarantees {
				byID[g.ID] = g
				t.Logf("%s %s %v %s", g.ID, g.Status, g.Codes, g.Reason)
			}
			for _, id := range doubleChecks {
				g := byID[id]
				switch {
				case c.witness == "":
					// Nothing this receiver stores can show a second
					// application: never a pass, whether it applies one or not.
					if g.Status != reports.StatusNotApplicable || !strings.Contains(g.Reason, "cannot be shown") || !strings.Contains(g.Reason, "events.effect.witness") {
						t.Errorf("%s is %s (%s), want not_applicable saying a second application cannot be shown", id, g.Status, g.Reason)
					}
				case c.twice:
					if g.Status != reports.StatusFailed || !slices.Contains(g.Codes, "dedup.effects") && !slices.Contains(g.Codes, "ack.effects") {
						t.Errorf("%s is %s %v (%s), want failed with its effects code: the witness shows the double application", id, g.Status, g.Codes, g.Reason)
					}
				default:
					if g.Status != reports.StatusPassed {
						t.Errorf("%s is %s (%s), want passed", id, g.Status, g.Reason)
					}
				}
			}
			// No other guarantee passes on a check that cannot fail: every
			// passed one either is no double check or had its witness.
			for _, g := range res.Guarantees {
				if g.Status == reports.StatusPassed && c.witness == "" && slices.Contains(doubleChecks, g.ID) {
					t.Errorf("%s passed on effects read as a state without a witness", g.ID)
				}
			}
		})
	}
}
