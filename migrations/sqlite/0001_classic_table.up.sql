-- The classic inbox table many services already have. On a database that has one, this
-- changes nothing and migration 2 adopts it in place. Timestamps are UTC text.
CREATE TABLE IF NOT EXISTS processed_messages (
    event_id     TEXT      NOT NULL PRIMARY KEY,
    consumer     TEXT      NOT NULL,
    processed_at TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now'))
);
