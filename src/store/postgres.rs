//! PostgreSQL: numbered parameters, transactional DDL, an advisory lock for `migrate run`.

use anyhow::Context;
use sqlx::AnyConnection;

use super::{
    BatchDelete, Dialect, InexactKeyCollations, MigratedKey, MigrationLocking,
    PostgresAdoptionQueries, UnconvertibleTimes,
};
use crate::migrate::{Migration, ZonelessTimes};

/// `delete_batch` for an inbox that is not a plain table (partitioned, a view), where a ctid
/// does not name one row: the batch's keys and times are selected first, then deleted by
/// key, through the key's index, and by time, so that another row of the same key (a
/// partitioned table's primary key must hold its partition key, processed_at say) stays.
const DELETE_BATCH_BY_KEY: BatchDelete = BatchDelete {
    wrap: (
        "WITH batch AS MATERIALIZED (SELECT event_id, processed_at FROM processed_messages WHERE ",
        "), deleted AS (DELETE FROM processed_messages \
         WHERE event_id = ANY(ARRAY(SELECT event_id FROM batch)) \
         AND (event_id, processed_at) IN (SELECT event_id, processed_at FROM batch) AND ",
    ),
    condition_again: true,
    packs: false,
};

/// A plain table: one relation holds all its rows. Not a partitioned table, nor one with
/// tables that inherit from it (partitioning by inheritance), whose DELETE reaches theirs.
const PLAIN_TABLE: &str = "SELECT COUNT(*) FROM pg_class \
     WHERE oid = to_regclass('processed_messages') AND relkind = 'r' AND NOT relhassubclass";

/// The batch delete that fits the inbox: by physical address in a plain table, by key and
/// time in any other. A ctid is unique only within one relation, so a DELETE by ctid alone
/// on a partitioned table would also take the rows at the same addresses in every other
/// partition; a view has none.
pub async fn batch_delete(connection: &mut AnyConnection) -> anyhow::Result<BatchDelete> {
    let plain: i64 = sqlx::query_scalar(PLAIN_TABLE)
        .fetch_one(connection)
        .await
        .context("could not read what kind of relation the inbox is")?;
    Ok(match plain {
        0 => DELETE_BATCH_BY_KEY,
        _ => DIALECT.delete_batch,
    })
}

