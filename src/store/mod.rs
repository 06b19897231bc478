//! The inbox store: one connection pool over SQLite, PostgreSQL or MySQL/MariaDB, chosen by
//! the URL scheme. SQL that differs between them comes from the backend's [`Dialect`]; the
//! queries themselves are written once, here.

pub mod mysql;
pub mod pg_pipeline;
pub mod postgres;
pub mod sqlite;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, AnyPool, Connection, Executor, Row};
use tokio::net::TcpStream;

use crate::error::usage;
use crate::migrate::Migration;
use crate::output::{names_a_secret, register_secret};
use crate::time::StoredTime;

/// The inbox table. Its name is fixed by the data model.
pub const INBOX_TABLE: &str = "processed_messages";
/// The tool's own migration bookkeeping; never an application's `_sqlx_migrations`.
pub const MIGRATIONS_TABLE: &str = "inboxctl_migrations";
/// The tool's record of each prune: which consumer's rows before which cutoff went, so that
/// `compare` knows the inbox may lack their offsets. Made on the first prune that deletes.
pub const PRUNES_TABLE: &str = "inboxctl_prunes";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Sqlite,
    Postgres,
    Mysql,
}

/// How the inbox's key compares event ids. A MySQL collation with PAD SPACE (migration 2's
/// `utf8mb4_bin`) ignores trailing spaces (README, Limits): `x ` and `x` are one id there,
/// so a run that tells ids apart in memory (a dry run's count, the ids sent to a handler,
/// compare's scan) does so as the key does. Elsewhere every character counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdKey {
    pub ignores_trailing_spaces: bool,
}

impl IdKey {
    pub const EXACT: IdKey = IdKey {
        ignores_trailing_spaces: false,
    };

    /// The part of `id` the key compares.
    pub fn of(self, id: &str) -> &str {
        match self.ignores_trailing_spaces {
            true => id.trim_end_matches(' '),
            false => id,
        }
    }

    /// MySQL's and MariaDB's: by the collation of `event_id` (none for a binary column).
    /// Their NO PAD collations are MariaDB's `…_nopad_…` and MySQL 8's `…_0900_…`.
    pub fn of_mysql_collation(collation: Option<&str>) -> IdKey {
        IdKey {
            ignores_trailing_spaces: collation
                .is_some_and(|name| !name.contains("_nopad_") && !name.contains("_0900_")),
        }
    }
}

impl Backend {
    pub fn dialect(self) -> &'static Dialect {
        match self {
            Backend::Sqlite => &sqlite::DIALECT,
            Backend::Postgres => &postgres::DIALECT,
            Backend::Mysql => &mysql::DIALECT,
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.dialect().name)
    }
}

/// How a backend serialises concurrent `migrate run`s.
pub enum MigrationLocking {
    /// A session lock held across the run (PostgreSQL advisory lock, MySQL `GET_LOCK`); each
    /// migration then runs in its own transaction where the backend has transactional DDL.
    SessionLock {
        lock: &'static str,
        unlock: &'static str,
        transactional_ddl: bool,
    },
    /// One write transaction over the whole run (SQLite `BEGIN IMMEDIATE`): a second process
    /// waits on the busy timeout, then finds nothing left to do.
    ExclusiveTransaction {
        begin: &'static str,
        /// Set on the connection around the run, and then undone: the statements that
        /// leave a table rebuilt under its old name.
        around: (&'static str, &'static str),
    },
}

/// What tells that migration 2 cannot turn `processed_at` into a time column by itself.
pub struct UnconvertibleTimes {
    /// The column's type, when it is none the server converts itself to a time without
    /// being told how (a number may be epoch seconds or milliseconds).
    pub type_query: &'static str,
    /// Where a text column converts value by value: how many values are not in the form
    /// the server reads as a time.
    pub unreadable_text: Option<&'static str>,
    pub remedy: &'static str,
}

/// See [`Dialect::inexact_key_collations`].
pub struct InexactKeyCollations {
    pub query: &'static str,
    pub remedy: &'static str,
}

/// How migration 2's key `(consumer, event_id)` will compare the values a table holds now.
pub struct MigratedKey {
    /// Wraps `consumer` or `event_id` into the value the new key will hold.
    pub value: fn(&str) -> String,
    /// How that comparison differs from the table's own, for a reader ("" where it does not).
    pub compared_as: &'static str,
}

/// The catalog queries that tell whether MySQL's migration 2 can convert an existing table.
pub struct MysqlAdoptionQueries {
    /// (engine, row format, create options, the server's default row format, table type)
    /// of the inbox.
    pub table_options: &'static str,
    /// (column, column type, data type, maximum length, character set, collation) of
    /// `event_id` and `consumer`.
    pub key_column_types: &'static str,
    /// (constraint, column, referenced table, delete rule, update rule) of the inbox's own
    /// foreign keys, one row per column.
    pub foreign_keys: &'static str,
    /// What a table already in the inbox's layout keeps, as migration 2 only records it:
    /// `column(N)` for each column of the primary key that holds only its first N characters;
    pub primary_key_prefixes: &'static str,
    /// (column, type) of its coordinate columns that cannot hold what the inbox writes;
    pub unfit_coordinates_in_place: &'static str,
    /// and (column type, data type, default, `YES` where nullable) of its `processed_at`.
    pub processed_at: &'static str,
}

/// What PostgreSQL refuses migration 2's changes for, or what they would keep, looked up
/// before it alters the table in place:
pub struct PostgresAdoptionQueries {
    /// the inbox's partition key, when it holds more than `consumer` and `event_id` (a
    /// partitioned table's primary key must hold its partition key, which leaves no room
    /// for migration 2's);
    pub partition_key_beyond_the_key: &'static str,
    /// (column, type) of the coordinate columns the table has of its own, which migration 2
    /// keeps (it adds those missing);
    pub own_coordinate_columns: &'static str,
    /// the objects the server refuses to set `processed_at`'s type for, but views: triggers
    /// and policies that name the column, generated columns computed from it, and, where
    /// the type changes, indexes with an expression or predicate over it, each as
    /// `kind name`;
    pub other_dependents_of_processed_at: &'static str,
    /// and the views that depend on `processed_at` or on the primary key migration 2 drops,
    /// each as (view, whether it depends on the key rather than the column).
    pub views_in_the_way: &'static str,
}
/// What differs between backends. Each backend module defines one.
pub struct Dialect {
    pub name: &'static str,
    /// Statements run on every new connection (time zone, busy timeout).
    pub session_setup: &'static [&'static str],
    /// Statements that keep a session's queries to its own process (PostgreSQL's parallel
    /// workers), for a command whose queries run beside other work of its own.
    pub serial_plans: &'static [&'static str],
    pub numbered_params: bool,
    pub identifier_quote: char,
    /// A timestamp bound as a parameter, in UTC, as text.
    pub timestamp_param_text: fn(DateTime<Utc>) -> String,
    /// Wraps a placeholder so the database reads it as a timestamp.
    pub timestamp_param: fn(&str) -> String,
    /// The lower bound of `processed_at` that prune's first batch of a consumer starts from
    /// (later ones start where the last stopped): none where every value is a time, however
    /// early (a zero date, `-infinity`, Go's zero time in year 1).
    pub earliest_prunable: Option<&'static str>,
    /// Renders a timestamp expression as UTC text `YYYY-MM-DD HH:MM:SS[.f]`.
    pub timestamp_text: fn(&str) -> String,
    /// Casts an integer expression to a 64-bit integer, so every backend decodes it as `i64`.
    pub bigint: fn(&str) -> String,
    /// Casts an expression to text, so every backend decodes it as a string (an
    /// application's `uuid` event id, say).
    pub text: fn(&str) -> String,
    /// Returns 1 when the table named by the one parameter exists.
    pub table_exists: &'static str,
    /// The names of the columns of the table named by the one parameter.
    pub columns: &'static str,
    /// Whether column names compare case-sensitively, as unquoted ones do in this dialect's
    /// SQL: PostgreSQL folds them to lower case, so `"Consumer"` is not `consumer` there;
    /// SQLite and MySQL match any case.
    pub column_names_case_sensitive: bool,
    /// Every consumer in the inbox, in order, reading only the primary key's leading column.
    pub consumers: &'static str,
    /// The planner's estimate of the inbox's row count, where the backend keeps one.
    pub estimated_rows: Option<&'static str>,
    /// The DELETE of one batch of prune, its rows found through the `(consumer,
    /// processed_at)` index: PostgreSQL by ctid, SQLite by rowid, MySQL by key. An inbox
    /// that is not a plain table may need another (see `postgres::batch_delete`,
    /// `sqlite::batch_delete`).
    pub delete_batch: BatchDelete,
    /// Starts a transaction that will write (SQLite takes the write lock at once, so two
    /// writers queue on the busy timeout instead of failing on upgrade).
    pub begin_write: &'static str,
    /// Statements that start a read-only transaction whose reads all see one moment of the
    /// database, for a report made of several queries. Empty where that would hold writers
    /// back (SQLite: a reader in rollback-journal mode keeps every writer out until it ends).
    pub begin_snapshot: &'static [&'static str],
    /// Wraps a multi-row `INSERT … VALUES` into the inbox so that rows already there are
    /// skipped and the statement returns the event ids it did insert.
    pub insert_new: (&'static str, &'static str),
    /// Whether a DELETE can report its rows (`RETURNING` in a CTE): the batch then tells
    /// where the next one starts, and no separate query is needed.
    pub delete_returning: bool,
    /// The inbox heap's size in pages, the planner's row estimate and its page count, where
    /// the backend can delete by physical block range (PostgreSQL's TID range scan); no row
    /// when the inbox is not a plain table.
    pub heap_extent: Option<&'static str>,
    pub migration_locking: MigrationLocking,
    /// Where the migrations drop or rebuild the inbox table by dropping it (SQLite), the
    /// other tables whose foreign keys reference it: dropping it would delete their rows
    /// (ON DELETE CASCADE) or leave their keys pointing at nothing. PostgreSQL and MySQL
    /// refuse such a change by themselves.
    pub tables_referencing_inbox: Option<&'static str>,
    /// Where names are looked up along a search path while new tables go to its first
    /// schema (PostgreSQL): the schema that holds the inbox and the one new tables go to,
    /// when they differ. Migration 1's `CREATE TABLE IF NOT EXISTS` would then make a second
    /// inbox that hides the first.
    pub inbox_outside_creation_schema: Option<&'static str>,
    /// Where migration 2 alters the table in place (PostgreSQL, MySQL): the key columns of
    /// its unique keys (and PostgreSQL's exclusion constraints), a row each, as (key, `p` for
    /// the primary key, `x` for an exclusion constraint or `u`, column), in key order (an
    /// expression as `(expression)`), which `migrate` checks before it alters anything.
    pub unique_keys: Option<&'static str>,
    /// Where migration 2 converts the table in one statement that a table it cannot convert
    /// fails midway through (MySQL): what decides that, read before it runs. See
    /// [`MysqlAdoptionQueries`].
    pub mysql_adoption: Option<MysqlAdoptionQueries>,
    /// Where migration 2 alters the table in place by PostgreSQL's rules.
    pub postgres_adoption: Option<PostgresAdoptionQueries>,
    /// Where migration 2 can leave `consumer` and `event_id` with the collation the table
    /// gave them (PostgreSQL always; MySQL and SQLite on a table already in the inbox's
    /// layout): (column, collation) of those whose collation takes different text for equal
    /// (case, accents or, SQLite's RTRIM, trailing spaces ignored), and how to give them an
    /// exact one.
    pub inexact_key_collations: Option<InexactKeyCollations>,
    /// What already holds a name that migration 2 gives to an object of its own, each as
    /// `<kind> <name>[ of table <table>]`: the server would refuse to make that object, or
    /// (`CREATE INDEX IF NOT EXISTS`) take the one there for it. An index of the inbox that
    /// migration 2 drops first, or that is already the one it makes, holds its name rightly.
    pub names_taken: &'static str,
    /// How migration 2's key will compare the values of an adopted table, so that `migrate`
    /// can find the rows it would refuse as duplicates before it changes anything.
    pub migrated_key: MigratedKey,
    /// Where migration 2 sets `processed_at`'s type with no way given to convert other
    /// types (PostgreSQL, MySQL): see [`UnconvertibleTimes`].
    pub processed_at_unconvertible: Option<UnconvertibleTimes>,
    /// Where migration 2 alters the table in place (PostgreSQL, MySQL): the tables (itself,
    /// or in another database, included) whose foreign keys reference it, which it cannot
    /// keep while it changes the key (PostgreSQL refuses; MariaDB breaks them). PostgreSQL
    /// names only those that reference the primary key.
    pub tables_with_foreign_keys_to_inbox: Option<&'static str>,
    /// Creates the bookkeeping table if it is missing.
    pub migrations_table_ddl: &'static str,
    pub migrations: &'static [Migration],
}

impl Dialect {
    pub fn quote(&self, identifier: &str) -> String {
        let q = self.identifier_quote;
        format!("{q}{identifier}{q}")
    }
}

/// Builds SQL text with placeholders numbered in the order they appear, which is the order
/// they must be bound in for `?`-style backends.
pub struct SqlBuilder {
    dialect: &'static Dialect,
    sql: String,
    params: usize,
}

impl SqlBuilder {
    pub fn new(dialect: &'static Dialect) -> Self {
        SqlBuilder {
            dialect,
            sql: String::new(),
            params: 0,
        }
    }

    pub fn push(&mut self, text: &str) -> &mut Self {
        self.sql.push_str(text);
        self
    }

    pub fn param(&mut self) -> &mut Self {
        let placeholder = self.next_placeholder();
        self.sql.push_str(&placeholder);
        self
    }

    /// `count` placeholders separated by commas, as a VALUES tuple's or an IN list's contents.
    pub fn params(&mut self, count: usize) -> &mut Self {
        self.separated(count, |sql| {
            sql.param();
        })
    }

    /// `count` placeholders the planner does not see into ([`SqlBuilder::unseen_param`]),
    /// separated by commas, as an IN list's contents.
    pub fn unseen_params(&mut self, count: usize) -> &mut Self {
        self.separated(count, |sql| {
            sql.unseen_param();
        })
    }

    /// `rows` tuples of `width` placeholders each, separated by commas: a VALUES list.
    pub fn value_rows(&mut self, rows: usize, width: usize) -> &mut Self {
        self.separated(rows, |sql| {
            sql.push("(").params(width).push(")");
        })
    }

    fn separated(&mut self, count: usize, mut each: impl FnMut(&mut Self)) -> &mut Self {
        for index in 0..count {
            if index > 0 {
                self.sql.push_str(", ");
            }
            each(self);
        }
        self
    }

    /// ` [AND processed_at >= ?] AND processed_at < ?`: rows processed at or after a lower
    /// bound (`from`, where there is one) and strictly before a cutoff, bound in that order.
    pub fn processed_between(&mut self, from: bool) -> &mut Self {
        if from {
            self.push(" AND processed_at >= ").timestamp_param();
        }
        self.push(" AND processed_at < ").timestamp_param()
    }

    /// A placeholder the planner does not see into: `(SELECT ?)`, a one-time subquery.
    /// PostgreSQL then plans for the statistics' average value. For a consumer its statistics
    /// do not know yet (one new since the last ANALYZE), it would otherwise estimate one row
    /// and take any index that starts with consumer as good as another, reading all of that
    /// consumer's rows through the wrong one; which one wins such a tie depends only on the
    /// order the indexes were created in.
    pub fn unseen_param(&mut self) -> &mut Self {
        self.sql.push_str("(SELECT ");
        self.param();
        self.sql.push(')');
        self
    }

    pub fn timestamp_param(&mut self) -> &mut Self {
        let placeholder = self.next_placeholder();
        self.sql
            .push_str(&(self.dialect.timestamp_param)(&placeholder));
        self
    }

    fn next_placeholder(&mut self) -> String {
        self.params += 1;
        if self.dialect.numbered_params {
            format!("${}", self.params)
        } else {
            "?".to_string()
        }
    }

    pub fn build(&self) -> String {
        self.sql.clone()
    }
}

/// A database URL as the user gave it, with what is safe to show of it.
#[derive(Debug, Clone)]
pub struct DatabaseUrl {
    pub backend: Backend,
    /// What sqlx connects to (scheme normalised).
    connect: String,
    /// For messages: host, port and database, or the SQLite file; never the password.
    pub endpoint: String,
    /// The URL with its password replaced by `***`.
    pub redacted: String,
    /// Host and port when the server is reached over TCP (not a Unix socket).
    tcp_address: Option<(String, u16)>,
    /// The SQLite file, percent-decoded as the driver opens it.
    sqlite_file: Option<String>,
    /// Parameters of a PostgreSQL URL that the driver does not read (libpq's, another
    /// driver's), each once.
    pub ignored_parameters: Vec<String>,
}

/// The query parameters sqlx's MySQL driver reads.
const MYSQL_URL_PARAMETERS: &[&str] = &[
    "ssl-mode",
    "sslmode",
    "ssl-ca",
    "sslca",
    "ssl-cert",
    "sslcert",
    "ssl-key",
    "sslkey",
    "charset",
    "collation",
    "socket",
    "timezone",
    "time-zone",
    "statement-cache-capacity",
];

/// The query parameters sqlx's PostgreSQL driver reads (and `options[NAME]`).
const POSTGRES_URL_PARAMETERS: &[&str] = &[
    "sslmode",
    "ssl-mode",
    "sslrootcert",
    "ssl-root-cert",
    "ssl-ca",
    "sslcert",
    "ssl-cert",
    "sslkey",
    "ssl-key",
    "statement-cache-capacity",
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "application_name",
    "options",
];

/// libpq's connection parameters that sqlx's PostgreSQL driver does not read, TLS ones among
/// them. The URL is often the application's, written for its own driver: these, and any other
/// that is no TLS setting, are ignored with a warning (see [`postgres_parameter`]).
const LIBPQ_ONLY_PARAMETERS: &[&str] = &[
    "passfile",
    "require_auth",
    "channel_binding",
    "connect_timeout",
    "client_encoding",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "replication",
    "gssencmode",
    "sslnegotiation",
    "sslcompression",
    "sslpassword",
    "sslcertmode",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "sslkeylogfile",
    "requirepeer",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "krbsrvname",
    "gsslib",
    "gssdelegation",
    "service",
    "target_session_attrs",
    "load_balance_hosts",
];

/// The `sslmode` values of a PostgreSQL URL, and the `ssl-mode` values of a MySQL one (in
/// any case): the drivers' own refusal names neither the parameter nor what it takes.
const POSTGRES_SSL_MODES: &[&str] = &[
    "disable",
    "allow",
    "prefer",
    "require",
    "verify-ca",
    "verify-full",
];
const MYSQL_SSL_MODES: &[&str] = &[
    "disabled",
    "preferred",
    "required",
    "verify_ca",
    "verify_identity",
];

