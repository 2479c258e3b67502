package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/simulator"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// ACK: the 2xx means what the provider takes it to mean — the event is
// durable — it comes within the provider's timeout, and only valid deliveries
// get it: bad input is refused and leaves nothing, unhandled types are
// acknowledged and change nothing, legitimate deliveries at a limit's edge are
// accepted.
var ackFamily = family{Name: "ACK", Guarantees: []*Guarantee{&ack1, &ack2, &ack3, &ack4, &ack5, &ack6, &ack7, &ack8, &ack9}}

// The ACK deviation codes.
var (
	codeAckBoundaryRejected   = Code{"ack.boundary-rejected", "a legitimate delivery at the edge of a limit or tolerance (a large body, a timestamp inside the tolerance) was not acknowledged"}
	codeAckBoundaryNotApplied = Code{"ack.boundary-not-applied", "a legitimate delivery at the edge of a limit or tolerance was acknowledged but not stored and applied once"}
	codeAckLost               = Code{"ack.lost", "an acknowledged event is not stored after the receiver was killed and restarted (no event row, or its object does not hold its key)"}
	codeAckEffects            = Code{"ack.effects", "an event killed in flight and redelivered after the restart is not applied exactly once (object-version: its object does not hold its key)"}
	codeAckTimeout            = Code{"ack.timeout", "a delivery was not acknowledged within the provider's timeout"}
	codeAckAcceptedBadInput   = Code{"ack.accepted-bad-input", "an invalid delivery (bad signature, stale timestamp, malformed body) was not refused with a 4xx"}
	codeAckControlRejected    = Code{"ack.control-rejected", "a valid delivery sent as the positive control (beside invalid ones, or beside an unhandled type) was not acknowledged and applied: refusing or ignoring everything proves nothing"}
	codeAckStoredBadInput     = Code{"ack.stored-bad-input", "an invalid delivery left a key row or an effect, or its object took the event's key or was created by it"}
	codeAckUnknownRejected    = Code{"ack.unknown-type-rejected", "a valid event of an unhandled type was not acknowledged"}
	codeAckUnknownApplied     = Code{"ack.unknown-type-applied", "a valid event of an unhandled type changed the receiver's state"}

	// ACK-8: the provider's handshake.
	codeAckHandshakeWrong       = Code{"ack.handshake-wrong", "the provider's handshake was not answered as the provider expects (status, or the challenge in the answer): the provider does not verify the endpoint"}
	codeAckHandshakeLate        = Code{"ack.handshake-late", "the provider's handshake was answered after the provider's documented deadline, or not at all"}
	codeAckHandshakeBadAccepted = Code{"ack.handshake-bad-accepted", "a handshake the provider documents must be refused (badly signed, a wrong verify token) was answered 2xx (or not with the status the provider documents)"}
	codeAckHandshakeStored      = Code{"ack.handshake-stored", "a handshake left an event row or an effect: it was counted as an event"}
	codeAckHandshakeRevalidate  = Code{"ack.handshake-revalidation", "the handshake repeated later, as the provider re-validates endpoints, was not answered as expected within the deadline"}

	// ACK-9: one signed input changed after signing, per kind of input.
	codeAckUnsignedBody       = Code{"ack.unsigned-body", "a delivery whose body (or a value in it) was changed after signing was accepted or stored"}
	codeAckUnsignedID         = Code{"ack.unsigned-id", "a delivery whose signed event ID was changed after signing was accepted or stored"}
	codeAckUnsignedTimestamp  = Code{"ack.unsigned-timestamp", "a delivery whose signed timestamp was changed after signing was accepted or stored"}
	codeAckUnsignedURL        = Code{"ack.unsigned-url", "a delivery posted to a URL other than the signed one (an extra query parameter), or with another method than the signed one, was accepted or stored"}
	codeAckUnsignedForm       = Code{"ack.unsigned-form", "a delivery whose signed form field was changed after signing was accepted or stored"}
	codeAckUnsignedHeader     = Code{"ack.unsigned-header", "a delivery whose signed header was changed after signing was accepted or stored"}
	codeAckWrongKey           = Code{"ack.wrong-key-accepted", "a delivery signed with another key of the right shape (or with several keys, none the endpoint's) was accepted or stored"}
	codeAckSignatureFormat    = Code{"ack.signature-format-accepted", "a signature written with another format prefix (\"v0=\" for \"v1=\") was accepted or stored"}
	codeAckSignatureTruncated = Code{"ack.signature-truncated-accepted", "a signature cut to half its length was accepted or stored: only a prefix of it is compared"}
	codeAckFutureAccepted     = Code{"ack.future-accepted", "a delivery signed further in the future than the tolerance, which the provider's contract says receivers refuse, was accepted or stored"}
)

// ackFacts are what the ACK scenarios fix for their checkers.
type ackFacts struct {
	// TimeoutOf is ACK-2's timeout per endpoint, by "source/account";
	// Timeout the single one histories before per-endpoint timeouts recorded.
	TimeoutOf map[string]time.Duration `fact:"timeout:"`
	Timeout   string                   `fact:"timeout"`
}

// Phases and roles of the ACK scenarios. roleBad and roleBoundary start the
// role of an invalid delivery and of a legitimate one at the edge of a limit
// or tolerance; the rest of the role describes it.
const (
	phaseAfterRedelivery = "after-redelivery"
	phaseBad             = "bad"
	phaseUnknownType     = "unknown-type"
	phaseControl         = "control"
	phaseBoundary        = "boundary"

	roleControl     = "control"
	roleBad         = "bad:"
	roleUnknownType = "unknown-type"
	roleBoundary    = "boundary:"
)

// concurrentACK2 is the load under which ACK-2 measures acknowledgement time
// on the strictest endpoint; burstACK2 the burst every other profile gets.
const (
	concurrentACK2 = 64
	burstACK2      = 8
)

