package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// WriteJSON writes r as indented results.json content, with well-known secret
// patterns scrubbed and the run's verdict filled in when r has none.
func WriteJSON(w io.Writer, r *Results) error {
	if r == nil {
		return fmt.Errorf("write results.json: results are nil")
	}
	clean := Redact(r, nil)
	if clean.Verdict == "" {
		clean.Verdict = clean.RunVerdict()
	}
	return writeJSON(w, clean)
}

// writeJSON renders results that are already scrubbed (Write scrubs once for
// all four files).
func writeJSON(w io.Writer, r *Results) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	// The file is read by programs, not embedded in HTML; keep <>& readable.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write results.json: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write results.json: %w", err)
	}
	return nil
}

// MaxResultsBytes caps the results.json content DecodeResults and ReadResults
// accept: 64 MiB, far above a full suite's file (a few MiB), low enough that a
// corrupt or hostile file cannot exhaust memory when it is decoded and rendered.
const MaxResultsBytes = 64 << 20

// ErrTooLarge is wrapped by the error for results content above MaxResultsBytes.
var ErrTooLarge = errors.New("results too large")

// DecodeResults reads results.json content from rd and validates it (see
// Results.Validate). Unknown fields are an error, so a typo or a newer schema is
// not silently dropped; so is content after the JSON object, and content larger
// than MaxResultsBytes.
func DecodeResults(rd io.Reader) (*Results, error) {
	data, err := io.ReadAll(io.LimitReader(rd, MaxResultsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	if len(data) > MaxResultsBytes {
		return nil, fmt.Errorf("%w: more than %d bytes (limit %s)", ErrTooLarge, MaxResultsBytes, fmtBytes(MaxResultsBytes))
	}
	return decodeResults(data)
}

func decodeResults(data []byte) (*Results, error) {
	// Check the schema first: an error about a missing field is misleading when the
	// whole file is of another version.
	var head struct {
		Schema *string `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("parse results: %w", err)
	}
	if head.Schema == nil {
		return nil, fmt.Errorf("field schema: missing, expected %q", Schema)
	}
	if *head.Schema != Schema {
		return nil, fmt.Errorf("field schema: expected %q, got %q", Schema, *head.Schema)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Results
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("parse results: %w", err)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// ReadResults reads and validates a results.json file. Errors name the file and,
// for invalid content, the field and the rule; a file larger than MaxResultsBytes
// is refused with its size before it is read.
func ReadResults(path string) (*Results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxResultsBytes {
		return nil, fmt.Errorf("%s: %w: %d bytes (%s), limit %d bytes (%s)", path, ErrTooLarge,
			fi.Size(), fmtBytes(fi.Size()), MaxResultsBytes, fmtBytes(MaxResultsBytes))
	}
	r, err := DecodeResults(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// fmtBytes formats a byte count for people: 64 MiB, 300.5 MiB, 512 B.
func fmtBytes(n int64) string {
	const kib, mib = 1 << 10, 1 << 20
	switch {
	case n >= mib:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/mib), ".0") + " MiB"
	case n >= kib:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/kib), ".0") + " KiB"
	}
	return fmt.Sprintf("%d B", n)
}
