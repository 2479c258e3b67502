package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// WriteJSON writes r as indented results.json content, with well-known secret
// patterns scrubbed.
func WriteJSON(w io.Writer, r *Results) error {
	if r == nil {
		return fmt.Errorf("write results.json: results are nil")
	}
	r = Redact(r, nil)
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

// DecodeResults reads results.json content from rd and validates it (see
// Results.Validate). Unknown fields are an error, so a typo or a newer schema is
// not silently dropped.
func DecodeResults(rd io.Reader) (*Results, error) {
	// Check the schema first: an error about a missing field is misleading when the
	// whole file is of another version.
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
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
// for invalid content, the field and the rule.
func ReadResults(path string) (*Results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	defer f.Close()
	r, err := DecodeResults(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
