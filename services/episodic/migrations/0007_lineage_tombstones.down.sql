-- Undoes 0007: the tombstones go, and turns forget their chains (the supersede links stay).
DROP TABLE IF EXISTS purged;
DROP INDEX IF EXISTS episodes_source_turns_idx;
DROP INDEX IF EXISTS turns_chain_idx;
ALTER TABLE turns DROP COLUMN IF EXISTS chain_id;
