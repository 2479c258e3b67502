package simulator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// ErrClassHandshake is the error class of a handshake answered, but not as the
// provider expects (profiles.Handshaker.HandshakeAnswer): the provider does not
// verify the endpoint.
const ErrClassHandshake = "handshake_answer"

// Handshake faults as the history records them: the real handshake, and a
// deliberately bad variant after the colon.
const (
	FaultHandshake    = "handshake"
	FaultHandshakeBad = "handshake:"
)

// Handshake is one endpoint verification a provider makes before (and, where
// it re-validates, while) it delivers events.
type Handshake struct {
	// Key names the endpoint in the record: its source and account; the event
	// ID stays empty (a handshake is no event).
	Key profiles.Key
	// Challenge is the fresh token the receiver must answer with; VerifyToken
	// the endpoint's verify token, where the provider has one.
	Challenge   string
	VerifyToken string
	// Bad names a variant from HandshakeFacts.Refuse ("" for the real one).
	Bad string
	// Timeout bounds the wait for the answer: longer than the provider's
	// deadline, so that a late answer is measured rather than cut (default:
	// the deadline plus DefaultTimeout, or DefaultTimeout).
	Timeout time.Duration
	// Step labels the record.
	Step int
}

// Handshake sends one handshake of the runner's profile, which must implement
// profiles.Handshaker, and records it: the real one is acknowledged when the
// answer is what the provider expects, failed with ErrClassHandshake when it
// is not; a bad variant is acknowledged when the receiver answered it 2xx.
// The error is for bad input only.
func (r *Runner) Handshake(ctx context.Context, hs Handshake) (history.Attempt, error) {
	p, ok := r.target.Profile.(profiles.Handshaker)
	if !ok {
		return history.Attempt{}, fmt.Errorf("handshake: profile %s makes no handshake (it is no profiles.Handshaker)", r.target.Profile.ID())
	}
	facts := p.HandshakeFacts()
	if hs.Bad != "" && !slices.Contains(facts.Refuse, hs.Bad) {
		return history.Attempt{}, fmt.Errorf("handshake.bad: %q is not one of the variants profile %s refuses (%s)", hs.Bad, r.target.Profile.ID(), strings.Join(facts.Refuse, ", "))
	}
	if hs.Challenge == "" {
		return history.Attempt{}, errors.New("handshake.challenge must not be empty")
	}
	in := profiles.HandshakeInput{Challenge: hs.Challenge, VerifyToken: hs.VerifyToken, Secrets: r.target.Secrets, URL: r.target.URL, At: time.Now()}
	req, err := p.HandshakeRequest(in, hs.Bad)
	if err != nil {
		return history.Attempt{}, fmt.Errorf("handshake: profile %s: %w", r.target.Profile.ID(), err)
	}
	timeout := hs.Timeout
	if timeout <= 0 {
		timeout = facts.Deadline + DefaultTimeout
	}
	u := *r.u
	if len(req.Query) > 0 {
		q := u.Query()
		for k, vs := range req.Query {
			for _, v := range vs {
				q.Add(k, v)
			}
		}
		u.RawQuery = q.Encode()
	}
	method := req.Method
	if method == "" {
		method = http.MethodPost
	}
	fault := FaultHandshake
	if hs.Bad != "" {
		fault = FaultHandshakeBad + hs.Bad
	}
	rec := history.Attempt{Key: hs.Key, Step: hs.Step, Attempt: 1, SignedAt: in.At.UTC(), Faults: []string{fault}, BodyBytes: len(req.Body)}
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(hctx, method, u.String(), bytes.NewReader(req.Body))
	if err != nil {
		return history.Attempt{}, fmt.Errorf("handshake: %w", err)
	}
	for k, vs := range req.Header {
		hreq.Header[k] = append([]string(nil), vs...)
	}
	if hreq.Header.Get("User-Agent") == "" {
		hreq.Header.Set("User-Agent", userAgent[0])
	}
	rec.WallStart = time.Now().UTC()
	rec.StartNS = r.since()
	resp, err := r.handshakeClient().Do(hreq)
	var body []byte
	var tooBig bool
	if err == nil {
		body, tooBig, err = readBounded(resp.Body, r.opts.ResponseReadLimit)
		resp.Body.Close()
	}
	rec.EndNS = r.since()
	rec.BytesSent = int64(len(req.Body))
	if err != nil {
		rec.ErrorClass, rec.Error = classify(err), err.Error()
		rec.Outcome, rec.Verdict = history.OutcomeUnknown, profiles.Retry.String()
		if resp != nil {
			rec.Status = resp.StatusCode
		}
		return rec, nil
	}
	rec.Status = resp.StatusCode
	if len(body) > 0 {
		rec.ResponseExcerpt = r.excerpt(body[:min(len(body), ExcerptLimit)])
	}
	rec.Outcome, rec.Verdict = history.OutcomeFailed, profiles.Retry.String()
	switch {
	case hs.Bad != "":
		// Accepted is what a bad variant must not be.
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			rec.Outcome, rec.Verdict = history.OutcomeAcknowledged, profiles.Acknowledged.String()
		}
	case tooBig:
		rec.ErrorClass, rec.Error = ErrClassHandshake, "the answer exceeds the read limit"
	default:
		if aerr := p.HandshakeAnswer(in, resp.StatusCode, resp.Header, body); aerr != nil {
			rec.ErrorClass, rec.Error = ErrClassHandshake, aerr.Error()
		} else {
			rec.Outcome, rec.Verdict = history.OutcomeAcknowledged, profiles.Acknowledged.String()
		}
	}
	return rec, nil
}

// handshakeClient is the HTTP client handshakes go through: they are rare,
// so a plain net/http client does, without the delivery path's pooled
// connections, and it follows no redirect (the answer must come from the URL).
func (r *Runner) handshakeClient() *http.Client {
	r.hsOnce.Do(func() {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = r.target.TLSConfig
		tr.DisableKeepAlives = true
		r.hsClient = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	})
	return r.hsClient
}
