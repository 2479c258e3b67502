package profiles

import (
	"net/url"
	"testing"
	"time"
)

// Every test vector for these providers in /work/shared/providers.yaml, matched
// exactly. "published" vectors are copied from the providers' docs or libraries;
// "derived" ones were computed with Python when the file was compiled.

const vecPayload = `{"id":"evt_test_webhook","object":"event"}`

func TestVectorStripeDerived(t *testing.T) {
	got := StripeSignatureHeader(time.Unix(1700000000, 0), []byte(vecPayload), "whsec_test_secret")
	want := "t=1700000000,v1=d95c6b7477fbd7e9f90b1b0ef5f9c7ac25abca5382460e0d988c2b2a5b71b990"
	if got != want {
		t.Fatalf("stripe header:\n got %s\nwant %s", got, want)
	}
}

func TestVectorGitHubPublished(t *testing.T) {
	got := GitHubSignature256("It's a Secret to Everybody", []byte("Hello, World!"))
	want := "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if got != want {
		t.Fatalf("X-Hub-Signature-256: got %s want %s", got, want)
	}
}

func TestVectorShopifyDerived(t *testing.T) {
	got := ShopifyHMAC("shpss_test_secret", []byte(vecPayload))
	want := "m72AsY8Tri/FnNAECj0zphiQiDio/g5yAPcgD53MjOw="
	if got != want {
		t.Fatalf("X-Shopify-Hmac-Sha256: got %s want %s", got, want)
	}
}

func TestVectorStandardWebhooksSymmetric(t *testing.T) {
	const want = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	for _, secret := range []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
		got, err := StandardWebhooksSignature(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("secret form %d chars: got %s want %s", len(secret), got, want)
		}
		// The library's invalid-signature fixture must not be what we produce.
		if got == "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=" {
			t.Fatal("produced the library's invalid-signature fixture")
		}
	}
}

func TestVectorStandardWebhooksAsymmetric(t *testing.T) {
	secret := "whsk_VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk="
	got, err := StandardWebhooksSignature(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	want := "v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag=="
	if got != want {
		t.Fatalf("v1a: got %s want %s", got, want)
	}
	pub, err := StandardWebhooksPublicKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	if pub != "whpk_ZlN4eg7dSSqi0moX9hQUk3orrOouK3QVQSlJa248c/g=" {
		t.Fatalf("public key: got %s", pub)
	}
}

// Svix uses the standard_webhooks vector (same algorithm and secret format);
// here it goes through the svix profile's headers.
func TestVectorSvixThroughProfile(t *testing.T) {
	p, _ := Lookup("svix")
	ev := Event{ID: "msg_p5jXN8AQM9LWM0D4loKWxJek", Type: "x", ObjectID: "o", Created: time.Unix(1, 0)}
	h, err := p.Headers(ev, []byte(`{"test": 2432232314}`), Attempt{N: 1, SignedAt: time.Unix(1614265330, 0)}, []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("svix-signature"); got != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("svix-signature: %s", got)
	}
	if h.Get("svix-timestamp") != "1614265330" || h.Get("svix-id") != ev.ID {
		t.Fatalf("svix headers: %v", h)
	}
}

func TestVectorsAdyenPublished(t *testing.T) {
	cases := []struct {
		name, key, content, want string
		it                       AdyenItem
	}{
		{
			name: "testNotificationRequestItemHmac", key: "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00",
			it:      AdyenItem{PSPReference: "7914073381342284", MerchantAccountCode: "TestMerchant", MerchantReference: "TestPayment-1407325143704", Amount: AdyenAmount{Value: 1130, Currency: "EUR"}, EventCode: "AUTHORISATION", Success: "true"},
			content: "7914073381342284::TestMerchant:TestPayment-1407325143704:1130:EUR:AUTHORISATION:true",
			want:    "Ny9gS2veKo5E4w8/OL6xz1/wvT/hYkAXy1xNc/QvO4I=",
		},
		{
			name: "testHmacSignatureForRefundWithZeroValue", key: "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056",
			it:      AdyenItem{PSPReference: "7914073381342284", MerchantAccountCode: "TestMerchant", MerchantReference: "TestPayment-1407325143704", Amount: AdyenAmount{Value: 0, Currency: "EUR"}, EventCode: "REFUND", Success: "true"},
			content: "7914073381342284::TestMerchant:TestPayment-1407325143704:0:EUR:REFUND:true",
			want:    "J7HhsgZo5KwqdB7LFZJV6rfQgp+RqC2kuYyw/3x3w+8=",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := AdyenSignedContent(c.it); got != c.content {
				t.Fatalf("signed content:\n got %s\nwant %s", got, c.content)
			}
			got, err := AdyenHMAC(c.key, c.it)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("hmacSignature: got %s want %s", got, c.want)
			}
		})
	}
}

