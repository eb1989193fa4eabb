-- Undoes 0009: records forget who wrote them.
DROP INDEX IF EXISTS turns_agent_idx;
ALTER TABLE quarantine DROP COLUMN IF EXISTS agent;
ALTER TABLE episodes DROP COLUMN IF EXISTS agent;
ALTER TABLE turns DROP COLUMN IF EXISTS agent;
