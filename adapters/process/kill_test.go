package process

import (
	"errors"
	"runtime"
	"testing"
)

// The crash scenarios depend on KillSupported telling the truth per platform: nil
// where Kill reaches a process group, ErrKillUnsupported (naming the OS) elsewhere.
func TestKillSupported(t *testing.T) {
	err := KillSupported()
	switch runtime.GOOS {
	case "windows", "plan9", "js", "wasip1":
		if !errors.Is(err, ErrKillUnsupported) {
			t.Fatalf("KillSupported() = %v, want ErrKillUnsupported", err)
		}
	default:
		if err != nil {
			t.Fatalf("KillSupported() = %v, want nil on %s", err, runtime.GOOS)
		}
	}
}
