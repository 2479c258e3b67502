package process

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The owner of a TCP client socket is found among process groups by its local
// port, as the harness finds the worker process behind a database session.
func TestOwnerOfLocalPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	var procs []*Process
	var groups []int
	for range 2 {
		p, err := Start(context.Background(), Spec{Command: []string{os.Args[0], "-test.run=^TestHelperProcess$"},
			Env: map[string]string{"HOOKCERT_PROCESS_HELPER": "connect", "HELPER_ADDR": ln.Addr().String()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = p.Kill() })
		procs = append(procs, p)
		groups = append(groups, p.PID())
	}
	for i, p := range procs {
		var port int
		for deadline := time.Now().Add(10 * time.Second); port == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, after, ok := strings.Cut(p.Output(), "\nLOCAL="); ok {
				port, _ = strconv.Atoi(strings.Fields(after)[0])
			}
		}
		if port == 0 {
			t.Fatalf("child %d printed no port: %q", i, p.Output())
		}
		if got := OwnerOfLocalPort(port, groups); got != i {
			t.Errorf("owner of port %d = %d, want %d", port, got, i)
		}
		if got := OwnerOfLocalPort(port, groups[:0]); got != -1 {
			t.Errorf("owner among no groups = %d, want -1", got)
		}
	}
	if got := OwnerOfLocalPort(1, groups); got != -1 {
		t.Errorf("owner of a port nobody holds = %d, want -1", got)
	}
}
