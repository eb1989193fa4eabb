-- Undoes 0004: searches count the bank again.
CREATE INDEX IF NOT EXISTS turns_bank_live_idx ON turns (bank_id) WHERE archived_at IS NULL;
DROP TABLE IF EXISTS keyword_postings;
DROP TABLE IF EXISTS keyword_terms;
DROP TABLE IF EXISTS keyword_banks;
