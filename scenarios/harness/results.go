package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	secretscrub "github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/scenarios/check"
)

// HistoryFile is the history's name in a report directory (the input of
// `hookcert check --from DIR`).
const HistoryFile = "history.jsonl"

// Report is what a run's results say about how it was made, beside what the
// harness knows of the target.
type Report struct {
	// Version is hookcert's version as the caller knows it (Version when "").
	Version string
	// Environment adds to the results' environment (the database and how it
	// was provided, the mode).
	Environment map[string]string
	// Repro renders the command that reproduces one guarantee's verdict.
	Repro func(id string) string
	// Dir receives results.json, junit.xml, summary.md, index.html and
	// history.jsonl ("" = no files).
	Dir string
}

// NewRun starts a run of the suite against the harness's target.
func (hs *Harness) NewRun(opt scenarios.RunOptions) (*scenarios.Run, error) {
	return scenarios.NewRun(hs.Env, opt, history.Meta{TargetURL: hs.tg.BaseURL, TimeScale: hs.Env.TimeScale})
}

// Info is what the run records about itself in its history's meta, so that
// results.json can be rebuilt from the history alone.
func (hs *Harness) Info(r Report) check.RunInfo {
	tg := hs.tg
	info := check.RunInfo{
		Tool:     reports.ToolInfo{Name: "hookcert", Version: r.Version},
		Target:   reports.TargetInfo{Name: tg.Name, BaseURL: tg.BaseURL, Capabilities: hs.Env.Capabilities, Observer: hs.Env.ObserverKind},
		Profiles: tg.Profiles(),
		Environment: map[string]string{
			"go": runtime.Version(), "os": runtime.GOOS + "/" + runtime.GOARCH,
			"time_scale": fmt.Sprint(hs.Env.TimeScale),
		},
		Repro: map[string]string{},
	}
	if info.Tool.Version == "" {
		info.Tool.Version = Version
	}
	for k, v := range r.Environment {
		info.Environment[k] = v
	}
	for _, ep := range tg.Endpoints {
		info.Target.Endpoints = append(info.Target.Endpoints, reports.EndpointInfo{Profile: ep.Profile, Account: ep.Account, Path: ep.Path})
	}
	if r.Repro != nil {
		for _, g := range scenarios.Catalogue() {
			info.Repro[g.ID] = r.Repro(g.ID)
		}
	}
	return info
}

// Finish judges what run recorded, from its history alone, and writes the
// reports into r.Dir.
func (hs *Harness) Finish(ctx context.Context, run *scenarios.Run, r Report) (*reports.Results, error) {
	info := hs.Info(r)
	info.Interrupted = ctx.Err() != nil
	h := run.History()
	var err error
	if h.Meta.Run, err = json.Marshal(info); err != nil {
		return nil, err
	}
	res, err := check.Judge(h)
	if err != nil {
		return nil, err
	}
	if r.Dir != "" {
		if err := WriteRun(r.Dir, h, res, hs.secrets); err != nil {
			return res, err
		}
	}
	return res, nil
}

// WriteRun writes a run's reports and its history (history.jsonl, the input of
// `hookcert check`) into dir, scrubbing secrets from both.
func WriteRun(dir string, h *history.History, res *reports.Results, secrets []string) error {
	if _, err := reports.Write(dir, res, reports.Options{Secrets: secrets}); err != nil {
		return fmt.Errorf("writing reports: %w", err)
	}
	var b strings.Builder
	if err := h.WriteJSONL(&b); err != nil {
		return fmt.Errorf("writing history: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, HistoryFile), []byte(secretscrub.New(secrets...).String(b.String())), 0o644); err != nil {
		return fmt.Errorf("writing history: %w", err)
	}
	return nil
}

// Version is hookcert's version, printed in reports: the module version it was
// built as (go install …@v1.2.3, or hookcert as a dependency of a Go test),
// else "devel" with the commit it was built from.
var Version = buildVersion()

func buildVersion() string {
	v, commit, modified := BuildInfo()
	if commit != "" {
		if len(commit) > 12 {
			commit = commit[:12]
		}
		if modified {
			commit += "-modified"
		}
		if v == "devel" {
			return "devel+" + commit
		}
	}
	return v
}

// releaseVersion is stamped by make release (-ldflags -X): the release's own
// name wins over what the build's module information says.
var releaseVersion string

// BuildInfo reads hookcert's module version — the release's stamped version,
// the main module's, or the dependency's when hookcert is imported by a Go
// test — and the commit the binary was built from (empty when the build
// recorded none).
func BuildInfo() (version, commit string, modified bool) {
	version, commit, modified = moduleBuildInfo()
	if releaseVersion != "" {
		version = releaseVersion
	}
	return version, commit, modified
}

func moduleBuildInfo() (version, commit string, modified bool) {
	version = "devel"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version, "", false
	}
	const module = "github.com/hookcert/hookcert"
	if v := bi.Main.Version; bi.Main.Path == module && v != "" && v != "(devel)" {
		version = v
	}
	for _, d := range bi.Deps {
		if d.Path == module && d.Version != "" {
			version = d.Version
		}
	}
	if bi.Main.Path != module {
		// Another module's binary: its commit is not hookcert's.
		return version, "", false
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	return version, commit, modified
}
