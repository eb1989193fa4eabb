-- Back to the stance index on the full text (which refuses lessons whose topic or action is too long).
DROP INDEX IF EXISTS lessons_stance_idx;
CREATE INDEX lessons_stance_idx ON lessons (bank_id, topic, action_key) WHERE stance <> 0;
