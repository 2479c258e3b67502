//go:build linux

// Command benchmark measures the simulator against a no-op receiver: delivery
// throughput beside wrk's on the same receiver, and the barrier's release spread
// as seen by the receiver. bench.sh drives it; run that, not this, by hand.
//
//	benchmark serve                       no-op receiver; prints its URL on stdout
//	benchmark wrkscript -out F            writes a wrk Lua script posting one signed delivery
//	benchmark fire -url U -c 16 -d 5s -warmup 1s   signed deliveries for a duration; prints deliveries/s
//	benchmark replay -url U -c 16 -d 5s -warmup 1s  one pre-built request over and over (Go's floor)
//	benchmark rounds -url U -script F -c 16 -d 5s -warmup 1s -rounds 3
//	                                      rotating fire, wrk and replay rounds; every round and the medians
//	benchmark spread -url U -copies 16 -n 50   receiver-side arrival spread of barrier releases
//	benchmark compare -sim X -wrk Y       prints the two rates side by side
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// benchSecret is a throwaway test secret for the local no-op receiver.
const benchSecret = "whsec_hookcert_benchmark_only"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchmark serve|wrkscript|fire|replay|spread|compare|rounds [flags]")
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
	case "replay":
		err = replay(os.Args[2:])
	case "rounds":
		err = rounds(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q: want serve, wrkscript, fire, replay, spread, compare or rounds", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchmark:", err)
		os.Exit(1)
	}
}

func stripe() profiles.Profile {
	p, err := profiles.Lookup("stripe")
	if err != nil {
		panic(err) // the registry always has stripe
	}
	return p
}

func event(i int) profiles.Event { return eventAt(i, time.Now().UTC().Truncate(time.Second)) }

// eventAt is event i created at created (the event's own creation time, not the
// signing time: every attempt is signed at its send time).
func eventAt(i int, created time.Time) profiles.Event {
	return profiles.Event{Source: "stripe", Account: "acct_bench", ID: simulator.NewEventID(1, "stripe", i),
		Type: "payment_intent.succeeded", ObjectID: "pi_bench", Amount: 1000, Currency: "usd",
		Status: "succeeded", Created: created}
}