/// A query parameter of a PostgreSQL URL: `Ok(true)` when the driver reads it, `Ok(false)`
/// when it is ignored (libpq's alone, or another driver's: Prisma's `schema`, say), an error
/// for an unknown TLS one (`sslmdoe`, node-postgres' `ssl=true`, libpq's `requiressl`), which
/// would connect with the default `prefer`, and for a name no driver has (` sslmode`, from a
/// `%20` or `+` before it, or one with a look-alike letter).
fn postgres_parameter(key: &str) -> anyhow::Result<bool> {
    if POSTGRES_URL_PARAMETERS.contains(&key) || key.starts_with("options[") {
        return Ok(true);
    }
    if !key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-.[]".contains(c))
    {
        return Err(usage(format!(
            "the database URL's parameter '{}' is not a parameter name (letters, digits, \
             '_', '-', '.'); expected e.g. sslmode=require",
            key.escape_default()
        )));
    }
    let name = key.to_ascii_lowercase();
    let tls = ["ssl", "tls", "requiressl"]
        .iter()
        .any(|start| name.starts_with(start));
    if LIBPQ_ONLY_PARAMETERS.contains(&key) || !tls {
        return Ok(false);
    }
    Err(usage(format!(
        "the database URL's parameter '{key}' is no TLS setting a PostgreSQL URL takes, and \
         one is never ignored; expected sslmode (disable, allow, prefer, require, verify-ca, \
         verify-full), sslrootcert, sslcert or sslkey{}",
        match key {
            "ssl" => " (ssl=true is sslmode=require)",
            _ => "",
        }
    )))
}

/// The TLS mode of a URL's `sslmode` (`ssl-mode`), checked against what the driver takes.
fn check_ssl_mode(backend: Backend, key: &str, value: &str) -> anyhow::Result<()> {
    let modes = match backend {
        Backend::Postgres => POSTGRES_SSL_MODES,
        Backend::Mysql => MYSQL_SSL_MODES,
        Backend::Sqlite => return Ok(()),
    };
    match modes.contains(&value.to_ascii_lowercase().as_str()) {
        true => Ok(()),
        false => Err(usage(format!(
            "the database URL's {key} '{value}' is not a TLS mode of a {backend} URL; expected \
             one of {}",
            modes.join(", ")
        ))),
    }
}

impl DatabaseUrl {
    /// sqlx's options for `connect`: this URL's connection string, or one derived from it.
    fn connect_options(&self, connect: &str) -> anyhow::Result<AnyConnectOptions> {
        connect
            .parse()
            .map_err(|error| usage(format!("invalid database URL '{}': {error}", self.redacted)))
    }

    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let text = text.trim();
        if text.is_empty() {
            // An unset variable in a cron line or a .env file, most often.
            return Err(usage(
                "the database URL is empty: set --database-url or DATABASE_URL to a URL such as \
                 sqlite://inbox.db, postgres://user@host/db or mysql://user@host/db, or leave \
                 both unset for the default sqlite://inbox.db",
            ));
        }
        let scheme = text
            .split_once(':')
            .map(|(scheme, _)| scheme.to_ascii_lowercase());
        let backend = match scheme.as_deref() {
            Some("sqlite") => Backend::Sqlite,
            Some("postgres" | "postgresql") => Backend::Postgres,
            Some("mysql" | "mariadb") => Backend::Mysql,
            _ => {
                let shown = redact_url(text);
                return Err(usage(format!(
                    "unsupported database URL '{shown}': the scheme must be one of sqlite://, postgres:// (postgresql://), mysql:// (mariadb://)"
                )));
            }
        };
        if backend == Backend::Sqlite {
            let raw_path = sqlite_path(text);
            // The driver percent-decodes the path (`%20` a space, `%3F` a `?`): every check
            // and message names the file it opens.
            let path = percent_encoding::percent_decode_str(raw_path)
                .decode_utf8()
                .map_err(|_| {
                    usage(format!(
                        "database URL '{text}' names a SQLite file that is not UTF-8 once \
                         percent-decoded; expected sqlite://PATH, e.g. sqlite://inbox.db"
                    ))
                })?;
            if path.contains('\0') {
                return Err(usage(format!(
                    "database URL '{text}' names a SQLite file with a NUL character (%00), \
                     which no file name holds"
                )));
            }
            if path.is_empty() {
                return Err(usage(format!(
                    "database URL '{text}' names no SQLite file; expected sqlite://PATH, e.g. sqlite://inbox.db"
                )));
            }
            // The inbox must outlive the command: one in memory is gone when it exits.
            if path == ":memory:" || text.contains("mode=memory") {
                return Err(usage(format!(
                    "database URL '{text}' names an in-memory SQLite database, which is gone when the command exits; expected a file, e.g. sqlite://inbox.db"
                )));
            }
            let query = text.split_once('?').map(|(_, query)| query);
            return Ok(DatabaseUrl {
                backend,
                // The scheme in the case the driver expects, and the path encoded whole, its
                // slashes too: an opaque path, which no URL parser reads `x/..` out of.
                connect: format!(
                    "sqlite:{}{}",
                    percent_encoding::utf8_percent_encode(&path, SQLITE_PATH_ENCODED),
                    query.map(|query| format!("?{query}")).unwrap_or_default()
                ),
                endpoint: format!("SQLite file {path}"),
                redacted: text.to_string(),
                tcp_address: None,
                sqlite_file: Some(path.into_owned()),
                ignored_parameters: Vec::new(),
            });
        }
        let mut parsed = url::Url::parse(text).map_err(|error| {
            // `user:pw@/db`: a URL cannot have credentials without a host.
            let hint = match error {
                url::ParseError::EmptyHost => {
                    "; for a Unix socket, give its folder as the host, percent-encoded \
                     (postgres://user:pw@%2Fvar%2Frun%2Fpostgresql/db), or leave the host out \
                     and put everything in the query (postgres:///db?host=/var/run/postgresql&user=…)"
                }
                // The password is hidden in the message, and with it the character at fault.
                _ if needs_percent_encoding(text) => {
                    "; a user name or password holding # ? / or @ must write it percent-encoded \
                     (%23 %3F %2F %40)"
                }
                _ => "",
            };
            usage(format!(
                "invalid database URL '{}': {error}{hint}",
                redact_url(text)
            ))
        })?;
        if let Some(password) = parsed.password() {
            register_secret(password);
        }
        let mut ignored_parameters = Vec::new();
        for (key, value) in parsed.query_pairs() {
            if names_a_secret(&key) {
                register_secret(&value);
            }
            if backend == Backend::Postgres
                && !postgres_parameter(&key)?
                && !ignored_parameters.iter().any(|ignored| *ignored == key)
            {
                ignored_parameters.push(key.to_string());
            }
            if key == "sslmode" || key == "ssl-mode" {
                check_ssl_mode(backend, &key, &value)?;
            }
            // The MySQL driver ignores any other without a word: a `?password=` would then
            // connect with none, a misspelt `ssl-mode` without TLS.
            if backend == Backend::Mysql && !MYSQL_URL_PARAMETERS.contains(&key.as_ref()) {
                return Err(usage(format!(
                    "the database URL's parameter '{key}' is not one a MySQL URL takes; \
                     expected one of {}{}",
                    MYSQL_URL_PARAMETERS.join(", "),
                    match key.as_ref() {
                        "password" | "user" => {
                            " (the user and password go before the host: \
                             mysql://USER:PASSWORD@host/db)"
                        }
                        _ => "",
                    }
                )));
            }
            // The driver would say only "No such file or directory", without the file.
            let names_a_file = matches!(
                key.as_ref(),
                "sslrootcert" | "sslcert" | "sslkey" | "ssl-ca" | "ssl-cert" | "ssl-key"
            );
            if names_a_file && !value.is_empty() && !std::path::Path::new(value.as_ref()).exists() {
                return Err(usage(format!(
                    "the file '{value}' given as {key} in the database URL does not exist"
                )));
            }
        }
        // An IPv6 address without its URL brackets, as a socket address wants it.
        let host = match parsed.host() {
            Some(url::Host::Ipv6(address)) => address.to_string(),
            Some(host) => host.to_string(),
            None => "localhost".to_string(),
        };
        let port = parsed.port().unwrap_or(match backend {
            Backend::Postgres => 5432,
            _ => 3306,
        });
        // As the server gets them: `app%40corp` is the user app@corp.
        let decoded = |text: &str| {
            percent_encoding::percent_decode_str(text)
                .decode_utf8_lossy()
                .into_owned()
        };
        let user = match backend {
            // sqlx's PostgreSQL driver takes the query's user (`?user=app`) over the URL's, as
            // libpq does.
            Backend::Postgres => parsed
                .query_pairs()
                .find(|(key, _)| key == "user")
                .map(|(_, user)| user.into_owned())
                .unwrap_or_else(|| decoded(parsed.username())),
            // Its MySQL driver reads no `user` from the query.
            _ => decoded(parsed.username()),
        };
        let database = match (
            decoded(parsed.path().trim_start_matches('/')).as_str(),
            backend,
        ) {
            // PostgreSQL then takes the database named like the user.
            ("", Backend::Postgres) if !user.is_empty() => {
                format!("database '{user}' by default")
            }
            ("", Backend::Postgres) => "the user's database by default".to_string(),
            ("", _) => "no database named".to_string(),
            (name, _) => format!("database '{name}'"),
        };
        let user = match user.as_str() {
            "" => "the driver's default user".to_string(),
            user => format!("user '{user}'"),
        };
        // A socket path in the query (`?host=/run/postgresql`, `?socket=…`) or as the host
        // means no TCP at all.
        let via_socket = host.is_empty()
            || host.starts_with('/')
            || host.starts_with("%2F")
            || parsed
                .query_pairs()
                .any(|(key, _)| key == "host" || key == "socket" || key == "hostaddr");
        let socket = parsed
            .query_pairs()
            .find(|(key, value)| (key == "host" || key == "socket") && value.starts_with('/'))
            .map(|(_, path)| path.into_owned())
            .or_else(|| {
                let host = percent_encoding::percent_decode_str(&host).decode_utf8_lossy();
                host.starts_with('/').then(|| host.into_owned())
            });
        let endpoint = match socket {
            Some(path) => format!("{backend} server at socket {path} ({database}, {user})"),
            None => format!(
                "{backend} server {}:{port} ({database}, {user})",
                parsed.host_str().unwrap_or("localhost"),
            ),
        };
        let tcp_address = (!via_socket).then_some((host, port));
        if backend == Backend::Mysql && parsed.scheme() == "mariadb" {
            parsed = url::Url::parse(&format!("mysql{}", &text["mariadb".len()..]))
                .map_err(|error| usage(format!("invalid database URL: {error}")))?;
        }
        Ok(DatabaseUrl {
            backend,
            connect: parsed.to_string(),
            endpoint,
            // Parameters the driver ignores are shown without their values, which no name
            // tells to be secret or not (`?token=…`).
            redacted: redact_url_hiding(text, &|key| {
                names_a_secret(key) || ignored_parameters.iter().any(|ignored| ignored == key)
            }),
            tcp_address,
            sqlite_file: None,
            ignored_parameters,
        })
    }
}

impl DatabaseUrl {
    /// The URL to connect with (scheme normalised). It may hold a password: never print it.
    pub fn connect_url(&self) -> &str {
        &self.connect
    }

    /// The file of a SQLite URL.
    pub fn sqlite_path(&self) -> Option<&str> {
        self.sqlite_file.as_deref()
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted)
    }
}

/// The URL with any password, in its user info or its query, replaced by `***`. Falls back
/// to hiding everything between `://` and `@` when the text does not parse as a URL.
pub fn redact_url(text: &str) -> String {
    redact_url_hiding(text, &|key| names_a_secret(key))
}

/// [`redact_url`], hiding the values of the query parameters `hidden` names too.
fn redact_url_hiding(text: &str, hidden: &dyn Fn(&str) -> bool) -> String {
    if let Ok(mut parsed) = url::Url::parse(text) {
        let mut changed = false;
        if parsed.password().is_some() && parsed.set_password(Some("***")).is_ok() {
            changed = true;
        }
        if parsed.query_pairs().any(|(key, _)| hidden(&key)) {
            let pairs: Vec<(String, String)> = parsed
                .query_pairs()
                .map(|(key, value)| {
                    let value = match hidden(&key) {
                        true => "***".to_string(),
                        false => value.into_owned(),
                    };
                    (key.into_owned(), value)
                })
                .collect();
            parsed.query_pairs_mut().clear().extend_pairs(pairs);
            changed = true;
        }
        return match changed {
            true => parsed.to_string(),
            false => text.to_string(),
        };
    }
    let text = redact_key_values(text);
    match (text.find("://"), text.rfind('@')) {
        (Some(start), Some(at)) if at > start + 3 => {
            format!("{}://***@{}", &text[..start], &text[at + 1..])
        }
        _ => text,
    }
}

/// `KEY=VALUE` settings whose key names a secret, as in a libpq connection string
/// (`host=db password=pw`, spaces around `=` allowed, values optionally in single quotes)
/// or a query without its URL, with the value replaced by `***`.
fn redact_key_values(text: &str) -> String {
    let is_separator = |c: char| c.is_whitespace() || matches!(c, '&' | ';' | '?');
    let mut shown = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(equals) = rest.find('=') {
        let (before, after) = rest.split_at(equals);
        let key = before.trim_end();
        let key = &key[key.rfind(is_separator).map_or(0, |at| at + 1)..];
        shown.push_str(before);
        shown.push('=');
        let value = &after[1..];
        if !names_a_secret(key) {
            rest = value;
            continue;
        }
        let spaces = value.len() - value.trim_start().len();
        shown.push_str(&value[..spaces]);
        let value = &value[spaces..];
        let end = match value.strip_prefix('\'') {
            Some(quoted) => 1 + quoted_end(quoted),
            None => value
                .find(|c: char| c.is_whitespace() || matches!(c, '&' | ';'))
                .unwrap_or(value.len()),
        };
        shown.push_str("***");
        rest = &value[end..];
    }
    shown.push_str(rest);
    shown
}

/// Where a single-quoted value that began just before `quoted` ends: after its closing
/// quote, an escaped (`\'`) or doubled (`''`) one aside, or at the end of the text.
fn quoted_end(quoted: &str) -> usize {
    let mut chars = quoted.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '\'' if chars.peek().is_some_and(|(_, next)| *next == '\'') => {
                chars.next();
            }
            '\'' => return at + 1,
            _ => {}
        }
    }
    quoted.len()
}

/// What a SQLite path is percent-encoded in: all but the characters a URL carries as they
/// are.
const SQLITE_PATH_ENCODED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'.')
    .remove(b'-')
    .remove(b'_')
    .remove(b'~');

/// The path of a SQLite URL as written (percent-encoded or not), without its query,
/// whatever the case of its scheme (`SQLITE://inbox.db`).
fn sqlite_path(text: &str) -> &str {
    let rest = match text.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case("sqlite:") => &text[7..],
        _ => text,
    };
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    rest.split('?').next().unwrap_or(rest)
}

/// What the table of the inbox's name is, as far as the commands care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboxLayout {
    /// No such table.
    Missing,
    /// The inbox before inboxctl: event_id, consumer and processed_at, no coordinates.
    Classic,
    /// The layout of the migrations: with topic, partition and offset.
    Current,
}

/// A table's column names, compared as the dialect's SQL compares unquoted names.
#[derive(Debug, Clone)]
pub struct TableColumns {
    names: Vec<String>,
    case_sensitive: bool,
}

impl TableColumns {
    pub fn contains(&self, column: &str) -> bool {
        self.names.iter().any(|name| {
            if self.case_sensitive {
                name == column
            } else {
                name.eq_ignore_ascii_case(column)
            }
        })
    }
}

/// A partition whose rows prune must keep from an offset on: those the group could still have
/// redelivered (offset >= committed). Without a committed offset, every row of it is kept.
#[derive(Debug, Clone, Serialize)]
pub struct KeepFrom {
    pub topic: String,
    /// As the inbox holds it: SQLite's column takes numbers no Kafka partition has.
    pub partition: i64,
    pub committed: Option<i64>,
}

/// The inbox heap as a block-range prune sees it when it starts.
#[derive(Debug, Clone, Copy)]
pub struct HeapExtent {
    /// Pages in the table now. Rows added later go to pages past the end or to space freed
    /// by earlier deletes; either way they are newer than any cutoff in the past.
    pub pages: u64,
    /// The planner's rows per page, when the table has been analysed.
    pub rows_per_page: Option<f64>,
    /// The planner's estimate of all rows in the table, when analysed.
    pub estimated_rows: Option<u64>,
}

/// Binding for the two query kinds the prune condition is used with.
trait BindPrune<'q>: Sized {
    fn bind_str(self, value: &'q str) -> Self;
    fn bind_string(self, value: String) -> Self;
}

impl<'q> BindPrune<'q> for sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>> {
    fn bind_str(self, value: &'q str) -> Self {
        self.bind(value)
    }
    fn bind_string(self, value: String) -> Self {
        self.bind(value)
    }
}

impl<'q, O> BindPrune<'q> for sqlx::query::QueryScalar<'q, Any, O, sqlx::any::AnyArguments<'q>> {
    fn bind_str(self, value: &'q str) -> Self {
        self.bind(value)
    }
    fn bind_string(self, value: String) -> Self {
        self.bind(value)
    }
}

/// One row of the inbox.
#[derive(Debug, Clone, Serialize)]
pub struct InboxRow {
    pub consumer: String,
    pub event_id: String,
    pub topic: Option<String>,
    pub partition: Option<i64>,
    pub offset: Option<i64>,
    pub processed_at: StoredTime,
}

/// One consumer's rows a prune would take: see [`Store::prunable_by_consumer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrunableRows {
    pub consumer: String,
    pub older: u64,
    pub undatable: u64,
}

/// Rows of one consumer, with their age spread. `newer_than[i]` counts rows processed after
/// `now - AGE_BUCKETS[i]`.
#[derive(Debug, Clone, Serialize)]
pub struct ConsumerStats {
    pub consumer: String,
    pub rows: i64,
    pub oldest: Option<StoredTime>,
    pub newest: Option<StoredTime>,
    #[serde(skip)]
    pub newer_than: [i64; AGE_BUCKETS.len()],
    /// Rows processed more than [`FUTURE_MARGIN`] after `now`: their clock is not UTC's.
    #[serde(skip)]
    pub in_future: i64,
}

/// How far ahead of inboxctl's clock a row's time may be before it counts as dated in the
/// future: room for clocks that disagree by seconds.
pub const FUTURE_MARGIN: chrono::Duration = chrono::Duration::minutes(1);

/// Rows of one consumer read from one topic partition (topic and partition are `None` for rows
/// written without coordinates).
#[derive(Debug, Clone, Serialize)]
pub struct PartitionStats {
    pub consumer: String,
    pub topic: Option<String>,
    pub partition: Option<i64>,
    pub rows: i64,
    pub min_offset: Option<i64>,
    pub max_offset: Option<i64>,
}

/// Upper edges of the age histogram, youngest first; rows older than the last are "older".
pub const AGE_BUCKETS: [(&str, i64); 4] = [
    ("1h", 3600),
    ("1d", 86_400),
    ("7d", 7 * 86_400),
    ("30d", 30 * 86_400),
];

/// Connections a store's pool may open unless a command asks for fewer (compare, for one,
/// runs queries side by side).
pub const POOL_CONNECTIONS: u32 = 4;

/// How long the first connection may take before a probe asks why (see
/// [`Store::connect_with`]); a connection on loopback or a LAN takes a few milliseconds.
const PROBE_AFTER: Duration = Duration::from_millis(300);

