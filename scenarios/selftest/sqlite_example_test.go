package selftest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func init() { examples = append(examples, sqliteExample) }

// sqliteExample is the Stripe receiver on SQLite, read through a program
// (observe.command): hookcert reaches a store it cannot open itself. Without
// lock gates its races are left to timing, so the seeds vary the kill points
// and the orders; its defect is caught by sequential redeliveries, every run.
var sqliteExample = example{
	dir:   "sqlite-receiver",
	needs: sqliteReady,
	env: []string{"STRIPE_WEBHOOK_SECRET_LIVE=whsec_c2VsZnRlc3Qtc3FsaXRlLWxpdmUtMDAwMDAx", "STRIPE_WEBHOOK_SECRET_TEST=whsec_c2VsZnRlc3Qtc3FsaXRlLXRlc3QtMDAwMDAx",
		// Every observer call is a python3 process: found through a pyenv
		// shim it costs 0.2 s more, which would double the run. Debian's
		// interpreter first (the target file's .python-version asks for it anyway).
		"PATH=/usr/bin:" + os.Getenv("PATH")},
	defectEnv: "SQLITE_RECEIVER_DEFECT",
	// Every read is a process, so one seed, and the defect run only the two
	// guarantees that must catch it by redelivery (CI time).
	seeds:        1,
	defectFilter: "DEDUP-1 || DEDUP-2",
	// One account (DEDUP-3), Stripe's body-borne event ID (DEDUP-5), no
	// lifecycle, ordering, failpoints, inbox or outbox, and a store with no
	// lock, session or expiry the harness can reach (ATOMIC-1, ATOMIC-3,
	// RETENTION-5), no handshake (ACK-8): 27.
	maxNA: 30, // +3: no provider API (REFETCH)
	mustPass: []string{"DEDUP-1", "DEDUP-2", "DEDUP-4", "DEDUP-7", "ACK-1", "ACK-2", "ACK-3", "ACK-4", "ACK-5", "ACK-6", "ACK-7",
		"RETENTION-1", "RETENTION-2", "RETENTION-3", "RETENTION-4"},
	breaks: map[string]map[string][]string{
		// No unique key and no check: every delivery of an event applies it.
		"no-dedup": {
			"DEDUP-1": {"dedup.rows", "dedup.effects"},
			"DEDUP-2": {"dedup.rows", "dedup.effects"},
		},
	},
}

// sqliteReady: the SQLite example needs python3 whose sqlite3 module links
// SQLite 3.24 or newer (INSERT ... ON CONFLICT DO NOTHING), as its folder's
// interpreter sees it; nothing else (standard library only).
func sqliteReady() string {
	c := exec.Command("python3", "-c", "import sqlite3, sys; sys.exit(sqlite3.sqlite_version_info < (3, 24))")
	c.Dir = filepath.Join("..", "..", "examples", "sqlite-receiver")
	c.Env = append(os.Environ(), "PATH=/usr/bin:"+os.Getenv("PATH"))
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Sprintf("python3 cannot import sqlite3 3.24 or newer: %v %s", err, strings.TrimSpace(string(out)))
	}
	return ""
}
