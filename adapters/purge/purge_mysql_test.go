package purge

import (
	"context"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/mysqlstore"
	"github.com/hookcert/hookcert/adapters/mysqlstore/mysqltest"
	"github.com/hookcert/hookcert/adapters/sqlstore"
	"github.com/hookcert/hookcert/adapters/targetfile"
)

// TestSQLTriggerOnMySQL: retention.purge.sql on observe.mysql runs on the
// harness's sessions with the as-of time bound to $1 (a ? for the server):
// it removes what is older than that time, not what is newer.
func TestSQLTriggerOnMySQL(t *testing.T) {
	ctx := context.Background()
	db, err := mysqlstore.Open(ctx, mysqltest.Database(t), sqlstore.Timeouts{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Exec(ctx, "CREATE TABLE events (id VARCHAR(32) PRIMARY KEY, received_at DATETIME(6) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for id, at := range map[string]time.Time{"old": now.Add(-48 * time.Hour), "new": now} {
		if err := db.Exec(ctx, "INSERT INTO events VALUES ($1, $2)", id, at); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := New(ctx, targetfile.Purge{SQL: "DELETE FROM events WHERE received_at < $1 - INTERVAL 1 DAY"}, Options{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Purge(ctx, now); err != nil {
		t.Fatal(err)
	}
	r, err := db.Query(ctx, "SELECT id FROM events ORDER BY id")
	if err != nil || len(r.Values) != 1 || r.Values[0][0] != "new" {
		t.Errorf("after a purge as of now: %+v, %v; want only the new event", r.Values, err)
	}
	// As of two days on, the newer one is past the day too.
	if err := tr.Purge(ctx, now.Add(48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if r, _ := db.Query(ctx, "SELECT COUNT(*) FROM events"); len(r.Values) != 1 || r.Values[0][0] != int64(0) {
		t.Errorf("after a purge two days on: %+v, want none left", r.Values)
	}
}
