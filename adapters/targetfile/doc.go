// Package target loads and validates the target file: the YAML description of a
// webhook receiver under test (its endpoints and secrets, how the harness starts and
// stops it, how it observes the receiver's PostgreSQL state, which fault hooks it
// offers and which capabilities it declares).
//
// Loading is strict: unknown fields are errors with their line number, and validation
// reports every problem at once (errors.Join of *FieldError), each naming the field
// path and the rule it breaks. Secrets are held in the Secret type, which redacts
// itself wherever it is printed, marshalled or logged. The file format is documented
// in docs/target.md.
package targetfile
