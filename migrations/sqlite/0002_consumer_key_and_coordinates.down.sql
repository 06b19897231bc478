-- Back to the classic layout. Fails, changing nothing, when one event id is held by several
-- consumers: the classic key cannot hold both rows.
CREATE TABLE processed_messages_inboxctl_old (
    event_id     TEXT      NOT NULL PRIMARY KEY,
    consumer     TEXT      NOT NULL,
    processed_at TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now'))
);
INSERT INTO processed_messages_inboxctl_old (event_id, consumer, processed_at)
    SELECT event_id, consumer, processed_at FROM processed_messages;
DROP TABLE processed_messages;
ALTER TABLE processed_messages_inboxctl_old RENAME TO processed_messages;
