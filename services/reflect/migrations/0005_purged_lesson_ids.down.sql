-- Back to tombstones without the lessons they took.
ALTER TABLE purged_sources DROP COLUMN IF EXISTS lesson_ids;
