package simulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// testProfile is a small Stripe-like profile for unit tests: t=…,v1=HMAC-SHA256
// over "t.body", event ID in a header and in $.id, 2xx acknowledged, 410 stop.
type testProfile struct {
	delays  []time.Duration
	timeout time.Duration
	resign  bool
	honour  bool
}

func (p testProfile) ID() string { return "testprof" }

func (p testProfile) Facts() profiles.Facts {
	to := p.timeout
	if to == 0 {
		to = 2 * time.Second
	}
	tol := 5 * time.Minute
	return profiles.Facts{
		Name: "test", ContentType: "application/json", EventIDHeader: "X-Test-Event-Id",
		DeliveryIDHeader: "X-Test-Delivery", Timeout: &to, Tolerance: &tol, ResignsOnRetry: p.resign,
		HonoursRetryAfter: p.honour,
		Retry:             profiles.RetrySchedule{Delays: p.delays},
	}
}

func (p testProfile) Body(ev profiles.Event) ([]byte, error) {
	return json.Marshal(map[string]any{
		"id": ev.ID, "type": ev.Type, "created": ev.Created.Unix(),
		"data": map[string]any{"object": map[string]any{
			"id": ev.ObjectID, "amount": ev.Amount, "version": ev.Version, "status": ev.Status,
		}},
	})
}

func testSign(secret string, t int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%d.", t)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func (p testProfile) Headers(ev profiles.Event, body []byte, at profiles.Attempt, secrets []string) (http.Header, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("no secret")
	}
	h := http.Header{}
	h.Set("X-Test-Event-Id", ev.ID)
	h.Set("X-Test-Delivery", at.DeliveryID)
	h.Set("X-Test-Signature", fmt.Sprintf("t=%d,v1=%s", at.SignedAt.Unix(), testSign(secrets[0], at.SignedAt.Unix(), body)))
	return h, nil
}

func (p testProfile) Verdict(status int, _ http.Header, _ []byte) profiles.AckVerdict {
	switch {
	case status >= 200 && status < 300:
		return profiles.Acknowledged
	case status == http.StatusGone:
		return profiles.Stop
	}
	return profiles.Retry
}

// verify checks a request the way a receiver of testProfile would; it returns
// the body, the signed time and a reason when invalid.
func verify(r *http.Request, secret string) ([]byte, time.Time, string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, time.Time{}, "read: " + err.Error()
	}
	sig := r.Header.Get("X-Test-Signature")
	if sig == "" {
		return body, time.Time{}, "missing signature"
	}
	var ts int64
	var v1 string
	for _, part := range strings.Split(sig, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts, _ = strconv.ParseInt(v, 10, 64)
		case "v1":
			v1 = v
		}
	}
	if !hmac.Equal([]byte(v1), []byte(testSign(secret, ts, body))) {
		return body, time.Unix(ts, 0), "bad signature"
	}
	return body, time.Unix(ts, 0), ""
}
