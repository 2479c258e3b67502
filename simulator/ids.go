package simulator

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// Every ID the simulator generates (event, object, delivery) comes from the
// seed, so one seed gives one run's IDs. They are stored in histories: the
// derivations here must not change between versions (hotpath_test.go pins
// them).

// seededRand returns a deterministic generator for (seed, stream).
func seededRand(seed int64, stream string) *rand.Rand {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d/%s", seed, stream)))
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(h[:8]), binary.LittleEndian.Uint64(h[8:16])))
}

// splitmix is a tiny deterministic RandSource for per-attempt IDs, which are
// made on the hot path (seededRand's SHA-256 and PCG cost more than the rest of
// an ID).
type splitmix uint64

func (s *splitmix) Uint64() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// idHasher is FNV-1a 128 (hash/fnv's New128a, same output) on the stack:
// delivery IDs are made per attempt on the hot path, and hash/fnv's interface
// plus boxing the parts into []any cost several allocations per ID.
type idHasher struct{ hi, lo uint64 }

// FNV-1a 128 parameters (the offset basis and prime of hash/fnv).
const (
	fnv128OffsetHi = 0x6c62272e07bb0142
	fnv128OffsetLo = 0x62b821756295c58d
	fnv128PrimeLo  = 0x13b
	fnv128Shift    = 24 // the prime is 2^88 + 0x13b
)

func newIDHasher(seed int64) idHasher {
	h := idHasher{hi: fnv128OffsetHi, lo: fnv128OffsetLo}
	var b [20]byte
	h.write(strconv.AppendInt(b[:0], seed, 10))
	return h
}

func (h *idHasher) byte(c byte) {
	h.lo ^= uint64(c)
	hi, lo := bits.Mul64(fnv128PrimeLo, h.lo)
	hi += h.lo<<fnv128Shift + fnv128PrimeLo*h.hi
	h.hi, h.lo = hi, lo
}

func (h *idHasher) write(b []byte) {
	for _, c := range b {
		h.byte(c)
	}
}

// str and int add one part: '/' then the part's text.
func (h *idHasher) str(s string) {
	h.byte('/')
	for i := 0; i < len(s); i++ {
		h.byte(s[i])
	}
}

func (h *idHasher) int(v int64) {
	h.byte('/')
	var b [20]byte
	h.write(strconv.AppendInt(b[:0], v, 10))
}

func (h *idHasher) sum() [16]byte {
	var out [16]byte
	binary.BigEndian.PutUint64(out[:8], h.hi)
	binary.BigEndian.PutUint64(out[8:], h.lo)
	return out
}

// idHash hashes seed and parts (strings and integers) with FNV-1a 128.
func idHash(seed int64, parts ...any) [16]byte {
	h := newIDHasher(seed)
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			h.str(v)
		case int:
			h.int(int64(v))
		case int64:
			h.int(v)
		default:
			h.str(fmt.Sprint(v))
		}
	}
	return h.sum()
}

// derivedID is a deterministic 96-bit hex ID for (seed, parts).
func derivedID(seed int64, parts ...any) string {
	h := idHash(seed, parts...)
	return hex.EncodeToString(h[:12])
}

// NewEventID returns the seeded event ID for event index i, in the provider's
// format where profiles.NewEventID knows it (evt_… for Stripe, msg_… for
// Standard Webhooks, a GUID for GitHub, …), else evt_ + 24 hex digits.
func NewEventID(seed int64, profileID string, i int) string {
	h := idHash(seed, "event", i)
	sm := splitmix(binary.LittleEndian.Uint64(h[:8]))
	if id, err := profiles.NewEventID(profileID, &sm); err == nil {
		return id
	}
	return "evt_" + derivedID(seed, "event", i)
}

// NewDeliveryID returns the seeded per-attempt delivery ID for the given parts
// (event, step, copy, attempt), in the provider's format where its profile is
// a profiles.DeliveryIDMaker, else dlv_ + 24 hex digits.
func NewDeliveryID(seed int64, profileID string, parts ...any) string {
	return deliveryIDFrom(idHash(seed, append([]any{"delivery"}, parts...)...), deliveryIDMakerOf(lookupProfile(profileID)))
}

// attemptDeliveryID is NewDeliveryID(seed, profile, source, account, eventID,
// step, copy, attempt) without boxing the parts or looking the profile up:
// the engine makes one per attempt. ids is the profile's DeliveryIDMaker (nil:
// the generic dlv_ form).
func attemptDeliveryID(seed int64, ids profiles.DeliveryIDMaker, source, account, eventID string, step, cp, attempt int) string {
	h := newIDHasher(seed)
	h.str("delivery")
	h.str(source)
	h.str(account)
	h.str(eventID)
	h.int(int64(step))
	h.int(int64(cp))
	h.int(int64(attempt))
	return deliveryIDFrom(h.sum(), ids)
}

func deliveryIDFrom(h [16]byte, ids profiles.DeliveryIDMaker) string {
	if ids != nil {
		sm := splitmix(binary.LittleEndian.Uint64(h[:8]))
		return ids.MakeDeliveryID(&sm)
	}
	var b [4 + 24]byte
	copy(b[:], "dlv_")
	hex.Encode(b[4:], h[:12])
	return string(b[:])
}

// newObjectID is the seeded object ID of event index i: in the provider's
// shape where the profile is a profiles.ObjectIDMaker (objects; nil: none),
// else obj_ + 16 hex digits.
func newObjectID(objects profiles.ObjectIDMaker, seed int64, i int) string {
	if objects != nil {
		return objects.MakeObjectID(seededRand(seed, fmt.Sprintf("object/%d", i)))
	}
	return "obj_" + derivedID(seed, "object", i)[:16]
}

// deliveryIDMakerOf is p's DeliveryIDMaker, nil when it has none (or p is nil).
func deliveryIDMakerOf(p profiles.Profile) profiles.DeliveryIDMaker {
	m, _ := p.(profiles.DeliveryIDMaker)
	return m
}

// objectIDMakerOf is p's ObjectIDMaker, nil when it has none (or p is nil).
func objectIDMakerOf(p profiles.Profile) profiles.ObjectIDMaker {
	m, _ := p.(profiles.ObjectIDMaker)
	return m
}

// lookupProfile is the registered profile with this ID, nil for another (a
// test's own profile): the exported helpers that take a profile ID shape IDs
// as the runner does with the registered profile.
func lookupProfile(id string) profiles.Profile {
	p, err := profiles.Lookup(id)
	if err != nil {
		return nil
	}
	return p
}
