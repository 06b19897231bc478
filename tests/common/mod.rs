//! Shared test harness: a fresh database per test on each backend, the binary run against it,
//! and helpers that read the schema back from each backend's catalog.

#![allow(dead_code)]

use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, Utc};
use inboxctl::store::{CreateMode, DatabaseUrl, Store};
use sqlx::{AnyPool, Row};

pub use inboxctl::store::Backend;

pub mod kafka;
pub mod terminal;

const POSTGRES_ADMIN: &str = "postgres://postgres@127.0.0.1:5432/test";
const MYSQL_ADMIN: &str = "mysql://root@127.0.0.1:3306/test";

static NEXT: AtomicUsize = AtomicUsize::new(0);

fn admin_url(backend: Backend) -> String {
    match backend {
        Backend::Postgres => {
            std::env::var("INBOXCTL_TEST_POSTGRES_URL").unwrap_or_else(|_| POSTGRES_ADMIN.into())
        }
        Backend::Mysql => {
            std::env::var("INBOXCTL_TEST_MYSQL_URL").unwrap_or_else(|_| MYSQL_ADMIN.into())
        }
        Backend::Sqlite => unreachable!("SQLite needs no server"),
    }
}

/// The URL of another database on the same server as `admin`.
fn with_database(admin: &str, database: &str) -> String {
    let mut url = url::Url::parse(admin).expect("admin URL parses");
    url.set_path(&format!("/{database}"));
    url.to_string()
}

/// Names of the files in a folder, sorted.
pub fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Sends `signal` (`INT`, `TERM`, `KILL`) to `target`, a pid or `-PGID`, as kill(1) does.
pub fn send_signal(signal: &str, target: &str) {
    let sent = std::process::Command::new("kill")
        .args([&format!("-{signal}"), "--", target])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{signal} {target}");
}

/// Waits for the child until `deadline`, killing it then; `None` when it had to be killed.
pub fn wait_until(child: &mut std::process::Child, deadline: std::time::Instant) -> Option<i32> {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status.code().unwrap_or(-1));
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A database of its own for one test, dropped when the test ends.
pub struct TestDb {
    pub backend: Backend,
    pub url: String,
    pub dir: tempfile::TempDir,
    database: Option<String>,
    store: Option<Store>,
    /// Roles made for this test (PostgreSQL), dropped after its database.
    roles: Vec<String>,
}

impl TestDb {
    pub async fn new(backend: Backend) -> TestDb {
        TestDb::with_options(backend, "").await
    }

    /// A database made with these options of `CREATE DATABASE` (an encoding, say).
    pub async fn with_options(backend: Backend, options: &str) -> TestDb {
        let dir = tempfile::tempdir().expect("temporary folder");
        let name = format!(
            "inboxctl_t{}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst),
            Utc::now().timestamp_subsec_micros()
        );
        let (url, database) = match backend {
            Backend::Sqlite => (format!("sqlite://{}/inbox.db", dir.path().display()), None),
            Backend::Postgres | Backend::Mysql => {
                let admin = admin_url(backend);
                let pool = admin_pool(&admin).await;
                sqlx::raw_sql(&format!("CREATE DATABASE {name} {options}"))
                    .execute(&pool)
                    .await
                    .unwrap_or_else(|error| panic!("create test database on {admin}: {error}"));
                pool.close().await;
                (with_database(&admin, &name), Some(name))
            }
        };
        TestDb {
            backend,
            url,
            dir,
            database,
            store: None,
            roles: Vec::new(),
        }
    }

    /// A login role of its own for this test, with these further attributes (PostgreSQL:
    /// `PASSWORD '…'`, `CONNECTION LIMIT 1`, or none; MySQL: none), dropped after the
    /// database, whatever became of the test. PostgreSQL's database takes the role's grants
    /// and objects with it; MySQL's user (`'name'@'%'`) takes its grants along.
    pub async fn role(&mut self, attributes: &str) -> String {
        let name = format!(
            "{}_role{}",
            self.database.as_ref().unwrap(),
            self.roles.len()
        );
        let sql = match self.backend {
            Backend::Postgres => format!("CREATE ROLE {name} LOGIN {attributes}"),
            Backend::Mysql => format!("CREATE USER '{name}'@'%' {attributes}"),
            Backend::Sqlite => panic!("SQLite has no roles"),
        };
        self.exec(&sql).await;
        self.roles.push(name.clone());
        name
    }

