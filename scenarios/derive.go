package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// The derived checks (ACK-8, ACK-9, DEDUP-8) take what they send from the
// endpoint's profile as data: its handshake (profiles.Handshaker) and the
// inputs its signature and event identity depend on (profiles.InputLister).
// Nothing here branches on a provider's name, so a profile a target file
// declares gets the same checks as a built-in one.

// handshaker is ep's profile's handshake, when it makes one.
func (ep Endpoint) handshaker() (profiles.Handshaker, bool) {
	h, ok := ep.Profile.(profiles.Handshaker)
	return h, ok
}

// inputs are the inputs ep's profile lists (nil when it lists none).
func (ep Endpoint) inputs() []profiles.Input {
	if l, ok := ep.Profile.(profiles.InputLister); ok {
		return l.Inputs()
	}
	return nil
}

// signedInputs are the inputs of ep's profile its signature covers.
func (ep Endpoint) signedInputs() []profiles.Input {
	var out []profiles.Input
	for _, in := range ep.inputs() {
		if in.Signed {
			out = append(out, in)
		}
	}
	return out
}

// identityID is the event ID input of ep's profile, when it lists one among
// its identity inputs and the harness chooses the ID (a profile whose
// receivers derive the ID, Adyen, has none to vary).
func (ep Endpoint) identityID() (profiles.Input, bool) {
	if ep.Profile.Facts().EventIDRule != "" {
		return profiles.Input{}, false
	}
	for _, in := range ep.inputs() {
		if in.Identity && in.Name == "id" {
			return in, true
		}
	}
	return profiles.Input{}, false
}

// contracted is a profile built from a contract (or described by one).
type contracted interface {
	Contract() profiles.Contract
}

// refusesFuture reports whether ep's profile's contract says receivers refuse
// a timestamp more than its tolerance ahead of now (timestamp.future), and
// whether it says at all: a contract that leaves it out says nothing, and
// nothing is held against the receiver.
func (ep Endpoint) refusesFuture() (refuses, known bool) {
	var ct profiles.Contract
	if c, ok := ep.Profile.(contracted); ok {
		ct = c.Contract()
	} else if c, ok := profiles.ContractOf(ep.Profile.ID()); ok {
		// A built-in profile described by an embedded contract.
		ct = c
	} else {
		return false, false
	}
	ts := ct.Timestamp
	if ts == nil || ts.Future == nil {
		return false, false
	}
	return *ts.Future, true
}

// profileNames names the profiles of the target's endpoints, for a reason
// that says which profiles lack what a guarantee needs.
func (e *Env) profileNames() string {
	var names []string
	for _, ep := range e.Endpoints {
		if !slices.Contains(names, ep.Profile.ID()) {
			names = append(names, ep.Profile.ID())
		}
	}
	if len(names) == 0 {
		return "the target has no endpoints"
	}
	return strings.Join(names, ", ")
}

// Inputs and the deviation code a delivery with one changed after signing
// gets when the receiver accepts it: one code per kind of input.
func inputCode(in profiles.Input) Code {
	switch {
	case in.Name == "key":
		return codeAckWrongKey
	case in.Name == "timestamp":
		return codeAckUnsignedTimestamp
	case in.Name == "id":
		return codeAckUnsignedID
	case in.URL, in.Name == "method":
		return codeAckUnsignedURL
	case in.Form != "":
		return codeAckUnsignedForm
	case in.Header != "":
		return codeAckUnsignedHeader
	}
	// The body, or a value inside it.
	return codeAckUnsignedBody
}

// where says where an input lives, for evidence.
func where(in profiles.Input) string {
	switch {
	case in.Name == "key":
		return "the signing key"
	case in.Name == "method":
		return "the request method"
	case in.Header != "":
		return "header " + in.Header
	case in.JSONPath != "":
		return "body " + in.JSONPath
	case in.Form != "":
		return "form field " + in.Form
	case in.URL:
		return "the URL's query"
	case in.Body:
		return "the body"
	}
	return "?"
}

// roleDerived starts the role of a derived negative delivery: the code it
// proves, then what was changed ("derived:ack.unsigned-id stripe/acct_A id
// (body $.id) changed after signing").
const roleDerived = "derived:"

