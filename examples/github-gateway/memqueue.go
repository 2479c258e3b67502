package main

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The memory-queue defect: a write-behind buffer in front of the inbox, the
// kind added to take the database off the request path. Deliveries are
// acknowledged once buffered and written in batches; whatever is buffered when
// the process dies was acknowledged and is lost.
const (
	memQueueSize  = 10000
	memFlushEvery = 250 * time.Millisecond
	memBatch      = 500
)

type memQueue struct {
	g  *Gateway
	ch chan delivery
}

func newMemQueue(g *Gateway) *memQueue {
	return &memQueue{g: g, ch: make(chan delivery, memQueueSize)}
}

// put buffers d; false when the buffer is full.
func (q *memQueue) put(d delivery) bool {
	select {
	case q.ch <- d:
		return true
	default:
		return false
	}
}

// run flushes the buffer every memFlushEvery until stop, then once more (a
// graceful stop keeps what was buffered; only a crash loses it).
func (q *memQueue) run(stop <-chan struct{}) {
	tick := time.NewTicker(memFlushEvery)
	defer tick.Stop()
	var pending []delivery
	for {
		select {
		case <-stop:
			pending = q.drain(pending)
			for len(pending) > 0 {
				n := min(len(pending), memBatch)
				if err := q.flush(pending[:n]); err != nil {
					q.g.log.Error("memory queue: deliveries lost at shutdown", "count", len(pending), "err", err)
					return
				}
				pending = pending[n:]
			}
			return
		case <-tick.C:
			pending = q.drain(pending)
			for len(pending) > 0 {
				n := min(len(pending), memBatch)
				if err := q.flush(pending[:n]); err != nil {
					q.g.log.Warn("memory queue: flush failed, keeping the batch", "count", len(pending), "err", err)
					break
				}
				pending = pending[n:]
			}
		}
	}
}

func (q *memQueue) drain(pending []delivery) []delivery {
	for {
		select {
		case d := <-q.ch:
			pending = append(pending, d)
		default:
			return pending
		}
	}
}

// flush writes one batch to the inbox in one transaction and wakes the workers.
func (q *memQueue) flush(batch []delivery) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := pgx.BeginFunc(ctx, q.g.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, d := range batch {
			b.Queue(`INSERT INTO inbox (delivery_id, event, payload) VALUES ($1, $2, $3::jsonb)`, d.id, d.event, string(d.payload))
		}
		return tx.SendBatch(ctx, b).Close()
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Code, "22") {
		// One payload the database refuses (jsonb and \u0000) must not hold
		// back the others: write them one by one and drop the refused ones.
		for _, d := range batch {
			if err := q.g.enqueue(ctx, d); err != nil {
				q.g.log.Error("memory queue: delivery dropped", "delivery", d.id, "event", d.event, "err", err)
			}
		}
		err = nil
	}
	if err != nil {
		return err
	}
	for range min(len(batch), maxWorkers) {
		q.g.nudge()
	}
	return nil
}
