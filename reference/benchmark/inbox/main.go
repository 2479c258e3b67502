// Command inbox measures the reference's inbox drain rate: signed cash credits
// are accepted over loopback HTTP by a receiver in inbox mode with no workers
// (so a backlog of pending events builds up), then workers are started on the
// same database and timed until no event is pending or claimed. It prints the
// events applied per second beside the rate the backlog was accepted at.
//
//	go run ./reference/benchmark/inbox -events 4000 -workers 4
package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/reference"
)

func main() {
	server := flag.String("database-url", envOr(pgprovision.EnvDatabaseURL, "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL server URL; the benchmark creates and drops a database of its own there")
	events := flag.Int("events", 4000, "backlog size: events accepted before the workers start")
	workers := flag.Int("workers", reference.DefaultWorkers, "inbox workers")
	senders := flag.Int("senders", 16, "concurrent senders filling the backlog")
	flag.Parse()
	if err := run(*server, *events, *workers, *senders); err != nil {
		fmt.Fprintln(os.Stderr, "inbox benchmark:", err)
		os.Exit(1)
	}
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

func run(server string, events, workers, senders int) error {
	ctx := context.Background()
	scratch, cleanup, err := pgprovision.Provision(ctx, pgprovision.Options{URL: server, NamePrefix: "hookcert_inboxbench"})
	if err != nil {
		return err
	}
	defer func() { _ = cleanup(context.Background()) }()

	eps := reference.DefaultEndpoints()
	ep := eps[0]
	// The accepting receiver runs no workers: the whole backlog is pending when
	// the workers start, so their rate is measured alone.
	srv, err := reference.Open(ctx, scratch.URL, reference.Options{Endpoints: eps, PurgeInterval: -1,
		Mode: reference.ModeInbox, Inbox: reference.InboxOptions{Workers: -1}})
	if err != nil {
		return err
	}
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders * 2}, Timeout: 30 * time.Second}
	t0 := time.Now()
	if err := fill(client, hs.URL+ep.Path, ep.Secret, events, senders); err != nil {
		return err
	}
	acceptRate := float64(events) / time.Since(t0).Seconds()

	pool, err := pgxpool.New(ctx, scratch.URL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if n, err := left(ctx, pool); err != nil || n != events {
		return fmt.Errorf("backlog: %d events pending, want %d (%v)", n, events, err)
	}
	w, err := reference.NewWorkers(pool, reference.InboxOptions{Workers: workers}, nil)
	if err != nil {
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() { w.Run(wctx) })
	var n int
	for {
		if n, err = left(ctx, pool); err != nil || n == 0 {
			break
		}
		if time.Since(start) > 5*time.Minute {
			err = fmt.Errorf("%d events still pending or claimed after 5m", n)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	drained := time.Since(start)
	stop()
	wg.Wait()
	if err != nil {
		return err
	}
	var done int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM processed_webhook_events WHERE inbox_state = 'done'`).Scan(&done); err != nil {
		return err
	}
	if done != events {
		return fmt.Errorf("%d of %d events done", done, events)
	}
	rate := float64(events) / drained.Seconds()
	fmt.Printf("inbox drain: %d events applied by %d workers in %s: %.0f events/s (backlog accepted at %.0f/s by %d senders)\n",
		events, workers, drained.Round(time.Millisecond), rate, acceptRate, senders)
	fmt.Printf("summary: inbox drain, %d workers|%.0f events/s applied (backlog accepted at %.0f/s)|%.2fx of accepted|-|-\n", workers, rate, acceptRate, rate/acceptRate)
	return nil
}

// left counts events not yet applied (pending or claimed).
func left(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM processed_webhook_events WHERE inbox_state IN ('pending', 'claimed')`).Scan(&n)
	return n, err
}

// fill sends events signed cash credits from senders goroutines; each must be
// answered 202 accepted.
func fill(client *http.Client, url, secret string, events, senders int) error {
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(events) || firstErr.Load() != nil {
					return
				}
				if err := send(client, url, secret, "evt_inboxbench_"+strconv.FormatInt(i, 10)); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return err
	}
	return nil
}

// send delivers one Stripe cash credit signed as docs.stripe.com/webhooks says
// (HMAC-SHA256 of "{t}.{body}", header t=...,v1=...).
func send(client *http.Client, url, secret, id string) error {
	body, _ := json.Marshal(map[string]any{"id": id, "object": "event", "type": "customer_cash_balance_transaction.created",
		"data": map[string]any{"object": map[string]any{"id": "ccsbtxn_" + id, "amount": 100, "currency": "usd"}}})
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "." + string(body)))
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", "t="+ts+",v1="+hex.EncodeToString(m.Sum(nil)))
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	rb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(rb))
	}
	return nil
}
