-- Undoes 0002: turns lose their term counts and analyser version.
DROP INDEX IF EXISTS turns_bank_live_idx;
ALTER TABLE turns DROP COLUMN IF EXISTS analyzer;
ALTER TABLE turns DROP COLUMN IF EXISTS term_count;
