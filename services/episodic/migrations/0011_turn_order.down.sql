-- Undoes 0011: turns forget the order they were written in.
DROP INDEX IF EXISTS turns_session_order_idx;
ALTER TABLE turns DROP COLUMN IF EXISTS seq;
DROP SEQUENCE IF EXISTS turns_seq;
