-- Ranked keyword search (BM25) needs each turn's length in terms, and turns are now indexed with
-- stemmed English terms. Rows written before this migration keep analyzer 1 until the store
-- re-analyses them on start (hindsight.episodic.store.PostgresEpisodicStore.reanalyse).
ALTER TABLE turns ADD COLUMN IF NOT EXISTS term_count integer NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN IF NOT EXISTS analyzer smallint NOT NULL DEFAULT 1;
CREATE INDEX IF NOT EXISTS turns_bank_live_idx ON turns (bank_id) WHERE archived_at IS NULL;