// derivedRole is the role of a derived negative delivery proving code.
func derivedRole(code Code, what string) string { return roleDerived + code.ID + " " + what }

// derivedCode is the code a derived delivery's role names.
func derivedCode(role string) string {
	id, _, _ := strings.Cut(strings.TrimPrefix(role, roleDerived), " ")
	return id
}

// derivedBad builds one derived negative delivery to ep and returns the job
// that sends it and reads that it left nothing: under its own key, and, when
// the event ID itself was changed, under the ID it was changed to.
func (s *session) derivedBad(ep Endpoint, code Code, what string, f simulator.Faults) func() {
	ev := s.storeEvent(ep)
	k := s.key(ep, ev)
	keys := []profiles.Key{k}
	if f.Alter == "id" {
		alt := k
		alt.EventID = simulator.AlteredID(k.EventID)
		keys = append(keys, alt)
	}
	return func() {
		s.send(ep, ev, derivedRole(code, what), simulator.Shape{Faults: f})
		if s.objectVersion() {
			// One object, whatever its event ID was changed to.
			s.states(phaseBad, 0, k)
			return
		}
		for _, k := range keys {
			s.rows(k, phaseBad)
			s.effects(k, phaseBad)
		}
	}
}

// handshake sends one handshake to ep (bad names a variant to refuse, "" for
// the real one) and files it under role.
func (s *session) handshake(ep Endpoint, role, challenge, bad string) history.Attempt {
	a, err := s.run.runner(ep).Handshake(s.ctx, simulator.Handshake{
		Key: profiles.Key{Source: ep.source(), Account: ep.Account}, Challenge: challenge, Bad: bad})
	if err != nil && s.ctx.Err() == nil {
		s.abort("the harness could not build %s's handshake: %v", ep.name(), err)
	}
	s.harnessSide(a)
	if err != nil {
		s.abort("interrupted: %v", s.ctx.Err())
	}
	return s.record(role, a)[0]
}

// handshakeKeys are the keys a handshake stored as an event would take: the
// endpoint's with no event ID (a handshake carries none), and with the
// challenge as one.
func handshakeKeys(ep Endpoint, challenge string) []profiles.Key {
	return []profiles.Key{{Source: ep.source(), Account: ep.Account}, {Source: ep.source(), Account: ep.Account, EventID: challenge}}
}

// identityTwins are two IDs that differ from id in exactly one byte: its last
// letter or digit changed within its class, and its first letter's case
// flipped (at the front, so that a receiver cutting IDs short still tells it
// apart: each twin catches one mistake). caseTwin is "" when id has no letter.
func identityTwins(id string) (lastByte, caseTwin string) {
	lastByte = simulator.AlteredID(id)
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z':
			return lastByte, id[:i] + string(c-'a'+'A') + id[i+1:]
		case c >= 'A' && c <= 'Z':
			return lastByte, id[:i] + string(c-'A'+'a') + id[i+1:]
		}
	}
	return lastByte, ""
}

// longID makes id identityIDLen bytes long with letters and digits from the
// scenario's random source: longer than any provider's IDs, so that a key
// column or index that keeps only part of an ID loses the last byte.
func (s *session) longID(id string) string {
	const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	s.mu.Lock()
	defer s.mu.Unlock()
	b := []byte(id)
	for len(b) < identityIDLen {
		b = append(b, alnum[s.rng.IntN(len(alnum))])
	}
	return string(b)
}

// identityIDLen is the length of DEDUP-8's event IDs.
const identityIDLen = 64

// describeDur renders a duration for evidence, "undocumented" for 0.
func describeDur(d time.Duration) string {
	if d <= 0 {
		return "undocumented"
	}
	return d.String()
}

// endpointFact is the key a per-endpoint fact is recorded under.
func endpointFact(source, account string) string { return fmt.Sprintf("%s/%s", source, account) }

// paramsKey is a read's event key ($1 $2 $3) as one string; a read with fewer
// parameters (a foreign history) has its own.
func paramsKey(ps []string) string {
	if len(ps) > 3 {
		ps = ps[:3]
	}
	return strings.Join(ps, "\x00")
}
