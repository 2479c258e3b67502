package reports

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecodeResults feeds arbitrary content to the results reader, and whatever it
// accepts to every writer: nothing may panic or hang, results.json must read back
// to the same file, junit.xml must parse, and summary.md must hold no raw control
// character.
func FuzzDecodeResults(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("testdata", "golden.results.json"))
	if err != nil {
		f.Fatal(err)
	}
	g := string(golden)
	seeds := []string{
		g,
		g[:len(g)/2], // cut short
		strings.Replace(g, `"start_ns": 10000000,`, `"start_ns": 9223372036854775807,`, 1),
		strings.Replace(g, `"end_ns": 190000000,`, `"end_ns": -9223372036854775808,`, 1),
		strings.Replace(g, `"seed": 42`, `"seed": 42, "seed": 43`, 1),
		strings.Replace(g, Schema, "hookcert.results/v2", 1),
		strings.Replace(g, `"status": "failed"`, `"status": "nope"`, 1),
		strings.Replace(g, "multi-line evidence", "\\u001b[31m\\u202e\\u0000 evidence", 1),
		`{"schema": "hookcert.results/v1", "summary": {}, "guarantees": [], "duration_ms": 0}`,
		`{"schema": "hookcert.results/v1", "summary": {"failed": 1, "total": 1}, "guarantees": [{"id": "X-1", "status": "failed", "reason": "- a\n1. b",` +
			` "scenarios": [{"name": "s", "timeline": [{"start_ns": -1, "end_ns": 9223372036854775807, "outcome": "failed"}]}]}]}`,
		`{"schema": "hookcert.results/v1", "started_at": "0000-01-01T00:00:00Z", "summary": {}, "duration_ms": 0}`,
		`{"schema": null}`,
		`null`,
		``,
		`{"schema": "hookcert.results/v1"} trailing`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeResults(bytes.NewReader(data))
		if err != nil {
			if r != nil {
				t.Fatal("results returned with an error")
			}
			return
		}
		var js bytes.Buffer
		if err := WriteJSON(&js, r); err != nil {
			// A value the reader accepts must be writable again.
			t.Fatalf("WriteJSON of accepted results: %v", err)
		}
		back, err := DecodeResults(bytes.NewReader(js.Bytes()))
		if err != nil {
			t.Fatalf("results.json written from accepted results does not read back: %v\n%s", err, js.Bytes())
		}
		var js2 bytes.Buffer
		if err := WriteJSON(&js2, back); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(js.Bytes(), js2.Bytes()) {
			t.Fatalf("results.json changes when read and written again:\n%s\n---\n%s", js.Bytes(), js2.Bytes())
		}
		var ju bytes.Buffer
		if err := WriteJUnit(&ju, r); err != nil {
			t.Fatal(err)
		}
		var doc junit
		if err := xml.Unmarshal(ju.Bytes(), &doc); err != nil {
			t.Fatalf("junit.xml does not parse: %v\n%s", err, ju.Bytes())
		}
		if doc.Tests != len(r.Guarantees) {
			t.Fatalf("junit.xml has %d tests, results %d guarantees", doc.Tests, len(r.Guarantees))
		}
		var md bytes.Buffer
		if err := WriteMarkdown(&md, r); err != nil {
			t.Fatal(err)
		}
		if bad := noRawControls(md.String()); bad != "" {
			t.Fatalf("summary.md holds a raw control character: %s", bad)
		}
		var page bytes.Buffer
		if err := WriteHTML(&page, r); err != nil {
			t.Fatal(err)
		}
	})
}
