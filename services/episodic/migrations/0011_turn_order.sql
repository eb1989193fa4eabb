-- The order of turns within a session as they were written: turns of one session often share their time
-- (a chat's messages stamped with the session's date), and the turn a reply answers is the one just before
-- it. A retain gives its turns numbers in the order of the request; other writes take the next number.
CREATE SEQUENCE IF NOT EXISTS turns_seq;
ALTER TABLE turns ADD COLUMN IF NOT EXISTS seq bigint NOT NULL DEFAULT nextval('turns_seq');

-- The turn just before a turn in its session (the outbox sends it with the turn to semantic memory).
CREATE INDEX IF NOT EXISTS turns_session_order_idx ON turns (bank_id, session_id, occurred_at, seq)
    WHERE archived_at IS NULL;
