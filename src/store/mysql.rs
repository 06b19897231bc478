//! MySQL and MariaDB: `?` parameters, DDL that commits implicitly, `GET_LOCK` for `migrate run`.

use anyhow::Context;
use sqlx::AnyConnection;

use super::{
    BatchDelete, Dialect, InexactKeyCollations, MigratedKey, MigrationLocking,
    MysqlAdoptionQueries, UnconvertibleTimes,
};
use crate::migrate::{InPlaceIndexes, Migration};

/// Migration 1's change: the inbox table exists.
const IN_PLACE_1: &str = "SELECT COUNT(*) FROM information_schema.tables \
     WHERE table_schema = DATABASE() AND table_name = 'processed_messages'";
/// Migration 2's change, one ALTER TABLE that applies whole or not at all: the primary key
/// (consumer, event_id) (the classic one is event_id alone) and the three coordinates. Not
/// by the name of its index, which a DBA may rename.
const IN_PLACE_2: &str = "SELECT CASE WHEN \
     (SELECT GROUP_CONCAT(LOWER(column_name) ORDER BY column_name) \
      FROM information_schema.statistics \
      WHERE table_schema = DATABASE() AND table_name = 'processed_messages' \
      AND index_name = 'PRIMARY') = 'consumer,event_id' \
     AND (SELECT COUNT(*) FROM information_schema.columns \
      WHERE table_schema = DATABASE() AND table_name = 'processed_messages' \
      AND LOWER(column_name) IN ('topic', 'partition', 'offset')) = 3 \
     THEN 1 ELSE 0 END";

/// A count, positive when the inbox has an index of the name given.
const INDEX_EXISTS: &str = "SELECT COUNT(*) FROM information_schema.statistics \
     WHERE table_schema = DATABASE() AND table_name = 'processed_messages' AND index_name = ?";

/// A count, positive when `processed_at` is a `TIMESTAMP`: MySQL keeps those in UTC and
/// converts them for each session, where migration 2's `DATETIME(6)` keeps what it is given.
pub const TIMESTAMP_COLUMN: &str = "SELECT COUNT(*) FROM information_schema.columns \
     WHERE table_schema = DATABASE() AND table_name = 'processed_messages' \
     AND column_name = 'processed_at' AND data_type = 'timestamp'";

