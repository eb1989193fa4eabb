-- Lineage: every version of a turn names the first version of its chain, so that a purge of any version
-- deletes them all; and tombstones of what was purged, so that a late write (a retried retain, an episode
-- written again) cannot bring purged text back. Tombstones hold ids and times, never text.

-- The first version's id; NULL on a first version (its chain is its own id).
ALTER TABLE turns ADD COLUMN IF NOT EXISTS chain_id text;
CREATE INDEX IF NOT EXISTS turns_chain_idx ON turns (bank_id, chain_id) WHERE chain_id IS NOT NULL;

-- Chains already stored: follow the supersede links from each first version.
WITH RECURSIVE chain (bank_id, id, root, next) AS (
    SELECT t.bank_id, t.id, t.id, t.superseded_by FROM turns t
    WHERE t.superseded_by IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM turns p WHERE p.bank_id = t.bank_id AND p.superseded_by = t.id)
    UNION ALL
    SELECT n.bank_id, n.id, c.root, n.superseded_by
    FROM chain c JOIN turns n ON n.bank_id = c.bank_id AND n.id = c.next
)
UPDATE turns t SET chain_id = chain.root
FROM chain WHERE t.bank_id = chain.bank_id AND t.id = chain.id AND chain.id <> chain.root;

-- Ids purged from a bank: 'turn' (held-back turns included) or 'episode'.
CREATE TABLE IF NOT EXISTS purged (
    bank_id   text        NOT NULL,
    id        text        NOT NULL,
    kind      text        NOT NULL,
    purged_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, id)
);

-- A purge finds the episodes standing on its turns through this index.
CREATE INDEX IF NOT EXISTS episodes_source_turns_idx ON episodes USING gin (source_turn_ids);
