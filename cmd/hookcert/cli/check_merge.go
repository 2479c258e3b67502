package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios/certify"
	"github.com/hookcert/hookcert/scenarios/soak"
)

// mergedSoakDir is where check writes a merged soak's reports by default.
const mergedSoakDir = "hookcert-soak-merged"

// mergeSoaks judges the shards of one sharded soak, each a report directory,
// as the whole soak: their histories merged (soak.Merge) into out's
// history.jsonl, results.json and soak.html, with the soak's exit status.
func mergeSoaks(w io.Writer, dirs []string, out string) error {
	hs := make([]*history.History, len(dirs))
	for i, d := range dirs {
		name := filepath.Join(d, certify.HistoryFile)
		f, err := os.Open(name)
		if err != nil {
			return usageErr("check: --from: %v", err)
		}
		h, err := history.ReadJSONL(f)
		f.Close()
		if err != nil {
			return usageErr("check: --from %s: %v", name, err)
		}
		if !soak.IsSoak(h) {
			return usageErr("check: --from %s: plan %q is not a soak: only the shards of one sharded soak merge", name, h.Meta.Plan)
		}
		hs[i] = h
	}
	h, err := soak.Merge(hs)
	if err != nil {
		return usageErr("check: --from %s: %v", strings.Join(dirs, " "), err)
	}
	res, err := soak.Results(h)
	if err != nil {
		return usageErr("check: merged history: %v", err)
	}
	if _, err := reports.WriteSoak(out, res, reports.Options{}); err != nil {
		return usageErr("check: --out %s: %v", out, err)
	}
	var b strings.Builder
	if err := h.WriteJSONL(&b); err != nil {
		return usageErr("check: writing the merged history: %v", err)
	}
	if err := os.WriteFile(filepath.Join(out, certify.HistoryFile), []byte(b.String()), 0o644); err != nil {
		return usageErr("check: --out %s: %v", out, err)
	}
	fmt.Fprintf(w, "merged %d shards of seed %d\n", len(dirs), h.Meta.Seed)
	printSoak(w, painterFor(w), res.Soak)
	fmt.Fprintf(w, "reports: %s/{results.json,soak.html,%s}\n", strings.TrimRight(out, "/"), certify.HistoryFile)
	var info soak.RunInfo
	_ = json.Unmarshal(h.Meta.Run, &info) // soak.Results read it already
	return soakExit(res.Soak, info.Error, res.Seed)
}
