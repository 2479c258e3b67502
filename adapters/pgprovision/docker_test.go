package pgprovision

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestProvisionDocker runs the container method for real where a Docker engine
// answers, and skips with the probe's one-line reason elsewhere.
func TestProvisionDocker(t *testing.T) {
	ctx := context.Background()
	if err := DockerAvailable(ctx, 2*time.Second); err != nil {
		t.Skip(err.Error())
	}
	db, cleanup, err := Provision(ctx, Options{DisableLocal: true, StartTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	t.Cleanup(func() { _ = cleanup(context.Background()) })
	if db.Method != MethodDocker {
		t.Fatalf("method = %s, want docker", db.Method)
	}
	conn := mustConnect(t, db.URL)
	var current string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&current); err != nil || current != db.Name {
		t.Fatalf("current_database = %q, %v; want %s", current, err, db.Name)
	}
	if err := cleanup(ctx); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
}

// TestDockerProbeBounded points the probe at a TCP endpoint that accepts and
// never answers: the probe must give up within its timeout, not hang.
// testcontainers caches Docker host discovery per process, so the probe runs in
// a fresh child process (this test binary) where DOCKER_HOST is the first thing
// it sees.
func TestDockerProbeBounded(t *testing.T) {
	if os.Getenv("HOOKCERT_PROBE_CHILD") == "1" {
		start := time.Now()
		err := DockerAvailable(context.Background(), 500*time.Millisecond)
		fmt.Printf("probe result: %v after %s\n", err, time.Since(start).Round(time.Millisecond))
		if !errors.Is(err, ErrNoDocker) || !strings.HasPrefix(err.Error(), "no Docker engine answered (") {
			t.Fatalf("err = %v, want ErrNoDocker with a reason", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("probe took %s with a 500ms timeout", d)
		}
		return
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan int, 1)
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
			accepted <- len(conns)
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never answered
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDockerProbeBounded$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HOOKCERT_PROBE_CHILD=1", "DOCKER_HOST=tcp://"+l.Addr().String())
	start := time.Now()
	out, err := cmd.CombinedOutput()
	elapsed := time.Since(start)
	l.Close()
	n := <-accepted
	t.Logf("child (%s, %d connection(s) to the silent engine): %s", elapsed.Round(time.Millisecond), n, strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("child probe failed: %v", err)
	}
	if n == 0 {
		t.Fatalf("the probe never reached the silent engine, so the test proved nothing")
	}
}

// TestDiscoveryDockerReason: with Docker enabled but no engine, the combined
// error carries the probe's reason for the docker method.
func TestDiscoveryDockerReason(t *testing.T) {
	if DockerAvailable(context.Background(), time.Second) == nil {
		t.Skip("a Docker engine answers here; this test covers its absence")
	}
	_, _, err := Provision(context.Background(), Options{DisableLocal: true})
	if err == nil || !strings.Contains(err.Error(), "; docker: no Docker engine answered (") || !strings.HasSuffix(err.Error(), "; local binaries: disabled") {
		t.Fatalf("err = %v", err)
	}
}
