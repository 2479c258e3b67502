package profiles

import "testing"

// countingSource is a cheap deterministic RandSource, so the benchmark
// measures the ID's shaping, not the generator.
type countingSource uint64

func (c *countingSource) Uint64() uint64 { *c += 0x9e3779b97f4a7c15; return uint64(*c) }

// BenchmarkNewEventID is one provider-shaped event ID (Stripe's contract
// template, evt_ + 24 base-62 characters), as a soak or a benchmark makes per
// event.
func BenchmarkNewEventID(b *testing.B) {
	var r countingSource
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewEventID("stripe", &r); err != nil {
			b.Fatal(err)
		}
	}
}
