-- Lesson life cycle (freshness, archive, merge, supersede), the stance used to find contradictions,
-- the hourly LLM budget per bank, and the reflection watermarks of sessions.

ALTER TABLE lessons
    -- Freshness, 0 to 1: decay_factor ^ (whole decay periods since the lesson was last used).
    ADD COLUMN weight        double precision NOT NULL DEFAULT 1 CHECK (weight BETWEEN 0 AND 1),
    ADD COLUMN archived_at   timestamptz,
    ADD COLUMN superseded_by text,
    ADD COLUMN merged_into   text,
    -- 'rules' (deterministic) or 'llm'.
    ADD COLUMN method        text             NOT NULL DEFAULT 'rules',
    -- Which task the lesson is about (task type or situation, normalised) and what it says about
    -- which action: +1 do it, -1 avoid it, 0 neither. Same topic and action, opposite stance: a contradiction.
    ADD COLUMN topic         text             NOT NULL DEFAULT '',
    ADD COLUMN action_key    text             NOT NULL DEFAULT '',
    ADD COLUMN stance        smallint         NOT NULL DEFAULT 0;

CREATE INDEX lessons_current_idx ON lessons (bank_id, id) WHERE archived_at IS NULL;
CREATE INDEX lessons_stance_idx ON lessons (bank_id, topic, action_key) WHERE stance <> 0;

-- LLM reflections spent per bank per clock hour: the budget that keeps reflection cheap.
CREATE TABLE llm_budget (
    bank_id    text        NOT NULL,
    hour_start timestamptz NOT NULL,
    used       integer     NOT NULL,
    PRIMARY KEY (bank_id, hour_start)
);

-- Sessions reflected on, and the newest episode each reflection saw: the idle and importance triggers
-- reflect again only when a session has episodes newer than this.
CREATE TABLE session_marks (
    bank_id       text        NOT NULL,
    session_id    text        NOT NULL,
    reflected_at  timestamptz NOT NULL,
    newest_seen   timestamptz NOT NULL,
    PRIMARY KEY (bank_id, session_id)
);

-- Banks seen by this layer (reflected on, searched or maintained): the list maintenance walks.
CREATE TABLE banks (
    bank_id    text        PRIMARY KEY,
    first_seen timestamptz NOT NULL DEFAULT now()
);
INSERT INTO banks (bank_id) SELECT DISTINCT bank_id FROM lessons ON CONFLICT DO NOTHING;
