//go:build linux

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
)

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
	held, releases := 0, 0
	release := func(base string, i int) (history.Release, error) {
		r, err := simulator.NewRunner(simulator.Target{URL: fmt.Sprintf("%s/spread/%d", base, i), Profile: stripe(),
			Secrets: []string{benchSecret}}, simulator.Options{})
		if err != nil {
			return history.Release{}, err
		}
		defer r.Close()
		recs, rel, err := r.SendCopies(context.Background(), event(i), *copies, simulator.SendOptions{Shape: simulator.Shape{Timeout: simulator.Duration(5 * time.Second)}})
		if err != nil {
			return rel, err
		}
		for _, a := range recs {
			if a.Outcome != history.OutcomeAcknowledged {
				return rel, fmt.Errorf("release %d copy %d: %s %s", i, a.Copy, a.Outcome, a.Error)
			}
		}
		held += rel.Released
		releases++
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
	fmt.Printf("release spread of %d copies, %d releases per row (max - min arrival); %.1f of %d copies held by the barrier on average:\n",
		*copies, *n, float64(held)/float64(max(releases, 1)), *copies)
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
