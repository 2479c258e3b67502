package targetfile

import (
	"strings"
	"time"

	"github.com/hookcert/hookcert/vocab"
)

type rawAcceptance struct {
	Mode      string `yaml:"mode"`
	Settle    string `yaml:"settle"`
	Quiescent string `yaml:"quiescent"`
}

// Acceptance defaults and bounds (acceptance.settle).
const (
	// DefaultSyncSettle: a synchronous receiver has committed the effect before
	// its 2xx; a second covers the read racing the commit's visibility.
	DefaultSyncSettle = time.Second
	// DefaultAsyncSettle: a worker applying accepted events typically polls
	// every few hundred milliseconds.
	DefaultAsyncSettle = 5 * time.Second
	MaxSettle          = 10 * time.Minute
)

// Acceptance modes.
const (
	AcceptSync  = "sync"
	AcceptAsync = "async"
)

// acceptance checks target.acceptance and applies its defaults.
func (v *validator) acceptance(t *Target, ra *rawAcceptance) {
	t.Acceptance = vocab.Acceptance{Settle: DefaultSyncSettle}
	if ra == nil {
		return
	}
	base := []any{"target", "acceptance"}
	switch ra.Mode {
	case "", AcceptSync:
	case AcceptAsync:
		t.Acceptance = vocab.Acceptance{Async: true, Settle: DefaultAsyncSettle}
	default:
		v.fail(at(base, "mode"), "must be sync or async (got %q)", ra.Mode)
	}
	if ra.Settle != "" {
		d := v.duration(at(base, "settle"), ra.Settle, 0, false)
		switch {
		case d <= 0:
		case d > MaxSettle:
			v.fail(at(base, "settle"), "must be at most %s (got %s)", MaxSettle, ra.Settle)
		default:
			t.Acceptance.Settle = d
		}
	}
	if strings.TrimSpace(ra.Quiescent) != "" && v.queryParams(at(base, "quiescent"), ra.Quiescent, nil) {
		t.Store.Queries.Quiescent = ra.Quiescent
		if t.Store.Queries.From == nil {
			t.Store.Queries.From = map[string]string{}
		}
		t.Store.Queries.From[QueryQuiescent] = "target.acceptance.quiescent"
	}
}