func TestVectorSlackPublished(t *testing.T) {
	body := "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	if _, err := url.ParseQuery(body); err != nil { // guards against a mangled copy of the fixture
		t.Fatal(err)
	}
	got := SlackSignature("8f742231b10e8888abcd99yyyzzz85a5", time.Unix(1531420618, 0), []byte(body))
	if want := "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"; got != want {
		t.Fatalf("X-Slack-Signature: got %s want %s", got, want)
	}
}

func TestVectorPaddleDerived(t *testing.T) {
	got := PaddleSignatureHeader(time.Unix(1700000000, 0), []byte(vecPayload), "pdl_ntfset_test_secret")
	if want := "ts=1700000000;h1=26c20ffd8b8323d2f85b17e297e2d01f18ced5909d1ed885a3f38e12ea0f924e"; got != want {
		t.Fatalf("Paddle-Signature: got %s want %s", got, want)
	}
}

// The profiles' Headers must produce the same values as the primitives the
// vectors pin, i.e. the vectors cover what is actually sent.
func TestProfilesSignLikeVectors(t *testing.T) {
	body := []byte(vecPayload)
	at := Attempt{N: 1, SignedAt: time.Unix(1700000000, 0)}
	ev := Event{ID: "evt_test_webhook", Account: "acct", Type: "x.y", ObjectID: "o", Created: time.Unix(1, 0)}
	cases := []struct {
		profile, secret, header, want string
	}{
		{"stripe", "whsec_test_secret", "Stripe-Signature", "t=1700000000,v1=d95c6b7477fbd7e9f90b1b0ef5f9c7ac25abca5382460e0d988c2b2a5b71b990"},
		{"shopify", "shpss_test_secret", "X-Shopify-Hmac-Sha256", "m72AsY8Tri/FnNAECj0zphiQiDio/g5yAPcgD53MjOw="},
		{"paddle", "pdl_ntfset_test_secret", "Paddle-Signature", "ts=1700000000;h1=26c20ffd8b8323d2f85b17e297e2d01f18ced5909d1ed885a3f38e12ea0f924e"},
	}
	for _, c := range cases {
		p, err := Lookup(c.profile)
		if err != nil {
			t.Fatal(err)
		}
		h, err := p.Headers(ev, body, at, []string{c.secret})
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Get(c.header); got != c.want {
			t.Errorf("%s %s: got %s want %s", c.profile, c.header, got, c.want)
		}
	}
	gh, _ := Lookup("github")
	h, err := gh.Headers(Event{ID: "g", Type: "t"}, []byte("Hello, World!"), Attempt{N: 1}, []string{"It's a Secret to Everybody"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("X-Hub-Signature-256"); got != "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17" {
		t.Errorf("github X-Hub-Signature-256: %s", got)
	}
	sl, _ := Lookup("slack")
	h, err = sl.Headers(ev, []byte("token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"),
		Attempt{N: 1, SignedAt: time.Unix(1531420618, 0)}, []string{"8f742231b10e8888abcd99yyyzzz85a5"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("X-Slack-Signature"); got != "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503" || h.Get("X-Slack-Request-Timestamp") != "1531420618" {
		t.Errorf("slack headers: %v", h)
	}
}
