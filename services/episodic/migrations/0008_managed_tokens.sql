-- Managed client tokens: minted and revoked through the edge's API, looked up by every edge after its static
-- tokens. Only the SHA-256 digest of a secret is stored. A row is never deleted: a revoked token stays, so
-- that its refusal can say so and its history can be read.

-- Each creation or revocation takes the next version (under a transaction lock, so versions become visible in
-- order): an edge asks for the changes after the last version it read.
CREATE SEQUENCE IF NOT EXISTS token_versions;

CREATE TABLE IF NOT EXISTS tokens (
    name          text        PRIMARY KEY,
    digest        text        NOT NULL UNIQUE,
    -- [{"bank": "bank-a", "operations": ["read", "write"]}, ...]
    grants        jsonb       NOT NULL DEFAULT '[]',
    admin         boolean     NOT NULL DEFAULT false,
    expires_at    timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz,
    revoked_at    timestamptz,
    -- The managed token this one was minted with; revoking it revokes this one.
    parent        text        REFERENCES tokens (name),
    created_by    text        NOT NULL DEFAULT '',
    version       bigint      NOT NULL
);
CREATE INDEX IF NOT EXISTS tokens_version_idx ON tokens (version);
CREATE INDEX IF NOT EXISTS tokens_parent_idx ON tokens (parent) WHERE parent IS NOT NULL;
