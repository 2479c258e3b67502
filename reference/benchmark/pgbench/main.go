//go:build unix

// Command pgbench compares the reference receiver with pgbench running the
// reference's own transaction for one credit event, on one database, measured
// in one run: for each client count, rounds rotate between signed deliveries
// over loopback HTTP to an in-process receiver (closed loop, one delivery in
// flight per client), pgbench -M prepared with the same transaction as a
// custom script (random keys, same account, so the same balance row is hot on
// both sides), and the floor: the same loader and HTTP server with a handler
// that runs only that statement. Every round is printed, then the medians and
// their ratios.
//
//	go run ./reference/benchmark/pgbench -clients 1,8,32 -rounds 3 -duration 4s
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/internal/benchstat"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/reference/store"
	"github.com/jackc/pgx/v5/pgxpool"
)

// target is the share of pgbench's transaction rate the receiver must reach.
const target = 0.9

func main() {
	server := flag.String("database-url", envOr("HOOKCERT_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL server URL; the benchmark creates and drops a database of its own there")
	clients := flag.String("clients", "1,8,32", "client counts, comma-separated")
	rounds := flag.Int("rounds", 3, "rounds per client count and side")
	dur := flag.Duration("duration", 4*time.Second, "length of one round")
	pgbench := flag.String("pgbench", "/usr/bin/pgbench", "pgbench binary")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run (loader and receiver) to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pgbench benchmark:", err)
			os.Exit(2)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	var cs []int
	for _, f := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "pgbench benchmark: bad -clients", *clients)
			os.Exit(2)
		}
		cs = append(cs, n)
	}
	if err := run(*server, *pgbench, cs, *rounds, *dur); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "pgbench benchmark:", err)
		os.Exit(1)
	}
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

// script is the reference's transaction for customer_cash_balance_transaction.created
// on the clean path: store.CreditSQL itself (reference.creditOneTrip), one
// statement that is its own transaction, with a random event key and a payload
// of the size the receiver stores in place of its parameters. pgbench -M
// prepared sends it as the receiver's pgx does: one Bind, Execute and Sync.
var script = "\\set k random(1, 1000000000000)\n" + strings.NewReplacer(
	"$1", ":src",
	"$2", ":acct",
	"$3", "('evt_pgb_' || :client_id || '_' || :k)",
	"$4", "'"+store.TypeCashBalance+"'",
	"$5", "convert_to(:body, 'UTF8')",
	"$6", "('ccsbtxn_' || :k)",
	"$7", "100",
).Replace(store.CreditSQL) + ";\n"

func run(server, pgbench string, clients []int, rounds int, dur time.Duration) error {
	ctx := context.Background()
	// A database of the benchmark's own on the server, dropped at the end.
	scratch, cleanup, err := pgprovision.Provision(ctx, pgprovision.Options{URL: server, NamePrefix: "hookcert_pgbench"})
	if err != nil {
		return err
	}
	defer func() { _ = cleanup(context.Background()) }()
	u, err := url.Parse(scratch.URL)
	if err != nil {
		return fmt.Errorf("database url: cannot be parsed")
	}

	eps := reference.DefaultEndpoints()
	ep := eps[0]
	maxC := slices.Max(clients)
	load := &loader{path: ep.Path, secret: ep.Secret}
	// The receiver is opened for each of its rounds with a pool of c connections
	// and closed after it, so that its idle sessions and pgbench's c never add up
	// beyond the shared server's max_connections; each opening is warmed up first.
	poolURL := func(c int) string {
		q := u.Query()
		q.Set("pool_max_conns", strconv.Itoa(c))
		ru := *u
		ru.RawQuery = q.Encode()
		return ru.String()
	}
	refRound := func(c int, d time.Duration) (round, error) {
		srv, err := reference.Open(ctx, poolURL(c), reference.Options{Endpoints: eps, PurgeInterval: -1})
		if err != nil {
			return round{}, err
		}
		defer srv.Close()
		return load.serve(srv.Handler(), c, d)
	}
	// The floor: the same loader and HTTP server, but a handler that does
	// nothing per delivery except the same statement (no signature, no JSON, no
	// routing): what any Go HTTP receiver of this transaction pays on this
	// machine before its own work, so the reference's gap to pgbench splits
	// into the HTTP hop and the reference's own code.
	floorRound := func(c int, d time.Duration) (round, error) {
		pool, err := pgxpool.New(ctx, poolURL(c))
		if err != nil {
			return round{}, err
		}
		defer pool.Close()
		var seq atomic.Int64
		src := ep.KeySource()
		return load.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			k := "floor_" + strconv.FormatInt(time.Now().UnixNano(), 10) + "_" + strconv.FormatInt(seq.Add(1), 10)
			var inserted bool
			if err := pool.QueryRow(r.Context(), store.CreditSQL, src, ep.Account, "evt_"+k, store.TypeCashBalance, body, "ccsbtxn_"+k, 100).Scan(&inserted); err != nil || !inserted {
				http.Error(w, fmt.Sprintf("credit: inserted %v, err %v", inserted, err), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(floorAnswer)))
			_, _ = w.Write(floorAnswer)
		}), c, d)
	}
	// Migrate the schema before pgbench needs it.
	if _, err := refRound(1, 100*time.Millisecond); err != nil {
		return err
	}

	tmp, err := os.MkdirTemp("", "hookcert-pgbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	sp := filepath.Join(tmp, "credit.sql")
	if err := os.WriteFile(sp, []byte(script), 0o600); err != nil {
		return err
	}
	body, _ := load.event("evt_pgb_size_probe_000000000000")
	pg := &pgb{bin: pgbench, script: sp, url: u.String(), src: ep.KeySource(), acct: ep.Account, body: string(body)}

	fmt.Printf("reference receiver (in-process, loopback HTTP, signed Stripe cash credits) vs pgbench -M prepared (%s), same database; %d CPUs\n",
		"the reference's credit transaction", numCPU())
	// Warm-up of pgbench: the balance row, the indexes' pages.
	if _, err := pg.run(maxC, time.Second); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	rows, err := measure(clients, rounds, dur, refRound, floorRound, pg)
	if err != nil {
		return err
	}
	printMedians(rows, rounds, dur)
	return nil
}