pub static DIALECT: Dialect = Dialect {
    name: "PostgreSQL",
    session_setup: &[
        "SET TIME ZONE 'UTC'",
        "SET application_name = 'inboxctl'",
        // JIT compiles a statement whose estimated cost is high, and prune --group's guard (a
        // CASE over the partitions, costed on every row) is: at 5,000 partitions, 52 s of
        // compiling a count that runs in 26 ms. Before PostgreSQL 11 there is no `jit`.
        "SELECT set_config(name, 'off', false) FROM pg_settings WHERE name = 'jit'",
    ],
    serial_plans: &["SET max_parallel_workers_per_gather = 0"],
    numbered_params: true,
    identifier_quote: '"',
    timestamp_param_text: |at| at.format("%Y-%m-%d %H:%M:%S%.6f").to_string(),
    timestamp_param: |placeholder| format!("CAST({placeholder} AS timestamptz)"),
    earliest_prunable: None,
    // to_char has no text for infinity, and writes a year BC as if it were AD: such a value
    // is given as PostgreSQL shows it.
    timestamp_text: |expression| {
        format!(
            "CASE WHEN isfinite({expression}) AND {expression} >= '0001-01-01 00:00:00+00' \
             THEN to_char({expression} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') \
             ELSE CAST({expression} AS text) END"
        )
    },
    bigint: |expression| format!("CAST({expression} AS bigint)"),
    text: |expression| format!("CAST({expression} AS text)"),
    // The catalog itself, not information_schema: planning a query on information_schema's
    // views took 1-3 ms each, before a command's first statement, CPU time taken from the
    // application's own backends. The same relation kinds. The name is looked up along the
    // search_path, as every statement's unqualified name is, not in current_schema() alone:
    // a schema named like the user would hide the inbox in public from the check only.
    table_exists: "SELECT COUNT(*) FROM pg_catalog.pg_class c \
                   WHERE c.oid = to_regclass($1) AND c.relkind IN ('r', 'p', 'v', 'f')",
    columns: "SELECT CAST(a.attname AS text) FROM pg_catalog.pg_attribute a \
              JOIN pg_catalog.pg_class c ON c.oid = a.attrelid \
              WHERE c.oid = to_regclass($1) AND c.relkind IN ('r', 'p', 'v', 'f') \
              AND a.attnum > 0 AND NOT a.attisdropped",
    column_names_case_sensitive: true,
    // A loose index scan: one index probe per consumer instead of reading every row.
    consumers: "WITH RECURSIVE c(consumer) AS ( \
                    SELECT MIN(consumer) FROM processed_messages \
                    UNION ALL \
                    SELECT (SELECT MIN(consumer) FROM processed_messages WHERE consumer > c.consumer) \
                    FROM c WHERE c.consumer IS NOT NULL) \
                SELECT consumer FROM c WHERE consumer IS NOT NULL",
    estimated_rows: Some(
        "SELECT CAST(reltuples AS bigint) FROM pg_class \
         WHERE oid = to_regclass('processed_messages')",
    ),
    // ctid: the batch is found through the (consumer, processed_at) index and deleted by
    // physical address, without a second index lookup.
    delete_batch: BatchDelete {
        wrap: (
            "WITH deleted AS (DELETE FROM processed_messages WHERE ctid = ANY(ARRAY(SELECT ctid FROM processed_messages WHERE ",
            "))",
        ),
        condition_again: false,
        packs: true,
    },
    delete_returning: true,
    heap_extent: Some(
        "SELECT CAST(pg_relation_size(oid) / current_setting('block_size')::int AS bigint), \
                CAST(reltuples AS bigint), CAST(relpages AS bigint) \
         FROM pg_class WHERE oid = to_regclass('processed_messages') AND relkind = 'r' \
         AND NOT relhassubclass",
    ),
    begin_write: "BEGIN",
    begin_snapshot: &["BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"],
    insert_new: ("INSERT INTO", " ON CONFLICT (consumer, event_id) DO NOTHING RETURNING event_id"),
    tables_referencing_inbox: None,
    // A consumer or event_id that a unique index beside the primary key compares by a
    // nondeterministic collation of its own is shown with it, `event_id COLLATE ci`, and one
    // an exclusion constraint compares by another operator than `=` with that operator,
    // `consumer WITH <>`.
    unique_keys: Some(
        "SELECT CAST(c.relname AS text), \
                CASE WHEN i.indisprimary THEN 'p' WHEN i.indisexclusion THEN 'x' ELSE 'u' END, \
                COALESCE(CAST(a.attname AS text) || CASE WHEN NOT coll.collisdeterministic \
                    AND coll.oid <> a.attcollation AND NOT i.indisprimary \
                    AND a.attname IN ('consumer', 'event_id') \
                    THEN ' COLLATE ' || CAST(coll.collname AS text) ELSE '' END \
                    || CASE WHEN op.oprname <> '=' AND a.attname IN ('consumer', 'event_id') \
                    THEN ' WITH ' || CAST(op.oprname AS text) ELSE '' END, '(expression)') \
         FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid \
         CROSS JOIN unnest(CAST(i.indkey AS int2[])) WITH ORDINALITY AS k(n, position) \
         LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n \
         LEFT JOIN pg_catalog.pg_collation coll ON coll.oid = i.indcollation[k.position - 1] \
         LEFT JOIN pg_catalog.pg_constraint x ON x.conindid = i.indexrelid AND x.contype = 'x' \
         LEFT JOIN pg_catalog.pg_operator op ON op.oid = x.conexclop[k.position] \
         WHERE i.indrelid = to_regclass('processed_messages') \
         AND (i.indisunique OR i.indisexclusion) AND k.position <= i.indnkeyatts \
         ORDER BY c.relname, k.position",
    ),
    postgres_adoption: Some(PostgresAdoptionQueries {
        partition_key_beyond_the_key:
            "SELECT pg_get_partkeydef(p.partrelid) FROM pg_catalog.pg_partitioned_table p \
             WHERE p.partrelid = to_regclass('processed_messages') AND EXISTS ( \
                 SELECT 1 FROM unnest(CAST(p.partattrs AS int2[])) AS k(attnum) \
                 LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = k.attnum \
                 WHERE a.attname IS NULL OR a.attname NOT IN ('consumer', 'event_id'))",
        own_coordinate_columns:
            // A domain by the type it is over.
            "SELECT CAST(a.attname AS text), format_type( \
                    CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END, \
                    CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END) \
             FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
             WHERE a.attrelid = to_regclass('processed_messages') AND a.attnum > 0 \
             AND NOT a.attisdropped AND a.attname IN ('topic', 'partition', 'offset') \
             ORDER BY a.attnum",
        other_dependents_of_processed_at:
            "SELECT DISTINCT CASE d.classid \
                 WHEN CAST('pg_catalog.pg_trigger' AS regclass) THEN \
                     'trigger ' || (SELECT tgname FROM pg_catalog.pg_trigger WHERE oid = d.objid) \
                 WHEN CAST('pg_catalog.pg_policy' AS regclass) THEN \
                     'policy ' || (SELECT polname FROM pg_catalog.pg_policy WHERE oid = d.objid) \
                 WHEN CAST('pg_catalog.pg_attrdef' AS regclass) THEN \
                     'generated column ' || (SELECT g.attname FROM pg_catalog.pg_attrdef ad \
                     JOIN pg_catalog.pg_attribute g ON g.attrelid = ad.adrelid AND g.attnum = ad.adnum \
                     WHERE ad.oid = d.objid) \
                 ELSE 'index ' || CAST(CAST(d.objid AS regclass) AS text) END \
             FROM pg_catalog.pg_depend d \
             JOIN pg_catalog.pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid \
             WHERE d.refclassid = CAST('pg_catalog.pg_class' AS regclass) \
             AND d.refobjid = to_regclass('processed_messages') AND a.attname = 'processed_at' \
             AND (d.classid IN (CAST('pg_catalog.pg_trigger' AS regclass), \
                                CAST('pg_catalog.pg_policy' AS regclass)) \
                  OR (d.classid = CAST('pg_catalog.pg_attrdef' AS regclass) \
                      AND EXISTS (SELECT 1 FROM pg_catalog.pg_attrdef ad WHERE ad.oid = d.objid \
                                  AND ad.adnum <> a.attnum)) \
                  OR (d.classid = CAST('pg_catalog.pg_class' AS regclass) \
                      AND a.atttypid <> CAST('timestamptz' AS regtype) \
                      AND EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indexrelid = d.objid \
                                  AND (i.indexprs IS NOT NULL OR i.indpred IS NOT NULL)))) \
             ORDER BY 1",
        views_in_the_way:
            "SELECT DISTINCT CAST(v.oid AS regclass)::text, false FROM pg_catalog.pg_depend d \
             JOIN pg_catalog.pg_rewrite r ON r.oid = d.objid \
             JOIN pg_catalog.pg_class v ON v.oid = r.ev_class \
             JOIN pg_catalog.pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid \
             WHERE d.classid = 'pg_catalog.pg_rewrite'::regclass \
             AND d.refobjid = to_regclass('processed_messages') \
             AND a.attname = 'processed_at' AND v.oid <> d.refobjid \
             UNION \
             SELECT DISTINCT CAST(v.oid AS regclass)::text, true FROM pg_catalog.pg_depend d \
             JOIN pg_catalog.pg_rewrite r ON r.oid = d.objid \
             JOIN pg_catalog.pg_class v ON v.oid = r.ev_class \
             JOIN pg_catalog.pg_constraint p ON p.oid = d.refobjid \
             WHERE d.classid = 'pg_catalog.pg_rewrite'::regclass \
             AND d.refclassid = 'pg_catalog.pg_constraint'::regclass \
             AND p.conrelid = to_regclass('processed_messages') AND p.contype = 'p' \
             ORDER BY 2, 1",
    }),
    mysql_adoption: None,
    inexact_key_collations: Some(InexactKeyCollations {
        query: "SELECT CAST(a.attname AS text), CAST(c.collname AS text) \
         FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_collation c ON c.oid = a.attcollation \
         WHERE a.attrelid = to_regclass('processed_messages') AND a.attnum > 0 \
         AND NOT a.attisdropped AND a.attname IN ('consumer', 'event_id') \
         AND NOT c.collisdeterministic ORDER BY a.attnum",
        remedy: "ALTER TABLE processed_messages ALTER COLUMN consumer TYPE text COLLATE \"default\", \
                 ALTER COLUMN event_id TYPE text COLLATE \"default\"",
    }),
    // The change keeps the values and their collations.
    // Names are the schema's: any relation there may hold one, and the primary key's also a
    // constraint of the table's (a unique key's or exclusion constraint's index is a relation
    // already). The primary key is dropped before the new one is made.
    names_taken: "SELECT CASE c.relkind WHEN 'r' THEN 'table ' WHEN 'p' THEN 'table ' \
             WHEN 'v' THEN 'view ' WHEN 'm' THEN 'materialized view ' WHEN 'S' THEN 'sequence ' \
             WHEN 'i' THEN 'index ' WHEN 'I' THEN 'index ' ELSE 'relation ' END \
             || CAST(CAST(c.oid AS regclass) AS text) \
             || COALESCE(' of table ' || CAST(CAST(i.indrelid AS regclass) AS text), '') \
         FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid \
         WHERE c.relnamespace = (SELECT relnamespace FROM pg_catalog.pg_class \
                                 WHERE oid = to_regclass('processed_messages')) \
         AND c.relname IN ('processed_messages_pkey', \
                           'processed_messages_consumer_processed_at_idx', \
                           'processed_messages_consumer_coordinates_idx') \
         AND NOT (i.indrelid IS NOT DISTINCT FROM to_regclass('processed_messages') \
                  AND (i.indisprimary OR COALESCE( \
                      substring(pg_catalog.pg_get_indexdef(c.oid) from ' USING (.*)$') \
                      = CASE c.relname \
                        WHEN 'processed_messages_consumer_processed_at_idx' \
                            THEN 'btree (consumer, processed_at)' \
                        WHEN 'processed_messages_consumer_coordinates_idx' \
                            THEN 'btree (consumer, topic, partition, \"offset\")' END, false))) \
         UNION ALL \
         SELECT 'constraint ' || conname || ' of table processed_messages' \
         FROM pg_catalog.pg_constraint \
         WHERE conrelid = to_regclass('processed_messages') \
         AND conname = 'processed_messages_pkey' AND contype NOT IN ('p', 'u', 'x') \
         ORDER BY 1",
    migrated_key: MigratedKey {
        value: |column| column.to_string(),
        compared_as: "",
    },
    // Those with an assignment cast to timestamptz; a domain by the type it is over.
    processed_at_unconvertible: Some(UnconvertibleTimes {
        type_query: "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a \
         JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
         WHERE a.attrelid = to_regclass('processed_messages') AND a.attname = 'processed_at' \
         AND NOT a.attisdropped \
         AND CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END NOT IN \
             (CAST('timestamptz' AS regtype), CAST('timestamp' AS regtype), CAST('date' AS regtype))",
        unreadable_text: None,
        remedy: "ALTER TABLE processed_messages ALTER COLUMN processed_at TYPE timestamptz \
                 USING …",
    }),
    tables_with_foreign_keys_to_inbox: Some(
        // Only a foreign key to the primary key, which migration 2 drops and makes again:
        // one to another unique key stays valid throughout.
        "SELECT DISTINCT CAST(CAST(f.conrelid AS regclass) AS text) FROM pg_catalog.pg_constraint f \
         JOIN pg_catalog.pg_constraint p ON p.conrelid = f.confrelid AND p.contype = 'p' \
         AND p.conindid = f.conindid \
         WHERE f.contype = 'f' AND f.confrelid = to_regclass('processed_messages') ORDER BY 1",
    ),
    inbox_outside_creation_schema: Some(
        "SELECT CAST(n.nspname AS text), CAST(current_schema() AS text) \
         FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
         WHERE c.oid = to_regclass('processed_messages') \
         AND n.nspname IS DISTINCT FROM current_schema()",
    ),
    migration_locking: MigrationLocking::SessionLock {
        // The advisory lock's key is the bytes of "inboxctl" as a big-endian i64.
        lock: "SELECT CAST(1 AS bigint) FROM (SELECT pg_advisory_lock(7597117852321281132)) AS l",
        unlock: "SELECT CAST(1 AS bigint) FROM (SELECT pg_advisory_unlock(7597117852321281132)) AS l",
        transactional_ddl: true,
    },
    migrations_table_ddl: "CREATE TABLE IF NOT EXISTS inboxctl_migrations ( \
                               version bigint PRIMARY KEY, \
                               description text NOT NULL, \
                               checksum text NOT NULL, \
                               applied_at timestamptz NOT NULL DEFAULT now(), \
                               duration_ms bigint NOT NULL)",
    migrations: &[
        Migration {
            version: 1,
            description: "classic processed_messages table (created if missing)",
            up: include_str!("../../migrations/postgres/0001_classic_table.up.sql"),
            down: include_str!("../../migrations/postgres/0001_classic_table.down.sql"),
            in_place: None,
            in_place_indexes: None,
            rebuild: None,
            zoneless_times: None,
        },
        Migration {
            version: 2,
            description: "key (consumer, event_id), topic/partition/offset, indexes",
            up: include_str!("../../migrations/postgres/0002_consumer_key_and_coordinates.up.sql"),
            down: include_str!("../../migrations/postgres/0002_consumer_key_and_coordinates.down.sql"),
            in_place: None,
            in_place_indexes: None,
            rebuild: None,
            // Its `ALTER COLUMN processed_at TYPE timestamptz` reads a classic `timestamp`
            // column's values in the session's TimeZone.
            zoneless_times: Some(ZonelessTimes {
                present: "SELECT COUNT(*) FROM pg_catalog.pg_attribute a \
                          WHERE a.attrelid = to_regclass('processed_messages') \
                          AND a.attname = 'processed_at' AND NOT a.attisdropped \
                          AND a.atttypid = 'pg_catalog.timestamp'::regtype",
                // What the server applies at login when the client names no TimeZone: the
                // setting for this database and role, else for the role, else for the
                // database, else for all (ALTER ROLE ALL SET).
                configured_zone: "SELECT substr(s.config, strpos(s.config, '=') + 1), \
                                      CASE WHEN d.setrole <> 0 AND d.setdatabase <> 0 \
                                               THEN 'the TimeZone set for role ' || CAST(session_user AS text) || ' in this database' \
                                           WHEN d.setrole <> 0 \
                                               THEN 'the TimeZone set for role ' || CAST(session_user AS text) \
                                           WHEN d.setdatabase <> 0 THEN 'the TimeZone set for this database' \
                                           ELSE 'the TimeZone set for all roles' END \
                                  FROM pg_catalog.pg_db_role_setting d \
                                  CROSS JOIN LATERAL unnest(d.setconfig) WITH ORDINALITY AS s(config, position) \
                                  WHERE d.setdatabase IN (0, (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())) \
                                  AND d.setrole IN (0, (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = session_user)) \
                                  AND lower(s.config) LIKE 'timezone=%' \
                                  ORDER BY d.setrole <> 0 DESC, d.setdatabase <> 0 DESC, s.position DESC \
                                  LIMIT 1",
                // The last valid line of postgresql.conf / postgresql.auto.conf wins; with
                // none, the server runs on its built-in default.
                server_zone: "SELECT COALESCE(f.setting, p.boot_val), \
                                  CASE WHEN f.setting IS NULL THEN 'the server''s built-in TimeZone' \
                                       ELSE 'the TimeZone of the server''s configuration' END \
                              FROM pg_catalog.pg_settings p \
                              LEFT JOIN LATERAL (SELECT setting FROM pg_catalog.pg_file_settings \
                                                 WHERE lower(name) = 'timezone' AND error IS NULL \
                                                 ORDER BY seqno DESC LIMIT 1) f ON true \
                              WHERE p.name = 'TimeZone'",
                set_local_zone: "SELECT CAST(set_config('TimeZone', $1, true) AS text)",
            }),
        },
    ],
};

