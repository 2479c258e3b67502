package profiles

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// The envelopes are written with append-based helpers instead of json.Marshal:
// a delivery renders one body, and reflection plus intermediate structs cost
// most of the simulator's per-delivery allocations. The output must stay
// byte-identical to encoding/json (differential_test.go checks it against the
// previous json.Marshal rendering).

// jsonSafe[b] is true for ASCII bytes encoding/json writes unchanged with its
// default HTML escaping: printable ASCII and DEL except '"', '\\', '<', '>'
// and '&' (encoding/json htmlSafeSet).
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = true
	}
	for _, b := range `"\<>&` {
		t[b] = false
	}
	return t
}()

const lowerHex = "0123456789abcdef"

// appendJSONString appends s as a JSON string exactly as json.Marshal does
// (encoding/json appendString with escapeHTML): short escapes for \" \\ \b \f
// \n \r \t, \u00XX for other control bytes and for < > &, \ufffd for each
// invalid UTF-8 byte, and \u2028 / \u2029 escaped.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', lowerHex[b>>4], lowerHex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', lowerHex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendJSONTime appends t.UTC() formatted with layout as a JSON string. Time
// layouts produce only digits, '-', ':', '.', 'T', 'Z' and '+', none of which
// encoding/json escapes.
func appendJSONTime(dst []byte, t time.Time, layout string) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, layout)
	return append(dst, '"')
}

// appendObject appends the conformance-domain object (docs/conformance-domain.md)
// in the field order of the former `object` struct: id, amount, currency,
// status, version.
func appendObject(dst []byte, ev *Event) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendJSONString(dst, ev.ObjectID)
	dst = append(dst, `,"amount":`...)
	dst = strconv.AppendInt(dst, ev.Amount, 10)
	dst = append(dst, `,"currency":`...)
	dst = appendJSONString(dst, ev.Currency)
	dst = append(dst, `,"status":`...)
	dst = appendJSONString(dst, ev.Status)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, ev.Version, 10)
	return append(dst, '}')
}

// objectSizeHint is appendObject's output size when no string needs escaping
// (two 20-digit integers at most).
func objectSizeHint(ev *Event) int {
	return len(`{"id":"","amount":,"currency":"","status":"","version":}`) + 40 +
		len(ev.ObjectID) + len(ev.Currency) + len(ev.Status)
}