pub static DIALECT: Dialect = Dialect {
    name: "MySQL",
    // DATETIME has no zone: inboxctl reads and writes processed_at as UTC.
    session_setup: &["SET time_zone = '+00:00'"],
    serial_plans: &[],
    numbered_params: false,
    identifier_quote: '`',
    timestamp_param_text: |at| at.format("%Y-%m-%d %H:%M:%S%.6f").to_string(),
    timestamp_param: |placeholder| format!("CAST({placeholder} AS DATETIME(6))"),
    earliest_prunable: None,
    timestamp_text: |expression| format!("DATE_FORMAT({expression}, '%Y-%m-%d %H:%i:%s.%f')"),
    bigint: |expression| format!("CAST({expression} AS SIGNED)"),
    text: |expression| format!("CAST({expression} AS CHAR)"),
    table_exists: "SELECT COUNT(*) FROM information_schema.tables \
                   WHERE table_schema = DATABASE() AND table_name = ?",
    columns: "SELECT column_name FROM information_schema.columns \
              WHERE table_schema = DATABASE() AND table_name = ?",
    column_names_case_sensitive: false,
    // InnoDB answers DISTINCT on the primary key's leading column with a loose index scan.
    consumers: "SELECT DISTINCT consumer FROM processed_messages ORDER BY consumer",
    estimated_rows: Some(
        "SELECT CAST(table_rows AS SIGNED) FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND table_name = 'processed_messages'",
    ),
    // The batch's keys and times are read through the (consumer, processed_at) index in a
    // derived table, then deleted by key and time, and by the condition again: on its own,
    // `DELETE … ORDER BY processed_at LIMIT n` was planned through the primary key, reading
    // every row of the consumer and sorting them, for each batch. The derived table's
    // columns have names of their own, so that the condition's names are the table's.
    delete_batch: BatchDelete {
        wrap: (
            "DELETE pm FROM processed_messages AS pm JOIN (SELECT consumer AS batch_consumer, \
             event_id AS batch_event_id, processed_at AS batch_processed_at \
             FROM processed_messages WHERE ",
            ") AS batch ON pm.consumer = batch.batch_consumer \
             AND pm.event_id = batch.batch_event_id \
             AND pm.processed_at = batch.batch_processed_at WHERE ",
        ),
        condition_again: true,
        packs: false,
    },
    delete_returning: false,
    heap_extent: None,
    begin_write: "BEGIN",
    // The level first: under READ COMMITTED a consistent snapshot lasts one statement.
    begin_snapshot: &[
        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
        "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY",
    ],
    insert_new: ("INSERT IGNORE INTO", " RETURNING event_id"),
    tables_referencing_inbox: None,
    // A prefix of a unique key's column is shown (`event_id(20)`); the primary key's
    // is not, as migration 2 drops that key.
    unique_keys: Some(
        "SELECT CAST(index_name AS CHAR), CASE WHEN index_name = 'PRIMARY' THEN 'p' ELSE 'u' END, \
                CAST(CASE WHEN sub_part IS NOT NULL AND index_name <> 'PRIMARY' \
                     THEN CONCAT(column_name, '(', sub_part, ')') \
                     ELSE COALESCE(column_name, '(expression)') END AS CHAR) \
         FROM information_schema.statistics \
         WHERE table_schema = DATABASE() AND table_name = 'processed_messages' AND non_unique = 0 \
         ORDER BY index_name, seq_in_index",
    ),
    tables_with_foreign_keys_to_inbox: Some(
        "SELECT DISTINCT CAST(CASE WHEN constraint_schema = DATABASE() THEN table_name \
                ELSE CONCAT(constraint_schema, '.', table_name) END AS CHAR) \
         FROM information_schema.referential_constraints \
         WHERE unique_constraint_schema = DATABASE() \
         AND referenced_table_name = 'processed_messages' ORDER BY 1",
    ),
    // Numbers convert as YYYYMMDDHHMMSS, which turns epoch milliseconds into nonsense dates
    // without an error; text converts value by value, and strict mode fails on one it cannot
    // read.
    processed_at_unconvertible: Some(UnconvertibleTimes {
        type_query: "SELECT CAST(column_type AS CHAR(255)) FROM information_schema.columns \
         WHERE table_schema = DATABASE() AND table_name = 'processed_messages' \
         AND LOWER(column_name) = 'processed_at' AND LOWER(data_type) NOT IN \
         ('datetime', 'timestamp', 'date', 'char', 'varchar', 'tinytext', 'text', 'mediumtext', \
          'longtext')",
        unreadable_text: Some(
            "SELECT COUNT(*) FROM processed_messages WHERE EXISTS ( \
                 SELECT 1 FROM information_schema.columns \
                 WHERE table_schema = DATABASE() AND table_name = 'processed_messages' \
                 AND LOWER(column_name) = 'processed_at' AND LOWER(data_type) IN \
                 ('char', 'varchar', 'tinytext', 'text', 'mediumtext', 'longtext')) \
             AND processed_at NOT REGEXP \
                 '^[0-9]{4}-[0-9]{2}-[0-9]{2}([ T][0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,6})?)?$'",
        ),
        remedy: "ALTER TABLE processed_messages MODIFY processed_at DATETIME(6) NOT NULL DEFAULT \
                 CURRENT_TIMESTAMP(6), after \
                 making its values UTC times, with FROM_UNIXTIME for epoch seconds, say",
    }),
    inexact_key_collations: Some(InexactKeyCollations {
        query: "SELECT CAST(LOWER(column_name) AS CHAR), CAST(collation_name AS CHAR) \
         FROM information_schema.columns \
         WHERE table_schema = DATABASE() AND table_name = 'processed_messages' \
         AND LOWER(column_name) IN ('consumer', 'event_id') \
         AND collation_name IS NOT NULL AND collation_name NOT LIKE '%\\_bin' \
         AND NOT (collation_name LIKE '%\\_cs' AND collation_name NOT LIKE '%\\_ai\\_%') \
         ORDER BY 1",
        remedy: "ALTER TABLE processed_messages \
                 MODIFY consumer VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, \
                 MODIFY event_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL",
    }),
    // The change converts both columns to utf8mb4_bin, whose comparison pads with spaces.
    // Index names are the table's own; its one statement fails on one it has.
    names_taken: "SELECT DISTINCT CONCAT('index ', CAST(index_name AS CHAR), \
         ' of table processed_messages') FROM information_schema.statistics \
         WHERE table_schema = DATABASE() AND table_name = 'processed_messages' \
         AND index_name IN ('processed_messages_consumer_processed_at_idx', \
                            'processed_messages_consumer_coordinates_idx') \
         ORDER BY 1",
    migrated_key: MigratedKey {
        value: |column| format!("CONVERT({column} USING utf8mb4) COLLATE utf8mb4_bin"),
        compared_as: ", compared as utf8mb4_bin compares them (trailing spaces ignored)",
    },
    postgres_adoption: None,
    mysql_adoption: Some(MysqlAdoptionQueries {
        table_options: "SELECT CAST(COALESCE(engine, '') AS CHAR), CAST(COALESCE(row_format, '') AS CHAR), \
                CAST(COALESCE(create_options, '') AS CHAR), CAST(@@innodb_default_row_format AS CHAR), \
                CAST(table_type AS CHAR) \
         FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND table_name = 'processed_messages'",
        key_column_types: "SELECT CAST(LOWER(column_name) AS CHAR), CAST(column_type AS CHAR(255)), \
                CAST(LOWER(data_type) AS CHAR), CAST(COALESCE(character_maximum_length, 0) AS SIGNED), \
                CAST(COALESCE(character_set_name, '') AS CHAR), CAST(COALESCE(collation_name, '') AS CHAR) \
         FROM information_schema.columns \
         WHERE table_schema = DATABASE() AND table_name = 'processed_messages' \
         AND LOWER(column_name) IN ('event_id', 'consumer') \
         ORDER BY 1",
        foreign_keys: "SELECT CAST(k.constraint_name AS CHAR), CAST(LOWER(k.column_name) AS CHAR), \
                CAST(k.referenced_table_name AS CHAR), CAST(r.delete_rule AS CHAR), CAST(r.update_rule AS CHAR) \
         FROM information_schema.key_column_usage k \
         JOIN information_schema.referential_constraints r \
           ON r.constraint_schema = k.constraint_schema AND r.constraint_name = k.constraint_name \
           AND r.table_name = k.table_name \
         WHERE k.table_schema = DATABASE() AND k.table_name = 'processed_messages' \
         AND k.referenced_table_name IS NOT NULL \
         ORDER BY 1, k.ordinal_position",
        primary_key_prefixes: "SELECT CAST(CONCAT(LOWER(column_name), '(', sub_part, ')') AS CHAR) \
         FROM information_schema.statistics \
         WHERE table_schema = DATABASE() AND table_name = 'processed_messages' \
         AND index_name = 'PRIMARY' AND sub_part IS NOT NULL \
         ORDER BY seq_in_index",
        // Wider integers hold them too; every read casts to a 64-bit integer. A topic must fit
        // in the coordinates index beside the consumer (3072 bytes, 4 a character).
        unfit_coordinates_in_place: "SELECT CAST(LOWER(column_name) AS CHAR), CAST(column_type AS CHAR(255)) \
         FROM information_schema.columns \
         WHERE table_schema = DATABASE() AND table_name = 'processed_messages' \
         AND LOWER(column_name) IN ('topic', 'partition', 'offset') AND NOT ( \
             (LOWER(column_name) = 'topic' AND data_type IN ('varchar', 'char') \
                 AND character_maximum_length BETWEEN 249 AND 500) \
             OR (LOWER(column_name) = 'partition' AND (data_type IN ('int', 'bigint') \
                 OR (data_type = 'decimal' AND numeric_precision >= 10 AND numeric_scale = 0))) \
             OR (LOWER(column_name) = 'offset' AND (data_type = 'bigint' \
                 OR (data_type = 'decimal' AND numeric_precision >= 19 AND numeric_scale = 0)))) \
         ORDER BY 1",
        processed_at: "SELECT CAST(column_type AS CHAR(255)), CAST(LOWER(data_type) AS CHAR), \
                CAST(COALESCE(column_default, '') AS CHAR(255)), CAST(is_nullable AS CHAR) \
         FROM information_schema.columns \
         WHERE table_schema = DATABASE() AND table_name = 'processed_messages' \
         AND LOWER(column_name) = 'processed_at'",
    }),
    inbox_outside_creation_schema: None,
    migration_locking: MigrationLocking::SessionLock {
        // A user lock is the server's, not the database's: the name holds the database, so
        // that migrate on one database does not wait for migrate on another. Hashed, as a
        // name may be 64 characters at most.
        lock: "SELECT CAST(GET_LOCK(CONCAT('inboxctl_migrate:', SHA1(COALESCE(DATABASE(), ''))), 600) AS SIGNED)",
        unlock: "SELECT CAST(RELEASE_LOCK(CONCAT('inboxctl_migrate:', SHA1(COALESCE(DATABASE(), '')))) AS SIGNED)",
        transactional_ddl: false,
    },
    migrations_table_ddl: "CREATE TABLE IF NOT EXISTS inboxctl_migrations ( \
                               version BIGINT NOT NULL PRIMARY KEY, \
                               description VARCHAR(255) NOT NULL, \
                               checksum VARCHAR(64) NOT NULL, \
                               applied_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), \
                               duration_ms BIGINT NOT NULL) ENGINE = InnoDB",
    migrations: &[
        Migration {
            version: 1,
            description: "classic processed_messages table (created if missing)",
            up: include_str!("../../migrations/mysql/0001_classic_table.up.sql"),
            down: include_str!("../../migrations/mysql/0001_classic_table.down.sql"),
            in_place: Some(IN_PLACE_1),
            in_place_indexes: None,
            rebuild: None,
            zoneless_times: None,
        },
        Migration {
            version: 2,
            description: "key (consumer, event_id), topic/partition/offset, indexes",
            up: include_str!("../../migrations/mysql/0002_consumer_key_and_coordinates.up.sql"),
            down: include_str!("../../migrations/mysql/0002_consumer_key_and_coordinates.down.sql"),
            in_place: Some(IN_PLACE_2),
            in_place_indexes: Some(InPlaceIndexes {
                exists: INDEX_EXISTS,
                indexes: &[
                    (
                        "processed_messages_consumer_processed_at_idx",
                        "CREATE INDEX processed_messages_consumer_processed_at_idx \
                         ON processed_messages (consumer, processed_at)",
                    ),
                    (
                        "processed_messages_consumer_coordinates_idx",
                        "CREATE INDEX processed_messages_consumer_coordinates_idx \
                         ON processed_messages (consumer, topic, `partition`, `offset`)",
                    ),
                ],
            }),
            rebuild: None,
            zoneless_times: None,
        },
    ],
};

