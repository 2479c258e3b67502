package profiles

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// idShape is a parsed ids.event / ids.delivery template: literal text and
// random runs, drawn left to right from a RandSource.
type idShape struct {
	parts []idPart
}

type idPart struct {
	lit      string
	alphabet string // "" with n 0: uuid
	n        int
	uuid     bool
}

var idAlphabets = map[string]string{
	"base62":  base62,
	"base36":  base36,
	"hex":     "0123456789abcdef",
	"upper36": base62[:36],
}

var idAction = regexp.MustCompile(`\{\{\s*([a-z0-9]+)\s*([0-9]*)\s*\}\}`)

// parseIDShape parses "evt_{{base62 24}}" or "{{uuid}}"; the error names
// the rule that failed.
func parseIDShape(s string) (*idShape, error) {
	if s == "" {
		return nil, errors.New("must not be empty")
	}
	sh := &idShape{}
	rest := s
	for rest != "" {
		loc := idAction.FindStringSubmatchIndex(rest)
		if loc == nil {
			if strings.Contains(rest, "{{") || strings.Contains(rest, "}}") {
				return nil, fmt.Errorf("%q is not {{base62 N}}, {{base36 N}}, {{hex N}}, {{upper36 N}} or {{uuid}}", rest)
			}
			sh.parts = append(sh.parts, idPart{lit: rest})
			break
		}
		if lit := rest[:loc[0]]; lit != "" {
			if strings.Contains(lit, "{{") || strings.Contains(lit, "}}") {
				return nil, fmt.Errorf("%q is not {{base62 N}}, {{base36 N}}, {{hex N}}, {{upper36 N}} or {{uuid}}", lit)
			}
			sh.parts = append(sh.parts, idPart{lit: lit})
		}
		fn, num := rest[loc[2]:loc[3]], rest[loc[4]:loc[5]]
		switch {
		case fn == "uuid" && num == "":
			sh.parts = append(sh.parts, idPart{uuid: true})
		case idAlphabets[fn] != "":
			n, err := strconv.Atoi(num)
			if err != nil || n < 1 || n > 128 {
				return nil, fmt.Errorf("{{%s %s}}: the length must be 1 to 128", fn, num)
			}
			sh.parts = append(sh.parts, idPart{alphabet: idAlphabets[fn], n: n})
		default:
			return nil, fmt.Errorf("{{%s}} is not base62, base36, hex, upper36 or uuid", strings.TrimSpace(fn+" "+num))
		}
		rest = rest[loc[1]:]
	}
	random := false
	for _, p := range sh.parts {
		random = random || p.uuid || p.n > 0
	}
	if !random {
		return nil, errors.New("has no random part: every ID would be the same")
	}
	return sh, nil
}

// draw makes one ID from r in one allocation: IDs are drawn per event and per
// attempt. The draws are randString's and randUUID's, in the same order.
func (sh *idShape) draw(r RandSource) string {
	n := 0
	for _, p := range sh.parts {
		switch {
		case p.uuid:
			n += 36
		default:
			n += p.n + len(p.lit)
		}
	}
	var b strings.Builder
	b.Grow(n)
	for _, p := range sh.parts {
		switch {
		case p.uuid:
			var u [36]byte
			b.Write(appendRandUUID(u[:0], r))
		case p.n > 0:
			for range p.n {
				b.WriteByte(randChar(r, p.alphabet))
			}
		default:
			b.WriteString(p.lit)
		}
	}
	return b.String()
}

// generateSecret makes a secret of the given shape from r. base62 reads
// Bytes bytes at a time and keeps those below 248 (4·62), so every character
// is uniform: the rejection sampling Stripe's secrets were made with.
func generateSecret(shape ContractSecretShape, r io.Reader) (string, error) {
	n := shape.Bytes
	if n == 0 {
		n = 32
	}
	read := func(k int) ([]byte, error) {
		b := make([]byte, k)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("read random bytes: %w", err)
		}
		return b, nil
	}
	switch shape.Encoding {
	case "base62":
		var s strings.Builder
		s.WriteString(shape.Prefix)
		for s.Len() < len(shape.Prefix)+n {
			b, err := read(n)
			if err != nil {
				return "", err
			}
			for _, c := range b {
				if c < 248 && s.Len() < len(shape.Prefix)+n {
					s.WriteByte(base62[c%62])
				}
			}
		}
		return s.String(), nil
	case "base64":
		b, err := read(n)
		if err != nil {
			return "", err
		}
		return shape.Prefix + base64.StdEncoding.EncodeToString(b), nil
	default:
		b, err := read(n)
		if err != nil {
			return "", err
		}
		return shape.Prefix + hex.EncodeToString(b), nil
	}
}
