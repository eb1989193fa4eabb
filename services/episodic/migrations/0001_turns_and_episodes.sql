-- Turns as retained and episodes: the episodic layer's system of record.
-- Runs with search_path set to the layer's schema, inside one transaction.

CREATE TABLE turns (
    bank_id         text        NOT NULL,
    id              text        NOT NULL,
    session_id      text        NOT NULL,
    role            text        NOT NULL,
    speaker         text        NOT NULL DEFAULT '',
    text            text        NOT NULL,
    source          text        NOT NULL,
    trust           smallint    NOT NULL,
    occurred_at     timestamptz NOT NULL,
    tags            text[]      NOT NULL DEFAULT '{}',
    importance      double precision NOT NULL DEFAULT 0,
    source_turn_ids text[]      NOT NULL DEFAULT '{}',
    schema_version  integer     NOT NULL,
    archived_at     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    -- Lexemes from hindsight.runtime.text.terms(): English words and Chinese unigrams + bigrams.
    search_terms    tsvector    NOT NULL,
    PRIMARY KEY (bank_id, id)
);

CREATE INDEX turns_search_terms_idx ON turns USING gin (search_terms);
CREATE INDEX turns_bank_occurred_idx ON turns (bank_id, occurred_at, id);

CREATE TABLE episodes (
    bank_id         text        NOT NULL,
    id              text        NOT NULL,
    session_id      text        NOT NULL DEFAULT '',
    situation       text        NOT NULL DEFAULT '',
    action          text        NOT NULL DEFAULT '',
    outcome         text        NOT NULL DEFAULT '',
    lesson          text        NOT NULL DEFAULT '',
    task_type       text        NOT NULL DEFAULT '',
    tools           text[]      NOT NULL DEFAULT '{}',
    result          text        NOT NULL,
    source          text        NOT NULL,
    trust           smallint    NOT NULL,
    tags            text[]      NOT NULL DEFAULT '{}',
    importance      double precision NOT NULL DEFAULT 0,
    source_turn_ids text[]      NOT NULL DEFAULT '{}',
    occurred_at     timestamptz NOT NULL,
    recorded_at     timestamptz NOT NULL DEFAULT now(),
    schema_version  integer     NOT NULL,
    search_terms    tsvector    NOT NULL,
    PRIMARY KEY (bank_id, id)
);

CREATE INDEX episodes_search_terms_idx ON episodes USING gin (search_terms);
CREATE INDEX episodes_bank_occurred_idx ON episodes (bank_id, occurred_at, id);
CREATE INDEX episodes_bank_session_occurred_idx ON episodes (bank_id, session_id, occurred_at, id);
