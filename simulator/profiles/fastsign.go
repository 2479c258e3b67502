package profiles

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // GitHub's legacy X-Hub-Signature is HMAC-SHA1; we emit it, not rely on it.
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"net/http"
	"sync"
	"sync/atomic"
)

// macKind names how a secret becomes an HMAC key.
type macKind uint8

const (
	// macRaw256: HMAC-SHA256 keyed with the secret's UTF-8 bytes (Stripe,
	// GitHub, Shopify, Slack, Paddle).
	macRaw256 macKind = iota
	// macRaw1: HMAC-SHA1 keyed with the secret's bytes (GitHub legacy).
	macRaw1
	// macStd256: HMAC-SHA256 keyed with base64-decode(secret without whsec_).
	macStd256
	// macAdyen256: HMAC-SHA256 keyed with hex-decode(secret).
	macAdyen256
	macKinds
)

// mac is one pooled HMAC state plus scratch space, so a signature costs no
// allocation once the pool is warm. A mac is used by one goroutine at a time.
type mac struct {
	h    hash.Hash
	pool *sync.Pool
	sum  [sha256.Size]byte
	buf  [64]byte // small signed prefixes ("{ts}.", "v0:{ts}:")
}

// write feeds p to the MAC.
func (m *mac) write(p []byte) { m.h.Write(p) }

// writeString feeds s to the MAC through the scratch buffer: a []byte(s)
// conversion handed to an interface method would allocate.
func (m *mac) writeString(s string) {
	for len(s) > 0 {
		n := copy(m.buf[:], s)
		m.h.Write(m.buf[:n])
		s = s[n:]
	}
}

// finish returns the MAC, valid until release (which resets the state).
func (m *mac) finish() []byte { return m.h.Sum(m.sum[:0]) }

// release returns m to its pool; m must not be used afterwards.
func (m *mac) release() {
	m.h.Reset()
	if m.pool != nil {
		m.pool.Put(m)
	}
}

// maxMACKeys bounds the cache of per-secret pools: a long run that signs with
// ever new secrets falls back to a fresh HMAC per signature instead of growing
// without limit.
const maxMACKeys = 256

// macCache maps secret → *sync.Pool of *mac, one map per kind. Lookups read an
// immutable map through an atomic pointer; inserts copy it under macMu.
var (
	macCache [macKinds]atomic.Pointer[map[string]*sync.Pool]
	macMu    sync.Mutex
)

// macKey derives the HMAC key from secret; ok is false when the secret does
// not have the kind's format (the callers report that with their own error).
func macKey(kind macKind, secret string) (key []byte, ok bool) {
	switch kind {
	case macStd256:
		k, err := StandardWebhooksKey(secret)
		return k, err == nil
	case macAdyen256:
		k, err := hex.DecodeString(secret)
		return k, err == nil && len(k) > 0
	}
	return []byte(secret), true
}

func newMAC(kind macKind, key []byte, pool *sync.Pool) *mac {
	h := sha256.New
	if kind == macRaw1 {
		h = sha1.New
	}
	return &mac{h: hmac.New(h, key), pool: pool}
}

// getMAC returns a reset HMAC state keyed for secret, or ok false when the
// secret does not have the kind's format. Call release when done.
func getMAC(kind macKind, secret string) (m *mac, ok bool) {
	if mp := macCache[kind].Load(); mp != nil {
		if p := (*mp)[secret]; p != nil {
			return p.Get().(*mac), true
		}
	}
	key, ok := macKey(kind, secret)
	if !ok {
		return nil, false
	}
	macMu.Lock()
	defer macMu.Unlock()
	old := macCache[kind].Load()
	if old != nil {
		if p := (*old)[secret]; p != nil {
			return p.Get().(*mac), true
		}
		if len(*old) >= maxMACKeys {
			return newMAC(kind, key, nil), true
		}
	}
	var next map[string]*sync.Pool
	if old != nil {
		next = make(map[string]*sync.Pool, len(*old)+1)
		for k, v := range *old {
			next[k] = v
		}
	} else {
		next = make(map[string]*sync.Pool, 1)
	}
	p := &sync.Pool{}
	p.New = func() any { return newMAC(kind, key, p) }
	next[secret] = p
	macCache[kind].Store(&next)
	return p.Get().(*mac), true
}

// header builds an http.Header of n values with one backing array: keys must
// be canonical (http.CanonicalHeaderKey), as Header.Set would make them. Each
// value slice has capacity 1, so an append by a caller copies rather than
// overwriting a neighbour.
type header struct {
	h    http.Header
	vals []string
}

func newHeader(n int) header {
	return header{h: make(http.Header, n), vals: make([]string, 0, n)}
}

func (hb *header) set(key, value string) {
	i := len(hb.vals)
	hb.vals = append(hb.vals, value)
	hb.h[key] = hb.vals[i : i+1 : i+1]
}

// Canonical header keys, computed once with the function Header.Set uses.
var (
	hContentType = http.CanonicalHeaderKey("Content-Type")
	hUserAgent   = http.CanonicalHeaderKey("User-Agent")
)