/// The types the server infers for the parameters of `sql`, as (schema, name) of the
/// catalog (`pg_catalog`, `timestamptz`), `$1` first; `None` when it cannot type them all or
/// the statement cannot be prepared by name (`CALL`, say).
pub async fn parameter_types(
    conn: &mut sqlx::AnyConnection,
    sql: &str,
) -> Result<Option<Vec<(String, String)>>, sqlx::Error> {
    const NAME: &str = "inboxctl_parameter_types";
    let prepare = format!("PREPARE {NAME} AS {sql}");
    match sqlx::raw_sql(&prepare).execute(&mut *conn).await {
        Ok(_) => {}
        Err(sqlx::Error::Database(_)) => return Ok(None),
        Err(error) => return Err(error),
    }
    let types = sqlx::query_as(
        "SELECT CAST(n.nspname AS text), CAST(t.typname AS text) \
         FROM pg_prepared_statements s \
         CROSS JOIN unnest(s.parameter_types) WITH ORDINALITY AS p(type_oid, position) \
         JOIN pg_type t ON t.oid = p.type_oid JOIN pg_namespace n ON n.oid = t.typnamespace \
         WHERE s.name = $1 ORDER BY p.position",
    )
    .bind(NAME)
    .fetch_all(&mut *conn)
    .await?;
    sqlx::raw_sql(&format!("DEALLOCATE {NAME}"))
        .execute(&mut *conn)
        .await?;
    Ok(Some(types))
}

