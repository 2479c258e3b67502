// Package vocab is a receiver's event vocabulary: which of its own event types
// play the roles the guarantees need (an effect per event, a lifecycle object
// moved by transitions, ordered updates, an unhandled type), how their business
// objects render into a provider's envelope, and how the receiver acknowledges
// (Acceptance). The target-file loader builds one, library mode builds one in
// Go, and the scenarios read it; hookcert's own conformance domain is
// BuiltinVocabulary. It is a leaf: it imports nothing of the harness.
package vocab
