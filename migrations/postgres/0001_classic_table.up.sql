-- The classic inbox table many services already have. On a database that has one, this
-- changes nothing and migration 2 adopts it in place.
CREATE TABLE IF NOT EXISTS processed_messages (
    event_id     text        PRIMARY KEY,
    consumer     text        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now()
);
