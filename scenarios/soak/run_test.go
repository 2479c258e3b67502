package soak

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/pgfault"
	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/adapters/pgsession"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// pgObserver reads the reference receiver's tables.
type pgObserver struct{ pool *pgxpool.Pool }

func (o pgObserver) EventRows(ctx context.Context, k profiles.Key) (int, error) {
	var n int
	err := o.pool.QueryRow(ctx, "SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3", k.Source, k.Account, k.EventID).Scan(&n)
	return n, err
}
func (o pgObserver) Effects(ctx context.Context, k profiles.Key, _ string) (int, error) {
	var n int
	err := o.pool.QueryRow(ctx, "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3", k.Source, k.Account, k.EventID).Scan(&n)
	return n, err
}
func (pgObserver) ObjectEffects(context.Context, string, string, string) (int, error) { return 0, nil }
func (pgObserver) Object(context.Context, string, string, string) (int64, string, bool, error) {
	return 0, "", false, nil
}
func (pgObserver) Payment(context.Context, string, string, string) (string, bool, error) {
	return "", false, nil
}

// A short soak of the reference receiver, served in-process on a throwaway
// database, with its sessions terminated on a schedule: every goroutine of
// the soak meets under the race detector, and nothing is lost or duplicated.
func TestRunReferenceInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("soaks for two seconds against PostgreSQL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	eps, hts, pool := inProcessReference(ctx, t)
	env := &scenarios.Env{RunID: "racetest", TimeScale: 3600, Observer: pgObserver{pool}}
	for _, ep := range eps {
		p, err := profiles.Lookup(ep.Profile)
		if err != nil {
			t.Fatal(err)
		}
		env.Endpoints = append(env.Endpoints, scenarios.Endpoint{Profile: p, Account: ep.Account, URL: hts.URL + ep.Path, Secrets: []string{ep.Secret}})
	}
	database := pool.Config().ConnConfig.Database
	hooks := Hooks{Terminate: func(ctx context.Context) ([]int, error) {
		return pgfault.TerminateBackends(ctx, pool, database, pgfault.Filter{})
	}}
	var progress int
	var last Progress
	res, err := Run(ctx, env, hooks, Options{Duration: 2 * time.Second, Concurrency: 4, Rate: 150, DupRate: 0.2, LostAckRate: 0.2,
		Nemesis: []Nemesis{{Kind: KindPGTerminate, Every: 600 * time.Millisecond}}, Seed: 1, SettleBound: 10 * time.Second,
		Progress: func(p Progress) { progress, last = progress+1, p }})
	if err != nil {
		t.Fatal(err)
	}
	s := Judge(res.History, res.TrafficNS)
	if !s.Passed || s.Lost != 0 || s.Duplicated != 0 || s.Acknowledged < 50 {
		t.Fatalf("soak %+v", s)
	}
	if s.AttemptOutcomes["unknown"] == 0 {
		t.Errorf("no lost acknowledgement recorded: %v", s.AttemptOutcomes)
	}
	if len(res.Faults) < 2 {
		t.Errorf("faults %+v, want at least 2 pg-terminate", res.Faults)
	}
	if res.Settle.StillUnacknowledged != 0 || !res.Settle.Quiescent {
		t.Errorf("settle %+v", res.Settle)
	}
	if progress < 2 {
		t.Errorf("progress heard %d times", progress)
	}
	// The acknowledgements the soak lost on purpose are counted apart from
	// errors, and each is an unknown outcome in the history.
	if last.LostAcks == 0 || last.LostAcks > int64(s.AttemptOutcomes["unknown"]) || last.LostAcks+last.Errors+last.Acknowledged != last.Attempts {
		t.Errorf("last progress %+v; attempt outcomes %v", last, s.AttemptOutcomes)
	}
}

func (pgObserver) KeyTTL(context.Context, profiles.Key) (time.Duration, bool, bool, error) {
	return 0, false, false, nil
}

// inProcessReference serves the reference receiver's first two endpoints in
// process on a throwaway database, and opens a pool on it for the soak's
// reads; all are closed when t ends.
func inProcessReference(ctx context.Context, t *testing.T) ([]reference.Endpoint, *httptest.Server, *pgxpool.Pool) {
	t.Helper()
	dbURL := pgtest.Database(t)
	eps := reference.DefaultEndpoints()[:2]
	srv, err := reference.Open(ctx, dbURL, reference.Options{Endpoints: eps, PurgeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	hts := httptest.NewServer(srv.Handler())
	t.Cleanup(hts.Close)
	pool, err := pgsession.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return eps, hts, pool
}
