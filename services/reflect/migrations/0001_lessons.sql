-- Lessons drawn from episodes. Runs with search_path set to the layer's schema, inside one transaction.

CREATE TABLE lessons (
    bank_id            text             NOT NULL,
    id                 text             NOT NULL,
    situation          text             NOT NULL DEFAULT '',
    action             text             NOT NULL DEFAULT '',
    outcome            text             NOT NULL DEFAULT '',
    lesson             text             NOT NULL,
    confidence         double precision NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    source_episode_ids text[]           NOT NULL DEFAULT '{}',
    source_turn_ids    text[]           NOT NULL DEFAULT '{}',
    tags               text[]           NOT NULL DEFAULT '{}',
    source             text             NOT NULL,
    trust              smallint         NOT NULL,
    importance         double precision NOT NULL DEFAULT 0,
    -- When the newest source episode happened (the lesson's time in RecordMeta).
    happened_at        timestamptz,
    hit_count          integer          NOT NULL DEFAULT 0,
    last_hit_at        timestamptz,
    created_at         timestamptz      NOT NULL DEFAULT now(),
    updated_at         timestamptz      NOT NULL DEFAULT now(),
    schema_version     integer          NOT NULL,
    -- Lexemes from hindsight.runtime.text.terms(): English words and Chinese unigrams + bigrams.
    search_terms       tsvector         NOT NULL,
    PRIMARY KEY (bank_id, id)
);

CREATE INDEX lessons_search_terms_idx ON lessons USING gin (search_terms);
CREATE INDEX lessons_bank_confidence_idx ON lessons (bank_id, confidence DESC, id);

-- The union of two id lists, first occurrence first: merging provenance never duplicates or reorders it.
CREATE FUNCTION merge_ids(a text[], b text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(x ORDER BY n), '{}')
    FROM (SELECT x, min(n) AS n FROM unnest(a || b) WITH ORDINALITY AS u(x, n) GROUP BY x) AS firsts
$$;
