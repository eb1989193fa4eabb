-- Undoes 0006: the dead-letter list goes (its entries with it) and the outbox forgets how entries failed.
DROP TABLE IF EXISTS outbox_dead_letters;
ALTER TABLE outbox DROP COLUMN IF EXISTS failure;
