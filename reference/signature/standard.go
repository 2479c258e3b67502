package signature

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// standardSecretPrefix is stripped before base64-decoding the key; a secret without it
// is accepted too, as the Standard Webhooks libraries do
// (Go: base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))).
const standardSecretPrefix = "whsec_"

// standardKey decodes a Standard Webhooks / Svix secret into the HMAC key.
func standardKey(secret string) ([]byte, *Error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, standardSecretPrefix))
	if err != nil {
		return nil, fail(ReasonInvalidSecret, "secret: must be standard base64 (padded) after the optional whsec_ prefix")
	}
	if len(key) == 0 {
		return nil, fail(ReasonInvalidSecret, "secret: must not be empty")
	}
	return key, nil
}

func checkStandardSecret(secret string) *Error {
	_, err := standardKey(secret)
	return err
}

// standardVerifier implements the Standard Webhooks v1 symmetric scheme
// (https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md)
// under the given header names (webhook-* for Standard Webhooks, svix-* for Svix:
// https://docs.svix.com/receiving/verifying-payloads/how-manual): signed content
// "{id}.{timestamp}.{raw_body}", HMAC-SHA256, standard base64; the signature header is
// a space-delimited list of "<version>,<signature>" where non-v1 entries are skipped and
// any v1 may match; the timestamp must be within the tolerance in both directions.
func standardVerifier(idHeader, tsHeader, sigHeader string) verifyFunc {
	return func(h http.Header, body []byte, secret string, now time.Time, opt Options) *Error {
		sigValue, err := single(h, sigHeader)
		if err != nil {
			return err
		}
		id, err := single(h, idHeader)
		if err != nil {
			return err
		}
		tsValue, err := single(h, tsHeader)
		if err != nil {
			return err
		}
		ts, perr := strconv.ParseInt(tsValue, 10, 64)
		if perr != nil {
			return fail(ReasonMalformedSignature, "header %s: must be integer unix seconds", tsHeader)
		}
		key, err := standardKey(secret)
		if err != nil {
			return err
		}
		// The libraries sign fmt.Sprintf("%s.%d.%s", id, timestamp.Unix(), payload).
		mac := hmacSHA256(key, []byte(id), []byte("."), []byte(strconv.FormatInt(ts, 10)), []byte("."), body)
		expected := []byte(base64.StdEncoding.EncodeToString(mac))
		v1, matched := 0, false
		for _, entry := range strings.Fields(sigValue) {
			version, sig, ok := strings.Cut(entry, ",")
			if !ok || version != "v1" && !opt.AnyScheme {
				continue // v1a (asymmetric) and future versions are not checked with a symmetric key
			}
			v1++
			// Compared as encoded text, like the reference libraries; no early exit.
			if sigEqual(expected, []byte(sig), opt) {
				matched = true
			}
		}
		if v1 == 0 {
			return fail(ReasonMalformedSignature, "header %s: no v1,<base64> entry", sigHeader)
		}
		if !matched {
			return fail(ReasonBadSignature, "header %s: none of %d v1 signatures matches the body", sigHeader, v1)
		}
		return checkAge(tsHeader, time.Unix(ts, 0), now, opt, true)
	}
}
