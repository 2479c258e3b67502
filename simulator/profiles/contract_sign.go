package profiles

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // providers sign with HMAC-SHA1 (Twilio, GitHub's legacy header); we emit it.
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
)

// Signature algorithms a contract may name.
const (
	algHMACSHA1   = "hmac-sha1"
	algHMACSHA256 = "hmac-sha256"
	algHMACSHA512 = "hmac-sha512"
	algEd25519    = "ed25519"
	algECDSAP256  = "ecdsa-p256"
	algToken      = "token"
)

var (
	algorithms   = []string{algHMACSHA1, algHMACSHA256, algHMACSHA512, algEd25519, algECDSAP256, algToken}
	keyEncodings = []string{"raw", "base64", "hex"}
	sigEncodings = []string{"hex", "base64", "base64url"}
	pubEncodings = []string{"hex", "base64", "base64-der"}
)

func isHMAC(alg string) bool       { return strings.HasPrefix(alg, "hmac-") }
func isAsymmetric(alg string) bool { return alg == algEd25519 || alg == algECDSAP256 }

// sigScheme is how one secret becomes one signature: the algorithm, how the
// secret becomes a key, and how the result is encoded.
type sigScheme struct {
	alg    string
	key    string // raw, base64, hex
	prefix string // stripped from the secret first, when present
	enc    string // hex, base64, base64url
	pubEnc string // asymmetric: how PublicKey writes the public key
}

func (s *sigScheme) keyEncoding() string {
	if s.key == "" {
		return "raw"
	}
	return s.key
}

// keyBytes derives the key from a secret. Its errors name the rule and never
// quote the secret (a decoder's error would quote its bytes).
func (s *sigScheme) keyBytes(secret string) ([]byte, error) {
	v := strings.TrimPrefix(secret, s.prefix)
	var key []byte
	switch s.keyEncoding() {
	case "raw":
		key = []byte(v)
	case "base64":
		k, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("secret: must be %sstandard base64 (signature.key base64)", prefixWords(s.prefix))
		}
		key = k
	case "hex":
		k, err := hex.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("secret: must be %shex (signature.key hex)", prefixWords(s.prefix))
		}
		key = k
	}
	if len(key) == 0 {
		return nil, errors.New("secret: decodes to an empty key")
	}
	switch s.alg {
	case algEd25519:
		if len(key) != ed25519.SeedSize {
			return nil, fmt.Errorf("secret: an ed25519 secret is a %d-byte seed, this one decodes to %d bytes", ed25519.SeedSize, len(key))
		}
	case algECDSAP256:
		if _, err := ecdsaKey(key); err != nil {
			return nil, err
		}
	}
	return key, nil
}

func prefixWords(p string) string {
	if p == "" {
		return ""
	}
	return p + " followed by "
}

func ecdsaKey(der []byte) (*ecdsa.PrivateKey, error) {
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, errors.New("secret: an ecdsa-p256 secret is a PKCS#8 DER private key; this one does not parse")
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok || ek.Curve != elliptic.P256() {
		return nil, errors.New("secret: an ecdsa-p256 secret must hold a P-256 key")
	}
	return ek, nil
}

// sign returns the encoded signature of content under secret (for token:
// the secret itself).
func (s *sigScheme) sign(secret string, content []byte) (string, error) {
	if s.alg == algToken {
		return secret, nil
	}
	key, err := s.keyBytes(secret)
	if err != nil {
		return "", err
	}
	return s.signKey(key, content)
}

// signKey signs with a derived key (a handshake's bad-signature variant
// signs with a wrong one).
func (s *sigScheme) signKey(key, content []byte) (string, error) {
	var sig []byte
	switch s.alg {
	case algToken:
		return string(key), nil
	case algEd25519:
		sig = ed25519.Sign(ed25519.NewKeyFromSeed(key), content)
	case algECDSAP256:
		k, err := ecdsaKey(key)
		if err != nil {
			return "", err
		}
		d := sha256.Sum256(content)
		// A nil random source signs deterministically (RFC 6979): the same
		// delivery gives the same bytes, as Profile requires.
		if sig, err = k.Sign(nil, d[:], crypto.SHA256); err != nil {
			return "", fmt.Errorf("ecdsa-p256: %w", err)
		}
	default:
		m := hmac.New(hmacHash(s.alg), key)
		m.Write(content)
		sig = m.Sum(nil)
	}
	return encodeSig(s.enc, sig), nil
}

func hmacHash(alg string) func() hash.Hash {
	switch alg {
	case algHMACSHA1:
		return sha1.New
	case algHMACSHA512:
		return sha512.New
	}
	return sha256.New
}

func encodeSig(enc string, sig []byte) string {
	switch enc {
	case "base64":
		return base64.StdEncoding.EncodeToString(sig)
	case "base64url":
		return base64.RawURLEncoding.EncodeToString(sig)
	}
	return hex.EncodeToString(sig)
}

func decodeSig(enc, s string) ([]byte, error) {
	switch enc {
	case "base64":
		return base64.StdEncoding.DecodeString(s)
	case "base64url":
		return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	}
	return hex.DecodeString(s)
}

