// Package hookcerttest runs the hookcert conformance suite inside a Go test,
// one subtest per guarantee, against the same target file `hookcert certify`
// certifies, the way watermill's tests.TestPubSub and River's
// riverdrivertest.Exercise run a conformance suite against a driver.
//
// # The short form
//
// A receiver written in Go is certified in its own package's tests, crashes
// included, from the team's target.yaml:
//
//	func TestWebhooks(t *testing.T) {
//		db := hookcerttest.Database(t, "") // a throwaway database on $HOOKCERT_TEST_DATABASE_URL
//		hookcerttest.RunFile(t, "target.yaml",
//			hookcerttest.WithDatabaseURL(db),        // the file's {{.DatabaseURL}}
//			hookcerttest.WithGeneratedSecrets(),     // a fresh secret in each endpoint's secret_env
//			hookcerttest.WithReceiver(func(ctx context.Context, inc *hookcerttest.Incarnation) (http.Handler, error) {
//				pool, err := inc.Pool(ctx, db) // dies with this incarnation
//				if err != nil {
//					return nil, err
//				}
//				return myreceiver.New(pool).Routes(), nil
//			}))
//	}
//
// The file is checked by the loader the CLI uses: its errors name the file,
// its fields and lines. WithReceiver serves the receiver in the test process
// at the file's base_url in place of its lifecycle; the crash guarantees
// (ATOMIC-1, ACK-1, …) kill it and the harness restarts it, a new incarnation
// built by the same function. Without WithReceiver the file's lifecycle runs
// as under the CLI, as a process. examples/stripe-shop/library_test.go
// certifies a Stripe receiver this way in 17 lines.
//
// What the CLI would provide, the test does: WithDatabaseURL (hookcerttest
// never provisions a database: the test makes one, with Database or its own
// helper), WithEnv and WithGeneratedSecrets (the variables the file reads,
// set with t.Setenv, so not in a parallel test). WithPurge replaces the
// file's retention.purge with Go. Whatever the file declares that the test's
// options cannot run is refused, naming the option and the field: worker
// processes (lifecycle.worker) beside an in-process receiver, a base_url off
// loopback, a database URL for a file that names its own.
//
// # Crashing a receiver in the test process
//
// Receiver is the crash helper, usable on its own (StartReceiver) or through
// WithReceiver. A Factory builds one incarnation of the receiver, as one
// process would be; the Receiver serves it at a fixed loopback address, so a
// restart comes back at the same URL. Kill acts as SIGKILL would: the
// listener and every connection close, the incarnation's database sessions
// (each incarnation has its own application_name) are terminated, so no
// transaction in flight commits, and no new session of it can open; its
// Context ends, and handlers still running only fail. The sessions it gets
// from Incarnation.Pool, Incarnation.PoolWithConfig or Incarnation.SQLDB are
// the ones that die with it: a receiver must open its database through them.
// Incarnation.Kill is how a receiver crashes itself (an armed failpoint).
//
// # The Go form
//
// Run takes the target as a Go value instead of a file:
//
//	hookcerttest.Run(t, hookcerttest.Target{
//		BaseURL:     recv.URL(),
//		Endpoints:   []hookcerttest.Endpoint{{Profile: "stripe", Account: "acct_A", Path: "/webhooks/stripe", Secret: secret}},
//		DatabaseURL: db,
//		EventTable:  "processed_webhook_events",
//		Queries: hookcerttest.Queries{
//			EventRows: "SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3",
//			Effects:   "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3",
//		},
//		Kill: recv.Kill, Restart: recv.Restart, Alive: recv.Alive,
//		Capabilities: []string{"crash", "lock-gating"},
//	})
//
// The fields of Target are those of a target file (docs/target.md), written in
// Go. A Target is rendered as the file it stands for and checked by the file
// loader's own rules — its errors name the Go fields — then assembled by the
// same composition root as RunFile and hookcert certify (package harness), so
// every guarantee the CLI reaches is reached here: a Lifecycle starts the
// receiver and its worker processes, Inbox and Outbox declare its asynchronous
// work, and the harness's downstream sink is {{.SinkURL}}.
//
// # Verdicts
//
// Each guarantee is a subtest named by its ID (go test -run 'TestWebhooks/DEDUP'
// runs the DEDUP family only): it fails with every deviation found and the
// command that replays it, is skipped with the reason when the target does not
// declare what it needs, and fails with the harness's reason when it could not
// be judged. WithSeed (else $HOOKCERT_SEED, else random, always logged) replays
// a run; WithReportDir writes the CLI's reports; OnResults hands over the
// judged results.
//
// The package pulls in no container runtime (make lint checks it).
package hookcerttest