    /// The binary, pointed at this database, run in this test's folder.
    pub fn cmd(&self) -> assert_cmd::Command {
        let mut command = assert_cmd::Command::cargo_bin("inboxctl").expect("binary built");
        command
            .env("DATABASE_URL", &self.url)
            .current_dir(self.dir.path());
        command
    }

    /// The binary on this database, to be started as a process of its own.
    pub fn command(&self, args: &[&str]) -> std::process::Command {
        let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("inboxctl"));
        command
            .args(args)
            .env("DATABASE_URL", &self.url)
            .current_dir(self.dir.path());
        command
    }

    /// Starts the binary with these arguments, its stdout and stderr piped.
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        self.command(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Runs the binary with these arguments and returns what it did.
    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(self.cmd().args(args).output().expect("binary runs"))
    }

    /// The library's store on this database (creating a SQLite file if needed).
    pub async fn store(&mut self) -> &Store {
        if self.store.is_none() {
            let url = DatabaseUrl::parse(&self.url).unwrap();
            let store = Store::connect(
                &url,
                std::time::Duration::from_secs(10),
                CreateMode::CreateIfMissing,
            )
            .await
            .expect("connect to test database");
            self.store = Some(store);
        }
        self.store.as_ref().unwrap()
    }

    pub async fn pool(&mut self) -> AnyPool {
        self.store().await.pool().clone()
    }

    pub async fn exec(&mut self, sql: &str) {
        let pool = self.pool().await;
        sqlx::raw_sql(sql)
            .execute(&pool)
            .await
            .unwrap_or_else(|error| panic!("{sql}: {error}"));
    }

    /// PostgreSQL: a setting this database's new sessions get (`ALTER DATABASE … SET`).
    pub async fn set_database_default(&mut self, setting: &str, value: &str) {
        self.exec(&format!(
            "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET {setting} = %L', \
             current_database(), '{value}'); END $$"
        ))
        .await;
    }

    /// PostgreSQL: the TimeZone this database's new sessions get.
    pub async fn set_database_time_zone(&mut self, zone: &str) {
        self.set_database_default("timezone", zone).await;
    }

    /// PostgreSQL: a migrated inbox that the application made with `event_id uuid`.
    pub async fn uuid_inbox(&mut self) {
        self.exec(
            "CREATE TABLE processed_messages (consumer text NOT NULL, event_id uuid NOT NULL, \
             topic text, \"partition\" int, \"offset\" bigint, \
             processed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (consumer, event_id))",
        )
        .await;
        self.run(&["migrate", "run"]).ok();
    }

    pub async fn try_exec(&mut self, sql: &str) -> Result<(), sqlx::Error> {
        let pool = self.pool().await;
        sqlx::raw_sql(sql).execute(&pool).await.map(|_| ())
    }

    pub async fn scalar(&mut self, sql: &str) -> i64 {
        let pool = self.pool().await;
        sqlx::query_scalar::<_, i64>(sql)
            .fetch_one(&pool)
            .await
            .unwrap_or_else(|error| panic!("{sql}: {error}"))
    }

    pub async fn count(&mut self, table: &str) -> i64 {
        self.scalar(&format!("SELECT COUNT(*) FROM {table}")).await
    }

    pub async fn table_exists(&mut self, table: &str) -> bool {
        self.store().await.table_exists(table).await.unwrap()
    }

    /// Inserts 1,000 rows of consumer `known` into the migrated inbox and analyses it: the
    /// statistics then hold that one consumer alone, and PostgreSQL estimates any other at
    /// one row, as it does a consumer new since the last ANALYZE.
    pub async fn analyse_with_one_known_consumer(&mut self) {
        self.exec(
            "INSERT INTO processed_messages (consumer, event_id) \
             SELECT 'known', 'k' || i FROM generate_series(1, 1000) AS i",
        )
        .await;
        self.exec("ANALYZE processed_messages").await;
    }

    /// PostgreSQL: runs `command` (inboxctl) and returns the index tuples its sessions read
    /// from each index of the inbox, once those sessions have ended (a backend sends its
    /// statistics as it ends) and the statistics have arrived.
    pub async fn index_tuples_read_by(
        &mut self,
        command: impl FnOnce(&TestDb) -> Run,
    ) -> std::collections::BTreeMap<String, i64> {
        let pool = self.pool().await;
        sqlx::raw_sql("SELECT pg_stat_reset()")
            .execute(&pool)
            .await
            .unwrap();
        let started: String = sqlx::query_scalar("SELECT CAST(clock_timestamp() AS TEXT)")
            .fetch_one(&pool)
            .await
            .unwrap();
        let run = command(self);
        let mut read = Vec::new();
        for _ in 0..500 {
            // This test's own sessions are named inboxctl too, but started before.
            let sessions: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() \
                 AND application_name = 'inboxctl' AND backend_start >= CAST($1 AS timestamptz) \
                 AND pid <> pg_backend_pid()",
            )
            .bind(&started)
            .fetch_one(&pool)
            .await
            .unwrap();
            read = sqlx::query_as::<_, (String, i64, i64)>(
                "SELECT CAST(indexrelname AS TEXT), idx_scan, idx_tup_read FROM pg_stat_user_indexes \
                 WHERE relname = 'processed_messages'",
            )
            .fetch_all(&pool)
            .await
            .unwrap();
            if sessions == 0 && read.iter().any(|(_, scans, _)| *scans > 0) {
                return read
                    .into_iter()
                    .map(|(name, _, tuples)| (name, tuples))
                    .collect();
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!(
            "the index statistics of the run never arrived: {read:?}\n{}",
            run.stderr
        );
    }

    /// PostgreSQL: runs `sql` (several statements allowed) on a connection of its own that
    /// ends as the protocol asks, for tests that count sessions: the harness's store would
    /// keep its sessions open.
    pub async fn exec_and_disconnect(&self, sql: &str) {
        use sqlx::Connection;
        assert_eq!(self.backend, Backend::Postgres);
        let mut connection = sqlx::PgConnection::connect(&self.url).await.unwrap();
        sqlx::raw_sql(sql)
            .execute(&mut connection)
            .await
            .unwrap_or_else(|error| panic!("{sql}: {error}"));
        connection.close().await.unwrap();
    }

    /// PostgreSQL: once no session is left on this database, how many have ended and how
    /// many of them were abandoned (the client went away without its Terminate message).
    /// Asked on the admin database, so that asking opens no session here; this test's own
    /// store must not have been used.
    pub async fn ended_sessions(&self) -> (i64, i64) {
        assert_eq!(self.backend, Backend::Postgres);
        assert!(
            self.store.is_none(),
            "the test's own store keeps sessions open"
        );
        let pool = admin_pool(&admin_url(self.backend)).await;
        let database = self.database.as_deref().unwrap();
        for _ in 0..500 {
            // A backend reports its session as it exits, before it leaves pg_stat_activity.
            let (open, ended, abandoned) = sqlx::query_as::<_, (i64, i64, i64)>(
                "SELECT (SELECT COUNT(*) FROM pg_stat_activity WHERE datname = $1), \
                 CAST(sessions AS BIGINT), CAST(sessions_abandoned AS BIGINT) \
                 FROM pg_stat_database WHERE datname = $1",
            )
            .bind(database)
            .fetch_one(&pool)
            .await
            .unwrap();
            if open == 0 {
                pool.close().await;
                return (ended, abandoned);
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("sessions on {database} did not end");
    }

    /// Inserts rows into the migrated inbox, `processed_at` given exactly.
    pub async fn insert_rows(&mut self, rows: &[Row_]) {
        let store = self.store().await;
        let d = store.dialect;
        for chunk in rows.chunks(500) {
            let mut sql = store.sql();
            sql.push(&format!(
                "INSERT INTO processed_messages (consumer, event_id, topic, {}, {}, processed_at) VALUES ",
                d.quote("partition"),
                d.quote("offset")
            ));
            for (index, _) in chunk.iter().enumerate() {
                if index > 0 {
                    sql.push(", ");
                }
                sql.push("(")
                    .params(5)
                    .push(", ")
                    .timestamp_param()
                    .push(")");
            }
            let text = sql.build();
            let mut query = sqlx::query(&text);
            for row in chunk {
                query = query
                    .bind(row.consumer.clone())
                    .bind(row.event_id.clone())
                    .bind(row.topic.clone())
                    .bind(row.partition)
                    .bind(row.offset)
                    .bind(store.timestamp_param(row.processed_at));
            }
            query
                .execute(store.pool())
                .await
                .expect("insert inbox rows");
        }
    }

    /// The event ids left in the inbox, sorted.
    pub async fn event_ids(&mut self, consumer: &str) -> Vec<String> {
        let pool = self.pool().await;
        let mut sql = self.store().await.sql();
        sql.push("SELECT event_id FROM processed_messages WHERE consumer = ")
            .param()
            .push(" ORDER BY event_id");
        sqlx::query_scalar(&sql.build())
            .bind(consumer)
            .fetch_all(&pool)
            .await
            .unwrap()
    }

    /// The inbox's schema as the backend's catalog describes it.
    pub async fn schema(&mut self) -> Schema {
        let pool = self.pool().await;
        let strings = |sql: &'static str| {
            let pool = pool.clone();
            async move {
                sqlx::query(sql)
                    .fetch_all(&pool)
                    .await
                    .unwrap_or_else(|error| panic!("{sql}: {error}"))
            }
        };
        match self.backend {
            Backend::Postgres => {
                let columns = strings(
                    "SELECT column_name::text, data_type::text, is_nullable::text FROM information_schema.columns \
                     WHERE table_schema = current_schema() AND table_name = 'processed_messages' ORDER BY column_name",
                )
                .await
                .iter()
                .map(|r| (r.get::<String, _>(0), r.get::<String, _>(1), r.get::<String, _>(2) == "YES"))
                .collect();
                let primary_key = strings(
                    "SELECT pg_get_constraintdef(oid) FROM pg_constraint \
                     WHERE conrelid = 'processed_messages'::regclass AND contype = 'p'",
                )
                .await
                .iter()
                .map(|r| r.get::<String, _>(0))
                .collect();
                let indexes = strings(
                    "SELECT indexname::text, indexdef FROM pg_indexes \
                     WHERE schemaname = current_schema() AND tablename = 'processed_messages' ORDER BY indexname",
                )
                .await
                .iter()
                .map(|r| (r.get::<String, _>(0), r.get::<String, _>(1)))
                .collect();
                Schema {
                    columns,
                    primary_key,
                    indexes,
                }
            }
            Backend::Mysql => {
                let columns = strings(
                    "SELECT CONVERT(column_name USING utf8mb4), CONVERT(data_type USING utf8mb4), \
                            CONVERT(is_nullable USING utf8mb4) \
                     FROM information_schema.columns \
                     WHERE table_schema = DATABASE() AND table_name = 'processed_messages' ORDER BY column_name",
                )
                .await
                .iter()
                .map(|r| (text(r, 0), text(r, 1), text(r, 2) == "YES"))
                .collect();
                let keyed: Vec<(String, String)> = strings(
                    "SELECT CONVERT(index_name USING utf8mb4), \
                            CONVERT(GROUP_CONCAT(column_name ORDER BY seq_in_index SEPARATOR ', ') USING utf8mb4) \
                     FROM information_schema.statistics \
                     WHERE table_schema = DATABASE() AND table_name = 'processed_messages' \
                     GROUP BY index_name ORDER BY index_name",
                )
                .await
                .iter()
                .map(|r| (text(r, 0), text(r, 1)))
                .collect();
                let primary_key = keyed
                    .iter()
                    .filter(|(n, _)| n == "PRIMARY")
                    .map(|(_, c)| c.clone())
                    .collect();
                let indexes = keyed.into_iter().filter(|(n, _)| n != "PRIMARY").collect();
                Schema {
                    columns,
                    primary_key,
                    indexes,
                }
            }
            Backend::Sqlite => {
                let info = strings(
                    "SELECT name, type, \"notnull\", pk FROM pragma_table_info('processed_messages') ORDER BY name",
                )
                .await;
                let columns = info
                    .iter()
                    .map(|r| {
                        (
                            r.get::<String, _>(0),
                            r.get::<String, _>(1),
                            r.get::<i64, _>(2) == 0,
                        )
                    })
                    .collect();
                let mut key: Vec<(i64, String)> = info
                    .iter()
                    .filter(|r| r.get::<i64, _>(3) > 0)
                    .map(|r| (r.get::<i64, _>(3), r.get::<String, _>(0)))
                    .collect();
                key.sort();
                let primary_key = vec![key
                    .into_iter()
                    .map(|(_, name)| name)
                    .collect::<Vec<_>>()
                    .join(", ")];
                let indexes = strings(
                    "SELECT m.name, group_concat(i.name, ', ') FROM sqlite_master m, pragma_index_info(m.name) i \
                     WHERE m.type = 'index' AND m.tbl_name = 'processed_messages' AND m.sql IS NOT NULL \
                     GROUP BY m.name ORDER BY m.name",
                )
                .await
                .iter()
                .map(|r| (r.get::<String, _>(0), r.get::<String, _>(1)))
                .collect();
                Schema {
                    columns,
                    primary_key,
                    indexes,
                }
            }
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Some(database) = self.database.take() else {
            return;
        };
        let roles = std::mem::take(&mut self.roles);
        let admin = admin_url(self.backend);
        let backend = self.backend;
        // Drop runs inside the test's runtime; a runtime of its own on another thread does the work.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let pool = admin_pool(&admin).await;
                let sql = match backend {
                    Backend::Postgres => format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"),
                    _ => format!("DROP DATABASE IF EXISTS {database}"),
                };
                let _ = sqlx::raw_sql(&sql).execute(&pool).await;
                // Their grants went with the database.
                for role in roles {
                    let sql = match backend {
                        Backend::Mysql => format!("DROP USER IF EXISTS '{role}'@'%'"),
                        _ => format!("DROP ROLE IF EXISTS {role}"),
                    };
                    let _ = sqlx::raw_sql(&sql).execute(&pool).await;
                }
                pool.close().await;
            });
        })
        .join();
    }
}

