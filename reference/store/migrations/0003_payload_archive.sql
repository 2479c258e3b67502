-- A copy of raw payloads kept apart from the event keys. Only the orphan-payloads
-- defect writes it (and its purge never reads it); a clean receiver leaves it empty.
-- It exists in every schema so that one harness query can look for a payload in
-- both places, whatever the receiver was started with.
CREATE TABLE IF NOT EXISTS webhook_payload_archive (
    source      text        NOT NULL,
    account_id  text        NOT NULL,
    event_id    text        NOT NULL,
    payload     bytea       NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS webhook_payload_archive_key
    ON webhook_payload_archive (source, account_id, event_id);
