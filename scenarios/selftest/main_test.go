package selftest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
)

// roomyConnections is the PostgreSQL max_connections from which the self-test
// runs its tests side by side: two tests with their certification runs and
// receivers (about 150 connections at the peak, with another package's tests
// beside them) fit; a server with the default 100 runs them one at a time.
const roomyConnections = 200

// roomy is set by TestMain when the test server has room for parallel tests.
var roomy bool

// roomyTests is how many of the package's tests run at once where the server
// is roomy: TestDefects (its demos parallelRuns at a time) beside two of the
// others.
const roomyTests = 3

// testSlots holds a place for each test running side by side (sideBySide).
var testSlots chan struct{}

func TestMain(m *testing.M) {
	flag.Parse()
	n, err := maxConnections()
	switch {
	case err != nil:
		// The tests themselves report an unreachable server, with the URL.
	case n >= roomyConnections:
		roomy = true
		parallelRuns = 3
		testSlots = make(chan struct{}, roomyTests)
	default:
		fmt.Fprintf(os.Stderr, "selftest: PostgreSQL allows %d connections (< %d): tests run one at a time\n", n, roomyConnections)
	}
	// testSlots and parallelRuns bound what runs at once, not -parallel (unless
	// it is given): TestDefects' demos are parallel subtests, and a test waiting
	// for its slot holds a place of -parallel, so a small -parallel (its default
	// is GOMAXPROCS) would keep the demos waiting behind the tests that wait.
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "64")
	}
	os.Exit(m.Run())
}

// sideBySide lets t run beside the package's other tests where the server has
// room: each runs hookcert in its own databases and waits far more than it
// computes. roomyTests of them run at once, about in file order (TestDefects,
// first, among the first); t holds its place until it and its subtests finish.
func sideBySide(t *testing.T) {
	if roomy {
		t.Parallel()
		testSlots <- struct{}{}
		t.Cleanup(func() { <-testSlots })
	}
}

func maxConnections() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, pgtest.ServerURL())
	if err != nil {
		return 0, err
	}
	defer c.Close(ctx)
	var n int
	err = c.QueryRow(ctx, "SELECT current_setting('max_connections')::int").Scan(&n)
	return n, err
}