// ACK-1 without failpoints: rounds of concurrent deliveries, each killed after a
// seeded number of acknowledgements.
const (
	roundsACK1   = 3
	perRoundACK1 = 16
)

var ack1 = Guarantee{
	ID: "ACK-1", Title: "2xx only after durability",
	Promise: "Every acknowledged event is durable: killed right after its 2xx and restarted, the receiver still has it.",
	Why:     "An acknowledgement sent before the commit tells the provider to stop retrying an event that may be lost.",
	Needs:   []Capability{"crash"},
	Spec:    "every acknowledged event survives a kill right after its 2xx",
	Sends:   "3 rounds of 16 concurrent `effect` events (every `effect` role in turn), SIGKILL after the k-th 2xx (k from the seed), restart, all redelivered (failpoint after-response where declared)",
	Expects: "every acknowledged event has 1 row and 1 effect after the restart; after the redelivery every event has 1 and 1",
	codes:   []Code{codeAckLost, codeAckEffects},
	Reads:   []Read{{Query: queryEventRows, Tells: "each acknowledged event's key rows after the kill and restart, and every event's after the redelivery: 1"}, {Query: queryEffects, Tells: "the same events' effects: 1"}},
	judge: bind(func(s *session, _ *noFacts) {
		ep := s.primary()
		if ok, _ := s.env.has("failpoints"); ok {
			// Deterministic: the receiver kills itself right after flushing the
			// 2xx; every effect role in turn.
			rs := s.storeRoles()
			for i := range max(2, len(rs)) {
				ev := s.storeEventOf(ep, rs[i%len(rs)])
				k := s.key(ep, ev)
				s.arm(fpAfterResponse, k.EventID)
				a := s.send(ep, ev, roleLoad, simulator.Shape{})
				s.crashedRestart(fpAfterResponse)
				s.ack1Check([]profiles.Event{ev}, []history.Attempt{a}, ep)
			}
			return
		}
		s.note("no failpoints capability: SIGKILL after a seeded number of acknowledgements, %d rounds of %d concurrent deliveries", roundsACK1, perRoundACK1)
		for round := 1; round <= roundsACK1; round++ {
			s.ack1Round(ep, round)
		}
	}, func(v *view, _ *noFacts) {
		if v.objectVersion() {
			ack1Objects(v)
			return
		}
		acked := 0
		for _, a := range v.role(roleLoad) {
			if a.Outcome != history.OutcomeAcknowledged {
				continue
			}
			acked++
			for _, q := range []string{queryEventRows, queryEffects} {
				o, ok := v.read(q, phaseAfterRestart, keyParams(a.Key))
				if !ok {
					v.fail("history: no %s read after the restart for acknowledged %s", q, KeyString(a.Key))
					return
				}
				if o.Count != 1 {
					v.deviate(codeAckLost, "%s was acknowledged before the kill, but after the restart %s is %d, want 1", KeyString(a.Key), q, o.Count)
				}
			}
		}
		if acked == 0 {
			v.fail("no delivery was acknowledged before the kill: there is no acknowledged event to check")
			return
		}
		v.note("%d acknowledged event(s) checked after a kill and restart", acked)
		// Every event was redelivered after the restart: each applies exactly once.
		v.once(codeAckEffects, phaseAfterRedelivery, "redelivered after the kill and restart")
		v.count(codeAckEffects, queryEventRows, phaseAfterRedelivery, 1, "redelivered after the kill and restart")
	}),
}

var ack2 = Guarantee{
	ID: "ACK-2", Title: "Acknowledgement within the timeout",
	Promise: "Under 64 concurrent deliveries every delivery is acknowledged within the endpoint's timeout (the target's ack_timeout, else the profile's documented one, else hookcert's labelled 10 s model).",
	Why:     "A provider that times out counts the delivery as failed and sends it again, multiplying load exactly when the receiver is slow.",
	Spec:    "every delivery is acknowledged within the profile's timeout under 64 concurrent deliveries",
	Sends:   "64 concurrent `effect` events to the endpoint with the shortest timeout, then 8 to every other profile's, each held to its own timeout",
	Expects: "every delivery 2xx within its endpoint's timeout",
	codes:   []Code{codeAckTimeout},
	Reads:   []Read{},
	judge: bind(func(s *session, f *ackFacts) {
		// 64 deliveries at once, shared among the profiles (the first endpoint
		// of each: accounts of one profile share the code path), each held to
		// its own endpoint's timeout.
		type group struct {
			ep      Endpoint
			timeout time.Duration
			what    string
			evs     []profiles.Event
		}
		var groups []*group
		seen := map[string]bool{}
		for _, ep := range s.endpoints() {
			if seen[ep.Profile.ID()] {
				continue
			}
			seen[ep.Profile.ID()] = true
			timeout, model := ep.ackTimeout()
			if timeout <= 0 {
				s.note("%s: no acknowledgement timeout documented or declared (ack_timeout)", ep.name())
				continue
			}
			what := "documented by " + ep.Profile.ID()
			if model {
				what = "hookcert's model: " + ep.Profile.ID() + " documents none; set ack_timeout on the endpoint to hold it to yours"
			}
			groups = append(groups, &group{ep: ep, timeout: timeout, what: what})
		}
		if len(groups) == 0 {
			s.notApplicable("no endpoint's profile documents an acknowledgement timeout and none declares ack_timeout")
		}
		// The full load goes to the strictest timeout, where a receiver that
		// queues fails for certain; every other profile then gets a smaller
		// concurrent burst against its own.
		sort.SliceStable(groups, func(i, j int) bool { return groups[i].timeout < groups[j].timeout })
		for i, g := range groups {
			n := concurrentACK2
			if i > 0 {
				n = burstACK2
			}
			for range n {
				g.evs = append(g.evs, s.storeEvent(g.ep))
			}
		}
		f.TimeoutOf = map[string]time.Duration{}
		for _, g := range groups {
			f.TimeoutOf[g.ep.source()+"/"+g.ep.Account] = g.timeout
			recs := s.parallel(g.ep, g.evs, roleLoad, simulator.Shape{Timeout: simulator.Duration(g.timeout)})
			p50, p99, max := latencies(recs)
			s.note("%d concurrent deliveries to %s: p50 %s, p99 %s, max %s (timeout %s, %s)", len(recs), g.ep.name(),
				p50.Round(time.Microsecond), p99.Round(time.Microsecond), max.Round(time.Microsecond), g.timeout, g.what)
		}
	}, func(v *view, f *ackFacts) {
		if len(v.role(roleLoad)) == 0 {
			v.fail("history: %s sent no delivery under load", v.sc.Name)
			return
		}
		for _, a := range v.role(roleLoad) {
			if a.Outcome != history.OutcomeAcknowledged {
				timeout := f.Timeout
				if d, ok := f.TimeoutOf[a.Key.Source+"/"+a.Key.Account]; ok {
					timeout = d.String()
				}
				v.deviate(codeAckTimeout, "%s on %s/%s: not acknowledged within %s: %s after %s", a.Key.EventID, a.Key.Source, a.Key.Account, timeout, Describe(a), a.Duration().Round(time.Millisecond))
			}
		}
	}),
}

