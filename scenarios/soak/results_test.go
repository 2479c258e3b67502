package soak

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
)

// A soak's results rebuild from its history alone, after the history went
// through its JSON Lines form as hookcert check --from reads it: the same soak
// section, the run record (faults, settling, traffic end) from the meta; a run
// that could not judge does not pass.
func TestResultsFromStoredHistory(t *testing.T) {
	A := history.OutcomeAcknowledged
	h := &history.History{
		Meta:     history.Meta{RunID: "r1", Seed: 7, Plan: Plan, Started: time.Unix(100, 0).UTC(), Finished: time.Unix(130, 0).UTC()},
		Attempts: []history.Attempt{att("ok", A, 0, 10), att("dup", A, 20, 31), att("dup", A, 20, 33)},
		Releases: []history.Release{},
	}
	h.Observations = append(reads("ok", 1, 1), reads("dup", 2, 1)...)
	info := RunInfo{Tool: reports.ToolInfo{Name: "hookcert", Version: "test"}, Target: reports.TargetInfo{Name: "t"},
		Options: reports.SoakRun{Duration: "1s", Concurrency: 2, Nemesis: "kill=5s"}, TrafficNS: int64(time.Second),
		Faults: []reports.SoakFault{{Kind: KindKill, StartMS: 5, EndMS: 9}}, Settle: reports.SoakSettle{Quiescent: true},
		Repro: "hookcert soak --seed 7", DurationMS: 30_000}
	var err error
	if h.Meta.Run, err = json.Marshal(info); err != nil {
		t.Fatal(err)
	}
	live, err := Results(h)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := h.WriteJSONL(&b); err != nil {
		t.Fatal(err)
	}
	stored, err := history.ReadJSONL(&b)
	if err != nil {
		t.Fatal(err)
	}
	offline, err := Results(stored)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(live.Soak, offline.Soak) {
		t.Errorf("offline soak section differs:\nlive    %+v\noffline %+v", live.Soak, offline.Soak)
	}
	s := offline.Soak
	if s.Passed || s.Duplicated != 1 || len(s.Faults) != 1 || s.Repro != info.Repro || s.AcksPerS != 3 || offline.DurationMS != 30_000 || offline.Seed != 7 {
		t.Errorf("soak section %+v, results %+v", s, offline)
	}

	h.Observations = reads("ok", 1, 1)
	h.Attempts = h.Attempts[:1]
	if r, _ := Results(h); !r.Soak.Passed {
		t.Error("a clean soak's history does not pass")
	}
	info.Error = "interrupted while reading"
	h.Meta.Run, _ = json.Marshal(info)
	if r, _ := Results(h); r.Soak.Passed {
		t.Error("a soak that could not judge passes")
	}
	h.Meta.Run = nil
	if _, err := Results(h); err == nil || !strings.Contains(err.Error(), "meta.run") {
		t.Errorf("history without its run record: %v", err)
	}
	h.Meta.Plan = "suite"
	if _, err := Results(h); err == nil {
		t.Error("a certification's history judged as a soak")
	}
}
