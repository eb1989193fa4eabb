-- Sharing: a copy of a record written into another bank (a team bank) remembers what it was drawn from, so
-- that a purge there reaches it. Ids, banks and agents only, never text (the copy holds the text).
CREATE TABLE IF NOT EXISTS shared_copies (
    bank_id         text        NOT NULL,                -- the bank holding the copy
    id              text        NOT NULL,                -- the copy there: a turn or an episode
    kind            text        NOT NULL,                -- 'turn' or 'episode'
    source_bank_id  text        NOT NULL,
    source_id       text        NOT NULL,                -- the record shared
    source_kind     text        NOT NULL,                -- 'turn', 'episode', 'fact' or 'lesson'
    lineage_ids     text[]      NOT NULL,                -- source-bank ids whose purge takes the copy
    source_agent    text        NOT NULL DEFAULT '',     -- who wrote the record shared
    agent           text        NOT NULL DEFAULT '',     -- who shared it
    shared_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, id)
);

-- A purge finds the copies of its records by these.
CREATE INDEX IF NOT EXISTS shared_copies_source_idx ON shared_copies (source_bank_id);
CREATE INDEX IF NOT EXISTS shared_copies_lineage_idx ON shared_copies USING gin (lineage_ids);
