-- The stance index keys on digests of topic and action, not the text itself: a btree entry must stay under
-- a third of a page (about 2.7 kB), and a lesson drawn from an episode with long fields has a topic and an
-- action key as long as those fields. Lookups compare the same digests (which the index answers) and then
-- the full text (which rules out a collision).
DROP INDEX IF EXISTS lessons_stance_idx;
CREATE INDEX lessons_stance_idx ON lessons (bank_id, md5(topic), md5(action_key)) WHERE stance <> 0;
