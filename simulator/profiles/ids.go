package profiles

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"
	"sync"
)

// RandSource is what the ID generators need from a seeded random generator.
// Both math/rand/v2's *rand.Rand and math/rand's *rand.Rand satisfy it, so the
// caller's seeded generator makes the IDs deterministic.
type RandSource interface {
	Uint64() uint64
}

const (
	base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	base36 = "0123456789abcdefghijklmnopqrstuvwxyz"
)

// randString draws n characters uniformly from alphabet (len ≤ 64).
func randString(r RandSource, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = randChar(r, alphabet)
	}
	return string(b)
}

// randChar draws one character of alphabet (len ≤ 64) from one 64-bit draw.
func randChar(r RandSource, alphabet string) byte {
	// Multiply-shift maps a 64-bit draw onto the alphabet; the bias for an
	// alphabet of ≤ 64 symbols is below 2^-58, irrelevant for test IDs.
	hi, _ := bits.Mul64(r.Uint64(), uint64(len(alphabet)))
	return alphabet[hi]
}

// formatUUID formats 16 bytes as a version-4, RFC 4122 variant UUID string.
func formatUUID(b []byte) string {
	var out [36]byte
	return string(appendUUID(out[:0], b))
}

// appendUUID appends 16 bytes formatted as a version-4, RFC 4122 variant UUID.
func appendUUID(dst, b []byte) []byte {
	var u [16]byte
	copy(u[:], b)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], u[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], u[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], u[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], u[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], u[10:16])
	return append(dst, out[:]...)
}

func randUUID(r RandSource) string {
	var out [36]byte
	return string(appendRandUUID(out[:0], r))
}

// appendRandUUID appends a random UUID drawn from r (two 64-bit draws).
func appendRandUUID(dst []byte, r RandSource) []byte {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return appendUUID(dst, b[:])
}

// appendBase36 appends the first n characters of the 256-bit big-endian number
// sum written in lower-case base 36 (big.Int.Text(36): no leading zeros),
// left-padded with '0' to n characters when shorter. It divides by 36^12, the
// largest power of 36 below 2^64, so a hash takes five passes over four limbs
// instead of a big.Int allocation.
func appendBase36(dst []byte, sum *[32]byte, n int) []byte {
	const chunk = 4738381338321616896 // 36^12
	var limbs [4]uint64               // limbs[0] is the most significant
	for i := range limbs {
		limbs[i] = binary.BigEndian.Uint64(sum[8*i:])
	}
	var digits [60]byte // 256 bits need 50 base-36 digits; chunks round up to 60
	pos := len(digits)
	for {
		var rem uint64
		for i := range limbs {
			limbs[i], rem = bits.Div64(rem, limbs[i], chunk)
		}
		if limbs == [4]uint64{} {
			// The most significant chunk: no leading zeros.
			for rem > 0 {
				pos--
				digits[pos] = base36[rem%36]
				rem /= 36
			}
			break
		}
		for j := 0; j < 12; j++ {
			pos--
			digits[pos] = base36[rem%36]
			rem /= 36
		}
	}
	if pos == len(digits) {
		pos-- // zero is "0"
		digits[pos] = '0'
	}
	out := digits[pos:]
	for k := len(out); k < n; k++ {
		dst = append(dst, '0')
	}
	return append(dst, out[:min(n, len(out))]...)
}

