package mysqlstore

import (
	"strings"
	"testing"
	"time"
)

// mariaDBStatus is the transactions section as MariaDB 10.11 printed it with
// one session waiting for a gate's table (8377, holding the order row) and
// one waiting on that row in the optimizer's const-row read (8378).
const mariaDBStatus = `=====================================
2026-12-02 08:20:01 0x7f05 INNODB MONITOR OUTPUT
=====================================
------------
TRANSACTIONS
------------
Trx id counter 18612
Purge done for trx's n:o < 18605 undo n:o < 0 state: running
History list length 7
LIST OF TRANSACTIONS FOR EACH SESSION:
---TRANSACTION 18572, ACTIVE 1 sec starting index read
mysql tables in use 1, locked 1
LOCK WAIT 2 lock struct(s), heap size 1128, 1 row lock(s)
MariaDB thread id 8378, OS thread handle 130862895310528, query id 213383 127.0.0.1 root Statistics
SELECT * FROM o WHERE pi = ? FOR UPDATE
------- TRX HAS BEEN WAITING 1004684 us FOR THIS LOCK TO BE GRANTED:
RECORD LOCKS space id 637 page no 4 n bits 320 index pi of table ` + "`gx`.`o`" + ` trx id 18572 lock_mode X waiting
Record lock, heap no 2 PHYSICAL RECORD: n_fields 2; compact format; info bits 0
 0: len 4; hex 70695f31; asc pi_1;;
 1: len 4; hex 80000001; asc     ;;

------------------
---TRANSACTION 18571, ACTIVE 3 sec
3 lock struct(s), heap size 1128, 2 row lock(s)
MariaDB thread id 8377, OS thread handle 130862398543552, query id 213305 127.0.0.1 root Waiting for table metadata lock
INSERT INTO l (x) VALUES (?)
---TRANSACTION (0x7fd7839c1680), ACTIVE 0 sec
0 lock struct(s), heap size 1128, 0 row lock(s)
MariaDB thread id 12, OS thread handle 140563585025728, query id 133 localhost 127.0.0.1 root User sleep
SELECT SLEEP(2)
Trx read view will not see trx with id >= 31, sees < 31
---TRANSACTION (0x7f05000b9780), not started
mysql tables in use 1, locked 1
0 lock struct(s), heap size 1128, 0 row lock(s)
--------
FILE I/O
--------
Pending flushes (fsync): 0
---TRANSACTION 99, ACTIVE 5 sec
MariaDB thread id 5, OS thread handle 1, query id 1 localhost root
`

func TestParseInnoDBStatusMariaDB(t *testing.T) {
	now := time.Date(2026, 12, 2, 8, 20, 1, 500e6, time.UTC)
	st, err := parseInnoDBStatus(mariaDBStatus, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.trx) != 3 {
		t.Fatalf("got %d transactions, want 3 (8377, 8378, 12; not the unstarted one, nothing past the section): %+v", len(st.trx), st.trx)
	}
	w := st.trx[8378]
	if !w.lockWait || w.id != "18572" || !w.numbered || w.locks != 2 {
		t.Errorf("8378 = %+v, want a numbered lock wait 18572 with 2 lock structs", w)
	}
	if want := now.Add(-1004684 * time.Microsecond); !w.waitSince.Equal(want) {
		t.Errorf("8378 waits since %s, want %s", w.waitSince, want)
	}
	if want := now.Add(-time.Second); !w.started.Equal(want) {
		t.Errorf("8378 started %s, want %s", w.started, want)
	}
	g := st.trx[8377]
	if g.lockWait || g.locks != 3 || !g.waitSince.IsZero() || !g.started.Equal(now.Add(-3*time.Second)) {
		t.Errorf("8377 = %+v, want 3 lock structs, not waiting, 3 s old", g)
	}
	r := st.trx[12]
	if r.numbered || r.id != "(0x7fd7839c1680)" || r.locks != 0 {
		t.Errorf("12 = %+v, want an unnumbered transaction with no lock", r)
	}
	if !st.rootsWithin(map[int64]bool{8377: true}) {
		t.Error("the only transaction holding locks without waiting is 8377's: every wait ends there")
	}
	if st.rootsWithin(map[int64]bool{8378: true}) {
		t.Error("8377 holds locks and is not among own: not every wait ends at own")
	}
}

// mysqlStatus is MySQL 8's wording: "MySQL thread id", waits in SEC, and an
// unnumbered transaction printed as a number past 2^48.
const mysqlStatus = `LIST OF TRANSACTIONS FOR EACH SESSION:
---TRANSACTION 421908412345600, not started
0 lock struct(s), heap size 1128, 0 row lock(s)
---TRANSACTION 421908412346400, ACTIVE 7 sec
0 lock struct(s), heap size 1128, 0 row lock(s)
MySQL thread id 9, OS thread handle 1, query id 2 localhost root
---TRANSACTION 2331, ACTIVE 25 sec inserting
mysql tables in use 1, locked 1
LOCK WAIT 2 lock struct(s), heap size 1128, 1 row lock(s), undo log entries 1
MySQL thread id 10, OS thread handle 281473259138816, query id 274 192.168.97.0 root update
INSERT INTO t VALUES ('2017-12-1', 1)
------- TRX HAS BEEN WAITING 25 SEC FOR THIS LOCK TO BE GRANTED:
RECORD LOCKS space id 3 page no 5 n bits 72 index ftime of table ` + "`test`.`t`" + ` trx id 2331 lock_mode X insert intention waiting
---TRANSACTION 2330, ACTIVE 40 sec
ROLLING BACK 4 lock struct(s), heap size 1128, 9 row lock(s)
MySQL thread id 11, OS thread handle 2, query id 3 localhost root
--------
FILE I/O
--------
`

