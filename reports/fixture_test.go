package reports

import "time"

// fixture is a deterministic run with every verdict, concurrent copies, lost-ack
// attempts with an unknown outcome, an attempt that never finished, and evidence with
// characters every format must escape.
func fixture() *Results {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ms := int64(time.Millisecond)
	us := int64(time.Microsecond)
	gs := []Guarantee{
		{
			ID: "DEDUP-1", Family: "DEDUP", Title: "Concurrent duplicates converge",
			Promise: "N concurrent copies of one event leave one row and one effect, and every copy gets a 2xx",
			Status:  StatusFailed,
			Reason:  "2 ledger entries for evt_1 (want 1) | copy 3 answered 500",
			Evidence: []string{
				`effects(stripe, acct_A, evt_1) = 2, want 1`,
				`copy 3: HTTP 500 body {"status":"retry","reason":"duplicate key <pk> & \"retry\""}`,
				"multi-line evidence\nsecond line | with a pipe",
				"a ``` fence and <script>alert(1)</script> in evidence",
			},
			Codes:      []string{"dedup.effects", "dedup.not_acked"},
			DurationMS: 1234,
			Repro:      "hookcert repro DEDUP-1 --seed 42 --config target.yaml",
			Race:       &Race{Forced: true, How: "lock gate on ledger_entries held 4 of 4 sessions"},
			Scenarios: []Scenario{{
				Name:   "4 copies released together behind a lock gate",
				Status: StatusFailed,
				Deviations: []string{
					"effects = 2, want 1",
					"copy 3 not acknowledged: 500",
				},
				Timeline: []Attempt{
					{EventID: "evt_1", EventType: "charge.succeeded", Attempt: 1, Copy: 1, StartNS: 10 * ms, EndNS: 10*ms + 180*ms, HTTPStatus: 200, Outcome: OutcomeAcknowledged, Faults: []string{"barrier", "lock-gate"}, DeliveryID: "d-0001"},
					{EventID: "evt_1", EventType: "charge.succeeded", Attempt: 1, Copy: 2, StartNS: 10*ms + 12*us, EndNS: 10*ms + 181*ms, HTTPStatus: 200, Outcome: OutcomeAcknowledged, Faults: []string{"barrier", "lock-gate"}, DeliveryID: "d-0002"},
					{EventID: "evt_1", EventType: "charge.succeeded", Attempt: 1, Copy: 3, StartNS: 10*ms + 30*us, EndNS: 10*ms + 182*ms, HTTPStatus: 500, Outcome: OutcomeFailed, Faults: []string{"barrier", "lock-gate"}, DeliveryID: "d-0003"},
					{EventID: "evt_1", EventType: "charge.succeeded", Attempt: 1, Copy: 4, StartNS: 10*ms + 43*us, EndNS: 10*ms + 182*ms + 500*us, HTTPStatus: 200, Outcome: OutcomeAcknowledged, Faults: []string{"barrier", "lock-gate"}, DeliveryID: "d-0004"},
					{EventID: "evt_1", EventType: "charge.succeeded", Attempt: 2, Copy: 0, StartNS: 260 * ms, EndNS: 262 * ms, HTTPStatus: 200, Outcome: OutcomeAcknowledged, Faults: []string{"redelivery"}, DeliveryID: "d-0005"},
				},
				Observed: []Observation{
					{Query: "event_rows", Key: "stripe/acct_A/evt_1", Values: []string{"1"}, AtNS: 300 * ms},
					{Query: "effects", Key: "stripe/acct_A/evt_1", Values: []string{"2"}, AtNS: 301 * ms},
					{Query: "object", Key: "stripe/acct_A/cbtxn_1", Values: []string{"version=1", "status=<none>"}, AtNS: 302 * ms},
				},
				Notes: []string{"release spread 43µs", "lock gate: 4 waiters"},
			}},
		},
		{
			ID: "DEDUP-2", Family: "DEDUP", Title: "Redelivery after a lost acknowledgement",
			Promise: "a redelivery after a lost 2xx changes nothing and is acknowledged",
			Status:  StatusPassed, DurationMS: 2210,
			Repro: "hookcert repro DEDUP-2 --seed 42 --config target.yaml",
			Scenarios: []Scenario{{
				Name: "ack lost twice, then delivered", Status: StatusPassed,
				Timeline: []Attempt{
					{EventID: "evt_2", Attempt: 1, StartNS: 400 * ms, EndNS: 430 * ms, Outcome: OutcomeUnknown, Faults: []string{"lost-ack"}, ErrorClass: "response_discarded", DeliveryID: "d-0006"},
					{EventID: "evt_2", Attempt: 2, StartNS: 900 * ms, EndNS: 925 * ms, Outcome: OutcomeUnknown, Faults: []string{"lost-ack"}, ErrorClass: "response_discarded", DeliveryID: "d-0007"},
					{EventID: "evt_2", Attempt: 3, StartNS: 1900 * ms, EndNS: 1912 * ms, HTTPStatus: 200, Outcome: OutcomeAcknowledged, DeliveryID: "d-0008"},
				},
				Observed: []Observation{
					{Query: "event_rows", Key: "stripe/acct_A/evt_2", Values: []string{"1"}, AtNS: 1950 * ms},
					{Query: "effects", Key: "stripe/acct_A/evt_2", Values: []string{"1"}, AtNS: 1951 * ms},
				},
				Notes: []string{"responses 1 and 2 were read and discarded"},
			}},
		},
		{
			ID: "ATOMIC-1", Family: "ATOMIC", Title: "Crash before commit leaves nothing",
			Promise: "a crash after insert and before commit leaves neither key nor change",
			Status:  StatusError,
			Reason:  "receiver did not become ready within 10s after restart",
			Evidence: []string{
				"health check http://127.0.0.1:8080/healthz: connection refused (x20)",
			},
			DurationMS: 10480,
			Repro:      "hookcert repro ATOMIC-1 --seed 42 --config target.yaml",
			Scenarios: []Scenario{{
				Name: "SIGKILL while the insert waits", Status: StatusError,
				Timeline: []Attempt{
					{EventID: "evt_3", Attempt: 1, StartNS: 2000 * ms, EndNS: 0, Outcome: OutcomeUnknown, Faults: []string{"kill"}, ErrorClass: "connection_reset", DeliveryID: "d-0009"},
					{EventID: "evt_3", Attempt: 2, StartNS: 2600 * ms, EndNS: 2601 * ms, Outcome: OutcomeFailed, ErrorClass: "connection_refused", DeliveryID: "d-0010"},
				},
			}},
		},
		{
			ID: "ORDER-1", Family: "ORDER", Title: "Late older update does not regress",
			Promise: "an older version arriving late leaves the object at its newest version",
			Status:  StatusPassed, DurationMS: 312,
			Repro: "hookcert repro ORDER-1 --seed 42 --config target.yaml",
			Scenarios: []Scenario{{
				Name: "versions 1..3 delivered as 3, 1, 2", Status: StatusPassed,
				Timeline: []Attempt{
					{EventID: "evt_sub_v3", Attempt: 1, StartNS: 3000 * ms, EndNS: 3004 * ms, HTTPStatus: 200, Outcome: OutcomeAcknowledged},
					{EventID: "evt_sub_v1", Attempt: 1, StartNS: 3005 * ms, EndNS: 3007 * ms, HTTPStatus: 200, Outcome: OutcomeAcknowledged, Faults: []string{"out-of-order"}},
					{EventID: "evt_sub_v2", Attempt: 1, StartNS: 3008 * ms, EndNS: 3010 * ms, HTTPStatus: 200, Outcome: OutcomeAcknowledged, Faults: []string{"out-of-order"}},
				},
				Observed: []Observation{
					{Query: "object", Key: "stripe/acct_A/sub_1", Values: []string{"version=3", "status=active"}, AtNS: 3020 * ms},
				},
			}},
		},
		{
			ID: "INBOX-1", Family: "INBOX", Title: "Exactly once across competing workers",
			Promise: "an event accepted into the inbox is processed once by competing workers",
			Status:  StatusNotApplicable,
			Reason:  `target does not declare capability "inbox"`,
		},
		{
			ID: "DEDUP-3", Family: "DEDUP", Title: "Duplicates under load",
			Promise:    "concurrent copies among other traffic still leave one row each",
			Status:     StatusFailed,
			Reason:     "1 deviation(s) from the promise; first: event rows of evt_4 = 2, want 1",
			Evidence:   []string{"event rows of evt_4 = 2, want 1"},
			Codes:      []string{"dedup.rows"},
			Race:       &Race{How: "no lock gating declared: 2 copies met by timing alone"},
			DurationMS: 640,
			Repro:      "hookcert repro DEDUP-3 --seed 42 --config target.yaml",
			Scenarios: []Scenario{{
				Name: "2 copies among other events", Status: StatusFailed,
				Deviations: []string{"event rows of evt_4 = 2, want 1"}, Codes: []string{"dedup.rows"},
				Timeline: []Attempt{
					{EventID: "evt_5", EventType: "customer.updated", Attempt: 1, StartNS: 3100 * ms, EndNS: 3103 * ms, HTTPStatus: 200, Outcome: OutcomeAcknowledged},
					{EventID: "evt_4", EventType: "charge.refunded", Attempt: 1, Copy: 1, StartNS: 3104 * ms, EndNS: 3110 * ms, HTTPStatus: 200, Outcome: OutcomeAcknowledged, Faults: []string{"barrier"}},
					{EventID: "evt_4", EventType: "charge.refunded", Attempt: 1, Copy: 2, StartNS: 3104*ms + 31*us, EndNS: 3111 * ms, HTTPStatus: 200, Outcome: OutcomeAcknowledged, Faults: []string{"barrier"}},
				},
				Observed: []Observation{
					{Query: "event_rows", Key: "(stripe, acct_A, evt_4)", Values: []string{"2"}, AtNS: 3120 * ms},
					{Query: "inbox_state", Key: "(stripe, acct_A, evt_4)", Values: []string{`state="done"`, "attempts=1"}, AtNS: 3121 * ms},
				},
			}},
		},
	}
	return &Results{
		Schema:     Schema,
		Tool:       ToolInfo{Name: "hookcert", Version: "v0.1.0-test"},
		RunID:      "run-20261130-120000-42",
		Seed:       42,
		StartedAt:  start,
		FinishedAt: start.Add(14 * time.Second),
		DurationMS: 14000,
		Target: TargetInfo{
			Name:    "reference (defect double-apply)",
			BaseURL: "http://127.0.0.1:8080",
			Endpoints: []EndpointInfo{
				{Profile: "stripe", Account: "acct_A", Path: "/webhooks/stripe/acct_A"},
				{Profile: "stripe", Account: "acct_B", Path: "/webhooks/stripe/acct_B"},
			},
			Capabilities: []string{"crash", "lock-gating", "ordering"},
		},
		Profiles:    []string{"stripe"},
		Summary:     Summarize(gs),
		Guarantees:  gs,
		Environment: map[string]string{"go": "go1.26.8", "database": "local cluster (initdb)", "os": "linux/amd64"},
	}
}