var ack3 = Guarantee{
	ID: "ACK-3", Title: "Bad signatures rejected",
	Promise: "A delivery with a bad signature, a tampered body, a wrong secret or no signature gets a 4xx and leaves nothing behind.",
	Why:     "Anyone who knows the URL could otherwise forge events.",
	Spec:    "a bad signature gets a 4xx and leaves nothing",
	Sends:   "a tampered body, a wrong secret and no signature on every endpoint, beside a valid `effect` event (the positive control)",
	Expects: "4xx and nothing stored; the control 2xx, 1 row, 1 effect",
	codes:   []Code{codeAckAcceptedBadInput, codeAckStoredBadInput, codeAckControlRejected},
	Reads:   []Read{{Query: queryEventRows, Tells: "each invalid delivery's event (0) and the control's (1)"}, {Query: queryEffects, Tells: "the same events' effects"}},
	judge: bind(func(s *session, _ *noFacts) {
		// All at once: a receiver that never answers costs one timeout, not one
		// per delivery and endpoint.
		var jobs []func()
		for _, ep := range s.env.Endpoints {
			for _, f := range []struct {
				name   string
				faults simulator.Faults
			}{
				{"tampered body", simulator.Faults{Tamper: true}},
				{"wrong secret", simulator.Faults{WrongSecret: true}},
				{"missing signature", simulator.Faults{MissingSignature: true}},
			} {
				jobs = append(jobs, s.badDelivery(ep, ep.Profile.ID()+" "+f.name, f.faults))
			}
			jobs = append(jobs, s.control(ep))
		}
		s.together(jobs...)
	}, badInputCheck),
}

var ack4 = Guarantee{
	ID: "ACK-4", Title: "Stale timestamps rejected",
	Promise: "A correctly signed delivery whose signed timestamp is outside the profile's tolerance gets a 4xx and leaves nothing behind.",
	Why:     "Without the recency check a captured delivery can be replayed forever.",
	Needs:   []Capability{"signed-timestamp"},
	Spec:    "a stale signed timestamp gets a 4xx and leaves nothing",
	Sends:   "an `effect` event signed beyond the tolerance, two signed inside it (half the tolerance ago, a minute ahead) and a control, on every timestamp-signing endpoint",
	Expects: "beyond: 4xx, nothing stored; inside and the control: 2xx, 1 row, 1 effect",
	codes:   []Code{codeAckAcceptedBadInput, codeAckStoredBadInput, codeAckControlRejected, codeAckBoundaryRejected, codeAckBoundaryNotApplied},
	Reads:   []Read{{Query: queryEventRows, Tells: "the stale delivery's event (0); the control's and those signed inside the tolerance (1)"}, {Query: queryEffects, Tells: "the same events' effects"}},
	judge: bind(func(s *session, _ *noFacts) {
		// Both sides of the tolerance: beyond it is refused; inside it — a little
		// old, or a little ahead as a provider's clock may be — is accepted.
		var jobs []func()
		for _, ep := range s.env.Endpoints {
			if !signsTimestamp(ep) {
				continue
			}
			tol := *ep.Profile.Facts().Tolerance
			stale := 2*tol + time.Minute
			inside := tol / 2
			jobs = append(jobs, s.badDelivery(ep, ep.Profile.ID()+" delivery signed "+stale.String()+" ago (tolerance "+tol.String()+")",
				simulator.Faults{StaleBy: simulator.Duration(stale)}), s.control(ep),
				s.boundary(ep, ep.Profile.ID()+" signed "+inside.String()+" ago, inside the tolerance", simulator.Shape{Faults: simulator.Faults{StaleBy: simulator.Duration(inside)}}),
				s.boundary(ep, ep.Profile.ID()+" signed "+skewACK4.String()+" ahead (clock skew), inside the tolerance", simulator.Shape{Faults: simulator.Faults{AheadBy: simulator.Duration(skewACK4)}}))
		}
		s.together(jobs...)
	}, func(v *view, f *noFacts) {
		badInputCheck(v, f)
		boundaryCheck(v, f)
	}),
}

