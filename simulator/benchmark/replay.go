//go:build linux

package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// replay is the floor of a Go client on this machine: c goroutines, each on one
// keep-alive connection, write the same pre-built signed request wrk replays and
// read each answer (status line, headers, Content-Length body), with nothing
// else per request: no signing, no recording, no liveness probe. Set beside the
// simulator and wrk, it tells Go's own network cost apart from the simulator's
// per-delivery work.
func replay(args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	target := fs.String("url", "", "receiver URL")
	c := fs.Int("c", 16, "connections")
	d := fs.Duration("d", 5*time.Second, "measured duration")
	warmup := fs.Duration("warmup", 0, "sending before the measured window (not counted)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" || u.Scheme != "http" {
		return fmt.Errorf("replay: -url %q must be an absolute http URL", *target)
	}
	if *c < 1 || *d <= 0 || *warmup < 0 {
		return fmt.Errorf("replay: -c must be at least 1 (got %d), -d positive (got %v), -warmup not negative (got %v)", *c, *d, *warmup)
	}
	body, h, err := profiles.Render(stripe(), event(0), profiles.Attempt{N: 1, SignedAt: time.Now()}, []string{benchSecret})
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "hookcert-simulator")
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: %s\r\n", u.RequestURI(), u.Host)
	for k := range h {
		fmt.Fprintf(&req, "%s: %s\r\n", k, h.Get(k))
	}
	fmt.Fprintf(&req, "Content-Length: %d\r\n\r\n", len(body))
	req.Write(body)
	wire := req.Bytes()

	var measuring atomic.Bool
	var n atomic.Int64
	var firstErr atomic.Value
	end := time.Now().Add(*warmup + *d)
	var wg sync.WaitGroup
	for i := 0; i < *c; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", u.Host)
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
				return
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			for time.Now().Before(end) {
				if _, err := conn.Write(wire); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if err := readAnswer(br); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if measuring.Load() {
					n.Add(1)
				}
			}
		}()
	}
	time.Sleep(*warmup)
	measuring.Store(true)
	start, cpu0 := time.Now(), selfCPU()
	wg.Wait()
	el, cpu := time.Since(start), selfCPU()-cpu0
	if err, _ := firstErr.Load().(error); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	got := n.Load()
	fmt.Printf("replay: %d answered requests in %v with %d connections\nREPLAY_RATE=%.0f\nREPLAY_CPU_US=%.1f\n",
		got, el.Round(time.Millisecond), *c, float64(got)/el.Seconds(), float64(cpu.Microseconds())/float64(max(got, 1)))
	return nil
}

// readAnswer reads one 2xx answer with a Content-Length body.
func readAnswer(br *bufio.Reader) error {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if len(line) < 12 || line[9] != '2' {
		return fmt.Errorf("answer %q, want 2xx", bytes.TrimSpace(line))
	}
	length := -1
	for {
		l, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(l) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(l, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return fmt.Errorf("bad Content-Length %q", bytes.TrimSpace(v))
			}
		}
	}
	if length < 0 {
		return fmt.Errorf("answer without Content-Length")
	}
	_, err = br.Discard(length)
	return err
}
