-- Write-time screening: turns held back for review (kept out of the turns table, so out of search,
-- listing, episodes, segmentation and indexing until approved), and the audit log of security decisions.

-- A held-back turn, as it would have been stored, with why and the review's outcome. An approved turn
-- moves into turns (this row stays, as the record of the decision); a rejected one stays here for good,
-- searchable only to warn related recalls.
CREATE TABLE IF NOT EXISTS quarantine (
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
    search_terms    tsvector    NOT NULL DEFAULT ''::tsvector,
    kind            text        NOT NULL,
    reason          text        NOT NULL,
    action          text        NOT NULL,
    quarantined_at  timestamptz NOT NULL DEFAULT now(),
    -- 'pending', 'approved' or 'rejected'.
    status          text        NOT NULL DEFAULT 'pending',
    reviewer        text        NOT NULL DEFAULT '',
    reviewed_at     timestamptz,
    PRIMARY KEY (bank_id, id)
);
CREATE INDEX IF NOT EXISTS quarantine_bank_status_idx ON quarantine (bank_id, status, quarantined_at, id);
CREATE INDEX IF NOT EXISTS quarantine_terms_idx ON quarantine USING gin (search_terms);

-- Every security decision: who, which bank, what, why. Append-only; read newest first.
CREATE TABLE IF NOT EXISTS audit (
    seq       bigserial   PRIMARY KEY,
    id        text        NOT NULL UNIQUE,
    at        timestamptz NOT NULL DEFAULT now(),
    actor     text        NOT NULL DEFAULT '',
    bank_id   text        NOT NULL DEFAULT '',
    action    text        NOT NULL,
    target    text        NOT NULL DEFAULT '',
    reason    text        NOT NULL DEFAULT '',
    details   jsonb       NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS audit_at_idx ON audit (at DESC, id DESC);
CREATE INDEX IF NOT EXISTS audit_bank_at_idx ON audit (bank_id, at DESC, id DESC);
