-- A deleted customer keeps its row as a tombstone: the deletion's created
-- becomes last_event_at, so an older customer.updated that arrives late is
-- ignored like any other stale update instead of recreating the customer.
ALTER TABLE customers ADD COLUMN IF NOT EXISTS deleted_at timestamptz;
