-- Undoes 0010: copies stay as ordinary records of their banks, no longer purged with their sources.
DROP TABLE IF EXISTS shared_copies;
