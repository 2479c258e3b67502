package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookcert/hookcert/adapters/pgprovision/pgtest"
)

const testSecret = "acme_sk_test_0123456789abcdef0123456789abcdef"

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// sign is Acme's signature as its documentation gives it.
func sign(secret string, t time.Time, id string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	ts := strconv.FormatInt(t.Unix(), 10)
	mac.Write([]byte(ts + ":" + id + ":"))
	mac.Write(body)
	return "t=" + ts + ",s=" + hex.EncodeToString(mac.Sum(nil))
}

func TestVerify(t *testing.T) {
	body := []byte(`{"type":"credit.granted","created":1772366400,"data":{"id":"cr_1","amount":100,"currency":"usd"}}`)
	id := "evt_0123456789"
	good := sign(testSecret, now, id, body)
	for _, tc := range []struct {
		name   string
		defect Defect
		header string
		id     string
		body   []byte
		ok     bool
	}{
		{name: "valid", header: good, ok: true},
		{name: "4 minutes old", header: sign(testSecret, now.Add(-4*time.Minute), id, body), ok: true},
		{name: "4 minutes ahead", header: sign(testSecret, now.Add(4*time.Minute), id, body), ok: true},
		{name: "6 minutes old", header: sign(testSecret, now.Add(-6*time.Minute), id, body)},
		{name: "6 minutes ahead", header: sign(testSecret, now.Add(6*time.Minute), id, body)},
		{name: "another secret", header: sign("acme_sk_other", now, id, body)},
		{name: "event ID changed after signing", header: good, id: "evt_0123456788"},
		{name: "body changed after signing", header: good, body: bytes.Replace(body, []byte("100"), []byte("900"), 1)},
		{name: "timestamp changed after signing", header: "t=" + strconv.FormatInt(now.Unix()+1, 10) + good[len("t=1772366400"):]},
		{name: "signature truncated", header: good[:len(good)-8]},
		{name: "no signature", header: ""},
		{name: "stale-accepted takes an old timestamp", defect: DefectStaleAccepted, header: sign(testSecret, now.Add(-time.Hour), id, body), ok: true},
		{name: "stale-accepted still refuses the future", defect: DefectStaleAccepted, header: sign(testSecret, now.Add(time.Hour), id, body)},
		{name: "future-accepted takes a timestamp ahead", defect: DefectFutureAccepted, header: sign(testSecret, now.Add(time.Hour), id, body), ok: true},
		{name: "future-accepted still refuses the past", defect: DefectFutureAccepted, header: sign(testSecret, now.Add(-time.Hour), id, body)},
		{name: "signature-prefix takes a truncated signature", defect: DefectSignaturePrefix, header: good[:len(good)-8], ok: true},
		{name: "signature-prefix still refuses another secret", defect: DefectSignaturePrefix, header: sign("acme_sk_other", now, id, body)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewServer(nil, Config{Defect: tc.defect, Now: func() time.Time { return now }}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			gotID, gotBody := id, body
			if tc.id != "" {
				gotID = tc.id
			}
			if tc.body != nil {
				gotBody = tc.body
			}
			err := s.verify(tc.header, gotID, gotBody, []string{"acme_sk_rolled_out", testSecret})
			if (err == nil) != tc.ok {
				t.Errorf("verify = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// TestCopiesApplyOnce sends one event as concurrent copies to the receiver on
// a real PostgreSQL database: every copy is acknowledged, one row and one
// credit remain.
func TestCopiesApplyOnce(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	secrets := func(account string) []string {
		if account == "acct_alpha" {
			return []string{testSecret}
		}
		return nil
	}
	srv := httptest.NewServer(NewServer(pool, Config{Secrets: secrets}, slog.New(slog.NewTextHandler(io.Discard, nil))).Routes())
	defer srv.Close()
	body := []byte(`{"type":"credit.granted","created":1772366400,"data":{"id":"cr_1","wallet":"w_1","amount":250,"currency":"eur"}}`)
	const copies = 8
	statuses := make([]int, copies)
	var wg sync.WaitGroup
	for i := range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/acme/acct_alpha/events", bytes.NewReader(body))
			req.Header.Set(HeaderEventID, "evt_copies")
			req.Header.Set(HeaderSignature, sign(testSecret, time.Now(), "evt_copies", body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusOK {
			t.Errorf("copy %d: status %d, want 200", i, s)
		}
	}
	var events, credits int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM acme_events WHERE account = 'acct_alpha' AND event_id = 'evt_copies'),
		(SELECT count(*) FROM wallet_credits WHERE account = 'acct_alpha' AND event_id = 'evt_copies')`).Scan(&events, &credits); err != nil {
		t.Fatal(err)
	}
	if events != 1 || credits != 1 {
		t.Errorf("%d event rows and %d credits, want 1 and 1", events, credits)
	}
	// An unknown account's endpoint does not exist.
	resp, err := http.Post(srv.URL+"/acme/acct_nobody/events", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown account: status %d, want 404", resp.StatusCode)
	}
}