/// MySQL's catalog answers some text columns as BLOB; read either.
fn text(row: &sqlx::any::AnyRow, index: usize) -> String {
    row.try_get::<String, _>(index)
        .unwrap_or_else(|_| String::from_utf8(row.get::<Vec<u8>, _>(index)).expect("utf-8"))
}

async fn admin_pool(admin: &str) -> AnyPool {
    sqlx::any::install_default_drivers();
    sqlx::pool::PoolOptions::new()
        .max_connections(1)
        .connect(admin)
        .await
        .unwrap_or_else(|error| {
            panic!("connect to {admin} (is the server up? see scripts/test.sh): {error}")
        })
}

/// A catalog's view of the inbox table: (column, type, nullable), primary key, (index, definition).
#[derive(Debug, PartialEq, Eq)]
pub struct Schema {
    pub columns: Vec<(String, String, bool)>,
    pub primary_key: Vec<String>,
    pub indexes: Vec<(String, String)>,
}

fn column(name: &str, kind: &str, nullable: bool) -> (String, String, bool) {
    (name.to_string(), kind.to_string(), nullable)
}

/// The schema DESIGN.md specifies, as each backend's catalog spells it.
pub fn expected_schema(backend: Backend) -> Schema {
    let index = |name: &str, definition: &str| (name.to_string(), definition.to_string());
    match backend {
        Backend::Postgres => Schema {
            columns: vec![
                column("consumer", "text", false),
                column("event_id", "text", false),
                column("offset", "bigint", true),
                column("partition", "integer", true),
                column("processed_at", "timestamp with time zone", false),
                column("topic", "text", true),
            ],
            primary_key: vec!["PRIMARY KEY (consumer, event_id)".into()],
            indexes: vec![
                index(
                    "processed_messages_consumer_coordinates_idx",
                    "CREATE INDEX processed_messages_consumer_coordinates_idx ON public.processed_messages USING btree (consumer, topic, partition, \"offset\")",
                ),
                index(
                    "processed_messages_consumer_processed_at_idx",
                    "CREATE INDEX processed_messages_consumer_processed_at_idx ON public.processed_messages USING btree (consumer, processed_at)",
                ),
                index(
                    "processed_messages_pkey",
                    "CREATE UNIQUE INDEX processed_messages_pkey ON public.processed_messages USING btree (consumer, event_id)",
                ),
            ],
        },
        Backend::Mysql => Schema {
            columns: vec![
                column("consumer", "varchar", false),
                column("event_id", "varchar", false),
                column("offset", "bigint", true),
                column("partition", "int", true),
                column("processed_at", "datetime", false),
                column("topic", "varchar", true),
            ],
            primary_key: vec!["consumer, event_id".into()],
            indexes: vec![
                index("processed_messages_consumer_coordinates_idx", "consumer, topic, partition, offset"),
                index("processed_messages_consumer_processed_at_idx", "consumer, processed_at"),
            ],
        },
        Backend::Sqlite => Schema {
            columns: vec![
                column("consumer", "TEXT", false),
                column("event_id", "TEXT", false),
                column("offset", "BIGINT", true),
                column("partition", "INTEGER", true),
                column("processed_at", "TIMESTAMP", false),
                column("topic", "TEXT", true),
            ],
            primary_key: vec!["consumer, event_id".into()],
            indexes: vec![
                index("processed_messages_consumer_coordinates_idx", "consumer, topic, partition, offset"),
                index("processed_messages_consumer_processed_at_idx", "consumer, processed_at"),
            ],
        },
    }
}

