package main

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/hookcert/hookcert/scenarios/hookcerttest"
)

// TestCertifiedInGoTest certifies the shop from inside go test: target.yaml,
// as `hookcert certify` reads it, with the shop's server running in this
// process in place of the file's lifecycle, killed and restarted by the crash
// guarantees (ATOMIC-1, ACK-1) as SIGKILL and a supervisor would.
func TestCertifiedInGoTest(t *testing.T) {
	db := testDatabase(t)
	hookcerttest.RunFile(t, "target.yaml", hookcerttest.WithDatabaseURL(db), hookcerttest.WithGeneratedSecrets(),
		hookcerttest.WithReceiver(func(ctx context.Context, inc *hookcerttest.Incarnation) (http.Handler, error) {
			pool, err := inc.Pool(ctx, db)
			if err != nil {
				return nil, err
			}
			return newHandler(ctx, pool, Config{}, slog.New(slog.DiscardHandler))
		}),
		hookcerttest.WithPurge(func(ctx context.Context, asOf time.Time) error {
			_, err := purgeDatabase(ctx, db, asOf, DefaultKeyTTL, DefaultPayloadTTL)
			return err
		}))
}
