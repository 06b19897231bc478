-- The classic inbox table many services already have. On a database that has one, this
-- changes nothing and migration 2 adopts it in place.
CREATE TABLE IF NOT EXISTS processed_messages (
    event_id     VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
    consumer     VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    processed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE = InnoDB;
