//! SQLite, the embedded default: `?` parameters, timestamps as UTC text, one immediate
//! transaction around `migrate run`.

use anyhow::Context;
use sqlx::AnyConnection;

use super::{BatchDelete, Dialect, InexactKeyCollations, MigratedKey, MigrationLocking};
use crate::migrate::{Migration, TableRebuild};

/// A time as SQLite's text compares it with `processed_at`: the column default's form,
/// `YYYY-MM-DD HH:MM:SS.fff`, with the fraction's trailing zeros left out, and the `.` with
/// them when it is all zeros. Text then orders as time against a value with any number of
/// digits after the second, none included (`CURRENT_TIMESTAMP`, a classic table's default):
/// `x < cutoff` and `x >= cutoff` hold exactly when they do as times. With the zeros
/// written, `2026-11-01 08:00:00` sorted before the cutoff `2026-11-01 08:00:00.000`, and a
/// row processed exactly at the cutoff was deleted.
fn timestamp_text(at: chrono::DateTime<chrono::Utc>) -> String {
    let text = at.format("%Y-%m-%d %H:%M:%S%.9f").to_string();
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A batch delete that finds its rows by rowid: the subquery reads only the
/// `(consumer, processed_at)` index, whose entries hold the rowid.
const DELETE_BATCH_BY_ROWID: BatchDelete = BatchDelete {
    wrap: (
        "DELETE FROM processed_messages WHERE rowid IN (SELECT rowid FROM processed_messages WHERE ",
        ")",
    ),
    condition_again: false,
        packs: true,
};

/// A batch delete for an inbox declared WITHOUT ROWID, which has no rowid: by key and time,
/// so that a key the table holds twice (one whose primary key has more columns) deletes only
/// the rows selected. The `(consumer, processed_at)` index's entries hold the key, so the
/// subquery still reads only that index. On a rowid table this form would also read every
/// row to get its event_id, and find it again through the key's own index.
const DELETE_BATCH_BY_KEY: BatchDelete = BatchDelete {
    wrap: (
        "DELETE FROM processed_messages WHERE (consumer, event_id, processed_at) IN \
         (SELECT consumer, event_id, processed_at FROM processed_messages WHERE ",
        ")",
    ),
    condition_again: false,
    packs: true,
};

/// The batch delete that fits the inbox: by rowid, or by primary key when the table is
/// declared WITHOUT ROWID (`pragma_table_list`'s `wr`, SQLite 3.37 and later; sqlx bundles
/// a newer one).
pub async fn batch_delete(connection: &mut AnyConnection) -> anyhow::Result<BatchDelete> {
    let without_rowid: Option<i64> = sqlx::query_scalar(
        "SELECT wr FROM pragma_table_list('processed_messages') WHERE schema = 'main'",
    )
    .fetch_optional(connection)
    .await
    .context(
        "could not read from SQLite's catalog whether processed_messages is a WITHOUT ROWID table",
    )?;
    Ok(match without_rowid {
        Some(1) => DELETE_BATCH_BY_KEY,
        _ => DELETE_BATCH_BY_ROWID,
    })
}

/// Migration 2's indexes, as its up SQL creates them, each only if missing: all it does to a
/// table already keyed `(consumer, event_id)` with the coordinates.
const INDEXES_IF_MISSING: &str = "\
CREATE INDEX IF NOT EXISTS processed_messages_consumer_processed_at_idx
    ON processed_messages (consumer, processed_at);
CREATE INDEX IF NOT EXISTS processed_messages_consumer_coordinates_idx
    ON processed_messages (consumer, topic, \"partition\", \"offset\");
";

/// The unique indexes of a table already in the inbox's layout besides its primary key's, as
/// (name, `u`, column), a column by a collation other than BINARY shown with it: the rebuild
/// of a classic table drops them, but a table only recorded keeps them. Partial ones are
/// left out, as on PostgreSQL.
pub const KEPT_UNIQUE_KEYS: &str =
    "SELECT il.name, 'u', COALESCE(ix.name, '(expression)') || CASE WHEN ix.coll <> 'BINARY' \
            AND lower(ix.name) IN ('consumer', 'event_id') THEN ' COLLATE ' || ix.coll ELSE '' END \
     FROM pragma_index_list('processed_messages') AS il, pragma_index_xinfo(il.name) AS ix \
     WHERE il.\"unique\" = 1 AND il.origin <> 'pk' AND il.partial = 0 AND ix.key = 1 \
     ORDER BY il.name, ix.seqno";

pub static DIALECT: Dialect = Dialect {
    name: "SQLite",
    // Wait for a concurrent writer (another migrate, the application) instead of failing.
    session_setup: &["PRAGMA busy_timeout = 60000"],
    serial_plans: &[],
    numbered_params: false,
    identifier_quote: '"',
    timestamp_param_text: timestamp_text,
    timestamp_param: |placeholder| placeholder.to_string(),
    // Text compares as text: numbers (seconds since 1970, say) and the empty text sort
    // before every time, undated. Not "0", which the column's NUMERIC affinity would read
    // as the number 0.
    earliest_prunable: Some("0000-01-01 00:00:00"),
    timestamp_text: |expression| format!("CAST({expression} AS TEXT)"),
    bigint: |expression| expression.to_string(),
    text: |expression| format!("CAST({expression} AS TEXT)"),
    // Views too, as PostgreSQL's and MySQL's catalogs list them: an inbox may be one.
    // SQLite matches names in any ASCII case, as its statements find them.
    table_exists: "SELECT COUNT(*) FROM sqlite_master WHERE type IN ('table', 'view') \
                   AND name = ? COLLATE NOCASE",
    columns: "SELECT name FROM pragma_table_info(?)",
    column_names_case_sensitive: false,
    consumers: "WITH RECURSIVE c(consumer) AS ( \
                    SELECT MIN(consumer) FROM processed_messages \
                    UNION ALL \
                    SELECT (SELECT MIN(consumer) FROM processed_messages WHERE consumer > c.consumer) \
                    FROM c WHERE c.consumer IS NOT NULL) \
                SELECT consumer FROM c WHERE consumer IS NOT NULL",
    estimated_rows: None,
    // Only for a rowid table: the store takes [`delete_batch`]'s choice instead.
    delete_batch: DELETE_BATCH_BY_ROWID,
    delete_returning: false,
    heap_extent: None,
    begin_write: "BEGIN IMMEDIATE",
    begin_snapshot: &[],
    insert_new: ("INSERT INTO", " ON CONFLICT (consumer, event_id) DO NOTHING RETURNING event_id"),
    tables_referencing_inbox: Some(
        "SELECT DISTINCT m.name FROM sqlite_master AS m \
         JOIN pragma_foreign_key_list(m.name) AS f \
         WHERE m.type = 'table' AND m.name <> 'processed_messages' COLLATE NOCASE \
         AND f.\"table\" = 'processed_messages' COLLATE NOCASE ORDER BY m.name",
    ),
    unique_keys: None,
    postgres_adoption: None,
    mysql_adoption: None,
    processed_at_unconvertible: None,
    // The key's own collation (its index), and the columns', which every `WHERE consumer
    // = ?` follows: SQLite names the latter nowhere, so it is told by how a value of the
    // column compares (a compound SELECT's column takes its first SELECT's collation).
    inexact_key_collations: Some(InexactKeyCollations {
        query: "SELECT LOWER(x.name), x.coll FROM pragma_index_list('processed_messages') AS l, \
                pragma_index_xinfo(l.name) AS x \
                WHERE l.origin = 'pk' AND x.key = 1 \
                AND LOWER(x.name) IN ('consumer', 'event_id') AND x.coll <> 'BINARY' \
                UNION SELECT 'consumer', 'NOCASE' WHERE EXISTS (SELECT 1 FROM (SELECT consumer \
                AS v FROM processed_messages WHERE 0 UNION ALL SELECT 'A') WHERE v = 'a') \
                UNION SELECT 'consumer', 'RTRIM' WHERE EXISTS (SELECT 1 FROM (SELECT consumer \
                AS v FROM processed_messages WHERE 0 UNION ALL SELECT 'a ') WHERE v = 'a') \
                UNION SELECT 'event_id', 'NOCASE' WHERE EXISTS (SELECT 1 FROM (SELECT event_id \
                AS v FROM processed_messages WHERE 0 UNION ALL SELECT 'A') WHERE v = 'a') \
                UNION SELECT 'event_id', 'RTRIM' WHERE EXISTS (SELECT 1 FROM (SELECT event_id \
                AS v FROM processed_messages WHERE 0 UNION ALL SELECT 'a ') WHERE v = 'a') \
                ORDER BY 1, 2",
        remedy: "SQLite cannot change a column's collation: make the table again without \
                 COLLATE, copying its rows",
    }),
    // The rebuild copies into TEXT columns, whose affinity turns numbers into text.
    // Names are the database's, in any case: a table, view or index of another table may
    // hold one. The rebuild drops the inbox's own indexes with it.
    names_taken: "SELECT type || ' ' || name \
             || CASE type WHEN 'index' THEN ' of table ' || tbl_name ELSE '' END \
         FROM sqlite_master \
         WHERE name COLLATE NOCASE IN ('processed_messages_consumer_processed_at_idx', \
                                       'processed_messages_consumer_coordinates_idx') \
         AND type <> 'trigger' \
         AND NOT (type = 'index' AND tbl_name = 'processed_messages' COLLATE NOCASE) \
         ORDER BY 1",
    migrated_key: MigratedKey {
        value: |column| format!("CASE WHEN typeof({column}) IN ('integer', 'real') THEN CAST({column} AS TEXT) ELSE {column} END"),
        compared_as: ", compared as text (the number 1 and the text '1' are one id)",
    },
    tables_with_foreign_keys_to_inbox: None,
    inbox_outside_creation_schema: None,
    migration_locking: MigrationLocking::ExclusiveTransaction {
        begin: "BEGIN IMMEDIATE",
        // A rebuild drops the inbox and renames the new table to its name. Without the
        // legacy rename, SQLite checks every view and trigger at the rename, and one that
        // names the inbox, missing at that moment, fails the migration; with it they are
        // left as they are, and name the rebuilt table.
        around: (
            "PRAGMA legacy_alter_table = ON",
            "PRAGMA legacy_alter_table = OFF",
        ),
    },
    migrations_table_ddl: "CREATE TABLE IF NOT EXISTS inboxctl_migrations ( \
                               version INTEGER NOT NULL PRIMARY KEY, \
                               description TEXT NOT NULL, \
                               checksum TEXT NOT NULL, \
                               applied_at TIMESTAMP NOT NULL \
                                   DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')), \
                               duration_ms INTEGER NOT NULL)",
    migrations: &[
        Migration {
            version: 1,
            description: "classic processed_messages table (created if missing)",
            up: include_str!("../../migrations/sqlite/0001_classic_table.up.sql"),
            down: include_str!("../../migrations/sqlite/0001_classic_table.down.sql"),
            in_place: None,
            in_place_indexes: None,
            rebuild: None,
            zoneless_times: None,
        },
        Migration {
            version: 2,
            description: "key (consumer, event_id), topic/partition/offset, indexes",
            up: include_str!("../../migrations/sqlite/0002_consumer_key_and_coordinates.up.sql"),
            down: include_str!("../../migrations/sqlite/0002_consumer_key_and_coordinates.down.sql"),
            in_place: None,
            in_place_indexes: None,
            rebuild: Some(TableRebuild {
                // table_xinfo lists generated columns too (hidden 2 and 3), which a rebuild
                // would lose as well.
                columns_query: "SELECT name, pk, \"notnull\" FROM pragma_table_xinfo('processed_messages') WHERE hidden <> 1",
                copied_columns: &["consumer", "event_id", "processed_at"],
                target_key: &["consumer", "event_id"],
                added_columns: &["topic", "partition", "offset"],
                up_in_target_layout: INDEXES_IF_MISSING,
            }),
            zoneless_times: None,
        },
    ],
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The indexes made on a table already in the target layout are the up SQL's own.
    #[test]
    fn indexes_if_missing_are_those_of_migration_2() {
        let up = DIALECT.migrations[1].up;
        let statements: Vec<&str> = INDEXES_IF_MISSING
            .split(';')
            .map(str::trim)
            .filter(|statement| !statement.is_empty())
            .collect();
        assert_eq!(statements.len(), 2);
        for statement in statements {
            let as_in_up = statement.replace("CREATE INDEX IF NOT EXISTS", "CREATE INDEX");
            assert!(
                up.contains(&format!("{as_in_up};")),
                "{as_in_up} is not in migration 2's up SQL"
            );
        }
    }

    /// Text that orders as time against `processed_at` with any number of digits after the
    /// second, none included.
    #[test]
    fn a_timestamp_is_written_without_trailing_zeros() {
        use chrono::TimeZone;
        let second = chrono::Utc.with_ymd_and_hms(2026, 11, 1, 8, 0, 0).unwrap();
        let at = |millis: i64| timestamp_text(second + chrono::Duration::milliseconds(millis));
        assert_eq!(at(0), "2026-11-01 08:00:00");
        assert_eq!(at(250), "2026-11-01 08:00:00.25");
        assert_eq!(at(123), "2026-11-01 08:00:00.123");
        assert_eq!(
            timestamp_text(second + chrono::Duration::microseconds(1)),
            "2026-11-01 08:00:00.000001"
        );
        // As times: equal values in other forms are not before it, earlier ones are.
        for (stored, before) in [
            ("2026-11-01 08:00:00", false),
            ("2026-11-01 08:00:00.000", false),
            ("2026-11-01 08:00:00.000000", false),
            ("2026-11-01 07:59:59.999", true),
            ("2026-11-01 07:59:59", true),
        ] {
            assert_eq!(stored < at(0).as_str(), before, "{stored}");
        }
        for (stored, before) in [
            ("2026-11-01 08:00:00", true),
            ("2026-11-01 08:00:00.2", true),
            ("2026-11-01 08:00:00.25", false),
            ("2026-11-01 08:00:00.250", false),
            ("2026-11-01 08:00:00.2500001", false),
        ] {
            assert_eq!(stored < at(250).as_str(), before, "{stored}");
        }
    }
}
