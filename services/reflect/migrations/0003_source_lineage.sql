-- What the lessons' sources became in episodic memory: purged (for good) or archived (recoverable).

-- Tombstones of purged sources (turn and episode ids; never text): a lesson written after a purge (a
-- reflection that read its episodes before the purge, an import) does not cite them, and a lesson that
-- cites nothing else is not stored.
CREATE TABLE purged_sources (
    bank_id    text        NOT NULL,
    source_id  text        NOT NULL,
    purged_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, source_id)
);

-- Source turns archived (forgotten, recoverable) in episodic memory: a lesson whose every source turn is
-- here is kept but neither listed nor found, until one of them is restored.
CREATE TABLE archived_sources (
    bank_id    text        NOT NULL,
    source_id  text        NOT NULL,
    PRIMARY KEY (bank_id, source_id)
);

-- A purge finds the lessons citing its ids through these.
CREATE INDEX lessons_source_episodes_idx ON lessons USING gin (source_episode_ids);
CREATE INDEX lessons_source_turns_idx ON lessons USING gin (source_turn_ids);

-- How many times each bank was purged whole: a reflection notes it before reading episodes and writes no
-- lesson when it changed meanwhile (the episodes it read are gone; their ids left no tombstone here).
CREATE TABLE bank_purges (
    bank_id     text   PRIMARY KEY,
    generation  bigint NOT NULL
);
