// Command purge measures the reference receiver's retention purge under load: it
// fills a fresh database with expired event keys, then runs signed deliveries at a
// fixed rate against an in-process receiver over loopback HTTP, first without a
// purge and then while the purge deletes every expired row, and prints the
// acknowledgement latencies of both phases side by side with the purge duration.
//
//	go run ./reference/benchmark/purge -rows 1000000 -rate 200 -duration 10s
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
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/reference/store"
)

func main() {
	server := flag.String("database-url", envOr("HOOKCERT_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL server URL; the benchmark creates and drops a database of its own there")
	rows := flag.Int("rows", 1_000_000, "expired rows to purge")
	rate := flag.Int("rate", 200, "deliveries per second in both phases")
	dur := flag.Duration("duration", 10*time.Second, "length of the phase without purge")
	batch := flag.Int("batch", store.DefaultPurgeBatch, "rows per purge transaction")
	pause := flag.Duration("pause", 0, "pause between purge batches")
	flag.Parse()
	if err := run(*server, *rows, *rate, *dur, store.PurgeOptions{BatchSize: *batch, Pause: *pause}); err != nil {
		fmt.Fprintln(os.Stderr, "purge benchmark:", err)
		os.Exit(1)
	}
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

func run(server string, rows, rate int, dur time.Duration, opts store.PurgeOptions) error {
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer admin.Close(ctx)
	// A database of the benchmark's own on the server, dropped at the end.
	scratch, cleanup, err := pgprovision.Provision(ctx, pgprovision.Options{URL: server, NamePrefix: "hookcert_purgebench"})
	if err != nil {
		return err
	}
	defer func() { _ = cleanup(context.Background()) }()
	u, err := url.Parse(scratch.URL)
	if err != nil {
		return fmt.Errorf("database url: cannot be parsed")
	}

	eps := reference.DefaultEndpoints()
	srv, err := reference.Open(ctx, u.String(), reference.Options{Endpoints: eps, PurgeInterval: -1, Purge: opts})
	if err != nil {
		return err
	}
	defer srv.Close()
	ep := eps[0] // stripe acct_A: key TTL 744h, payload TTL 24h

	t0 := time.Now()
	if _, err := admin.Exec(ctx, "SELECT 1"); err != nil {
		return err
	}
	db, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return err
	}
	defer db.Close(ctx)
	if err := fillExpired(ctx, db, ep, rows); err != nil {
		return err
	}
	fmt.Printf("filled %d expired rows in %s\n", rows, time.Since(t0).Round(time.Millisecond))

	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 30 * time.Second}
	load := &loader{client: client, url: hs.URL + ep.Path, secret: ep.Secret}

	// Warm-up: connections, prepared plans.
	load.phase(rate, 2*time.Second, nil)
	base := load.phase(rate, dur, nil)

	var purgeDur time.Duration
	var res store.PurgeResult
	var perr error
	during := load.phase(rate, 0, func() {
		start := time.Now()
		res, perr = srv.Purge(ctx, time.Now())
		purgeDur = time.Since(start)
	})
	if perr != nil {
		return perr
	}
	var left int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM processed_webhook_events WHERE event_id LIKE 'evt_expired_%'`).Scan(&left); err != nil {
		return err
	}
	fmt.Printf("purge: %d keys deleted in %d batches of <= %d rows, %s (%.0f rows/s); expired rows left: %d\n",
		res.KeysDeleted, res.Batches, orDefault(opts.BatchSize), purgeDur.Round(time.Millisecond), float64(res.KeysDeleted)/purgeDur.Seconds(), left)
	// The purge leaves a million dead tuples: vacuum and checkpoint them now (their
	// cost is printed) so the second baseline is not measured inside the
	// autovacuum the purge triggers. On a shared machine p99 is set by rare disk
	// stalls, so the purge is compared with no-purge windows on both sides.
	t1 := time.Now()
	if _, err := db.Exec(ctx, `VACUUM processed_webhook_events`); err != nil {
		return fmt.Errorf("vacuum after purge: %w", err)
	}
	if _, err := db.Exec(ctx, `CHECKPOINT`); err != nil {
		fmt.Printf("note: CHECKPOINT after the purge failed (%v)\n", err)
	}
	fmt.Printf("vacuum and checkpoint after the purge: %s\n", time.Since(t1).Round(time.Millisecond))
	after := load.phase(rate, dur, nil)
	printPhases(rate, base, during, after)
	return nil
}

// fillExpired inserts rows expired event keys for ep, vacuums and checkpoints.
func fillExpired(ctx context.Context, db *pgx.Conn, ep reference.Endpoint, rows int) error {
	// Expired rows of the same key space the deliveries write to, with a payload of
	// a typical event's size.
	if _, err := db.Exec(ctx, `INSERT INTO processed_webhook_events (source, account_id, event_id, event_type, payload, received_at)
		SELECT $1, $2, 'evt_expired_' || g, 'customer_cash_balance_transaction.created', convert_to(repeat('x', 600), 'UTF8'),
		       now() - interval '60 days' - g * interval '1 second'
		FROM generate_series(1, $3::int) g`, ep.KeySource(), ep.Account, rows); err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	if _, err := db.Exec(ctx, `VACUUM ANALYZE processed_webhook_events`); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	// Flush the fill's dirty pages now, so that the baseline is not measured
	// during the checkpoint the fill itself caused (that would flatter the ratio);
	// needs superuser, and says so when it cannot.
	if _, err := db.Exec(ctx, `CHECKPOINT`); err != nil {
		fmt.Printf("note: CHECKPOINT after the fill failed (%v); the baseline may include the fill's checkpoint\n", err)
	}
	return nil
}

// printPhases prints the latencies of the three phases, the two windows
// without purge pooled, and the p99 ratio.
func printPhases(rate int, base, during, after *stats) {
	pooled := &stats{lat: append(append([]time.Duration(nil), base.lat...), after.lat...), errors: base.errors + after.errors}
	slices.Sort(pooled.lat)
	fmt.Printf("\n%-26s %10s %10s %10s %10s %8s\n", "deliveries at "+strconv.Itoa(rate)+"/s", "count", "p50", "p99", "max", "errors")
	base.print("without purge (before)")
	during.print("during purge")
	after.print("without purge (after)")
	pooled.print("without purge (both)")
	ratio := float64(during.p(0.99)) / float64(pooled.p(0.99))
	fmt.Printf("\np99 during purge / p99 without (both windows): %.2fx (goal <= 2x)\n", ratio)
	mark := "SHORT"
	if ratio <= 2 {
		mark = "ok"
	}
	fmt.Printf("summary: purge latency at %d/s|p99 %s during purge vs %s without|%.2fx|<= 2x|%s\n",
		rate, during.p(0.99).Round(time.Microsecond*100), pooled.p(0.99).Round(time.Microsecond*100), ratio, mark)
}

func orDefault(n int) int {
	if n <= 0 {
		return store.DefaultPurgeBatch
	}
	return n
}

type loader struct {
	client *http.Client
	url    string
	secret string
	mu     sync.Mutex
	n      int
}

type stats struct {
	lat    []time.Duration
	errors int
}

func (s *stats) p(q float64) time.Duration {
	if len(s.lat) == 0 {
		return 0
	}
	return s.lat[min(len(s.lat)-1, int(float64(len(s.lat))*q))]
}

func (s *stats) print(name string) {
	fmt.Printf("%-26s %10d %10s %10s %10s %8d\n", name, len(s.lat), s.p(0.5).Round(10*time.Microsecond),
		s.p(0.99).Round(10*time.Microsecond), s.p(1).Round(10*time.Microsecond), s.errors)
}

// phase sends deliveries at rate per second, each in its own goroutine (arrivals
// do not wait for earlier answers, as a provider's do not), for d or, when work is
// given, until work returns.
func (l *loader) phase(rate int, d time.Duration, work func()) *stats {
	st := &stats{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	stop := make(chan struct{})
	if work != nil {
		go func() { work(); close(stop) }()
	} else {
		time.AfterFunc(d, func() { close(stop) })
	}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
loop:
	for {
		select {
		case <-stop:
			break loop
		case <-tick.C:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat, err := l.send()
			mu.Lock()
			if err != nil {
				st.errors++
			} else {
				st.lat = append(st.lat, lat)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(st.lat, func(i, j int) bool { return st.lat[i] < st.lat[j] })
	return st
}

// send delivers one fresh Stripe cash event, signed as Stripe documents
// (docs.stripe.com/webhooks: HMAC-SHA256 of "{t}.{body}", header t=...,v1=...).
func (l *loader) send() (time.Duration, error) {
	l.mu.Lock()
	l.n++
	id := fmt.Sprintf("evt_bench_%d_%d", time.Now().UnixNano(), l.n)
	l.mu.Unlock()
	body, _ := json.Marshal(map[string]any{"id": id, "object": "event", "type": "customer_cash_balance_transaction.created",
		"data": map[string]any{"object": map[string]any{"id": "ccsbtxn_" + id, "amount": 100, "currency": "usd"}}})
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	m := hmac.New(sha256.New, []byte(l.secret))
	m.Write([]byte(ts + "." + string(body)))
	req, _ := http.NewRequest(http.MethodPost, l.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", "t="+ts+",v1="+hex.EncodeToString(m.Sum(nil)))
	start := time.Now()
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	lat := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	return lat, nil
}
