//! Migrations of the inbox table: embedded per dialect, recorded with a checksum in the tool's
//! own `inboxctl_migrations`, applied under a lock so concurrent runs apply each version once.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use chrono::{DateTime, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, Connection, Executor, Row};

use crate::store::{
    is_server_connection_lost, Backend, MigrationLocking, MysqlAdoptionQueries,
    PostgresAdoptionQueries, QueryCanceller, Store, INBOX_TABLE, MIGRATIONS_TABLE, PRUNES_TABLE,
};
use crate::time::parse_stored_timestamp;

/// One schema change, with the SQL that undoes it.
#[derive(Debug)]
pub struct Migration {
    pub version: i64,
    pub description: &'static str,
    pub up: &'static str,
    pub down: &'static str,
    /// Where DDL commits on its own (MySQL/MariaDB): a query whose count is positive when
    /// this migration's change is in place. A run killed between the change (one atomic
    /// statement) and its bookkeeping leaves it applied but not recorded, or undone but
    /// still recorded; the next run then only records or forgets it.
    pub in_place: Option<&'static str>,
    /// With [`Migration::in_place`]: the indexes the migration makes, as (name, CREATE
    /// INDEX), and a query whose count is positive when an index of that name (`?`) exists.
    /// A table found in place is only recorded, but one made by hand may lack them; they are
    /// made then, as PostgreSQL's `IF NOT EXISTS` and SQLite's rebuild do.
    pub in_place_indexes: Option<InPlaceIndexes>,
    /// Where the up SQL rebuilds the inbox table (SQLite cannot change a primary key in
    /// place): which tables it may rebuild, and what it runs instead on one already done.
    pub rebuild: Option<TableRebuild>,
    /// Where the migration turns times without a zone into instants, and so must read them
    /// in the zone they were written in. Dialects with transactional DDL only.
    pub zoneless_times: Option<ZonelessTimes>,
}

#[derive(Debug)]
pub struct InPlaceIndexes {
    pub exists: &'static str,
    pub indexes: &'static [(&'static str, &'static str)],
}

/// A migration that rebuilds the inbox table copies only some columns into the new one; a
/// table with more would lose their values, and one already in the new layout needs no copy.
#[derive(Debug)]
pub struct TableRebuild {
    /// Each column of the inbox table (generated ones too) with its position in the primary
    /// key (0: not in it) and whether it is NOT NULL (1).
    pub columns_query: &'static str,
    /// The columns the rebuild copies.
    pub copied_columns: &'static [&'static str],
    /// The primary key of the rebuilt table, in order.
    pub target_key: &'static [&'static str],
    /// The columns the rebuilt table has besides the copied ones.
    pub added_columns: &'static [&'static str],
    /// What the migration runs on a table that already has the target key and columns: its
    /// up SQL without the rebuild (the indexes, each only if missing).
    pub up_in_target_layout: &'static str,
}

/// What a [`TableRebuild`] does with the table that is there.
#[derive(Debug, PartialEq, Eq)]
enum RebuildPlan {
    /// No table yet, or only copied columns: run the up SQL.
    Rebuild,
    /// The table already has the target key and columns: run `up_in_target_layout`.
    AlreadyInTargetLayout,
    /// The rebuild would lose these columns; where the table has the target key and columns,
    /// `nullable` names the copied ones that lack NOT NULL, which alone kept it from being
    /// taken for the target layout.
    WouldLose {
        lost: Vec<String>,
        nullable: Vec<String>,
    },
}

impl TableRebuild {
    /// Judges a table by its columns, their key positions and NOT NULL, as `columns_query`
    /// gives them. Names compare in any case, as SQLite compares unquoted names. A table in
    /// the target layout must also hold no NULL where the rebuilt one could not (SQLite lets
    /// a primary key's columns be NULL unless they say NOT NULL).
    fn plan(&self, columns: &[(String, i64, i64)]) -> RebuildPlan {
        let has = |wanted: &str| {
            columns
                .iter()
                .any(|(name, _, _)| name.eq_ignore_ascii_case(wanted))
        };
        let mut key: Vec<&(String, i64, i64)> = columns
            .iter()
            .filter(|(_, position, _)| *position > 0)
            .collect();
        key.sort_by_key(|(_, position, _)| *position);
        let key_is_target = key.len() == self.target_key.len()
            && key
                .iter()
                .zip(self.target_key)
                .all(|((name, _, _), wanted)| name.eq_ignore_ascii_case(wanted));
        let nullable: Vec<String> = columns
            .iter()
            .filter(|(name, _, not_null)| {
                *not_null != 1
                    && self
                        .copied_columns
                        .iter()
                        .any(|c| name.eq_ignore_ascii_case(c))
            })
            .map(|(name, _, _)| name.clone())
            .collect();
        let target_layout = key_is_target && self.added_columns.iter().all(|column| has(column));
        if target_layout && nullable.is_empty() {
            return RebuildPlan::AlreadyInTargetLayout;
        }
        let lost = self.lost_keeping(columns, self.copied_columns, &[]);
        match lost.is_empty() {
            true => RebuildPlan::Rebuild,
            false => RebuildPlan::WouldLose {
                lost,
                nullable: match target_layout {
                    true => nullable,
                    false => Vec::new(),
                },
            },
        }
    }

    /// The columns of `columns` that are neither in `kept` nor in `also_kept`.
    fn lost_keeping(
        &self,
        columns: &[(String, i64, i64)],
        kept: &[&str],
        also_kept: &[&str],
    ) -> Vec<String> {
        columns
            .iter()
            .map(|(name, _, _)| name)
            .filter(|name| {
                !kept
                    .iter()
                    .chain(also_kept)
                    .any(|kept| name.eq_ignore_ascii_case(kept))
            })
            .cloned()
            .collect()
    }

    fn refusal(
        &self,
        migration: &Migration,
        lost: &[String],
        nullable: &[String],
    ) -> anyhow::Error {
        let not_the_layout = match nullable.is_empty() {
            true => String::new(),
            false => format!(
                "it has the key and the columns of the inbox's layout, but {} may be NULL (no NOT \
                 NULL), so it is not taken for that layout; ",
                nullable.join(", ")
            ),
        };
        anyhow::anyhow!(
            "migration {} ({}) would lose column(s) {} of table {INBOX_TABLE}: {not_the_layout}SQLite cannot change a \
             primary key, so the migration rebuilds the table and copies only {}. Nothing was changed. \
             Give the table the primary key ({}), with {} NOT NULL, and the columns {} yourself, \
             keeping your own (migrate run then only adds its indexes), or drop the columns named if \
             their values are not needed",
            migration.version,
            migration.description,
            lost.join(", "),
            self.copied_columns.join(", "),
            self.target_key.join(", "),
            self.copied_columns.join(", "),
            self.added_columns.join(", "),
        )
    }

    /// Refuses a revert whose rebuild back to the copied columns would lose columns of the
    /// table's own (the added ones go, as the revert means on every backend).
    async fn check_revert(
        &self,
        connection: &mut sqlx::AnyConnection,
        migration: &Migration,
    ) -> anyhow::Result<()> {
        let columns = self.columns(connection).await?;
        let lost = self.lost_keeping(&columns, self.copied_columns, self.added_columns);
        if lost.is_empty() {
            return Ok(());
        }
        Err(anyhow::anyhow!(
            "reverting migration {} ({}) would lose column(s) {} of table {INBOX_TABLE}: SQLite \
             rebuilds the table back to {} only. Nothing was changed. Drop the columns named \
             first if their values are not needed",
            migration.version,
            migration.description,
            lost.join(", "),
            self.copied_columns.join(", "),
        ))
    }

    async fn columns(
        &self,
        connection: &mut sqlx::AnyConnection,
    ) -> anyhow::Result<Vec<(String, i64, i64)>> {
        sqlx::query_as(self.columns_query)
            .fetch_all(&mut *connection)
            .await
            .with_context(|| format!("could not list the columns of table {INBOX_TABLE}"))
    }
}

/// The SQL that applying `migration` runs on this database: its up SQL, or, for a table
/// rebuild, the rest of it on a table already in the target layout. Refuses a rebuild that
/// would lose columns, before anything is written.
async fn up_sql(
    store: &Store,
    connection: &mut sqlx::AnyConnection,
    migration: &Migration,
) -> anyhow::Result<&'static str> {
    // Migration 1 creates the inbox where it is missing.
    if let (1, Some(query)) = (
        migration.version,
        store.dialect.inbox_outside_creation_schema,
    ) {
        let elsewhere: Option<(String, String)> = sqlx::query_as(query)
            .fetch_optional(&mut *connection)
            .await
            .with_context(|| format!("could not look up the schema of {INBOX_TABLE}"))?;
        if let Some((schema, first)) = elsewhere {
            bail!(
                "{INBOX_TABLE} is in schema {schema}, but new tables go to schema {first}, the \
                 first on this session's search_path: migration {} would make a second, empty \
                 inbox there, which would hide this one. Nothing was changed. Run migrate with \
                 the search_path the application has (ALTER ROLE … SET search_path = {schema}, \
                 say)",
                migration.version
            );
        }
    }
    // Judged first: whether the rows are copied decides what adoption looks for.
    let plan = match &migration.rebuild {
        Some(rebuild) => Some((rebuild, rebuild.plan(&rebuild.columns(connection).await?))),
        None => None,
    };
    if migration.version == 2 {
        let copied = plan
            .as_ref()
            .is_some_and(|(_, plan)| *plan != RebuildPlan::AlreadyInTargetLayout);
        refuse_unadoptable(store, connection, migration, copied).await?;
    }
    let Some((rebuild, plan)) = plan else {
        return Ok(migration.up);
    };
    match plan {
        RebuildPlan::Rebuild => {
            let doing = format!(
                "migration {} ({}) rebuilds table {INBOX_TABLE} (SQLite cannot change a \
                 primary key)",
                migration.version, migration.description
            );
            refuse_when_referenced(store, connection, &doing).await?;
            Ok(migration.up)
        }
        RebuildPlan::AlreadyInTargetLayout => {
            refuse_kept_layout(store, connection, migration).await?;
            Ok(rebuild.up_in_target_layout)
        }
        RebuildPlan::WouldLose { lost, nullable } => {
            Err(rebuild.refusal(migration, &lost, &nullable))
        }
    }
}

