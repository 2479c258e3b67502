package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// Colour reaches a terminal only: a pty gets Ginkgo's colours for a bad
// label filter, unless NO_COLOR (any value) or --no-color says otherwise; a
// pipe never does (every run of TestCertifyExitStatuses checks it too).
func TestColourOnlyOnATerminal(t *testing.T) {
	besideOthers(t)
	bin := buildHookcert(t)
	args := []string{"certify", "--config", "/dev/null", "--label-filter", "(("}
	for _, c := range []struct {
		name  string
		env   []string
		extra []string
		pty   bool
		color bool
	}{
		{"terminal", nil, nil, true, true},
		{"NO_COLOR", []string{"NO_COLOR=1"}, nil, true, false},
		{"NO_COLOR=false is still set", []string{"NO_COLOR=false"}, nil, true, false},
		{"--no-color", nil, []string{"--no-color"}, true, false},
		{"TERM=dumb", []string{"TERM=dumb"}, nil, true, false},
		{"pipe", nil, nil, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, append(args, c.extra...)...)
			cmd.Env = append(exitEnv("TERM=xterm-256color"), c.env...)
			var out string
			if c.pty {
				out = runOnPTY(t, cmd)
			} else {
				b, _ := cmd.CombinedOutput()
				out = string(b)
			}
			if !strings.Contains(out, "Syntax Error Parsing Label Filter") {
				t.Fatalf("output:\n%q", out)
			}
			if has := strings.ContainsRune(out, 0x1b); has != c.color {
				t.Errorf("escape sequences: %v, want %v:\n%q", has, c.color, out)
			}
		})
	}
}

// runOnPTY runs cmd with stdout and stderr on a new pseudo-terminal and
// returns what it wrote there.
func runOnPTY(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer master.Close()
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlockpt: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("ptsname: %v", e)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = slave, slave
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		// Reading ends with EIO once the child and this process closed the slave.
		_, _ = io.Copy(&out, master)
		close(done)
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	slave.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal's output did not end")
	}
	return strings.ReplaceAll(out.String(), "\r\n", "\n")
}