/// How long closing may wait for the server (a round trip or two); a server that does not
/// answer within it gets its connections dropped.
pub(crate) const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// How a batch of prune deletes its rows from this inbox. Each batch deletes exactly the
/// rows its `ORDER BY processed_at LIMIT n` selected, however the table is keyed: the next
/// batch starts at the newest of them, so a row deleted beside them by a shared key would
/// move that start past rows not yet deleted.
#[derive(Debug, Clone, Copy)]
pub struct BatchDelete {
    /// Wraps `<condition> ORDER BY processed_at LIMIT <n>` into the DELETE (on PostgreSQL,
    /// into the `deleted` query whose RETURNING the store counts).
    pub wrap: (&'static str, &'static str),
    /// Whether the condition follows the wrapped text again, bound a second time.
    pub condition_again: bool,
    /// Whether one batch may delete the old rows of several consumers, telling whose
    /// ([`Store::delete_older_of_consumers`]).
    pub packs: bool,
}

pub struct Store {
    pub backend: Backend,
    pub dialect: &'static Dialect,
    pub url: DatabaseUrl,
    pool: AnyPool,
    /// How prune's batches delete from this inbox, read off the catalog on the first batch.
    batch_delete: tokio::sync::OnceCell<BatchDelete>,
    /// How the inbox's key compares event ids, read off the catalog when first asked.
    id_key: tokio::sync::OnceCell<IdKey>,
    /// The character sets of the inbox's `consumer` and `event_id` where narrower than
    /// utf8mb4 (see [`Store::not_held`]), read off the catalog when first asked.
    narrow_character_sets: tokio::sync::OnceCell<NarrowCharacterSets>,
}

/// See [`Store::not_held`].
#[derive(Debug, Default)]
struct NarrowCharacterSets {
    consumer: Option<String>,
    event_id: Option<String>,
}

impl NarrowCharacterSets {
    /// The character set of `column` (`consumer` or `event_id`), where narrower.
    fn of(&self, column: &str) -> Option<&String> {
        match column {
            "consumer" => self.consumer.as_ref(),
            _ => self.event_id.as_ref(),
        }
    }
}

/// Whether connecting may create what is missing (only `migrate run` creates a SQLite file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    CreateIfMissing,
    MustExist,
}

/// Cancels the statement one session of the server is running, from a connection of its
/// own: the statement's transaction is rolled back, even while it waits on a lock, which
/// the server would otherwise apply once the lock goes although its client is gone.
#[derive(Clone)]
pub struct QueryCanceller {
    options: std::sync::Arc<AnyConnectOptions>,
    backend: Backend,
    /// The server's id of the session: PostgreSQL's backend pid, MySQL's connection id.
    session: i64,
}

impl QueryCanceller {
    /// What becomes of the statement when the cancel does not reach the server.
    pub fn without_the_cancel(&self) -> &'static str {
        match self.backend {
            Backend::Postgres => {
                "PostgreSQL 14 and later roll it back within a second of the client's going; \
                 older versions apply it once the lock it waits on goes"
            }
            _ => "if it is waiting on a lock, the server applies it once the lock goes",
        }
    }

    pub async fn cancel(&self) -> anyhow::Result<()> {
        let sql = match self.backend {
            // false when the session runs nothing (or is gone): nothing is left to cancel.
            Backend::Postgres => format!("SELECT pg_cancel_backend({})", self.session),
            Backend::Mysql => format!("KILL QUERY {}", self.session),
            Backend::Sqlite => return Ok(()),
        };
        let mut connection = AnyConnection::connect_with(&self.options)
            .await
            .context("could not connect")?;
        connection.execute(sql.as_str()).await?;
        connection.close().await.ok();
        Ok(())
    }
}

impl Store {
    pub async fn connect(
        url: &DatabaseUrl,
        timeout: Duration,
        create: CreateMode,
    ) -> anyhow::Result<Store> {
        Store::connect_with(url, timeout, create, POOL_CONNECTIONS, false).await
    }

    /// [`Store::connect`] with a pool of at most `max_connections`. One suits a command whose
    /// queries never overlap: sqlx returns a connection to the pool only after a ping, so
    /// with room for more the next query opens a new connection (a TLS handshake) instead
    /// of waiting that round trip. `serial_plans` runs the dialect's
    /// [`Dialect::serial_plans`] on every connection.
    pub async fn connect_with(
        url: &DatabaseUrl,
        timeout: Duration,
        create: CreateMode,
        max_connections: u32,
        serial_plans: bool,
    ) -> anyhow::Result<Store> {
        sqlx::any::install_default_drivers();
        let dialect = url.backend.dialect();
        let mut connect = url.connect.clone();
        if url.backend == Backend::Sqlite {
            let path = url.sqlite_path().unwrap_or_default();
            // SQLite makes the file but not its folder, and then says only "unable to open".
            let folder = std::path::Path::new(path).parent();
            if let Some(folder) = folder.filter(|f| !f.as_os_str().is_empty() && !f.is_dir()) {
                bail!(
                    "the folder '{}' of the SQLite database file '{path}' does not exist; create it first (check --database-url / DATABASE_URL)",
                    folder.display()
                );
            }
            if std::path::Path::new(path).is_dir() {
                bail!(
                    "the SQLite database file '{path}' is a folder; expected a file, e.g. \
                     sqlite://{}/inbox.db (check --database-url / DATABASE_URL)",
                    path.trim_end_matches('/')
                );
            }
            if create == CreateMode::MustExist && !std::path::Path::new(path).exists() {
                bail!(
                    "the SQLite database file '{path}' does not exist; `inboxctl migrate run` creates it (check --database-url / DATABASE_URL)"
                );
            }
            if create == CreateMode::CreateIfMissing && !connect.contains("mode=") {
                connect.push(if connect.contains('?') { '&' } else { '?' });
                connect.push_str("mode=rwc");
            }
        }
        let options = url.connect_options(&connect)?;
        let serial = if serial_plans {
            dialect.serial_plans
        } else {
            &[]
        };
        // Sent as one text, one round trip: the simple protocol takes several statements.
        let setup = std::sync::Arc::new(
            dialect
                .session_setup
                .iter()
                .chain(serial)
                .copied()
                .collect::<Vec<_>>()
                .join("; "),
        );
        let pool = AnyPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(timeout)
            .after_connect(move |connection, _| {
                let setup = std::sync::Arc::clone(&setup);
                Box::pin(async move {
                    connection.execute(setup.as_str()).await?;
                    Ok(())
                })
            })
            .connect_lazy_with(options.clone());
        // The pool retries a refused connection until the timeout and then reports only the
        // timeout. When the first connection is slow to come, a probe asks the reason: a
        // plain TCP connect (no TLS handshake), or over a socket a whole connection. Not
        // before: every connection the server accepts is a process it forks, CPU time on the
        // cores its application's own sessions run on.
        let unreachable =
            |error: anyhow::Error| error.context(format!("could not connect to {}", url.endpoint));
        let refused = async {
            tokio::time::sleep(PROBE_AFTER).await;
            let probe = match &url.tcp_address {
                Some((host, port)) => TcpStream::connect((host.as_str(), *port))
                    .await
                    .map(drop)
                    .map_err(anyhow::Error::from),
                None if url.backend != Backend::Sqlite => AnyConnection::connect_with(&options)
                    .await
                    .map(drop)
                    .map_err(anyhow::Error::from),
                None => Ok(()),
            };
            match probe {
                Err(error) => error,
                // Reachable: the pool's own attempt tells the rest, or times out.
                Ok(()) => std::future::pending().await,
            }
        };
        // The first connection, kept in the pool for the command's first query: a wrong
        // password or database fails here, named as a connection failure.
        let first = tokio::select! {
            first = pool.acquire() => first,
            error = refused => return Err(unreachable(error)),
        };
        match first {
            Ok(_) => {}
            Err(sqlx::Error::PoolTimedOut) => return Err(connect_timed_out(url, timeout)),
            // The driver reads some of the URL's parameters only now (`sslmode=…`).
            Err(sqlx::Error::Configuration(error)) => {
                let error = error.to_string();
                return Err(usage(format!(
                    "invalid database URL '{}': {}",
                    url.redacted,
                    error.trim_start_matches("error with configuration: ")
                )));
            }
            Err(error) => return Err(unreachable(error.into())),
        }
        Ok(Store {
            backend: url.backend,
            dialect,
            url: url.clone(),
            pool,
            batch_delete: tokio::sync::OnceCell::new(),
            id_key: tokio::sync::OnceCell::new(),
            narrow_character_sets: tokio::sync::OnceCell::new(),
        })
    }

    /// How the inbox's key compares event ids (see [`IdKey`]).
    pub async fn id_key(&self) -> anyhow::Result<IdKey> {
        if self.backend != Backend::Mysql {
            return Ok(IdKey::EXACT);
        }
        self.id_key
            .get_or_try_init(|| async {
                let collation: Option<Option<String>> = sqlx::query_scalar(
                    "SELECT CAST(collation_name AS CHAR) FROM information_schema.columns \
                     WHERE table_schema = DATABASE() AND table_name = 'processed_messages' \
                     AND LOWER(column_name) = 'event_id'",
                )
                .fetch_optional(&self.pool)
                .await
                .with_context(|| {
                    format!("could not read the collation of {INBOX_TABLE}.event_id")
                })?;
                Ok(IdKey::of_mysql_collation(collation.flatten().as_deref()))
            })
            .await
            .copied()
    }

    /// Those of `texts` that the inbox's `column` (`consumer` or `event_id`) cannot hold as
    /// they are. On MySQL a table made by hand in the inbox's layout, which migration 2 only
    /// records, may keep them in a narrower character set than utf8mb4 (latin1, ascii): its
    /// `INSERT IGNORE` stores a `?` for each character the set lacks (an id could then be
    /// recorded as another's, and taken for one already processed), and a lookup cannot
    /// compare such a text with the column's values. On PostgreSQL a database in another
    /// encoding than UTF-8 (LATIN1) refuses such a text in any statement. Empty elsewhere.
    pub async fn not_held(
        &self,
        column: &str,
        texts: &[&str],
    ) -> anyhow::Result<std::collections::HashSet<String>> {
        let mut not_held = std::collections::HashSet::new();
        if self.backend == Backend::Sqlite || texts.is_empty() {
            return Ok(not_held);
        }
        let sets = self
            .narrow_character_sets
            .get_or_try_init(|| self.read_narrow_character_sets())
            .await?;
        let Some(set) = sets.of(column) else {
            return Ok(not_held);
        };
        // Each text there and back again, compared as sent, a chunk a query. PostgreSQL's
        // encodings all hold ASCII, and no text a NUL (see can_store_text): the others go,
        // and come back changed (EUC_JP stores `¦` as `￤`) or are refused as untranslatable
        // (22P05), the whole query with them: a chunk refused is halved until the texts
        // refused are alone. MySQL's conversion makes a `?` of what it cannot hold.
        let sent: Vec<&str> = match self.backend {
            Backend::Postgres => texts
                .iter()
                .copied()
                .filter(|text| !text.is_ascii() && !text.contains('\0'))
                .collect(),
            _ => texts.to_vec(),
        };
        let mut pending: Vec<&[&str]> = sent.chunks(500).collect();
        while let Some(chunk) = pending.pop() {
            match self.round_trip(chunk, set).await {
                Ok(back) => not_held.extend(back),
                Err(error) if is_untranslatable(&error) => match chunk {
                    [text] => {
                        not_held.insert(text.to_string());
                    }
                    _ => {
                        let (first, second) = chunk.split_at(chunk.len() / 2);
                        pending.extend([first, second]);
                    }
                },
                Err(error) => {
                    return Err(anyhow::Error::from(error)
                        .context(format!("could not check what {INBOX_TABLE}.{column} holds")))
                }
            }
        }
        Ok(not_held)
    }

    /// The texts of `texts` that do not come back as they were sent from the server's
    /// `character_set` (MySQL) or database encoding (PostgreSQL).
    async fn round_trip(
        &self,
        texts: &[&str],
        character_set: &str,
    ) -> Result<std::collections::HashSet<String>, sqlx::Error> {
        let mut sql = self.sql();
        for index in 0..texts.len() {
            if index > 0 {
                sql.push(" UNION ALL ");
            }
            sql.push(&format!(
                "SELECT {}, ",
                (self.dialect.bigint)(&index.to_string())
            ));
            match self.backend {
                Backend::Postgres => sql.push("CAST(").param().push(" AS text)"),
                _ => sql
                    .push("CONVERT(CONVERT(")
                    .param()
                    .push(&format!(" USING {character_set}) USING utf8mb4)")),
            };
        }
        let text = sql.build();
        let mut query = sqlx::query_as::<_, (i64, String)>(&text);
        for text in texts {
            query = query.bind(*text);
        }
        let back = query.fetch_all(&self.pool).await?;
        Ok(back
            .into_iter()
            .filter_map(|(index, back)| {
                let sent = *texts.get(usize::try_from(index).ok()?)?;
                (sent != back).then(|| sent.to_string())
            })
            .collect())
    }