/// One inbox row to seed.
#[derive(Debug, Clone)]
pub struct Row_ {
    pub consumer: String,
    pub event_id: String,
    pub topic: Option<String>,
    pub partition: Option<i32>,
    pub offset: Option<i64>,
    pub processed_at: DateTime<Utc>,
}

/// The refusal of [`TestDb::uuid_inbox`]'s table by a command that compares event ids.
pub fn assert_refuses_uuid_event_ids(run: &Run) {
    assert!(
        run.stderr
            .starts_with("error: processed_messages.event_id in ")
            && run.stderr.contains(
                "is of type uuid; inboxctl looks up, loads and inserts event ids as text"
            ),
        "{}",
        run.stderr
    );
}

pub fn row(
    consumer: &str,
    event_id: &str,
    coordinates: Option<(&str, i32, i64)>,
    processed_at: DateTime<Utc>,
) -> Row_ {
    Row_ {
        consumer: consumer.into(),
        event_id: event_id.into(),
        topic: coordinates.map(|c| c.0.to_string()),
        partition: coordinates.map(|c| c.1),
        offset: coordinates.map(|c| c.2),
        processed_at,
    }
}

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Run {
    #[track_caller]
    pub fn ok(self) -> Self {
        assert_eq!(
            self.code, 0,
            "expected success\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    #[track_caller]
    pub fn code(self, code: i32) -> Self {
        assert_eq!(
            self.code, code,
            "expected exit {code}\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("not JSON ({error}):\n{}", self.stdout))
    }

    /// The body rows (not headers) of the tables printed, each as its cells, trimmed.
    pub fn table_rows(&self) -> Vec<Vec<String>> {
        let mut in_body = false;
        let mut rows = Vec::new();
        for line in self.stdout.lines() {
            if line.starts_with('┌') {
                in_body = false;
            } else if line.starts_with('╞') {
                in_body = true;
            } else if in_body && line.starts_with('│') {
                rows.push(
                    line.trim_matches('│')
                        .split('┆')
                        .map(|cell| cell.trim().to_string())
                        .collect(),
                );
            }
        }
        rows
    }
}

/// Runs the test body once per backend, each in a test of its own.
#[macro_export]
macro_rules! each_backend {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(Backend::Sqlite).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(Backend::Postgres).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mysql() {
                super::$name(Backend::Mysql).await;
            }
        }
    )*};
}
