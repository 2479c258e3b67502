package check

import (
	"fmt"
	"strings"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
)

// race says, for a guarantee whose verdict rests on a race (g.Race), whether
// its scenarios forced it: every lock gate they held must have held at least
// two racers at once — two receiver transactions provably inside the race
// together, released at the same instant — or the race was left to timing,
// and the report says why. nil for a guarantee that sends no race, and for
// scenarios that never got as far as sending it.
func race(g scenarios.Guarantee, h *history.History, idx []int, parts map[int]*Part) *reports.Race {
	if g.Race == "" {
		return nil
	}
	var gates []history.Gate
	var unforced []string
	for _, i := range idx {
		sc := h.Scenarios[i]
		if why := sc.Facts["unforced"]; why != "" {
			unforced = append(unforced, why)
		}
		if p := parts[sc.Index]; p != nil {
			gates = append(gates, p.gates...)
		}
	}
	if len(unforced) > 0 {
		return &reports.Race{How: "left to timing: " + strings.Join(unforced, "; ")}
	}
	if len(gates) == 0 {
		return nil
	}
	forced, refused := true, 0
	var held []string
	for _, gt := range gates {
		switch {
		case gt.Refused:
			refused++
			continue
		case gt.Held() < 2:
			forced = false
		}
		held = append(held, describeGate(gt))
	}
	if len(held) == 0 {
		return &reports.Race{How: fmt.Sprintf("not forced: every delivery was refused before it reached %s, so nothing raced", gates[0].Table)}
	}
	how := "lock " + strings.Join(dedupe(held), "; ")
	if !forced {
		how = "not forced: lock " + strings.Join(dedupe(held), "; ") + "; fewer than two racers met there at once, so they were left to meet by timing"
	}
	return &reports.Race{Forced: forced, How: how}
}

// describeGate says who one gate held: "gate on ledger_entries held 2 of 2
// racers (1 at the lock, 1 behind it)".
func describeGate(g history.Gate) string {
	d := fmt.Sprintf("gate on %s held %d of %d racers", g.Table, g.Held(), g.Racers)
	if g.Behind > 0 {
		d += fmt.Sprintf(" (%d at the lock, %d behind it)", g.AtGate, g.Behind)
	}
	return d
}

// dedupe folds repeated descriptions: "… (×3)".
func dedupe(ds []string) []string {
	var out []string
	n := map[string]int{}
	for _, d := range ds {
		if n[d] == 0 {
			out = append(out, d)
		}
		n[d]++
	}
	for i, d := range out {
		if n[d] > 1 {
			out[i] = fmt.Sprintf("%s (×%d)", d, n[d])
		}
	}
	return out
}