func TestParseInnoDBStatusMySQL(t *testing.T) {
	now := time.Now()
	st, err := parseInnoDBStatus(mysqlStatus, now)
	if err != nil {
		t.Fatal(err)
	}
	if r := st.trx[9]; r.numbered {
		t.Errorf("9 = %+v: a number past 2^48 is MySQL's stand-in, not a transaction number", r)
	}
	w := st.trx[10]
	if !w.lockWait || !w.numbered || !w.waitSince.Equal(now.Add(-25*time.Second)) {
		t.Errorf("10 = %+v, want a numbered wait of 25 s", w)
	}
	rb := st.trx[11]
	if rb.lockWait || rb.locks != 4 {
		t.Errorf("11 = %+v: a transaction rolling back holds its 4 lock structs and waits for none", rb)
	}
	if st.rootsWithin(map[int64]bool{10: true}) {
		t.Error("11, rolling back, still holds locks: it is a root outside own")
	}
}

func TestParseInnoDBStatusStatementText(t *testing.T) {
	// A statement's text comes after the thread line and may hold anything;
	// only a transaction header ends it.
	status := "LIST OF TRANSACTIONS FOR EACH SESSION:\n" +
		"---TRANSACTION 7, ACTIVE 2 sec\n" +
		"1 lock struct(s), heap size 1128, 0 row lock(s)\n" +
		"MariaDB thread id 3, OS thread handle 1, query id 2 localhost root Sending data\n" +
		"SELECT 'x'\n" +
		"LOCK WAIT 9 lock struct(s), heap size 1, 0 row lock(s)\n" +
		"MariaDB thread id 4, OS thread handle 1\n"
	st, err := parseInnoDBStatus(status, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.trx) != 1 {
		t.Fatalf("got %+v, want the one transaction of session 3", st.trx)
	}
	if tr := st.trx[3]; tr.lockWait || tr.locks != 1 {
		t.Errorf("3 = %+v: lines of its statement were read as its state", tr)
	}
}

func TestParseInnoDBStatusRefusals(t *testing.T) {
	if _, err := parseInnoDBStatus("=====\nBACKGROUND THREAD\n", time.Now()); err == nil || !strings.Contains(err.Error(), "no list of transactions") {
		t.Errorf("err = %v, want no list of transactions", err)
	}
	truncated := "LIST OF TRANSACTIONS FOR EACH SESSION:\n... truncated...\n---TRANSACTION 5, ACTIVE 1 sec\n"
	if _, err := parseInnoDBStatus(truncated, time.Now()); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("err = %v, want the truncation reported", err)
	}
	// A transaction holding locks with no session (recovered, XA prepared):
	// a root nobody owns.
	anon := "LIST OF TRANSACTIONS FOR EACH SESSION:\n---TRANSACTION 5, ACTIVE (PREPARED) 9 sec\n2 lock struct(s), heap size 1128, 1 row lock(s)\n" +
		"---TRANSACTION 6, ACTIVE 1 sec\n3 lock struct(s), heap size 1128, 1 row lock(s)\nMariaDB thread id 40, OS thread handle 1\n"
	st, err := parseInnoDBStatus(anon, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st.anonymous != 1 || st.rootsWithin(map[int64]bool{40: true}) {
		t.Errorf("anonymous = %d, roots within {40} = %v: want 1, false", st.anonymous, st.rootsWithin(map[int64]bool{40: true}))
	}
}

func TestSameTrx(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 10, 300e6, time.UTC)
	num := func(id string, at time.Time) innodbTrx { return innodbTrx{id: id, numbered: true, started: at} }
	anon := func(at time.Time) innodbTrx { return innodbTrx{id: "(0x1)", started: at} }
	for _, c := range []struct {
		name     string
		old, cur innodbTrx
		want     bool
	}{
		{"same number", num("40", t0), num("40", t0.Add(900*time.Millisecond)), true},
		{"a later number", num("40", t0), num("41", t0), false},
		{"numbered then none: a new one", num("40", t0), anon(t0), false},
		{"none then numbered within the second: the same, maybe", anon(t0), num("41", t0.Add(999*time.Millisecond)), true},
		{"none then one begun 2 s later", anon(t0), anon(t0.Add(2 * time.Second)), false},
	} {
		if got := sameTrx(c.old, c.cur); got != c.want {
			t.Errorf("%s: sameTrx = %v, want %v", c.name, got, c.want)
		}
	}
}
