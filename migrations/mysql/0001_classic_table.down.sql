DROP TABLE processed_messages;
