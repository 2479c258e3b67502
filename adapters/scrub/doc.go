// Package scrub removes secrets from text before it is printed, logged or written:
// the run's known secrets (exact strings and the forms they take once encoded),
// passwords in URLs (by url.URL.Redacted) and in keyword/value connection strings,
// and well-known secret formats (webhook signing secrets, provider API keys) even
// when nobody listed them. Every output path of hookcert that can carry a
// receiver's or a database's text goes through one Scrubber.
package scrub