// row is one client count's rounds: the reference's deliveries/s and
// pgbench's transactions/s.
type row struct {
	c               int
	ref, floor, pgb []float64
}

// round is one round of the reference: deliveries/s, and this process's CPU
// (user+sys: the loader and the receiver) per delivery.
type round struct {
	rate float64
	cpu  time.Duration
}

// selfCPU is this process's user+sys CPU time (getrusage RUSAGE_SELF).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs rounds of dur on each side for each client count, printing each.
func measure(clients []int, rounds int, dur time.Duration, refRound, floorRound func(c int, d time.Duration) (round, error), pg *pgb) ([]row, error) {
	sides := []string{"reference", "pgbench", "floor"}
	var rows []row
	for _, c := range clients {
		r := row{c: c}
		for i := 0; i < rounds; i++ {
			// Rotate which side goes first so drift favours none.
			for k := range sides {
				s := sides[(i+k)%len(sides)]
				var v float64
				var err error
				note := ""
				switch s {
				case "reference", "floor":
					run, who := refRound, "loader and receiver"
					if s == "floor" {
						run, who = floorRound, "loader and statement-only handler"
					}
					var rr round
					if rr, err = run(c, dur); err == nil {
						v = rr.rate
						note = fmt.Sprintf("  (this process, %s: %.0f µs CPU per delivery)", who, float64(rr.cpu.Microseconds()))
					}
					if s == "reference" {
						r.ref = append(r.ref, v)
					} else {
						r.floor = append(r.floor, v)
					}
				default:
					v, err = pg.run(c, dur)
					r.pgb = append(r.pgb, v)
				}
				if err != nil {
					return nil, fmt.Errorf("%s, %d clients: %w", s, c, err)
				}
				fmt.Printf("  clients %2d round %d %-9s %9.0f /s%s\n", c, i+1, s, v, note)
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// printMedians prints each client count's medians, their ratio and whether it
// reaches the target.
func printMedians(rows []row, rounds int, dur time.Duration) {
	fmt.Printf("\n%-8s %16s %16s %8s %8s %16s %8s\n", "clients", "deliveries/s", "pgbench tps", "ratio", "target", "floor /s", "floor")
	ok := true
	var summary []string
	for _, r := range rows {
		ref, pgt, fl := benchstat.Median(r.ref), benchstat.Median(r.pgb), benchstat.Median(r.floor)
		ratio := ref / pgt
		mark := "ok"
		if ratio < target {
			mark, ok = "BELOW", false
		}
		fmt.Printf("%-8d %16.0f %16.0f %7.3fx %7.1fx %16.0f %7.3fx %s\n", r.c, ref, pgt, ratio, target, fl, fl/pgt, mark)
		summary = append(summary, fmt.Sprintf("summary: reference vs pgbench, %d clients|%.0f deliveries/s vs %.0f tps|%.2fx|%s|%s",
			r.c, ref, pgt, ratio, map[bool]string{true: ">= 0.90x", false: "(none at 1 client)"}[r.c > 1], map[bool]string{true: "ok", false: "SHORT"}[mark == "ok" || r.c == 1]))
	}
	for _, r := range rows {
		fl, pgt := benchstat.Median(r.floor), benchstat.Median(r.pgb)
		summary = append(summary, fmt.Sprintf("summary: statement-only Go handler vs pgbench, %d clients (floor)|%.0f deliveries/s vs %.0f tps|%.2fx|-|-", r.c, fl, pgt, fl/pgt))
	}
	for _, l := range summary {
		fmt.Println(l)
	}
	if !ok {
		fmt.Printf("(medians of %d rounds of %s; the ratio is the reference's deliveries/s over pgbench's transactions/s;\n"+
			" the floor is the same loader and HTTP server with a handler that runs only the statement)\n", rounds, dur)
	}
}

type pgb struct {
	bin, script, url, src, acct, body string
}

var tpsRe = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// run runs pgbench for d with c clients and returns its transactions per second.
func (p *pgb) run(c int, d time.Duration) (float64, error) {
	secs := max(1, int(d.Round(time.Second)/time.Second))
	cmd := exec.Command(p.bin, "-n", "-M", "prepared", "-c", strconv.Itoa(c), "-j", strconv.Itoa(min(c, 2)),
		"-T", strconv.Itoa(secs), "-f", p.script, "-D", "src="+p.src, "-D", "acct="+p.acct, "-D", "body="+p.body, p.url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pgbench: %v: %s", err, lastLines(string(out), 5))
	}
	m := tpsRe.FindStringSubmatch(string(out))
	if m == nil {
		return 0, fmt.Errorf("pgbench printed no tps: %s", lastLines(string(out), 5))
	}
	if strings.Contains(string(out), "number of failed transactions: ") && !strings.Contains(string(out), "number of failed transactions: 0 ") {
		return 0, fmt.Errorf("pgbench transactions failed: %s", lastLines(string(out), 8))
	}
	return strconv.ParseFloat(m[1], 64)
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], " | ")
}

// loader plays the provider: each client holds one keep-alive connection and
// writes each signed request on it whole, then reads the answer, as pgbench's
// clients hold a session and send a statement. A raw connection rather than
// net/http's client: that client hands every request to a writer goroutine and
// every answer to a reader goroutine, wake-ups that belong to no receiver and
// cost the 2 CPUs the receiver and PostgreSQL share.
type loader struct {
	addr, path, secret string
	n                  atomic.Int64
}

// serve serves h over loopback HTTP for one round: a warm-up, then c clients
// for d, with this process's CPU per delivery over the measured part.
func (l *loader) serve(h http.Handler, c int, d time.Duration) (round, error) {
	hs := httptest.NewServer(h)
	defer hs.Close()
	l.addr = hs.Listener.Addr().String()
	if _, err := l.closed(c, 500*time.Millisecond); err != nil {
		return round{}, fmt.Errorf("warm-up: %w", err)
	}
	cpu0, n0 := selfCPU(), l.n.Load()
	rate, err := l.closed(c, d)
	return round{rate, (selfCPU() - cpu0) / time.Duration(max(1, l.n.Load()-n0))}, err
}

// closed keeps c deliveries in flight for d (each client sends its next as soon
// as the previous is answered, as pgbench's clients do) and returns processed
// deliveries per second; any other answer is an error.
func (l *loader) closed(c int, d time.Duration) (float64, error) {
	var done atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	start := time.Now()
	for i := 0; i < c; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := l.dial()
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
				return
			}
			defer cl.conn.Close()
			for time.Now().Before(deadline) {
				if err := cl.send(l); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	return float64(done.Load()) / time.Since(start).Seconds(), nil
}

// event is one fresh Stripe cash credit and its Stripe-Signature header
// (docs.stripe.com/webhooks: HMAC-SHA256 of "{t}.{body}", header t=...,v1=...),
// the body as json.Marshal writes the event (keys sorted).
func (l *loader) event(id string) ([]byte, string) {
	body := fmt.Appendf(nil, `{"data":{"object":{"amount":100,"currency":"usd","id":"ccsbtxn_%s"}},"id":"%s","object":"event","type":"customer_cash_balance_transaction.created"}`, id, id)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	m := hmac.New(sha256.New, []byte(l.secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return body, "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

// client is one loader client's connection.
type client struct {
	conn net.Conn
	br   *bufio.Reader
	req  []byte
}

func (l *loader) dial() (*client, error) {
	conn, err := net.Dial("tcp", l.addr)
	if err != nil {
		return nil, err
	}
	return &client{conn: conn, br: bufio.NewReader(conn)}, nil
}

// send posts one fresh signed credit and reads its answer: 200 processed, or an
// error naming what came instead.
func (cl *client) send(l *loader) error {
	id := "evt_bench_" + strconv.FormatInt(time.Now().UnixNano(), 10) + "_" + strconv.FormatInt(l.n.Add(1), 10)
	body, sig := l.event(id)
	r := append(cl.req[:0], "POST "...)
	r = append(r, l.path...)
	r = append(r, " HTTP/1.1\r\nHost: hookcert-bench\r\nContent-Type: application/json\r\nStripe-Signature: "...)
	r = append(r, sig...)
	r = append(r, "\r\nContent-Length: "...)
	r = strconv.AppendInt(r, int64(len(body)), 10)
	r = append(r, "\r\n\r\n"...)
	r = append(r, body...)
	cl.req = r
	_ = cl.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := cl.conn.Write(r); err != nil {
		return err
	}
	resp, err := http.ReadResponse(cl.br, nil)
	if err != nil {
		return err
	}
	rb, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(rb, []byte(`"processed"`)) {
		return fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(rb))
	}
	return nil
}

// floorAnswer is the statement-only handler's answer, which the loader accepts
// as the reference's own "processed".
var floorAnswer = []byte(`{"status":"processed"}` + "\n")

func numCPU() int { return runtime.NumCPU() }
