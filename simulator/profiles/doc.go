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
// Secrets never appear in errors produced here.
package profiles