/// What PostgreSQL's index on the inbox's key holds.
pub const KEY_INDEX_LIMIT: &str = "with the consumer's name it is over the 2,704 bytes an \
     entry of PostgreSQL's index on the inbox's key holds (ids that compress well may be longer)";

/// The bytes of consumer and event id together above which the index on the inbox's key may
/// refuse a row: an entry's 2,704 bytes less its headers and padding (up to 19 bytes, more
/// for a consumer over 126 bytes), and a margin, unless the server compresses the two.
pub const KEY_INDEX_BYTES: usize = 2_600;

/// Whether the server refused a row because its key is over what an index of it holds
/// (54000, `index row size 5024 exceeds btree version 4 maximum 2704 …`).
pub fn is_over_the_key_index(code: &str, message: &str) -> bool {
    code == "54000" && message.starts_with("index row size")
}

#[cfg(test)]
mod tests {
    #[test]
    fn lock_statements_use_the_documented_key() {
        let super::MigrationLocking::SessionLock { lock, unlock, .. } =
            &super::DIALECT.migration_locking
        else {
            panic!("PostgreSQL uses a session lock");
        };
        let key = i64::from_be_bytes(*b"inboxctl").to_string();
        assert!(lock.contains(&key));
        assert!(unlock.contains(&key));
    }
}
