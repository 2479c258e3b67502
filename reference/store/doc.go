// Package store is the PostgreSQL side of the hookcert reference receiver: the
// embedded schema migrations and the statements that record event keys and apply the
// conformance domain (docs/conformance-domain.md) inside a caller's transaction.
//
// The package never opens or commits transactions on its own for business work: the
// caller (package reference) decides the transaction boundaries, because where the
// commit sits relative to the key insert and the response is exactly what the
// guarantees are about, and what the named defects get wrong.
package store
