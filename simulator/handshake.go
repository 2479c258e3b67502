package simulator

import (
	"bytes"
	"context"
	"encoding/json"
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
	if hs.Challenge == "" {
		return history.Attempt{}, errors.New("handshake.challenge must not be empty")
	}
	in := profiles.HandshakeInput{Challenge: hs.Challenge, VerifyToken: hs.VerifyToken, Secrets: r.target.Secrets, URL: r.target.URL, At: time.Now()}
	req, err := r.handshakeRequest(p, facts, in, hs.Bad)
	if err != nil {
		return history.Attempt{}, err
	}
	// A handshake that carries an event ID (Twitch's message ID) is recorded
	// under it: a receiver that stores the handshake stores it there.
	hs.Key.EventID = r.carriedEventID(req)
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

// handshakeRequest builds the real handshake (bad ""), a variant the
// contract says to refuse, or — for a handshake signed like an event whose
// contract leaves it out of its refuse list — the bad-signature variant all
// the same: the real one made with another key.
func (r *Runner) handshakeRequest(p profiles.Handshaker, facts profiles.HandshakeFacts, in profiles.HandshakeInput, bad string) (profiles.HandshakeHTTP, error) {
	id := r.target.Profile.ID()
	switch {
	case bad == "" || slices.Contains(facts.Refuse, bad):
		req, err := p.HandshakeRequest(in, bad)
		if err != nil {
			return req, fmt.Errorf("handshake: profile %s: %w", id, err)
		}
		return req, nil
	case bad == profiles.BadSignature:
		signed, err := r.HandshakeSigned()
		if err != nil {
			return profiles.HandshakeHTTP{}, err
		}
		if !signed {
			return profiles.HandshakeHTTP{}, fmt.Errorf("handshake.bad: profile %s's handshake is not signed: there is no bad signature to send", id)
		}
		wrong := in
		wrong.Secrets = wrongSecretsFor(r.target.Profile, in.Secrets)
		req, err := p.HandshakeRequest(wrong, "")
		if err != nil {
			return req, fmt.Errorf("handshake: profile %s: %w", id, err)
		}
		return req, nil
	}
	valid := slices.Clone(facts.Refuse)
	if !slices.Contains(valid, profiles.BadSignature) {
		valid = append(valid, profiles.BadSignature+" (where the handshake is signed)")
	}
	return profiles.HandshakeHTTP{}, fmt.Errorf("handshake.bad: %q is not one of the variants profile %s refuses (%s)", bad, id, strings.Join(valid, ", "))
}

// HandshakeSigned reports whether the runner's profile signs its handshake
// with the endpoint's secret: the same handshake made with another key
// differs from it.
func (r *Runner) HandshakeSigned() (bool, error) {
	p, ok := r.target.Profile.(profiles.Handshaker)
	if !ok {
		return false, fmt.Errorf("handshake: profile %s makes no handshake (it is no profiles.Handshaker)", r.target.Profile.ID())
	}
	in := profiles.HandshakeInput{Challenge: "hookcert-probe", VerifyToken: "hookcert-probe-token", Secrets: r.target.Secrets, URL: r.target.URL, At: time.Unix(1700000000, 0)}
	real, err := p.HandshakeRequest(in, "")
	if err != nil {
		return false, fmt.Errorf("handshake: profile %s: %w", r.target.Profile.ID(), err)
	}
	in.Secrets = wrongSecretsFor(r.target.Profile, in.Secrets)
	other, err := p.HandshakeRequest(in, "")
	if err != nil {
		return false, fmt.Errorf("handshake: profile %s: %w", r.target.Profile.ID(), err)
	}
	same := bytes.Equal(real.Body, other.Body) && real.Query.Encode() == other.Query.Encode() && len(real.Header) == len(other.Header)
	for k, v := range real.Header {
		same = same && strings.Join(v, "\x00") == strings.Join(other.Header[k], "\x00")
	}
	return !same, nil
}

// carriedEventID is the event ID a handshake request carries where the
// profile puts event IDs, "" when it carries none.
func (r *Runner) carriedEventID(req profiles.HandshakeHTTP) string {
	switch {
	case r.facts.EventIDHeader != "":
		return req.Header.Get(r.facts.EventIDHeader)
	case r.facts.EventIDJSONPath != "" && len(req.Body) > 0:
		segs, err := parsePath(r.facts.EventIDJSONPath)
		if err != nil {
			return ""
		}
		start, end, err := jsonValueSpan(req.Body, segs)
		if err != nil {
			return ""
		}
		var id string
		if json.Unmarshal(req.Body[start:end], &id) != nil {
			return ""
		}
		return id
	}
	return ""
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
