// Package docs renders every figure the Markdown documentation quotes from the
// code — how many guarantees, families, deviation codes, provider profiles and
// reference defects there are, the example receivers' verdicts, files shown
// verbatim — into marked regions of the files, so that none is typed by hand
// and none goes stale unnoticed:
//
//	<!-- generated:guarantee-count -->38<!-- /generated -->
//
// `make generate` (go generate ./internal/docs) rewrites the regions; `make
// verify-generated` and TestDocsAreCurrent fail while one differs from what
// the code gives. A region whose name is unknown is an error naming the file
// and line.
package docs

//go:generate go run ./gen ../..

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Files are the globs, relative to the repository root, whose marked regions
// are rendered.
var Files = []string{"README.md", "ARCHITECTURE.md", "CONTRIBUTING.md", "docs/*.md", "examples/*/README.md"}

const endMarker = "<!-- /generated -->"

// startMarker is "<!-- generated:NAME -->" or "<!-- generated:NAME ARG -->".
var startMarker = regexp.MustCompile(`<!-- generated:([a-z][a-z-]*)(?: ([^ >]+))? -->`)

// Renderer gives the text of one region from its name and argument.
type Renderer func(name, arg string) (string, error)

// Rewrite renders every marked region of text. file names the text in errors.
func Rewrite(file, text string, render Renderer) (string, error) {
	var b strings.Builder
	rest := text
	for {
		loc := startMarker.FindStringSubmatchIndex(rest)
		if loc == nil {
			b.WriteString(rest)
			return b.String(), nil
		}
		line := 1 + strings.Count(text[:len(text)-len(rest)+loc[0]], "\n")
		name := rest[loc[2]:loc[3]]
		arg := ""
		if loc[4] >= 0 {
			arg = rest[loc[4]:loc[5]]
		}
		b.WriteString(rest[:loc[1]])
		rest = rest[loc[1]:]
		end := strings.Index(rest, endMarker)
		if end < 0 {
			return "", fmt.Errorf("%s:%d: generated:%s has no %s", file, line, name, endMarker)
		}
		if next := startMarker.FindStringIndex(rest[:end]); next != nil {
			return "", fmt.Errorf("%s:%d: generated:%s is not closed before the next region starts", file, line, name)
		}
		value, err := render(name, arg)
		if err != nil {
			return "", fmt.Errorf("%s:%d: generated:%s: %w", file, line, name, err)
		}
		b.WriteString(value)
		b.WriteString(endMarker)
		rest = rest[end+len(endMarker):]
	}
}

// Paths lists the files under root that Files names, sorted.
func Paths(root string) ([]string, error) {
	var out []string
	for _, g := range Files {
		m, err := filepath.Glob(filepath.Join(root, g))
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	sort.Strings(out)
	return out, nil
}

// Stale renders every file under root and returns, by path, the content of
// those that differ from what is on disk.
func Stale(root string) (map[string][]byte, error) {
	paths, err := Paths(root)
	if err != nil {
		return nil, err
	}
	render := Figures(root)
	out := map[string][]byte{}
	for _, p := range paths {
		old, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, p)
		got, err := Rewrite(filepath.ToSlash(rel), string(old), render)
		if err != nil {
			return nil, err
		}
		if got != string(old) {
			out[p] = []byte(got)
		}
	}
	return out, nil
}