/// Refuses, before anything is written, a table that migration 2 would make into something
/// other than the inbox, or would fail on: rows without a consumer, an event id or a time,
/// rows its key would hold as one, and names of its own objects already taken (every
/// backend); where it alters the table in place (PostgreSQL, MySQL), keys that can refuse
/// rows the inbox's key keeps apart, foreign keys to it, and times it cannot convert; on
/// PostgreSQL, collations it would keep that ignore case, a partition key beyond its key,
/// coordinate columns of the table's own that cannot hold the inbox's values, and what
/// depends on the column whose type it sets or on the key it drops; on MySQL, what its one
/// statement would fail on (see [`mysql_conversion_refusal`]) and coordinates it would add
/// again. `copied`: whether the change copies the rows into a new table (SQLite's rebuild).
async fn refuse_unadoptable(
    store: &Store,
    connection: &mut sqlx::AnyConnection,
    migration: &Migration,
    copied: bool,
) -> anyhow::Result<()> {
    if !store.table_exists_on(connection, INBOX_TABLE).await? {
        return Ok(());
    }
    // Every backend: the change makes these NOT NULL, and would fail on such a row (SQLite
    // lets a text primary key hold NULL).
    let nulls: (i64, i64, i64) = sqlx::query_as(&format!(
        "SELECT COUNT(CASE WHEN consumer IS NULL THEN 1 END), \
         COUNT(CASE WHEN event_id IS NULL THEN 1 END), \
         COUNT(CASE WHEN processed_at IS NULL THEN 1 END) FROM {INBOX_TABLE}"
    ))
    .fetch_one(&mut *connection)
    .await
    .with_context(|| format!("could not read {INBOX_TABLE}"))?;
    let mut reasons = Vec::new();
    for (count, column, remedy) in [
        (
            nulls.0,
            "consumer",
            "give {them} the consumer that processed {them}",
        ),
        (
            nulls.1,
            "event_id",
            "give {them} {their} event id, or delete {them}",
        ),
        (
            nulls.2,
            "processed_at",
            "give {them} the time {they} {were} processed",
        ),
    ] {
        if count == 0 {
            continue;
        }
        let one = count == 1;
        let remedy = remedy
            .replace("{them}", if one { "it" } else { "them" })
            .replace("{their}", if one { "its" } else { "their" })
            .replace("{they}", if one { "it" } else { "they" })
            .replace("{were}", if one { "was" } else { "were" });
        reasons.push(format!(
            "{} no {column} (NULL), and migration {} makes {column} NOT NULL; {remedy}",
            crate::output::counted(count as u64, "row has", "rows have"),
            migration.version,
        ));
    }
    let keys = unique_keys(store, connection).await?;
    let key_column_types: Vec<KeyColumnType> = match &store.dialect.mysql_adoption {
        Some(queries) => sqlx::query_as(queries.key_column_types)
            .fetch_all(&mut *connection)
            .await
            .with_context(|| format!("could not read the column types of {INBOX_TABLE}"))?,
        None => Vec::new(),
    };
    reasons.extend(
        rows_made_one(
            store,
            connection,
            migration,
            &keys,
            &key_column_types,
            copied,
        )
        .await?,
    );
    let taken: Vec<String> = sqlx::query_scalar(store.dialect.names_taken)
        .fetch_all(&mut *connection)
        .await
        .with_context(|| "could not look up which names of migration 2's objects are taken")?;
    reasons.extend(taken.iter().map(|holder| {
        format!(
            "{holder} has a name migration {} gives to one of its own; drop or rename it",
            migration.version
        )
    }));
    if store.dialect.unique_keys.is_none() {
        return refusal(migration, &reasons);
    }
    let mysql = store.backend == Backend::Mysql;
    reasons.extend(adoption_refusal(&keys, mysql));
    // PostgreSQL adds the coordinates only where they are missing; MySQL's one statement
    // would fail on a column the table has of its own. (Where all of migration 2's change
    // is in place, MySQL only records it, and nothing here is asked.)
    if mysql {
        let columns = store.columns(INBOX_TABLE).await?;
        let present: Vec<&str> = ["topic", "partition", "offset"]
            .into_iter()
            .filter(|column| columns.contains(column))
            .collect();
        if !present.is_empty() {
            reasons.push(format!(
                "it already has the column(s) {}, which migration {} adds in one statement \
                 that would fail on them",
                present.join(", "),
                migration.version
            ));
        }
    }
    // PostgreSQL's change keeps the columns' collations; MySQL's converts them, and
    // SQLite's rebuild makes them anew (where either is in place, that path asks).
    if store.backend == Backend::Postgres {
        reasons.extend(inexact_key_collation(store, connection, migration).await?);
    }
    if let Some(times) = &store.dialect.processed_at_unconvertible {
        let type_name: Option<String> = sqlx::query_scalar(times.type_query)
            .fetch_optional(&mut *connection)
            .await
            .with_context(|| format!("could not read the column types of {INBOX_TABLE}"))?;
        if let Some(type_name) = type_name {
            reasons.push(format!(
                "its processed_at column is {type_name}, which migration {} cannot turn into \
                 a time without being told how (a number may be epoch seconds or \
                 milliseconds); convert it first ({})",
                migration.version, times.remedy
            ));
        }
        if let Some(query) = times.unreadable_text {
            let unreadable: i64 = sqlx::query_scalar(query)
                .fetch_one(&mut *connection)
                .await
                .with_context(|| format!("could not read {INBOX_TABLE}"))?;
            if unreadable > 0 {
                reasons.push(format!(
                    "{} a processed_at that is not a time in the form YYYY-MM-DD \
                     HH:MM:SS[.ffffff], which migration {} cannot convert; convert {} first \
                     ({})",
                    crate::output::counted(unreadable as u64, "row has", "rows have"),
                    migration.version,
                    if unreadable == 1 { "it" } else { "them" },
                    times.remedy
                ));
            }
        }
    }
    if let Some(queries) = &store.dialect.postgres_adoption {
        reasons.extend(postgres_alteration_refusal(connection, queries, migration).await?);
    }
    if let Some(queries) = &store.dialect.mysql_adoption {
        let read = |what: &str| format!("could not read the {what} of {INBOX_TABLE}");
        let options: Option<TableOptions> = sqlx::query_as(queries.table_options)
            .fetch_optional(&mut *connection)
            .await
            .with_context(|| read("engine and row format"))?;
        let foreign_keys: Vec<OwnForeignKey> = sqlx::query_as(queries.foreign_keys)
            .fetch_all(&mut *connection)
            .await
            .with_context(|| read("foreign keys"))?;
        reasons.extend(mysql_conversion_refusal(
            options.as_ref(),
            &key_column_types,
            &foreign_keys,
        ));
    }
    if let Some(query) = store.dialect.tables_with_foreign_keys_to_inbox {
        let tables: Vec<String> = sqlx::query_scalar(query)
            .fetch_all(&mut *connection)
            .await
            .with_context(|| {
                format!("could not list the foreign keys that reference {INBOX_TABLE}")
            })?;
        if !tables.is_empty() {
            reasons.push(format!(
                "table(s) {} reference it by foreign key, which migration {} cannot keep while \
                 it changes the table's key; drop those foreign keys first and make them again \
                 afterwards on (consumer, event_id), the new key (event_id alone is no longer \
                 one)",
                tables.join(", "),
                migration.version
            ));
        }
    }
    refusal(migration, &reasons)
}

/// Why PostgreSQL would refuse migration 2's changes to this table, or make it other than
/// the inbox: a partition key beyond the key it makes, coordinate columns of the table's own
/// (which it keeps) that cannot hold the inbox's values, and what depends on the column whose
/// type it sets or on the key it drops.
async fn postgres_alteration_refusal(
    connection: &mut sqlx::AnyConnection,
    queries: &PostgresAdoptionQueries,
    migration: &Migration,
) -> anyhow::Result<Vec<String>> {
    let mut reasons = Vec::new();
    let partitioned: Option<String> = sqlx::query_scalar(queries.partition_key_beyond_the_key)
        .fetch_optional(&mut *connection)
        .await
        .with_context(|| format!("could not read the partition key of {INBOX_TABLE}"))?;
    if let Some(key) = partitioned {
        reasons.push(format!(
            "it is partitioned by {key}, and a partitioned table's primary key must hold \
             its partition key, so migration {} cannot make the key (consumer, event_id); \
             the inbox can be partitioned by consumer, and prune deletes its old rows",
            migration.version
        ));
    }
    let columns: Vec<(String, String)> = sqlx::query_as(queries.own_coordinate_columns)
        .fetch_all(&mut *connection)
        .await
        .with_context(|| format!("could not read the column types of {INBOX_TABLE}"))?;
    reasons.extend(coordinate_type_refusal(&columns));
    let dependents: Vec<String> = sqlx::query_scalar(queries.other_dependents_of_processed_at)
        .fetch_all(&mut *connection)
        .await
        .with_context(|| format!("could not list what depends on {INBOX_TABLE}"))?;
    if !dependents.is_empty() {
        let (depend, they_do, them) = match dependents.len() {
            1 => ("depends", "it does", "it"),
            _ => ("depend", "they do", "them"),
        };
        reasons.push(format!(
            "{} {depend} on its processed_at, whose type migration {} sets (timestamptz), \
             which PostgreSQL refuses while {they_do}; drop {them} first and make {them} \
             again afterwards",
            dependents.join(", "),
            migration.version,
        ));
    }
    let views: Vec<(String, bool)> = sqlx::query_as(queries.views_in_the_way)
        .fetch_all(&mut *connection)
        .await
        .with_context(|| format!("could not list the views that read {INBOX_TABLE}"))?;
    let named = |on_key: bool| {
        let names: Vec<&str> = views
            .iter()
            .filter(|(_, key)| *key == on_key)
            .map(|(name, _)| name.as_str())
            .collect();
        (!names.is_empty()).then(|| names.join(", "))
    };
    if let Some(views) = named(false) {
        reasons.push(format!(
            "view(s) {views} read its processed_at, whose type migration {} sets \
             (timestamptz), which PostgreSQL refuses while a view reads the column; drop \
             them first and make them again afterwards",
            migration.version
        ));
    }
    if let Some(views) = named(true) {
        reasons.push(format!(
            "view(s) {views} depend on its primary key (by grouping by it, say), which \
             migration {} drops to make the key (consumer, event_id), which PostgreSQL \
             refuses while a view depends on it; drop them first and make them again \
             afterwards, grouping by consumer and event_id",
            migration.version
        ));
    }
    Ok(reasons)
}

/// The inbox's unique keys as (name, kind, its columns joined by commas), where the dialect
/// lists them (see [`crate::store::Dialect::unique_keys`]).
async fn unique_keys(
    store: &Store,
    connection: &mut sqlx::AnyConnection,
) -> anyhow::Result<Vec<(String, String, String)>> {
    match store.dialect.unique_keys {
        Some(query) => unique_keys_by(connection, query).await,
        None => Ok(Vec::new()),
    }
}

/// [`unique_keys`] as `query` lists them, one row a column: (key, kind, column).
async fn unique_keys_by(
    connection: &mut sqlx::AnyConnection,
    query: &str,
) -> anyhow::Result<Vec<(String, String, String)>> {
    let key_columns: Vec<(String, String, String)> = sqlx::query_as(query)
        .fetch_all(&mut *connection)
        .await
        .with_context(|| format!("could not list the unique keys of {INBOX_TABLE}"))?;
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for (name, kind, column) in key_columns {
        match keys.last_mut() {
            Some((last, _, columns)) if *last == name => {
                columns.push(',');
                columns.push_str(&column);
            }
            _ => keys.push((name, kind, column)),
        }
    }
    Ok(keys)
}

/// Why migration 2 would refuse the table's rows as duplicates, or could not convert their
/// key values, where it could: on MySQL, values the conversion to utf8mb4 cannot keep; then
/// the (consumer, event_id) pairs more than one row holds, compared as the new key will
/// compare them. Each reads the whole table, as the change itself does, and is skipped where
/// the table rules it out: PostgreSQL keeps the values and their collations (a
/// nondeterministic one is refused elsewhere), so its primary key within (consumer,
/// event_id) suffices (a unique index may be partial or invalid); MySQL's conversion is
/// lossless from these character sets, and makes two values one only from a collation in
/// which trailing spaces count (`_nopad_`); SQLite copies the rows only where `copied` (not
/// into a table already in the layout). `columns` are MySQL's [`KeyColumnType`]s.
async fn rows_made_one(
    store: &Store,
    connection: &mut sqlx::AnyConnection,
    migration: &Migration,
    keys: &[(String, String, String)],
    columns: &[KeyColumnType],
    copied: bool,
) -> anyhow::Result<Vec<String>> {
    let within_the_key = |kinds: &[&str]| {
        keys.iter().any(|(_, kind, list)| {
            kinds.contains(&kind.as_str())
                && columns_of(list)
                    .iter()
                    .all(|column| column == "consumer" || column == "event_id")
        })
    };
    let possible = match store.backend {
        Backend::Postgres => !within_the_key(&["p"]),
        Backend::Sqlite => copied,
        Backend::Mysql => {
            // A number (no character set) converts to text without a '?', but two floats
            // may become one text.
            let unconvertible: Vec<&str> = columns
                .iter()
                .filter(|(_, _, _, _, set, _)| {
                    !set.is_empty() && !MYSQL_LOSSLESS_INTO_UTF8MB4.contains(&set.as_str())
                })
                .map(|(column, ..)| column.as_str())
                .collect();
            let numbers = columns.iter().any(|(_, _, _, _, set, _)| set.is_empty());
            if let Some(reason) = unconvertible_keys(connection, migration, &unconvertible).await? {
                return Ok(vec![reason]);
            }
            // MariaDB names its NO PAD collations so; MySQL 8's 0900 ones are all NO PAD.
            let padding_changes = columns.iter().any(|(_, _, _, _, _, collation)| {
                collation.contains("_nopad_") || collation.contains("_0900_")
            });
            !within_the_key(&["p", "u"]) || !unconvertible.is_empty() || numbers || padding_changes
        }
    };
    match possible {
        true => Ok(duplicate_keys(store, connection, migration)
            .await?
            .into_iter()
            .collect()),
        false => Ok(Vec::new()),
    }
}

/// The character sets (MySQL/MariaDB) whose every value converts to utf8mb4 as itself, and
/// two different values to two different ones.
const MYSQL_LOSSLESS_INTO_UTF8MB4: &[&str] = &["utf8mb4", "utf8mb3", "utf8", "latin1", "ascii"];

