package harness

import (
	"context"
	"strings"
	"testing"

	"github.com/hookcert/hookcert/adapters/process"
)

// The controller crashes and restarts the receiver with its worker processes;
// the workers adapter crashes them alone, and Alive names a worker that is
// gone while the receiver still runs.
func TestControllerWithWorkerProcesses(t *testing.T) {
	if err := process.KillSupported(); err != nil {
		t.Skipf("needs SIGKILL of a process group, which this platform lacks: %v", err)
	}
	ctx := context.Background()
	start := func(what string) *process.Process {
		p, err := process.Start(ctx, process.Spec{Command: []string{"/bin/sh", "-c", "echo " + what + "; exec sleep 60"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = p.Kill() })
		return p
	}
	c := &controller{p: start("receiver"), workers: []*process.Process{start("worker-1"), start("worker-2")}}
	w := workers{c}
	if ok, why := c.Alive(); !ok || w.Processes() != 2 {
		t.Fatalf("Alive = %v %q with %d workers", ok, why, w.Processes())
	}
	rpid, wpid := c.p.PID(), c.workers[0].PID()
	if err := w.Kill(); err != nil {
		t.Fatal(err)
	}
	if !c.p.Running() || c.p.PID() != rpid || c.workers[0].Running() || c.workers[1].Running() {
		t.Fatal("killing the workers alone touched the receiver or left a worker running")
	}
	if ok, why := c.Alive(); ok || !strings.Contains(why, "worker process 1 is not running") || !strings.Contains(why, "killed") {
		t.Errorf("Alive with the workers gone = %v %q", ok, why)
	}
	if err := w.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if !c.workers[0].Running() || c.workers[0].PID() == wpid || c.p.PID() != rpid {
		t.Fatal("restarting the workers did not start new ones, or restarted the receiver")
	}
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	if c.p.Running() || c.workers[0].Running() || c.workers[1].Running() {
		t.Fatal("a crash of the receiver left a worker process running")
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, why := c.Alive(); !ok {
		t.Fatalf("after Restart: %s", why)
	}
}
