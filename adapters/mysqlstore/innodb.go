package mysqlstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// InnoDB serves information_schema.INNODB_TRX, INNODB_LOCKS and
// INNODB_LOCK_WAITS from one cache, which it refills only when nobody has
// read it for 100 ms: a client polling faster reads the same old picture
// forever (an open transaction that ended long ago, none of the new ones).
// So this process reads those tables through one reader per server that
// leaves 110 ms between its reads, reuses a picture while the caller allows,
// and proves each picture fresh: before it waits out the 100 ms, it opens a
// transaction on a new session (START TRANSACTION WITH CONSISTENT SNAPSHOT
// starts one at once; a new session has an ID no older picture can list),
// and a picture that lists it was taken since. Another client reading the
// tables as fast can still hold the cache back; the reader then waits and
// tries again.
const (
	innodbCacheIdle = 110 * time.Millisecond
	// innodbStaleLimit bounds the wait for a fresh picture.
	innodbStaleLimit = 5 * time.Second
)

// InnoDBState is InnoDB's transactions at one moment.
type InnoDBState struct {
	// At is when the reading transaction began (this process's clock): the
	// picture is no older.
	At time.Time
	// Trx is when each session's open transaction began (by connection ID;
	// INNODB_TRX.trx_started, whole seconds). A session is listed from its
	// first read or write of an InnoDB table (or START TRANSACTION WITH
	// CONSISTENT SNAPSHOT), not from its BEGIN.
	Trx map[int64]time.Time
	// Waits are the sessions waiting on an InnoDB lock another holds
	// (INNODB_LOCK_WAITS on MariaDB, performance_schema.data_lock_waits on
	// MySQL 8).
	Waits []LockWait
}

// LockWait is one session waiting on an InnoDB lock another holds.
type LockWait struct{ Waiter, Blocker int64 }

type innodbReader struct {
	mu       sync.Mutex
	last     *InnoDBState
	lastRead time.Time
}

var innodbReaders = struct {
	sync.Mutex
	m map[string]*innodbReader
}{m: map[string]*innodbReader{}}

func readerFor(server string) *innodbReader {
	innodbReaders.Lock()
	defer innodbReaders.Unlock()
	r := innodbReaders.m[server]
	if r == nil {
		r = &innodbReader{}
		innodbReaders.m[server] = r
	}
	return r
}

// InnoDB returns InnoDB's transactions and lock waits as of notBefore or
// later (this process's clock). The fault tools read them through it, never
// information_schema.INNODB_TRX directly: polled faster than every 100 ms,
// the tables stop changing. A picture not older than notBefore is shared;
// a fresh one takes up to 110 ms (see above), longer when other clients
// read the tables too; past 5 s of stale pictures it gives up with an error
// that says why.
func (d *DB) InnoDB(ctx context.Context, notBefore time.Time) (*InnoDBState, error) {
	r := readerFor(d.server)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last != nil && !r.last.At.Before(notBefore) {
		return r.last, nil
	}
	deadline := time.Now().Add(innodbStaleLimit)
	idle := innodbCacheIdle
	for {
		s, fresh, err := d.readInnoDB(ctx, r.lastRead.Add(idle))
		r.lastRead = time.Now()
		if err != nil {
			return nil, fmt.Errorf("mysqlstore: InnoDB's transactions: %w", err)
		}
		if fresh {
			r.last = s
			return s, nil
		}
		// Stale: others read too. A random pause breaks a rhythm in which
		// their reads and this one's never leave the cache 100 ms alone.
		idle = innodbCacheIdle + time.Duration(rand.Int64N(int64(100*time.Millisecond)))
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("mysqlstore: InnoDB's transaction tables on %s stayed stale for %s: another client reads information_schema.INNODB_TRX more often than every 100 ms",
				d.where, innodbStaleLimit)
		}
	}
}

// readInnoDB reads the transactions and lock waits, not before readAt,
// inside a transaction of its own on a new session; fresh says the picture
// lists that transaction.
func (d *DB) readInnoDB(ctx context.Context, readAt time.Time) (*InnoDBState, bool, error) {
	c, err := d.canary.Conn(ctx)
	if err != nil {
		return nil, false, d.classify(ctx, err)
	}
	defer c.Close()
	var self int64
	if err := c.Raw(func(dc any) error { self = dc.(*conn).ConnID(); return nil }); err != nil {
		return nil, false, err
	}
	s := &InnoDBState{At: time.Now(), Trx: map[int64]time.Time{}}
	if _, err := c.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
		return nil, false, d.classify(ctx, err)
	}
	defer func() { _, _ = c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK") }()
	// Any refill from now on lists the transaction, whoever asks for it.
	if wait := time.Until(readAt); wait > 0 {
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(wait):
		}
	}
	rows, err := c.QueryContext(ctx, "SELECT trx_mysql_thread_id, COALESCE(UNIX_TIMESTAMP(trx_started), '') FROM information_schema.INNODB_TRX")
	if err != nil {
		return nil, false, d.classify(ctx, err)
	}
	for rows.Next() {
		var id int64
		var started string
		if err := rows.Scan(&id, &started); err != nil {
			rows.Close()
			return nil, false, err
		}
		s.Trx[id], _ = unixTime(started)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, d.classify(ctx, err)
	}
	// Read within 100 ms of the transactions: the same cache, so the same
	// moment. MySQL 8 moved lock waits to performance_schema (read live).
	q := `
		SELECT r.trx_mysql_thread_id, b.trx_mysql_thread_id
		FROM information_schema.INNODB_LOCK_WAITS w
		JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id AND r.trx_id <> '0'
		JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id AND b.trx_id <> '0'`
	if !d.mariaDB {
		q = `
		SELECT rt.PROCESSLIST_ID, bt.PROCESSLIST_ID
		FROM performance_schema.data_lock_waits w
		JOIN performance_schema.threads rt ON rt.THREAD_ID = w.REQUESTING_THREAD_ID
		JOIN performance_schema.threads bt ON bt.THREAD_ID = w.BLOCKING_THREAD_ID
		WHERE rt.PROCESSLIST_ID IS NOT NULL AND bt.PROCESSLIST_ID IS NOT NULL`
	}
	rows, err = c.QueryContext(ctx, q)
	if err != nil {
		return nil, false, d.classify(ctx, err)
	}
	defer rows.Close()
	for rows.Next() {
		var w LockWait
		if err := rows.Scan(&w.Waiter, &w.Blocker); err != nil {
			return nil, false, err
		}
		s.Waits = append(s.Waits, w)
	}
	if err := rows.Err(); err != nil {
		return nil, false, d.classify(ctx, err)
	}
	_, fresh := s.Trx[self]
	return s, fresh, nil
}