var ack5 = Guarantee{
	ID: "ACK-5", Title: "Malformed deliveries rejected",
	Promise: "A signed delivery with malformed JSON, no event ID, or an oversized body gets a 4xx and leaves nothing behind.",
	Why:     "Storing an event without an ID, or reading unbounded bodies, corrupts the key space or exhausts memory.",
	Spec:    "malformed JSON, a missing event ID or an oversized body gets a 4xx and leaves nothing",
	Sends:   "malformed JSON (not to form-encoded endpoints: a form has no malformed bytes), no event ID and a body twice the size limit on every endpoint, beside a control",
	Expects: "4xx and nothing stored; the control applied",
	codes:   []Code{codeAckAcceptedBadInput, codeAckStoredBadInput, codeAckControlRejected},
	Reads:   []Read{{Query: queryEventRows, Tells: "each invalid delivery's event (0), the one without an event ID read with $3 empty too; the control's (1)"}, {Query: queryEffects, Tells: "the same events' effects"}},
	judge: bind(func(s *session, _ *noFacts) {
		var jobs []func()
		for _, ep := range s.endpoints() {
			limit := s.bodyLimit(ep)
			for _, f := range []struct {
				name   string
				faults simulator.Faults
			}{
				{"malformed JSON", simulator.Faults{MalformedJSON: true}},
				{"missing event ID", simulator.Faults{MissingID: true}},
				{fmt.Sprintf("oversized body (%d bytes, twice the %d-byte limit)", 2*limit, limit), simulator.Faults{OversizeBytes: 2 * limit}},
			} {
				if f.faults.MalformedJSON && formBody(ep) {
					s.note("%s sends form-encoded bodies: no malformed JSON to send (every form parser reads any bytes)", ep.name())
					continue
				}
				jobs = append(jobs, s.badDelivery(ep, ep.name()+" "+f.name, f.faults))
			}
			jobs = append(jobs, s.control(ep))
		}
		s.together(jobs...)
	}, badInputCheck),
}

var ack6 = Guarantee{
	ID: "ACK-6", Title: "Unknown types acknowledged",
	Promise: "A valid delivery of an event type the receiver does not handle is acknowledged and changes no business state.",
	Why:     "Rejecting unknown types makes the provider retry them for days and can get the endpoint disabled.",
	Spec:    "a valid event of an unhandled type is acknowledged and changes nothing",
	Sends:   "an `unhandled` event on every endpoint, beside a control",
	Expects: "2xx and 0 effects once the receiver has settled; the control applied",
	codes:   []Code{codeAckUnknownRejected, codeAckUnknownApplied, codeAckControlRejected},
	Reads:   []Read{{Query: queryEventRows, Tells: "the control's key rows: 1"}, {Query: queryEffects, Tells: "the unhandled event's effects (0), with its own $3 and $4, and the control's (1)"}},
	judge: bind(func(s *session, _ *noFacts) {
		u := s.unhandledRole()
		var jobs []func()
		for _, ep := range s.env.Endpoints {
			ev := s.event(ep, u.Type, s.newID(prefixOr(u.IDPrefix)))
			k := s.key(ep, ev)
			jobs = append(jobs, func() {
				s.send(ep, ev, roleUnknownType, simulator.Shape{})
				// An object-version receiver has no count for the unhandled
				// type's object: its answer is judged, and the control.
				if !s.objectVersion() {
					s.effects(k, phaseUnknownType)
				}
			},
				// The positive control: "changes nothing" means something only if
				// a handled event on the same endpoint does change the state.
				s.control(ep))
		}
		s.together(jobs...)
	}, func(v *view, _ *noFacts) {
		for _, a := range v.role(roleUnknownType) {
			if a.Outcome != history.OutcomeAcknowledged {
				v.deviate(codeAckUnknownRejected, "an unhandled event type (%s) was answered %s; the provider retries it on its schedule", a.EventType, Describe(a))
			}
		}
		if v.objectVersion() {
			v.note("changes nothing: not judged (not applicable): an object-version receiver has no query for an unhandled type's object; its answer and the control are judged")
		} else {
			v.count(codeAckUnknownApplied, queryEffects, phaseUnknownType, 0, "an unhandled event type")
		}
		control(v)
	}),
}

var ack7 = Guarantee{
	ID: "ACK-7", Title: "Large legitimate bodies accepted",
	Promise: "A legitimate, correctly signed delivery just under the size limit (the target's limits.max_body_bytes, 1 MiB by default) is acknowledged and applied.",
	Why:     "A body cap tighter than what the provider sends rejects real events; the provider retries them until it gives up, and the change is lost.",
	Spec:    "a legitimate body just under the size limit is acknowledged and applied",
	Sends:   "an `effect` event padded with JSON whitespace (a form: with a padding parameter) to 1 KiB under the size limit, on every endpoint",
	Expects: "2xx, 1 row, 1 effect",
	codes:   []Code{codeAckBoundaryRejected, codeAckBoundaryNotApplied},
	Reads:   []Read{{Query: queryEventRows, Tells: "the padded event's key rows: 1"}, {Query: queryEffects, Tells: "the padded event's effects: 1"}},
	judge: bind(func(s *session, _ *noFacts) {
		var jobs []func()
		for _, ep := range s.endpoints() {
			limit := s.bodyLimit(ep)
			size := limit - largeMarginACK7
			jobs = append(jobs, s.boundary(ep, fmt.Sprintf("%s %d-byte body (limit %d)", ep.name(), size, limit), simulator.Shape{PadTo: size}))
		}
		s.together(jobs...)
	}, boundaryCheck),
}

// handshakeFacts are what ACK-8 fixes for its checker, per endpoint
// ("source/account"): the provider's deadline, the status a bad handshake
// must get (0: any non-2xx), and how often the provider re-validates.
type handshakeFacts struct {
	Deadline     map[string]time.Duration `fact:"deadline:"`
	RefuseStatus map[string]int           `fact:"refuse_status:"`
	Revalidate   map[string]time.Duration `fact:"revalidate:"`
}

// Roles and phases of ACK-8.
const (
	roleHandshake             = "handshake"
	roleHandshakeBad          = "handshake-bad:"
	roleHandshakeRevalidation = "handshake-revalidation"

	phaseHandshakeBefore       = "handshake-before"
	phaseHandshake             = "handshake"
	phaseHandshakeBad          = "handshake-bad"
	phaseHandshakeRevalidation = "handshake-revalidation"
)

