//go:build linux

package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/internal/benchstat"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

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

// fire sends signed deliveries (one attempt each, signed per attempt, each a
// distinct event, every attempt recorded in the runner's history) from c
// workers. The first warmup of sending is not counted; deliveries acknowledged
// in the next d are, and the rate is over that window.
func fire(args []string) error {
	fs := flag.NewFlagSet("fire", flag.ContinueOnError)
	url := fs.String("url", "", "receiver URL")
	c := fs.Int("c", 16, "concurrent workers (connections)")
	d := fs.Duration("d", 5*time.Second, "measured duration")
	warmup := fs.Duration("warmup", 0, "sending before the measured window (not counted)")
	prof := fs.String("cpuprofile", "", "write a CPU profile of the measured window here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *c < 1 || *d <= 0 || *warmup < 0 {
		return fmt.Errorf("fire: -c must be at least 1 (got %d), -d positive (got %v), -warmup not negative (got %v)", *c, *d, *warmup)
	}
	r, err := simulator.NewRunner(simulator.Target{URL: *url, Profile: stripe(), Secrets: []string{benchSecret}}, simulator.Options{})
	if err != nil {
		return err
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *warmup+*d)
	defer cancel()
	// measuring is set when the window opens; only then are outcomes counted.
	var measuring atomic.Bool
	var acked, other, warm atomic.Int64
	var wg sync.WaitGroup
	created := time.Now().UTC().Truncate(time.Second)
	for w := 0; w < *c; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				a, err := r.Send(ctx, eventAt(w*10_000_000+i, created), simulator.SendOptions{Shape: simulator.Shape{Timeout: simulator.Duration(5 * time.Second)}})
				if err != nil {
					other.Add(1)
					return
				}
				switch {
				case !measuring.Load():
					warm.Add(1)
				case a.Outcome == history.OutcomeAcknowledged:
					acked.Add(1)
				case ctx.Err() == nil:
					other.Add(1)
				}
			}
		}(w)
	}
	time.Sleep(*warmup)
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	// Counters at the window's edges, so deliveries finishing after the deadline
	// (cut by it) do not count and the rate is acknowledged per measured second.
	measuring.Store(true)
	start, cpu0 := time.Now(), selfCPU()
	<-ctx.Done()
	el, cpu := time.Since(start), selfCPU()-cpu0
	n := acked.Load()
	wg.Wait()
	if *prof != "" {
		pprof.StopCPUProfile()
	}
	attempts := len(r.History().Attempts)
	rate := float64(n) / el.Seconds()
	fmt.Printf("simulator: %d acknowledged deliveries, %d other, in %v (after %v warm-up, %d sent) with %d connections: %.0f deliveries/s; history holds %d attempts\n",
		n, other.Load(), el.Round(time.Millisecond), *warmup, warm.Load(), *c, rate, attempts)
	if int64(attempts) < n+warm.Load() {
		return fmt.Errorf("fire: history holds %d attempts, fewer than the %d sent", attempts, n+warm.Load())
	}
	// CPU per delivery of this process in the measured window (start-up, warm-up
	// and the final history snapshot excluded).
	fmt.Printf("SIM_RATE=%.0f\nSIM_CPU_US=%.1f\n", rate, float64(cpu.Microseconds())/float64(max(n+other.Load(), 1)))
	return nil
}

// selfCPU is the user+system CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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