    /// See [`Store::not_held`]: MySQL's character sets of the two columns, PostgreSQL's
    /// encoding of the database, where narrower than Unicode.
    async fn read_narrow_character_sets(&self) -> anyhow::Result<NarrowCharacterSets> {
        if self.backend == Backend::Postgres {
            let encoding: String = sqlx::query_scalar("SELECT current_setting('server_encoding')")
                .fetch_one(&self.pool)
                .await
                .context("could not read the database's encoding")?;
            // SQL_ASCII stores the bytes it is given.
            let narrow = (!["UTF8", "SQL_ASCII"].contains(&encoding.as_str())).then_some(encoding);
            return Ok(NarrowCharacterSets {
                consumer: narrow.clone(),
                event_id: narrow,
            });
        }
        let sets: Vec<(String, String)> = sqlx::query_as(
            "SELECT CAST(LOWER(column_name) AS CHAR), CAST(character_set_name AS CHAR) \
             FROM information_schema.columns \
             WHERE table_schema = DATABASE() AND table_name = 'processed_messages' \
             AND LOWER(column_name) IN ('consumer', 'event_id') \
             AND character_set_name IS NOT NULL AND character_set_name <> 'utf8mb4'",
        )
        .fetch_all(&self.pool)
        .await
        .with_context(|| format!("could not read the character sets of {INBOX_TABLE}"))?;
        let of = |column: &str| {
            sets.iter()
                .find(|(name, _)| name == column)
                // A name the server gave is a bare word, put into the query of not_held.
                .filter(|(_, set)| set.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
                .map(|(_, set)| set.clone())
        };
        Ok(NarrowCharacterSets {
            consumer: of("consumer"),
            event_id: of("event_id"),
        })
    }

    /// The character set [`Store::not_held`] found `column` narrower in, for a message.
    pub fn narrow_character_set(&self, column: &str) -> Option<String> {
        self.narrow_character_sets.get()?.of(column).cloned()
    }

    pub async fn acquire(&self) -> anyhow::Result<PoolConnection<Any>> {
        self.pool
            .acquire()
            .await
            .with_context(|| format!("could not get a connection to {}", self.url.endpoint))
    }

    /// A connection in a read-only transaction that sees one moment of the database (see
    /// [`Dialect::begin_snapshot`]; on SQLite a plain connection, each statement its own
    /// moment). [`Store::end_snapshot`] ends it.
    pub async fn read_snapshot(&self) -> anyhow::Result<PoolConnection<Any>> {
        let mut connection = self.acquire().await?;
        for statement in self.dialect.begin_snapshot {
            connection
                .execute(*statement)
                .await
                .context("could not start a read-only transaction")?;
        }
        Ok(connection)
    }

    pub async fn end_snapshot(&self, mut connection: PoolConnection<Any>) -> anyhow::Result<()> {
        if !self.dialect.begin_snapshot.is_empty() {
            connection
                .execute("ROLLBACK")
                .await
                .context("could not end the read-only transaction")?;
        }
        Ok(())
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    pub fn sql(&self) -> SqlBuilder {
        SqlBuilder::new(self.dialect)
    }

    pub fn timestamp_param(&self, at: DateTime<Utc>) -> String {
        (self.dialect.timestamp_param_text)(at)
    }

    /// Refuses, before anything is written, a server whose inbox insert cannot say which
    /// ids were new: replay's insert on MySQL/MariaDB is `INSERT IGNORE … RETURNING`, which
    /// MariaDB has from 10.5 and MySQL not at all.
    pub async fn require_insert_returning(&self) -> anyhow::Result<()> {
        if self.backend != Backend::Mysql {
            return Ok(());
        }
        let version = mysql::server_version(&self.pool).await?;
        if !mysql::has_insert_returning(&version) {
            bail!(
                "replay needs MariaDB 10.5 or later on this backend (its inbox insert is INSERT IGNORE … RETURNING, which MySQL lacks); {} runs version {version}",
                self.url.endpoint
            );
        }
        Ok(())
    }

    pub async fn table_exists(&self, table: &str) -> anyhow::Result<bool> {
        self.table_exists_on(&mut *self.acquire().await?, table)
            .await
    }

    /// [`Store::table_exists`] on a connection of the caller's (one holding a lock, say).
    pub async fn table_exists_on(
        &self,
        connection: &mut AnyConnection,
        table: &str,
    ) -> anyhow::Result<bool> {
        let count: i64 = sqlx::query_scalar(self.dialect.table_exists)
            .bind(table)
            .fetch_one(connection)
            .await
            .with_context(|| format!("could not look up table {table}"))?;
        Ok(count > 0)
    }

    /// The names of `table`'s columns (none when there is no such table).
    pub async fn columns(&self, table: &str) -> anyhow::Result<TableColumns> {
        let names = sqlx::query_scalar(self.dialect.columns)
            .bind(table)
            .fetch_all(&self.pool)
            .await
            .with_context(|| format!("could not list the columns of table {table}"))?;
        Ok(TableColumns {
            names,
            case_sensitive: self.dialect.column_names_case_sensitive,
        })
    }

    /// Which layout the table of the inbox's name has; an error when it is some other table,
    /// which neither migrations nor the commands may take for an inbox. One catalog query
    /// for the table, and one for its columns when it exists.
    pub async fn inbox_layout(&self) -> anyhow::Result<InboxLayout> {
        if !self.table_exists(INBOX_TABLE).await? {
            return Ok(InboxLayout::Missing);
        }
        let columns = self.columns(INBOX_TABLE).await?;
        // Dropped between the two queries (a `migrate revert --to 0` at the same moment).
        if columns.names.is_empty() && !self.table_exists(INBOX_TABLE).await? {
            return Ok(InboxLayout::Missing);
        }
        let missing: Vec<&str> = ["consumer", "event_id", "processed_at"]
            .into_iter()
            .filter(|column| !columns.contains(column))
            .collect();
        if !missing.is_empty() {
            bail!(
                "table {INBOX_TABLE} in {} is not an inbox table: it lacks the column(s) {}; \
                 inboxctl adopts only the classic layout (event_id, consumer, processed_at), so \
                 rename that table or use another database",
                self.url.endpoint,
                missing.join(", ")
            );
        }
        // All three coordinates: a classic table with a `topic` of its own is still classic.
        Ok(
            if ["topic", "partition", "offset"]
                .iter()
                .all(|column| columns.contains(column))
            {
                InboxLayout::Current
            } else {
                InboxLayout::Classic
            },
        )
    }

    /// What the inbox is when it is not a table of this database's own: "a view", "a
    /// materialized view" or "a foreign table". `migrate run` alters the table itself.
    pub async fn inbox_not_a_table(&self) -> anyhow::Result<Option<&'static str>> {
        let sql = match self.backend {
            Backend::Postgres => {
                "SELECT CAST(relkind AS text) FROM pg_catalog.pg_class \
                 WHERE oid = to_regclass('processed_messages')"
            }
            Backend::Mysql => {
                "SELECT CASE table_type WHEN 'VIEW' THEN 'v' ELSE 'r' END \
                 FROM information_schema.tables \
                 WHERE table_schema = DATABASE() AND table_name = 'processed_messages'"
            }
            Backend::Sqlite => {
                "SELECT CASE type WHEN 'view' THEN 'v' ELSE 'r' END FROM sqlite_master \
                 WHERE name = 'processed_messages' COLLATE NOCASE AND type IN ('table', 'view')"
            }
        };
        let kind: Option<String> = sqlx::query_scalar(sql)
            .fetch_optional(&self.pool)
            .await
            .with_context(|| format!("could not read what kind of relation {INBOX_TABLE} is"))?;
        Ok(match kind.as_deref() {
            Some("v") => Some("a view"),
            Some("m") => Some("a materialized view"),
            Some("f") => Some("a foreign table"),
            _ => None,
        })
    }

    /// The inbox's layout, classic or current; fails with a message that says what to do
    /// when there is no inbox table.
    pub async fn require_inbox_table(&self) -> anyhow::Result<InboxLayout> {
        match self.inbox_layout().await? {
            InboxLayout::Missing => bail!(
                "table {INBOX_TABLE} does not exist in {}; create it with `inboxctl migrate run`",
                self.url.endpoint
            ),
            layout => Ok(layout),
        }
    }

    /// Fails with a message that says what to do when the inbox table is missing or has not
    /// been migrated to the current layout.
    pub async fn require_inbox(&self) -> anyhow::Result<()> {
        if self.require_inbox_table().await? == InboxLayout::Classic {
            bail!(
                "table {INBOX_TABLE} in {} has the classic layout (no topic/partition/offset); adopt it with `inboxctl migrate run`",
                self.url.endpoint
            );
        }
        // Read as UTC, as inboxctl's sessions are, such times would be hours off wherever the
        // application wrote them in another zone, and prune would delete by them.
        let zoneless = self
            .dialect
            .migrations
            .iter()
            .filter_map(|m| m.zoneless_times.as_ref());
        for check in zoneless {
            let present: i64 = sqlx::query_scalar(check.present)
                .fetch_one(&self.pool)
                .await
                .with_context(|| {
                    format!("could not read the type of {INBOX_TABLE}.processed_at")
                })?;
            if present > 0 {
                bail!(
                    "{INBOX_TABLE}.processed_at in {} is a timestamp without a time zone, so \
                     inboxctl cannot tell when its rows were processed; `inboxctl migrate run` \
                     makes it timestamptz, reading the values in the zone the database's \
                     sessions get (it says which)",
                    self.url.endpoint
                );
            }
        }
        Ok(())
    }

    /// Fails when event ids cannot be compared with the text inboxctl binds: a PostgreSQL
    /// `event_id` of another type than a string (uuid, say), where every lookup, load or
    /// insert of an id would fail on the server (`operator does not exist: uuid = text`).
    pub async fn require_text_event_ids(&self) -> anyhow::Result<()> {
        if self.backend != Backend::Postgres {
            return Ok(());
        }
        let found: Option<(String, String)> = sqlx::query_as(
            "SELECT format_type(a.atttypid, a.atttypmod), CAST(t.typcategory AS text) \
             FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
             WHERE a.attrelid = to_regclass('processed_messages') AND a.attname = 'event_id' \
             AND NOT a.attisdropped",
        )
        .fetch_optional(&self.pool)
        .await
        .with_context(|| format!("could not read the type of {INBOX_TABLE}.event_id"))?;
        match found {
            // 'S': text, varchar, char and the domains and extensions over them (citext).
            Some((type_name, category)) if category != "S" => bail!(
                "{INBOX_TABLE}.event_id in {} is of type {type_name}; inboxctl looks up, \
                 loads and inserts event ids as text, so `inspect --event-id`, compare and \
                 replay need a text column (`ALTER TABLE {INBOX_TABLE} ALTER COLUMN event_id \
                 TYPE text` keeps every value); prune and inspect work as it is",
                self.url.endpoint
            ),
            _ => Ok(()),
        }
    }

    /// The consumers to work on: the one asked for, or all of them.
    pub async fn consumers(&self, only: Option<&str>) -> anyhow::Result<Vec<String>> {
        if let Some(consumer) = only {
            return Ok(vec![consumer.to_string()]);
        }
        sqlx::query_scalar(self.dialect.consumers)
            .fetch_all(&self.pool)
            .await
            .context("could not list the inbox's consumers")
    }

    pub async fn estimated_rows(&self) -> anyhow::Result<Option<i64>> {
        let Some(sql) = self.dialect.estimated_rows else {
            return Ok(None);
        };
        let estimate: Option<i64> = sqlx::query_scalar(sql)
            .fetch_optional(&self.pool)
            .await
            .context("could not read the planner's row estimate")?;
        // PostgreSQL says -1 for a table never analysed: no estimate, not an empty table.
        Ok(estimate.filter(|rows| *rows >= 0))
    }

    /// PostgreSQL's estimate of the rows processed before `cutoff` (of one consumer, or of
    /// all), read from `EXPLAIN` without reading the rows; `None` on the other backends.
    pub async fn estimated_older_rows(
        &self,
        consumer: Option<&str>,
        cutoff: DateTime<Utc>,
    ) -> anyhow::Result<Option<u64>> {
        if self.backend != Backend::Postgres {
            return Ok(None);
        }
        let mut sql = self.sql();
        sql.push(&format!(
            "EXPLAIN SELECT 1 FROM {INBOX_TABLE} WHERE processed_at < "
        ))
        .timestamp_param();
        if consumer.is_some() {
            sql.push(" AND consumer = ").param();
        }
        let text = sql.build();
        let mut query = sqlx::query_scalar::<_, String>(&text).bind(self.timestamp_param(cutoff));
        if let Some(consumer) = consumer {
            query = query.bind(consumer);
        }
        let plan = query
            .fetch_all(&self.pool)
            .await
            .context("could not read the planner's estimate of the rows to prune")?;
        Ok(Some(plan_estimate(&plan)?.max(0) as u64))
    }

    /// The planner's estimate of a consumer's rows, read from `EXPLAIN` without reading the
    /// rows; `None` on a backend without one (SQLite).
    pub async fn estimated_consumer_rows(&self, consumer: &str) -> anyhow::Result<Option<i64>> {
        let context = || format!("could not read the planner's estimate for consumer '{consumer}'");
        match self.backend {
            Backend::Sqlite => Ok(None),
            Backend::Postgres => {
                let plan: Vec<String> = sqlx::query_scalar(&format!(
                    "EXPLAIN SELECT 1 FROM {INBOX_TABLE} WHERE consumer = $1"
                ))
                .bind(consumer)
                .fetch_all(&self.pool)
                .await
                .with_context(context)?;
                plan_estimate(&plan).map(Some).with_context(context)
            }
            Backend::Mysql => {
                let row = sqlx::query(&format!(
                    "EXPLAIN SELECT 1 FROM {INBOX_TABLE} WHERE consumer = ?"
                ))
                .bind(consumer)
                .fetch_one(&self.pool)
                .await
                .with_context(context)?;
                let rows = row
                    .try_get::<i64, _>("rows")
                    .or_else(|_| {
                        row.try_get::<Option<String>, _>("rows")
                            .map(|text| text.and_then(|t| t.trim().parse().ok()).unwrap_or(0))
                    })
                    .with_context(context)?;
                Ok(Some(rows))
            }
        }
    }

    /// A consumer's oldest and newest `processed_at`: the two ends of its stretch of the
    /// (consumer, processed_at) index, read without reading the rows between.
    pub async fn consumer_time_range(
        &self,
        consumer: &str,
    ) -> anyhow::Result<(Option<StoredTime>, Option<StoredTime>)> {
        // Each end as its own probe in processed_at order, not MIN and MAX: for a consumer
        // its statistics do not know, PostgreSQL would read all of its rows through whichever
        // index starts with consumer (see [`Store::has_older`]).
        // The text of the end is made outside the probe: PostgreSQL's for a value no time
        // stands for costs enough to tip its choice of index towards the coordinates one.
        let one_end = format!(
            "(SELECT {} FROM (SELECT processed_at AS end_at FROM {INBOX_TABLE} WHERE consumer = ",
            (self.dialect.timestamp_text)("end_at")
        );
        let mut sql = self.sql();
        sql.push("SELECT ")
            .push(&one_end)
            .param()
            .push(" ORDER BY processed_at LIMIT 1) AS oldest), ")
            .push(&one_end)
            .param()
            .push(" ORDER BY processed_at DESC LIMIT 1) AS newest)");
        let row = sqlx::query(&sql.build())
            .bind(consumer)
            .bind(consumer)
            .fetch_one(&self.pool)
            .await
            .with_context(|| format!("could not read the time range of consumer '{consumer}'"))?;
        Ok((
            optional_stored_time(&row, 0)?,
            optional_stored_time(&row, 1)?,
        ))
    }

    pub async fn consumer_stats(
        &self,
        connection: &mut AnyConnection,
        only: Option<&str>,
        now: DateTime<Utc>,
    ) -> anyhow::Result<Vec<ConsumerStats>> {
        let d = self.dialect;
        let mut sql = self.sql();
        sql.push(&format!(
            "SELECT consumer, COUNT(*), {}, {}",
            (d.timestamp_text)("MIN(processed_at)"),
            (d.timestamp_text)("MAX(processed_at)")
        ));
        // Strictly after: a row exactly 1h old is no longer `< 1h`.
        for _ in AGE_BUCKETS {
            sql.push(", COUNT(CASE WHEN processed_at > ")
                .timestamp_param()
                .push(" THEN 1 END)");
        }
        sql.push(", COUNT(CASE WHEN processed_at > ")
            .timestamp_param()
            .push(" THEN 1 END)");
        sql.push(&format!(" FROM {INBOX_TABLE}"));
        if only.is_some() {
            sql.push(" WHERE consumer = ").param();
        }
        sql.push(" GROUP BY consumer ORDER BY consumer");
        let text = sql.build();
        let mut query = sqlx::query(&text);
        for (_, seconds) in AGE_BUCKETS {
            query = query.bind(self.timestamp_param(now - chrono::Duration::seconds(seconds)));
        }
        query = query.bind(self.timestamp_param(now + FUTURE_MARGIN));
        if let Some(consumer) = only {
            query = query.bind(consumer);
        }
        let rows = query
            .fetch_all(connection)
            .await
            .context("could not read rows per consumer")?;
        rows.iter()
            .map(|row| {
                let mut newer_than = [0; AGE_BUCKETS.len()];
                for (index, slot) in newer_than.iter_mut().enumerate() {
                    *slot = row.try_get(4 + index)?;
                }
                Ok(ConsumerStats {
                    consumer: row.try_get(0)?,
                    rows: row.try_get(1)?,
                    oldest: optional_stored_time(row, 2)?,
                    newest: optional_stored_time(row, 3)?,
                    newer_than,
                    in_future: row.try_get(4 + AGE_BUCKETS.len())?,
                })
            })
            .collect()
    }

    /// The collation of the inbox's `topic` column where it takes two of the consumer's
    /// topics for one (MySQL's `_ci` collations: `Orders` and `orders`), which Kafka tells
    /// apart; `None` where it tells every topic of the consumer apart.
    pub async fn topics_merged_by_collation(
        &self,
        consumer: &str,
    ) -> anyhow::Result<Option<String>> {
        if self.backend != Backend::Mysql {
            return Ok(None);
        }
        let collation: Option<String> = sqlx::query_scalar(
            "SELECT CAST(collation_name AS CHAR) FROM information_schema.columns \
             WHERE table_schema = DATABASE() AND table_name = 'processed_messages' \
             AND LOWER(column_name) = 'topic' AND collation_name IS NOT NULL \
             AND collation_name NOT LIKE '%\\_bin' \
             AND NOT (collation_name LIKE '%\\_cs' AND collation_name NOT LIKE '%\\_ai\\_%')",
        )
        .fetch_optional(&self.pool)
        .await
        .context("could not read the collation of processed_messages.topic")?;
        let Some(collation) = collation else {
            return Ok(None);
        };
        let merged: i64 = sqlx::query_scalar(&format!(
            "SELECT CAST(COUNT(DISTINCT CAST(topic AS BINARY)) - COUNT(DISTINCT topic) AS SIGNED) \
             FROM {INBOX_TABLE} WHERE consumer = ?"
        ))
        .bind(consumer)
        .fetch_one(&self.pool)
        .await
        .with_context(|| format!("could not read the topics of consumer '{consumer}'"))?;
        Ok((merged > 0).then_some(collation))
    }

    pub async fn partition_stats(
        &self,
        connection: &mut AnyConnection,
        only: Option<&str>,
    ) -> anyhow::Result<Vec<PartitionStats>> {
        let d = self.dialect;
        let (partition, offset) = (d.quote("partition"), d.quote("offset"));
        let mut sql = self.sql();
        sql.push(&format!(
            "SELECT consumer, topic, {}, COUNT(*), {}, {} FROM {INBOX_TABLE}",
            (d.bigint)(&format!("MIN({partition})")),
            (d.bigint)(&format!("MIN({offset})")),
            (d.bigint)(&format!("MAX({offset})")),
        ));
        if only.is_some() {
            sql.push(" WHERE consumer = ").param();
        }
        // Rows without coordinates last on every backend (they disagree on where NULL sorts).
        sql.push(&format!(
            " GROUP BY consumer, topic, {partition} \
             ORDER BY consumer, CASE WHEN topic IS NULL THEN 1 ELSE 0 END, topic, {partition}"
        ));
        let text = sql.build();
        let mut query = sqlx::query(&text);
        if let Some(consumer) = only {
            query = query.bind(consumer);
        }
        let rows = query
            .fetch_all(connection)
            .await
            .context("could not read offset ranges per partition")?;
        rows.iter()
            .map(|row| {
                Ok(PartitionStats {
                    consumer: row.try_get(0)?,
                    topic: row.try_get(1)?,
                    partition: row.try_get(2)?,
                    rows: row.try_get(3)?,
                    min_offset: row.try_get(4)?,
                    max_offset: row.try_get(5)?,
                })
            })
            .collect()
    }

    /// The rows for one event id, one per consumer that processed it. Looks up by primary
    /// key, for many consumers at a time (an inbox may have tens of thousands), so it stays
    /// fast on large tables (the consumers unseen by the planner: see
    /// [`SqlBuilder::unseen_param`]).
    pub async fn find_event(
        &self,
        event_id: &str,
        consumers: &[String],
    ) -> anyhow::Result<Vec<InboxRow>> {
        // Well under every backend's limit of parameters in one statement.
        const CONSUMERS_PER_LOOKUP: usize = 500;
        let d = self.dialect;
        let mut found = Vec::new();
        // An id the column cannot hold is in no row, and the server refuses to compare it.
        if !self.not_held("event_id", &[event_id]).await?.is_empty() {
            return Ok(found);
        }
        for chunk in consumers.chunks(CONSUMERS_PER_LOOKUP) {
            let mut sql = self.sql();
            sql.push(&format!(
                "SELECT consumer, {}, topic, {}, {}, {} FROM {INBOX_TABLE} WHERE consumer ",
                // As text: SQLite stores an id in a column declared INTEGER as a number.
                (d.text)("event_id"),
                (d.bigint)(&d.quote("partition")),
                (d.bigint)(&d.quote("offset")),
                (d.timestamp_text)("processed_at"),
            ));
            // PostgreSQL reads `IN ((SELECT $1))` of one as `= $1`, which it sees into.
            match chunk.len() {
                1 => sql.push("= ").unseen_param(),
                count => sql.push("IN (").unseen_params(count).push(")"),
            };
            // In the order of `consumers`, which is the database's own.
            sql.push(" AND event_id = ")
                .param()
                .push(" ORDER BY consumer");
            let text = sql.build();
            let mut query = sqlx::query(&text);
            for consumer in chunk {
                query = query.bind(consumer.as_str());
            }
            let rows = query
                .bind(event_id)
                .fetch_all(&self.pool)
                .await
                .with_context(|| format!("could not look up event {event_id}"))?;
            for row in rows {
                found.push(InboxRow {
                    consumer: row.try_get(0)?,
                    event_id: row.try_get(1)?,
                    topic: row.try_get(2)?,
                    partition: row.try_get(3)?,
                    offset: row.try_get(4)?,
                    processed_at: StoredTime::read(&row.try_get::<String, _>(5)?),
                });
            }
        }
        Ok(found)
    }

    /// Rows of one consumer processed strictly before `cutoff`, less those `keep` protects.
    pub async fn count_older(
        &self,
        consumer: &str,
        cutoff: DateTime<Utc>,
        keep: &[KeepFrom],
    ) -> anyhow::Result<u64> {
        // Counted in processed_at order: see [`Store::has_older`]. A derived table keeps its
        // ORDER BY on PostgreSQL; MySQL and SQLite drop it, and choose by the condition.
        let mut sql = self.sql();
        sql.push(&format!(
            "SELECT COUNT(*) FROM (SELECT 1 AS one FROM {INBOX_TABLE} WHERE "
        ));
        let from = self.dialect.earliest_prunable;
        self.push_prune_condition(&mut sql, from, keep);
        sql.push(" ORDER BY processed_at) AS older");
        let text = sql.build();
        let query = sqlx::query_scalar::<_, i64>(&text);
        let count = self
            .bind_prune_condition(query, consumer, from, cutoff, keep)
            .fetch_one(&self.pool)
            .await
            .with_context(|| format!("could not count rows of consumer '{consumer}' to prune"))?;
        Ok(count as u64)
    }

    /// Every consumer's rows processed strictly before `cutoff` (or only those of `only`),
    /// and, on SQLite, its rows that have no time in processed_at (a number, seconds since
    /// 1970 say, or text before 0000-01-01: the empty text, a zero date; they sort before
    /// every time there, below the dialect's `earliest_prunable`, so no cutoff takes them).
    /// One statement, so that an inbox of many consumers costs no round trip per consumer;
    /// each count is still its own range of the `(consumer, processed_at)` index. With
    /// `up_to`, `older` is counted up to that many and no further: a consumer with more is
    /// given as `up_to`, having read that many index entries, not all of its old rows.
    pub async fn prunable_by_consumer(
        &self,
        only: Option<&str>,
        cutoff: DateTime<Utc>,
        up_to: Option<u64>,
    ) -> anyhow::Result<Vec<PrunableRows>> {
        let from = self.dialect.earliest_prunable;
        let mut sql = self.sql();
        // One consumer's name is not read back: MariaDB gives a parameter over 512
        // characters as a BLOB, which does not read as text.
        sql.push(match only {
            Some(_) => "SELECT '', ",
            None => "SELECT listed.consumer, ",
        });
        let older = |sql: &mut SqlBuilder| {
            sql.push(&format!(
                "FROM {INBOX_TABLE} WHERE consumer = listed.consumer"
            ))
            .processed_between(from.is_some());
        };
        // Read in processed_at order on PostgreSQL, as in [`Store::count_older`]. MariaDB
        // allows no outer column in a derived table: there, and on SQLite, whether the
        // `up_to`-th row exists is asked first, and only a consumer without it is counted.
        match (self.backend, up_to) {
            (Backend::Postgres, _) => {
                sql.push("(SELECT COUNT(*) FROM (SELECT 1 AS one ");
                older(&mut sql);
                sql.push(" ORDER BY processed_at");
                if let Some(up_to) = up_to {
                    sql.push(&format!(" LIMIT {up_to}"));
                }
                sql.push(") AS older)");
            }
            (_, None) => {
                sql.push("(SELECT COUNT(*) ");
                older(&mut sql);
                sql.push(")");
            }
            (_, Some(up_to)) => {
                sql.push("CASE WHEN (SELECT 1 ");
                older(&mut sql);
                sql.push(&format!(
                    " ORDER BY processed_at LIMIT 1 OFFSET {}) IS NULL THEN (SELECT COUNT(*) ",
                    up_to.saturating_sub(1)
                ));
                older(&mut sql);
                sql.push(&format!(") ELSE {up_to} END"));
            }
        }
        sql.push(", ");
        if from.is_some() {
            sql.push(&format!(
                "(SELECT COUNT(*) FROM {INBOX_TABLE} WHERE consumer = listed.consumer AND processed_at < "
            ))
            .param()
            .push(")");
        } else {
            sql.push("0");
        }
        sql.push(" FROM (");
        match only {
            Some(_) => sql.push("SELECT ").param().push(" AS consumer"),
            None => sql.push(self.dialect.consumers),
        };
        // In order, as the consumers query lists them: a derived table's own ORDER BY may be
        // dropped (MariaDB does).
        sql.push(") AS listed ORDER BY listed.consumer");
        let text = sql.build();
        let mut query = sqlx::query_as::<_, (String, i64, i64)>(&text);
        let olders = match (self.backend, up_to) {
            (Backend::Postgres, _) | (_, None) => 1,
            _ => 2,
        };
        for _ in 0..olders {
            if let Some(from) = from {
                query = query.bind(from);
            }
            query = query.bind(self.timestamp_param(cutoff));
        }
        if let Some(from) = from {
            query = query.bind(from);
        }
        if let Some(consumer) = only {
            query = query.bind(consumer);
        }
        let rows = query.fetch_all(&self.pool).await.context(match up_to {
            None => "could not count the rows to prune",
            Some(_) => "could not look up the rows to prune",
        })?;
        Ok(rows
            .into_iter()
            .map(|(consumer, older, undatable)| PrunableRows {
                consumer: only.map_or(consumer, str::to_string),
                older: older as u64,
                undatable: undatable as u64,
            })
            .collect())
    }

    /// Whether one consumer has any row processed strictly before `cutoff`: one index probe,
    /// where `count_older` reads every such entry.
    ///
    /// In processed_at order, so that only the `(consumer, processed_at)` index answers it
    /// without a sort. PostgreSQL estimates a consumer its statistics do not know yet (one
    /// new since the last ANALYZE) at one row, and then takes any index that starts with
    /// consumer as just as good: through another one, it reads all of that consumer's rows.
    pub async fn has_older(&self, consumer: &str, cutoff: DateTime<Utc>) -> anyhow::Result<bool> {
        let mut connection = self.acquire().await?;
        let from = self.dialect.earliest_prunable;
        let oldest = self
            .oldest_prunable(&mut connection, consumer, from, cutoff, &[])
            .await?;
        Ok(oldest.is_some())
    }

    /// The event id of one consumer's oldest prunable row processed at or after `from` (the
    /// store's own text, as a batch returns it), strictly before `cutoff`, not protected by
    /// `keep`: one index probe, in processed_at order (see [`Store::has_older`]).
    pub async fn oldest_prunable(
        &self,
        connection: &mut AnyConnection,
        consumer: &str,
        from: Option<&str>,
        cutoff: DateTime<Utc>,
        keep: &[KeepFrom],
    ) -> anyhow::Result<Option<String>> {
        let mut sql = self.sql();
        sql.push(&format!(
            "SELECT {} FROM {INBOX_TABLE} WHERE ",
            (self.dialect.text)("event_id")
        ));
        self.push_prune_condition(&mut sql, from, keep);
        sql.push(" ORDER BY processed_at LIMIT 1");
        let text = sql.build();
        let query = sqlx::query_scalar::<_, String>(&text);
        self.bind_prune_condition(query, consumer, from, cutoff, keep)
            .fetch_optional(connection)
            .await
            .with_context(|| format!("could not look for rows of consumer '{consumer}' to prune"))
    }

    /// The `processed_at` of the consumer's `limit`-th oldest prunable row at or after `from`,
    /// as the store's own text: the lower bound of the next batch. `None` when fewer remain.
    ///
    /// Starting each batch at this bound keeps every batch an index range scan from where the
    /// last one stopped, instead of stepping over the entries earlier batches left dead.
    async fn batch_upper_bound(
        &self,
        connection: &mut AnyConnection,
        consumer: &str,
        from: Option<&str>,
        cutoff: DateTime<Utc>,
        keep: &[KeepFrom],
        limit: u64,
    ) -> anyhow::Result<Option<String>> {
        let mut sql = self.sql();
        sql.push(&format!(
            "SELECT {} FROM {INBOX_TABLE} WHERE ",
            (self.dialect.timestamp_text)("processed_at")
        ));
        self.push_prune_condition(&mut sql, from, keep);
        sql.push(" ORDER BY processed_at LIMIT 1 OFFSET ").param();
        let text = sql.build();
        let query = sqlx::query_scalar::<_, String>(&text);
        self.bind_prune_condition(query, consumer, from, cutoff, keep)
            .bind(limit as i64 - 1)
            .fetch_optional(connection)
            .await
            .with_context(|| format!("could not find the next batch of consumer '{consumer}'"))
    }

    /// Deletes up to `limit` of the consumer's oldest prunable rows (processed at or after
    /// `from`, strictly before `cutoff`, not protected by `keep`), in one short transaction of
    /// its own. Returns how many went and where the next batch starts (the newest
    /// `processed_at` deleted, as the store's own text).
    pub async fn delete_older_batch(
        &self,
        connection: &mut AnyConnection,
        consumer: &str,
        from: Option<&str>,
        cutoff: DateTime<Utc>,
        keep: &[KeepFrom],
        limit: u64,
    ) -> anyhow::Result<(u64, Option<String>)> {
        let form = self.batch_delete_form(&mut *connection).await?;
        let (prefix, suffix) = form.wrap;
        let mut sql = self.sql();
        sql.push(prefix);
        self.push_prune_condition(&mut sql, from, keep);
        sql.push(" ORDER BY processed_at LIMIT ")
            .param()
            .push(suffix);
        if form.condition_again {
            self.push_prune_condition(&mut sql, from, keep);
        }
        if self.dialect.delete_returning {
            sql.push(&format!(
                " RETURNING processed_at) SELECT COUNT(*), {} FROM deleted",
                (self.dialect.timestamp_text)("MAX(processed_at)")
            ));
        }
        let text = sql.build();
        let mut query = self
            .bind_prune_condition(sqlx::query(&text), consumer, from, cutoff, keep)
            .bind(limit as i64);
        if form.condition_again {
            query = self.bind_prune_condition(query, consumer, from, cutoff, keep);
        }
        let context = || format!("could not delete a batch of consumer '{consumer}'");
        if self.dialect.delete_returning {
            let row = query
                .fetch_one(&mut *connection)
                .await
                .with_context(context)?;
            let deleted: i64 = row.try_get(0)?;
            return Ok((deleted as u64, row.try_get(1)?));
        }
        // Where the next batch starts, found before this one's rows are gone.
        let next_from = self
            .batch_upper_bound(&mut *connection, consumer, from, cutoff, keep, limit)
            .await?;
        let result = query.execute(connection).await.with_context(context)?;
        Ok((result.rows_affected(), next_from))
    }

    /// Whether prune's batches may each delete the old rows of several consumers (see
    /// [`Store::delete_older_of_consumers`]): not in an inbox that is not a plain table on
    /// PostgreSQL, nor on MySQL, whose DELETE cannot say whose rows it deleted.
    pub async fn deletes_in_packs(&self, connection: &mut AnyConnection) -> anyhow::Result<bool> {
        Ok(self.batch_delete_form(connection).await?.packs)
    }

    /// How prune's batches delete from this inbox, read off the catalog (or the server's
    /// version) once.
    async fn batch_delete_form(
        &self,
        connection: &mut AnyConnection,
    ) -> anyhow::Result<BatchDelete> {
        let form = self
            .batch_delete
            .get_or_try_init(|| async {
                match self.backend {
                    Backend::Sqlite => sqlite::batch_delete(&mut *connection).await,
                    Backend::Postgres => postgres::batch_delete(&mut *connection).await,
                    Backend::Mysql => mysql::batch_delete(&mut *connection).await,
                }
            })
            .await?;
        Ok(*form)
    }

    /// Deletes every row of `consumers` processed at or after `from` (when there is a
    /// bound) and strictly before `cutoff`, up to `limit` rows, in one short transaction of
    /// its own. Returns how many went in all, and of each consumer, in the order given. For many consumers with few old rows each, where a batch per
    /// consumer would cost a transaction per consumer. Each consumer's rows are found
    /// through the `(consumer, processed_at)` index.
    pub async fn delete_older_of_consumers(
        &self,
        connection: &mut AnyConnection,
        consumers: &[&str],
        from: Option<&str>,
        cutoff: DateTime<Utc>,
        limit: u64,
    ) -> anyhow::Result<(u64, Vec<u64>)> {
        let mut sql = self.sql();
        let condition = |sql: &mut SqlBuilder| {
            sql.push("consumer IN (")
                .params(consumers.len())
                .push(")")
                .processed_between(from.is_some());
        };
        match self.backend {
            // Each consumer's rows read in processed_at order, which only that index gives
            // without a sort: with `consumer IN (…)`, PostgreSQL may take any index that starts
            // with consumer, and read a consumer's new rows too (see [`Store::has_older`]).
            Backend::Postgres => {
                sql.push(&format!(
                    "WITH deleted AS (DELETE FROM {INBOX_TABLE} WHERE ctid = ANY(ARRAY(\
                     SELECT old.ctid FROM (VALUES "
                ));
                sql.value_rows(consumers.len(), 1)
                    .push(&format!(
                        ") AS listed (consumer) CROSS JOIN LATERAL (SELECT ctid FROM {INBOX_TABLE} \
                         WHERE consumer = listed.consumer"
                    ))
                    .processed_between(from.is_some())
                    .push(" ORDER BY processed_at LIMIT ")
                    .param()
                    .push(") AS old LIMIT ")
                    .param()
                    .push(
                        ")) RETURNING consumer) \
                     SELECT consumer, COUNT(*) FROM deleted GROUP BY consumer",
                    );
            }
            // Through the index by rowid or key, as one consumer's batch is.
            Backend::Sqlite => {
                let form = self.batch_delete_form(&mut *connection).await?;
                sql.push(form.wrap.0);
                condition(&mut sql);
                sql.push(" LIMIT ")
                    .param()
                    .push(form.wrap.1)
                    .push(" RETURNING consumer");
            }
            // MariaDB's plan reads each consumer's range of that index where old rows are
            // few among the consumers' rows (300 consumers of 3 old and 300 new rows each,
            // in EXPLAIN), and the primary key where they are a large share.
            Backend::Mysql => {
                sql.push(&format!("DELETE FROM {INBOX_TABLE} WHERE "));
                condition(&mut sql);
                sql.push(" LIMIT ").param().push(" RETURNING consumer");
            }
        }
        let text = sql.build();
        let mut query = sqlx::query(&text);
        for consumer in consumers {
            query = query.bind(*consumer);
        }
        if let Some(from) = from {
            query = query.bind(from);
        }
        query = query.bind(self.timestamp_param(cutoff)).bind(limit as i64);
        if self.backend == Backend::Postgres {
            query = query.bind(limit as i64);
        }
        let context = || {
            format!(
                "could not delete a batch of consumers {}",
                crate::output::first_of(consumers.iter().map(|c| format!("'{c}'")).collect(), 3)
            )
        };
        let rows = query.fetch_all(connection).await.with_context(context)?;
        let listed: HashMap<&str, usize> = consumers
            .iter()
            .enumerate()
            .map(|(index, name)| (*name, index))
            .collect();
        // MySQL's collation takes `'a '` for `'a'`: the inbox lists one of them as the
        // consumer, and its rows under the other name are counted as the listed one's, as
        // a batch of that consumer alone deletes both. A NO PAD collation lists both.
        let padded: HashMap<&str, usize> = match self.backend {
            Backend::Mysql => consumers
                .iter()
                .enumerate()
                .map(|(index, name)| (name.trim_end_matches(' '), index))
                .collect(),
            _ => HashMap::new(),
        };
        let (mut total, mut deleted) = (0, vec![0; consumers.len()]);
        for row in rows {
            // One row per consumer from PostgreSQL's count, one per deleted row elsewhere.
            let count = match self.backend {
                Backend::Postgres => row.try_get::<i64, _>(1)? as u64,
                _ => 1,
            };
            let name: String = row.try_get(0)?;
            let index = listed
                .get(name.as_str())
                .or_else(|| padded.get(name.trim_end_matches(' ')));
            if let Some(&index) = index {
                deleted[index] += count;
            }
            total += count;
        }
        Ok((total, deleted))
    }

    /// The heap's extent for a block-range prune; `None` where the backend has no block
    /// addressing, or the inbox is not a plain table.
    pub async fn heap_extent(&self) -> anyhow::Result<Option<HeapExtent>> {
        let Some(sql) = self.dialect.heap_extent else {
            return Ok(None);
        };
        // No row for a partitioned table (or a view): its rows are in other relations.
        let Some((pages, reltuples, relpages)): Option<(i64, i64, i64)> = sqlx::query_as(sql)
            .fetch_optional(&self.pool)
            .await
            .context("could not read the size of the inbox table")?
        else {
            return Ok(None);
        };
        // reltuples is -1 before the first ANALYZE: nothing is known about the row count.
        let analysed = reltuples >= 0;
        Ok(Some(HeapExtent {
            pages: pages.max(0) as u64,
            rows_per_page: (analysed && relpages > 0).then(|| reltuples as f64 / relpages as f64),
            estimated_rows: analysed.then_some(reltuples as u64),
        }))
    }

    /// Deletes every prunable row in the heap pages `blocks` (of `consumer`, or of every
    /// consumer) as one statement, its own short transaction. Returns the rows deleted.
    ///
    /// The pages are read in physical order, as one unbounded DELETE reads them, so no index
    /// is walked and every page is visited once however the consumers' rows interleave. No
    /// RETURNING: fetching the deleted rows back costs half as much again as deleting them.
    pub async fn delete_older_in_blocks(
        &self,
        connection: &mut AnyConnection,
        consumer: Option<&str>,
        cutoff: DateTime<Utc>,
        keep: &[KeepFrom],
        blocks: std::ops::Range<u64>,
    ) -> anyhow::Result<u64> {
        let mut sql = self.sql();
        sql.push(&format!("DELETE FROM {INBOX_TABLE} WHERE ctid >= CAST("))
            .param()
            .push(" AS tid) AND ctid < CAST(")
            .param()
            // The cutoff as a one-time subquery: a cast of the text parameter in the filter
            // itself would be parsed again for every row read (the cast is only STABLE).
            .push(" AS tid) AND processed_at < (SELECT ")
            .timestamp_param()
            .push(")");
        // `IS TRUE` makes the condition one no index can answer: for a consumer its
        // statistics do not know, PostgreSQL would otherwise walk all of that consumer's
        // entries in an index for every batch instead of reading the batch's pages.
        if consumer.is_some() {
            sql.push(" AND (consumer = ").param().push(") IS TRUE");
        }
        self.push_keep_exclusions(&mut sql, keep);
        let text = sql.build();
        let mut query = sqlx::query(&text)
            .bind(format!("({},0)", blocks.start))
            .bind(format!("({},0)", blocks.end))
            .bind(self.timestamp_param(cutoff));
        if let Some(consumer) = consumer {
            query = query.bind(consumer);
        }
        let result = bind_keep_exclusions(query, keep)
            .execute(connection)
            .await
            .with_context(|| {
                format!(
                    "could not delete the prunable rows in pages {} to {} of {INBOX_TABLE}",
                    blocks.start,
                    blocks.end - 1
                )
            })?;
        Ok(result.rows_affected())
    }

    /// A connection of its own for prune's batches, and what cancels its statement in
    /// flight from another connection (for a stop at once). On PostgreSQL its commits do not
    /// wait for the WAL flush (`synchronous_commit = off`): a batch lost in a server crash
    /// only leaves rows that the next run deletes, and the batches stop queueing behind the
    /// consumers' own commits. From PostgreSQL 14 on, the server also looks every second
    /// whether prune is still there while a batch runs, in case the cancel cannot reach it.
    /// One statement for all of it: each round trip before the first batch costs a
    /// concurrent writer (see the benchmarks). It is closed, not pooled, when dropped.
    pub async fn bulk_delete_connection(
        &self,
    ) -> anyhow::Result<(PoolConnection<Any>, Option<QueryCanceller>)> {
        let mut connection = self.acquire().await?;
        connection.close_on_drop();
        let session = match self.backend {
            Backend::Postgres => Some(
                "SELECT pg_backend_pid()::int8, set_config('synchronous_commit', 'off', false), \
                 CASE WHEN current_setting('server_version_num')::int >= 140000 \
                 THEN set_config('client_connection_check_interval', '1000', false) END",
            ),
            // Signed: the Any driver does not decode BIGINT UNSIGNED.
            Backend::Mysql => Some("SELECT CAST(CONNECTION_ID() AS SIGNED)"),
            Backend::Sqlite => None,
        };
        let canceller = match session {
            Some(sql) => {
                let row = sqlx::query(sql)
                    .fetch_one(&mut *connection)
                    .await
                    .context("could not set up the connection for deleting")?;
                Some(QueryCanceller {
                    options: self.pool.connect_options(),
                    backend: self.backend,
                    session: row.try_get(0)?,
                })
            }
            // A stopped process's transaction is never committed: SQLite has no server
            // to apply it later.
            None => None,
        };
        Ok((connection, canceller))
    }

    /// What cancels the statement in flight on `connection` from another session (none on
    /// SQLite, whose statements end with the process).
    pub async fn canceller_of(
        &self,
        connection: &mut AnyConnection,
    ) -> anyhow::Result<Option<QueryCanceller>> {
        let sql = match self.backend {
            Backend::Postgres => "SELECT pg_backend_pid()::int8",
            // Signed: the Any driver does not decode BIGINT UNSIGNED.
            Backend::Mysql => "SELECT CAST(CONNECTION_ID() AS SIGNED)",
            Backend::Sqlite => return Ok(None),
        };
        let session = sqlx::query_scalar(sql)
            .fetch_one(connection)
            .await
            .context("could not read the session's id")?;
        Ok(Some(QueryCanceller {
            options: self.pool.connect_options(),
            backend: self.backend,
            session,
        }))
    }

    /// `consumer = ? [AND processed_at >= ?] AND processed_at < ?`, then one exclusion per
    /// partition `keep` protects: a consumer's rows processed at or after `from` (when there
    /// is a bound), strictly before the cutoff.
    fn push_prune_condition(&self, sql: &mut SqlBuilder, from: Option<&str>, keep: &[KeepFrom]) {
        sql.push("consumer = ")
            .param()
            .processed_between(from.is_some());
        self.push_keep_exclusions(sql, keep);
    }

    /// ` AND NOT COALESCE(CASE topic WHEN ? THEN … END, FALSE)`: whether a row is kept,
    /// found by its topic and then by a search over that topic's protected partitions, so
    /// that each row costs a few comparisons however many partitions there are. (One `AND
    /// NOT (…)` a partition put every row through all of them: 100 times slower at 500
    /// partitions on PostgreSQL, and past SQLite's expression depth of 1000 at about 450.)
    /// The partitions and offsets are written into the statement as numbers, the topics
    /// bound, so that no number of partitions reaches a limit of parameters. Rows without
    /// coordinates are never protected, nor are rows missing any one of them: their CASE
    /// or comparison is NULL, which COALESCE makes false.
    fn push_keep_exclusions(&self, sql: &mut SqlBuilder, keep: &[KeepFrom]) {
        if keep.is_empty() {
            return;
        }
        let d = self.dialect;
        let (partition, offset) = (d.quote("partition"), d.quote("offset"));
        sql.push(" AND NOT COALESCE(CASE topic");
        for partitions in kept_by_topic(keep).values() {
            sql.push(" WHEN ").param().push(" THEN ");
            push_partition_search(sql, &partition, &offset, partitions);
        }
        sql.push(" END, FALSE)");
    }

    fn bind_prune_condition<'q, Q: BindPrune<'q>>(
        &self,
        query: Q,
        consumer: &'q str,
        from: Option<&'q str>,
        cutoff: DateTime<Utc>,
        keep: &'q [KeepFrom],
    ) -> Q {
        let mut query = query.bind_str(consumer);
        if let Some(from) = from {
            query = query.bind_str(from);
        }
        let query = query.bind_string(self.timestamp_param(cutoff));
        bind_keep_exclusions(query, keep)
    }

    /// Rows of a consumer at one topic partition with an offset of at least `from`: their
    /// count and highest offset. Reads the coordinates index.
    pub async fn offset_range_summary(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
        from: i64,
    ) -> anyhow::Result<(i64, Option<i64>)> {
        // Two statements: beside COUNT, MAX is one more value to take from every entry read
        // (a third of the time on PostgreSQL, whose index tuples start with two texts);
        // alone, each database reads it off the end of the index.
        let offset = self.dialect.quote("offset");
        let rows = self
            .rows_from_offset(consumer, topic, partition, from)
            .await?;
        let max = self
            .coordinates_aggregate(
                &format!("MAX({offset})"),
                consumer,
                topic,
                partition,
                from,
                None,
            )
            .await?;
        Ok((rows, max))
    }

    /// How many rows of a consumer at one topic partition have `offset >= from`: all the
    /// partition's rows, less those below `from` and those without an offset. Those two
    /// sit at the ends of the partition's part of the coordinates index and cost no reading
    /// of the rest, while a condition on the offset in the count itself would be checked
    /// against every entry (on PostgreSQL 15, twice the time of the count without it).
    async fn rows_from_offset(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
        from: i64,
    ) -> anyhow::Result<i64> {
        let d = self.dialect;
        let offset = d.quote("offset");
        // `(SELECT COUNT(*) … AND partition = ?`, left open for one more condition.
        let partition_rows = |sql: &mut SqlBuilder| {
            sql.push(&format!("(SELECT COUNT(*) FROM {INBOX_TABLE} WHERE "));
            self.push_partition_filter(sql);
        };
        let mut counts = self.sql();
        partition_rows(&mut counts);
        counts.push(") - ");
        partition_rows(&mut counts);
        counts
            .push(&format!(" AND {offset} < "))
            .param()
            .push(") - ");
        partition_rows(&mut counts);
        counts.push(&format!(" AND {offset} IS NULL)"));
        let text = format!("SELECT {}", (d.bigint)(&counts.build()));
        let all = bind_partition(
            sqlx::query_scalar::<_, i64>(&text),
            consumer,
            topic,
            partition,
        );
        let below = bind_partition(all, consumer, topic, partition).bind(from);
        bind_partition(below, consumer, topic, partition)
            .fetch_one(&self.pool)
            .await
            .with_context(|| format!("could not count inbox rows of {topic}:{partition}"))
    }

    /// How many distinct offsets in `from <= offset < to` hold at least one row of a consumer
    /// at one topic partition. Two rows can share an offset (a recreated topic that reused
    /// its offsets, a change of the event id's extraction), so counting rows could let one
    /// of them stand in for an offset that has none. The DISTINCT reads the coordinates
    /// index in order and drops repeats as it goes (PostgreSQL: Unique over an index-only
    /// scan), in constant memory; `COUNT(DISTINCT …)` sorts its input on PostgreSQL before
    /// 16 and spills to disk past `work_mem`.
    pub async fn distinct_offsets(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
        from: i64,
        to: i64,
    ) -> anyhow::Result<i64> {
        let d = self.dialect;
        let offset = d.quote("offset");
        let mut sql = self.sql();
        sql.push(&format!(
            "SELECT {} FROM (SELECT DISTINCT {offset} FROM {INBOX_TABLE}",
            (d.bigint)("COUNT(*)")
        ));
        self.push_coordinates_filter(&mut sql, true);
        sql.push(") present");
        let text = sql.build();
        let query = sqlx::query_scalar::<_, i64>(&text);
        bind_coordinates(query, consumer, topic, partition, from, Some(to))
            .fetch_one(&self.pool)
            .await
            .with_context(|| format!("could not count inbox offsets of {topic}:{partition}"))
    }

    /// The (partition, offset) of a consumer's rows at a topic in partitions below 0 or above
    /// `last_partition`, which a topic of partitions 0 to `last_partition` does not have;
    /// ordered. Two ranges at the ends of the topic's part of the coordinates index.
    pub async fn rows_outside_partitions(
        &self,
        consumer: &str,
        topic: &str,
        last_partition: i32,
    ) -> anyhow::Result<Vec<(i64, i64)>> {
        let d = self.dialect;
        let (partition, offset) = (d.quote("partition"), d.quote("offset"));
        let mut sql = self.sql();
        for (n, condition) in ["< 0", "> "].iter().enumerate() {
            if n > 0 {
                sql.push(" UNION ALL ");
            }
            sql.push(&format!(
                "SELECT {}, {} FROM {INBOX_TABLE} WHERE consumer = ",
                (d.bigint)(&partition),
                (d.bigint)(&offset)
            ))
            .unseen_param()
            .push(" AND topic = ")
            .param()
            .push(&format!(
                " AND {offset} IS NOT NULL AND {partition} {condition}"
            ));
            if n > 0 {
                sql.param();
            }
        }
        sql.push(" ORDER BY 1, 2");
        sqlx::query_as(&sql.build())
            .bind(consumer)
            .bind(topic)
            .bind(consumer)
            .bind(topic)
            .bind(last_partition)
            .fetch_all(&self.pool)
            .await
            .with_context(|| format!("could not read inbox rows of {topic} outside its partitions"))
    }

    async fn coordinates_aggregate(
        &self,
        aggregate: &str,
        consumer: &str,
        topic: &str,
        partition: i32,
        from: i64,
        to: Option<i64>,
    ) -> anyhow::Result<Option<i64>> {
        let mut sql = self.sql();
        sql.push(&format!(
            "SELECT {} FROM {INBOX_TABLE}",
            (self.dialect.bigint)(aggregate)
        ));
        self.push_coordinates_filter(&mut sql, to.is_some());
        let text = sql.build();
        let query = sqlx::query_scalar::<_, Option<i64>>(&text);
        bind_coordinates(query, consumer, topic, partition, from, to)
            .fetch_one(&self.pool)
            .await
            .with_context(|| format!("could not read inbox rows of {topic}:{partition}"))
    }

    /// The offsets of a consumer's rows at one topic partition with `from <= offset < to`,
    /// ascending, each once: two rows can share an offset (see [`Store::distinct_offsets`]).
    pub async fn offsets_in_range(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
        from: i64,
        to: Option<i64>,
    ) -> anyhow::Result<Vec<i64>> {
        let text = self.offsets_in_order_sql(to.is_some());
        let query = sqlx::query_scalar(&text);
        let mut offsets: Vec<i64> = bind_coordinates(query, consumer, topic, partition, from, to)
            .fetch_all(&self.pool)
            .await
            .with_context(|| format!("could not read inbox offsets of {topic}:{partition}"))?;
        offsets.dedup();
        Ok(offsets)
    }

    /// The offsets of a consumer's rows at one topic partition from an offset (up to another
    /// when `bounded`), ascending: the parameters of [`bind_coordinates`].
    fn offsets_in_order_sql(&self, bounded: bool) -> String {
        let d = self.dialect;
        let offset = d.quote("offset");
        let mut sql = self.sql();
        sql.push(&format!(
            "SELECT {} FROM {INBOX_TABLE}",
            (d.bigint)(&offset)
        ));
        self.push_coordinates_filter(&mut sql, bounded);
        sql.push(&format!(" ORDER BY {offset}"));
        sql.build()
    }

    /// The first `limit` runs of offsets in `from <= offset < to` without a row of a consumer
    /// at one topic partition, as (first, last) pairs, ascending. It reads the partition's
    /// offsets in order and stops at the `limit`-th run, in constant memory.
    pub async fn runs_without_row(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
        (from, to): (i64, i64),
        limit: usize,
    ) -> anyhow::Result<Vec<(i64, i64)>> {
        use futures_util::TryStreamExt;
        let text = self.offsets_in_order_sql(true);
        let query = sqlx::query_scalar::<_, i64>(&text);
        let mut offsets =
            bind_coordinates(query, consumer, topic, partition, from, Some(to)).fetch(&self.pool);
        let mut runs = Vec::new();
        // The lowest offset not yet known to hold a row.
        let mut next = from;
        while runs.len() < limit {
            let Some(offset) = offsets
                .try_next()
                .await
                .with_context(|| format!("could not read inbox offsets of {topic}:{partition}"))?
            else {
                if next < to {
                    runs.push((next, to - 1));
                }
                break;
            };
            if offset > next {
                runs.push((next, offset - 1));
            }
            next = next.max(offset + 1);
        }
        Ok(runs)
    }

    /// Which of `offsets` hold a row of the consumer at one topic partition, ascending, each
    /// once. One query per call: callers pass chunks of at most a few thousand offsets.
    pub async fn offsets_with_rows(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
        offsets: &[i64],
    ) -> anyhow::Result<Vec<i64>> {
        if offsets.is_empty() {
            return Ok(Vec::new());
        }
        let d = self.dialect;
        let offset = d.quote("offset");
        let mut sql = self.sql();
        sql.push(&format!(
            "SELECT {} FROM {INBOX_TABLE} WHERE ",
            (d.bigint)(&offset)
        ));
        self.push_partition_filter(&mut sql);
        sql.push(&format!(" AND {offset} IN ("))
            .params(offsets.len())
            .push(&format!(") ORDER BY {offset}"));
        let text = sql.build();
        let mut query = bind_partition(sqlx::query_scalar(&text), consumer, topic, partition);
        for at in offsets {
            query = query.bind(*at);
        }
        let mut found: Vec<i64> = query
            .fetch_all(&self.pool)
            .await
            .with_context(|| format!("could not read inbox offsets of {topic}:{partition}"))?;
        found.dedup();
        Ok(found)
    }

    /// Writes the filter whose parameters [`bind_coordinates`] binds.
    fn push_coordinates_filter(&self, sql: &mut SqlBuilder, bounded: bool) {
        let offset = self.dialect.quote("offset");
        sql.push(" WHERE ");
        self.push_partition_filter(sql);
        sql.push(&format!(" AND {offset} >= ")).param();
        if bounded {
            sql.push(&format!(" AND {offset} < ")).param();
        }
    }

    /// Runs `work` in one write transaction on `connection`: committed when it passes and
    /// `keep` says so of what it returned, rolled back otherwise. A failed ROLLBACK is not
    /// said: it would only hide the error that matters.
    pub async fn in_write_transaction<T, E: From<sqlx::Error>>(
        &self,
        connection: &mut AnyConnection,
        work: impl AsyncFnOnce(&mut AnyConnection) -> Result<T, E>,
        keep: impl FnOnce(&T) -> bool,
    ) -> Result<T, E> {
        connection.execute(self.dialect.begin_write).await?;
        let result = match work(&mut *connection).await {
            Ok(value) => {
                let end = if keep(&value) { "COMMIT" } else { "ROLLBACK" };
                connection
                    .execute(end)
                    .await
                    .map(|_| value)
                    .map_err(E::from)
            }
            Err(failure) => Err(failure),
        };
        if result.is_err() {
            let _ = connection.execute("ROLLBACK").await;
        }
        result
    }

    /// Makes the record of prunes (`inboxctl_prunes`) when it is missing, before a prune
    /// deletes anything; [`Store::record_prune`] writes into it.
    pub async fn prepare_prune_record(&self) -> anyhow::Result<()> {
        // Made only when missing: PostgreSQL checks the right to create tables even for a
        // CREATE TABLE IF NOT EXISTS of one that exists, which a pruning user may lack.
        if self.table_exists(PRUNES_TABLE).await? {
            return Ok(());
        }
        // Consumers compare as the inbox's do: case-sensitively, which MySQL's default
        // collation does not.
        let consumer = match self.backend {
            Backend::Mysql => "VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
            _ => "TEXT",
        };
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {PRUNES_TABLE} (consumer {consumer} NOT NULL, \
             cutoff VARCHAR(40) NOT NULL, pruned_at VARCHAR(40) NOT NULL)"
        );
        // Two first prunes at once: PostgreSQL's IF NOT EXISTS does not cover a table
        // another session is creating (a duplicate key in pg_type), and that table will do.
        // Where it is not seen yet, the statement is made again, and then finds it.
        let mut attempts = 0;
        loop {
            let Err(error) = sqlx::query(&create).execute(&self.pool).await else {
                return Ok(());
            };
            if self.table_exists(PRUNES_TABLE).await? {
                return Ok(());
            }
            let duplicate = error
                .as_database_error()
                .is_some_and(|e| e.kind() == sqlx::error::ErrorKind::UniqueViolation);
            attempts += 1;
            if !duplicate || attempts == 3 {
                // MySQL hides a table from a user with no right on it: the table may be
                // there, and INSERT on it all the user lacks.
                let denied = error
                    .as_database_error()
                    .and_then(|e| e.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>())
                    .is_some_and(|mysql| mysql.number() == 1142);
                let context = match denied {
                    true => format!(
                        "{}; where it exists, this user cannot see it: grant it INSERT on \
                         {PRUNES_TABLE} (or CREATE, to make it)",
                        record_error()
                    ),
                    false => record_error(),
                };
                return Err(anyhow::Error::new(error).context(context));
            }
        }
    }

