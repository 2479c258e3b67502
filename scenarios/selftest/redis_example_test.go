package selftest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
)

// redisTestURL is the Redis server the Redis example keeps its state in.
func redisTestURL() string {
	if u := strings.TrimSpace(os.Getenv("HOOKCERT_TEST_REDIS_URL")); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// redisExample is the Node.js receiver that deduplicates Stripe events in
// Redis: one Lua script sets the event's key (SET NX PX, 31 days) and applies
// its change. Certified on one seed (its runs go one at a time, and CI's time
// is short); its planted defects keep keys for a minute, which only the key's
// TTL read from Redis shows, and check for the key before the script that
// sets it, which only copies held at the write pause show.
var redisExample = example{
	dir:       "redis-receiver",
	needs:     redisReady,
	env:       []string{"STRIPE_WEBHOOK_SECRET=whsec_selftestRedisReceiver00000000000001", "REDIS_URL=" + redisTestURL()},
	defectEnv: "REDIS_RECEIVER_DEFECT",
	seeds:     1,
	// One endpoint (DEDUP-3, 4), Stripe (DEDUP-5), no failpoints (ATOMIC-4),
	// no purge (RETENTION-1 to 4), no inbox or outbox (11), no handshake (ACK-8).
	maxNA: 25, // +3: no provider API (REFETCH)
	mustPass: []string{"DEDUP-1", "DEDUP-2", "DEDUP-6", "ATOMIC-1", "ATOMIC-2", "ATOMIC-3", "ATOMIC-5", "ACK-1", "ACK-3", "ACK-4", "ACK-5", "ACK-7",
		"ORDER-1", "ORDER-2", "ORDER-3", "ORDER-4", "RETENTION-5"},
	breaks: map[string]map[string][]string{
		// Keys kept a minute: Stripe's next retry, hours later, is applied again.
		"short-ttl": {"RETENTION-5": {"retention.key-expires-early"}},
		// EXISTS, then the script that sets the key: copies held at their
		// write by the paused writes all found no key, and all apply.
		"check-then-set": {"DEDUP-1": {"dedup.effects"}},
	},
	// Each defect need only meet the guarantee that must catch it.
	defectFilter: "DEDUP-1 || RETENTION-5",
}

// redisReady: node on PATH, the example's npm packages, and a Redis server
// that answers.
func redisReady() string {
	if _, err := exec.LookPath("node"); err != nil {
		return "node is not on PATH"
	}
	if _, err := os.Stat(filepath.Join("..", "..", "examples", "redis-receiver", "node_modules", "redis")); err != nil {
		return "its npm packages are not installed (run `npm ci` in examples/redis-receiver)"
	}
	opt, err := redis.ParseURL(redisTestURL())
	if err != nil {
		return "HOOKCERT_TEST_REDIS_URL is not a redis:// URL"
	}
	opt.DialerRetries = 1
	c := redis.NewClient(opt)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		return "no Redis answers at " + opt.Addr + " (start redis-server, or set HOOKCERT_TEST_REDIS_URL): " + err.Error()
	}
	return ""
}

// measuredTTLRE finds the TTL RETENTION-5 read from Redis in its evidence.
var measuredTTLRE = regexp.MustCompile(`expires the key of \S+ in (\S+) \(key_ttl read right after delivery\)`)

// TestRedisExampleIsCertified certifies examples/redis-receiver with the
// hookcert binary: the correct receiver passes with nothing
// failed (its races forced at Redis's write pause); with keys kept a minute
// RETENTION-5 fails, quoting the TTL it read from Redis; with a check before
// the script that sets the key, DEDUP-1's held copies all apply.
func TestRedisExampleIsCertified(t *testing.T) {
	sideBySide(t)
	if testing.Short() {
		t.Skip("-short: certifies the Redis example receiver three times")
	}
	if why := redisReady(); why != "" {
		t.Skipf("redis-receiver is not certified here: %s", why)
	}
	bin := build(t)
	ex := redisExample
	base := time.Now().UnixNano()%1_000_000 + 500_000
	runs := exampleRuns(&ex, base)
	t.Cleanup(func() { redisForget(t, runs) })
	// One run at a time: a gate pauses every write on the server and counts
	// and cuts the clients of its database, which the runs share.
	certifyExampleRuns(t, bin, &ex, runs, make(chan struct{}, 1))

	// judgeExampleRun checked the verdicts and codes; a clean run's races must
	// have been forced at the write pause, and the defect's evidence must give
	// the TTL read from Redis.
	for _, r := range runs {
		if r.res == nil {
			continue
		}
		if r.defect == "" {
			for _, g := range r.res.Guarantees {
				if g.ID == "DEDUP-1" && (g.Race == nil || !g.Race.Forced) {
					t.Errorf("seed %d: DEDUP-1's race was not forced at Redis's write pause: %+v", r.seed, g.Race)
				}
			}
			continue
		}
		for _, g := range r.res.Guarantees {
			if g.ID != "RETENTION-5" || g.Status != reports.StatusFailed {
				continue
			}
			var ttl time.Duration
			for _, e := range g.Evidence {
				if m := measuredTTLRE.FindStringSubmatch(e); m != nil {
					ttl, _ = time.ParseDuration(m[1])
				}
			}
			// The receiver sets 60 s; the harness reads it a moment later.
			if ttl <= 50*time.Second || ttl > time.Minute {
				t.Errorf("%s (seed %d): RETENTION-5's evidence does not give the TTL read from Redis (about 60s): %q", r.defect, r.seed, g.Evidence)
			}
		}
	}
}

// redisForget deletes what the runs left in Redis: every key of the
// receiver's holds an event or object ID, and every ID holds its run's
// namespace.
func redisForget(t *testing.T, runs []*exampleRun) {
	opt, err := redis.ParseURL(redisTestURL())
	if err != nil {
		return
	}
	c := redis.NewClient(opt)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, r := range runs {
		if r.res == nil || r.res.RunID == "" {
			continue
		}
		var keys []string
		iter := c.Scan(ctx, 0, "*"+scenarios.Namespace(r.res.RunID)+"*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Logf("redis cleanup of run %s: %v", r.res.RunID, err)
			continue
		}
		for len(keys) > 0 {
			n := min(len(keys), 1000)
			if err := c.Del(ctx, keys[:n]...).Err(); err != nil {
				t.Logf("redis cleanup of run %s: %v", r.res.RunID, err)
			}
			keys = keys[n:]
		}
	}
}
