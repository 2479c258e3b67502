package profiles

import (
	"net/http"
	"testing"
	"time"
)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestVerdicts(t *testing.T) {
	type row struct {
		status int
		header http.Header
		body   string
		want   AckVerdict
	}
	common := []row{
		{200, nil, "", Acknowledged},
		{202, nil, "", Acknowledged},
		{204, nil, "", Acknowledged},
		{299, nil, "", Acknowledged},
		{199, nil, "", Retry},
		{301, nil, "", Retry}, // redirects are failures (Slack's are followed by the engine first)
		{302, nil, "", Retry},
		{400, nil, "", Retry},
		{404, nil, "", Retry},
		{429, nil, "", Retry},
		{500, nil, "", Retry},
		{503, nil, "", Retry},
	}
	cases := map[string][]row{
		"stripe":  append(common, row{410, nil, "", Retry}),
		"github":  append(common, row{410, nil, "", Retry}),
		"shopify": append(common, row{410, nil, "", Retry}),
		"standard-webhooks": append(common,
			row{410, nil, "", Stop}, // "Sender should disable the webhook endpoint, and stop sending it messages."
			row{500, hdr("webhook-delivery", "abort-message"), "", Retry}, // Svix-only header
		),
		"svix": append(common,
			row{410, nil, "", Retry},
			row{500, hdr("webhook-delivery", "abort-message"), "", Stop},
			row{400, hdr("Webhook-Delivery", "abort-message"), "", Stop},
			row{200, hdr("webhook-delivery", "abort-message"), "", Acknowledged},
			row{500, hdr("webhook-delivery", "other"), "", Retry},
		),
		"slack": append(common,
			row{500, hdr("x-slack-no-retry", "1"), "", Stop},
			row{404, hdr("X-Slack-No-Retry", "1"), "", Stop},
			row{500, hdr("x-slack-no-retry", "0"), "", Retry},
			row{200, hdr("x-slack-no-retry", "1"), "", Acknowledged},
			row{410, nil, "", Retry},
		),
		"paddle": {
			{200, nil, "", Acknowledged},
			{202, nil, "", Retry}, // only "HTTP 200" is documented
			{204, nil, "", Retry},
			{301, nil, "", Retry},
			{500, nil, "", Retry},
		},
		"adyen": append(common,
			row{200, nil, "[accepted]", Acknowledged},
			row{200, nil, "ok", Acknowledged},
			row{500, nil, "[accepted]", Retry},
		),
		"adyen-legacy": {
			{200, nil, "[accepted]", Acknowledged},
			{202, nil, "[accepted]\n", Acknowledged},
			{200, nil, "", Retry},
			{200, nil, "accepted", Retry},
			{204, nil, "", Retry},
			{500, nil, "[accepted]", Retry},
			{302, nil, "[accepted]", Retry},
		},
	}
	if len(cases) != len(goIDs()) {
		t.Fatalf("verdict table covers %d profiles, registry has %d", len(cases), len(goIDs()))
	}
	for id, rows := range cases {
		p, err := Lookup(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			h := r.header
			if h == nil {
				h = http.Header{}
			}
			if got := p.Verdict(r.status, h, []byte(r.body)); got != r.want {
				t.Errorf("%s: Verdict(%d, %v, %q) = %s, want %s", id, r.status, r.header, r.body, got, r.want)
			}
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"120", 120 * time.Second, true},
		{" 5 ", 5 * time.Second, true},
		{"0", 0, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
	}
	for _, c := range cases {
		h := http.Header{}
		if c.v != "" {
			h.Set("Retry-After", c.v)
		}
		got, ok := RetryAfter(h, now)
		if got != c.want || ok != c.ok {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", c.v, got, ok, c.want, c.ok)
		}
	}
}
