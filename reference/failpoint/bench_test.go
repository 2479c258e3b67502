package failpoint

import "testing"

// BenchmarkHit compares the cost of Hit on a delivery's path: no registry (receiver
// started without --enable-failpoints), an enabled but empty registry, and a registry
// armed for another event (the lock is taken). Run: go test -bench Hit -run '^$'.
func BenchmarkHit(b *testing.B) {
	b.Run("nil-registry", func(b *testing.B) {
		var reg *Registry
		for b.Loop() {
			_ = reg.Hit(AfterInsertBeforeCommit, "evt_1")
		}
	})
	b.Run("enabled-nothing-armed", func(b *testing.B) {
		reg := New(nil)
		for b.Loop() {
			_ = reg.Hit(AfterInsertBeforeCommit, "evt_1")
		}
	})
	b.Run("armed-for-other-event", func(b *testing.B) {
		reg := New(nil)
		if err := reg.Arm(AfterInsertBeforeCommit, "evt_other", ActionError); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			_ = reg.Hit(AfterInsertBeforeCommit, "evt_1")
		}
	})
}