var ack8 = Guarantee{
	ID: "ACK-8", Title: "Provider handshake answered",
	Promise: "The provider's endpoint verification (Slack's url_verification, Zoom's url_validation, Meta's hub.challenge…) is answered as the provider expects within its deadline, the bad variants the provider documents are refused, a re-validation is answered again, and no handshake counts as an event.",
	Why:     "A provider that cannot verify the endpoint never delivers to it (or stops, at its next re-validation); a receiver that answers a forged handshake confirms a URL to anyone; a handshake stored as an event is an event that never happened.",
	Needs:   []Capability{"handshake"},
	Spec:    "the provider's handshake is answered within its deadline, bad ones refused",
	Sends:   "on every endpoint whose profile makes a handshake: the real one with a fresh challenge, each bad variant the profile documents (signed with another key, a wrong verify token; signed with another key too wherever the handshake is signed), a valid `effect` event (the positive control), and, where the provider re-validates, the handshake again",
	Expects: "the real handshake and the re-validation answered as the profile's contract says within its deadline; the bad variants refused (the documented status, else any non-2xx); no event row and no effect for any handshake; the control 2xx, 1 row, 1 effect",
	codes:   []Code{codeAckHandshakeWrong, codeAckHandshakeLate, codeAckHandshakeBadAccepted, codeAckHandshakeStored, codeAckHandshakeRevalidate, codeAckControlRejected},
	Reads: []Read{{Query: queryEventRows, Tells: "each handshake's endpoint with no event ID ($3 empty): as many as before the first handshake; with the challenge as event ID, and with the event ID the handshake carries where it carries one: 0; the control's: 1"},
		{Query: queryEffects, Tells: "the same keys' effects: 0; the control's: 1"}},
	judge: bind(func(s *session, f *handshakeFacts) {
		f.Deadline, f.RefuseStatus, f.Revalidate = map[string]time.Duration{}, map[string]int{}, map[string]time.Duration{}
		var jobs []func()
		for _, ep := range s.endpoints() {
			hs, ok := ep.handshaker()
			if !ok {
				continue
			}
			hf := hs.HandshakeFacts()
			at := endpointFact(ep.source(), ep.Account)
			f.Deadline[at], f.RefuseStatus[at], f.Revalidate[at] = hf.Deadline, hf.RefuseStatus, hf.Revalidate
			s.note("%s: %s (deadline %s; source %s)", ep.name(), hf.Summary, describeDur(hf.Deadline), hf.Source)
			refuse := slices.Clone(hf.Refuse)
			signed, err := s.run.runner(ep).HandshakeSigned()
			if err != nil {
				s.abort("reading %s's handshake: %v", ep.name(), err)
			}
			if signed && !slices.Contains(refuse, profiles.BadSignature) {
				// Signed like an event, so a forged one is refused like one.
				refuse = append(refuse, profiles.BadSignature)
				s.note("%s: the handshake is signed; one signed with another key must be refused, as a forged event is", ep.name())
			}
			// Every challenge is drawn now: the jobs run together and draw nothing.
			real := s.newID("chal")
			bads := make([]string, len(refuse))
			for i := range bads {
				bads[i] = s.newID("chal")
			}
			again := s.newID("chal")
			ctl := s.control(ep)
			shake := func(role, phase, challenge, bad string) {
				a := s.handshake(ep, role, challenge, bad)
				keys := handshakeKeys(ep, challenge)
				if a.Key.EventID != "" {
					keys = append(keys, a.Key)
				}
				for _, k := range keys {
					s.rows(k, phase)
					s.effects(k, phase)
				}
			}
			jobs = append(jobs, func() {
				// An event stored earlier without an ID (another scenario's
				// bad delivery, to a receiver that keeps those) is no
				// handshake's: the rows under no event ID are counted first.
				none := handshakeKeys(ep, real)[0]
				s.rows(none, phaseHandshakeBefore)
				s.effects(none, phaseHandshakeBefore)
				shake(roleHandshake, phaseHandshake, real, "")
				for i, bad := range refuse {
					shake(roleHandshakeBad+bad, phaseHandshakeBad, bads[i], bad)
				}
				// Events flow between the verification and the re-validation.
				ctl()
				if hf.Revalidate > 0 {
					s.note("%s: the handshake sent again after an event stands for the provider's re-validation every %s", ep.name(), hf.Revalidate)
					shake(roleHandshakeRevalidation, phaseHandshakeRevalidation, again, "")
				}
			})
		}
		s.together(jobs...)
	}, func(v *view, f *handshakeFacts) {
		if len(v.role(roleHandshake)) == 0 {
			v.fail("history: %s sent no handshake", v.sc.Name)
			return
		}
		for _, a := range v.role(roleHandshake) {
			if code, why := handshakeAnswer(a, f.Deadline[endpointFact(a.Key.Source, a.Key.Account)]); why != "" {
				v.deviate(code, "%s/%s: the handshake %s", a.Key.Source, a.Key.Account, why)
			}
		}
		for _, a := range v.role(roleHandshakeRevalidation) {
			at := endpointFact(a.Key.Source, a.Key.Account)
			if _, why := handshakeAnswer(a, f.Deadline[at]); why != "" {
				v.deviate(codeAckHandshakeRevalidate, "%s: the handshake sent again, as the provider re-validates every %s, %s", at, f.Revalidate[at], why)
			}
		}
		for _, a := range v.role(roleHandshakeBad) {
			at := endpointFact(a.Key.Source, a.Key.Account)
			variant := strings.TrimPrefix(a.Role, roleHandshakeBad)
			want := f.RefuseStatus[at]
			switch {
			case is2xx(a.Status):
				v.deviate(codeAckHandshakeBadAccepted, "%s: a handshake with %s was answered %s; the provider documents it must be refused", at, variant, Describe(a))
			case want > 0 && a.Status != want:
				v.deviate(codeAckHandshakeBadAccepted, "%s: a handshake with %s was answered %s; the provider documents status %d", at, variant, Describe(a), want)
			}
		}
		// What was there before the first handshake, under no event ID.
		before := map[string]int64{}
		for _, q := range []string{queryEventRows, queryEffects} {
			for _, o := range v.reads(q, phaseHandshakeBefore) {
				before[q+"\x00"+paramsKey(o.Params)] = o.Count
			}
		}
		for _, p := range []struct{ phase, what string }{{phaseHandshake, "after a handshake"}, {phaseHandshakeBad, "after a bad handshake"}, {phaseHandshakeRevalidation, "after a re-validation"}} {
			for _, q := range []string{queryEventRows, queryEffects} {
				rs := v.reads(q, p.phase)
				if len(rs) == 0 && p.phase == phaseHandshake {
					v.fail("history: %s has no %s read in phase %q", v.sc.Name, q, p.phase)
					return
				}
				for _, o := range rs {
					was := before[q+"\x00"+paramsKey(o.Params)]
					if o.Count != was {
						v.deviate(codeAckHandshakeStored, "%s: %s for %s: got %d, want %d (as before the first handshake)", p.what, q, paramsText(o.Params), o.Count, was)
					}
				}
			}
		}
		control(v)
	}),
}

