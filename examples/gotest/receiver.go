// Package gotest certifies a webhook receiver from inside its own `go test`,
// through the hookcerttest library: the receiver (here hookcert's reference
// receiver) runs in the test process, on a throwaway PostgreSQL database, and
// the harness kills and restarts it in process, as SIGKILL and a supervisor
// would. reference_test.go is the test; this file is what a receiver's own
// test needs around it: a Factory that builds the receiver on the pool of the
// incarnation hookcerttest.Receiver hands it, and the target that describes it.
package gotest

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/scenarios/hookcerttest"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// receiverConns bounds the receiver's pool: enough for a burst of concurrent
// duplicates to reach the database together, small on a shared server.
const receiverConns = 10

// Reference is the reference receiver served in this process by a
// hookcerttest.Receiver: a fixed loopback address, a Kill that acts as
// SIGKILL would, a Restart that builds a new incarnation at the same URL.
type Reference struct {
	*hookcerttest.Receiver
	opts reference.Options
	// app is the current incarnation's, for Purge.
	app atomic.Pointer[reference.Server]
}

// StartReference serves the reference receiver on the database at dbURL (it
// migrates it) on a free loopback port. Close stops it.
func StartReference(ctx context.Context, dbURL string, opts reference.Options) (*Reference, error) {
	if opts.Endpoints == nil {
		opts.Endpoints = reference.DefaultEndpoints()
	}
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, errors.New("reference: the database URL does not parse")
	}
	cfg.MaxConns = receiverConns
	r := &Reference{opts: opts}
	r.Receiver, err = hookcerttest.StartReceiver(ctx, func(ctx context.Context, inc *hookcerttest.Incarnation) (http.Handler, error) {
		pool, err := inc.PoolWithConfig(ctx, cfg)
		if err != nil {
			return nil, err
		}
		o := r.opts
		// An armed crash failpoint kills this incarnation, not the test process.
		o.Crash = func() {
			if err := inc.Kill(); err != nil {
				panic(err) // the crash must happen: a receiver that survives it would be judged wrongly
			}
		}
		app, err := reference.New(ctx, pool, o)
		if err != nil {
			return nil, err
		}
		r.app.Store(app)
		return app.Handler(), nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Purge purges the running receiver as of asOf (its admin purge, in process).
func (r *Reference) Purge(ctx context.Context, asOf time.Time) error {
	if r.Current() == nil {
		return errors.New("the receiver is down")
	}
	_, err := r.app.Load().Purge(ctx, asOf)
	return err
}

// Endpoints are the reference endpoints of the example: two accounts of one
// profile, several profiles, header-carried and body-carried event IDs, signed
// timestamps and not (as in `hookcert demo`), each with a fresh secret.
func Endpoints() ([]reference.Endpoint, error) {
	var out []reference.Endpoint
	for _, e := range []struct{ profile, account string }{
		{"stripe", "acct_A"}, {"stripe", "acct_B"}, {"standard-webhooks", "acct_A"},
		{"github", "acct_A"}, {"shopify", "acct_A"}, {"svix", "acct_A"}, {"slack", "acct_A"},
	} {
		sec, err := profiles.GenerateSecret(e.profile, rand.Reader)
		if err != nil {
			return nil, err
		}
		out = append(out, reference.Endpoint{Profile: e.profile, Account: e.account, Path: "/webhooks/" + e.profile + "/" + e.account, Secret: sec})
	}
	return out, nil
}

// Target describes the running reference to the harness: its endpoints and
// retention, its tables and queries (those of `hookcert demo`), the in-process
// crash hooks and every capability it offers.
func (r *Reference) Target(dbURL string) hookcerttest.Target {
	tg := hookcerttest.Target{
		Name:        "reference receiver (in process)",
		BaseURL:     r.URL(),
		DatabaseURL: dbURL,
		EventTable:  "processed_webhook_events",
		EffectTable: "ledger_entries",
		Queries: hookcerttest.Queries{
			EventRows:      "SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3",
			Effects:        "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3",
			ObjectEffects:  "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND object_id=$4",
			Object:         "SELECT version, status FROM subscriptions WHERE source=$1 AND account_id=$2 AND object_id=$4",
			Payment:        "SELECT status FROM payments WHERE source=$1 AND account_id=$2 AND payment_id=$4",
			PayloadPresent: reference.PayloadPresentQuery,
		},
		FailpointsPath: "/_hookcert/failpoints",
		Retention:      &hookcerttest.Retention{Purge: r.Purge},
		Kill:           r.Kill,
		Restart:        r.Restart,
		Alive:          r.Alive,
		Capabilities:   []string{"crash", "lock-gating", "connection-loss", "failpoints", "ordering", "state-machine", "domain-constraint", "deletion", "retention"},
	}
	for _, e := range r.opts.Endpoints {
		ret := e.Retention()
		tg.Endpoints = append(tg.Endpoints, hookcerttest.Endpoint{Profile: e.Profile, Source: e.Source, Account: e.Account, Path: e.Path,
			Secret: e.Secret, KeyTTL: ret.KeyTTL, PayloadTTL: ret.PayloadTTL})
	}
	return tg
}
