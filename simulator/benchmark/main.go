//go:build linux

// Command benchmark measures the simulator against a no-op receiver: delivery
// throughput beside wrk's on the same receiver, and the barrier's release spread
// as seen by the receiver. bench.sh drives it; run that, not this, by hand.
//
//	benchmark serve                       no-op receiver; prints its URL on stdout
//	benchmark wrkscript -out F            writes a wrk Lua script posting one signed delivery
//	benchmark fire -url U -c 16 -d 5s     signed deliveries for a duration; prints deliveries/s
//	benchmark spread -url U -copies 16 -n 50   receiver-side arrival spread of barrier releases
//	benchmark compare -sim X -wrk Y       prints the two rates side by side
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// benchSecret is a throwaway test secret for the local no-op receiver.
const benchSecret = "whsec_hookcert_benchmark_only"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchmark serve|wrkscript|fire|spread|compare [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "wrkscript":
		err = wrkScript(os.Args[2:])
	case "fire":
		err = fire(os.Args[2:])
	case "spread":
		err = spread(os.Args[2:])
	case "compare":
		err = compare(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q: want serve, wrkscript, fire, spread or compare", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchmark:", err)
		os.Exit(1)
	}
}

// arrivals keeps, per batch, the instants requests finished arriving (the whole
// body read), in ns since the server started.
type arrivals struct {
	mu    sync.Mutex
	start time.Time
	m     map[string][]int64
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ar := &arrivals{start: time.Now(), m: map[string][]int64{}}
	mux := http.NewServeMux()
	ok := []byte(`{"status":"processed"}`)
	mux.HandleFunc("POST /hook", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write(ok)
	})
	mux.HandleFunc("POST /spread/{batch}", func(w http.ResponseWriter, r *http.Request) {
		// The arrival is when the whole body is in: a receiver can only verify
		// and process then.
		io.Copy(io.Discard, r.Body)
		t := int64(time.Since(ar.start))
		b := r.PathValue("batch")
		ar.mu.Lock()
		ar.m[b] = append(ar.m[b], t)
		ar.mu.Unlock()
		w.Write(ok)
	})
	mux.HandleFunc("GET /arrivals/{batch}", func(w http.ResponseWriter, r *http.Request) {
		ar.mu.Lock()
		v := ar.m[r.PathValue("batch")]
		delete(ar.m, r.PathValue("batch"))
		ar.mu.Unlock()
		json.NewEncoder(w).Encode(v)
	})
	ts := newTSReceiver()
	mux.HandleFunc("GET /ts-arrivals/{batch}", func(w http.ResponseWriter, r *http.Request) {
		k, u := ts.take(r.PathValue("batch"))
		json.NewEncoder(w).Encode(map[string][]int64{"kernel": k, "user": u})
	})
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Set on the listener so accepted sockets inherit it from their first byte:
	// a connection may receive its whole request before the accept loop runs.
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	tl, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	go ts.serve(tl)
	// Line 1: the net/http receiver; line 2: the kernel-timestamping receiver.
	fmt.Printf("http://%s\nhttp://%s\n", l.Addr(), tl.Addr())
	srv := &http.Server{Handler: mux}
	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		<-ch
		srv.Close()
	}()
	if err := srv.Serve(l); err != http.ErrServerClosed {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

func stripe() profiles.Profile {
	p, err := profiles.Lookup("stripe")
	if err != nil {
		panic(err) // the registry always has stripe
	}
	return p
}

func event(i int) profiles.Event {
	return profiles.Event{Source: "stripe", Account: "acct_bench", ID: simulator.NewEventID(1, "stripe", i),
		Type: "payment_intent.succeeded", ObjectID: "pi_bench", Amount: 1000, Currency: "usd",
		Status: "succeeded", Created: time.Now().UTC().Truncate(time.Second)}
}

// wrkScript writes a Lua script that posts one signed stripe delivery, the same
// shape of request the simulator sends (wrk does not re-sign per request).
func wrkScript(args []string) error {
	fs := flag.NewFlagSet("wrkscript", flag.ContinueOnError)
	out := fs.String("out", "", "output file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p := stripe()
	ev := event(0)
	body, h, err := profiles.Render(p, ev, profiles.Attempt{N: 1, SignedAt: time.Now()}, []string{benchSecret})
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	var b strings.Builder
	b.WriteString("wrk.method = \"POST\"\n")
	fmt.Fprintf(&b, "wrk.body = %s\n", luaString(string(body)))
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "hookcert-simulator")
	for k := range h {
		fmt.Fprintf(&b, "wrk.headers[%s] = %s\n", luaString(k), luaString(h.Get(k)))
	}
	return os.WriteFile(*out, []byte(b.String()), 0o644)
}

func luaString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
	return `"` + r.Replace(s) + `"`
}

