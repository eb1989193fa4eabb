-- Who wrote each record: the agent (the writing credential's name, or what the mesh or an operator stated)
-- of every turn, held-back turn and episode. Records stored before have none (empty).
ALTER TABLE turns ADD COLUMN IF NOT EXISTS agent text NOT NULL DEFAULT '';
ALTER TABLE episodes ADD COLUMN IF NOT EXISTS agent text NOT NULL DEFAULT '';
ALTER TABLE quarantine ADD COLUMN IF NOT EXISTS agent text NOT NULL DEFAULT '';

-- Listing a bank's turns by one agent, newest first (the console, list_recent with an agent).
CREATE INDEX IF NOT EXISTS turns_agent_idx ON turns (bank_id, agent, occurred_at DESC) WHERE agent <> '';
