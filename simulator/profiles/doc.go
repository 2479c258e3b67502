// Package profiles holds real providers' delivery contracts: how each one shapes,
// signs and retries a webhook, and what it counts as an acknowledgement.
//
// Every fact carries the source it was read in (see ../shared/providers.yaml in the
// hookcert design material). Where a provider does not document a value the profile
// says so (a nil pointer or a zero value, documented as "undocumented; the user
// chooses") and the caller chooses. Where intervals are unpublished, a clearly
// labelled modelled schedule (RetrySchedule.Modelled) is offered as a default.
//
// Profiles: stripe, github, shopify, standard-webhooks, svix, slack, paddle, adyen
// (current acknowledgement rule: any 2xx) and adyen-legacy (2xx with the body
// "[accepted]"). Look them up with Lookup; render a delivery with Render, which also
// handles providers that sign inside the body (Adyen). EventKey gives the key a
// receiver derives, which differs from Event.ID only for Adyen (no event ID).
//
// # Contracts as data
//
// A provider's contract is data (Contract): contracts/*.yaml are embedded,
// and a target file may declare more. ParseContracts reads them strictly,
// Contract.Validate checks every rule (and signs the contract's vectors),
// NewContractProfile turns one into a Profile, with a Handshaker, an
// InputLister and the ID, secret and public-key makers the data calls for.
// The registry serves every embedded contract; the Go profiles above are
// the fast path of the seven that have one, held to their data file byte
// for byte. Templates, their functions and the schema are documented on
// Contract's fields.
//
// Secrets never appear in errors produced here.
package profiles