// handshakeAnswer judges one answer to a real handshake: the code and why
// when it is not what the provider takes for a verification in time.
func handshakeAnswer(a history.Attempt, deadline time.Duration) (Code, string) {
	switch {
	case a.Status == 0 && a.ErrorClass == history.ErrClassTimeout:
		return codeAckHandshakeLate, fmt.Sprintf("was not answered (%s after %s; deadline %s)", Describe(a), a.Duration().Round(time.Millisecond), describeDur(deadline))
	case a.Status == 0:
		return codeAckHandshakeWrong, "got no answer: " + Describe(a)
	case a.ErrorClass == simulator.ErrClassHandshake:
		return codeAckHandshakeWrong, fmt.Sprintf("was answered %s, not as the provider expects: %s", Describe(a), a.Error)
	case a.Outcome != history.OutcomeAcknowledged:
		return codeAckHandshakeWrong, "was answered " + Describe(a)
	case deadline > 0 && a.Duration() > deadline:
		return codeAckHandshakeLate, fmt.Sprintf("was answered after %s, past the provider's deadline of %s", a.Duration().Round(time.Millisecond), deadline)
	}
	return Code{}, ""
}

// derivedCodes are the codes ACK-9's derived negative deliveries prove, one per
// kind of input or signature fault.
var derivedCodes = []Code{codeAckUnsignedBody, codeAckUnsignedID, codeAckUnsignedTimestamp, codeAckUnsignedURL, codeAckUnsignedForm, codeAckUnsignedHeader,
	codeAckWrongKey, codeAckSignatureFormat, codeAckSignatureTruncated, codeAckFutureAccepted}

// futureACK9 is how far past its tolerance ACK-9 signs a delivery in the
// future, as ACK-4 does in the past.
func futureACK9(tol time.Duration) time.Duration { return 2*tol + time.Minute }

