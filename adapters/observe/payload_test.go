package observe

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestPayloadPresent(t *testing.T) {
	ctx, dbURL := setup(t)
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `ALTER TABLE processed_webhook_events ADD COLUMN payload bytea;
		UPDATE processed_webhook_events SET payload = 'x' WHERE account_id = 'acct_A'`); err != nil {
		t.Fatal(err)
	}
	_ = c.Close(ctx)

	plain, err := Open(ctx, dbURL, queries)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := plain.PayloadPresent(ctx, Key{EventID: "evt_1"}); !errors.Is(err, ErrNotConfigured) {
		t.Errorf("without the query: %v, want ErrNotConfigured", err)
	}
	plain.Close()

	q := queries
	q.PayloadPresent = "SELECT payload, event_id FROM processed_webhook_events WHERE event_id=$3"
	if _, err := Open(ctx, dbURL, q); err == nil || !strings.Contains(err.Error(), "payload_present: must return 1 column(s) (present)") {
		t.Errorf("two columns: %v", err)
	}
	q.PayloadPresent = "SELECT payload IS NOT NULL FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3"
	o, err := Open(ctx, dbURL, q)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for _, c := range []struct {
		k              Key
		present, found bool
	}{
		{Key{Source: "stripe", Account: "acct_A", EventID: "evt_1"}, true, true},
		{Key{Source: "stripe", Account: "acct_B", EventID: "evt_1"}, false, true}, // payload purged, key kept
		{Key{Source: "stripe", Account: "acct_A", EventID: "evt_gone"}, false, false},
	} {
		present, found, err := o.PayloadPresent(ctx, c.k)
		if err != nil || present != c.present || found != c.found {
			t.Errorf("PayloadPresent(%v) = %v, %v, %v; want %v, %v", c.k, present, found, err, c.present, c.found)
		}
	}
}
