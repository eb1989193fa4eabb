-- Which lessons each purged source took with it (ids only, never text). A purge is carried out twice, by
-- the edge directly and by episodic memory's outbox, in either order: the count a purge reports is read
-- from here, so it does not depend on which of the two deleted the lessons first.
ALTER TABLE purged_sources ADD COLUMN lesson_ids text[] NOT NULL DEFAULT '{}';