var ack9 = Guarantee{
	ID: "ACK-9", Title: "Every signed input is checked",
	Promise: "A correctly signed delivery with any one input its signature covers changed after signing (the body, the event ID, the timestamp, the URL, a form field, a header, the key), with its signature's format prefix changed or its signature cut short, or signed further in the future than the tolerance where the provider says receivers refuse that, gets a 4xx and leaves nothing behind; one valid signature among invalid ones is accepted.",
	Why:     "A verifier that skips part of what the provider signs, compares only a prefix of the signature or ignores its scheme lets anyone replay a genuine delivery with that part changed: another event ID, another amount, another time.",
	Needs:   []Capability{"signed-inputs"},
	Spec:    "a delivery with any signed input changed after signing gets a 4xx and leaves nothing",
	Sends:   "on every endpoint whose profile lists the inputs its signature covers: per signed input an `effect` event with that input changed after signing; the signature's format prefix changed, and the signature cut to half; where the profile sends several signatures, two invalid ones, and a valid one after an invalid one; where the profile's contract refuses future timestamps, one signed twice the tolerance plus a minute ahead (ACK-4 sends the past side and the deliveries inside the tolerance); a valid `effect` event (the positive control)",
	Expects: "each changed delivery 4xx, no event row and no effect (under its event ID, and under the changed one when the ID was changed); the valid one among invalid signatures and the control 2xx, 1 row, 1 effect",
	codes:   append(append([]Code{}, derivedCodes...), codeAckBoundaryRejected, codeAckBoundaryNotApplied, codeAckControlRejected),
	Reads: []Read{{Query: queryEventRows, Tells: "each changed delivery's event (0), and the event ID it was changed to (0); the control's and the valid-among-invalid one's (1)"},
		{Query: queryEffects, Tells: "the same events' effects"}},
	judge: bind(func(s *session, _ *noFacts) {
		var jobs []func()
		for _, ep := range s.endpoints() {
			ins := ep.signedInputs()
			if len(ins) == 0 {
				continue
			}
			facts := ep.Profile.Facts()
			for _, in := range ins {
				what := fmt.Sprintf("%s %s (%s) changed after signing", ep.name(), in.Name, where(in))
				jobs = append(jobs, s.derivedBad(ep, inputCode(in), what, simulator.Faults{Alter: in.Name}))
			}
			if facts.SignatureHeader != "" {
				prefix, err := simulator.SignatureFormat(ep.Profile, ep.Secrets)
				if err != nil {
					s.abort("reading %s's signature format: %v", ep.name(), err)
				}
				if prefix != "" {
					jobs = append(jobs, s.derivedBad(ep, codeAckSignatureFormat, fmt.Sprintf("%s %s with its format prefix %s changed", ep.name(), facts.SignatureHeader, prefix), simulator.Faults{Signature: simulator.SignaturePrefix}))
				} else {
					s.note("%s: %s holds the signature alone, with no format prefix to change", ep.name(), facts.SignatureHeader)
				}
				jobs = append(jobs, s.derivedBad(ep, codeAckSignatureTruncated, ep.name()+" "+facts.SignatureHeader+" cut to half its length", simulator.Faults{Signature: simulator.SignatureTruncate}))
			} else {
				s.note("%s: the signature is not sent in a header; its format and length are not varied", ep.name())
			}
			if facts.MultipleSignatures {
				jobs = append(jobs,
					s.derivedBad(ep, codeAckWrongKey, ep.name()+" two signatures, neither with the endpoint's key", simulator.Faults{Signature: simulator.SignatureAllInvalid}),
					s.boundary(ep, ep.name()+" a valid signature after an invalid one (a secret roll)", simulator.Shape{Faults: simulator.Faults{Signature: simulator.SignatureValidAmongInvalid}}))
			}
			if signsTimestamp(ep) {
				tol := *facts.Tolerance
				switch refuses, known := ep.refusesFuture(); {
				case !known:
					s.note("%s: profile %s's contract does not say whether its tolerance applies to future timestamps (timestamp.future); none beyond it is sent", ep.name(), ep.Profile.ID())
				case !refuses:
					s.note("%s: profile %s's contract says receivers accept future timestamps (timestamp.future: false); none beyond the tolerance is sent", ep.name(), ep.Profile.ID())
				default:
					ahead := futureACK9(tol)
					jobs = append(jobs, s.derivedBad(ep, codeAckFutureAccepted, fmt.Sprintf("%s signed %s ahead (tolerance %s)", ep.name(), ahead, tol), simulator.Faults{AheadBy: simulator.Duration(ahead)}))
				}
			}
			jobs = append(jobs, s.control(ep))
		}
		s.together(jobs...)
	}, func(v *view, f *noFacts) {
		bad := v.role(roleDerived)
		if len(bad) == 0 {
			v.fail("history: %s sent no delivery with a signed input changed", v.sc.Name)
			return
		}
		codes := map[string]Code{}
		for _, c := range derivedCodes {
			codes[c.ID] = c
		}
		byKey := map[profiles.Key]Code{}
		for _, a := range bad {
			code, ok := codes[derivedCode(a.Role)]
			if !ok {
				v.fail("history: role %q names no code of %s", a.Role, v.sc.Guarantee)
				return
			}
			byKey[a.Key] = code
			if slices.Contains(a.Faults, "alter:id") {
				alt := a.Key
				alt.EventID = simulator.AlteredID(a.Key.EventID)
				byKey[alt] = code
			}
			if a.Status < 400 || a.Status > 499 {
				_, what, _ := strings.Cut(strings.TrimPrefix(a.Role, roleDerived), " ")
				v.deviate(code, "%s: want a 4xx rejection, got %s", what, Describe(a))
			}
		}
		if v.objectVersion() {
			derivedObjects(v, byKey)
		}
		for _, q := range []string{queryEventRows, queryEffects} {
			if v.objectVersion() {
				break
			}
			rs := v.reads(q, phaseBad)
			if len(rs) == 0 {
				v.fail("history: %s has no %s read in phase %q", v.sc.Name, q, phaseBad)
				return
			}
			for _, o := range rs {
				var k profiles.Key
				if len(o.Params) >= 3 {
					k = profiles.Key{Source: o.Params[0], Account: o.Params[1], EventID: o.Params[2]}
				}
				if code, ok := byKey[k]; ok && o.Count != 0 {
					v.deviate(code, "a delivery with a signed input changed left %s %d for %s", q, o.Count, paramsText(o.Params))
				}
			}
		}
		if len(v.role(roleBoundary)) > 0 {
			boundaryCheck(v, f)
		}
		control(v)
	}),
}

// boundaryCheck: every legitimate delivery at the edge of a limit or tolerance
// was acknowledged and applied once.
func boundaryCheck(v *view, _ *noFacts) {
	bs := v.role(roleBoundary)
	if len(bs) == 0 {
		v.fail("history: %s sent no delivery at a boundary", v.sc.Name)
		return
	}
	for _, a := range bs {
		if a.Outcome != history.OutcomeAcknowledged {
			v.deviate(codeAckBoundaryRejected, "%s: a legitimate delivery was not acknowledged: %s", a.Role[len(roleBoundary):], Describe(a))
		}
	}
	v.state(codeAckBoundaryNotApplied, phaseBoundary, 1, "a legitimate delivery at a boundary")
}

// badInputCheck: every invalid delivery is refused with a 4xx and leaves
// nothing.
func badInputCheck(v *view, _ *noFacts) {
	bad := v.role(roleBad)
	if len(bad) == 0 {
		v.fail("history: %s sent no invalid delivery", v.sc.Name)
		return
	}
	for _, a := range bad {
		if a.Status < 400 || a.Status > 499 {
			v.deviate(codeAckAcceptedBadInput, "%s: want a 4xx rejection, got %s", a.Role[len(roleBad):], Describe(a))
		}
	}
	v.state(codeAckStoredBadInput, phaseBad, 0, "an invalid delivery")
	control(v)
}

// control is the positive control of a check that expects nothing to happen:
// the same endpoints acknowledge and apply a valid, handled delivery.
func control(v *view) {
	if len(v.role(roleControl)) == 0 {
		v.fail("history: %s sent no valid delivery to hold its expectations against", v.sc.Name)
		return
	}
	v.acked(codeAckControlRejected, roleControl)
	v.state(codeAckControlRejected, phaseControl, 1, "a valid delivery sent as the positive control")
}

