package selftest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func init() { examples = append(examples, refetchExample) }

// refetchExample is a Stripe receiver that stores what the provider's API
// answers, never the event's body: the harness serves the API
// ({{.ProviderAPIURL}}) and the REFETCH guarantees judge what it did with the
// answers. Its planted bugs are caught on every seed: the faults and stale
// states they meet are sent by every REFETCH scenario.
var refetchExample = example{
	dir:   "refetch-receiver",
	needs: refetchReady,
	env: []string{"REFETCH_WEBHOOK_SECRET=whsec_c2VsZnRlc3QtcmVmZXRjaC0wMDAx", "REFETCH_STRIPE_API_KEY=sk_test_selftestRefetch000000000001",
		// Debian's interpreter first, where python3-psycopg2 is (the target
		// file's .python-version asks for it anyway).
		"PATH=/usr/bin:" + os.Getenv("PATH")},
	defectEnv: "REFETCH_RECEIVER_DEFECT",
	seeds:     2,
	// One Stripe endpoint (DEDUP-3, -4, -5), no lifecycle (DEDUP-6, ATOMIC-2,
	// -5, ORDER-3), no failpoints (ATOMIC-4), no handshake (ACK-8), no tie
	// tags or child rows (ORDER-5, -6), no retention, inbox or outbox: 27.
	maxNA: 27,
	mustPass: []string{"DEDUP-1", "DEDUP-2", "ATOMIC-1", "ATOMIC-3", "ACK-1", "ACK-3", "ACK-5", "ACK-6",
		"ORDER-1", "ORDER-2", "ORDER-4", "REFETCH-1", "REFETCH-2", "REFETCH-3"},
	breaks: map[string]map[string][]string{
		// Calls the API, then stores the event's own snapshot: a stale event
		// regresses the object, and one for a deleted object brings its
		// stale state back.
		"trust-event-body": {"REFETCH-1": {"refetch.stale-applied"}, "REFETCH-2": {"refetch.recreated"}},
		// Takes any 404 for a deletion and acknowledges the event with
		// nothing applied: a transient 404 loses it.
		"404-acked-lost": {"REFETCH-3": {"refetch.lost"}},
		// Never asks the API: the stale event's body is stored.
		"no-refetch": {"REFETCH-1": {"refetch.not-called", "refetch.stale-applied"}},
		// A 404 is always "try again", even for a customer known deleted:
		// the provider retries the event for days.
		"404-retry-forever": {"REFETCH-2": {"refetch.not-acked"}, "ORDER-4": {"order.not-acked"}},
	},
}

// refetchReady: the example needs python3 with psycopg2 (Debian's
// python3-psycopg2), as its folder's interpreter sees it.
func refetchReady() string {
	c := exec.Command("python3", "-c", "import psycopg2")
	c.Dir = filepath.Join("..", "..", "examples", "refetch-receiver")
	c.Env = append(os.Environ(), "PATH=/usr/bin:"+os.Getenv("PATH"))
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Sprintf("python3 cannot import psycopg2 (install python3-psycopg2; .ci/run does): %v %s", err, strings.TrimSpace(string(out)))
	}
	return ""
}