// fire sends signed deliveries (one attempt each, signed per attempt) from c
// workers for duration d and prints the acknowledged rate.
func fire(args []string) error {
	fs := flag.NewFlagSet("fire", flag.ContinueOnError)
	url := fs.String("url", "", "receiver URL")
	c := fs.Int("c", 16, "concurrent workers (connections)")
	d := fs.Duration("d", 5*time.Second, "duration")
	prof := fs.String("cpuprofile", "", "write a CPU profile here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	r, err := simulator.NewRunner(simulator.Target{URL: *url, Profile: stripe(), Secrets: []string{benchSecret}}, simulator.Options{})
	if err != nil {
		return err
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *d)
	defer cancel()
	var acked, other atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *c; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				a, err := r.Send(ctx, event(w*1_000_000+i), simulator.SendOptions{Timeout: 5 * time.Second})
				if err != nil {
					other.Add(1)
					return
				}
				if a.Outcome == simulator.OutcomeAcknowledged {
					acked.Add(1)
				} else if ctx.Err() == nil {
					other.Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	el := time.Since(start)
	rate := float64(acked.Load()) / el.Seconds()
	fmt.Printf("simulator: %d acknowledged deliveries, %d other, in %v with %d connections: %.0f deliveries/s\n",
		acked.Load(), other.Load(), el.Round(time.Millisecond), *c, rate)
	fmt.Printf("SIM_RATE=%.0f\n", rate)
	return nil
}

// spread releases copies n times against the net/http receiver (arrival = the
// handler finished reading the body) and n times against the kernel-timestamping
// receiver (arrival = kernel receive time of the last packet of each request).
func spread(args []string) error {
	fs := flag.NewFlagSet("spread", flag.ContinueOnError)
	url := fs.String("url", "", "net/http receiver base URL")
	tsURL := fs.String("ts-url", "", "kernel-timestamping receiver base URL")
	copies := fs.Int("copies", 16, "copies per release")
	n := fs.Int("n", 50, "releases")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var handler, kernel, user, sender []time.Duration
	release := func(base string, i int) (simulator.ReleaseRecord, error) {
		r, err := simulator.NewRunner(simulator.Target{URL: fmt.Sprintf("%s/spread/%d", base, i), Profile: stripe(),
			Secrets: []string{benchSecret}}, simulator.Options{})
		if err != nil {
			return simulator.ReleaseRecord{}, err
		}
		defer r.Close()
		recs, rel, err := r.SendCopies(context.Background(), event(i), *copies, simulator.SendOptions{Timeout: 5 * time.Second})
		if err != nil {
			return rel, err
		}
		for _, a := range recs {
			if a.Outcome != simulator.OutcomeAcknowledged {
				return rel, fmt.Errorf("release %d copy %d: %s %s", i, a.Copy, a.Outcome, a.Error)
			}
		}
		return rel, nil
	}
	for i := 0; i < *n; i++ {
		rel, err := release(*url, i)
		if err != nil {
			return err
		}
		sender = append(sender, time.Duration(rel.SpreadNS))
		var at []int64
		if err := getJSON(fmt.Sprintf("%s/arrivals/%d", *url, i), &at); err != nil {
			return err
		}
		if len(at) != *copies {
			return fmt.Errorf("release %d: receiver saw %d arrivals, want %d", i, len(at), *copies)
		}
		handler = append(handler, spreadOf(at))
	}
	if *tsURL != "" {
		for i := 0; i < *n; i++ {
			if _, err := release(*tsURL, i); err != nil {
				return err
			}
			var at map[string][]int64
			if err := getJSON(fmt.Sprintf("%s/ts-arrivals/%d", *url, i), &at); err != nil {
				return err
			}
			if len(at["kernel"]) != *copies || slices.Contains(at["kernel"], 0) {
				return fmt.Errorf("release %d: %d kernel timestamps (0 = none), want %d", i, len(at["kernel"]), *copies)
			}
			kernel = append(kernel, spreadOf(at["kernel"]))
			user = append(user, spreadOf(at["user"]))
		}
	}
	fmt.Printf("release spread of %d copies, %d releases per row (max - min arrival):\n", *copies, *n)
	row := func(name string, v []time.Duration) {
		if len(v) > 0 {
			fmt.Printf("  %-44s p50 %9v  p90 %9v  max %9v\n", name, pct(v, 50), pct(v, 90), pct(v, 100))
		}
	}
	row("sender: final-byte writes", sender)
	row("receiver kernel: SO_TIMESTAMPNS of last packet", kernel)
	row("receiver user space, raw recvmsg loop", user)
	row("receiver net/http handler, body read", handler)
	return nil
}

func spreadOf(at []int64) time.Duration {
	lo, hi := slices.Min(at), slices.Max(at)
	return time.Duration(hi - lo)
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return fmt.Errorf("get %s: %w", url, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("decode %s: %w", url, err)
	}
	return nil
}

func pct(v []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p+99)/100 - 1
	if i < 0 {
		i = 0
	}
	return s[i].Round(time.Microsecond)
}

func compare(args []string) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	sim := fs.String("sim", "", "simulator deliveries/s")
	wrk := fs.String("wrk", "", "wrk requests/s")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, err1 := strconv.ParseFloat(*sim, 64)
	w, err2 := strconv.ParseFloat(*wrk, 64)
	if err1 != nil || err2 != nil || w == 0 {
		return fmt.Errorf("compare: -sim %q and -wrk %q must be numbers, wrk non-zero", *sim, *wrk)
	}
	fmt.Printf("%-12s %12s\n%-12s %12.0f\n%-12s %12.0f\n%-12s %12.2fx (target >= 0.70x)\n",
		"", "per second", "simulator", s, "wrk", w, "ratio", s/w)
	return nil
}