// skewACK4 is how far ahead of the receiver's clock ACK-4 signs a delivery that
// must still be accepted: well inside every profile's tolerance.
const skewACK4 = time.Minute

// largeMarginACK7 is how far under the limit ACK-7's body stays: room for the
// limit being counted on the body alone or with a little framing.
const largeMarginACK7 = 1024

// bodyLimit is the largest body a receiver must accept on ep: the target's
// declared limit (else the 1 MiB default).
func (s *session) bodyLimit(ep Endpoint) int {
	if s.env.MaxBodyBytes > 0 {
		return s.env.MaxBodyBytes
	}
	return 1 << 20
}

// boundary builds one legitimate delivery at the edge of a limit or tolerance
// and returns the job that sends it and reads that it was applied once.
func (s *session) boundary(ep Endpoint, what string, sh simulator.Shape) func() {
	ev := s.storeEvent(ep)
	k := s.key(ep, ev)
	return func() {
		s.send(ep, ev, roleBoundary+what, sh)
		s.state(k, phaseBoundary, 1)
	}
}

// ackTimeout is the timeout ACK-2 holds ep to, and whether it is hookcert's
// model rather than a documented or declared value.
func (ep Endpoint) ackTimeout() (time.Duration, bool) {
	if ep.AckTimeout > 0 {
		return ep.AckTimeout, ep.AckTimeoutModel
	}
	if t := ep.Profile.Facts().Timeout; t != nil && *t > 0 {
		return *t, false
	}
	return 0, false
}

// badDelivery builds one invalid delivery now and returns the job that sends it
// and reads that it left nothing (under an empty event ID too, when the fault
// drops the ID: stored under an empty ID is stored all the same).
func (s *session) badDelivery(ep Endpoint, what string, f simulator.Faults) func() {
	ev := s.storeEvent(ep)
	k := s.key(ep, ev)
	return func() {
		s.send(ep, ev, roleBad+what, simulator.Shape{Faults: f})
		if s.objectVersion() {
			// The object: it must not take the key, nor be created, with or
			// without an event ID.
			s.states(phaseBad, 0, k)
			return
		}
		s.rows(k, phaseBad)
		s.effects(k, phaseBad)
		if f.MissingID {
			empty := k
			empty.EventID = ""
			s.rows(empty, phaseBad)
		}
	}
}

// control builds a valid delivery to ep now and returns the job that sends and
// reads it: the positive control of a rejection check. A receiver that refuses
// everything refuses bad input too, and must not pass for it.
func (s *session) control(ep Endpoint) func() {
	ev := s.storeEvent(ep)
	return func() {
		s.send(ep, ev, roleControl, simulator.Shape{})
		s.state(s.key(ep, ev), phaseControl, 1)
	}
}

// ack1Check reads, after a restart, every acknowledged event of evs, then
// redelivers every event — in flight at the kill or not: a provider resends
// both — and reads them again. A receiver that deduplicates in process memory
// applies the redelivery a second time.
func (s *session) ack1Check(evs []profiles.Event, recs []history.Attempt, ep Endpoint) {
	var ackedKeys, all []profiles.Key
	for i, ev := range evs {
		if acked(recs[i]) {
			ackedKeys = append(ackedKeys, s.key(ep, ev))
		}
		all = append(all, s.key(ep, ev))
	}
	s.states(phaseAfterRestart, 1, ackedKeys...)
	s.parallel(ep, evs, roleRedelivery, simulator.Shape{Attempt: 2})
	s.states(phaseAfterRedelivery, 1, all...)
}

// ack1Round sends perRoundACK1 events at once and SIGKILLs the receiver when the
// k-th acknowledgement arrives, k drawn from the seed, then restarts it.
func (s *session) ack1Round(ep Endpoint, round int) {
	// Every effect role takes part, in turn: each role's events must be
	// durable when acknowledged.
	rs := s.storeRoles()
	evs := make([]profiles.Event, perRoundACK1)
	for i := range evs {
		evs[i] = s.storeEventOf(ep, rs[i%len(rs)])
	}
	s.mu.Lock()
	kth := 1 + s.rng.IntN(perRoundACK1/2)
	s.mu.Unlock()
	var mu sync.Mutex
	acks, killed := 0, false
	var killErr error
	out, _ := s.deliver(ep, roleLoad, evs, simulator.Shape{}, 1, true, func(a history.Attempt) {
		if !acked(a) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if acks++; acks == kth && !killed {
			killed = true
			killErr = s.env.Controller.Kill()
		}
	})
	if killErr != nil {
		s.abort("killing the receiver: %v", killErr)
	}
	switch {
	case acks == 0:
		s.abort("round %d: none of %d deliveries was acknowledged, so there was no acknowledged event to kill after", round, len(evs))
	case !killed:
		// Fewer acknowledgements than drawn: kill after the last of them.
		if err := s.env.Controller.Kill(); err != nil {
			s.abort("killing the receiver: %v", err)
		}
		s.note("round %d: only %d acknowledgement(s) of %d wanted before the kill; killed after the last", round, acks, kth)
	default:
		s.note("round %d: SIGKILL on acknowledgement %d of %d deliveries (%d acknowledged in all)", round, kth, len(evs), acks)
	}
	s.restart()
	s.ack1Check(evs, out, ep)
}

func latencies(recs []history.Attempt) (p50, p99, max time.Duration) {
	if len(recs) == 0 {
		return
	}
	ds := make([]time.Duration, len(recs))
	for i, a := range recs {
		ds[i] = a.Duration()
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], ds[(len(ds)*99)/100], ds[len(ds)-1]
}

// formBody reports whether ep's provider sends application/x-www-form-urlencoded
// bodies (Twilio).
func formBody(ep Endpoint) bool {
	return strings.HasPrefix(strings.ToLower(ep.Profile.Facts().ContentType), "application/x-www-form-urlencoded")
}
