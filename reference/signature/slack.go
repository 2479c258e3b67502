package signature

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// verifySlack implements Slack's v0 scheme
// (https://docs.slack.dev/authentication/verifying-requests-from-slack):
// X-Slack-Signature "v0=" + lowercase hex HMAC-SHA256 over
// "v0:{X-Slack-Request-Timestamp}:{raw_body}", the signing secret used as UTF-8
// bytes; the timestamp within five minutes of now either way
// (python-slack-sdk: abs(now - timestamp) > 60 * 5). Hex is compared as text,
// as the SDKs do.
func verifySlack(h http.Header, body []byte, secret string, now time.Time, opt Options) *Error {
	const (
		sigName = "X-Slack-Signature"
		tsName  = "X-Slack-Request-Timestamp"
	)
	v, err := single(h, sigName)
	if err != nil {
		return err
	}
	tsValue, err := single(h, tsName)
	if err != nil {
		return err
	}
	ts, perr := strconv.ParseInt(tsValue, 10, 64)
	if perr != nil {
		return fail(ReasonMalformedSignature, "header %s: must be integer unix seconds", tsName)
	}
	sig, ok := strings.CutPrefix(v, "v0=")
	if !ok && opt.AnyScheme {
		// The any-scheme defect: whatever version precedes the '=' is not read.
		_, sig, ok = strings.Cut(v, "=")
	}
	if !ok || sig == "" {
		return fail(ReasonMalformedSignature, "header %s: must be v0=<hex>", sigName)
	}
	mac := hmacSHA256([]byte(secret), []byte("v0:"), []byte(strconv.FormatInt(ts, 10)), []byte(":"), body)
	if !sigEqual([]byte(hex.EncodeToString(mac)), []byte(sig), opt) {
		return fail(ReasonBadSignature, "header %s: does not match the body", sigName)
	}
	return checkAge(tsName, time.Unix(ts, 0), now, opt, true)
}