// wrongKey is a key of the same shape as key that is not it: what a forged
// request is signed with.
func (s *sigScheme) wrongKey(key []byte) ([]byte, error) {
	switch s.alg {
	case algECDSAP256:
		// Another valid key: derive a scalar from the first one's bytes.
		return newECDSAKey(newHashReader("hookcert-wrong-key:", key))
	case algToken:
		return append([]byte("wrong-"), key...), nil
	}
	// Add one, not flip: applied twice it must give a third key (two wrong
	// signatures), where a flip gives the endpoint's own key back.
	w := append([]byte(nil), key...)
	w[0]++
	return w, nil
}

// publicKey writes the public key of an asymmetric secret.
func (s *sigScheme) publicKey(secret string) (string, error) {
	key, err := s.keyBytes(secret)
	if err != nil {
		return "", err
	}
	var raw []byte
	var pub crypto.PublicKey
	switch s.alg {
	case algEd25519:
		p := ed25519.NewKeyFromSeed(key).Public().(ed25519.PublicKey)
		raw, pub = p, p
	case algECDSAP256:
		k, err := ecdsaKey(key)
		if err != nil {
			return "", err
		}
		if raw, err = k.PublicKey.Bytes(); err != nil {
			return "", fmt.Errorf("ecdsa-p256: %w", err)
		}
		pub = &k.PublicKey
	default:
		return "", fmt.Errorf("public key: %s is not an asymmetric algorithm", s.alg)
	}
	switch s.pubEnc {
	case "base64":
		return base64.StdEncoding.EncodeToString(raw), nil
	case "base64-der":
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			return "", fmt.Errorf("public key: %w", err)
		}
		return base64.StdEncoding.EncodeToString(der), nil
	}
	return hex.EncodeToString(raw), nil
}

// verifyPublic checks an encoded signature of content against a public key
// written in pubEnc: what a receiver given the public key does.
func verifyPublic(alg, pubEnc, pub, enc, sig string, content []byte) error {
	var raw []byte
	var err error
	switch pubEnc {
	case "base64", "base64-der":
		raw, err = base64.StdEncoding.DecodeString(pub)
	default:
		raw, err = hex.DecodeString(pub)
	}
	if err != nil {
		return fmt.Errorf("public key: not %s", pubEnc)
	}
	s, err := decodeSig(enc, sig)
	if err != nil {
		return fmt.Errorf("signature: not %s", enc)
	}
	var key any
	if pubEnc == "base64-der" {
		if key, err = x509.ParsePKIXPublicKey(raw); err != nil {
			return errors.New("public key: not a DER SubjectPublicKeyInfo")
		}
	} else if alg == algEd25519 {
		key = ed25519.PublicKey(raw)
	} else if key, err = ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw); err != nil {
		return errors.New("public key: not an uncompressed P-256 point")
	}
	switch k := key.(type) {
	case ed25519.PublicKey:
		if alg != algEd25519 || len(k) != ed25519.PublicKeySize {
			return fmt.Errorf("public key: not an %s key", alg)
		}
		if !ed25519.Verify(k, content, s) {
			return errors.New("signature does not verify")
		}
	case *ecdsa.PublicKey:
		if alg != algECDSAP256 || k.Curve != elliptic.P256() {
			return fmt.Errorf("public key: not an %s key", alg)
		}
		d := sha256.Sum256(content)
		if !ecdsa.VerifyASN1(k, d[:], s) {
			return errors.New("signature does not verify")
		}
	default:
		return fmt.Errorf("public key: not an %s key", alg)
	}
	return nil
}

// newECDSAKey draws a P-256 private key from r (deterministic for a seeded
// r: crypto/ecdsa.GenerateKey ignores its reader since Go 1.26) and returns
// its PKCS#8 DER encoding.
func newECDSAKey(r io.Reader) ([]byte, error) {
	var d [32]byte
	for range 64 {
		if _, err := io.ReadFull(r, d[:]); err != nil {
			return nil, fmt.Errorf("read random bytes: %w", err)
		}
		// Out-of-range scalars (zero, ≥ the group order) are rejected.
		k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d[:])
		if err != nil {
			continue
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return nil, fmt.Errorf("ecdsa-p256: %w", err)
		}
		return der, nil
	}
	return nil, errors.New("ecdsa-p256: the random source gave no valid scalar in 64 draws")
}

// hashReader is a deterministic byte stream: SHA-256(label, seed, block
// counter) block after block.
type hashReader struct {
	seed []byte
	buf  []byte
	n    uint64
}

func newHashReader(label string, seed []byte) *hashReader {
	return &hashReader{seed: append([]byte(label), seed...)}
}

func (r *hashReader) Read(p []byte) (int, error) {
	for i := range p {
		if len(r.buf) == 0 {
			h := sha256.New()
			h.Write(r.seed)
			h.Write([]byte{byte(r.n), byte(r.n >> 8), byte(r.n >> 16), byte(r.n >> 24)})
			r.buf = h.Sum(nil)
			r.n++
		}
		p[i] = r.buf[0]
		r.buf = r.buf[1:]
	}
	return len(p), nil
}

// encodeKey writes key bytes in a secret's key encoding behind prefix.
func encodeKey(enc, prefix string, key []byte) string {
	switch enc {
	case "base64":
		return prefix + base64.StdEncoding.EncodeToString(key)
	case "hex":
		return prefix + hex.EncodeToString(key)
	}
	return prefix + string(key)
}
