-- Key (consumer, event_id) so two consumers of one event do not dedupe each other; Kafka
-- coordinates for compare and replay; the indexes prune, inspect and compare read through.
ALTER TABLE processed_messages
    ADD COLUMN IF NOT EXISTS topic text,
    ADD COLUMN IF NOT EXISTS "partition" integer,
    ADD COLUMN IF NOT EXISTS "offset" bigint,
    ALTER COLUMN consumer SET NOT NULL,
    ALTER COLUMN processed_at TYPE timestamptz,
    ALTER COLUMN processed_at SET DEFAULT now(),
    ALTER COLUMN processed_at SET NOT NULL;

-- The classic key may carry any name; find it rather than assume processed_messages_pkey.
DO $$
DECLARE
    key_name text;
BEGIN
    SELECT conname INTO key_name FROM pg_constraint
    WHERE conrelid = 'processed_messages'::regclass AND contype = 'p';
    IF key_name IS NOT NULL THEN
        EXECUTE format('ALTER TABLE processed_messages DROP CONSTRAINT %I', key_name);
    END IF;
END
$$;

ALTER TABLE processed_messages
    ADD CONSTRAINT processed_messages_pkey PRIMARY KEY (consumer, event_id);
CREATE INDEX IF NOT EXISTS processed_messages_consumer_processed_at_idx
    ON processed_messages (consumer, processed_at);
CREATE INDEX IF NOT EXISTS processed_messages_consumer_coordinates_idx
    ON processed_messages (consumer, topic, "partition", "offset");
