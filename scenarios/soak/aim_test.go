package soak

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/scenarios"
)

func TestParseNemesisAims(t *testing.T) {
	ns, err := ParseNemesis("kill@ack=2s, kill@commit=7s,pg-terminate@commit=5s,pg-terminate@ack=4s,pause@timeout=11s,kill=3s,kill@downstream=9s")
	if err != nil || len(ns) != 7 || ns[6] != (Nemesis{Kind: KindKill, Aim: AimDownstream, Every: 9 * time.Second}) {
		t.Fatalf("%v %v", ns, err)
	}
	if ns[0] != (Nemesis{Kind: KindKill, Aim: AimAck, Every: 2 * time.Second}) || ns[4] != (Nemesis{Kind: KindPause, Aim: AimTimeout, Every: 11 * time.Second}) || ns[5].Aim != "" {
		t.Errorf("parsed %+v", ns)
	}
	// The schedule as written is the schedule read back.
	if again, err := ParseNemesis(FormatNemesis(ns)); err != nil || FormatNemesis(again) != FormatNemesis(ns) {
		t.Errorf("round trip %q: %v %v", FormatNemesis(ns), again, err)
	}
	if ns, err := ParseNemesis("none"); err != nil || ns != nil {
		t.Errorf("none: %v %v", ns, err)
	}
	for bad, want := range map[string]string{
		"kill@commit":                  "FAULT[@AIM]=INTERVAL",
		"pause@ack=1s":                 `pause cannot aim at "ack"`,
		"kill@timeout=1s":              `kill cannot aim at "timeout"`,
		"kill@ack=1s,kill@ack=2s":      "kill@ack given twice",
		"kill@ack=10ms":                "at least 100ms",
		"boom@ack=1s":                  `unknown fault "boom"`,
		"pg-terminate@pause=1s":        "pg-terminate@ack, pg-terminate@commit",
		"pg-terminate@downstream=1s":   `pg-terminate cannot aim at "downstream"`,
		"kill@ack=1s,pg-terminate=1x":  "pg-terminate=1x",
		"kill@ack=1s,kill@commit=1s,,": "",
	} {
		_, err := ParseNemesis(bad)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", bad, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: error %v, want one saying %q", bad, err, want)
		}
	}
}

// The schedule's waits and aims follow from the seed and the fault alone.
func TestNemesisSeeded(t *testing.T) {
	n := Nemesis{Kind: KindKill, Aim: AimAck, Every: 2 * time.Second}
	a, b, c := nemesisRand(7, n), nemesisRand(7, n), nemesisRand(8, n)
	other := nemesisRand(7, Nemesis{Kind: KindKill, Aim: AimCommit, Every: 2 * time.Second})
	same, differs, differsKind := true, false, false
	for range 20 {
		x, y, z, w := jitter(a, n.Every), jitter(b, n.Every), jitter(c, n.Every), jitter(other, n.Every)
		if x < 1500*time.Millisecond || x > 2500*time.Millisecond {
			t.Fatalf("wait %s outside 2s ±25%%", x)
		}
		same = same && x == y
		differs = differs || x != z
		differsKind = differsKind || x != w
	}
	if !same || !differs || !differsKind {
		t.Errorf("same seed same waits %v; another seed differs %v; another fault differs %v", same, differs, differsKind)
	}
}

type nopCtl struct{}

func (nopCtl) Kill() error                    { return nil }
func (nopCtl) WaitExit(context.Context) error { return nil }
func (nopCtl) Restart(context.Context) error  { return nil }
func (nopCtl) Alive() (bool, string)          { return true, "" }

type nopSink struct{}

func (nopSink) Calls(string) []scenarios.SinkCall    { return nil }
func (nopSink) Fail(string, int, int)                {}
func (nopSink) Lose(string, int)                     {}
func (nopSink) HoldAfterApply(string, time.Duration) {}

type nopDB struct{}

func (nopDB) Hold(context.Context, string) (scenarios.Gate, error) { return nil, nil }
func (nopDB) TerminateWaiters(context.Context, scenarios.Gate, bool) ([]int, error) {
	return nil, nil
}

// The default schedule takes every aimed fault a target supports and names
// each it leaves out, with why.
func TestDefaultSchedule(t *testing.T) {
	full := Hooks{Controller: nopCtl{}, Pause: func(bool) error { return nil }, Terminate: func(context.Context) ([]int, error) { return nil, nil }}
	env := &scenarios.Env{DB: nopDB{}, EffectTable: "ledger_entries", Sink: nopSink{}, Endpoints: []scenarios.Endpoint{{AckTimeout: 10 * time.Second}, {AckTimeout: 3 * time.Second}}}
	use, left := DefaultSchedule(env, full, Options{Duration: 20 * time.Second})
	if FormatNemesis(use) != FormatNemesis(DefaultNemesis) || len(left) != 0 {
		t.Fatalf("full target: %s, left out %v", FormatNemesis(use), left)
	}
	if pauseTimeout(env) != 3*time.Second {
		t.Errorf("pause past %s, want the shortest timeout 3s", pauseTimeout(env))
	}
	// A short soak has no room for a pause past the timeout.
	if _, left := DefaultSchedule(env, full, Options{Duration: 10 * time.Second}); len(left) != 1 || !strings.HasPrefix(left[0], "pause@timeout: ") {
		t.Errorf("10s soak left out %v", left)
	}
	// No lifecycle, no lockable table: only what remains.
	use, left = DefaultSchedule(&scenarios.Env{Endpoints: env.Endpoints}, Hooks{Terminate: full.Terminate}, Options{Duration: 20 * time.Second})
	if FormatNemesis(use) != "pg-terminate@ack=4s" || len(left) != 5 {
		t.Fatalf("no lifecycle, no table: %s, left out %v", FormatNemesis(use), left)
	}
	for _, l := range left {
		if !strings.Contains(l, "target.lifecycle") && !strings.Contains(l, "table the harness may lock") && !strings.Contains(l, "downstream sink") {
			t.Errorf("left out without a reason a user can act on: %q", l)
		}
	}
	// kill@downstream needs a receiver that calls the harness's sink.
	if why := Unavailable(&scenarios.Env{}, full, Nemesis{Kind: KindKill, Aim: AimDownstream}); !strings.Contains(why, "capability outbox") {
		t.Errorf("kill@downstream without a sink: %q", why)
	}
	if why := Unavailable(env, full, Nemesis{Kind: KindPause, Aim: AimTimeout}); why != "" {
		t.Errorf("pause@timeout unavailable: %s", why)
	}
	if why := Unavailable(&scenarios.Env{}, full, Nemesis{Kind: KindPause, Aim: AimTimeout}); !strings.Contains(why, "timeout") {
		t.Errorf("pause@timeout without timeouts: %q", why)
	}
}