    /// Records on `connection`, in the transaction of the prune's first batch that deletes
    /// the consumers' rows, that their rows processed before `cutoff` may be gone: the
    /// record and the batch are kept or undone together. Times are RFC 3339 text in UTC with
    /// milliseconds: fixed width, so they sort as they compare.
    pub async fn record_prune(
        &self,
        connection: &mut AnyConnection,
        consumers: &[&str],
        cutoff: DateTime<Utc>,
    ) -> anyhow::Result<()> {
        let stamp = |at: DateTime<Utc>| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let (cutoff, pruned_at) = (stamp(cutoff), stamp(Utc::now()));
        // Many rows a statement: a prune of every consumer of a large inbox records them all
        // in its first batch's transaction, which one INSERT each would hold open for
        // seconds. 300 rows of 3 keep under SQLite's oldest limit of 999 parameters.
        for chunk in consumers.chunks(300) {
            let mut sql = self.sql();
            sql.push(&format!(
                "INSERT INTO {PRUNES_TABLE} (consumer, cutoff, pruned_at) VALUES "
            ))
            .value_rows(chunk.len(), 3);
            let text = sql.build();
            let mut query = sqlx::query(&text);
            for consumer in chunk {
                query = query
                    .bind(*consumer)
                    .bind(cutoff.as_str())
                    .bind(pruned_at.as_str());
            }
            query
                .execute(&mut *connection)
                .await
                .with_context(record_error)?;
        }
        Ok(())
    }

