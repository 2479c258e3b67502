package selftest

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// hostile receivers, each a small TCP server that misbehaves one way. Every one
// of them is certified end to end: the verdicts are the receiver's failures —
// never a pass, never an error of the harness — with a clear reason, in bounded
// time.
var hostile = map[string]func(c net.Conn, br *bufio.Reader){
	"never answers": func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		_, _ = io.Copy(io.Discard, c)
	},
	"dribbles": func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		for _, b := range []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") {
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(700 * time.Millisecond)
		}
	},
	"endless headers": func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		for i := 0; i < 1<<20; i++ {
			if _, err := fmt.Fprintf(c, "X-Filler-%d: %s\r\n", i, strings.Repeat("x", 100)); err != nil {
				return
			}
		}
	},
	"huge body": func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n")
		chunk := []byte(strings.Repeat("a", 64<<10))
		for i := 0; i < 1<<14; i++ {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	},
	"closes at once": func(c net.Conn, br *bufio.Reader) {},
	"early 200": func(c net.Conn, br *bufio.Reader) {
		// Answers after the request line, before reading headers and body.
		_, _ = br.ReadString('\n')
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	},
	"HTTP/1.0": func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		_, _ = io.WriteString(c, "HTTP/1.0 200 OK\r\n\r\nok")
	},
	"redirects": func(c net.Conn, br *bufio.Reader) {
		for readRequest(br) {
			_, _ = io.WriteString(c, "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/elsewhere\r\nContent-Length: 0\r\n\r\n")
		}
	},
	"1xx, then 200": func(c net.Conn, br *bufio.Reader) {
		for readRequest(br) {
			_, _ = io.WriteString(c, "HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	},
	"bad status line": func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		_, _ = io.WriteString(c, "HTPT/9.9 two hundred\r\n\r\n")
	},
	"resets": func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close sends RST
		}
	},
}

// readRequest reads one request in full; false at the end of the connection.
func readRequest(br *bufio.Reader) bool {
	req, err := http.ReadRequest(br)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, req.Body)
	return true
}

func serveHostile(t *testing.T, handle func(net.Conn, *bufio.Reader)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(time.Minute))
				handle(c, bufio.NewReader(c))
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestCertifyAgainstHostileReceivers(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: certifies eleven hostile receivers")
	}
	bin := build(t)
	dbURL := emptyStore(t)
	secret, err := profiles.GenerateSecret("shopify", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// The certifications mostly wait on timeouts: run them all at once rather
	// than -parallel at a time.
	type result struct {
		name string
		out  []byte
		err  error
		dir  string
		took time.Duration
	}
	results := make(chan result, len(hostile))
	for name, handle := range hostile {
		base := serveHostile(t, handle)
		// Shopify's 5 s timeout keeps the slow cases short.
		target := fmt.Sprintf(`target:
  name: %q
  base_url: %s
  endpoints:
    - {profile: shopify, account: acct_A, path: /hook, secret_env: HC_HOSTILE_SECRET}
%s`, name, base, observeSection(dbURL))
		f := filepath.Join(t.TempDir(), "target.yaml")
		if err := os.WriteFile(f, []byte(target), 0o600); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			start := time.Now()
			c := exec.CommandContext(ctx, bin, "certify", "--config", f, "--report-dir", dir, "--seed", "5",
				"--label-filter", "DEDUP-1 || ACK-3 || ACK-6")
			c.Env = append(os.Environ(), "HC_HOSTILE_SECRET="+secret)
			out, err := c.CombinedOutput()
			results <- result{name, out, err, dir, time.Since(start)}
		}()
	}
	for range hostile {
		r := <-results
		t.Run(r.name, func(t *testing.T) {
			t.Logf("certified in %s", r.took.Round(100*time.Millisecond))
			if ee, ok := r.err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("certify: %v, want exit 1 (failed)\n%s", r.err, r.out)
			}
			if strings.Contains(string(r.out), secret) {
				t.Errorf("the endpoint secret appears in certify's output")
			}
			res, err := reports.ReadResults(filepath.Join(r.dir, reports.FileJSON))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Guarantees) != 3 {
				t.Fatalf("%d guarantees judged, want 3", len(res.Guarantees))
			}
			for _, g := range res.Guarantees {
				if g.Status != reports.StatusFailed || len(g.Evidence) == 0 || len(g.Codes) == 0 {
					t.Errorf("%s: %s (%s), want failed with evidence and codes", g.ID, g.Status, g.Reason)
				}
			}
		})
	}
}

// emptyStore is a database with the two tables a receiver that stores nothing
// would have, empty; observeSection is the target file's observe section for it.
func emptyStore(t *testing.T) string {
	t.Helper()
	dbURL := pgtest.Database(t)
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `CREATE TABLE events (source text, account_id text, event_id text);
		CREATE TABLE ledger (source text, account_id text, event_id text)`); err != nil {
		t.Fatal(err)
	}
	return dbURL
}

func observeSection(dbURL string) string {
	return fmt.Sprintf(`  observe:
    postgres:
      url: %s
      queries:
        event_rows: SELECT count(*) FROM events WHERE source=$1 AND account_id=$2 AND event_id=$3
        effects: SELECT count(*) FROM ledger WHERE source=$1 AND account_id=$2 AND event_id=$3
`, dbURL)
}
