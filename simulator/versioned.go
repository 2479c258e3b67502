package simulator

import (
	"fmt"
	"math/rand/v2"
)

// VersionedStream builds a seeded stream of versioned updates for one object:
// versions 1..n of a customer.subscription.updated event (one event ID each), and
// steps that deliver every version once plus dups extra duplicates of random
// versions, all shuffled. The newest version is n. Append the results to a plan.
func VersionedStream(seed int64, prefix, objectID string, n, dups int) ([]EventSpec, []Step) {
	rng := seededRand(seed, "versioned/"+prefix+"/"+objectID)
	events := make([]EventSpec, n)
	for v := 1; v <= n; v++ {
		events[v-1] = EventSpec{
			Name: fmt.Sprintf("%s-v%d", prefix, v), Type: "customer.subscription.updated", ObjectID: objectID,
			Version: int64(v), Status: "active",
		}
	}
	var steps []Step
	for _, v := range ShuffledVersions(n, 1, dups, rng) {
		steps = append(steps, Step{Event: events[v-1].Name})
	}
	return events, steps
}

// ShuffledVersions is the delivery order of a versioned stream: every version
// 1..n each times, plus extra duplicates of random versions, shuffled by rng.
// The conformance suite and plans share it, so one seed gives one order.
func ShuffledVersions(n, each, extra int, rng *rand.Rand) []int64 {
	var out []int64
	for v := 1; v <= n; v++ {
		for range each {
			out = append(out, int64(v))
		}
	}
	for i := 0; i < extra && n > 0; i++ {
		out = append(out, int64(1+rng.IntN(n)))
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