    /// The latest cutoff a prune of the consumer's rows recorded: rows processed before it
    /// may be gone. `None` when none was recorded.
    pub async fn last_prune_cutoff(&self, consumer: &str) -> anyhow::Result<Option<DateTime<Utc>>> {
        let mut connection = self.acquire().await?;
        Ok(self
            .last_prune_cutoffs(&mut connection, Some(consumer))
            .await?
            .remove(consumer))
    }

    /// [`Store::last_prune_cutoff`] of every consumer with a recorded prune (or of `only`),
    /// in one query.
    pub async fn last_prune_cutoffs(
        &self,
        connection: &mut AnyConnection,
        only: Option<&str>,
    ) -> anyhow::Result<HashMap<String, DateTime<Utc>>> {
        if !self.table_exists_on(&mut *connection, PRUNES_TABLE).await? {
            return Ok(HashMap::new());
        }
        let mut sql = self.sql();
        sql.push(&format!("SELECT consumer, MAX(cutoff) FROM {PRUNES_TABLE}"));
        if only.is_some() {
            sql.push(" WHERE consumer = ").param();
        }
        sql.push(" GROUP BY consumer");
        let text = sql.build();
        let mut query = sqlx::query_as::<_, (String, String)>(&text);
        if let Some(consumer) = only {
            query = query.bind(consumer);
        }
        let rows = query
            .fetch_all(connection)
            .await
            .with_context(|| format!("could not read the prunes recorded in {PRUNES_TABLE}"))?;
        rows.into_iter()
            .map(|(consumer, text)| {
                let cutoff = DateTime::parse_from_rfc3339(&text)
                    .map(|at| at.with_timezone(&Utc))
                    .with_context(|| {
                        format!("{PRUNES_TABLE} holds a cutoff that is not a time: '{text}'")
                    })?;
                Ok((consumer, cutoff))
            })
            .collect()
    }

    /// The lowest offset (0 or more) of the consumer's rows at one topic partition.
    pub async fn lowest_offset(
        &self,
        consumer: &str,
        topic: &str,
        partition: i32,
    ) -> anyhow::Result<Option<i64>> {
        let d = self.dialect;
        let offset = d.quote("offset");
        let mut sql = self.sql();
        sql.push(&format!("SELECT MIN({offset}) FROM {INBOX_TABLE} WHERE "));
        self.push_partition_filter(&mut sql);
        sql.push(&format!(" AND {offset} >= 0"));
        let text = format!("SELECT {}", (d.bigint)(&format!("({})", sql.build())));
        bind_partition(sqlx::query_scalar(&text), consumer, topic, partition)
            .fetch_one(&self.pool)
            .await
            .with_context(|| {
                format!("could not read the lowest inbox offset of {topic}:{partition}")
            })
    }

    /// `consumer = (SELECT ?) AND topic = ? AND partition = ?`: one consumer's rows at one
    /// partition, the consumer unseen by the planner ([`SqlBuilder::unseen_param`]), so that
    /// only the coordinates index answers it.
    fn push_partition_filter(&self, sql: &mut SqlBuilder) {
        sql.push("consumer = ")
            .unseen_param()
            .push(" AND topic = ")
            .param()
            .push(&format!(" AND {} = ", self.dialect.quote("partition")))
            .param();
    }

