-- Back to the classic layout. Fails, changing nothing, when one event id is held by several
-- consumers: the classic key cannot hold both rows.
DROP INDEX processed_messages_consumer_coordinates_idx;
DROP INDEX processed_messages_consumer_processed_at_idx;
ALTER TABLE processed_messages DROP CONSTRAINT processed_messages_pkey;
ALTER TABLE processed_messages ADD CONSTRAINT processed_messages_pkey PRIMARY KEY (event_id);
ALTER TABLE processed_messages
    DROP COLUMN "offset",
    DROP COLUMN "partition",
    DROP COLUMN topic;
