-- Back to the classic layout. Fails, changing nothing, when one event id is held by several
-- consumers: the classic key cannot hold both rows.
ALTER TABLE processed_messages
    DROP INDEX processed_messages_consumer_coordinates_idx,
    DROP INDEX processed_messages_consumer_processed_at_idx,
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (event_id),
    DROP COLUMN `offset`,
    DROP COLUMN `partition`,
    DROP COLUMN topic;
