-- The outbox never wedges: each entry backs off on its own, and an entry a target refused for good
-- (a malformed or oversized record) leaves the outbox for the dead-letter list after a bounded number
-- of attempts, so the entries written after it are delivered.

-- How the last failed attempt failed: 'transient' (the target was down, slow or busy) or 'refused'
-- (the target will not take this entry as it is); empty before the first failure.
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS failure text NOT NULL DEFAULT '';

-- Entries moved out of the outbox, with everything needed to queue them again (same columns).
CREATE TABLE IF NOT EXISTS outbox_dead_letters (
    id          bigint      PRIMARY KEY,
    bank_id     text        NOT NULL,
    target      text        NOT NULL,
    operation   text        NOT NULL,
    record_kind text        NOT NULL DEFAULT '',
    record_id   text        NOT NULL DEFAULT '',
    payload     jsonb       NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL,
    attempts    integer     NOT NULL,
    last_error  text        NOT NULL DEFAULT '',
    dead_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS outbox_dead_letters_bank_idx ON outbox_dead_letters (bank_id, id);