// NewEventID returns a provider-side event ID in the provider's format, drawn
// from r (deterministic for a seeded r). The shape is the contract's
// ids.event (contracts/*.yaml), e.g.:
//
//	stripe            evt_ + 24 base-62 chars (evt_1NG8Du2eZvKYlo2CUI79vXWy, API reference)
//	standard-webhooks msg_ + 27 base-62 chars (msg_2KWPBgLlAfxdpx2AI54pPJ85f4W, spec example)
//	svix              msg_ + 27 base-62 chars (msg_ prefix, library tests)
//	github            a GUID (X-GitHub-Delivery: "A globally unique identifier (GUID)")
//	slack             Ev + 10 upper-case alphanumerics (Ev123ABC456, Events API docs)
//	shopify           a GUID; the format is undocumented, the shape is ours
//	paddle            evt_ + 26 lower-case base-36 chars; undocumented, the shape is ours
//
// Adyen has no event ID (see EventKey): use NewAdyenPSPReference for the object.
func NewEventID(profileID string, r RandSource) (string, error) {
	if r == nil {
		return "", fmt.Errorf("event ID for %q: random source: must not be nil", profileID)
	}
	p, err := Lookup(profileID)
	if err != nil {
		return "", fmt.Errorf("event ID: %w", err)
	}
	if _, ok := p.(eventIDDeriver); ok {
		return "", fmt.Errorf("event ID for %q: Adyen has no event ID; receivers key on pspReference:eventCode:success (use EventKey)", profileID)
	}
	if m, ok := p.(EventIDMaker); ok {
		return m.MakeEventID(r), nil
	}
	if c, ok := ContractOf(profileID); ok && c.IDs.Event != "" {
		sh, err := cachedIDShape(c.IDs.Event)
		if err != nil {
			return "", fmt.Errorf("event ID for %q: ids.event: %w", profileID, err)
		}
		return sh.draw(r), nil
	}
	return "", fmt.Errorf("event ID for %q: no generator", profileID)
}

// idShapes holds the parsed ids.event templates by their text: an event ID is
// drawn per event, and parsing a template (a regular expression) cost more
// than the draw (BenchmarkNewEventID). Only templates that parse are kept, one
// per contract, so the cache stays small.
var idShapes sync.Map // string → *idShape

func cachedIDShape(s string) (*idShape, error) {
	if v, ok := idShapes.Load(s); ok {
		return v.(*idShape), nil
	}
	sh, err := parseIDShape(s)
	if err != nil {
		return nil, err
	}
	idShapes.Store(s, sh)
	return sh, nil
}

// DeliveryIDMaker is a profile whose provider sends a per-attempt delivery ID
// of its own shape (Shopify's X-Shopify-Webhook-Id). The simulator shapes its
// seeded delivery IDs with it, so the profile, not the engine, knows which
// providers have one.
type DeliveryIDMaker interface {
	// MakeDeliveryID draws one delivery ID from r (deterministic for a seeded r).
	MakeDeliveryID(r RandSource) string
}

// ObjectIDMaker is a profile whose provider's business-object IDs have a shape
// receivers rely on (Adyen keys events on the pspReference). The simulator
// shapes the object IDs it generates with it.
type ObjectIDMaker interface {
	// MakeObjectID draws one object ID from r (deterministic for a seeded r).
	MakeObjectID(r RandSource) string
}

// NewDeliveryID returns a per-attempt delivery ID for providers that send one
// in a header of its own (profiles that are DeliveryIDMakers: shopify's
// X-Shopify-Webhook-Id, a GUID, shape ours). GitHub's delivery ID is the event
// ID; Paddle's notification_id is derived per destination; the others send
// none, which is an error here.
func NewDeliveryID(profileID string, r RandSource) (string, error) {
	if r == nil {
		return "", fmt.Errorf("delivery ID for %q: random source: must not be nil", profileID)
	}
	if profileID == "github" {
		return "", fmt.Errorf("delivery ID for github: X-GitHub-Delivery is the event ID (stable across redeliveries); use NewEventID")
	}
	p, err := Lookup(profileID)
	if err != nil {
		return "", fmt.Errorf("delivery ID: %w", err)
	}
	if m, ok := p.(DeliveryIDMaker); ok {
		return m.MakeDeliveryID(r), nil
	}
	return "", fmt.Errorf("delivery ID for %q: the provider sends no per-attempt delivery ID", profileID)
}

// NewAdyenPSPReference returns a 16-digit Adyen pspReference (the shape of
// "7914073381342284" in Adyen's library tests), drawn from r.
func NewAdyenPSPReference(r RandSource) string {
	b := make([]byte, 16)
	for i := range b {
		hi, _ := bits.Mul64(r.Uint64(), 10)
		b[i] = byte('0' + hi)
	}
	if b[0] == '0' {
		b[0] = '1'
	}
	return string(b)
}
