// Package reports turns the results of a certification run into the files that a CI
// pipeline and a person read: results.json (the versioned, machine-readable record),
// junit.xml (one testsuite per guarantee family), summary.md (fits a GitHub Actions
// step summary) and index.html (one self-contained page with a delivery timeline per
// scenario beside the rows the observer saw).
//
// The input is plain data (Results); the writers hold no state. Write renders all four
// files into a directory after scrubbing secrets from every string; the per-format
// writers (WriteJSON, WriteJUnit, WriteMarkdown, WriteHTML) render one format and scrub
// only the well-known secret patterns, so callers holding explicit secrets should pass
// the result of Redact to them.
package reports