    /// The topics a consumer has rows of (those without coordinates aside), in the order
    /// of the database's collation. On PostgreSQL and SQLite each step of the recursion
    /// takes the next name off the coordinates index, so the cost grows with the number of
    /// topics, not of rows (PostgreSQL before 18 reads every entry of the consumer for a
    /// `DISTINCT`: 69 ms against 0.5 ms for 250,000 rows). MySQL gets the `DISTINCT`: it
    /// stops a recursion after 1,000 steps (MariaDB without an error), and MariaDB ran the
    /// recursion forty times slower than the `DISTINCT` (2.2 s against 54 ms, 300,000 rows).
    pub async fn consumer_topics(&self, consumer: &str) -> anyhow::Result<Vec<String>> {
        let recursive = self.backend != Backend::Mysql;
        let mut sql = self.sql();
        if recursive {
            sql.push(&format!(
                "WITH RECURSIVE present (topic) AS (SELECT MIN(topic) FROM {INBOX_TABLE} WHERE consumer = "
            ))
            .unseen_param()
            .push(&format!(
                " UNION ALL SELECT (SELECT MIN(topic) FROM {INBOX_TABLE} WHERE consumer = "
            ))
            .unseen_param()
            .push(
                " AND topic > present.topic) FROM present WHERE present.topic IS NOT NULL) \
                 SELECT topic FROM present WHERE topic IS NOT NULL",
            );
        } else {
            sql.push(&format!(
                "SELECT DISTINCT topic FROM {INBOX_TABLE} WHERE consumer = "
            ))
            .param()
            .push(" AND topic IS NOT NULL");
        }
        let text = sql.build();
        let mut query = sqlx::query_scalar(&text).bind(consumer);
        if recursive {
            query = query.bind(consumer);
        }
        query
            .fetch_all(&self.pool)
            .await
            .with_context(|| format!("could not read the topics of consumer '{consumer}'"))
    }

    /// Whether the consumer has any row (the first entry of the primary key, if any).
    pub async fn consumer_has_rows(&self, consumer: &str) -> anyhow::Result<bool> {
        let mut sql = self.sql();
        sql.push(&format!(
            "SELECT consumer FROM {INBOX_TABLE} WHERE consumer = "
        ))
        .param()
        .push(" LIMIT 1");
        let found: Option<String> = sqlx::query_scalar(&sql.build())
            .bind(consumer)
            .fetch_optional(&self.pool)
            .await
            .with_context(|| format!("could not look for rows of consumer '{consumer}'"))?;
        Ok(found.is_some())
    }

    /// How many rows the consumer has (read through the primary key).
    pub async fn consumer_rows(&self, consumer: &str) -> anyhow::Result<i64> {
        let mut sql = self.sql();
        sql.push(&format!(
            "SELECT COUNT(*) FROM {INBOX_TABLE} WHERE consumer = "
        ))
        .param();
        sqlx::query_scalar(&sql.build())
            .bind(consumer)
            .fetch_one(&self.pool)
            .await
            .with_context(|| format!("could not count the rows of consumer '{consumer}'"))
    }

    /// Calls `each` with every event id the consumer has processed, streamed (in no order).
    pub async fn for_each_event_id(
        &self,
        consumer: &str,
        mut each: impl FnMut(&str),
    ) -> anyhow::Result<()> {
        use futures_util::TryStreamExt;
        let mut sql = self.sql();
        sql.push(&format!(
            "SELECT event_id FROM {INBOX_TABLE} WHERE consumer = "
        ))
        .param();
        let text = sql.build();
        let mut rows = sqlx::query_scalar::<_, String>(&text)
            .bind(consumer)
            .fetch(&self.pool);
        while let Some(event_id) = rows
            .try_next()
            .await
            .context("could not read the inbox's event ids")?
        {
            each(&event_id);
        }
        Ok(())
    }

    /// Those of `event_ids` whose inbox row, of `consumer`, PostgreSQL's index on the key
    /// cannot hold (see [`postgres::KEY_INDEX_LIMIT`]); empty elsewhere. Whether a long key
    /// compresses under the limit only the server knows: each id long enough to be over it
    /// uncompressed (rare, ids are mostly UUIDs) is inserted under a savepoint, in a
    /// transaction that is rolled back. `fits` says of an id that it is known to fit: the
    /// caller's ids whose rows it holds uncommitted, which a try would wait for. A try that
    /// still waits over a second for a lock (another session's row of the same key, which
    /// then fits; a table lock) counts as fitting rather than hold the replay up. Fails
    /// where the server refuses the try for another reason (a user who may not insert).
    pub async fn over_the_key_index(
        &self,
        consumer: &str,
        event_ids: &[&str],
        fits: impl Fn(&str) -> bool,
    ) -> anyhow::Result<std::collections::HashSet<String>> {
        let mut over = std::collections::HashSet::new();
        let long: Vec<&str> = event_ids
            .iter()
            .copied()
            .filter(|id| self.may_be_over_the_key_index(consumer, id) && !fits(id))
            .collect();
        if long.is_empty() {
            return Ok(over);
        }
        let mut connection = self.acquire().await?;
        let try_each = async |connection: &mut AnyConnection| {
            connection.execute("SET LOCAL lock_timeout = '1s'").await?;
            let insert = format!(
                "INSERT INTO {INBOX_TABLE} (consumer, event_id) VALUES ($1, $2) \
                 ON CONFLICT DO NOTHING"
            );
            for id in long {
                connection.execute("SAVEPOINT inboxctl_key").await?;
                let inserted = sqlx::query(&insert)
                    .bind(consumer)
                    .bind(id)
                    .execute(&mut *connection)
                    .await;
                match inserted {
                    Err(sqlx::Error::Database(error))
                        if postgres::is_over_the_key_index(
                            error.code().as_deref().unwrap_or_default(),
                            error.message(),
                        ) =>
                    {
                        over.insert(id.to_string());
                    }
                    Err(error) if is_lock_wait_timeout(&error) => {}
                    inserted => _ = inserted?,
                }
                connection
                    .execute("ROLLBACK TO SAVEPOINT inboxctl_key")
                    .await?;
            }
            Ok::<_, sqlx::Error>(())
        };
        // Nothing tried stays: rolled back, whatever it found.
        self.in_write_transaction(&mut connection, try_each, |_| false)
            .await
            .context("could not try whether the inbox's key index holds a long event id")?;
        Ok(over)
    }

    /// Whether a row of `consumer` and `event_id` may be over what PostgreSQL's index on the
    /// inbox's key holds uncompressed (see [`Store::over_the_key_index`]).
    pub fn may_be_over_the_key_index(&self, consumer: &str, event_id: &str) -> bool {
        self.backend == Backend::Postgres
            && consumer.len() + event_id.len() > postgres::KEY_INDEX_BYTES
            && self.can_store_text(event_id)
    }

    /// Whether a text column can hold `text`: PostgreSQL's text cannot hold a NUL character.
    pub fn can_store_text(&self, text: &str) -> bool {
        self.backend != Backend::Postgres || !text.contains('\0')
    }

    /// Which of these event ids the consumer has processed. One query per call: callers pass
    /// chunks of at most a few thousand ids.
    pub async fn processed_ids(
        &self,
        consumer: &str,
        event_ids: &[&str],
    ) -> anyhow::Result<std::collections::HashSet<String>> {
        // No row holds an id the column cannot; asked for one, PostgreSQL (a NUL) and MySQL
        // (a character the column's set lacks) refuse the whole query.
        let not_held = self.not_held("event_id", event_ids).await?;
        let event_ids: Vec<&str> = event_ids
            .iter()
            .copied()
            .filter(|id| self.can_store_text(id) && !not_held.contains(*id))
            .collect();
        if event_ids.is_empty() {
            return Ok(Default::default());
        }
        // The consumer unseen by the planner, which then takes the primary key even for one
        // being replayed for the first time (see [`SqlBuilder::unseen_param`]).
        let mut sql = self.sql();
        sql.push(&format!(
            "SELECT event_id FROM {INBOX_TABLE} WHERE consumer = "
        ))
        .unseen_param()
        .push(" AND event_id IN (")
        .params(event_ids.len())
        .push(")");
        let text = sql.build();
        let mut query = sqlx::query_scalar::<_, String>(&text).bind(consumer);
        for id in &event_ids {
            query = query.bind(*id);
        }
        let found: Vec<String> = query
            .fetch_all(&self.pool)
            .await
            .context("could not look up event ids in the inbox")?;
        if self.backend != Backend::Mysql {
            return Ok(found.into_iter().collect());
        }
        // The ids asked for, as the server matched them: a row `x ` answers for `x`.
        let key = self.id_key().await?;
        let found: std::collections::HashSet<&str> = found.iter().map(|id| key.of(id)).collect();
        Ok(event_ids
            .iter()
            .filter(|id| found.contains(key.of(id)))
            .map(|id| id.to_string())
            .collect())
    }

    /// Ends every connection as its protocol asks (PostgreSQL's Terminate, MySQL's
    /// COM_QUIT), so that the server records a normal end of session and not a lost client.
    pub async fn close(self) {
        // A connection released just before is still on its way back to the pool: sqlx
        // pings it first, in a task of its own. `Pool::close` ends only the connections it
        // finds idle and then waits for the others' permits, so this one would come back
        // after it, be left in the pool and be dropped at exit without a word (PostgreSQL
        // counts the session abandoned, and over TLS logs "could not receive data from
        // client: Connection reset by peer"; MariaDB counts an aborted client).
        let closing = async {
            while self.pool.num_idle() < self.pool.size() as usize {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            self.pool.close().await;
        };
        // A server that stops answering holds up that return, and `Pool::close` waits for it:
        // bounded, the command still ends, and the kernel closes what is left.
        let _ = tokio::time::timeout(CLOSE_WAIT, closing).await;
    }
}

/// A connection not made within `--connect-timeout`, with what may be the cause: a server
/// down or out of reach, or a SQLite file that another process holds locked.
fn connect_timed_out(url: &DatabaseUrl, timeout: Duration) -> anyhow::Error {
    let hint = match url.backend {
        Backend::Sqlite => "is another process holding it locked?",
        _ => "is it running and reachable?",
    };
    anyhow!(
        "could not connect to {} within {} ({hint} see --connect-timeout)",
        url.endpoint,
        humantime::format_duration(timeout)
    )
}

/// Binds the parameters of [`Store::push_coordinates_filter`], in its order (`to` only when
/// the filter was written bounded).
fn bind_coordinates<'q, O>(
    query: sqlx::query::QueryScalar<'q, Any, O, sqlx::any::AnyArguments<'q>>,
    consumer: &'q str,
    topic: &'q str,
    partition: i32,
    from: i64,
    to: Option<i64>,
) -> sqlx::query::QueryScalar<'q, Any, O, sqlx::any::AnyArguments<'q>> {
    let query = bind_partition(query, consumer, topic, partition).bind(from);
    match to {
        Some(to) => query.bind(to),
        None => query,
    }
}

/// Binds the parameters of [`Store::push_partition_filter`], in its order.
fn bind_partition<'q, O>(
    query: sqlx::query::QueryScalar<'q, Any, O, sqlx::any::AnyArguments<'q>>,
    consumer: &'q str,
    topic: &'q str,
    partition: i32,
) -> sqlx::query::QueryScalar<'q, Any, O, sqlx::any::AnyArguments<'q>> {
    query.bind(consumer).bind(topic).bind(partition)
}

/// Binds the parameters of `push_keep_exclusions`, in its order: the topics.
fn bind_keep_exclusions<'q, Q: BindPrune<'q>>(mut query: Q, keep: &'q [KeepFrom]) -> Q {
    for topic in kept_by_topic(keep).into_keys() {
        query = query.bind_str(topic);
    }
    query
}

/// The partitions `keep` protects, by topic, each topic's in order, with the offset its
/// rows are kept from (`None`: all of them). A partition named twice keeps the lower.
fn kept_by_topic(keep: &[KeepFrom]) -> BTreeMap<&str, Vec<(i64, Option<i64>)>> {
    let mut by_topic: BTreeMap<&str, Vec<(i64, Option<i64>)>> = BTreeMap::new();
    for protected in keep {
        by_topic
            .entry(&protected.topic)
            .or_default()
            .push((protected.partition, protected.committed));
    }
    for partitions in by_topic.values_mut() {
        // `None` sorts first: of the same partition, the one that keeps most stays.
        partitions.sort_unstable();
        partitions.dedup_by_key(|(partition, _)| *partition);
    }
    by_topic
}

/// Partitions a CASE lists in one run; more are halved first.
const PARTITIONS_IN_A_RUN: usize = 8;

/// Whether a row of one topic is kept, by its partition (`partitions` in order): halved by
/// `partition < …` down to runs of [`PARTITIONS_IN_A_RUN`], each a `CASE partition WHEN …`.
/// NULL for a partition not among them, or a row without an offset.
fn push_partition_search(
    sql: &mut SqlBuilder,
    partition: &str,
    offset: &str,
    partitions: &[(i64, Option<i64>)],
) {
    if partitions.len() > PARTITIONS_IN_A_RUN {
        let (lower, upper) = partitions.split_at(partitions.len() / 2);
        sql.push(&format!("CASE WHEN {partition} < {} THEN ", upper[0].0));
        push_partition_search(sql, partition, offset, lower);
        sql.push(" ELSE ");
        push_partition_search(sql, partition, offset, upper);
        sql.push(" END");
        return;
    }
    sql.push(&format!("CASE {partition}"));
    for (number, committed) in partitions {
        sql.push(&match committed {
            Some(committed) => format!(" WHEN {number} THEN {offset} >= {committed}"),
            None => format!(" WHEN {number} THEN {offset} IS NOT NULL"),
        });
    }
    sql.push(" END");
}

/// Whether the user name or password of `url` holds a character that ends it early when
/// written as it is: `#` starts a fragment, `?` a query, `/` a path, and `@` the host.
fn needs_percent_encoding(url: &str) -> bool {
    let Some((_, rest)) = url.split_once("://") else {
        return false;
    };
    match rest.rfind('@') {
        Some(at) => rest[..at].contains(['#', '?', '/', '@']),
        None => false,
    }
}

/// How a failure to write the record of prunes is said.
fn record_error() -> String {
    format!(
        "could not record the prune in {PRUNES_TABLE} (columns consumer TEXT, cutoff \
         VARCHAR(40), pruned_at VARCHAR(40))"
    )
}

/// Why a transaction failed, whether trying it again may pass ([`is_transient`]), and whether
/// the connection was lost or refused ([`is_connection_lost`]).
pub struct BatchError {
    pub error: anyhow::Error,
    pub transient: bool,
    pub connection_lost: bool,
}

impl From<sqlx::Error> for BatchError {
    fn from(error: sqlx::Error) -> Self {
        BatchError::from_sqlx(error)
    }
}

impl BatchError {
    /// A failure that trying again would repeat: a message without a value, say.
    pub fn final_error(error: anyhow::Error) -> BatchError {
        BatchError {
            error,
            transient: false,
            connection_lost: false,
        }
    }

    pub fn from_sqlx(error: sqlx::Error) -> BatchError {
        BatchError {
            transient: is_transient(&error),
            connection_lost: is_connection_lost(&error),
            error: error.into(),
        }
    }

    /// An error with context, classified by the sqlx error it carries, if any.
    pub fn from_anyhow(error: anyhow::Error) -> BatchError {
        let cause = error.downcast_ref::<sqlx::Error>();
        BatchError {
            transient: cause.is_some_and(is_transient),
            connection_lost: cause.is_some_and(is_connection_lost),
            error,
        }
    }
}

/// The database driver's errors among an error's causes, outermost first.
pub fn sqlx_causes(error: &anyhow::Error) -> impl Iterator<Item = &sqlx::Error> {
    error
        .chain()
        .filter_map(|cause| cause.downcast_ref::<sqlx::Error>())
}

/// Whether PostgreSQL refused text its database's encoding has no character for (22P05).
fn is_untranslatable(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|database| database.code())
        .as_deref()
        == Some("22P05")
}

/// Whether a read-only transaction of [`Store::read_snapshot`] failed because a table it
/// reads was created or changed after it began (MySQL's 1412, "Table definition has
/// changed, please retry transaction"), or between a statement's prepare and its execute
/// (1615, "Prepared statement needs to be re-prepared"): a new one will see the table.
pub fn is_outdated_snapshot(error: &anyhow::Error) -> bool {
    sqlx_causes(error)
        .filter_map(|error| error.as_database_error())
        .filter_map(|database| database.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>())
        .any(|mysql| matches!(mysql.number(), 1412 | 1615))
}

/// Whether a statement ran past the session's time limit: PostgreSQL's `statement_timeout`
/// (57014, which a cancel shares), MariaDB's `max_statement_time` (1969), MySQL's
/// `max_execution_time` (3024).
/// Whether the statement was stopped by a cancel or a time limit: PostgreSQL's
/// `query_canceled` (a `statement_timeout`, `pg_cancel_backend`), MySQL's `KILL QUERY` and
/// its statement time limits (MariaDB's `max_statement_time`, MySQL's `max_execution_time`).
pub fn is_cancelled(error: &sqlx::Error) -> bool {
    let Some(database) = error.as_database_error() else {
        return false;
    };
    match database.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
        Some(mysql) => matches!(mysql.number(), 1317 | 1969 | 3024),
        None => database.code().as_deref() == Some("57014"),
    }
}

/// Whether the server refused a write because the session takes none: PostgreSQL's
/// `read_only_sql_transaction` (a standby, or `default_transaction_read_only`), whose
/// message names the statement's tag (`cannot execute SELECT …` for a `WITH … DELETE`);
/// MySQL's read-only transaction, and its server started `--read-only`.
pub fn is_read_only(error: &sqlx::Error) -> bool {
    let Some(database) = error.as_database_error() else {
        return false;
    };
    match database.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
        Some(mysql) => {
            mysql.number() == 1792
                || (mysql.number() == 1290 && mysql.message().contains("--read-only"))
        }
        None => database.code().as_deref() == Some("25006"),
    }
}

pub fn is_statement_timeout(error: &anyhow::Error) -> bool {
    sqlx_causes(error)
        .filter_map(|error| error.as_database_error())
        .any(
            |database| match database.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
                Some(mysql) => matches!(mysql.number(), 1969 | 3024),
                None => database.code().as_deref() == Some("57014"),
            },
        )
}

/// Whether trying the same transaction again may pass: a deadlock, a serialization failure,
/// a lock wait that timed out, a busy SQLite file.
pub fn is_transient(error: &sqlx::Error) -> bool {
    if is_deadlock(error) {
        return true;
    }
    let Some(database) = error.as_database_error() else {
        return false;
    };
    if database
        .try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
        .is_some()
    {
        return is_lock_wait_timeout(error);
    }
    // SQLite's busy and locked codes, plain and extended.
    database.code().as_deref().is_some_and(|code| {
        is_transient_sqlstate(code) || matches!(code, "5" | "6" | "517" | "261" | "262")
    })
}

/// Whether a statement waited for a lock longer than the session allows: PostgreSQL's
/// `lock_timeout` (55P03), MySQL's lock wait timeout (1205, by number: its SQLSTATE is the
/// generic HY000).
pub fn is_lock_wait_timeout(error: &sqlx::Error) -> bool {
    let Some(database) = error.as_database_error() else {
        return false;
    };
    match database.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
        Some(mysql) => mysql.number() == 1205,
        None => database.code().as_deref() == Some("55P03"),
    }
}

/// PostgreSQL's SQLSTATEs of a transaction that may pass when tried again: a deadlock or a
/// serialization failure ([`is_deadlock_sqlstate`]), or a lock wait that ran out of
/// `lock_timeout` (55P03).
pub fn is_transient_sqlstate(code: &str) -> bool {
    is_deadlock_sqlstate(code) || code == "55P03"
}

/// PostgreSQL's SQLSTATEs of a transaction rolled back to break a deadlock (40P01) or a
/// serialization conflict (40001).
fn is_deadlock_sqlstate(code: &str) -> bool {
    matches!(code, "40P01" | "40001")
}

