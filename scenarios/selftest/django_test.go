package selftest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// djangoModules are what the Django example imports, with the Debian package
// that brings each (.ci/run installs them).
var djangoModules = []struct{ module, pkg string }{
	{"django", "python3-django"},
	{"psycopg2", "python3-psycopg2"},
	{"gunicorn", "python3-gunicorn"},
}

// djangoReady: the Django example needs python3, as its folder's interpreter
// sees it (.python-version selects the system one), with Django, psycopg2 and
// gunicorn; it says in one line which are missing.
func djangoReady() string {
	var missing []string
	for _, m := range djangoModules {
		c := exec.Command("python3", "-c", "import "+m.module)
		c.Dir = filepath.Join("..", "..", "examples", "django-receiver")
		if err := c.Run(); err != nil {
			missing = append(missing, m.pkg)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("python3 in examples/django-receiver cannot import what %s provide (apt-get install %s; .ci/run does)",
			strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	return ""
}

// djangoExample is the Django inbox receiver: gunicorn, get_or_create on a
// unique key, 202 after the commit, and manage.py process_webhooks workers in
// two processes (SKIP LOCKED claims, leases, retries, dead letters). Its
// races are forced by lock gates; the kill points, orders and IDs come from
// the seed, which changes on every run of the self-test.
var djangoExample = example{
	dir:       "django-receiver",
	needs:     djangoReady,
	env:       []string{"WEBHOOK_SECRET_ACCT_NORTH=whsec_c2VsZnRlc3QtZGphbmdvLW5vcnRoLTAwMDAwMDAx", "WEBHOOK_SECRET_ACCT_SOUTH=whsec_c2VsZnRlc3QtZGphbmdvLXNvdXRoLTAwMDAwMDAx"},
	defectEnv: "DJANGO_RECEIVER_DEFECT",
	// No failpoints, no outbox (4), one profile (DEDUP-4), no key_ttl
	// query (RETENTION-5), no handshake (ACK-8).
	maxNA: 13, // +3: no provider API (REFETCH)
	mustPass: []string{"DEDUP-1", "DEDUP-3", "DEDUP-5", "DEDUP-6", "ATOMIC-1", "ATOMIC-2", "ATOMIC-3", "ATOMIC-5", "ACK-1", "ACK-4", "ACK-5",
		"ORDER-2", "ORDER-3", "ORDER-4", "RETENTION-2", "RETENTION-4",
		"INBOX-1", "INBOX-2", "INBOX-3", "INBOX-4", "INBOX-5", "INBOX-6", "INBOX-7"},
	breaks: map[string]map[string][]string{
		// Look, then insert: copies held at the insert by the lock gate all
		// find nothing; the constraint refuses all but one, answered 500.
		"check-then-insert": {"DEDUP-1": {"dedup.not-acked"}, "ORDER-2": {"order.not-acked"}},
	},
	// The correct receiver is certified in full; the defect need only meet
	// the lock-gated races it loses.
	defectFilter: "DEDUP-1 || ORDER-2",
}
