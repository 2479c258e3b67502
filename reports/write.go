package reports

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// File names written by Write.
const (
	FileJSON     = "results.json"
	FileJUnit    = "junit.xml"
	FileMarkdown = "summary.md"
	FileHTML     = "index.html"
)

// Options tune Write.
type Options struct {
	// Secrets are values that must not appear in any output file (endpoint signing
	// secrets, database passwords). Every occurrence is replaced by [REDACTED].
	Secrets []string
}

// Write renders r into dir (created if needed) as results.json, junit.xml,
// summary.md and index.html, and returns the paths written. Every string is scrubbed
// of opts.Secrets and of well-known secret patterns first. An empty r.Schema is taken
// to mean Schema and an empty r.Verdict the run's (RunVerdict); any other content
// must pass Results.Validate. Each file is written
// to a temporary name and renamed, so a reader never sees half a report.
func Write(dir string, r *Results, opts Options) ([]string, error) {
	if r == nil {
		return nil, fmt.Errorf("write reports: results are nil")
	}
	clean, err := prepare(r, opts)
	if err != nil {
		return nil, fmt.Errorf("write reports: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("write reports: %w", err)
	}
	writers := []struct {
		name  string
		write func(io.Writer, *Results) error
	}{
		{FileJSON, writeJSON},
		{FileJUnit, writeJUnit},
		{FileMarkdown, writeMarkdown},
		{FileHTML, writeHTML},
	}
	var paths []string
	for _, wr := range writers {
		var buf bytes.Buffer
		if err := wr.write(&buf, clean); err != nil {
			return paths, err
		}
		p := filepath.Join(dir, wr.name)
		if err := writeFileAtomic(p, buf.Bytes()); err != nil {
			return paths, fmt.Errorf("write %s: %w", p, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// prepare is what every writer of a report directory does first: scrub r,
// take an empty schema to mean Schema, fill in the run's verdict, and check
// the result.
func prepare(r *Results, opts Options) (*Results, error) {
	clean := Redact(r, opts.Secrets)
	if clean.Schema == "" {
		clean.Schema = Schema
	}
	if clean.Verdict == "" {
		clean.Verdict = clean.RunVerdict()
	}
	if err := clean.Validate(); err != nil {
		return nil, err
	}
	return clean, nil
}

func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