/// The batch delete for this server: one batch deletes the old rows of several consumers
/// only where its DELETE can say whose they were (`DELETE … RETURNING`, MariaDB's; taken
/// from 10.5, as replay's insert is, the version the tests run on being 10.11).
pub async fn batch_delete(connection: &mut AnyConnection) -> anyhow::Result<BatchDelete> {
    Ok(BatchDelete {
        packs: has_insert_returning(&server_version(connection).await?),
        ..DIALECT.delete_batch
    })
}

/// The server's `VERSION()`, as `10.11.19-MariaDB-0+deb12u1` or `8.0.36`.
pub async fn server_version<'e>(
    executor: impl sqlx::Executor<'e, Database = sqlx::Any>,
) -> anyhow::Result<String> {
    sqlx::query_scalar("SELECT CAST(VERSION() AS CHAR)")
        .fetch_one(executor)
        .await
        .context("could not read the server's version")
}

/// Whether a server of this `VERSION()` has `INSERT … RETURNING`: MariaDB from 10.5.
pub fn has_insert_returning(version: &str) -> bool {
    if !version.contains("MariaDB") {
        return false;
    }
    let mut numbers = version
        .split(|c: char| !c.is_ascii_digit())
        .map(|part| part.parse::<u32>().ok());
    match (numbers.next().flatten(), numbers.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= (10, 5),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_mariadb_from_10_5_returns_inserted_rows() {
        assert!(has_insert_returning("10.11.19-MariaDB-0+deb12u1"));
        assert!(has_insert_returning("10.5.0-MariaDB"));
        assert!(has_insert_returning("11.4.2-MariaDB-log"));
        assert!(!has_insert_returning("10.4.34-MariaDB"));
        assert!(!has_insert_returning("8.0.36"));
        assert!(!has_insert_returning("8.4.0-commercial"));
        assert!(!has_insert_returning("MariaDB"));
    }
}