/// Whether the server rolled the transaction back to break a deadlock or a serialization
/// conflict: trying it again at once may pass, unlike after a lock wait that timed out.
pub fn is_deadlock(error: &sqlx::Error) -> bool {
    let Some(database) = error.as_database_error() else {
        return false;
    };
    if let Some(mysql) = database.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
        return mysql.number() == 1213;
    }
    database.code().as_deref().is_some_and(is_deadlock_sqlstate)
}

/// [`is_connection_lost`] of a server's session: what was in flight may or may not have
/// been done. Not SQLite's "connection", a file in this process, whose failures (a full
/// disk, say) lose no outcome and pass only once fixed.
pub fn is_server_connection_lost(error: &sqlx::Error) -> bool {
    let of_sqlite = match error {
        sqlx::Error::Database(database) => database
            .try_downcast_ref::<sqlx::sqlite::SqliteError>()
            .is_some(),
        _ => false,
    };
    is_connection_lost(error) && !of_sqlite
}

/// Whether the error says that the database is out of reach or ended the session, rather
/// than that a statement failed: no message is at fault, so trying messages one by one or
/// skipping them cannot help. The pool's timeout is one: it retries a refused connection until
/// `--connect-timeout`, and replay never asks it for more connections than it holds.
pub fn is_connection_lost(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(database) => {
            if let Some(mysql) = database.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
                return is_mysql_connection_error(mysql.number());
            }
            let Some(code) = database.code() else {
                return false;
            };
            if database
                .try_downcast_ref::<sqlx::sqlite::SqliteError>()
                .is_some()
            {
                // SQLite's result codes (extended ones carry the primary in the low byte): an
                // I/O error, a full disk, a file it cannot open.
                return code
                    .parse::<i32>()
                    .is_ok_and(|n| matches!(n & 0xff, 10 | 13 | 14));
            }
            // A SQLSTATE may be all digits (28000): told apart by the type, not the text.
            is_connection_sqlstate(&code)
        }
        _ => false,
    }
}

/// PostgreSQL's SQLSTATEs that end or refuse a session: connection exceptions (08), a refused
/// login (28), a database that is not there (3D000), too many connections (53300), a server
/// shutting down or starting up (57P01-57P03).
pub fn is_connection_sqlstate(code: &str) -> bool {
    code.starts_with("08")
        || code.starts_with("28")
        || matches!(code, "3D000" | "53300" | "57P01" | "57P02" | "57P03")
}

/// MariaDB's and MySQL's error numbers that end or refuse a session: too many connections
/// (1040), access denied (1044, 1045), unknown database (1049), shutdown in progress (1053),
/// a host blocked or not allowed (1129, 1130), a locked account (MySQL 3118, MariaDB 4151),
/// connection killed (1927), a session ended for being idle (4031), and the client's own
/// lost-connection errors (2002-2013).
fn is_mysql_connection_error(number: u16) -> bool {
    matches!(
        number,
        1040 | 1044 | 1045 | 1049 | 1053 | 1129 | 1130 | 1927 | 3118 | 4031 | 4151 | 2002..=2013
    )
}

/// The row estimate of the top node of a plan, one line per row as PostgreSQL's `EXPLAIN`
/// returns it.
fn plan_estimate(plan: &[String]) -> anyhow::Result<i64> {
    let top = plan.first().map(String::as_str).unwrap_or_default();
    planned_rows(top).ok_or_else(|| anyhow!("PostgreSQL's plan gave no row estimate: {top}"))
}

/// The row estimate of a plan node as PostgreSQL's `EXPLAIN` prints it: `… rows=123 …`.
fn planned_rows(line: &str) -> Option<i64> {
    let rest = &line[line.find(" rows=")? + " rows=".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn optional_stored_time(row: &AnyRow, index: usize) -> anyhow::Result<Option<StoredTime>> {
    Ok(row
        .try_get::<Option<String>, _>(index)?
        .as_deref()
        .map(StoredTime::read))
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_compare_as_the_collation_of_event_id_pads() {
        for (collation, ignores) in [
            (Some("utf8mb4_bin"), true),
            (Some("utf8mb4_general_ci"), true),
            (Some("utf8mb4_nopad_bin"), false),
            (Some("utf8mb4_0900_ai_ci"), false),
            (Some("utf8mb4_0900_bin"), false),
            (None, false),
        ] {
            let key = IdKey::of_mysql_collation(collation);
            assert_eq!(key.ignores_trailing_spaces, ignores, "{collation:?}");
            assert_eq!(key.of("x  "), if ignores { "x" } else { "x  " });
        }
    }

    use super::*;

    #[test]
    fn a_lost_or_refused_connection_is_told_from_a_failed_statement() {
        let io = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(is_connection_lost(&sqlx::Error::Io(io)));
        assert!(is_connection_lost(&sqlx::Error::PoolTimedOut));
        assert!(is_connection_lost(&sqlx::Error::PoolClosed));
        assert!(!is_connection_lost(&sqlx::Error::RowNotFound));
        assert!(!is_connection_lost(&sqlx::Error::ColumnNotFound(
            "x".into()
        )));
        assert!(!is_transient(&sqlx::Error::PoolTimedOut));
    }

    /// A server's lost session leaves what was in flight unknown; SQLite's failure to open
    /// or write its file (here: no such folder, code 14) does not.
    #[tokio::test]
    async fn only_a_server_loses_an_outcome_with_its_connection() {
        use sqlx::ConnectOptions;
        let io = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(is_server_connection_lost(&sqlx::Error::Io(io)));
        assert!(!is_server_connection_lost(&sqlx::Error::RowNotFound));
        let unopened = sqlx::sqlite::SqliteConnectOptions::new()
            .filename("/nonexistent-folder/inbox.db")
            .create_if_missing(true)
            .connect()
            .await
            .err()
            .unwrap();
        assert!(is_connection_lost(&unopened), "{unopened}");
        assert!(!is_server_connection_lost(&unopened), "{unopened}");
    }

    #[test]
    fn reserved_characters_in_a_password_are_found() {
        assert!(needs_percent_encoding(
            "postgres://app:ab#cd@127.0.0.1:5432/db"
        ));
        assert!(needs_percent_encoding("mysql://app:a/b?c@db/x"));
        assert!(needs_percent_encoding("postgres://app:p@ss@db/x"));
        assert!(!needs_percent_encoding(
            "postgres://app:ab%23cd@127.0.0.1:5432/db"
        ));
        assert!(!needs_percent_encoding(
            "postgres://app@/db?host=/run/postgresql"
        ));
        assert!(!needs_percent_encoding(
            "postgres:///db?host=/run/postgresql"
        ));
        for code in [
            "08006", "08P01", "28000", "28P01", "3D000", "53300", "57P01", "57P03",
        ] {
            assert!(is_connection_sqlstate(code), "{code}");
        }
        // A failed statement: unique violation, check violation, bad syntax, no permission,
        // a deadlock, a statement timeout.
        for code in ["23505", "23514", "42601", "42501", "40P01", "57014"] {
            assert!(!is_connection_sqlstate(code), "{code}");
        }
        assert!(is_mysql_connection_error(1045));
        assert!(is_mysql_connection_error(2013));
        assert!(is_mysql_connection_error(4151));
        assert!(!is_mysql_connection_error(1062));
        assert!(!is_mysql_connection_error(1213));
    }

    #[test]
    fn plan_row_estimates_are_read_off_explain() {
        let top = "Index Only Scan using processed_messages_consumer_processed_at_idx on \
                   processed_messages  (cost=0.42..12547.42 rows=254800 width=4)";
        assert_eq!(planned_rows(top), Some(254_800));
        assert_eq!(
            planned_rows("Result  (cost=0.00..0.01 rows=1 width=4)"),
            Some(1)
        );
        assert_eq!(planned_rows("Seq Scan on t"), None);
        assert_eq!(planned_rows(""), None);
    }

    #[test]
    fn column_names_compare_as_the_dialect_does() {
        let names = vec!["Consumer".to_string(), "event_id".to_string()];
        let folded = TableColumns {
            names: names.clone(),
            case_sensitive: false,
        };
        assert!(folded.contains("consumer"));
        assert!(folded.contains("EVENT_ID"));
        assert!(!folded.contains("topic"));
        let exact = TableColumns {
            names,
            case_sensitive: true,
        };
        assert!(!exact.contains("consumer"));
        assert!(exact.contains("Consumer"));
        assert!(exact.contains("event_id"));
    }

    #[test]
    fn schemes_choose_the_backend() {
        for (url, backend) in [
            ("sqlite://inbox.db", Backend::Sqlite),
            ("sqlite:inbox.db", Backend::Sqlite),
            ("postgres://u@h/db", Backend::Postgres),
            ("postgresql://u@h/db", Backend::Postgres),
            ("mysql://u@h/db", Backend::Mysql),
            ("MariaDB://u@h/db", Backend::Mysql),
        ] {
            assert_eq!(DatabaseUrl::parse(url).unwrap().backend, backend, "{url}");
        }
    }

    #[test]
    fn unknown_scheme_lists_the_supported_ones_without_the_password() {
        let error = DatabaseUrl::parse("redis://user:hunter2@h:6379").unwrap_err();
        assert!(crate::error::is_usage(&error));
        let message = error.to_string();
        assert!(message.contains("sqlite://, postgres://"), "{message}");
        assert!(!message.contains("hunter2"), "{message}");
    }

    #[test]
    fn a_server_reached_by_socket_is_named_by_its_path() {
        for (text, shown) in [
            (
                "postgres:///inbox?host=/var/run/postgresql&user=app",
                "PostgreSQL server at socket /var/run/postgresql (database 'inbox', user 'app')",
            ),
            (
                "postgres://app:pw@%2Frun%2Fpostgresql/inbox",
                "PostgreSQL server at socket /run/postgresql (database 'inbox', user 'app')",
            ),
            (
                "mysql://root@localhost/inbox?socket=/run/mysqld/mysqld.sock",
                "MySQL server at socket /run/mysqld/mysqld.sock (database 'inbox', user 'root')",
            ),
        ] {
            assert_eq!(DatabaseUrl::parse(text).unwrap().endpoint, shown, "{text}");
        }
        // Credentials need a host: the error says how to name a socket instead.
        let error =
            DatabaseUrl::parse("postgres://app:hunter2@/inbox?host=/run/postgresql").unwrap_err();
        assert!(crate::error::is_usage(&error));
        let message = error.to_string();
        assert!(
            message.starts_with(
                "invalid database URL 'postgres://***@/inbox?host=/run/postgresql': empty \
                 host; for a Unix socket, give its folder as the host, percent-encoded"
            ),
            "{message}"
        );
    }

    #[test]
    fn passwords_never_reach_the_displayed_forms() {
        let url = DatabaseUrl::parse("postgres://app:hunter2@db.example:6543/inbox").unwrap();
        assert_eq!(url.redacted, "postgres://app:***@db.example:6543/inbox");
        assert_eq!(
            url.endpoint,
            "PostgreSQL server db.example:6543 (database 'inbox', user 'app')"
        );
        let url = DatabaseUrl::parse("postgres://db.example/inbox?user=app&password=pw").unwrap();
        assert_eq!(
            url.endpoint,
            "PostgreSQL server db.example:5432 (database 'inbox', user 'app')"
        );
        // Named as the server gets them, not percent-encoded.
        let url = DatabaseUrl::parse("postgres://app%40corp:pw@db.example/in%20box").unwrap();
        assert_eq!(
            url.endpoint,
            "PostgreSQL server db.example:5432 (database 'in box', user 'app@corp')"
        );
        // The user the driver connects as: the query's on PostgreSQL; on MySQL, which reads
        // none from the query, refused.
        let url = DatabaseUrl::parse("postgres://app@db.example/inbox?user=other").unwrap();
        assert_eq!(
            url.endpoint,
            "PostgreSQL server db.example:5432 (database 'inbox', user 'other')"
        );
        assert!(DatabaseUrl::parse("mysql://db.example/inbox?user=other").is_err());
        let url = DatabaseUrl::parse("mysql://db.example/inbox").unwrap();
        assert_eq!(
            url.endpoint,
            "MySQL server db.example:3306 (database 'inbox', the driver's default user)"
        );
        let url = DatabaseUrl::parse("postgres://db.example").unwrap();
        assert_eq!(
            url.endpoint,
            "PostgreSQL server db.example:5432 (the user's database by default, the driver's \
             default user)"
        );
        assert_eq!(redact_url("mysql://a:b@c@host/db"), "mysql://a:***@host/db");
        let url = DatabaseUrl::parse(
            "postgres://app:pw1@db/inbox?sslmode=require&password=pw2&sslpassword=pw3",
        )
        .unwrap();
        assert_eq!(
            url.redacted,
            "postgres://app:***@db/inbox?sslmode=require&password=***&sslpassword=***"
        );
        // libpq's own parameter is ignored and named; a typo is refused; so is a TLS mode
        // the driver does not know, in any case the driver takes.
        assert_eq!(url.ignored_parameters, ["sslpassword"]);
        let url = DatabaseUrl::parse("postgres://db/inbox?options[search_path]=a&SSLMODE=x");
        assert!(url.is_err_and(|error| error.to_string().contains("'SSLMODE' is no TLS setting")));
        // Another driver's parameters are ignored, each named once; node-postgres' ssl=true
        // is refused with what it means here.
        let url = DatabaseUrl::parse(
            "postgres://db/i?schema=public&connect_timeout=1&pgbouncer=true&connect_timeout=2",
        )
        .unwrap();
        assert_eq!(
            url.ignored_parameters,
            ["schema", "connect_timeout", "pgbouncer"]
        );
        let refused = DatabaseUrl::parse("postgres://db/i?ssl=true").unwrap_err();
        assert!(refused
            .to_string()
            .ends_with("(ssl=true is sslmode=require)"));
        // Nor is a TLS setting by another name, or one with a space or a look-alike letter.
        for url in [
            "postgres://db/i?requiressl=1",
            "postgres://db/i?tls=true",
            "postgres://db/i?%20sslmode=verify-full",
            "postgres://db/i?+sslmode=verify-full",
            "postgres://db/i?%EF%BD%93slmode=require",
        ] {
            let refused = DatabaseUrl::parse(url).unwrap_err();
            assert!(crate::error::is_usage(&refused), "{url}");
        }
        // The values of ignored parameters are not shown: no name tells them secret or not.
        let url = DatabaseUrl::parse("postgres://u:pw@db/i?token=t0k&sslmode=require").unwrap();
        assert_eq!(
            url.redacted,
            "postgres://u:***@db/i?token=***&sslmode=require"
        );
        for (url, passes) in [
            (
                "postgres://db/i?sslmode=Verify-Full&options[search_path]=a",
                true,
            ),
            ("postgres://db/i?ssl-mode=required", false),
            ("mysql://db/i?sslmode=VERIFY_IDENTITY", true),
            ("mysql://db/i?ssl-mode=verify-full", false),
        ] {
            let parsed = DatabaseUrl::parse(url);
            assert_eq!(parsed.is_ok(), passes, "{url}");
            if let Ok(parsed) = parsed {
                assert!(parsed.ignored_parameters.is_empty(), "{url}");
            }
        }
        // MySQL's driver takes no password from the query: refused, and redacted as it is.
        let refused = DatabaseUrl::parse("mysql://root@db/inbox?password=pw")
            .unwrap_err()
            .to_string();
        assert!(
            refused.starts_with(
                "the database URL's parameter 'password' is not one a MySQL URL takes; expected \
                 one of ssl-mode, "
            ) && refused.ends_with(
                "(the user and password go before the host: mysql://USER:PASSWORD@host/db)"
            ),
            "{refused}"
        );
        assert!(!refused.contains("pw"), "{refused}");
        assert!(
            DatabaseUrl::parse("mysql://root@db/inbox?ssl-mode=disabled&charset=utf8mb4").is_ok()
        );
        assert_eq!(
            redact_url("mysql://root@db/inbox?password=pw"),
            "mysql://root@db/inbox?password=***"
        );
        assert_eq!(redact_url("not a url://x:y@z"), "not a url://***@z");
        // libpq's key=value strings, which are not URLs.
        assert_eq!(
            redact_url("host=127.0.0.1 user=postgres password=s3cret dbname=x"),
            "host=127.0.0.1 user=postgres password=*** dbname=x"
        );
        assert_eq!(
            redact_url("host=db password='a b\\' c' sslpassword=k"),
            "host=db password=*** sslpassword=***"
        );
        assert_eq!(redact_url("password='unterminated"), "password=***");
        assert_eq!(redact_url("user=a;pwd=b&x=1"), "user=a;pwd=***&x=1");
        assert_eq!(redact_url("a=b=c password=="), "a=b=c password=***");
        // Spaces around `=`, and a quote written twice inside quotes.
        assert_eq!(
            redact_url("host=db password = s3cret dbname=x"),
            "host=db password = *** dbname=x"
        );
        assert_eq!(redact_url("password =s3cret"), "password =***");
        assert_eq!(redact_url("password= s3cret x=1"), "password= *** x=1");
        assert_eq!(redact_url("password='it''s' x=1"), "password=*** x=1");
    }

    #[test]
    fn servers_are_probed_over_tcp_unless_reached_by_socket() {
        let tcp = |text: &str| DatabaseUrl::parse(text).unwrap().tcp_address;
        assert_eq!(
            tcp("postgres://u:p@db.example:6432/x"),
            Some(("db.example".to_string(), 6432))
        );
        assert_eq!(tcp("postgres://[::1]/x"), Some(("::1".to_string(), 5432)));
        assert_eq!(
            tcp("mysql://root@127.0.0.1/x"),
            Some(("127.0.0.1".to_string(), 3306))
        );
        assert_eq!(tcp("postgres:///x?host=/var/run/postgresql"), None);
        assert_eq!(tcp("postgres://%2Fvar%2Frun%2Fpostgresql/x"), None);
        assert_eq!(
            tcp("mysql://root@localhost/x?socket=/run/mysqld/mysqld.sock"),
            None
        );
        assert_eq!(tcp("sqlite://inbox.db"), None);
    }

    #[test]
    fn mariadb_scheme_connects_as_mysql() {
        let url = DatabaseUrl::parse("mariadb://root@127.0.0.1:3306/test").unwrap();
        assert!(url.connect.starts_with("mysql://"));
    }

    #[test]
    fn placeholders_follow_the_dialect_in_text_order() {
        let mut pg = SqlBuilder::new(&postgres::DIALECT);
        pg.push("a = ").param().push(" AND t < ").timestamp_param();
        assert_eq!(pg.build(), "a = $1 AND t < CAST($2 AS timestamptz)");
        let mut my = SqlBuilder::new(&mysql::DIALECT);
        my.push("a = ").param().push(" AND t < ").timestamp_param();
        assert_eq!(my.build(), "a = ? AND t < CAST(? AS DATETIME(6))");
        let mut values = SqlBuilder::new(&postgres::DIALECT);
        values.push("(").param().push("), (").params(3).push(")");
        assert_eq!(values.build(), "($1), ($2, $3, $4)");
        let mut rows = SqlBuilder::new(&postgres::DIALECT);
        assert_eq!(rows.value_rows(2, 2).build(), "($1, $2), ($3, $4)");
        let mut none = SqlBuilder::new(&mysql::DIALECT);
        assert_eq!(none.params(0).build(), "");
        let mut unseen = SqlBuilder::new(&postgres::DIALECT);
        unseen.push("c = ").unseen_param().push(" AND e = ").param();
        assert_eq!(unseen.build(), "c = (SELECT $1) AND e = $2");
    }
}