// rounds measures the simulator, wrk and the Go replay client against the same
// receiver with the same connection count, duration and warm-up, rotating which
// goes first, and prints every round and the medians. Each measurement is its
// own process (this binary's fire or replay mode, or wrk) started after the
// previous one has exited, so they never share the CPUs.
func rounds(args []string) error {
	fs := flag.NewFlagSet("rounds", flag.ContinueOnError)
	url := fs.String("url", "", "receiver URL (the no-op endpoint)")
	script := fs.String("script", "", "wrk Lua script (from wrkscript)")
	c := fs.Int("c", 16, "connections, for both")
	d := fs.Duration("d", 5*time.Second, "measured duration, for both")
	warmup := fs.Duration("warmup", time.Second, "warm-up before each measurement, for both")
	n := fs.Int("rounds", 3, "rounds (one simulator and one wrk measurement each)")
	threads := fs.Int("wrk-threads", 2, "wrk threads (wrk -t)")
	recvPID := fs.Int("receiver-pid", 0, "receiver process, to report its CPU per request (0: not reported)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *url == "" || *script == "":
		return fmt.Errorf("rounds: -url and -script are required")
	case *c < 1 || *d < time.Second || *warmup < 0 || *n < 1 || *threads < 1 || *threads > *c:
		return fmt.Errorf("rounds: need -c >= 1, -d >= 1s (wrk's resolution), -warmup >= 0, -rounds >= 1, 1 <= -wrk-threads <= -c")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("rounds: find own binary: %w", err)
	}
	sec := func(t time.Duration) string { return strconv.Itoa(int(t.Round(time.Second)/time.Second)) + "s" }
	// A measurement: the rate, and CPU per request of the client (the simulator
	// reports its measured window; wrk's run is all measured) and of the receiver
	// over the client's whole run, warm-up included, per request sent in it.
	type meas struct{ rate, clientUS, recvUS float64 }
	measure := func(cmd *exec.Cmd, parse func(string) (rate, requests, clientUS float64, err error)) (meas, error) {
		r0 := procCPU(*recvPID)
		out, err := cmd.CombinedOutput()
		r1 := procCPU(*recvPID)
		if err != nil {
			return meas{}, fmt.Errorf("%s: %w: %s", cmd.Path, err, out)
		}
		rate, reqs, clientUS, err := parse(string(out))
		if err != nil {
			return meas{}, fmt.Errorf("%s: %w: %s", cmd.Path, err, out)
		}
		m := meas{rate: rate, clientUS: clientUS}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && reqs > 0 && clientUS == 0 {
			cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			m.clientUS = float64(cpu.Microseconds()) / reqs
		}
		if *recvPID > 0 && reqs > 0 {
			m.recvUS = float64((r1 - r0).Microseconds()) / reqs
		}
		return m, nil
	}
	runSim := func() (meas, error) {
		cmd := exec.Command(self, "fire", "-url", *url, "-c", strconv.Itoa(*c), "-d", d.String(), "-warmup", warmup.String())
		return measure(cmd, func(out string) (float64, float64, float64, error) {
			rate, err := lineValue(out, "SIM_RATE=")
			if err != nil {
				return 0, 0, 0, err
			}
			cpu, err := lineValue(out, "SIM_CPU_US=")
			if err != nil {
				return 0, 0, 0, err
			}
			sent, err := leadingValue(out, "attempts")
			return rate, sent, cpu, err
		})
	}
	wrkArgs := func(dur time.Duration) []string {
		return []string{"-t" + strconv.Itoa(*threads), "-c" + strconv.Itoa(*c), "-d" + sec(dur), "-s", *script, *url}
	}
	runWrk := func() (meas, error) {
		if *warmup >= time.Second {
			if out, err := exec.Command("wrk", wrkArgs(*warmup)...).CombinedOutput(); err != nil {
				return meas{}, fmt.Errorf("wrk warm-up: %w: %s", err, out)
			}
		}
		return measure(exec.Command("wrk", wrkArgs(*d)...), func(out string) (float64, float64, float64, error) {
			if strings.Contains(out, "Non-2xx") || strings.Contains(out, "Socket errors") {
				return 0, 0, 0, fmt.Errorf("wrk saw errors, its rate is not comparable")
			}
			rate, err := lineValue(out, "Requests/sec:")
			if err != nil {
				return 0, 0, 0, err
			}
			reqs, err := leadingValue(out, "requests in")
			return rate, reqs, 0, err
		})
	}
	runReplay := func() (meas, error) {
		cmd := exec.Command(self, "replay", "-url", *url, "-c", strconv.Itoa(*c), "-d", d.String(), "-warmup", warmup.String())
		return measure(cmd, func(out string) (float64, float64, float64, error) {
			rate, err := lineValue(out, "REPLAY_RATE=")
			if err != nil {
				return 0, 0, 0, err
			}
			cpu, err := lineValue(out, "REPLAY_CPU_US=")
			if err != nil {
				return 0, 0, 0, err
			}
			sent, err := leadingValue(out, "answered requests")
			return rate, sent, cpu, err
		})
	}
	fmt.Printf("throughput: %d rounds; each: simulator, wrk and a Go replay client, %d connections, %v warm-up then %v measured, same receiver; order rotates\n",
		*n, *c, *warmup, *d)
	fmt.Println("  simulator: renders, signs (Stripe HMAC-SHA256, fresh timestamp), serialises, probes the idle connection, sends, parses and records every delivery")
	fmt.Printf("  wrk -t%d: replays ONE pre-built, pre-signed request (no per-request signing or recording)\n", *threads)
	fmt.Println("  replay: Go, one goroutine per connection, writes that same pre-built request and reads each answer, nothing else: Go's own floor")
	sides := []struct {
		name string
		run  func() (meas, error)
	}{{"sim", runSim}, {"wrk", runWrk}, {"replay", runReplay}}
	var sims, wrks, reps, ratios, repRatios, simCPU, wrkCPU, repCPU, simRecv, wrkRecv []float64
	for i := 0; i < *n; i++ {
		got := map[string]meas{}
		var order []string
		for k := range sides {
			s := sides[(i+k)%len(sides)]
			m, err := s.run()
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", i+1, s.name, err)
			}
			got[s.name] = m
			order = append(order, s.name)
		}
		sm, wm, rm := got["sim"], got["wrk"], got["replay"]
		sims, wrks, reps = append(sims, sm.rate), append(wrks, wm.rate), append(reps, rm.rate)
		ratios, repRatios = append(ratios, sm.rate/wm.rate), append(repRatios, rm.rate/wm.rate)
		simCPU, wrkCPU, repCPU = append(simCPU, sm.clientUS), append(wrkCPU, wm.clientUS), append(repCPU, rm.clientUS)
		simRecv, wrkRecv = append(simRecv, sm.recvUS), append(wrkRecv, wm.recvUS)
		fmt.Printf("  round %d (%s): simulator %8.0f/s  wrk %8.0f/s  replay %8.0f/s  ratio %.2fx (replay %.2fx)   %s\n",
			i+1, strings.Join(order, ", "), sm.rate, wm.rate, rm.rate, sm.rate/wm.rate, rm.rate/wm.rate,
			cpuNote(sm.clientUS, wm.clientUS, rm.clientUS, sm.recvUS, wm.recvUS, *recvPID > 0))
	}
	fmt.Printf("median:            simulator %8.0f/s  wrk %8.0f/s  replay %8.0f/s  ratio %.2fx, replay %.2fx (medians of per-round ratios; target >= 0.90x)\n",
		benchstat.Median(sims), benchstat.Median(wrks), benchstat.Median(reps), benchstat.Median(ratios), benchstat.Median(repRatios))
	fmt.Printf("summary: simulator vs wrk|%.0f deliveries/s vs %.0f requests/s|%.2fx|>= 0.90x|%s\n",
		benchstat.Median(sims), benchstat.Median(wrks), benchstat.Median(ratios), okMark(benchstat.Median(ratios) >= 0.9))
	fmt.Printf("summary: Go replay client vs wrk (floor)|%.0f requests/s vs %.0f; CPU µs/request sim %.1f, replay %.1f, wrk %.1f|%.2fx|-|-\n",
		benchstat.Median(reps), benchstat.Median(wrks), benchstat.Median(simCPU), benchstat.Median(repCPU), benchstat.Median(wrkCPU), benchstat.Median(repRatios))
	fmt.Printf("median CPU per request: %s\n", cpuNote(benchstat.Median(simCPU), benchstat.Median(wrkCPU), benchstat.Median(repCPU), benchstat.Median(simRecv), benchstat.Median(wrkRecv), *recvPID > 0))
	return nil
}

