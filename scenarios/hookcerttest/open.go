package hookcerttest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/scenarios/harness"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Run and RunFile assemble a target the same way: a target file (the test's,
// or the one a Target stands for) checked by the loader, rendered with the
// harness's values and the test's database, and assembled by the
// composition root with the hooks a Go test supplies in place of parts of it.

// source is a target as Run and RunFile hand it to open.
type source struct {
	// path is the target file; "" for a Target (its errors then name Target's
	// fields).
	path string
	data []byte
	opts []targetfile.Option
	// hooks are what the test supplies as functions.
	hooks harness.Hooks
	// dbURL is {{.DatabaseURL}}.
	dbURL string
	// secrets are scrubbed from every error and report.
	secrets  []string
	receiver Factory
	// purge: WithPurge replaces the file's retention.purge.
	purge bool
}

// field names a target file path as the caller wrote the target.
func (src *source) field(path string) string {
	if src.path == "" {
		return goField(path)
	}
	return path
}

// loaderErr names the loader's errors as the caller wrote the target: a
// file's paths and lines, or Target's fields.
func (src *source) loaderErr(err error) error {
	if src.path == "" {
		return goNames(err)
	}
	return fmt.Errorf("%s: %w", src.path, withReceiverHint(err))
}

// withReceiverHint adds to the loader's "crash needs target.lifecycle" that
// a Go test has another way.
func withReceiverHint(err error) error {
	errs := unjoin(err)
	out := make([]error, 0, len(errs))
	for _, e := range errs {
		var fe *targetfile.FieldError
		if errors.As(e, &fe) && strings.Contains(fe.Rule, "needs target.lifecycle, which is missing") {
			hinted := *fe
			hinted.Rule += " (or, in a Go test, WithReceiver: the receiver in the test process)"
			e = &hinted
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// rootErr names the composition root's errors the same way (it speaks of the
// file's paths: an observer query that does not prepare, say).
func (src *source) rootErr(err error) error {
	if src.path == "" {
		return goText{msg: pathRE.ReplaceAllStringFunc(err.Error(), goField), err: err}
	}
	return err
}

// fits refuses what the target declares that the test's options cannot run,
// or options the target leaves without use, naming both.
func (src *source) fits(inspected *targetfile.Target) error {
	var errs []error
	if src.path != "" {
		switch uses := inspected.Uses("DatabaseURL"); {
		case uses && src.dbURL == "":
			errs = append(errs, fmt.Errorf("%s uses {{.DatabaseURL}}, and hookcerttest provisions no database (hookcert certify does): pass WithDatabaseURL(url), a database the test created", src.path))
		case !uses && src.dbURL != "":
			errs = append(errs, fmt.Errorf("WithDatabaseURL: %s does not use {{.DatabaseURL}} (its target.observe.postgres.url names its own database): the URL would go unused", src.path))
		}
	}
	if l := inspected.Lifecycle; src.receiver != nil && l != nil && l.Worker != nil {
		errs = append(errs, fmt.Errorf("WithReceiver: %s declares worker processes, which the harness kills apart from the receiver; an in-process receiver takes the place of the whole lifecycle: run its workers in the Factory, on Incarnation.Context(), without %s, or drop WithReceiver to run the lifecycle",
			src.field("target.lifecycle.worker"), src.field("target.lifecycle.worker")))
	}
	if src.purge && !inspected.Has(targetfile.Retention) {
		errs = append(errs, fmt.Errorf("WithPurge: %s does not declare capability retention, so nothing would purge", src.path))
	}
	return errors.Join(errs...)
}

// open checks src as a target file and assembles it with the composition
// root, as hookcert certify assembles a file.
func open(ctx context.Context, src *source, o options) (*harness.Harness, error) {
	inspected, err := targetfile.Inspect(src.data, profiles.IDs(), src.opts...)
	if err != nil {
		return nil, src.loaderErr(err)
	}
	if err := src.fits(inspected); err != nil {
		return nil, err
	}
	hooks := src.hooks
	// The in-process receiver's address is the rendered base URL, known only
	// once the harness has picked {{.Port}}: the hooks reach it when called.
	var recv *Receiver
	if src.receiver != nil {
		hooks.Start = func(ctx context.Context) error { return recv.Restart(ctx) }
		hooks.Restart = func(ctx context.Context) error { return recv.Restart(ctx) }
		hooks.Kill = func() error { return recv.Kill() }
		hooks.Alive = func() (bool, string) { return recv.Alive() }
	}
	b := harness.New(harness.Options{RunID: o.runID, TimeScale: o.timeScale, Hooks: hooks, Secrets: src.secrets,
		LogDir: o.reportDir, Source: src.path})
	vars, err := b.Vars(inspected)
	if err != nil {
		b.Close()
		return nil, err
	}
	vars.DatabaseURL = src.dbURL
	model, err := targetfile.Parse(src.data, vars, append(src.opts, targetfile.WithProfiles(profiles.IDs()))...)
	if err != nil {
		b.Close()
		return nil, src.loaderErr(err)
	}
	if src.receiver != nil {
		if recv, err = src.inProcess(model.BaseURL); err != nil {
			b.Close()
			return nil, err
		}
		b.Defer(recv.Close)
	}
	hs, err := b.Open(ctx, model)
	if err != nil {
		return nil, src.rootErr(err)
	}
	return hs, nil
}

// inProcess is WithReceiver's receiver, to be served at the target's base URL.
func (src *source) inProcess(base string) (*Receiver, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" {
		return nil, fmt.Errorf("WithReceiver: %s is %q: a receiver in the test process is served over plain http", src.field("target.base_url"), base)
	}
	r, err := newReceiver(u.Host, src.receiver)
	if err != nil {
		return nil, fmt.Errorf("WithReceiver: %s is %q: %w", src.field("target.base_url"), base, err)
	}
	return r, nil
}

// source is the target file tg stands for, with the hooks the harness takes
// for what a file cannot hold and the rules those hooks satisfy.
func (tg *Target) source(o options) (*source, error) {
	if o.receiver != nil && (tg.Kill != nil || tg.Restart != nil || tg.Lifecycle != nil) {
		return nil, errors.New("WithReceiver: Target sets Kill and Restart, or Lifecycle: set one way to run and crash the receiver")
	}
	if err := tg.goChecks(); err != nil {
		return nil, err
	}
	data, hooks, gh, err := tg.file()
	if err != nil {
		return nil, err
	}
	gh.Controller = gh.Controller || o.receiver != nil
	// A relative program or directory is the test's, as a file's are the file's.
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	src := &source{data: data, hooks: hooks, dbURL: tg.DatabaseURL, receiver: o.receiver,
		opts: []targetfile.Option{targetfile.WithBaseDir(dir), targetfile.WithGoHooks(gh)}}
	if tg.Pool != nil {
		src.dbURL = hooks.PoolConfig.ConnString()
	}
	return src, nil
}

// check checks tg before anything is opened: its Go-only fields, then the
// file it stands for, with the loader's stand-in template values. Every
// problem is reported at once, each naming its Go field.
func (tg *Target) check() (*targetfile.Target, *source, error) {
	src, err := tg.source(options{})
	if err != nil {
		return nil, nil, err
	}
	inspected, err := targetfile.Inspect(src.data, profiles.IDs(), src.opts...)
	if err != nil {
		return nil, nil, src.loaderErr(err)
	}
	return inspected, src, nil
}

// goText is an error whose message names Target's fields, wrapping the one
// that named the file's.
type goText struct {
	msg string
	err error
}

func (e goText) Error() string { return e.msg }
func (e goText) Unwrap() error { return e.err }
