-- Undoes 0003.
DROP TABLE IF EXISTS access_stats;
DROP TABLE IF EXISTS outbox_delivered;
DROP TABLE IF EXISTS outbox;  -- with its indexes
DROP INDEX IF EXISTS episodes_tags_idx;
DROP INDEX IF EXISTS episodes_tools_idx;
DROP INDEX IF EXISTS episodes_bank_task_type_idx;
DROP INDEX IF EXISTS episodes_bank_dedup_idx;
ALTER TABLE episodes
    DROP COLUMN IF EXISTS archived_at,
    DROP COLUMN IF EXISTS merged_count,
    DROP COLUMN IF EXISTS dedup_key,
    DROP COLUMN IF EXISTS method,
    DROP COLUMN IF EXISTS ended_at,
    DROP COLUMN IF EXISTS started_at;
DROP INDEX IF EXISTS turns_bank_session_occurred_idx;
ALTER TABLE turns DROP COLUMN IF EXISTS superseded_by;
DROP TABLE IF EXISTS sessions;
DROP TABLE IF EXISTS banks;
