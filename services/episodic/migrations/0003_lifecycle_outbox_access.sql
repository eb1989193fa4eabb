-- Banks and sessions, the turn and episode life cycle (supersede, archive), episode segments and
-- dedup, the outbox that hands writes to the other layers, and access statistics (the meta-memory).

CREATE TABLE IF NOT EXISTS banks (
    bank_id    text        PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO banks (bank_id)
    SELECT bank_id FROM turns UNION SELECT bank_id FROM episodes
    ON CONFLICT DO NOTHING;

CREATE TABLE IF NOT EXISTS sessions (
    bank_id      text        NOT NULL,
    session_id   text        NOT NULL,
    first_at     timestamptz NOT NULL,
    last_at      timestamptz NOT NULL,
    -- The newest turn (time, id) already inside a closed segment: segmentation resumes after it.
    segmented_at timestamptz,
    segmented_id text        NOT NULL DEFAULT '',
    PRIMARY KEY (bank_id, session_id)
);
INSERT INTO sessions (bank_id, session_id, first_at, last_at)
    SELECT bank_id, session_id, min(occurred_at), max(occurred_at) FROM turns GROUP BY bank_id, session_id
    ON CONFLICT DO NOTHING;

-- A turn replaced by UpdateTurn is archived and names its successor.
ALTER TABLE turns ADD COLUMN IF NOT EXISTS superseded_by text;
CREATE INDEX IF NOT EXISTS turns_bank_session_occurred_idx ON turns (bank_id, session_id, occurred_at, id);

ALTER TABLE episodes ADD COLUMN IF NOT EXISTS started_at   timestamptz;
ALTER TABLE episodes ADD COLUMN IF NOT EXISTS ended_at     timestamptz;
-- 'written' (WriteEpisode), 'similarity' or 'llm' (segmentation).
ALTER TABLE episodes ADD COLUMN IF NOT EXISTS method       text    NOT NULL DEFAULT 'written';
-- Normalised situation + action: an episode with the same key merges into the stored one.
ALTER TABLE episodes ADD COLUMN IF NOT EXISTS dedup_key    text    NOT NULL DEFAULT '';
ALTER TABLE episodes ADD COLUMN IF NOT EXISTS merged_count integer NOT NULL DEFAULT 1;
ALTER TABLE episodes ADD COLUMN IF NOT EXISTS archived_at  timestamptz;
CREATE INDEX IF NOT EXISTS episodes_bank_dedup_idx ON episodes (bank_id, dedup_key) WHERE dedup_key <> '';
CREATE INDEX IF NOT EXISTS episodes_bank_task_type_idx ON episodes (bank_id, task_type);
CREATE INDEX IF NOT EXISTS episodes_tools_idx ON episodes USING gin (tools);
CREATE INDEX IF NOT EXISTS episodes_tags_idx ON episodes USING gin (tags);

-- Work for the other layers, written in the same transaction as the record it is about and deleted
-- once delivered. 'sync' makes the target match the record's current state (index it when live,
-- delete it when archived or gone); 'purge' carries a delete request in payload.
CREATE TABLE IF NOT EXISTS outbox (
    id              bigserial   PRIMARY KEY,
    bank_id         text        NOT NULL,
    target          text        NOT NULL,
    operation       text        NOT NULL,
    record_kind     text        NOT NULL DEFAULT '',
    record_id       text        NOT NULL DEFAULT '',
    payload         jsonb       NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now(),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text        NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS outbox_due_idx ON outbox (next_attempt_at, id);
CREATE INDEX IF NOT EXISTS outbox_bank_record_idx ON outbox (bank_id, record_id);
CREATE INDEX IF NOT EXISTS outbox_bank_target_idx ON outbox (bank_id, target, id);

-- Entries delivered so far, per bank and target (the delivered rows themselves are deleted).
CREATE TABLE IF NOT EXISTS outbox_delivered (
    bank_id text   NOT NULL,
    target  text   NOT NULL,
    count   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (bank_id, target)
);

-- How often recall returned a record of any layer, when last, and its freshness as of freshness_at.
CREATE TABLE IF NOT EXISTS access_stats (
    bank_id      text             NOT NULL,
    layer        text             NOT NULL,
    id           text             NOT NULL,
    hit_count    bigint           NOT NULL DEFAULT 0,
    last_hit     timestamptz      NOT NULL,
    freshness    double precision NOT NULL,
    freshness_at timestamptz      NOT NULL,
    PRIMARY KEY (bank_id, layer, id)
);
CREATE INDEX IF NOT EXISTS access_stats_bank_id_idx ON access_stats (bank_id, id);