/// Why migration 2 cannot convert the values of these MySQL key columns to utf8mb4, if it
/// cannot: rows holding characters utf8mb4 has no match for, which the conversion turns into
/// `?` (counted as the difference in `?`s, which the value may hold of its own).
async fn unconvertible_keys(
    connection: &mut sqlx::AnyConnection,
    migration: &Migration,
    columns: &[&str],
) -> anyhow::Result<Option<String>> {
    if columns.is_empty() {
        return Ok(None);
    }
    let questions =
        |value: &str| format!("CHAR_LENGTH({value}) - CHAR_LENGTH(REPLACE({value}, '?', ''))");
    let counts = columns
        .iter()
        .map(|column| {
            format!(
                "CAST(COUNT(CASE WHEN {} <> {} THEN 1 END) AS SIGNED)",
                questions(column),
                questions(&format!("CONVERT({column} USING utf8mb4)"))
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let row = sqlx::query(&format!("SELECT {counts} FROM {INBOX_TABLE}"))
        .fetch_one(&mut *connection)
        .await
        .with_context(|| format!("could not read {INBOX_TABLE}"))?;
    let mut found = Vec::new();
    for (index, column) in columns.iter().enumerate() {
        let rows: i64 = row.try_get(index)?;
        if rows > 0 {
            let article = if column.starts_with('e') { "an" } else { "a" };
            found.push(format!(
                "{} {article} {column} with characters utf8mb4 has no match for",
                crate::output::counted(rows as u64, "row has", "rows have"),
            ));
        }
    }
    Ok((!found.is_empty()).then(|| {
        format!(
            "{}, which migration {}'s conversion to utf8mb4 cannot keep (it would \
             refuse them, or make them '?'); change or delete those rows first (then migrate \
             also checks for rows the new key would hold as one)",
            found.join(", and "),
            migration.version
        )
    }))
}

/// Why migration 2's key would refuse the table's rows, if it would: the (consumer, event_id)
/// pairs that more than one row holds, compared as the new key will compare them (rows
/// without either are refused on their own). It reads the whole table, as the change does.
async fn duplicate_keys(
    store: &Store,
    connection: &mut sqlx::AnyConnection,
    migration: &Migration,
) -> anyhow::Result<Option<String>> {
    let dialect = &store.dialect;
    let (consumer, event_id) = (
        (dialect.migrated_key.value)("consumer"),
        (dialect.migrated_key.value)("event_id"),
    );
    let duplicates: Vec<(String, String, i64, i64)> = sqlx::query_as(&format!(
        "SELECT {}, {}, {}, {} FROM (SELECT {consumer} AS c, {event_id} AS e, COUNT(*) AS n \
         FROM {INBOX_TABLE} WHERE consumer IS NOT NULL AND event_id IS NOT NULL \
         GROUP BY {consumer}, {event_id} HAVING COUNT(*) > 1) d \
         ORDER BY n DESC, c, e LIMIT 3",
        (dialect.text)("c"),
        (dialect.text)("e"),
        (dialect.bigint)("n"),
        (dialect.bigint)("COUNT(*) OVER ()"),
    ))
    .fetch_all(&mut *connection)
    .await
    .with_context(|| format!("could not read {INBOX_TABLE}"))?;
    let Some((_, _, _, pairs)) = duplicates.first() else {
        return Ok(None);
    };
    let examples: Vec<String> = duplicates
        .iter()
        .map(|(consumer, event_id, rows, _)| {
            format!(
                "({}, {}) in {rows} rows",
                crate::output::shown_id(consumer),
                crate::output::shown_id(event_id)
            )
        })
        .collect();
    let more = match *pairs as usize > examples.len() {
        true => ", …",
        false => "",
    };
    Ok(Some(format!(
        "{} more than one row{}: {}{more}; migration {}'s key (consumer, event_id) holds one \
         row for each, so keep one and delete the others",
        crate::output::counted(
            *pairs as u64,
            "(consumer, event_id) is held by",
            "(consumer, event_id) pairs are each held by"
        ),
        dialect.migrated_key.compared_as,
        examples.join(", "),
        migration.version,
    )))
}

/// The refusal of [`refuse_unadoptable`], when there are `reasons`.
fn refusal(migration: &Migration, reasons: &[String]) -> anyhow::Result<()> {
    if reasons.is_empty() {
        return Ok(());
    }
    bail!(
        "migration {} ({}) cannot adopt table {INBOX_TABLE}: {}. Nothing was changed; change \
         the table as said, then run migrate again",
        migration.version,
        migration.description,
        reasons.join("; ")
    )
}

/// Why a table with these unique keys, each (name, `p` or `u`, its columns), cannot be
/// adopted: a primary key other than the classic `(event_id)` (or the inbox's own `(consumer,
/// event_id)`), which migration 2 would drop; on MySQL, none at all, which it cannot drop;
/// and any other unique key without both `consumer` and `event_id`, which can refuse rows
/// the inbox's key keeps apart (a second consumer's row for an event, say).
fn adoption_refusal(keys: &[(String, String, String)], needs_primary_key: bool) -> Vec<String> {
    let mut reasons = Vec::new();
    let primary = keys.iter().find(|(_, kind, _)| kind == "p");
    match primary {
        Some((name, _, list)) => {
            let mut columns = columns_of(list);
            columns.sort();
            if columns != ["event_id"] && columns != ["consumer", "event_id"] {
                reasons.push(format!(
                    "its primary key {name} is on ({list}), where the classic table's is on \
                     (event_id)"
                ));
            }
        }
        None if needs_primary_key => reasons
            .push("it has no primary key, where the classic table's is on (event_id)".to_string()),
        None => {}
    }
    // Only a key that holds both, whole, refuses nothing the inbox's key keeps apart.
    for (name, kind, list) in keys.iter().filter(|(_, kind, _)| kind != "p") {
        // PostgreSQL's exclusion constraints refuse rows as a unique key does.
        let quoted = name.replace('"', "\"\"");
        let (key, drop) = match kind.as_str() {
            "x" => (
                "exclusion constraint",
                format!("ALTER TABLE {INBOX_TABLE} DROP CONSTRAINT \"{quoted}\""),
            ),
            _ => ("unique key", format!("DROP INDEX \"{quoted}\"")),
        };
        // PostgreSQL: `event_id COLLATE ignoring_case`, a key that compares by a collation
        // of its own that takes differing text for equal, or `consumer WITH <>`, an
        // exclusion constraint that compares by another operator than equality.
        let collated: Vec<String> = list
            .split(',')
            .filter(|column| column.contains(" WITH ") || column.contains(" COLLATE "))
            .map(|column| {
                let (column, operator) = column.split_once(" WITH ").unwrap_or((column, ""));
                let (column, collation) = column.split_once(" COLLATE ").unwrap_or((column, ""));
                let mut how = column.to_string();
                if !operator.is_empty() {
                    how.push_str(&format!(" with {operator}"));
                }
                if !collation.is_empty() {
                    how.push_str(&format!(" by {collation}"));
                }
                how
            })
            .collect();
        if !collated.is_empty() {
            reasons.push(format!(
                "its {key} {name} on ({list}) compares {}, where the inbox's key compares every \
                 character for equality, so it can refuse rows that the inbox's key keeps \
                 apart; drop it ({drop}), or make it again comparing them with = and without \
                 a COLLATE",
                collated.join(" and ")
            ));
            continue;
        }
        let columns = columns_of(list);
        let holds = |key: &str| columns.iter().any(|c| c == key);
        if holds("consumer") && holds("event_id") {
            continue;
        }
        // MySQL: `event_id(20)`, a key on the column's first 20 characters.
        let prefixed: Vec<&str> = ["consumer", "event_id"]
            .into_iter()
            .filter(|key| {
                columns.iter().any(|c| {
                    c.strip_prefix(key)
                        .is_some_and(|rest| rest.starts_with('(') && rest.ends_with(')'))
                })
            })
            .collect();
        let what = match prefixed.is_empty() {
            true => "does not hold both consumer and event_id".to_string(),
            false => format!(
                "holds only the first characters of {}",
                prefixed.join(" and ")
            ),
        };
        reasons.push(format!(
            "its {key} {name} on ({list}) {what}, so it can refuse rows that the inbox's key \
             keeps apart"
        ));
    }
    reasons
}

/// The columns of a key as [`adoption_refusal`] takes it (`event_id,Consumer`), lowercased.
fn columns_of(list: &str) -> Vec<String> {
    list.split(',')
        .filter(|c| !c.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Refuses a table already in the inbox's layout, which migration 2 only records (MySQL,
/// SQLite), when what it keeps will not do: a `consumer` or `event_id` that compares
/// ignoring case or accents (see [`inexact_key_collation`]), and on MySQL what
/// [`mysql_kept_layout_refusal`] finds.
async fn refuse_kept_layout(
    store: &Store,
    connection: &mut sqlx::AnyConnection,
    migration: &Migration,
) -> anyhow::Result<()> {
    let mut reasons: Vec<String> = inexact_key_collation(store, connection, migration)
        .await?
        .into_iter()
        .collect();
    if let (2, Some(queries)) = (migration.version, &store.dialect.mysql_adoption) {
        reasons.extend(mysql_kept_layout_refusal(store, connection, queries).await?);
    }
    // SQLite's table keeps its own unique indexes (its primary key is the inbox's already).
    if (migration.version, store.backend) == (2, Backend::Sqlite) {
        let keys = unique_keys_by(connection, crate::store::sqlite::KEPT_UNIQUE_KEYS).await?;
        reasons.extend(adoption_refusal(&keys, false));
    }
    refusal(migration, &reasons)
}

/// The statement that gives a MySQL table the inbox's `processed_at`.
const MYSQL_PROCESSED_AT: &str =
    "ALTER TABLE processed_messages MODIFY processed_at DATETIME(6) NOT NULL DEFAULT \
     CURRENT_TIMESTAMP(6)";

/// Why a MySQL table made by hand in the inbox's layout, which migration 2 only records and
/// so keeps as it is, will not do: coordinate columns that cannot hold what the inbox writes,
/// a `processed_at` that is not a time or not dated by the server when a row is written
/// (see [`mysql_kept_processed_at`]), a primary key on the first characters of a column,
/// or another unique key that can refuse rows the inbox's key keeps apart.
async fn mysql_kept_layout_refusal(
    store: &Store,
    connection: &mut sqlx::AnyConnection,
    queries: &MysqlAdoptionQueries,
) -> anyhow::Result<Vec<String>> {
    let read = |what: &str| format!("could not read the {what} of {INBOX_TABLE}");
    let unfit: Vec<(String, String)> = sqlx::query_as(queries.unfit_coordinates_in_place)
        .fetch_all(&mut *connection)
        .await
        .with_context(|| read("column types"))?;
    let mut reasons: Vec<String> = unfit
        .iter()
        .map(|(column, type_name)| coordinate_reason(column, type_name))
        .collect();
    let processed_at: Option<(String, String, String, String)> =
        sqlx::query_as(queries.processed_at)
            .fetch_optional(&mut *connection)
            .await
            .with_context(|| read("column types"))?;
    if let Some((column_type, data_type, default, nullable)) = processed_at {
        reasons.extend(mysql_kept_processed_at(
            &column_type,
            &data_type,
            &default,
            nullable == "YES",
        ));
    }
    let prefixes: Vec<String> = sqlx::query_scalar(queries.primary_key_prefixes)
        .fetch_all(&mut *connection)
        .await
        .with_context(|| read("primary key"))?;
    if !prefixes.is_empty() {
        reasons.push(format!(
            "its primary key holds only the first characters of a column ({}), which \
             migration 2 keeps in a table already in the inbox's layout, and two event ids \
             alike in those would be taken for one event; make the key whole on the inbox's \
             columns (ALTER TABLE {INBOX_TABLE} MODIFY consumer VARCHAR(255) CHARACTER SET \
             utf8mb4 COLLATE utf8mb4_bin NOT NULL, MODIFY event_id VARCHAR(255) CHARACTER SET \
             utf8mb4 COLLATE utf8mb4_bin NOT NULL, DROP PRIMARY KEY, ADD PRIMARY KEY (consumer, \
             event_id))",
            prefixes.join(", ")
        ));
    }
    // Its primary key is (consumer, event_id), which [`adoption_refusal`] takes.
    reasons.extend(adoption_refusal(
        &unique_keys(store, connection).await?,
        true,
    ));
    Ok(reasons)
}

/// Why the `processed_at` of a MySQL table already in the inbox's layout will not do, by its
/// column type, data type, default and whether it may be NULL: not a date and time (a number
/// prune and inspect would read as a date, text prune would compare with its cutoff row by
/// row), NULL allowed (inspect cannot read such a row, prune never deletes it), or without a
/// default of the time a row is written, which replay's insert relies on.
fn mysql_kept_processed_at(
    column_type: &str,
    data_type: &str,
    default: &str,
    nullable: bool,
) -> Vec<String> {
    let text = [
        "char",
        "varchar",
        "tinytext",
        "text",
        "mediumtext",
        "longtext",
    ];
    let number = [
        "tinyint",
        "smallint",
        "mediumint",
        "int",
        "bigint",
        "decimal",
        "float",
        "double",
        "year",
        "bit",
    ];
    if !["datetime", "timestamp"].contains(&data_type) {
        let read_as = match (text.contains(&data_type), number.contains(&data_type)) {
            (true, _) => "prune would compare text with its cutoff row by row, past the index",
            (_, true) => "prune and inspect would read a number as a date",
            _ => "prune and inspect cannot read it as one",
        };
        return vec![format!(
            "its processed_at column is {column_type}, not a date and time, which migration 2 \
             keeps in a table already in the inbox's layout ({read_as}); convert it first \
             ({MYSQL_PROCESSED_AT}, after making its values UTC times, with FROM_UNIXTIME for \
             epoch seconds, say)"
        )];
    }
    if nullable {
        return vec![format!(
            "its processed_at column may be NULL, which migration 2 keeps in a table already \
             in the inbox's layout, where the inbox's is NOT NULL (inspect cannot read a row \
             without a time, and prune never deletes it); give such rows a time and make the \
             column the inbox's (UPDATE {INBOX_TABLE} SET processed_at = UTC_TIMESTAMP(6) \
             WHERE processed_at IS NULL, then {MYSQL_PROCESSED_AT})"
        )];
    }
    // MariaDB shows NOW() and LOCALTIMESTAMP as current_timestamp(); an application whose
    // sessions are in another zone than UTC rightly has UTC_TIMESTAMP.
    let written_at = ["current_timestamp", "utc_timestamp", "sysdate", "now("];
    let default_lower = default.to_lowercase();
    if written_at.iter().any(|now| default_lower.starts_with(now)) {
        return Vec::new();
    }
    let (has, dated) = match default {
        "" => ("no default".to_string(), "0000-00-00".to_string()),
        other => (format!("the default {other}"), format!("by {other}")),
    };
    vec![format!(
        "its processed_at column has {has}, where the inbox's is the time a row is written, \
         which replay's insert relies on and migration 2 keeps in a table already in the \
         inbox's layout (the rows replay records would be dated {dated}, and prune delete \
         them by that); give it that default ({MYSQL_PROCESSED_AT})"
    )]
}

/// Why a table whose `consumer` or `event_id` compares ignoring case or accents (a `_ci`
/// collation, SQLite's NOCASE, a nondeterministic PostgreSQL collation) cannot stay so, where
/// migration 2 would keep that collation: the inbox would take `Billing` and `billing` for
/// one consumer (and prune one's rows for the other's), and `a` and `A` for one event.
async fn inexact_key_collation(
    store: &Store,
    connection: &mut sqlx::AnyConnection,
    migration: &Migration,
) -> anyhow::Result<Option<String>> {
    // Migration 2 makes the key; migration 1's table is the classic one, taken as it is.
    let (2, Some(inexact)) = (migration.version, &store.dialect.inexact_key_collations) else {
        return Ok(None);
    };
    let found: Vec<(String, String)> = sqlx::query_as(inexact.query)
        .fetch_all(&mut *connection)
        .await
        .with_context(|| format!("could not read the collations of {INBOX_TABLE}"))?;
    if found.is_empty() {
        return Ok(None);
    }
    Ok(Some(format!(
        "{}, which compare text that differs (in case, accents or trailing spaces) as equal, \
         where the inbox tells consumers and event ids apart by every character, and \
         migration {} keeps a collation the table already has; give those columns an exact \
         collation ({})",
        found
            .iter()
            .map(|(column, collation)| format!("its {column} column compares by {collation}"))
            .collect::<Vec<_>>()
            .join(", "),
        migration.version,
        inexact.remedy,
    )))
}

/// Why coordinate columns a table has of its own, which PostgreSQL's migration 2 keeps as
/// they are, cannot hold what the inbox writes to them: a topic name (up to 249 characters),
/// a partition number and an offset.
fn coordinate_type_refusal(columns: &[(String, String)]) -> Vec<String> {
    columns
        .iter()
        .filter(|(column, type_name)| {
            let fits = match column.as_str() {
                "topic" => {
                    type_name == "text"
                        || type_name == "character varying"
                        || type_name
                            .strip_prefix("character varying(")
                            .and_then(|rest| rest.strip_suffix(')'))
                            .and_then(|length| length.parse::<u32>().ok())
                            .is_some_and(|length| length >= 249)
                }
                // Wider integers hold them too; every read casts to bigint.
                "partition" => {
                    ["integer", "bigint"].contains(&type_name.as_str())
                        || whole_numeric_of_at_least(type_name, 10)
                }
                "offset" => type_name == "bigint" || whole_numeric_of_at_least(type_name, 19),
                _ => true,
            };
            !fits
        })
        .map(|(column, type_name)| coordinate_reason(column, type_name))
        .collect()
}

/// Why a coordinate column of the table's own, which migration 2 keeps, does not do.
fn coordinate_reason(column: &str, type_name: &str) -> String {
    let wanted = match column {
        "topic" => "text",
        "partition" => "integer",
        _ => "bigint",
    };
    format!(
        "its own {column} column is {type_name}, which migration 2 keeps, where the inbox \
         writes {wanted} there; change its type or rename the column"
    )
}

/// Whether PostgreSQL's `type_name` is a `numeric` without fractional digits that holds at
/// least `digits` (a bare `numeric` holds any).
fn whole_numeric_of_at_least(type_name: &str, digits: u32) -> bool {
    if type_name == "numeric" {
        return true;
    }
    let Some((precision, scale)) = type_name
        .strip_prefix("numeric(")
        .and_then(|rest| rest.strip_suffix(')'))
        .and_then(|inner| inner.split_once(','))
    else {
        return false;
    };
    precision.trim().parse::<u32>().is_ok_and(|p| p >= digits) && scale.trim() == "0"
}

/// (engine, row format, create options, the server's default row format, table type) of a
/// MySQL table.
type TableOptions = (String, String, String, String, String);
/// (column, column type, data type, maximum length, character set, collation).
type KeyColumnType = (String, String, String, i64, String, String);
/// (constraint, column, referenced table, delete rule, update rule).
type OwnForeignKey = (String, String, String, String, String);

/// Why MySQL's migration 2, one `ALTER TABLE` that makes `event_id` and `consumer`
/// `VARCHAR(255) utf8mb4_bin NOT NULL` and the key `(consumer, event_id)`, would fail or lose
/// something on this table: all of it is known before it runs, so the dry run says it too.
fn mysql_conversion_refusal(
    options: Option<&TableOptions>,
    columns: &[KeyColumnType],
    foreign_keys: &[OwnForeignKey],
) -> Vec<String> {
    let mut reasons = Vec::new();
    if let Some((engine, row_format, create_options, default_row_format, table_type)) = options {
        // MariaDB refuses to alter one unless a session setting allows rewriting its history.
        if table_type.eq_ignore_ascii_case("system versioned") {
            reasons.push(format!(
                "it is system-versioned, and MariaDB refuses to alter such a table \
                 (ALTER TABLE {INBOX_TABLE} DROP SYSTEM VERSIONING, if its history can go)"
            ));
        }
        if !engine.eq_ignore_ascii_case("innodb") {
            reasons.push(format!(
                "its engine is {engine}, where the inbox needs InnoDB, whose transactions record \
                 an event together with its effects (ALTER TABLE {INBOX_TABLE} ENGINE=InnoDB)"
            ));
        } else {
            // The table keeps a row format it was given; one it took from the server's
            // default gets the server's present default when the change rebuilds it.
            let explicit = create_options.to_lowercase().contains("row_format=");
            let rebuilt_as = match explicit {
                true => row_format.as_str(),
                false => default_row_format.as_str(),
            };
            if ["compact", "redundant"].contains(&rebuilt_as.to_lowercase().as_str()) {
                reasons.push(format!(
                    "its row format is {row_format}, whose index columns hold at most 767 bytes, \
                     and the key (consumer, event_id) takes 1,020 per column (VARCHAR(255) \
                     utf8mb4) (ALTER TABLE {INBOX_TABLE} ROW_FORMAT=DYNAMIC)"
                ));
            }
        }
    }
    for (column, column_type, data_type, length, character_set, _) in columns {
        let binary = character_set == "binary"
            || [
                "binary",
                "varbinary",
                "tinyblob",
                "blob",
                "mediumblob",
                "longblob",
            ]
            .contains(&data_type.as_str());
        if binary {
            reasons.push(format!(
                "its {column} column is {column_type}, bytes rather than text, and migration 2 \
                 makes it text (VARCHAR(255) utf8mb4), which fails on bytes that are not UTF-8 \
                 and changes the ids the application writes"
            ));
        } else if *length > 255 {
            // A TEXT type's length is the server's figure for it, in bytes on some.
            let holds = match data_type.ends_with("text") {
                true => format!("is {column_type}"),
                false => format!("holds up to {length} characters"),
            };
            reasons.push(format!(
                "its {column} column {holds}, and migration 2 makes it VARCHAR(255), which \
                 would refuse the application's longer values; if none is longer, make it \
                 VARCHAR(255) first"
            ));
        }
    }
    let is_target = |column: &str| {
        columns
            .iter()
            .any(|(name, _, data_type, length, character_set, collation)| {
                name == column
                    && data_type == "varchar"
                    && *length == 255
                    && character_set == "utf8mb4"
                    && collation == "utf8mb4_bin"
            })
    };
    for (constraint, column, referenced, on_delete, on_update) in foreign_keys {
        if column != "event_id" && column != "consumer" {
            continue;
        }
        if !is_target(column) {
            reasons.push(format!(
                "its foreign key {constraint} to {referenced} holds {column}, whose type \
                 migration 2 changes to VARCHAR(255) utf8mb4_bin, which MySQL refuses on a \
                 column in a foreign key; drop that foreign key first and make it again \
                 afterwards, with the column it references made VARCHAR(255) utf8mb4_bin too"
            ));
        } else if on_delete == "SET NULL" || on_update == "SET NULL" {
            reasons.push(format!(
                "its foreign key {constraint} to {referenced} sets {column} to NULL, and \
                 migration 2 makes {column} NOT NULL; drop that foreign key first and make it \
                 again without SET NULL"
            ));
        }
    }
    reasons
}

/// Refuses to drop the inbox table (`doing` says why it would be dropped) while it holds
/// rows and other tables reference it by foreign key, before anything is written. An empty
/// one, as migration 1 has just made it for an application that declared its keys first,
/// takes nothing with it.
async fn refuse_when_referenced(
    store: &Store,
    connection: &mut sqlx::AnyConnection,
    doing: &str,
) -> anyhow::Result<()> {
    let Some(query) = store.dialect.tables_referencing_inbox else {
        return Ok(());
    };
    let tables: Vec<String> = sqlx::query_scalar(query)
        .fetch_all(&mut *connection)
        .await
        .with_context(|| format!("could not list the foreign keys that reference {INBOX_TABLE}"))?;
    // Not made yet (a dry run before migration 1), or empty.
    if tables.is_empty() || !store.table_exists_on(connection, INBOX_TABLE).await? {
        return Ok(());
    }
    if !has_rows(connection, INBOX_TABLE).await? {
        return Ok(());
    }
    // Only a referencing table with rows has something to lose.
    let mut with_rows = Vec::new();
    for table in tables {
        if has_rows(connection, &table).await? {
            with_rows.push(table);
        }
    }
    if with_rows.is_empty() {
        return Ok(());
    }
    bail!(
        "{doing}, but table(s) {} reference it by foreign key: dropping the old table would \
         delete their rows (ON DELETE CASCADE) or leave their keys pointing at nothing. \
         Nothing was changed. PostgreSQL and MySQL refuse this too; remove those foreign keys \
         first (SQLite: rebuild those tables without them)",
        with_rows.join(", ")
    )
}

/// Whether `table` (a name as SQLite's catalog gives it) holds a row.
async fn has_rows(connection: &mut sqlx::AnyConnection, table: &str) -> anyhow::Result<bool> {
    let quoted = format!("\"{}\"", table.replace('"', "\"\""));
    let row: Option<i64> = sqlx::query_scalar(&format!("SELECT 1 FROM {quoted} LIMIT 1"))
        .fetch_optional(&mut *connection)
        .await
        .with_context(|| format!("could not read {table}"))?;
    Ok(row.is_some())
}

/// PostgreSQL's `timestamp` to `timestamptz` reads each value in the session's TimeZone.
/// inboxctl's sessions run in UTC, but applications wrote those values (`now()`) in the zone
/// their sessions got by default, which is what the migration's transaction is set to.
/// The session's `reset_val` cannot tell that zone: sqlx names `TimeZone=UTC` when it
/// connects, which overrides the database's and role's settings.
#[derive(Debug)]
pub struct ZonelessTimes {
    /// A count, positive when `processed_at` holds times without a zone.
    pub present: &'static str,
    /// (zone, where it was set) of the TimeZone the database and role settings give a
    /// session at login; no row when they set none.
    pub configured_zone: &'static str,
    /// (zone, where it came from) of the server's own TimeZone; reading its configuration
    /// files is refused to roles other than a superuser (pg_read_all_settings is not enough).
    pub server_zone: &'static str,
    /// Sets the TimeZone (`$1`) for the current transaction only.
    pub set_local_zone: &'static str,
}

/// The zone a migration read times without a zone in, and where that zone came from
/// ("the TimeZone set for this database").
#[derive(Debug, Clone, Serialize)]
pub struct ZoneRead {
    pub zone: String,
    pub source: String,
}

impl Migration {
    /// SHA-256 of the up SQL, hex. A file edited after it was applied no longer matches.
    pub fn checksum(&self) -> String {
        Sha256::digest(self.up.as_bytes())
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

/// A row of `inboxctl_migrations`.
#[derive(Debug, Clone, Serialize)]
pub struct AppliedMigration {
    pub version: i64,
    pub description: String,
    pub checksum: String,
    pub applied_at: DateTime<Utc>,
    pub duration_ms: i64,
}

/// A migration as `migrate status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct MigrationState {
    pub version: i64,
    pub description: String,
    /// `applied`, `pending`, `undone` (recorded, but its change is not in place: `migrate run`
    /// applies it again), `changed` (applied, file edited since) or `unknown` (applied by a
    /// newer inboxctl).
    pub state: &'static str,
    pub applied_at: Option<DateTime<Utc>>,
    pub duration_ms: Option<i64>,
}

/// What `migrate run` or `migrate revert` did, or would do with `--dry-run`.
#[derive(Debug, Clone, Serialize)]
pub struct MigrationStep {
    pub version: i64,
    pub description: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sql: Option<std::borrow::Cow<'static, str>>,
    /// Set when the migration converted times without a zone, read in this zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub times_read_in: Option<ZoneRead>,
    /// A revert that found the migration's change not in place (its table dropped by
    /// hand): it only removed the record.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub only_forgotten: bool,
}

pub async fn applied_migrations(store: &Store) -> anyhow::Result<Vec<AppliedMigration>> {
    if !store.table_exists(MIGRATIONS_TABLE).await? {
        return Ok(Vec::new());
    }
    let mut connection = store.acquire().await?;
    read_applied(store, &mut connection).await
}

async fn read_applied(
    store: &Store,
    connection: &mut PoolConnection<Any>,
) -> anyhow::Result<Vec<AppliedMigration>> {
    let sql = format!(
        "SELECT version, description, checksum, {}, duration_ms FROM {MIGRATIONS_TABLE} ORDER BY version",
        (store.dialect.timestamp_text)("applied_at")
    );
    let rows = sqlx::query(&sql)
        .fetch_all(&mut **connection)
        .await
        .with_context(|| format!("could not read {MIGRATIONS_TABLE}"))?;
    rows.iter()
        .enumerate()
        .map(|(index, row)| {
            let read = || -> anyhow::Result<AppliedMigration> {
                let applied_at = row.try_get::<String, _>(3)?;
                Ok(AppliedMigration {
                    version: row.try_get(0)?,
                    description: row.try_get(1)?,
                    checksum: row.try_get(2)?,
                    applied_at: parse_stored_timestamp(&applied_at)
                        .map_err(|_| anyhow::anyhow!("applied_at '{applied_at}' is no time"))?,
                    duration_ms: row.try_get(4)?,
                })
            };
            // A table edited by hand is named, with the row, rather than a column number.
            read().with_context(|| {
                format!(
                    "could not read row {} of {MIGRATIONS_TABLE} (version, description, \
                     checksum, applied_at, duration_ms); was it edited by hand?",
                    index + 1
                )
            })
        })
        .collect()
}

/// Every migration this binary knows and every one the database has recorded, merged.
pub async fn status(store: &Store) -> anyhow::Result<Vec<MigrationState>> {
    let applied = applied_migrations(store).await?;
    let undone = undone_among(store, &applied).await?;
    let mut states: Vec<MigrationState> = store
        .dialect
        .migrations
        .iter()
        .map(|migration| {
            let record = applied.iter().find(|a| a.version == migration.version);
            MigrationState {
                version: migration.version,
                description: migration.description.to_string(),
                state: match record {
                    None => "pending",
                    Some(record) if record.checksum != migration.checksum() => "changed",
                    Some(_) if undone.contains(&migration.version) => "undone",
                    Some(_) => "applied",
                },
                applied_at: record.map(|r| r.applied_at),
                duration_ms: record.map(|r| r.duration_ms),
            }
        })
        .collect();
    for record in &applied {
        if !states.iter().any(|state| state.version == record.version) {
            states.push(MigrationState {
                version: record.version,
                description: record.description.clone(),
                state: "unknown",
                applied_at: Some(record.applied_at),
                duration_ms: Some(record.duration_ms),
            });
        }
    }
    states.sort_by_key(|state| state.version);
    Ok(states)
}

/// Refuses a database whose recorded migrations this binary cannot vouch for.
fn verify(store: &Store, applied: &[AppliedMigration]) -> anyhow::Result<()> {
    let newest = store.dialect.migrations.last().map_or(0, |m| m.version);
    for record in applied {
        match store.dialect.migrations.iter().find(|m| m.version == record.version) {
            // Below the newest version this inboxctl knows, no upgrade would know it.
            None if record.version < newest => bail!(
                "{MIGRATIONS_TABLE} records migration {} ({}), which no inboxctl makes; fix \
                 {MIGRATIONS_TABLE} by hand",
                record.version,
                record.description
            ),
            None => bail!(
                "the database has migration {} ({}) applied, which this inboxctl does not know; upgrade inboxctl",
                record.version,
                record.description
            ),
            Some(migration) if migration.checksum() != record.checksum => bail!(
                "migration {} ({}) was changed after it was applied: recorded checksum {}, this inboxctl's is {}; \
                 restore the original migration or fix {MIGRATIONS_TABLE} by hand",
                record.version,
                record.description,
                record.checksum,
                migration.checksum()
            ),
            Some(_) => {}
        }
    }
    Ok(())
}

/// The versions recorded as applied whose change is not in place, by their
/// [`Migration::in_place`] query: a `migrate revert` stopped after undoing the change and
/// before deleting its record. On every backend, all of them when the inbox table is gone
/// (dropped by hand): nothing of theirs is left. `migrate run` applies them again.
async fn undone_versions(
    store: &Store,
    connection: &mut PoolConnection<Any>,
    applied: &[AppliedMigration],
) -> anyhow::Result<Vec<i64>> {
    if !store.table_exists_on(connection, INBOX_TABLE).await? {
        return Ok(applied.iter().map(|a| a.version).collect());
    }
    // A view (or a foreign table) of the inbox's name, over a table kept elsewhere, has
    // none of the changes' marks, an index say, but undid nothing.
    if store.inbox_not_a_table().await?.is_some() {
        return Ok(Vec::new());
    }
    let mut undone = Vec::new();
    for migration in store.dialect.migrations {
        if !applied.iter().any(|a| a.version == migration.version) {
            continue;
        }
        let in_place = change_in_place(connection, migration)
            .await
            .with_context(|| {
                format!(
                    "could not check whether migration {} ({}) is in place",
                    migration.version, migration.description
                )
            })?;
        if in_place == Some(false) {
            undone.push(migration.version);
        }
    }
    Ok(undone)
}

/// The prune records describe the rows of the inbox table. With the table gone (dropped by
/// hand, or by a MySQL revert stopped between migration 1's two DROPs, each committed on its
/// own) they describe nothing, and kept, they would tell compare that the missing offsets
/// of the next table were pruned. Revert drops them with the table; this finishes that.
async fn drop_prunes_of_a_dropped_inbox(
    store: &Store,
    connection: &mut PoolConnection<Any>,
) -> anyhow::Result<()> {
    if store.table_exists_on(connection, INBOX_TABLE).await?
        || !store.table_exists_on(connection, PRUNES_TABLE).await?
    {
        return Ok(());
    }
    sqlx::raw_sql(&format!("DROP TABLE {PRUNES_TABLE}"))
        .execute(&mut **connection)
        .await
        .with_context(|| {
            format!(
                "could not drop {PRUNES_TABLE}, which is about the rows of a dropped {INBOX_TABLE}"
            )
        })?;
    Ok(())
}

/// [`undone_versions`] on a connection of its own; none when nothing is recorded.
async fn undone_among(store: &Store, applied: &[AppliedMigration]) -> anyhow::Result<Vec<i64>> {
    match applied.is_empty() {
        true => Ok(Vec::new()),
        false => undone_versions(store, &mut store.acquire().await?, applied).await,
    }
}

/// The recorded migrations whose change is not in place: a revert forgets their record and
/// runs nothing.
pub async fn undone(store: &Store) -> anyhow::Result<Vec<i64>> {
    undone_among(store, &applied_migrations(store).await?).await
}

/// The migrations `migrate run` would apply, without taking a lock or creating anything.
/// Refuses, as the run would, a table rebuild that would lose columns and times without a
/// zone whose zone cannot be found.
pub async fn pending(store: &Store) -> anyhow::Result<Vec<MigrationStep>> {
    let applied = applied_migrations(store).await?;
    verify(store, &applied)?;
    let undone = undone_among(store, &applied).await?;
    let to_apply: Vec<&Migration> = store
        .dialect
        .migrations
        .iter()
        .filter(|migration| {
            let recorded = applied.iter().any(|a| a.version == migration.version);
            !recorded || undone.contains(&migration.version)
        })
        .collect();
    if to_apply.is_empty() {
        return Ok(Vec::new());
    }
    refuse_unless_a_table(store).await?;
    let mut connection = store.acquire().await?;
    let mut steps = Vec::new();
    for migration in to_apply {
        // As the run finds it (see [`found_in_place`]).
        let in_place = found_in_place(store, &mut connection, migration).await?;
        let sql = match in_place {
            Some(true) => {
                refuse_kept_layout(store, &mut connection, migration).await?;
                let missing = missing_indexes(&mut connection, migration).await?;
                match missing.is_empty() {
                    true => "-- nothing to run: its change is already in place, so it is only \
                             recorded"
                        .into(),
                    false => format!(
                        "-- its change is already in place but for these indexes, which are \
                         made, and it is recorded\n{};",
                        missing.join(";\n")
                    )
                    .into(),
                }
            }
            _ => up_sql(store, &mut connection, migration).await?.into(),
        };
        steps.push(MigrationStep {
            version: migration.version,
            description: migration.description,
            duration_ms: None,
            sql: Some(sql),
            // Found, or refused, as the run will.
            times_read_in: zone_of_zoneless_times(&mut connection, migration).await?,
            only_forgotten: false,
        });
    }
    Ok(steps)
}

/// Refuses, before anything is written, a down step that would lose columns of the table's
/// own or drop a table others reference (SQLite, whose down steps drop the table to rebuild
/// it or not).
async fn refuse_revert(
    store: &Store,
    connection: &mut sqlx::AnyConnection,
    migration: &Migration,
) -> anyhow::Result<()> {
    if let Some(rebuild) = &migration.rebuild {
        rebuild.check_revert(connection, migration).await?;
    }
    let doing = format!(
        "reverting migration {} ({}) drops table {INBOX_TABLE}",
        migration.version, migration.description
    );
    refuse_when_referenced(store, connection, &doing).await
}

/// What `migrate revert --dry-run` shows for each step of `plan`: the down SQL, or why none
/// runs. Refuses, as the run would, a step it would refuse.
pub async fn revert_sql(
    store: &Store,
    plan: &[&'static Migration],
) -> anyhow::Result<Vec<&'static str>> {
    let undone = undone(store).await?;
    let mut connection = store.acquire().await?;
    let mut sql = Vec::new();
    for migration in plan {
        sql.push(match down_skipped(plan, &undone, migration) {
            Some(why) => why,
            None => {
                refuse_revert(store, &mut connection, migration).await?;
                migration.down
            }
        });
    }
    Ok(sql)
}

/// Why a revert of `plan` runs no SQL for `migration`, only forgets its record: when version
/// 1 goes, its DROP TABLE undoes the rest, and a change that is not in place (the table
/// dropped by hand, say) has nothing to undo. `None` when its down SQL runs.
fn down_skipped(
    plan: &[&Migration],
    undone: &[i64],
    migration: &Migration,
) -> Option<&'static str> {
    if migration.version != 1 && plan.iter().any(|m| m.version == 1) {
        Some("-- nothing to run: migration 1 drops the table")
    } else if undone.contains(&migration.version) {
        Some("-- nothing to run: its change is not in place, so only its record is forgotten")
    } else {
        None
    }
}

/// Which migrations `migrate revert --to` would undo, newest first. Refused, as `migrate
/// run` is, where the inbox is not a table.
pub async fn revert_plan(
    store: &Store,
    to: Option<i64>,
) -> anyhow::Result<Vec<&'static Migration>> {
    let applied = applied_migrations(store).await?;
    verify(store, &applied)?;
    let plan = plan_revert(store, &applied, to)?;
    if !plan.is_empty() {
        refuse_unless_a_table(store).await?;
    }
    Ok(plan)
}

/// The migrations create, alter and drop the inbox table itself: a view of its name (of a
/// table elsewhere) is refused before anything is written.
async fn refuse_unless_a_table(store: &Store) -> anyhow::Result<()> {
    if let Some(kind) = store.inbox_not_a_table().await? {
        bail!(
            "{INBOX_TABLE} in {} is {kind}, not a table: the migrations create and alter the \
             inbox table itself; run migrate on the database that holds the table. Nothing \
             was changed",
            store.url.endpoint
        );
    }
    Ok(())
}

fn plan_revert(
    store: &Store,
    applied: &[AppliedMigration],
    to: Option<i64>,
) -> anyhow::Result<Vec<&'static Migration>> {
    let newest = store.dialect.migrations.iter().map(|m| m.version).max();
    if let (Some(to), Some(newest)) = (to, newest) {
        if to > newest {
            return Err(crate::error::usage(format!(
                "--to {to}: there is no migration {to}; the migrations are 1 to {newest} (0 \
                 reverts everything)"
            )));
        }
    }
    let Some(latest) = applied.last() else {
        return Ok(Vec::new());
    };
    let target = to.unwrap_or(latest.version - 1);
    if target < 0 {
        bail!("--to must be a version number of 0 or more (0 reverts everything), not {target}");
    }
    let mut plan: Vec<&'static Migration> = store
        .dialect
        .migrations
        .iter()
        .filter(|m| m.version > target && applied.iter().any(|a| a.version == m.version))
        .collect();
    plan.sort_by_key(|m| std::cmp::Reverse(m.version));
    Ok(plan)
}

/// Apply every pending migration. Concurrent runs serialise on the backend's lock; the one
/// that waited finds nothing left to do.
pub async fn run(
    store: &Store,
    lock_timeout: Option<Duration>,
    session: &MigrationSession,
) -> anyhow::Result<Vec<MigrationStep>> {
    with_migration_lock(store, Work::Apply, lock_timeout, session).await
}

/// Where a run leaves what cancels the statement in flight on its session, once it has one,
/// for a signal to cancel it on the server (see `commands::cancel_on_signals`).
pub type MigrationSession = std::sync::Arc<std::sync::Mutex<Option<QueryCanceller>>>;

/// Undo applied migrations down to `to` (default: the last one only), newest first.
pub async fn revert(
    store: &Store,
    to: Option<i64>,
    lock_timeout: Option<Duration>,
    session: &MigrationSession,
) -> anyhow::Result<Vec<MigrationStep>> {
    with_migration_lock(store, Work::Revert { to }, lock_timeout, session).await
}

enum Work {
    Apply,
    Revert { to: Option<i64> },
}

impl Work {
    async fn run(
        self,
        store: &Store,
        connection: &mut PoolConnection<Any>,
    ) -> anyhow::Result<Vec<MigrationStep>> {
        match self {
            Work::Apply => apply_pending(store, connection).await,
            Work::Revert { to } => revert_applied(store, connection, to).await,
        }
    }
}

/// Runs `work` under the backend's migration lock. Its statements wait at most
/// `lock_timeout` for a lock on a table (0: without limit; none given: the session's own
/// limit, or [`LOCK_TIMEOUT`] where it has none), for while one waits, every statement of
/// the application on that table queues behind it; waiting for another run's migration lock
/// is not bounded by it.
async fn with_migration_lock(
    store: &Store,
    work: Work,
    lock_timeout: Option<Duration>,
    session: &MigrationSession,
) -> anyhow::Result<Vec<MigrationStep>> {
    let mut connection = store.acquire().await?;
    let canceller = store.canceller_of(&mut connection).await?;
    if let Ok(mut slot) = session.lock() {
        *slot = canceller;
    }
    match &store.dialect.migration_locking {
        MigrationLocking::SessionLock { lock, unlock, .. } => {
            let own_limit = own_lock_limit(store, &mut connection).await?;
            let granted: i64 = sqlx::query_scalar(lock)
                .fetch_one(&mut *connection)
                .await
                .context("could not take the migration lock")?;
            if granted != 1 {
                bail!(
                    "timed out waiting for another `inboxctl migrate` to finish (lock not granted)"
                );
            }
            let limit = limit_lock_waits(store, &mut connection, lock_timeout, own_limit).await;
            let result = match limit {
                Ok(limit) => match work.run(store, &mut connection).await {
                    Err(error) if is_lock_timeout(&error) => {
                        let holders = lock_holders(store).await;
                        Err(error.context(lock_wait_refusal(store.backend, &limit, holders)))
                    }
                    result => result,
                },
                Err(error) => Err(error),
            };
            let released = sqlx::query_scalar::<_, i64>(unlock)
                .fetch_one(&mut *connection)
                .await;
            let steps = result?;
            released.context("could not release the migration lock")?;
            Ok(steps)
        }
        MigrationLocking::ExclusiveTransaction {
            begin,
            around: (set, undo),
        } => {
            connection
                .execute(*set)
                .await
                .context("could not prepare the connection for the migrations")?;
            connection
                .execute(*begin)
                .await
                .context("could not start the migration transaction (is another process holding a write lock?)")?;
            let result = match work.run(store, &mut connection).await {
                Ok(steps) => connection
                    .execute("COMMIT")
                    .await
                    .context("could not commit the migrations")
                    .map(|_| steps),
                Err(error) => {
                    // Nothing of a failed run stays behind; the ROLLBACK's own failure would
                    // only hide the error that matters.
                    let _ = connection.execute("ROLLBACK").await;
                    Err(error)
                }
            };
            // The connection goes back to the pool as it came.
            let reset = connection.execute(*undo).await;
            let steps = result?;
            reset.context("could not reset the connection after the migrations")?;
            Ok(steps)
        }
    }
}

/// How long a migration waits for a table's lock where neither --lock-timeout nor the
/// session (a role's or URL's `lock_timeout`) says.
const LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// MySQL's greatest `lock_wait_timeout`, a year (also MySQL's default): no limit in effect.
const MYSQL_NO_LOCK_WAIT_LIMIT: i64 = 31_536_000;

/// A MySQL `lock_wait_timeout` this long or longer is taken for no limit of the session's
/// own: MariaDB's default is a day.
const MYSQL_OWN_LOCK_WAIT_LIMIT_BELOW: i64 = 86_400;

/// A limit on lock waits the session has of its own (a role's or the URL's setting), as the
/// server states it. On PostgreSQL the session then waits without one, so that waiting for
/// another run's migration lock is not bounded by it; [`limit_lock_waits`] sets the limit
/// once the lock is taken.
async fn own_lock_limit(
    store: &Store,
    connection: &mut AnyConnection,
) -> anyhow::Result<Option<String>> {
    match store.backend {
        Backend::Postgres => {
            let (own, _): (String, String) = sqlx::query_as(
                "SELECT current_setting('lock_timeout'), set_config('lock_timeout', '0', false)",
            )
            .fetch_one(&mut *connection)
            .await
            .context("could not read the session's lock_timeout")?;
            Ok((own != "0").then_some(own))
        }
        _ => {
            let own: i64 = sqlx::query_scalar("SELECT CAST(@@SESSION.lock_wait_timeout AS SIGNED)")
                .fetch_one(&mut *connection)
                .await
                .context("could not read the session's lock_wait_timeout")?;
            Ok((own < MYSQL_OWN_LOCK_WAIT_LIMIT_BELOW).then(|| own.to_string()))
        }
    }
}

/// Bounds the session's waits for a table's lock: PostgreSQL's `lock_timeout` (whole
/// milliseconds, at least 1), MySQL's `lock_wait_timeout` for metadata locks (whole seconds,
/// at least 1): `given`, else the session's `own` limit, else [`LOCK_TIMEOUT`]. Returns the
/// limit as an error names it.
async fn limit_lock_waits(
    store: &Store,
    connection: &mut AnyConnection,
    given: Option<Duration>,
    own: Option<String>,
) -> anyhow::Result<String> {
    let postgres = store.backend == Backend::Postgres;
    let (setting, described) = match (given, own) {
        (None, Some(own)) if postgres => {
            (own.clone(), format!("{own} (the session's lock_timeout)"))
        }
        (None, Some(own)) => (
            own.clone(),
            format!("{own}s (the session's lock_wait_timeout)"),
        ),
        (given, _) => {
            let timeout = given.unwrap_or(LOCK_TIMEOUT);
            let (setting, applied) = match (postgres, timeout.is_zero()) {
                (true, true) => ("0".to_string(), timeout),
                (false, true) => (MYSQL_NO_LOCK_WAIT_LIMIT.to_string(), timeout),
                (true, false) => {
                    let ms = timeout.as_nanos().div_ceil(1_000_000) as u64;
                    (format!("{ms}ms"), Duration::from_millis(ms))
                }
                (false, false) => {
                    let seconds = timeout.as_nanos().div_ceil(1_000_000_000) as u64;
                    (seconds.to_string(), Duration::from_secs(seconds))
                }
            };
            let whose = match given {
                Some(_) if applied == timeout => "--lock-timeout",
                Some(_) => "--lock-timeout, rounded up",
                None => "the default; --lock-timeout sets another",
            };
            (
                setting,
                format!("{} ({whose})", humantime::format_duration(applied)),
            )
        }
    };
    // PostgreSQL's setting as text its server gave (`500ms`), bound; MySQL's a number.
    let mysql_set = format!(
        "SET SESSION lock_wait_timeout = {}",
        setting.parse::<u64>().unwrap_or(0)
    );
    let set = match postgres {
        true => sqlx::query("SELECT set_config('lock_timeout', $1, false)").bind(setting),
        false => sqlx::query(&mysql_set),
    };
    set.execute(&mut *connection)
        .await
        .context("could not set the lock timeout")?;
    Ok(described)
}

/// Whether a migration failed because a lock wait ran out of its time.
pub fn is_lock_timeout(error: &anyhow::Error) -> bool {
    crate::store::sqlx_causes(error).any(crate::store::is_lock_wait_timeout)
}

/// The other sessions that may hold the lock a migration waited for, as "pid 4242 (idle in
/// transaction for 35s: SELECT …)": on PostgreSQL those holding a lock on one of the
/// inbox's tables, on MySQL those with a transaction open in the database. Only what the
/// user may see of them; none when they cannot be read.
async fn lock_holders(store: &Store) -> Vec<String> {
    let sql = match store.backend {
        Backend::Postgres => {
            "SELECT a.pid::int8, coalesce(a.state, ''), \
             coalesce(extract(epoch FROM now() - a.xact_start)::int8, -1), \
             left(regexp_replace(coalesce(a.query, ''), '\\s+', ' ', 'g'), 60) \
             FROM pg_stat_activity a WHERE a.pid <> pg_backend_pid() AND a.pid IN \
             (SELECT l.pid FROM pg_locks l JOIN pg_class c ON c.oid = l.relation \
              WHERE l.granted AND c.relname IN ('processed_messages', 'inboxctl_prunes', \
              'inboxctl_migrations') AND c.relnamespace = current_schema()::regnamespace) \
             ORDER BY a.xact_start"
        }
        Backend::Mysql => {
            "SELECT CAST(p.ID AS SIGNED), LOWER(p.COMMAND), CAST(p.TIME AS SIGNED), \
             LEFT(REGEXP_REPLACE(COALESCE(p.INFO, ''), '[[:space:]]+', ' '), 60) \
             FROM information_schema.INNODB_TRX t \
             JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id \
             WHERE p.DB = DATABASE() AND p.ID <> CONNECTION_ID() ORDER BY t.trx_started"
        }
        Backend::Sqlite => return Vec::new(),
    };
    let rows: Vec<(i64, String, i64, String)> = sqlx::query_as(sql)
        .fetch_all(store.pool())
        .await
        .unwrap_or_default();
    rows.into_iter()
        .map(|(session, state, seconds, query)| {
            let doing = match query.trim() {
                "" => String::new(),
                query => format!(": {}", crate::output::printable(query)),
            };
            let kind = match store.backend {
                Backend::Postgres => "pid",
                _ => "connection",
            };
            // PostgreSQL shows another user's session only by its pid (and the query as
            // `<insufficient privilege>`).
            match (state.is_empty(), seconds < 0) {
                (true, true) => format!("{kind} {session} ({})", doing.trim_start_matches(": ")),
                _ => format!("{kind} {session} ({state} for {seconds}s{doing})"),
            }
        })
        .collect()
}

/// What a migration that waited out its lock timeout (`limit`, as [`limit_lock_waits`] names
/// it) says: who holds the lock, as far as can be seen, and what to do.
fn lock_wait_refusal(backend: Backend, limit: &str, holders: Vec<String>) -> String {
    let held_by = match (holders.is_empty(), backend) {
        (false, _) => format!("sessions that may hold it: {}", holders.join(", ")),
        (true, Backend::Postgres) => "another session holds it (see pg_stat_activity)".to_string(),
        (true, _) => "another session holds it (see SHOW PROCESSLIST)".to_string(),
    };
    format!(
        "could not lock the inbox's tables within {limit}, which the application's statements \
         on them queue behind; {held_by}; run it again once they end, or give --lock-timeout a \
         longer wait (0 waits without limit)"
    )
}

/// Where each DDL statement commits on its own (MySQL), outside any transaction of the run.
fn ddl_commits_on_its_own(store: &Store) -> bool {
    matches!(
        store.dialect.migration_locking,
        MigrationLocking::SessionLock {
            transactional_ddl: false,
            ..
        }
    )
}

fn per_migration_transaction(store: &Store) -> bool {
    matches!(
        store.dialect.migration_locking,
        MigrationLocking::SessionLock {
            transactional_ddl: true,
            ..
        }
    )
}

async fn apply_pending(
    store: &Store,
    connection: &mut PoolConnection<Any>,
) -> anyhow::Result<Vec<MigrationStep>> {
    // Made only when missing: PostgreSQL and MySQL check the right to create tables even for
    // a CREATE TABLE IF NOT EXISTS of one that exists, which a deploying role may lack.
    if !store.table_exists_on(connection, MIGRATIONS_TABLE).await? {
        sqlx::raw_sql(store.dialect.migrations_table_ddl)
            .execute(&mut **connection)
            .await
            .with_context(|| format!("could not create {MIGRATIONS_TABLE}"))?;
    }
    let applied = read_applied(store, connection).await?;
    verify(store, &applied)?;
    let undone = undone_versions(store, connection, &applied).await?;
    drop_prunes_of_a_dropped_inbox(store, connection).await?;
    let record = format!(
        "INSERT INTO {MIGRATIONS_TABLE} (version, description, checksum, duration_ms) VALUES ({})",
        placeholders(store, 4)
    );
    let forget = format!(
        "DELETE FROM {MIGRATIONS_TABLE} WHERE version = {}",
        placeholders(store, 1)
    );
    let mut steps = Vec::new();
    for migration in store.dialect.migrations {
        let recorded = applied.iter().any(|a| a.version == migration.version);
        if recorded && !undone.contains(&migration.version) {
            continue;
        }
        // An undone migration's stale record is replaced, not duplicated.
        let bookkeeping = Bookkeeping {
            forget: recorded.then_some(forget.as_str()),
            record: &record,
            in_transaction: !ddl_commits_on_its_own(store),
        };
        let started = Instant::now();
        let in_place = found_in_place(store, connection, migration).await?;
        // Judged inside the run's lock, on the table as migration 1 left it.
        let up = match in_place {
            Some(true) => {
                refuse_kept_layout(store, connection, migration).await?;
                migration.up
            }
            _ => up_sql(store, connection, migration).await?,
        };
        let mut times_read_in = None;
        let elapsed = if per_migration_transaction(store) {
            // Looked up before the transaction: a refused read of the server's settings
            // must not abort it.
            times_read_in = zone_of_zoneless_times(connection, migration)
                .await
                .with_context(|| {
                    format!(
                        "migration {} ({}) failed",
                        migration.version, migration.description
                    )
                })?;
            let mut transaction = connection.begin().await?;
            let zone_set = match (&times_read_in, &migration.zoneless_times) {
                (Some(read), Some(zoneless)) => {
                    sqlx::query_scalar::<_, String>(zoneless.set_local_zone)
                        .bind(&read.zone)
                        .fetch_one(&mut *transaction)
                        .await
                        .map(|_| ())
                }
                _ => Ok(()),
            };
            let elapsed = match zone_set {
                Ok(()) => {
                    apply_one(&mut transaction, migration, up, &bookkeeping, started, true).await
                }
                Err(error) => Err(error),
            };
            match elapsed {
                Ok(elapsed) => transaction.commit().await.map(|()| elapsed),
                Err(error) => Err(error),
            }
        } else {
            let run_sql = !in_place.unwrap_or(false);
            match make_missing_indexes(connection, migration, in_place).await {
                Ok(()) => {
                    apply_one(connection, migration, up, &bookkeeping, started, run_sql).await
                }
                Err(error) => Err(error),
            }
        }
        .map_err(|error| {
            // A session the server ended (`KILL`, a restart) or a broken network: the change
            // may have been made, as MySQL's DDL commits itself.
            let lost = match is_server_connection_lost(&error) {
                true => {
                    "; the connection to the server was lost, so whether its change is in \
                     place is not known here: `inboxctl migrate status` says, and `inboxctl \
                     migrate run` again applies or records it"
                }
                false => "",
            };
            // The migrations before it stay applied and recorded, except on SQLite, where
            // the run is one transaction: the error says so, as the run prints nothing else.
            let kept = matches!(
                store.dialect.migration_locking,
                MigrationLocking::SessionLock { .. }
            );
            let before = match steps.is_empty() || !kept {
                true => String::new(),
                false => format!(
                    " (this run applied {} before it)",
                    steps
                        .iter()
                        .map(|step: &MigrationStep| step.version.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            anyhow::Error::new(error).context(format!(
                "migration {} ({}) failed{before}{lost}",
                migration.version, migration.description
            ))
        })?;
        steps.push(MigrationStep {
            version: migration.version,
            description: migration.description,
            duration_ms: Some(elapsed.as_millis()),
            sql: None,
            times_read_in,
            only_forgotten: false,
        });
    }
    Ok(steps)
}

async fn revert_applied(
    store: &Store,
    connection: &mut PoolConnection<Any>,
    to: Option<i64>,
) -> anyhow::Result<Vec<MigrationStep>> {
    if !store.table_exists(MIGRATIONS_TABLE).await? {
        return Ok(Vec::new());
    }
    let applied = read_applied(store, connection).await?;
    verify(store, &applied)?;
    let forget = format!(
        "DELETE FROM {MIGRATIONS_TABLE} WHERE version = {}",
        placeholders(store, 1)
    );
    let plan = plan_revert(store, &applied, to)?;
    // Reverting version 1 drops the table, which undoes everything above it too: the later
    // down steps are only forgotten, not run. (Migration 2's down step cannot run on a table
    // where one event id belongs to several consumers, and need not when the table goes.)
    let undone = undone_versions(store, connection, &applied).await?;
    drop_prunes_of_a_dropped_inbox(store, connection).await?;
    if !per_migration_transaction(store) {
        return undo_plan(store, connection, &plan, &undone, &forget).await;
    }
    // PostgreSQL undoes the whole plan in one transaction: a step that fails (a DROP TABLE
    // that another table's foreign key holds) must not leave the steps before it forgotten
    // while their change stays, which neither `run` nor `revert` could then go on from.
    let mut transaction = connection.begin().await?;
    let steps = undo_plan(store, &mut transaction, &plan, &undone, &forget).await?;
    transaction
        .commit()
        .await
        .context("could not commit the revert")?;
    Ok(steps)
}

/// Undoes each migration of `plan` in turn; on PostgreSQL inside the caller's transaction.
async fn undo_plan(
    store: &Store,
    connection: &mut sqlx::AnyConnection,
    plan: &[&'static Migration],
    undone: &[i64],
    forget: &str,
) -> anyhow::Result<Vec<MigrationStep>> {
    let mut steps = Vec::new();
    for &migration in plan {
        let started = Instant::now();
        let run_sql = down_skipped(plan, undone, migration).is_none();
        if run_sql {
            refuse_revert(store, connection, migration).await?;
        }
        let mut not_in_place = undone.contains(&migration.version);
        if per_migration_transaction(store) {
            undo_one(connection, migration, forget, run_sql).await
        } else {
            match change_in_place(connection, migration).await {
                Ok(in_place) => {
                    not_in_place |= in_place == Some(false);
                    let run_sql = run_sql && in_place.unwrap_or(true);
                    undo_one(connection, migration, forget, run_sql).await
                }
                Err(error) => Err(error),
            }
        }
        .map_err(|error| {
            // Only a key the classic layout cannot hold earns the hint; a read-only file or a
            // lost connection is its own story.
            let duplicate_ids = run_sql
                && migration.version == 2
                && error
                    .as_database_error()
                    .is_some_and(|e| e.kind() == sqlx::error::ErrorKind::UniqueViolation);
            let hint = match duplicate_ids {
                true => "; the classic layout keys on event_id alone, so no event id may belong to several consumers",
                false => "",
            };
            let whole = match per_migration_transaction(store) {
                true => "; nothing was reverted",
                false => "",
            };
            anyhow::Error::new(error).context(format!(
                "reverting migration {} ({}) failed{hint}{whole}",
                migration.version, migration.description
            ))
        })?;
        steps.push(MigrationStep {
            version: migration.version,
            description: migration.description,
            duration_ms: Some(started.elapsed().as_millis()),
            sql: None,
            times_read_in: None,
            only_forgotten: not_in_place,
        });
    }
    Ok(steps)
}

/// The zone `migration` must read times without a zone in, when it converts any: the one
/// the database and role settings give a session, else the server's.
async fn zone_of_zoneless_times(
    connection: &mut sqlx::AnyConnection,
    migration: &Migration,
) -> anyhow::Result<Option<ZoneRead>> {
    let Some(zoneless) = &migration.zoneless_times else {
        return Ok(None);
    };
    let present: i64 = sqlx::query_scalar(zoneless.present)
        .fetch_one(&mut *connection)
        .await
        .with_context(|| format!("could not read the type of {INBOX_TABLE}.processed_at"))?;
    if present == 0 {
        return Ok(None);
    }
    let configured: Option<(String, String)> = sqlx::query_as(zoneless.configured_zone)
        .fetch_optional(&mut *connection)
        .await
        .context("could not read the TimeZone set for this database and role")?;
    let (zone, source) = match configured {
        Some(configured) => configured,
        None => match sqlx::query_as(zoneless.server_zone)
            .fetch_one(&mut *connection)
            .await
        {
            Ok(server) => server,
            Err(error)
                if error
                    .as_database_error()
                    .and_then(|e| e.code())
                    .is_some_and(|code| code == "42501") =>
            {
                bail!(
                    "{INBOX_TABLE}.processed_at holds times without a time zone, which must be read \
                     in the zone the application wrote them in; neither this database nor this role \
                     sets TimeZone, and this role may not read the server's setting \
                     (pg_file_settings: {error}); set it with ALTER DATABASE … SET timezone = '…' \
                     or run `migrate run` as a superuser"
                )
            }
            Err(error) => {
                return Err(
                    anyhow::Error::new(error).context("could not read the server's TimeZone")
                )
            }
        },
    };
    Ok(Some(ZoneRead { zone, source }))
}

/// Whether the migration's change is in place, by its [`Migration::in_place`] query; `None`
/// when it has none, and its record is all there is to go by.
async fn change_in_place(
    connection: &mut sqlx::AnyConnection,
    migration: &Migration,
) -> Result<Option<bool>, sqlx::Error> {
    match migration.in_place {
        Some(query) => {
            let count: i64 = sqlx::query_scalar(query)
                .fetch_one(&mut *connection)
                .await?;
            Ok(Some(count > 0))
        }
        None => Ok(None),
    }
}

/// Where DDL commits on its own (MySQL), whether `migration`'s change is in place: a run
/// cut short between a change and its record left it so, and the next run only records it,
/// without judging it again as a change to make. `None` elsewhere.
async fn found_in_place(
    store: &Store,
    connection: &mut sqlx::AnyConnection,
    migration: &Migration,
) -> anyhow::Result<Option<bool>> {
    if per_migration_transaction(store) {
        return Ok(None);
    }
    change_in_place(connection, migration)
        .await
        .with_context(|| {
            format!(
                "could not check whether migration {} is in place",
                migration.version
            )
        })
}

/// The CREATE INDEX statements of `migration`'s indexes that the table lacks, where its
/// change is found in place (see [`Migration::in_place_indexes`]).
async fn missing_indexes(
    connection: &mut sqlx::AnyConnection,
    migration: &Migration,
) -> Result<Vec<&'static str>, sqlx::Error> {
    let mut missing = Vec::new();
    if let Some(in_place) = &migration.in_place_indexes {
        for (name, create) in in_place.indexes {
            let count: i64 = sqlx::query_scalar(in_place.exists)
                .bind(*name)
                .fetch_one(&mut *connection)
                .await?;
            if count == 0 {
                missing.push(*create);
            }
        }
    }
    Ok(missing)
}

/// Makes the indexes [`missing_indexes`] finds, where the change is in place.
async fn make_missing_indexes(
    connection: &mut sqlx::AnyConnection,
    migration: &Migration,
    in_place: Option<bool>,
) -> Result<(), sqlx::Error> {
    if in_place != Some(true) {
        return Ok(());
    }
    for create in missing_indexes(connection, migration).await? {
        sqlx::raw_sql(create).execute(&mut *connection).await?;
    }
    Ok(())
}

/// The statements that record an applied migration in `inboxctl_migrations`.
struct Bookkeeping<'a> {
    /// Deletes the migration's stale record first, when it has one (it was undone).
    forget: Option<&'a str>,
    record: &'a str,
    /// Whether the migration runs in a transaction, which then holds its record too.
    in_transaction: bool,
}

async fn apply_one(
    connection: &mut sqlx::AnyConnection,
    migration: &Migration,
    up: &'static str,
    bookkeeping: &Bookkeeping<'_>,
    started: Instant,
    run_sql: bool,
) -> Result<Duration, sqlx::Error> {
    if run_sql {
        sqlx::raw_sql(up).execute(&mut *connection).await?;
    }
    let elapsed = started.elapsed();
    let record = sqlx::query(bookkeeping.record)
        .bind(migration.version)
        .bind(migration.description)
        .bind(migration.checksum())
        .bind(elapsed.as_millis() as i64);
    match bookkeeping.forget {
        None => {
            record.execute(&mut *connection).await?;
        }
        Some(forget) if bookkeeping.in_transaction => {
            sqlx::query(forget)
                .bind(migration.version)
                .execute(&mut *connection)
                .await?;
            record.execute(&mut *connection).await?;
        }
        // Where DDL commits on its own, outside any transaction, one transaction replaces
        // the record whole: a run stopped before its commit leaves the old record, which
        // agrees with the change now in place.
        Some(forget) => {
            let mut transaction = connection.begin().await?;
            sqlx::query(forget)
                .bind(migration.version)
                .execute(&mut *transaction)
                .await?;
            record.execute(&mut *transaction).await?;
            transaction.commit().await?;
        }
    }
    Ok(elapsed)
}

async fn undo_one(
    connection: &mut sqlx::AnyConnection,
    migration: &Migration,
    forget: &str,
    run_sql: bool,
) -> Result<(), sqlx::Error> {
    if run_sql {
        sqlx::raw_sql(migration.down)
            .execute(&mut *connection)
            .await?;
    }
    sqlx::query(forget)
        .bind(migration.version)
        .execute(&mut *connection)
        .await?;
    Ok(())
}

fn placeholders(store: &Store, count: usize) -> String {
    let mut sql = store.sql();
    for index in 0..count {
        if index > 0 {
            sql.push(", ");
        }
        sql.param();
    }
    sql.build()
}

/// Rows in the inbox table, when it exists; used to warn before a revert drops it.
pub async fn inbox_rows(store: &Store) -> anyhow::Result<Option<i64>> {
    if !store.table_exists(INBOX_TABLE).await? {
        return Ok(None);
    }
    let rows: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {INBOX_TABLE}"))
        .fetch_one(store.pool())
        .await
        .with_context(|| format!("could not count the rows of {INBOX_TABLE}"))?;
    Ok(Some(rows))
}

/// How many rows of the inbox hold a Kafka coordinate, which reverting migration 2 drops
/// with its columns; `None` without the table or those columns.
pub async fn rows_with_coordinates(store: &Store) -> anyhow::Result<Option<i64>> {
    if !store.table_exists(INBOX_TABLE).await? {
        return Ok(None);
    }
    let columns = store.columns(INBOX_TABLE).await?;
    let coordinates = ["topic", "partition", "offset"];
    if !coordinates.iter().all(|column| columns.contains(column)) {
        return Ok(None);
    }
    let any_held = coordinates
        .iter()
        .map(|column| format!("{} IS NOT NULL", store.dialect.quote(column)))
        .collect::<Vec<_>>()
        .join(" OR ");
    let rows: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM {INBOX_TABLE} WHERE {any_held}"
    ))
    .fetch_one(store.pool())
    .await
    .with_context(|| format!("could not count the rows of {INBOX_TABLE}"))?;
    Ok(Some(rows))
}

#[cfg(test)]
mod tests {
    use super::{
        adoption_refusal, coordinate_type_refusal, mysql_conversion_refusal, KeyColumnType,
        OwnForeignKey, RebuildPlan, TableOptions,
    };
    use crate::store::Backend;

    #[test]
    fn own_coordinate_columns_must_hold_what_the_inbox_writes() {
        let columns = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(c, t)| (c.to_string(), t.to_string()))
                .collect()
        };
        for fine in [
            columns(&[
                ("topic", "character varying(249)"),
                ("partition", "integer"),
                ("offset", "bigint"),
            ]),
            columns(&[
                ("topic", "text"),
                ("partition", "bigint"),
                ("offset", "numeric(20,0)"),
            ]),
            columns(&[("partition", "numeric"), ("offset", "numeric")]),
        ] {
            assert_eq!(
                coordinate_type_refusal(&fine),
                Vec::<String>::new(),
                "{fine:?}"
            );
        }
        assert_eq!(
            coordinate_type_refusal(&columns(&[
                ("partition", "numeric(9,0)"),
                ("offset", "numeric(20,2)")
            ]))
            .len(),
            2
        );
        assert_eq!(
            coordinate_type_refusal(&columns(&[("topic", "character varying")])),
            Vec::<String>::new()
        );
        let wrong = columns(&[
            ("topic", "character varying(100)"),
            ("partition", "smallint"),
            ("offset", "text"),
        ]);
        assert_eq!(
            coordinate_type_refusal(&wrong),
            [
                "its own topic column is character varying(100), which migration 2 keeps, \
                 where the inbox writes text there; change its type or rename the column",
                "its own partition column is smallint, which migration 2 keeps, where the \
                 inbox writes integer there; change its type or rename the column",
                "its own offset column is text, which migration 2 keeps, where the inbox writes \
                 bigint there; change its type or rename the column",
            ]
        );
    }

    #[test]
    fn mysql_refuses_only_tables_its_one_statement_cannot_convert() {
        let options = |engine: &str, row_format: &str, create: &str, default: &str| {
            let table_type = "BASE TABLE".to_string();
            Some((
                engine.into(),
                row_format.into(),
                create.into(),
                default.into(),
                table_type,
            ))
        };
        let column = |name: &str, data_type: &str, length: i64, set: &str, collation: &str| {
            let column_type = format!("{data_type}({length})");
            (
                name.into(),
                column_type,
                data_type.into(),
                length,
                set.into(),
                collation.into(),
            )
        };
        let target = |name: &str| column(name, "varchar", 255, "utf8mb4", "utf8mb4_bin");
        let classic = [target("consumer"), target("event_id")];
        let refused = |options: Option<TableOptions>, columns: &[KeyColumnType]| {
            mysql_conversion_refusal(options.as_ref(), columns, &[])
        };
        // A row format taken from the server's default is rebuilt with its present one.
        for fine in [
            options("InnoDB", "Dynamic", "", "dynamic"),
            options("innodb", "Compact", "", "dynamic"),
            options("InnoDB", "Compressed", "row_format=COMPRESSED", "compact"),
            None,
        ] {
            assert_eq!(
                refused(fine.clone(), &classic),
                Vec::<String>::new(),
                "{fine:?}"
            );
        }
        for compact in [
            options("InnoDB", "Compact", "", "compact"),
            options("InnoDB", "Redundant", "ROW_FORMAT=REDUNDANT", "dynamic"),
        ] {
            let reasons = refused(compact.clone(), &classic);
            assert!(reasons[0].starts_with("its row format is "), "{reasons:?}");
        }
        let reasons = refused(options("MyISAM", "Dynamic", "", "dynamic"), &classic);
        assert!(
            reasons[0].starts_with("its engine is MyISAM,"),
            "{reasons:?}"
        );

        let latin1 = column("event_id", "varchar", 255, "latin1", "latin1_swedish_ci");
        let wide = column("event_id", "varchar", 256, "utf8mb4", "utf8mb4_bin");
        let binary = column("consumer", "varbinary", 16, "", "");
        let binary_text = column("consumer", "varchar", 16, "binary", "binary");
        assert_eq!(
            refused(None, std::slice::from_ref(&latin1)),
            Vec::<String>::new()
        );
        assert_eq!(refused(None, &[wide]).len(), 1);
        assert_eq!(refused(None, &[binary]).len(), 1);
        assert_eq!(refused(None, &[binary_text]).len(), 1);

        let foreign_key = |column: &str, on_delete: &str| {
            let key = (
                "fk".into(),
                column.into(),
                "t".into(),
                on_delete.into(),
                "RESTRICT".into(),
            );
            [key]
        };
        let with_keys = |columns: &[KeyColumnType], keys: &[OwnForeignKey]| {
            mysql_conversion_refusal(None, columns, keys)
        };
        assert_eq!(
            with_keys(&classic, &foreign_key("event_id", "CASCADE")).len(),
            0
        );
        assert_eq!(
            with_keys(&classic, &foreign_key("other", "SET NULL")).len(),
            0
        );
        assert_eq!(
            with_keys(&classic, &foreign_key("consumer", "SET NULL")).len(),
            1
        );
        assert_eq!(
            with_keys(&[latin1], &foreign_key("event_id", "CASCADE")).len(),
            1
        );
    }

    #[test]
    fn only_keys_that_let_every_consumer_record_an_event_are_adopted() {
        let key = |name: &str, kind: &str, columns: &str| {
            (name.to_string(), kind.to_string(), columns.to_string())
        };
        let classic = key("pk", "p", "event_id");
        let current = key("pk", "p", "consumer,event_id");
        // The classic and the current layout, a key that holds consumer, and (PostgreSQL)
        // no primary key at all.
        for keys in [
            vec![classic.clone()],
            vec![key("pk", "p", "Event_Id")],
            vec![current.clone()],
            vec![key("pk", "p", "event_id,consumer")],
            vec![classic.clone(), key("u", "u", "event_id,topic,consumer")],
        ] {
            assert_eq!(
                adoption_refusal(&keys, true),
                Vec::<String>::new(),
                "{keys:?}"
            );
        }
        assert_eq!(adoption_refusal(&[], false), Vec::<String>::new());
        assert_eq!(
            adoption_refusal(&[], true),
            ["it has no primary key, where the classic table's is on (event_id)"]
        );
        assert_eq!(
            adoption_refusal(&[key("pk", "p", "id"), key("uq", "u", "event_id")], false),
            [
                "its primary key pk is on (id), where the classic table's is on (event_id)",
                "its unique key uq on (event_id) does not hold both consumer and event_id, so it \
                 can refuse rows that the inbox's key keeps apart"
            ]
        );
        // Consumer alone, or with the coordinates: one event a consumer, or one at an offset.
        for columns in ["consumer", "consumer,topic,partition,offset"] {
            assert_eq!(
                adoption_refusal(&[classic.clone(), key("u", "u", columns)], false).len(),
                1,
                "{columns}"
            );
        }
        assert_eq!(
            adoption_refusal(&[current.clone(), key("lower", "u", "(expression)")], false).len(),
            1
        );
        // MySQL keys on the first characters of a column: two ids alike that far are one.
        assert_eq!(
            adoption_refusal(
                &[current, key("uq", "u", "consumer(10),event_id(20),topic")],
                true
            ),
            [
                "its unique key uq on (consumer(10),event_id(20),topic) holds only the first \
              characters of consumer and event_id, so it can refuse rows that the inbox's key \
              keeps apart"
            ]
        );
        // PostgreSQL keys by a collation that takes differing text for equal.
        assert_eq!(
            adoption_refusal(
                &[
                    classic,
                    key("ci", "u", "consumer COLLATE nocase,event_id COLLATE nocase")
                ],
                true
            ),
            [
                "its unique key ci on (consumer COLLATE nocase,event_id COLLATE nocase) compares \
                 consumer by nocase and event_id by nocase, where the inbox's key compares \
                 every character for equality, so it can refuse rows that the inbox's key \
                 keeps apart; drop it (DROP INDEX \"ci\"), or make it again comparing them \
                 with = and without a COLLATE"
            ]
        );
    }

    #[test]
    fn a_rebuild_is_skipped_only_for_the_exact_key_with_the_coordinates() {
        let rebuild = Backend::Sqlite.dialect().migrations[1]
            .rebuild
            .as_ref()
            .unwrap();
        // NOT NULL where the rebuilt table has it, as a table of the target layout must.
        let table = |columns: &[(&str, i64)]| -> Vec<(String, i64, i64)> {
            columns
                .iter()
                .map(|(name, key)| {
                    let not_null = ["consumer", "event_id", "processed_at"]
                        .iter()
                        .any(|c| name.eq_ignore_ascii_case(c));
                    (name.to_string(), *key, i64::from(not_null))
                })
                .collect()
        };
        let classic = table(&[("event_id", 1), ("Consumer", 0), ("processed_at", 0)]);
        assert_eq!(rebuild.plan(&classic), RebuildPlan::Rebuild);
        assert_eq!(rebuild.plan(&[]), RebuildPlan::Rebuild);
        let target = table(&[
            ("Consumer", 1),
            ("event_id", 2),
            ("topic", 0),
            ("partition", 0),
            ("OFFSET", 0),
            ("processed_at", 0),
            ("note", 0),
        ]);
        assert_eq!(rebuild.plan(&target), RebuildPlan::AlreadyInTargetLayout);
        // The same with a key column that may be NULL is not the target layout.
        let mut nullable = target.clone();
        nullable[0].2 = 0;
        assert_eq!(
            rebuild.plan(&nullable),
            RebuildPlan::WouldLose {
                lost: vec![
                    "topic".into(),
                    "partition".into(),
                    "OFFSET".into(),
                    "note".into()
                ],
                nullable: vec!["Consumer".into()],
            }
        );
        // The key the other way round would be rebuilt, losing the coordinates and the note.
        let reversed = table(&[
            ("consumer", 2),
            ("event_id", 1),
            ("topic", 0),
            ("partition", 0),
            ("offset", 0),
            ("processed_at", 0),
            ("note", 0),
        ]);
        assert_eq!(
            rebuild.plan(&reversed),
            RebuildPlan::WouldLose {
                lost: vec![
                    "topic".into(),
                    "partition".into(),
                    "offset".into(),
                    "note".into()
                ],
                nullable: Vec::new(),
            }
        );
    }

    #[test]
    fn every_backend_has_the_same_versions_in_order() {
        let versions = |backend: Backend| -> Vec<(i64, &str)> {
            backend
                .dialect()
                .migrations
                .iter()
                .map(|m| (m.version, m.description))
                .collect()
        };
        assert_eq!(versions(Backend::Sqlite), versions(Backend::Postgres));
        assert_eq!(versions(Backend::Sqlite), versions(Backend::Mysql));
        assert_eq!(
            versions(Backend::Sqlite)
                .iter()
                .map(|v| v.0)
                .collect::<Vec<_>>(),
            vec![1, 2]
        );
    }

    #[test]
    fn checksums_are_stable_hex_sha256() {
        let migration = &Backend::Postgres.dialect().migrations[0];
        let checksum = migration.checksum();
        assert_eq!(checksum.len(), 64);
        assert!(checksum.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(checksum, migration.checksum());
        assert_ne!(
            checksum,
            Backend::Postgres.dialect().migrations[1].checksum()
        );
    }
}
