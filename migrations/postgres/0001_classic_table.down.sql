-- The record of prunes (made by `inboxctl prune`) describes this table's rows and goes with them.
DROP TABLE processed_messages;
DROP TABLE IF EXISTS inboxctl_prunes;
