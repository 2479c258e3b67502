//go:build linux

// Command soakoverhead measures what hookcert soak itself costs: the soak runs
// in this process (traffic, recording, the final reads of every key and Judge)
// against the reference receiver in a separate process on a fresh database, so
// getrusage of this process is the harness alone. It prints, per run, the
// requested and achieved deliveries/s, whether the rate was sustained, and the
// harness's CPU (user+sys) per delivery beside the receiver's; the rate is
// stepped up until it is no longer sustained, then one unthrottled run shows
// the most the machine reaches while recording and checking (the median of a
// few such runs: one run moves with the machine's load).
//
//	go run ./bench/soakoverhead -rates 250,500,1000,1250,1500,2000 -duration 5s
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/pgprovision"
	"github.com/hookcert/hookcert/internal/benchstat"
	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/scenarios/soak"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// sustained is the share of the requested rate a run must achieve to count as
// sustained.
const sustained = 0.95

func main() {
	server := flag.String("database-url", envOr(pgprovision.EnvDatabaseURL, "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL server URL; the benchmark creates and drops a database of its own there")
	rates := flag.String("rates", "250,500,1000,1250,1500,2000", "--rate steps, ascending; stepping stops at the first not sustained")
	dur := flag.Duration("duration", 5*time.Second, "traffic per run")
	conc := flag.Int("concurrency", 8, "soak --concurrency")
	tops := flag.Int("unthrottled-runs", 3, "unthrottled runs; their median is the figure (the machine's load moves any one run)")
	prof := flag.String("cpuprofile", "", "write a CPU profile of this process (the harness) over all runs here")
	flag.Parse()
	var rs []float64
	for _, f := range strings.Split(*rates, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v <= 0 {
			fmt.Fprintln(os.Stderr, "soak overhead: bad -rates", *rates)
			os.Exit(2)
		}
		rs = append(rs, v)
	}
	if *prof != "" {
		f, err := os.Create(*prof)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak overhead: -cpuprofile:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	if *tops < 1 {
		fmt.Fprintln(os.Stderr, "soakoverhead: -unthrottled-runs must be at least 1")
		os.Exit(2)
	}
	if err := run(*server, rs, *dur, *conc, *tops); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "soak overhead:", err)
		os.Exit(1)
	}
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

func run(server string, rates []float64, dur time.Duration, conc, unthrottledRuns int) error {
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "hookcert_soakbench_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	defer func() { _, _ = admin.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)") }()
	u, err := url.Parse(server)
	if err != nil {
		return fmt.Errorf("database url: cannot be parsed")
	}
	u.Path = "/" + name

	tmp, err := os.MkdirTemp("", "hookcert-soakbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	exe := filepath.Join(tmp, "hookcert")
	if out, err := exec.Command("go", "build", "-o", exe, "./cmd/hookcert").CombinedOutput(); err != nil {
		return fmt.Errorf("build hookcert: %v: %s", err, out)
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	// The reference in its own process, on its default (public test) endpoints;
	// the database URL goes in its environment, not on its command line.
	recv := exec.Command(exe, "reference", "serve", "--listen", addr)
	recv.Env = append(os.Environ(), pgprovision.EnvDatabaseURL+"="+u.String())
	if err := recv.Start(); err != nil {
		return fmt.Errorf("start the reference: %w", err)
	}
	defer func() { _ = recv.Process.Kill(); _ = recv.Wait() }()
	base := "http://" + addr
	if err := waitReady(base+"/healthz", 30*time.Second); err != nil {
		return err
	}
	q := u.Query()
	q.Set("pool_max_conns", "8")
	pu := *u
	pu.RawQuery = q.Encode()
	pool, err := pgxpool.New(ctx, pu.String())
	if err != nil {
		return err
	}
	defer pool.Close()
	// Credits spread over the reference's default endpoints, as a provider's
	// events spread over accounts: each endpoint's key space has its own
	// balance row, so the soak measures recording and checking, not one row's
	// lock held through every commit's flush (bench/ceiling.sh, one hot row).
	env := &scenarios.Env{RunID: "soakbench", TimeScale: 3600, Observer: pgObserver{pool, &sync.Once{}}}
	for _, ep := range reference.DefaultEndpoints() {
		p, err := profiles.Lookup(ep.Profile)
		if err != nil {
			return err
		}
		env.Endpoints = append(env.Endpoints, scenarios.Endpoint{Profile: p, Account: ep.Account, URL: base + ep.Path, Secrets: []string{ep.Secret}})
	}

	fmt.Printf("hookcert soak (in this process: traffic, history, final reads, judge) against the reference receiver (separate process), "+
		"credits round-robin over its %d default endpoints (one balance row each), "+
		"concurrency %d, dup-rate 0.1, lost-ack-rate 0.05, no nemesis, %s of traffic per run; %d CPUs\n\n", len(env.Endpoints), conc, dur, runtime.NumCPU())
	fmt.Println("CPU per delivery: over the whole run (traffic, settling, final reads, judging) and, in parentheses, over the")
	fmt.Println("traffic alone (between its first and last progress reports, a second apart): what limits deliveries/s.")
	fmt.Printf("%-12s %12s %9s %11s %10s %26s %26s %17s %8s\n", "--rate", "deliveries/s", "of rate", "sustained", "attempts",
		"harness CPU µs/delivery", "receiver CPU µs/delivery", "harness/receiver", "judged")
	bestSustained, firstShare, topRatio := 0.0, "", 0.0
	var seed int64
	one := func(rate float64) (float64, error) {
		seed++
		r, err := soakOnce(ctx, env, recv.Process.Pid, soak.Options{Duration: dur, Concurrency: conc, Rate: rate, DupRate: 0.1,
			LostAckRate: 0.05, Seed: seed, SettleBound: 30 * time.Second})
		if err != nil {
			return 0, err
		}
		label, share, sus := "unthrottled", "", ""
		if rate > 0 {
			label = fmt.Sprintf("%.0f", rate)
			share = fmt.Sprintf("%.2f", r.rate/rate)
			sus = "no"
			if r.rate >= sustained*rate {
				sus = "yes"
				bestSustained = max(bestSustained, rate)
			}
		}
		verdict := "PASS"
		if !r.passed {
			verdict = "FAIL"
		}
		ratio := r.harnessCPU.Seconds() / r.receiverCPU.Seconds()
		if rate == 0 {
			topRatio = ratio
		} else if firstShare == "" {
			firstShare = label + "/s reached " + share + " of it"
		}
		traffic := func(cpu time.Duration) string {
			if r.trafficAttempts == 0 {
				return "(-)"
			}
			return fmt.Sprintf("(%.1f)", cpu.Seconds()*1e6/float64(r.trafficAttempts))
		}
		fmt.Printf("%-12s %12.0f %9s %11s %10d %16.1f %-9s %16.1f %-9s %16.3fx %8s\n", label, r.rate, share, sus, r.attempts,
			r.harnessCPU.Seconds()*1e6/float64(r.attempts), traffic(r.trafficHarness),
			r.receiverCPU.Seconds()*1e6/float64(r.attempts), traffic(r.trafficReceiver), ratio, verdict)
		if !r.passed {
			return r.rate, errors.New("the soak did not pass: the figures above are not of a clean run")
		}
		return r.rate, nil
	}
	for _, rate := range rates {
		got, err := one(rate)
		if err != nil {
			return err
		}
		if got < sustained*rate {
			break
		}
	}
	var runs, ratios []float64
	for range unthrottledRuns {
		got, err := one(0)
		if err != nil {
			return err
		}
		runs, ratios = append(runs, got), append(ratios, topRatio)
	}
	top, topRatio := benchstat.Median(runs), benchstat.Median(ratios)
	best := fmt.Sprintf("%.0f deliveries/s", bestSustained)
	if bestSustained == 0 {
		best = "none (the first step, " + firstShare + ")"
	}
	each := make([]string, len(runs))
	for i, r := range runs {
		each[i] = fmt.Sprintf("%.0f", r)
	}
	fmt.Printf("\nhighest --rate step sustained (>= %.0f%% of it achieved): %s; unthrottled: %.0f deliveries/s, recorded and judged (median of %d runs: %s)\n",
		sustained*100, best, top, len(runs), strings.Join(each, ", "))
	mark := "SHORT"
	if top >= 2000 {
		mark = "ok"
	}
	fmt.Printf("summary: soak, recording and checking|%.0f deliveries/s unthrottled (%d CPUs)|harness CPU %.2fx the receiver's|>= 2000/s|%s\n", top, runtime.NumCPU(), topRatio, mark)
	fmt.Printf("harness CPU per delivery unthrottled: %.3fx the receiver's (the harness signs, sends, records and judges; the receiver verifies and commits)\n", topRatio)
	return nil
}

type result struct {
	rate                    float64
	attempts                int
	harnessCPU, receiverCPU time.Duration
	passed                  bool
	// The traffic window between the first and last progress reports: its
	// attempts and the CPU each side used in it.
	trafficAttempts                 int64
	trafficHarness, trafficReceiver time.Duration
}

// cpuMark is both sides' CPU and the soak's attempts at one progress report.
type cpuMark struct {
	harness, receiver time.Duration
	attempts          int64
}

// soakOnce runs one soak and Judge, and measures this process's CPU and the
// receiver's over it (the settling and the final reads included: they are part
// of what the harness does for every delivery).
func soakOnce(ctx context.Context, env *scenarios.Env, pid int, o soak.Options) (result, error) {
	r0, err := procCPU(pid)
	if err != nil {
		return result{}, err
	}
	var first, last *cpuMark
	o.Progress = func(p soak.Progress) {
		if p.Phase != "traffic" {
			return
		}
		rc, _ := procCPU(pid)
		m := &cpuMark{harness: selfCPU(), receiver: rc, attempts: p.Attempts}
		if first == nil {
			first = m
		}
		last = m
	}
	h0 := selfCPU()
	res, err := soak.Run(ctx, env, soak.Hooks{}, o)
	if err != nil {
		return result{}, err
	}
	s := soak.Judge(res.History, res.TrafficNS)
	h1 := selfCPU()
	r1, err := procCPU(pid)
	if err != nil {
		return result{}, err
	}
	out := result{rate: s.DeliveriesPerS, attempts: s.Attempts, harnessCPU: h1 - h0, receiverCPU: r1 - r0, passed: s.Passed}
	if first != nil && last.attempts > first.attempts {
		out.trafficAttempts = last.attempts - first.attempts
		out.trafficHarness, out.trafficReceiver = last.harness-first.harness, last.receiver-first.receiver
	}
	return out, nil
}

// selfCPU is this process's user+sys CPU time (getrusage RUSAGE_SELF).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is another process's user+sys CPU time from /proc/PID/stat (fields
// 14 and 15, in clock ticks of 100 Hz on Linux).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitReady(u string, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the reference was not ready at %s within %s", u, bound)
}

// pgObserver reads the reference receiver's tables: its event rows and ledger
// entries per key, the two reads the soak judges a credit by.
type pgObserver struct {
	pool *pgxpool.Pool
	// analyze runs ANALYZE before the first read: on a database filled since it
	// was created the planner still takes the tables for empty, and may read a
	// key through the (source, account, received_at) index, scanning every row
	// of the account for each key read.
	analyze *sync.Once
}

func (o pgObserver) EventRows(ctx context.Context, k profiles.Key) (int, error) {
	o.analyze.Do(func() { _, _ = o.pool.Exec(ctx, "ANALYZE processed_webhook_events, ledger_entries") })
	var n int
	err := o.pool.QueryRow(ctx, "SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3", k.Source, k.Account, k.EventID).Scan(&n)
	return n, err
}
func (o pgObserver) Effects(ctx context.Context, k profiles.Key, _ string) (int, error) {
	o.analyze.Do(func() { _, _ = o.pool.Exec(ctx, "ANALYZE processed_webhook_events, ledger_entries") })
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

// KeyTTL: the soak reads no key expiry.
func (pgObserver) KeyTTL(context.Context, profiles.Key) (time.Duration, bool, bool, error) {
	return 0, false, false, errors.New("key_ttl: not read by the soak")
}
