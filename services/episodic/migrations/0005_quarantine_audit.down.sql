-- Undoes 0005: the review queue and the audit log go (approved turns stay in turns).
DROP TABLE IF EXISTS audit;
DROP TABLE IF EXISTS quarantine;
