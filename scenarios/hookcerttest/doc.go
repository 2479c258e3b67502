// Package hookcerttest runs the hookcert conformance suite inside a Go test,
// against a receiver the test runs itself (an httptest.Server, a receiver
// started in the same process) or reaches at a URL, the way watermill's
// tests.TestPubSub and River's riverdrivertest.Exercise run a conformance
// suite against a driver.
//
//	func TestWebhooks(t *testing.T) {
//		srv := httptest.NewServer(myReceiver)
//		defer srv.Close()
//		hookcerttest.Run(t, hookcerttest.Target{
//			BaseURL:     srv.URL,
//			Endpoints:   []hookcerttest.Endpoint{{Profile: "stripe", Account: "acct_A", Path: "/webhooks/stripe", Secret: secret}},
//			DatabaseURL: dbURL,
//			EventTable:  "processed_webhook_events",
//			Queries: hookcerttest.Queries{
//				EventRows: "SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3",
//				Effects:   "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3",
//			},
//			Capabilities: []string{"lock-gating"},
//		})
//	}
//
// Each guarantee is a subtest named by its ID (go test -run 'TestWebhooks/DEDUP'
// runs the DEDUP family only): it fails with every deviation found, is skipped
// with the reason when the target does not declare what it needs, and fails
// with the harness's reason when it could not be judged.
//
// The fields of Target are those of a target file (docs/target.md), written in
// Go. A Target is rendered as the file it stands for and checked by the
// file loader's own rules — its errors name the Go fields — then assembled by
// the composition root hookcert certify uses (package harness), so every
// guarantee the CLI reaches is reached here: a Lifecycle starts the receiver
// and its worker processes, Inbox and Outbox declare its asynchronous work, and
// the harness's downstream sink is {{.SinkURL}}. Crash hooks (Kill, Restart)
// take the place of a Lifecycle for a receiver the test runs itself.
//
// The package pulls in no container runtime: it never provisions a database.
// The test brings its own (a throwaway database on a local server, say).
package hookcerttest