// cpuNote formats CPU microseconds per request of the clients and the receiver.
func cpuNote(sim, wrk, rep, simRecv, wrkRecv float64, recv bool) string {
	s := fmt.Sprintf("CPU µs/request: simulator %.1f, wrk %.1f, replay %.1f", sim, wrk, rep)
	if recv {
		s += fmt.Sprintf("; receiver %.1f (sim) / %.1f (wrk)", simRecv, wrkRecv)
	}
	return s
}

// procCPU is the user+system CPU time pid has used (0 when pid is 0 or unreadable).
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on Linux.
const clockTicks = 100

// leadingValue finds the number just before key on its line ("138139 requests in").
func leadingValue(out, key string) (float64, error) {
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, key); i >= 0 {
			f := strings.Fields(l[:i])
			if len(f) == 0 {
				break
			}
			return strconv.ParseFloat(f[len(f)-1], 64)
		}
	}
	return 0, fmt.Errorf("no number before %q in output", key)
}

// lineValue finds the number after key in out.
func lineValue(out, key string) (float64, error) {
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, key); i >= 0 {
			f := strings.Fields(l[i+len(key):])
			if len(f) == 0 {
				break
			}
			return strconv.ParseFloat(f[0], 64)
		}
	}
	return 0, fmt.Errorf("no %q in output", key)
}

// okMark is a summary line's verdict on its target.
func okMark(ok bool) string {
	if ok {
		return "ok"
	}
	return "SHORT"
}
