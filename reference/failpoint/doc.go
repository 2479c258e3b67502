// Package failpoint lets a test harness make the reference receiver crash, or fail
// as if the database had failed, at a named point for a named event.
//
// The harness arms a point over HTTP (the language-neutral protocol in
// docs/failpoints.md, served by Registry.Handler under /_hookcert/failpoints), so any
// receiver in any language can implement the same protocol. The receiver calls
// Registry.Hit at each point; an armed point fires once and is disarmed.
//
// The surface is for testing only: a receiver exposes it only when started with
// --enable-failpoints. A nil *Registry is valid and inert (Hit returns nil, Handler
// answers 404), so a receiver started without the flag pays one nil check per point.
package failpoint
