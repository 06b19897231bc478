//! `migrate run | status | revert` against a fresh database on each backend.

mod common;

use common::*;
use inboxctl::store::InboxLayout;

/// Each migration's version and state as `migrate status --format json` gives them (exit 0).
fn migration_states(db: &TestDb) -> Vec<(i64, String)> {
    let status = db
        .run(&["migrate", "status", "--format", "json"])
        .code(0)
        .json();
    status["migrations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let version = m["version"].as_i64().unwrap();
            (version, m["state"].as_str().unwrap().to_string())
        })
        .collect()
}

async fn migrated_schema_is_exactly_the_design(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let run = db.run(&["migrate", "run"]).ok();
    assert!(run.stdout.contains("Applied 1/"), "{}", run.stdout);
    assert!(run.stdout.contains("Applied 2/"), "{}", run.stdout);
    assert_eq!(db.schema().await, expected_schema(backend));
    assert_eq!(db.count("inboxctl_migrations").await, 2);

    let states = migration_states(&db);
    assert_eq!(states, [(1, "applied".into()), (2, "applied".into())]);
    let table = db.run(&["migrate", "status"]).ok();
    let rows = table.table_rows();
    assert_eq!(rows.len(), 2);
    assert_eq!((rows[0][0].as_str(), rows[0][2].as_str()), ("1", "applied"));
    assert_eq!((rows[1][0].as_str(), rows[1][2].as_str()), ("2", "applied"));

    // A second run changes nothing: same bookkeeping, same schema.
    let before = db
        .run(&["migrate", "status", "--format", "json"])
        .ok()
        .stdout;
    let again = db.run(&["migrate", "run"]).ok();
    assert!(
        again.stdout.starts_with("Nothing to do"),
        "{}",
        again.stdout
    );
    assert_eq!(
        db.run(&["migrate", "status", "--format", "json"])
            .ok()
            .stdout,
        before
    );
    assert_eq!(db.schema().await, expected_schema(backend));
}

async fn dry_run_prints_sql_and_changes_nothing(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    if backend != Backend::Sqlite {
        // Servers: connect first so the dry run has a database to look at.
        db.store().await;
    }
    let run = db.run(&["migrate", "run", "--dry-run"]).ok();
    assert!(
        run.stdout.contains("would apply migration 1"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("would apply migration 2"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("CREATE TABLE IF NOT EXISTS processed_messages"),
        "{}",
        run.stdout
    );
    if backend == Backend::Sqlite {
        assert!(
            !db.dir.path().join("inbox.db").exists(),
            "a dry run created the database file"
        );
        db.store().await;
    }
    assert!(!db.table_exists("processed_messages").await);
    assert!(!db.table_exists("inboxctl_migrations").await);

    let json = db
        .run(&["migrate", "run", "--dry-run", "--format", "json"])
        .ok()
        .json();
    assert_eq!(json["dry_run"], true);
    assert_eq!(json["migrations"].as_array().unwrap().len(), 2);

    // After one migration, the dry run shows only the other.
    db.run(&["migrate", "run"]).ok();
    db.run(&["migrate", "revert"]).ok();
    let rest = db.run(&["migrate", "run", "--dry-run"]).ok();
    assert!(!rest.stdout.contains("migration 1 "), "{}", rest.stdout);
    assert!(
        rest.stdout.contains("would apply migration 2"),
        "{}",
        rest.stdout
    );
    assert_eq!(db.count("inboxctl_migrations").await, 1);
}

async fn revert_steps_back_and_to_zero_returns_to_empty(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    // A prune leaves its record, which describes the inbox's rows and goes with the table.
    let old = chrono::Utc::now() - chrono::Duration::days(2);
    db.insert_rows(&[row("c1", "old", None, old)]).await;
    db.run(&["prune", "--older-than", "1d", "--yes"]).ok();
    assert_eq!(db.count("inboxctl_prunes").await, 1);

    let dry = db
        .run(&["migrate", "revert", "--to", "0", "--dry-run"])
        .ok();
    assert!(
        dry.stdout.contains("would revert migration 2"),
        "{}",
        dry.stdout
    );
    assert!(
        dry.stdout
            .contains("DROP TABLE processed_messages;\nDROP TABLE IF EXISTS inboxctl_prunes;"),
        "{}",
        dry.stdout
    );
    // Going to 0, migration 2's own down step is not run (the DROP TABLE undoes it).
    assert!(
        dry.stdout
            .contains("-- nothing to run: migration 1 drops the table"),
        "{}",
        dry.stdout
    );
    let one_step = db.run(&["migrate", "revert", "--dry-run"]).ok();
    assert!(
        one_step
            .stdout
            .contains("DROP INDEX processed_messages_consumer_coordinates_idx")
            || one_step
                .stdout
                .contains("DROP INDEX processed_messages_consumer_coordinates_idx,")
            || one_step.stdout.contains("processed_messages_inboxctl_old"),
        "{}",
        one_step.stdout
    );
    assert_eq!(db.schema().await, expected_schema(backend));

    let one = db.run(&["migrate", "revert"]).ok();
    assert!(one.stdout.contains("Reverted 2/"), "{}", one.stdout);
    assert_eq!(
        db.store().await.inbox_layout().await.unwrap(),
        InboxLayout::Classic
    );
    assert_eq!(db.count("inboxctl_migrations").await, 1);

    // Dropping a table that holds rows needs --yes when nobody can be asked.
    db.exec("INSERT INTO processed_messages (event_id, consumer) VALUES ('e1', 'c1')")
        .await;
    let refused = db.run(&["migrate", "revert", "--to", "0"]).code(2);
    assert!(refused.stderr.contains("pass --yes"), "{}", refused.stderr);
    assert_eq!(db.count("processed_messages").await, 1);
    // A version no migration has is no "nothing to revert".
    let unknown = db.run(&["migrate", "revert", "--to", "5"]).code(2);
    assert_eq!(
        unknown.stderr,
        "error: --to 5: there is no migration 5; the migrations are 1 to 2 (0 reverts everything)\n"
    );

    assert_eq!(db.count("inboxctl_prunes").await, 1);
    db.run(&["migrate", "revert", "--to", "0", "--yes"]).ok();
    assert!(!db.table_exists("processed_messages").await);
    assert!(!db.table_exists("inboxctl_prunes").await);
    assert_eq!(db.count("inboxctl_migrations").await, 0);
    let nothing = db.run(&["migrate", "revert"]).ok();
    assert!(
        nothing.stdout.contains("Nothing to revert"),
        "{}",
        nothing.stdout
    );

    // And forward again to the same schema.
    db.run(&["migrate", "run"]).ok();
    assert_eq!(db.schema().await, expected_schema(backend));
}

async fn classic_table_is_adopted_with_every_row(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let classic = match backend {
        Backend::Postgres => "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, processed_at TIMESTAMPTZ NOT NULL DEFAULT now())",
        Backend::Mysql => "CREATE TABLE processed_messages (event_id VARCHAR(255) PRIMARY KEY, consumer VARCHAR(255) NOT NULL, processed_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP)",
        Backend::Sqlite => "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, processed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)",
    };
    db.exec(classic).await;
    let pool = db.pool().await;
    for chunk in 0..20 {
        let values: Vec<String> = (0..500)
            .map(|i| {
                let n = chunk * 500 + i;
                format!("('evt-{n:05}', 'consumer-{}')", n % 3)
            })
            .collect();
        sqlx::raw_sql(&format!(
            "INSERT INTO processed_messages (event_id, consumer) VALUES {}",
            values.join(", ")
        ))
        .execute(&pool)
        .await
        .unwrap();
    }
    let fingerprint = "SELECT COUNT(*), COUNT(DISTINCT event_id), COUNT(DISTINCT consumer) FROM processed_messages";
    let before: (i64, i64, i64) = sqlx::query_as(fingerprint).fetch_one(&pool).await.unwrap();
    assert_eq!(before, (10_000, 10_000, 3));

    let run = db.run(&["migrate", "run"]).ok();
    assert!(
        run.stderr.contains(
            "adopted the classic processed_messages table in place, keeping its 10000 rows"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(db.schema().await, expected_schema(backend));
    let after: (i64, i64, i64) = sqlx::query_as(fingerprint).fetch_one(&pool).await.unwrap();
    assert_eq!(after, before);
    assert_eq!(db.event_ids("consumer-1").await.len(), 3_333);
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM processed_messages WHERE event_id = 'evt-00007' AND consumer = 'consumer-1'").await,
        1
    );

    // The new key: one event for two consumers is fine, the same pair twice is not.
    db.exec("INSERT INTO processed_messages (consumer, event_id) VALUES ('c1', 'e')")
        .await;
    db.exec("INSERT INTO processed_messages (consumer, event_id) VALUES ('c2', 'e')")
        .await;
    let duplicate = db
        .try_exec("INSERT INTO processed_messages (consumer, event_id) VALUES ('c1', 'e')")
        .await;
    assert!(duplicate.is_err(), "a second (c1, e) was accepted");
    assert_eq!(db.count("processed_messages").await, 10_002);
}

/// A session with a lock_timeout of its own (here the URL's) still waits for another run to
/// finish: the test stands for a run in the middle of its migration, holding the migration
/// lock and the inbox's table. The waiting run's first look at the table runs out of the
/// session's limit and is left to the run under the lock; its wait for the migration lock
/// is not bounded; the migration itself is, by the session's limit again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_lock_timeout_does_not_bound_the_wait_for_another_run_on_postgres() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.exec(
        "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, \
         processed_at TIMESTAMPTZ NOT NULL DEFAULT now()); \
         INSERT INTO processed_messages (event_id, consumer) VALUES ('e1', 'c')",
    )
    .await;
    let pool = db.pool().await;
    let mut other_run = pool.acquire().await.unwrap();
    sqlx::raw_sql(
        "BEGIN; LOCK TABLE processed_messages IN ACCESS EXCLUSIVE MODE; \
         SELECT pg_advisory_lock(7597117852321281132)",
    )
    .execute(&mut *other_run)
    .await
    .unwrap();
    let separator = if db.url.contains('?') { '&' } else { '?' };
    let url = format!("{}{separator}options=-c%20lock_timeout%3D200ms", db.url);
    let mut child = db
        .command(&["migrate", "run"])
        .env("DATABASE_URL", &url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waiting = "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
                   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while db.scalar(waiting).await == 0 {
        assert!(child.try_wait().unwrap().is_none(), "migrate ended early");
        assert!(std::time::Instant::now() < deadline, "migrate never waited");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // Longer than the session's limit.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    sqlx::raw_sql("COMMIT; SELECT pg_advisory_unlock(7597117852321281132)")
        .execute(&mut *other_run)
        .await
        .unwrap();
    let code = wait_until(&mut child, deadline);
    let run = Run::from(child.wait_with_output().unwrap());
    assert_eq!(code, Some(0), "{}", run.stderr);
    assert_eq!(db.count("inboxctl_migrations").await, 2);
    assert_eq!(db.count("processed_messages").await, 1);
}

/// Two `migrate run` at once: one applies every version under the lock, the other waits and
/// then finds nothing to do. On the servers the test holds the migration lock itself until
/// both runs are waiting for it, so they do overlap: a lock taken per migration instead of
/// per run would let them share the versions out.
async fn concurrent_runs_apply_each_version_once(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    // A classic table: only the run that adopts it says so.
    let classic = match backend {
        Backend::Postgres => "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, processed_at TIMESTAMPTZ NOT NULL DEFAULT now())",
        Backend::Mysql => "CREATE TABLE processed_messages (event_id VARCHAR(255) PRIMARY KEY, consumer VARCHAR(255) NOT NULL, processed_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP)",
        Backend::Sqlite => "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, processed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)",
    };
    db.exec(classic).await;
    db.exec("INSERT INTO processed_messages (event_id, consumer) VALUES ('e1', 'c'), ('e2', 'c')")
        .await;
    let pool = db.pool().await;
    let (lock, unlock, waiting) = match backend {
        Backend::Postgres => (
            "SELECT pg_advisory_lock(7597117852321281132)",
            "SELECT pg_advisory_unlock(7597117852321281132)",
            "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        ),
        Backend::Mysql => (
            "SELECT GET_LOCK(CONCAT('inboxctl_migrate:', SHA1(DATABASE())), 10)",
            "SELECT RELEASE_LOCK(CONCAT('inboxctl_migrate:', SHA1(DATABASE())))",
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
             WHERE STATE = 'User lock' AND DB = DATABASE()",
        ),
        Backend::Sqlite => ("", "", ""),
    };
    let mut holder = pool.acquire().await.unwrap();
    if !lock.is_empty() {
        sqlx::query(lock).execute(&mut *holder).await.unwrap();
    }
    let spawn = || {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("inboxctl"))
            .args(["migrate", "run"])
            .env("DATABASE_URL", &db.url)
            .current_dir(db.dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn inboxctl")
    };
    let (first, second) = (spawn(), spawn());
    if !lock.is_empty() {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let count: i64 = sqlx::query_scalar(waiting).fetch_one(&pool).await.unwrap();
            if count == 2 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the two runs never both waited for the lock ({count} waiting)"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        sqlx::query(unlock).execute(&mut *holder).await.unwrap();
    }
    drop(holder);
    let outputs = [
        first.wait_with_output().unwrap(),
        second.wait_with_output().unwrap(),
    ];
    for output in &outputs {
        assert!(
            output.status.success(),
            "stdout: {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let mut applied: Vec<usize> = outputs
        .iter()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .matches("Applied ")
                .count()
        })
        .collect();
    applied.sort();
    assert_eq!(
        applied,
        [0, 2],
        "one run applies both versions, the other none"
    );
    let mut notes: Vec<String> = outputs
        .iter()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .collect();
    notes.sort();
    assert_eq!(
        notes,
        [
            String::new(),
            "adopted the classic processed_messages table in place, keeping its 2 rows\n"
                .to_string()
        ]
    );
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM processed_messages").await,
        2
    );
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM inboxctl_migrations WHERE version = 1")
            .await,
        1
    );
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM inboxctl_migrations WHERE version = 2")
            .await,
        1
    );
    assert_eq!(db.schema().await, expected_schema(backend));
}

/// A bookkeeping row edited by hand into something unreadable is named by its row, with the
/// table's columns, not by a column number or another table's column.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_bookkeeping_row_edited_by_hand_is_named() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let named = "error: could not read row 2 of inboxctl_migrations (version, description, \
                 checksum, applied_at, duration_ms); was it edited by hand?: ";
    db.exec("UPDATE inboxctl_migrations SET applied_at = 'garbage' WHERE version = 2")
        .await;
    let status = db.run(&["migrate", "status"]).code(1);
    assert_eq!(
        status.stderr,
        format!("{named}applied_at 'garbage' is no time\n")
    );
    db.exec(
        "UPDATE inboxctl_migrations SET applied_at = '2026-01-01 00:00:00', \
         duration_ms = 'abc' WHERE version = 2",
    )
    .await;
    let status = db.run(&["migrate", "status"]).code(1);
    assert!(status.stderr.starts_with(named), "{}", status.stderr);
    // A version no inboxctl makes is not one a newer inboxctl would know.
    db.exec("UPDATE inboxctl_migrations SET duration_ms = 1, version = -1 WHERE version = 2")
        .await;
    let run = db.run(&["migrate", "run"]).code(1);
    assert_eq!(
        run.stderr,
        "error: inboxctl_migrations records migration -1 (key (consumer, event_id), \
         topic/partition/offset, indexes), which no inboxctl makes; fix inboxctl_migrations by \
         hand\n"
    );
}

async fn tampered_checksum_is_refused(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    db.run(&["migrate", "revert"]).ok();
    db.exec("UPDATE inboxctl_migrations SET checksum = 'abc123' WHERE version = 1")
        .await;

    let refused = db.run(&["migrate", "run"]).code(1);
    assert!(
        refused.stderr.contains("migration 1 (classic processed_messages table (created if missing)) was changed after it was applied"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("recorded checksum abc123"),
        "{}",
        refused.stderr
    );
    // Nothing was applied past the refusal.
    assert_eq!(db.count("inboxctl_migrations").await, 1);
    assert_eq!(
        db.store().await.inbox_layout().await.unwrap(),
        InboxLayout::Classic
    );

    let status = db
        .run(&["migrate", "status", "--format", "json"])
        .ok()
        .json();
    assert_eq!(status["migrations"][0]["state"], "changed");
    assert_eq!(status["migrations"][1]["state"], "pending");
}

async fn unknown_newer_migration_is_refused(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    db.exec("INSERT INTO inboxctl_migrations (version, description, checksum, duration_ms) VALUES (99, 'from the future', 'x', 0)").await;
    let refused = db.run(&["migrate", "run"]).code(1);
    assert!(
        refused
            .stderr
            .contains("migration 99 (from the future) applied, which this inboxctl does not know"),
        "{}",
        refused.stderr
    );
    let status = db
        .run(&["migrate", "status", "--format", "json"])
        .ok()
        .json();
    assert_eq!(status["migrations"][2]["state"], "unknown");
}

/// An application's role that may read the schema but not create tables, as deploy
/// pipelines run `migrate run` with: on an up-to-date database it has nothing to do, and
/// says so, rather than fail on the CREATE TABLE IF NOT EXISTS of the bookkeeping table,
/// whose right PostgreSQL and MySQL check even when the table exists.
async fn migrate_run_needs_no_create_right_when_up_to_date(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let role = db.role("").await;
    let url = match backend {
        Backend::Postgres => {
            db.exec("REVOKE CREATE ON SCHEMA public FROM PUBLIC").await;
            db.exec(&format!(
                "GRANT SELECT ON inboxctl_migrations, processed_messages TO {role}"
            ))
            .await;
            db.url.replacen("postgres@", &format!("{role}@"), 1)
        }
        _ => {
            let database = db.url.rsplit('/').next().unwrap().to_string();
            db.exec(&format!("GRANT SELECT ON `{database}`.* TO '{role}'@'%'"))
                .await;
            db.url.replacen("root@", &format!("{role}@"), 1)
        }
    };
    let run = Run::from(
        db.cmd()
            .env("DATABASE_URL", &url)
            .args(["migrate", "run"])
            .output()
            .unwrap(),
    )
    .ok();
    assert!(run.stdout.starts_with("Nothing to do: "), "{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_run_needs_no_create_right_when_up_to_date_on_postgres() {
    migrate_run_needs_no_create_right_when_up_to_date(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_run_needs_no_create_right_when_up_to_date_on_mysql() {
    migrate_run_needs_no_create_right_when_up_to_date(Backend::Mysql).await;
}

/// MySQL's user locks belong to the server, not to a database: a migrate run on one
/// database must not wait for one on another. Here the run on `a` holds its lock while its
/// ALTER waits for a table the application has open, and the run on `b` goes ahead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_migrate_on_another_database_does_not_wait() {
    let mut a = TestDb::new(Backend::Mysql).await;
    let b = TestDb::new(Backend::Mysql).await;
    a.exec(
        "CREATE TABLE processed_messages (event_id VARCHAR(255) PRIMARY KEY, \
         consumer VARCHAR(255) NOT NULL, processed_at DATETIME NOT NULL)",
    )
    .await;
    let pool = a.pool().await;
    let mut application = pool.begin().await.unwrap();
    sqlx::query("SELECT COUNT(*) FROM processed_messages")
        .execute(&mut *application)
        .await
        .unwrap();
    let mut on_a = a.spawn(&["migrate", "run"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
             WHERE STATE = 'Waiting for table metadata lock' AND DB = DATABASE()",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        if waiting > 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "a's run never waited");
        assert!(on_a.try_wait().unwrap().is_none(), "a's run ended");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let on_b = Run::from(
        b.cmd()
            .args(["migrate", "run"])
            .timeout(std::time::Duration::from_secs(30))
            .output()
            .unwrap(),
    );
    on_b.ok();
    application.commit().await.unwrap();
    assert!(on_a.wait().unwrap().success());
    assert_eq!(
        migration_states(&a),
        [(1, "applied".into()), (2, "applied".into())]
    );
}

/// On a terminal, revert asks before it drops a table holding rows. Ctrl-C at the question
/// reverts nothing (exit 130); Ctrl-C once it was answered ends the revert at once, as it
/// ends the commands without batches, rather than being swallowed: here the revert waits
/// for the write lock another connection holds, and the server keeps the table whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_at_or_after_the_revert_question_reverts_nothing() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let now = chrono::Utc::now();
    db.insert_rows(&[row("c", "e1", None, now), row("c", "e2", None, now)])
        .await;
    let question = "Revert drops processed_messages with its 2 rows. Continue?";
    let revert = |db: &TestDb| {
        let mut command = db.command(&["migrate", "revert", "--to", "0"]);
        command.env("TERM", "xterm");
        terminal::Terminal::spawn(command)
    };

    let mut asked = revert(&db);
    asked.expect(question);
    asked.send("\x03");
    let (code, screen, _) = asked.wait();
    assert_eq!(code, 130, "{screen}");
    assert!(screen.contains("Nothing reverted."), "{screen}");

    let pool = db.pool().await;
    let mut lock = pool.acquire().await.unwrap();
    sqlx::raw_sql("BEGIN IMMEDIATE")
        .execute(&mut *lock)
        .await
        .unwrap();
    let mut answered = revert(&db);
    answered.expect(question);
    answered.send("y");
    // Ctrl-C until it ends: the first may reach the terminal before dialoguer has given it
    // back, as a key nobody reads.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !answered.ended() {
        assert!(
            std::time::Instant::now() < deadline,
            "Ctrl-C did not end the revert:\n{}",
            answered.screen()
        );
        answered.send("\x03");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let (code, screen, _) = answered.wait();
    assert_eq!(code, 130, "{screen}");
    sqlx::raw_sql("ROLLBACK").execute(&mut *lock).await.unwrap();
    drop(lock);
    assert_eq!(db.count("processed_messages").await, 2);
}

async fn revert_with_an_event_id_of_several_consumers(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    db.exec("INSERT INTO processed_messages (consumer, event_id) VALUES ('c1', 'e')")
        .await;
    db.exec("INSERT INTO processed_messages (consumer, event_id) VALUES ('c2', 'e')")
        .await;

    // Back to the classic key cannot hold both rows: refused, with the reason, nothing changed.
    let refused = db.run(&["migrate", "revert"]).code(1);
    assert!(
        refused.stderr.contains("reverting migration 2")
            && refused
                .stderr
                .contains("no event id may belong to several consumers"),
        "{}",
        refused.stderr
    );
    assert_eq!(db.schema().await, expected_schema(backend));
    assert_eq!(db.count("inboxctl_migrations").await, 2);
    assert_eq!(db.count("processed_messages").await, 2);

    // A revert that fails for another reason (a read-only file) says that, without the hint.
    if backend == Backend::Sqlite {
        let read_only = db
            .cmd()
            .env("DATABASE_URL", format!("{}?mode=ro", db.url))
            .args(["migrate", "revert"])
            .output()
            .unwrap();
        let read_only = Run::from(read_only).code(1);
        assert!(
            read_only.stderr.contains("reverting migration 2")
                && read_only.stderr.contains("readonly database")
                && !read_only.stderr.contains("several consumers"),
            "{}",
            read_only.stderr
        );
        assert_eq!(db.count("processed_messages").await, 2);
    }

    // Down to 0 drops the table; the step through the classic key is not needed.
    let run = db.run(&["migrate", "revert", "--to", "0", "--yes"]).ok();
    assert!(
        run.stdout.contains("Reverted 2/") && run.stdout.contains("Reverted 1/"),
        "{}",
        run.stdout
    );
    assert!(!db.table_exists("processed_messages").await);
    assert_eq!(db.count("inboxctl_migrations").await, 0);
}

/// MySQL/MariaDB commit DDL on their own: a run killed after migration 2's ALTER and before
/// its bookkeeping leaves it applied but not recorded. The next run records it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_runs_cut_between_a_change_and_its_record_are_finished_by_the_next() {
    let mut db = TestDb::new(Backend::Mysql).await;
    db.run(&["migrate", "run"]).ok();
    db.exec("INSERT INTO processed_messages (consumer, event_id) VALUES ('c', 'e')")
        .await;
    db.exec("DELETE FROM inboxctl_migrations WHERE version = 2")
        .await;
    let dry_run = db.run(&["migrate", "run", "--dry-run"]).ok();
    assert_eq!(
        dry_run.stdout,
        "-- dry run: would apply migration 2 (key (consumer, event_id), topic/partition/offset, \
         indexes)\n-- nothing to run: its change is already in place, so it is only recorded\n"
    );
    let run = db.run(&["migrate", "run", "--format", "json"]).ok();
    assert_eq!(run.json()["applied"][0]["version"], 2);
    assert_eq!(db.schema().await, expected_schema(Backend::Mysql));
    assert_eq!(db.count("inboxctl_migrations").await, 2);
    assert_eq!(db.count("processed_messages").await, 1);

    // Reverting, cut after the ALTER back and before the bookkeeping: the next revert
    // forgets the migration without running its SQL again.
    db.exec(include_str!(
        "../migrations/mysql/0002_consumer_key_and_coordinates.down.sql"
    ))
    .await;
    let reverted = db.run(&["migrate", "revert", "--format", "json"]).ok();
    assert_eq!(reverted.json()["reverted"][0]["version"], 2);
    assert_eq!(reverted.json()["reverted"][0]["only_forgotten"], true);
    assert_eq!(db.count("inboxctl_migrations").await, 1);
    assert_eq!(db.count("processed_messages").await, 1);
    // And the same for the table itself.
    db.exec("DROP TABLE processed_messages").await;
    db.run(&["migrate", "revert", "--to", "0", "--yes"]).ok();
    assert_eq!(db.count("inboxctl_migrations").await, 0);
    db.run(&["migrate", "run"]).ok();
    assert_eq!(db.schema().await, expected_schema(Backend::Mysql));
}

/// MySQL/MariaDB: a revert cut after migration 2's ALTER back and before its record is
/// deleted leaves the classic layout with version 2 still recorded. `migrate status` shows it
/// as `undone`, and the next `migrate run` applies it again, replacing its record and keeping
/// every row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_revert_cut_before_its_record_is_deleted_is_applied_again_by_the_next_run() {
    let mut db = TestDb::new(Backend::Mysql).await;
    db.run(&["migrate", "run"]).ok();
    let at = |text: &str| text.parse::<chrono::DateTime<chrono::Utc>>().unwrap();
    db.insert_rows(&[
        row(
            "billing",
            "order-1",
            Some(("orders", 0, 10)),
            at("2026-12-01T10:00:00Z"),
        ),
        row("billing", "order-2", None, at("2026-12-01T11:00:00Z")),
        row(
            "shipping",
            "order-3",
            Some(("orders", 1, 5)),
            at("2026-12-01T12:00:00.5Z"),
        ),
    ])
    .await;
    let version_2_recorded = format!(
        "SELECT COUNT(*) FROM inboxctl_migrations WHERE version = 2 AND checksum = '{}'",
        Backend::Mysql.dialect().migrations[1].checksum()
    );

    // The revert's ALTER back ran; its DELETE from inboxctl_migrations did not.
    db.exec(include_str!(
        "../migrations/mysql/0002_consumer_key_and_coordinates.down.sql"
    ))
    .await;
    assert_eq!(db.count("inboxctl_migrations").await, 2);

    let states = migration_states(&db);
    assert_eq!(states, [(1, "applied".into()), (2, "undone".into())]);
    let table = db.run(&["migrate", "status"]).code(0);
    let rows = table.table_rows();
    assert_eq!(rows.len(), 2, "{}", table.stdout);
    assert_eq!((rows[0][0].as_str(), rows[0][2].as_str()), ("1", "applied"));
    assert_eq!((rows[1][0].as_str(), rows[1][2].as_str()), ("2", "undone"));
    assert_eq!(
        table.stderr,
        "warning: a recorded migration's change is not in place (a revert stopped before its \
         bookkeeping, or the table was dropped by hand); `migrate run` applies it again\n"
    );
    // A revert of it would run nothing, and its dry run says so.
    let dry_revert = db
        .run(&["migrate", "revert", "--dry-run", "--format", "json"])
        .ok()
        .json();
    assert_eq!(
        dry_revert["migrations"][0]["sql"],
        "-- nothing to run: its change is not in place, so only its record is forgotten"
    );

    // inspect refuses the classic layout and points at `migrate run`, which now adopts it.
    let refused = db.run(&["inspect"]).code(1);
    assert!(
        refused.stderr.contains(
            "has the classic layout (no topic/partition/offset); adopt it with `inboxctl migrate run`"
        ),
        "{}",
        refused.stderr
    );
    let plan = db
        .run(&["migrate", "run", "--dry-run", "--format", "json"])
        .code(0)
        .json();
    let planned: Vec<i64> = plan["migrations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["version"].as_i64().unwrap())
        .collect();
    assert_eq!(planned, vec![2]);
    assert_eq!(db.schema().await.indexes, Vec::<(String, String)>::new());

    let run = db.run(&["migrate", "run"]).code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stdout);
    assert!(
        lines[0]
            .starts_with("Applied 2/key (consumer, event_id), topic/partition/offset, indexes ("),
        "{}",
        run.stdout
    );
    assert_eq!(db.schema().await, expected_schema(Backend::Mysql));
    // One record per version, version 2's replaced rather than duplicated.
    assert_eq!(db.count("inboxctl_migrations").await, 2);
    assert_eq!(db.scalar(&version_2_recorded).await, 1);
    // Every row kept; the coordinates the down step dropped are gone for good.
    let pool = db.pool().await;
    let kept: Vec<(String, String, String, i64)> = sqlx::query_as(
        "SELECT consumer, event_id, DATE_FORMAT(processed_at, '%Y-%m-%d %H:%i:%s.%f'), \
         CAST(topic IS NULL AND `partition` IS NULL AND `offset` IS NULL AS SIGNED) \
         FROM processed_messages ORDER BY consumer, event_id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let expected: Vec<(String, String, String, i64)> = [
        ("billing", "order-1", "2026-12-01 10:00:00.000000"),
        ("billing", "order-2", "2026-12-01 11:00:00.000000"),
        ("shipping", "order-3", "2026-12-01 12:00:00.500000"),
    ]
    .iter()
    .map(|(c, e, p)| (c.to_string(), e.to_string(), p.to_string(), 1))
    .collect();
    assert_eq!(kept, expected);

    let states = migration_states(&db);
    assert_eq!(states, [(1, "applied".into()), (2, "applied".into())]);
    let again = db.run(&["migrate", "run"]).code(0);
    assert!(
        again.stdout.starts_with("Nothing to do: "),
        "{}",
        again.stdout
    );
    db.run(&["inspect"]).code(0);

    // The same for a `revert --to 0` cut after its DROP TABLE and before its bookkeeping:
    // both versions are undone, and the next run creates the table again.
    db.exec("DROP TABLE processed_messages").await;
    let states = migration_states(&db);
    assert_eq!(states, [(1, "undone".into()), (2, "undone".into())]);
    let run = db
        .run(&["migrate", "run", "--format", "json"])
        .code(0)
        .json();
    let applied: Vec<i64> = run["applied"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["version"].as_i64().unwrap())
        .collect();
    assert_eq!(applied, vec![1, 2]);
    assert_eq!(db.schema().await, expected_schema(Backend::Mysql));
    assert_eq!(db.count("inboxctl_migrations").await, 2);
    assert_eq!(db.count("processed_messages").await, 0);
}

async fn a_foreign_table_of_the_inbox_name_is_left_alone(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.exec("CREATE TABLE processed_messages (id INTEGER PRIMARY KEY, message_id VARCHAR(100))")
        .await;
    db.exec("INSERT INTO processed_messages (id, message_id) VALUES (1, 'm')")
        .await;
    for args in [&["migrate", "run"][..], &["inspect"]] {
        let refused = db.run(args).code(1);
        assert!(
            refused.stderr.contains(
                "is not an inbox table: it lacks the column(s) consumer, event_id, processed_at"
            ),
            "{args:?}: {}",
            refused.stderr
        );
        assert!(!refused.stderr.contains("classic processed_messages table"));
    }
    // Nothing was written: no bookkeeping, the table as it was.
    assert!(!db.table_exists("inboxctl_migrations").await);
    assert_eq!(db.count("processed_messages").await, 1);
}

/// Every row of the inbox with every column, `note` included, as text or NULL.
type FullRow = (
    String,
    String,
    Option<String>,
    Option<i64>,
    Option<i64>,
    String,
    Option<String>,
);

async fn rows_with_note(db: &mut TestDb) -> Vec<FullRow> {
    let pool = db.pool().await;
    sqlx::query_as(
        "SELECT consumer, event_id, topic, \"partition\", \"offset\", CAST(processed_at AS TEXT), note \
         FROM processed_messages ORDER BY consumer, event_id",
    )
    .fetch_all(&pool)
    .await
    .unwrap()
}

/// SQLite cannot change a primary key, so migration 2 rebuilds the table and copies only
/// consumer, event_id and processed_at. A table the application already made in the target
/// layout (key (consumer, event_id), with topic/partition/offset) is not rebuilt: migration 2
/// only adds the indexes it lacks, and every value and column of its own stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_table_already_in_the_target_layout_keeps_every_value_and_column() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.exec(
        "CREATE TABLE processed_messages (consumer TEXT NOT NULL, event_id TEXT NOT NULL, topic TEXT, \
         \"partition\" INTEGER, \"offset\" BIGINT, \
         processed_at TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')), note TEXT, \
         PRIMARY KEY (consumer, event_id))",
    )
    .await;
    // One of the two indexes is there already, under inboxctl's name.
    db.exec("CREATE INDEX processed_messages_consumer_processed_at_idx ON processed_messages (consumer, processed_at)")
        .await;
    db.exec(
        "INSERT INTO processed_messages VALUES \
         ('c', 'e1', 'orders', 0, 5, '2026-11-01 08:00:00.000', 'kept'), \
         ('c', 'e2', NULL, NULL, NULL, '2026-11-01 08:00:01.000', NULL)",
    )
    .await;
    let rows = vec![
        (
            "c".to_string(),
            "e1".to_string(),
            Some("orders".to_string()),
            Some(0),
            Some(5),
            "2026-11-01 08:00:00.000".to_string(),
            Some("kept".to_string()),
        ),
        (
            "c".to_string(),
            "e2".to_string(),
            None,
            None,
            None,
            "2026-11-01 08:00:01.000".to_string(),
            None,
        ),
    ];
    assert_eq!(rows_with_note(&mut db).await, rows);

    let dry = db.run(&["migrate", "run", "--dry-run"]).ok();

    let run = db.run(&["migrate", "run"]).ok();
    assert_eq!(rows_with_note(&mut db).await, rows);
    // Each line without its duration, which the machine decides.
    let applied: Vec<&str> = run
        .stdout
        .lines()
        .map(|line| line.rsplit_once(" (").map_or(line, |(step, _)| step))
        .collect();
    assert_eq!(
        applied,
        [
            "Applied 1/classic processed_messages table (created if missing)",
            "Applied 2/key (consumer, event_id), topic/partition/offset, indexes"
        ]
    );
    assert_eq!(run.stderr, "");
    // The dry run showed what the run did: the indexes, not the rebuild.
    assert!(
        dry.stdout.contains(
            "CREATE INDEX IF NOT EXISTS processed_messages_consumer_coordinates_idx\n    ON processed_messages (consumer, topic, \"partition\", \"offset\");"
        ) && !dry.stdout.contains("processed_messages_inboxctl_new"),
        "{}",
        dry.stdout
    );
    let mut schema = expected_schema(Backend::Sqlite);
    schema
        .columns
        .push(("note".to_string(), "TEXT".to_string(), true));
    schema.columns.sort();
    assert_eq!(db.schema().await, schema);
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM inboxctl_migrations WHERE version IN (1, 2)")
            .await,
        2
    );
    let again = db.run(&["migrate", "run"]).ok();
    assert!(
        again.stdout.starts_with("Nothing to do"),
        "{}",
        again.stdout
    );
    assert_eq!(rows_with_note(&mut db).await, rows);
    // Reverting would rebuild the table back to the classic columns, losing the table's own.
    let refused = db.run(&["migrate", "revert", "--yes"]).code(1);
    assert_eq!(
        refused.stderr,
        "error: reverting migration 2 (key (consumer, event_id), topic/partition/offset, indexes) \
         would lose column(s) note of table processed_messages: SQLite rebuilds the table back to \
         consumer, event_id, processed_at only. Nothing was changed. Drop the columns named first \
         if their values are not needed\n"
    );
    assert_eq!(rows_with_note(&mut db).await, rows);
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM inboxctl_migrations WHERE version IN (1, 2)")
            .await,
        2
    );
}

/// A SQLite table already in the inbox's layout keeps its own indexes (migration 2 only adds
/// the two it lacks): a unique one that can refuse rows the inbox's key keeps apart (on
/// event_id alone, or comparing event_id by NOCASE) is refused, one on more than the key or
/// a partial one is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_table_in_the_layout_with_a_unique_index_of_its_own() {
    let layout = "CREATE TABLE processed_messages (consumer TEXT NOT NULL, event_id TEXT NOT \
                  NULL, topic TEXT, \"partition\" INTEGER, \"offset\" BIGINT, processed_at \
                  TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (consumer, event_id))";
    for (index, refused) in [
        (
            "CREATE UNIQUE INDEX pm_event ON processed_messages (event_id)",
            Some(
                "its unique key pm_event on (event_id) does not hold both consumer and \
                 event_id, so it can refuse rows that the inbox's key keeps apart",
            ),
        ),
        (
            "CREATE UNIQUE INDEX pm_ci ON processed_messages (consumer, event_id COLLATE NOCASE)",
            Some(
                "its unique key pm_ci on (consumer,event_id COLLATE NOCASE) compares event_id by \
                 NOCASE, where the inbox's key compares every character for equality",
            ),
        ),
        (
            "CREATE UNIQUE INDEX pm_more ON processed_messages (event_id, consumer, topic)",
            None,
        ),
        (
            "CREATE UNIQUE INDEX pm_some ON processed_messages (event_id) WHERE topic = 'x'",
            None,
        ),
    ] {
        let mut db = TestDb::new(Backend::Sqlite).await;
        db.exec(&format!("{layout}; {index}")).await;
        match refused {
            Some(reasons) => kept_layout_refused(&db, reasons),
            None => {
                db.run(&["migrate", "run"]).ok();
                assert_eq!(db.count("inboxctl_migrations").await, 2, "{index}");
            }
        }
    }
}

/// A table SQLite's rebuild would lose columns of is refused before anything changes, with
/// the columns named, the reason, and what to do: a classic table with a column of its own,
/// and one with the coordinates but keyed on event_id alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_table_whose_rebuild_would_lose_columns_is_refused() {
    for (create, lost) in [
        (
            "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, \
             processed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, payload TEXT)",
            "payload of table processed_messages: ",
        ),
        (
            "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, \
             topic TEXT, \"partition\" INTEGER, \"offset\" BIGINT, \
             processed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)",
            "topic, partition, offset of table processed_messages: ",
        ),
        // A generated column, which pragma_table_info leaves out.
        (
            "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, \
             processed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, \
             day TEXT GENERATED ALWAYS AS (substr(processed_at, 1, 10)) STORED)",
            "day of table processed_messages: ",
        ),
        // The target key and columns, but columns that may be NULL: the error says so.
        (
            "CREATE TABLE processed_messages (consumer TEXT, event_id TEXT NOT NULL, \
             topic TEXT, \"partition\" INTEGER, \"offset\" BIGINT, \
             processed_at TIMESTAMP, PRIMARY KEY (consumer, event_id))",
            "topic, partition, offset of table processed_messages: it has the key and the \
             columns of the inbox's layout, but \
             consumer, processed_at may be NULL (no NOT NULL), so it is not taken for that \
             layout; ",
        ),
    ] {
        let mut db = TestDb::new(Backend::Sqlite).await;
        db.exec(create).await;
        db.exec("INSERT INTO processed_messages (event_id, consumer, processed_at) VALUES ('e1', 'c', '2026-11-01 08:00:00.000')")
            .await;
        let schema = db.schema().await;
        let expected = format!(
            "error: migration 2 (key (consumer, event_id), topic/partition/offset, indexes) would lose \
             column(s) {lost}SQLite cannot change a primary key, so the \
             migration rebuilds the table and copies only consumer, event_id, processed_at. Nothing was \
             changed. Give the table the primary key (consumer, event_id), with consumer, event_id, \
             processed_at NOT NULL, and the columns topic, partition, offset yourself, keeping your \
             own (migrate run then only adds its indexes), or drop the columns named if their values \
             are not needed\n"
        );
        for args in [&["migrate", "run"][..], &["migrate", "run", "--dry-run"]] {
            let refused = db.run(args).code(1);
            assert_eq!(refused.stderr, expected, "{args:?}");
            assert_eq!(refused.stdout, "", "{args:?}");
        }
        assert!(!db.table_exists("inboxctl_migrations").await);
        assert_eq!(db.schema().await, schema);
        assert_eq!(
            db.scalar("SELECT COUNT(*) FROM processed_messages WHERE event_id = 'e1' AND consumer = 'c' AND CAST(processed_at AS TEXT) = '2026-11-01 08:00:00.000'")
                .await,
            1
        );
        assert_eq!(db.count("processed_messages").await, 1);
    }
}

/// SQLite rebuilds the inbox under its old name. A view of the inbox, and a trigger of
/// another table that reads it, name the rebuilt table afterwards, both ways, instead of
/// failing the rename while the old table is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_views_and_triggers_that_name_the_inbox_survive_its_rebuild() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.exec(
        "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, \
         processed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP); \
         CREATE VIEW recent AS SELECT consumer, event_id FROM processed_messages; \
         CREATE TABLE audit (n INTEGER); \
         CREATE TRIGGER audit_counts AFTER INSERT ON audit BEGIN \
         UPDATE audit SET n = (SELECT COUNT(*) FROM processed_messages) WHERE rowid = NEW.rowid; \
         END; \
         INSERT INTO processed_messages (event_id, consumer) VALUES ('e1', 'c'), ('e2', 'c')",
    )
    .await;
    for (args, layout) in [
        (&["migrate", "run"][..], InboxLayout::Current),
        (&["migrate", "revert"], InboxLayout::Classic),
        (&["migrate", "run"], InboxLayout::Current),
    ] {
        db.run(args).ok();
        assert_eq!(db.store().await.inbox_layout().await.unwrap(), layout);
        assert_eq!(db.count("recent").await, 2, "{args:?}");
        db.exec("INSERT INTO audit (n) VALUES (0)").await;
        assert_eq!(
            db.scalar("SELECT n FROM audit ORDER BY rowid DESC LIMIT 1")
                .await,
            2,
            "{args:?}"
        );
    }
}

/// A schema named like the user comes first in PostgreSQL's default search_path, so it is
/// where new tables go, while every unqualified name still finds the inbox in public. The
/// commands look the inbox and the bookkeeping up as their statements do: they find them,
/// and migrate makes no second, empty inbox that would shadow the real one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_schema_named_like_the_user_hides_nothing() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) VALUES \
         ('c', 'old', now() - interval '40 days'), ('c', 'new', now()); \
         CREATE SCHEMA postgres",
    )
    .await;
    assert_eq!(
        db.run(&["inspect", "--format", "json"]).ok().json()["total_rows"],
        2
    );
    assert_eq!(
        migration_states(&db),
        [(1, "applied".into()), (2, "applied".into())]
    );
    assert!(db
        .run(&["migrate", "run"])
        .ok()
        .stdout
        .starts_with("Nothing to do: "));
    let pruned = db
        .run(&["prune", "--older-than", "30d", "--yes", "--format", "json"])
        .ok()
        .json();
    assert_eq!(pruned["rows_deleted"], 1);
    // Only prune's record, made where new tables go, is there.
    assert_eq!(
        db.scalar(
            "SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'postgres' \
             AND tablename <> 'inboxctl_prunes'"
        )
        .await,
        0
    );
    assert_eq!(db.count("public.processed_messages").await, 1);

    // A classic table in public, not migrated yet: migration 1 would create a second,
    // empty inbox in the user's schema, so migrate refuses, and its dry run says the same.
    let mut db = TestDb::new(Backend::Postgres).await;
    db.exec(
        "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, \
         processed_at TIMESTAMPTZ NOT NULL DEFAULT now()); \
         INSERT INTO processed_messages (event_id, consumer) VALUES ('a', 'c'), ('b', 'c'); \
         CREATE SCHEMA postgres",
    )
    .await;
    for args in [&["migrate", "run"][..], &["migrate", "run", "--dry-run"]] {
        let refused = db.run(args).code(1);
        assert_eq!(
            refused.stderr,
            "error: processed_messages is in schema public, but new tables go to schema \
             postgres, the first on this session's search_path: migration 1 would make a \
             second, empty inbox there, which would hide this one. Nothing was changed. Run \
             migrate with the search_path the application has (ALTER ROLE … SET search_path \
             = public, say)\n",
            "{args:?}"
        );
    }
    assert_eq!(
        db.scalar(
            "SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'postgres' \
             AND tablename = 'processed_messages'"
        )
        .await,
        0
    );
    assert_eq!(db.count("public.processed_messages").await, 2);
}

/// SQLite rebuilds the inbox by dropping the old table, and a DROP TABLE there deletes every
/// row first, which cascades into the tables that reference it. Adopting a classic table and
/// reverting (to the classic layout, or to nothing) are refused while a foreign key points at
/// it, as PostgreSQL and MySQL refuse them, and the application's rows stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_refuses_to_drop_an_inbox_that_other_tables_reference() {
    let refusal = |doing: &str| {
        format!(
            "error: {doing} table processed_messages{why}, but table(s) invoices reference it by \
             foreign key: dropping the old table would delete their rows (ON DELETE CASCADE) or \
             leave their keys pointing at nothing. Nothing was changed. PostgreSQL and MySQL \
             refuse this too; remove those foreign keys first (SQLite: rebuild those tables \
             without them)\n",
            why = match doing.starts_with("migration") {
                true => " (SQLite cannot change a primary key)",
                false => "",
            }
        )
    };
    let migration_2 = "migration 2 (key (consumer, event_id), topic/partition/offset, indexes)";

    let mut db = TestDb::new(Backend::Sqlite).await;
    db.exec(
        "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, \
         processed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP); \
         CREATE TABLE invoices (id INTEGER PRIMARY KEY, \
         event_id TEXT REFERENCES processed_messages (event_id) ON DELETE CASCADE); \
         INSERT INTO processed_messages (event_id, consumer) VALUES ('e1', 'c'), ('e2', 'c'); \
         INSERT INTO invoices (event_id) VALUES ('e1'), ('e2')",
    )
    .await;
    let schema = db.schema().await;
    for args in [&["migrate", "run"][..], &["migrate", "run", "--dry-run"]] {
        let refused = db.run(args).code(1);
        assert_eq!(
            refused.stderr,
            refusal(&format!("{migration_2} rebuilds")),
            "{args:?}"
        );
    }
    assert_eq!(db.schema().await, schema);
    assert!(!db.table_exists("inboxctl_migrations").await);
    assert_eq!(
        (
            db.count("processed_messages").await,
            db.count("invoices").await
        ),
        (2, 2)
    );

    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id) VALUES ('c', 'e1'); \
         CREATE TABLE invoices (id INTEGER PRIMARY KEY, consumer TEXT, event_id TEXT, \
         FOREIGN KEY (consumer, event_id) REFERENCES processed_messages (consumer, event_id) \
         ON DELETE CASCADE); \
         INSERT INTO invoices (consumer, event_id) VALUES ('c', 'e1')",
    )
    .await;
    let schema = db.schema().await;
    for args in [
        &["migrate", "revert"][..],
        &["migrate", "revert", "--dry-run"],
    ] {
        let back_to_classic = db.run(args).code(1);
        assert_eq!(
            back_to_classic.stderr,
            refusal(&format!("reverting {migration_2} drops")),
            "{args:?}"
        );
    }
    for args in [
        &["migrate", "revert", "--to", "0", "--yes"][..],
        &["migrate", "revert", "--to", "0", "--dry-run"],
    ] {
        let to_nothing = db.run(args).code(1);
        assert_eq!(
            to_nothing.stderr,
            refusal(
                "reverting migration 1 (classic processed_messages table (created if missing)) \
                 drops"
            ),
            "{args:?}"
        );
    }
    assert_eq!(db.schema().await, schema);
    assert_eq!(
        migration_states(&db),
        [(1, "applied".into()), (2, "applied".into())]
    );
    assert_eq!(
        (
            db.count("processed_messages").await,
            db.count("invoices").await
        ),
        (1, 1)
    );

    // A classic table with rows, referenced by a table without any: the rebuild has nothing
    // to cascade into, and the foreign key holds on the new key.
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.exec(
        "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, \
         processed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, UNIQUE (consumer, event_id)); \
         CREATE TABLE invoices (consumer TEXT, event_id TEXT, FOREIGN KEY (consumer, event_id) \
         REFERENCES processed_messages (consumer, event_id)); \
         INSERT INTO processed_messages (event_id, consumer) VALUES ('e1', 'c'), ('e2', 'c')",
    )
    .await;
    db.run(&["migrate", "run"]).ok();
    db.exec("INSERT INTO invoices VALUES ('c', 'e1')").await;
    assert_eq!(db.count("processed_messages").await, 2);

    // An application that declared its key before the inbox existed: migration 2 rebuilds
    // the empty table migration 1 has just made, which takes nothing with it.
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.exec(
        "CREATE TABLE invoices (id INTEGER PRIMARY KEY, consumer TEXT, event_id TEXT, \
         FOREIGN KEY (consumer, event_id) REFERENCES processed_messages (consumer, event_id))",
    )
    .await;
    db.run(&["migrate", "run", "--dry-run"]).ok();
    db.run(&["migrate", "run"]).ok();
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id) VALUES ('c', 'e1'); \
         INSERT INTO invoices (consumer, event_id) VALUES ('c', 'e1')",
    )
    .await;
    assert_eq!(db.count("invoices").await, 1);
}

/// A table whose keys would go on refusing a second consumer's row after migration 2 (a
/// surrogate primary key with a unique event_id, a unique index beside the classic key, one
/// on a column's first characters or by a collation that ignores case), or
/// whose id column migration 2 would narrow (MySQL), is refused before anything is written,
/// dry run included, and named with what to change.
async fn tables_that_adoption_would_not_make_an_inbox_are_refused(backend: Backend) {
    let text = match backend {
        Backend::Mysql => "VARCHAR(255)",
        _ => "text",
    };
    let cases = [
        (
            format!(
                "CREATE TABLE processed_messages (id BIGINT PRIMARY KEY DEFAULT 1, event_id {text} NOT NULL, \
                 consumer {text} NOT NULL, processed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, \
                 CONSTRAINT once UNIQUE (event_id))"
            ),
            format!(
                "its primary key {} is on (id), where the classic table's is on (event_id); its \
                 unique key once on (event_id) does not hold both consumer and event_id, so it \
                 can refuse rows that the inbox's key keeps apart",
                match backend {
                    Backend::Mysql => "PRIMARY",
                    _ => "processed_messages_pkey",
                }
            ),
        ),
        (
            format!(
                "CREATE TABLE processed_messages (event_id {text} PRIMARY KEY, consumer {text} NOT \
                 NULL, processed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP); \
                 CREATE UNIQUE INDEX pm_event_id ON processed_messages (event_id)"
            ),
            "its unique key pm_event_id on (event_id) does not hold both consumer and event_id, \
             so it can refuse rows that the inbox's key keeps apart"
                .to_string(),
        ),
    ];
    // MySQL keys on a column's first characters: two ids alike that far are one to a unique
    // key. The primary key's prefix is no matter: migration 2 drops that key.
    let prefixed = (
        "CREATE TABLE processed_messages (event_id VARCHAR(255) NOT NULL, consumer VARCHAR(255) \
         NOT NULL, processed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, \
         PRIMARY KEY (event_id(100)), UNIQUE KEY uq (consumer(10), event_id(20)))"
            .to_string(),
        "its unique key uq on (consumer(10),event_id(20)) holds only the first characters of \
         consumer and event_id, so it can refuse rows that the inbox's key keeps apart"
            .to_string(),
    );
    let mysql_only = (backend == Backend::Mysql).then_some(prefixed);
    // PostgreSQL keys by a collation of their own: one that ignores case takes `a` and `A`
    // for one id, where the inbox's key (the column's collation) keeps them apart.
    let collated = (
        "CREATE COLLATION ignoring_case (provider = icu, locale = 'und-u-ks-level2', \
         deterministic = false); \
         CREATE TABLE processed_messages (event_id text PRIMARY KEY, consumer text NOT NULL, \
         processed_at timestamptz NOT NULL DEFAULT now()); \
         CREATE UNIQUE INDEX pm_ci ON processed_messages (consumer, event_id COLLATE \
         ignoring_case)"
            .to_string(),
        "its unique key pm_ci on (consumer,event_id COLLATE ignoring_case) compares event_id \
         by ignoring_case, where the inbox's key compares every character for equality, so it \
         can refuse rows that the inbox's key keeps apart; drop it (DROP INDEX \"pm_ci\"), or \
         make it again comparing them with = and without a COLLATE"
            .to_string(),
    );
    // Or an exclusion constraint that compares one of them by another operator than `=`:
    // one event a consumer here refuses every other consumer's.
    let unequal = (
        "CREATE EXTENSION btree_gist; \
         CREATE TABLE processed_messages (event_id text PRIMARY KEY, consumer text NOT NULL, \
         processed_at timestamptz NOT NULL DEFAULT now()); \
         ALTER TABLE processed_messages ADD CONSTRAINT \"one\"\"owner\" EXCLUDE USING gist \
         (consumer WITH <>, event_id WITH =)"
            .to_string(),
        "its exclusion constraint one\"owner on (consumer WITH <>,event_id) compares consumer \
         with <>, where the inbox's key compares every character for equality, so it can \
         refuse rows that the inbox's key keeps apart; drop it (ALTER TABLE processed_messages \
         DROP CONSTRAINT \"one\"\"owner\"), or make it again comparing them with = and \
         without a COLLATE"
            .to_string(),
    );
    let postgres_only = (backend == Backend::Postgres)
        .then_some([collated, unequal])
        .into_iter()
        .flatten();
    for (table, reasons) in cases.into_iter().chain(mysql_only).chain(postgres_only) {
        let mut db = TestDb::new(backend).await;
        db.exec(&table).await;
        db.exec("INSERT INTO processed_messages (event_id, consumer) VALUES ('e1', 'c')")
            .await;
        let schema = db.schema().await;
        for args in [&["migrate", "run"][..], &["migrate", "run", "--dry-run"]] {
            let refused = db.run(args).code(1);
            assert_eq!(
                refused.stderr,
                format!(
                    "error: migration 2 (key (consumer, event_id), topic/partition/offset, \
                     indexes) cannot adopt table processed_messages: {reasons}. Nothing was \
                     changed; change the table as said, then run migrate again\n"
                ),
                "{table} {args:?}"
            );
        }
        assert_eq!(db.schema().await, schema, "{table}");
        assert!(!db.table_exists("inboxctl_migrations").await);
    }
    // A key that holds both whole refuses nothing the inbox's keeps apart, whatever it
    // compares its other columns by.
    if backend == Backend::Postgres {
        let mut db = TestDb::new(backend).await;
        db.exec(
            "CREATE COLLATION ignoring_case (provider = icu, locale = 'und-u-ks-level2', \
             deterministic = false); \
             CREATE TABLE processed_messages (event_id text PRIMARY KEY, consumer text NOT NULL, \
             note text, processed_at timestamptz NOT NULL DEFAULT now()); \
             CREATE UNIQUE INDEX pm_noted ON processed_messages (consumer, event_id, note \
             COLLATE ignoring_case)",
        )
        .await;
        db.run(&["migrate", "run"]).ok();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_tables_that_adoption_would_not_make_an_inbox_are_refused() {
    tables_that_adoption_would_not_make_an_inbox_are_refused(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_tables_that_adoption_would_not_make_an_inbox_are_refused() {
    tables_that_adoption_would_not_make_an_inbox_are_refused(Backend::Mysql).await;
}

/// PostgreSQL refuses to set the type of a column a view reads, even to the type it has, and
/// to drop a primary key a view depends on (one that groups by it): adoption names those
/// views before anything is written, and adopts a table whose views read other columns only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_adoption_names_the_views_in_its_way() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.exec(
        "CREATE TABLE processed_messages (event_id text PRIMARY KEY, consumer text NOT NULL, \
         processed_at timestamptz NOT NULL DEFAULT now()); \
         INSERT INTO processed_messages (event_id, consumer) VALUES ('e1', 'c'); \
         CREATE VIEW recent AS SELECT event_id FROM processed_messages \
         WHERE processed_at > now() - interval '1 day'; \
         CREATE VIEW per_event AS SELECT event_id, consumer FROM processed_messages \
         GROUP BY event_id; \
         CREATE VIEW ids AS SELECT event_id, consumer FROM processed_messages",
    )
    .await;
    adoption_refused(
        &mut db,
        "view(s) recent read its processed_at, whose type migration 2 sets (timestamptz), \
         which PostgreSQL refuses while a view reads the column; drop them first and make them \
         again afterwards; view(s) per_event depend on its primary key (by grouping by it, \
         say), which migration 2 drops to make the key (consumer, event_id), which PostgreSQL \
         refuses while a view depends on it; drop them first and make them again afterwards, \
         grouping by consumer and event_id",
    )
    .await;
    db.exec("DROP VIEW recent; DROP VIEW per_event").await;
    db.run(&["migrate", "run"]).ok();
    assert_eq!(db.count("ids").await, 1);
}

/// MySQL's migration 2 is one ALTER TABLE that makes event_id and consumer VARCHAR(255) and
/// adds the coordinates: a wider column is refused rather than narrowed under the
/// application's feet, and a `topic` of the table's own rather than failed on. Such a table
/// is still classic to the other commands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_adoption_refuses_what_its_one_statement_cannot_do() {
    let cases = [
        (
            "event_id VARCHAR(512) NOT NULL PRIMARY KEY, consumer VARCHAR(100) NOT NULL",
            "its event_id column holds up to 512 characters, and migration 2 makes it \
             VARCHAR(255), which would refuse the application's longer values; if none is \
             longer, make it VARCHAR(255) first",
        ),
        (
            "event_id VARCHAR(255) NOT NULL PRIMARY KEY, consumer VARCHAR(100) NOT NULL, \
             topic VARCHAR(100)",
            "it already has the column(s) topic, which migration 2 adds in one statement that \
             would fail on them",
        ),
        // Keyed by consumer, with the coordinates, but not as the inbox: not taken for a
        // migration 2 already in place.
        (
            "event_id VARCHAR(255) NOT NULL, consumer VARCHAR(100) NOT NULL, topic \
             VARCHAR(100) NOT NULL, `partition` INT NOT NULL, `offset` BIGINT NOT NULL, \
             PRIMARY KEY (consumer, topic, `partition`, `offset`)",
            "its primary key PRIMARY is on (consumer,topic,partition,offset), where the \
             classic table's is on (event_id); it already has the column(s) topic, partition, \
             offset, which migration 2 adds in one statement that would fail on them",
        ),
    ];
    for (columns, reason) in cases {
        let mut db = TestDb::new(Backend::Mysql).await;
        db.exec(&format!(
            "CREATE TABLE processed_messages ({columns}, processed_at DATETIME(3) NOT NULL \
             DEFAULT CURRENT_TIMESTAMP(3))"
        ))
        .await;
        let refused = db.run(&["migrate", "run"]).code(1);
        assert!(
            refused.stderr.contains(&format!(
                "cannot adopt table processed_messages: {reason}. Nothing was changed;"
            )),
            "{}",
            refused.stderr
        );
        assert!(!db.table_exists("inboxctl_migrations").await);
        if columns.contains("`offset`") {
            continue;
        }
        let inspect = db.run(&["inspect"]).code(1);
        assert!(
            inspect.stderr.contains("has the classic layout"),
            "{}",
            inspect.stderr
        );
    }
}

/// What would make MySQL's one `ALTER TABLE` fail (or change the application's ids) is
/// refused before it runs, the dry run included; a foreign key it can keep is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_adoption_refuses_tables_its_statement_cannot_convert() {
    let classic = "processed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)";
    let bin = "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin";
    let cases = [
        (
            format!(
                "CREATE TABLE processed_messages (event_id VARCHAR(255) CHARACTER SET latin1 \
                 PRIMARY KEY, consumer VARCHAR(255) CHARACTER SET latin1 NOT NULL, {classic}) \
                 ROW_FORMAT=COMPACT"
            ),
            "its row format is Compact, whose index columns hold at most 767 bytes, and the key \
             (consumer, event_id) takes 1,020 per column (VARCHAR(255) utf8mb4) (ALTER TABLE \
             processed_messages ROW_FORMAT=DYNAMIC)",
        ),
        (
            format!(
                "CREATE TABLE processed_messages (event_id BINARY(16) PRIMARY KEY, consumer \
                 VARCHAR(255) NOT NULL, {classic})"
            ),
            "its event_id column is binary(16), bytes rather than text, and migration 2 makes \
             it text (VARCHAR(255) utf8mb4), which fails on bytes that are not UTF-8 and changes \
             the ids the application writes",
        ),
        (
            format!(
                "CREATE TABLE events (id VARCHAR(255) PRIMARY KEY); INSERT INTO events VALUES ('e1'); CREATE TABLE \
                 processed_messages (event_id VARCHAR(255) PRIMARY KEY, consumer VARCHAR(255) \
                 {bin} NOT NULL, {classic}, CONSTRAINT handled_event FOREIGN KEY (event_id) \
                 REFERENCES events (id))"
            ),
            "its foreign key handled_event to events holds event_id, whose type migration 2 \
             changes to VARCHAR(255) utf8mb4_bin, which MySQL refuses on a column in a foreign \
             key; drop that foreign key first and make it again afterwards, with the column it \
             references made VARCHAR(255) utf8mb4_bin too",
        ),
        (
            format!(
                "CREATE TABLE consumers (name VARCHAR(255) {bin} PRIMARY KEY); INSERT INTO consumers VALUES ('c1'); CREATE TABLE \
                 processed_messages (event_id VARCHAR(255) {bin} PRIMARY KEY, consumer \
                 VARCHAR(255) {bin} NULL, {classic}, CONSTRAINT by_consumer FOREIGN KEY \
                 (consumer) REFERENCES consumers (name) ON DELETE SET NULL)"
            ),
            "its foreign key by_consumer to consumers sets consumer to NULL, and migration 2 \
             makes consumer NOT NULL; drop that foreign key first and make it again without SET \
             NULL",
        ),
        (
            format!(
                "CREATE TABLE processed_messages (event_id VARCHAR(64) PRIMARY KEY, consumer \
                 VARCHAR(64) NOT NULL, {classic}) WITH SYSTEM VERSIONING"
            ),
            "it is system-versioned, and MariaDB refuses to alter such a table (ALTER TABLE \
             processed_messages DROP SYSTEM VERSIONING, if its history can go)",
        ),
        (
            "CREATE TABLE processed_messages (event_id VARCHAR(64) PRIMARY KEY, consumer \
             VARCHAR(64) NOT NULL, processed_at BIGINT NOT NULL DEFAULT 1700000000000)"
                .to_string(),
            "its processed_at column is bigint(20), which migration 2 cannot turn into a time \
             without being told how (a number may be epoch seconds or milliseconds); convert it \
             first (ALTER TABLE processed_messages MODIFY processed_at DATETIME(6) NOT NULL \
             DEFAULT CURRENT_TIMESTAMP(6), after making its values UTC times, with \
             FROM_UNIXTIME for epoch seconds, say)",
        ),
        (
            "CREATE TABLE processed_messages (event_id VARCHAR(64) PRIMARY KEY, consumer \
             VARCHAR(64) NOT NULL, processed_at VARCHAR(40) NOT NULL DEFAULT \
             '2024-01-01T10:00:00Z')"
                .to_string(),
            "1 row has a processed_at that is not a time in the form YYYY-MM-DD \
             HH:MM:SS[.ffffff], which migration 2 cannot convert; convert it first (ALTER TABLE \
             processed_messages MODIFY processed_at DATETIME(6) NOT NULL DEFAULT \
             CURRENT_TIMESTAMP(6), after making its \
             values UTC times, with FROM_UNIXTIME for epoch seconds, say)",
        ),
        (
            format!(
                "CREATE TABLE processed_messages (event_id VARCHAR(64) PRIMARY KEY, consumer \
                 VARCHAR(64) NOT NULL, {classic}, KEY \
                 processed_messages_consumer_processed_at_idx (consumer, processed_at))"
            ),
            "index processed_messages_consumer_processed_at_idx of table processed_messages \
             has a name migration 2 gives to one of its own; drop or rename it",
        ),
        (
            format!(
                "CREATE TABLE processed_messages (event_id VARCHAR(255) {bin} PRIMARY KEY, \
                 consumer VARCHAR(255) {bin} NOT NULL, {classic}) ENGINE=Aria"
            ),
            "its engine is Aria, where the inbox needs InnoDB, whose transactions record an event \
             together with its effects (ALTER TABLE processed_messages ENGINE=InnoDB)",
        ),
    ];
    for (create, reason) in cases {
        let mut db = TestDb::new(Backend::Mysql).await;
        db.exec(&create).await;
        db.exec("INSERT INTO processed_messages (event_id, consumer) VALUES ('e1', 'c1')")
            .await;
        for command in [&["migrate", "run", "--dry-run"][..], &["migrate", "run"]] {
            let refused = db.run(command).code(1);
            assert!(
                refused.stderr.contains(&format!(
                    "cannot adopt table processed_messages: {reason}. Nothing was changed;"
                )),
                "{command:?} on {create}: {}",
                refused.stderr
            );
        }
        assert!(!db.table_exists("inboxctl_migrations").await);
        assert_eq!(db.count("processed_messages").await, 1);
    }

    // A foreign key on a column that already has the inbox's type, which neither the change
    // of type nor NOT NULL touches, stays.
    let mut db = TestDb::new(Backend::Mysql).await;
    db.exec(&format!(
        "CREATE TABLE consumers (name VARCHAR(255) {bin} PRIMARY KEY); \
         INSERT INTO consumers VALUES ('c1'); \
         CREATE TABLE processed_messages (event_id VARCHAR(255) {bin} PRIMARY KEY, consumer \
         VARCHAR(255) {bin} NOT NULL, {classic}, CONSTRAINT by_consumer FOREIGN KEY (consumer) \
         REFERENCES consumers (name) ON DELETE CASCADE); \
         INSERT INTO processed_messages (event_id, consumer) VALUES ('e1', 'c1')"
    ))
    .await;
    db.run(&["migrate", "run"]).ok();
    db.exec("DELETE FROM consumers").await;
    assert_eq!(db.count("processed_messages").await, 0);
}

/// A table whose consumer or event_id compares ignoring case, which migration 2 would keep
/// as it is (a table already in the inbox's layout on MySQL and SQLite, any on PostgreSQL),
/// is refused, dry run included: the inbox would take `Billing` and `billing` for one
/// consumer. Given an exact collation, it is adopted.
async fn a_key_that_ignores_case_is_refused(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let (create, found, fix) = match backend {
        Backend::Mysql => (
            "CREATE TABLE processed_messages (consumer VARCHAR(191) CHARACTER SET utf8mb4 \
             COLLATE utf8mb4_general_ci NOT NULL, event_id VARCHAR(191) CHARACTER SET utf8mb4 \
             COLLATE utf8mb4_general_ci NOT NULL, topic VARCHAR(255), `partition` INT, \
             `offset` BIGINT, processed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), \
             PRIMARY KEY (consumer, event_id))",
            "its consumer column compares by utf8mb4_general_ci, its event_id column compares by \
             utf8mb4_general_ci",
            // A case-sensitive collation is exact enough.
            "ALTER TABLE processed_messages MODIFY consumer VARCHAR(191) CHARACTER SET latin1 \
             COLLATE latin1_general_cs NOT NULL, MODIFY event_id VARCHAR(191) CHARACTER SET \
             latin1 COLLATE latin1_general_cs NOT NULL",
        ),
        Backend::Sqlite => (
            // The key's index compares exactly; the column, which a lookup follows, does not.
            "CREATE TABLE processed_messages (consumer TEXT NOT NULL COLLATE NOCASE, event_id \
             TEXT NOT NULL, topic TEXT, \"partition\" INTEGER, \"offset\" BIGINT, processed_at \
             TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (consumer COLLATE BINARY, \
             event_id))",
            "its consumer column compares by NOCASE",
            "ALTER TABLE processed_messages RENAME TO old; \
             CREATE TABLE processed_messages (consumer TEXT NOT NULL, event_id TEXT NOT NULL, \
             topic TEXT, \"partition\" INTEGER, \"offset\" BIGINT, processed_at TIMESTAMP NOT \
             NULL DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (consumer, event_id)); \
             INSERT INTO processed_messages SELECT * FROM old; DROP TABLE old",
        ),
        Backend::Postgres => (
            "CREATE COLLATION ignoring_case (provider = icu, locale = 'und-u-ks-level2', \
             deterministic = false); \
             CREATE TABLE processed_messages (event_id text PRIMARY KEY COLLATE ignoring_case, \
             consumer text NOT NULL, processed_at timestamptz NOT NULL DEFAULT now())",
            "its event_id column compares by ignoring_case",
            "ALTER TABLE processed_messages ALTER COLUMN event_id TYPE text COLLATE \"default\"",
        ),
    };
    db.exec(create).await;
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) \
         VALUES ('billing', 'a', CURRENT_TIMESTAMP)",
    )
    .await;
    for args in [&["migrate", "run", "--dry-run"][..], &["migrate", "run"]] {
        let refused = db.run(args).code(1);
        assert!(
            refused.stderr.contains(&format!(
                "cannot adopt table processed_messages: {found}, which compare text that \
                 differs (in case, accents or trailing spaces) as equal"
            )),
            "{args:?}: {}",
            refused.stderr
        );
        // Said once, of the column: its key compares as the column does.
        assert!(
            !refused.stderr.contains(" key "),
            "{args:?}: {}",
            refused.stderr
        );
    }
    assert_eq!(
        migration_states(&db).last(),
        Some(&(2, "pending".to_string()))
    );
    db.exec(fix).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) \
         VALUES ('Billing', 'A', CURRENT_TIMESTAMP)",
    )
    .await;
    assert_eq!(db.count("processed_messages").await, 2);
}

each_backend!(a_key_that_ignores_case_is_refused);

/// A MySQL table made by hand in the inbox's layout, which migration 2 only records, keeps
/// its coordinate types: one that cannot hold an offset past 2^31 (or a partition, or a
/// long topic name) is refused, dry run included; wider ones are taken. So are a
/// processed_at that is not a time or has no default, and keys that can refuse rows the
/// inbox's key keeps apart; each is taken once changed as the error says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_a_layout_made_by_hand_needs_coordinates_that_hold_the_inbox_values() {
    let layout = |topic: &str, partition: &str, offset: &str| {
        format!(
            "CREATE TABLE processed_messages (consumer VARCHAR(255) CHARACTER SET utf8mb4 \
             COLLATE utf8mb4_bin NOT NULL, event_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE \
             utf8mb4_bin NOT NULL, topic {topic}, `partition` {partition}, `offset` {offset}, \
             processed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), \
             PRIMARY KEY (consumer, event_id))"
        )
    };
    let with_processed_at = |column: &str| {
        layout("VARCHAR(255)", "INT", "BIGINT").replace(
            "processed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)",
            &format!("processed_at {column}"),
        )
    };
    let mut db = TestDb::new(Backend::Mysql).await;
    db.exec(&layout("VARCHAR(50)", "SMALLINT", "INT")).await;
    kept_layout_refused(
        &db,
        "its own offset column is int(11), which migration 2 keeps, where the inbox writes \
         bigint there; change its type or rename the column; its own partition column is \
         smallint(6), which migration 2 keeps, where the inbox writes integer there; change its \
         type or rename the column; its own topic column is varchar(50), which migration 2 \
         keeps",
    );
    // A TEXT topic does not fit in the coordinates index migration 2 makes.
    let mut db = TestDb::new(Backend::Mysql).await;
    db.exec(&layout("TEXT", "INT", "BIGINT")).await;
    kept_layout_refused(&db, "its own topic column is text, which migration 2 keeps");
    // Nor is a processed_at that holds numbers (epoch milliseconds, say) a time to prune by.
    let mut db = TestDb::new(Backend::Mysql).await;
    db.exec(&with_processed_at("BIGINT NOT NULL")).await;
    kept_layout_refused(
        &db,
        "its processed_at column is bigint(20), not a date and time, which migration 2 keeps in \
         a table already in the inbox's layout (prune and inspect would read a number as a \
         date); convert it first (ALTER TABLE processed_messages MODIFY processed_at \
         DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), after",
    );
    // Nor text, which prune would compare with its cutoff row by row, past the index; the
    // statement given makes it the inbox's column, whose default replay's insert relies on.
    let mut db = TestDb::new(Backend::Mysql).await;
    db.exec(&with_processed_at(
        "VARCHAR(32) NOT NULL DEFAULT '2024-01-01 00:00:00'",
    ))
    .await;
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) \
         VALUES ('c', 'e', '2026-12-01 10:00:00')",
    )
    .await;
    let convert = "ALTER TABLE processed_messages MODIFY processed_at DATETIME(6) NOT NULL \
                   DEFAULT CURRENT_TIMESTAMP(6)";
    kept_layout_refused(
        &db,
        &format!(
            "its processed_at column is varchar(32), not a date and time, which migration 2 \
             keeps in a table already in the inbox's layout (prune would compare text with its \
             cutoff row by row, past the index); convert it first ({convert}, after"
        ),
    );
    db.exec(convert).await;
    db.run(&["migrate", "run"]).ok();
    db.exec("INSERT INTO processed_messages (consumer, event_id) VALUES ('c', 'new')")
        .await;
    let pool = db.pool().await;
    let recent: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM processed_messages WHERE processed_at > NOW() - INTERVAL 1 DAY",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(recent, 1);
    // Nor a time without a default of the time a row is written: the inbox's insert gives
    // none, and MySQL's INSERT IGNORE would date its rows 0000-00-00.
    let mut db = TestDb::new(Backend::Mysql).await;
    db.exec(&with_processed_at("DATETIME(6) NOT NULL")).await;
    kept_layout_refused(
        &db,
        &format!(
            "its processed_at column has no default, where the inbox's is the time a row is \
             written, which replay's insert relies on and migration 2 keeps in a table already \
             in the inbox's layout (the rows replay records would be dated 0000-00-00, and prune \
             delete them by that); give it that default ({convert})"
        ),
    );
    db.exec(convert).await;
    db.run(&["migrate", "run"]).ok();
    // Nor one that may be NULL: inspect cannot read such a row, and prune never deletes it.
    // The statements given fill in the rows without a time first.
    let mut db = TestDb::new(Backend::Mysql).await;
    db.exec(&with_processed_at("DATETIME(6) NULL")).await;
    db.exec("INSERT INTO processed_messages (consumer, event_id) VALUES ('c', 'e')")
        .await;
    let fill = "UPDATE processed_messages SET processed_at = UTC_TIMESTAMP(6) WHERE processed_at \
                IS NULL";
    kept_layout_refused(
        &db,
        &format!(
            "its processed_at column may be NULL, which migration 2 keeps in a table already in \
             the inbox's layout, where the inbox's is NOT NULL (inspect cannot read a row \
             without a time, and prune never deletes it); give such rows a time and make the \
             column the inbox's ({fill}, then {convert})"
        ),
    );
    db.exec(fill).await;
    db.exec(convert).await;
    db.run(&["migrate", "run"]).ok();
    // Nor a key on the first characters of an id, which takes two ids alike in those for one
    // event, nor another unique key that can refuse what the inbox's keeps apart. The
    // statement given makes the key whole, a TEXT id included.
    let mut db = TestDb::new(Backend::Mysql).await;
    db.exec(
        &layout("VARCHAR(255)", "INT", "BIGINT")
            .replace(
                "event_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL",
                "event_id TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL",
            )
            .replace(
                "PRIMARY KEY (consumer, event_id)",
                "PRIMARY KEY (consumer, event_id(20)), UNIQUE KEY once (event_id(100))",
            ),
    )
    .await;
    let whole = "ALTER TABLE processed_messages MODIFY consumer VARCHAR(255) CHARACTER SET \
                 utf8mb4 COLLATE utf8mb4_bin NOT NULL, MODIFY event_id VARCHAR(255) CHARACTER \
                 SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, DROP PRIMARY KEY, ADD PRIMARY KEY \
                 (consumer, event_id)";
    kept_layout_refused(
        &db,
        &format!(
            "its primary key holds only the first characters of a column (event_id(20)), which \
             migration 2 keeps in a table already in the inbox's layout, and two event ids alike \
             in those would be taken for one event; make the key whole on the inbox's columns \
             ({whole}); its unique key once on (event_id(100)) holds only the first characters \
             of event_id, so it can refuse rows that the inbox's key keeps apart"
        ),
    );
    db.exec(whole).await;
    db.exec("ALTER TABLE processed_messages DROP INDEX once")
        .await;
    db.run(&["migrate", "run"]).ok();
    let alike = format!("{}-", "e".repeat(20));
    db.exec(&format!(
        "INSERT INTO processed_messages (consumer, event_id) VALUES ('c', '{alike}a'), \
         ('c', '{alike}b')"
    ))
    .await;
    assert_eq!(db.count("processed_messages").await, 2);
    // Wider coordinates are taken, and a default of the time in UTC, which an application
    // whose sessions are in another zone rightly has.
    let mut db = TestDb::new(Backend::Mysql).await;
    db.exec(
        &layout("VARCHAR(249)", "BIGINT UNSIGNED", "DECIMAL(20,0)")
            .replace("CURRENT_TIMESTAMP(6)", "UTC_TIMESTAMP(6)"),
    )
    .await;
    db.run(&["migrate", "run"]).ok();
}

/// A MySQL table keyed (consumer, event_id) without the coordinates is adopted (migration 2
/// is in place only with both); one where all of migration 2 is in place but not recorded is
/// only recorded, as its dry run says, however it was changed since.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_migration_2_is_in_place_by_its_key_and_its_coordinates() {
    let mut db = TestDb::new(Backend::Mysql).await;
    db.exec(
        "CREATE TABLE processed_messages (event_id VARCHAR(255) NOT NULL, consumer VARCHAR(255) \
         NOT NULL, processed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), \
         PRIMARY KEY (consumer, event_id)); \
         INSERT INTO processed_messages (event_id, consumer) VALUES ('a', 'c1'), ('a', 'c2')",
    )
    .await;
    db.run(&["migrate", "run"]).ok();
    assert_eq!(db.schema().await, expected_schema(Backend::Mysql));
    db.run(&["inspect"]).ok();

    // Unrecorded, and its event_id widened since: recorded, not refused.
    db.exec(
        "DELETE FROM inboxctl_migrations WHERE version = 2; \
         ALTER TABLE processed_messages MODIFY event_id VARCHAR(512) CHARACTER SET utf8mb4 \
         COLLATE utf8mb4_bin NOT NULL",
    )
    .await;
    let dry = db.run(&["migrate", "run", "--dry-run"]).ok();
    assert!(
        dry.stdout
            .contains("-- nothing to run: its change is already in place"),
        "{}",
        dry.stdout
    );
    let run = db.run(&["migrate", "run"]).ok();
    assert!(run.stdout.contains("Applied 2/"), "{}", run.stdout);
    assert_eq!(
        migration_states(&db),
        [(1, "applied".into()), (2, "applied".into())]
    );

    // A TIMESTAMP column there stays one: no note says it was converted.
    db.exec(
        "DELETE FROM inboxctl_migrations WHERE version = 2; \
         ALTER TABLE processed_messages MODIFY processed_at TIMESTAMP(6) NOT NULL \
         DEFAULT CURRENT_TIMESTAMP(6)",
    )
    .await;
    let run = db.run(&["migrate", "run"]).ok();
    assert!(run.stdout.contains("Applied 2/"), "{}", run.stdout);
    assert_eq!(run.stderr, "");
}

/// A MySQL table made by hand in the current layout, without inboxctl's two indexes, is
/// taken for migration 2 in place: the indexes it lacks are made (its dry run says which),
/// and it reverts as one that migrate made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_a_table_in_place_gets_the_indexes_it_lacks() {
    let mut db = TestDb::new(Backend::Mysql).await;
    db.run(&["migrate", "run"]).ok();
    let migrated = db.schema().await;
    db.exec(
        "DROP INDEX processed_messages_consumer_processed_at_idx ON processed_messages; \
         DROP INDEX processed_messages_consumer_coordinates_idx ON processed_messages; \
         DROP TABLE inboxctl_migrations",
    )
    .await;
    let dry = db.run(&["migrate", "run", "--dry-run"]).ok();
    assert!(
        dry.stdout.contains(
            "-- its change is already in place but for these indexes, which are made, and it \
             is recorded\nCREATE INDEX processed_messages_consumer_processed_at_idx"
        ),
        "{}",
        dry.stdout
    );
    db.run(&["migrate", "run"]).ok();
    assert_eq!(db.schema().await, migrated);
    assert_eq!(
        migration_states(&db),
        [(1, "applied".into()), (2, "applied".into())]
    );
    db.run(&["migrate", "revert", "--yes"]).ok();
    assert_eq!(
        migration_states(&db),
        [(1, "applied".into()), (2, "pending".into())]
    );
}

/// A PostgreSQL unique key is judged by its key columns: `INCLUDE (consumer)` does not make
/// `UNIQUE (event_id)` per consumer, nor does a predicate (which may cover every row); an
/// exclusion constraint counts as a unique key, and another table's foreign key holds the
/// key migration 2 replaces. A table without columns is no inbox, not a missing one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_adoption_judges_unique_keys_by_their_key_columns() {
    let classic = "CREATE TABLE processed_messages (event_id text PRIMARY KEY, consumer text \
                   NOT NULL, processed_at timestamptz NOT NULL DEFAULT now());";
    let mut db = TestDb::new(Backend::Postgres).await;
    db.exec(&format!(
        "{classic} CREATE UNIQUE INDEX u1 ON processed_messages (event_id) INCLUDE (consumer)"
    ))
    .await;
    let refused = db.run(&["migrate", "run"]).code(1);
    assert!(
        refused
            .stderr
            .contains("its unique key u1 on (event_id) does not hold both consumer and event_id"),
        "{}",
        refused.stderr
    );
    for (more, reason) in [
        (
            "CREATE UNIQUE INDEX u1 ON processed_messages (event_id) WHERE consumer IS NOT NULL",
            "its unique key u1 on (event_id) does not hold both",
        ),
        (
            "ALTER TABLE processed_messages ADD CONSTRAINT ex EXCLUDE USING btree (event_id WITH =)",
            "its exclusion constraint ex on (event_id) does not hold both",
        ),
        (
            "ALTER TABLE processed_messages ADD COLUMN topic varchar(100), ADD COLUMN \
             \"offset\" text",
            "its own topic column is character varying(100), which migration 2 keeps, where \
             the inbox writes text there; change its type or rename the column; its own offset \
             column is text, which migration 2 keeps, where the inbox writes bigint there",
        ),
        (
            "CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; \
             END$$; CREATE TRIGGER touched BEFORE UPDATE OF processed_at ON processed_messages \
             FOR EACH ROW EXECUTE FUNCTION touch()",
            "trigger touched depends on its processed_at, whose type migration 2 sets",
        ),
        (
            "ALTER TABLE processed_messages ADD COLUMN day date GENERATED ALWAYS AS \
             (CAST(processed_at AT TIME ZONE 'UTC' AS date)) STORED",
            "generated column day depends on its processed_at",
        ),
        (
            "CREATE TABLE child (e text REFERENCES processed_messages (event_id))",
            "table(s) child reference it by foreign key, which migration 2 cannot keep while \
             it changes the table's key",
        ),
    ] {
        let mut db = TestDb::new(Backend::Postgres).await;
        db.exec(&format!("{classic} {more}")).await;
        for args in [&["migrate", "run", "--dry-run"][..], &["migrate", "run"]] {
            let refused = db.run(args).code(1);
            assert!(refused.stderr.contains(reason), "{more}: {}", refused.stderr);
        }
        assert!(!db.table_exists("inboxctl_migrations").await);
    }

    // Times kept as epoch milliseconds: PostgreSQL has no cast of its own to timestamptz.
    let mut db = TestDb::new(Backend::Postgres).await;
    db.exec(
        "CREATE TABLE processed_messages (event_id text PRIMARY KEY, consumer text NOT NULL, \
         processed_at bigint NOT NULL)",
    )
    .await;
    let refused = db.run(&["migrate", "run", "--dry-run"]).code(1);
    assert!(
        refused.stderr.contains(
            "cannot adopt table processed_messages: its processed_at column is bigint, which \
             migration 2 cannot turn into a time without being told how"
        ),
        "{}",
        refused.stderr
    );
    // Partitioned by time, for retention: no key (consumer, event_id) can be made on it. By
    // consumer, it can.
    let partitioned = |by: &str| {
        format!(
            "CREATE TABLE processed_messages (event_id text NOT NULL, consumer text NOT NULL, \
             processed_at timestamptz NOT NULL DEFAULT now()) PARTITION BY {by}; \
             CREATE TABLE processed_messages_all PARTITION OF processed_messages DEFAULT"
        )
    };
    let mut db = TestDb::new(Backend::Postgres).await;
    db.exec(&partitioned("RANGE (processed_at)")).await;
    for args in [&["migrate", "run", "--dry-run"][..], &["migrate", "run"]] {
        let refused = db.run(args).code(1);
        assert!(
            refused.stderr.contains(
                "cannot adopt table processed_messages: it is partitioned by RANGE \
                 (processed_at), and a partitioned table's primary key must hold its partition \
                 key, so migration 2 cannot make the key (consumer, event_id)"
            ),
            "{args:?}: {}",
            refused.stderr
        );
    }
    let mut db = TestDb::new(Backend::Postgres).await;
    db.exec(&partitioned("LIST (consumer)")).await;
    db.run(&["migrate", "run"]).ok();

    // An index over an expression of a timestamptz processed_at survives the change.
    let mut db = TestDb::new(Backend::Postgres).await;
    db.exec(&format!(
        "{classic} CREATE INDEX by_day ON processed_messages \
         ((CAST(processed_at AT TIME ZONE 'UTC' AS date)))"
    ))
    .await;
    db.run(&["migrate", "run"]).ok();

    // Coordinates of its own that fit, a domain over text among them, are kept.
    let mut db = TestDb::new(Backend::Postgres).await;
    db.exec(&format!(
        "CREATE DOMAIN topic_name AS text; {classic} ALTER TABLE processed_messages ADD COLUMN \
         topic topic_name, ADD COLUMN \"partition\" int4, ADD COLUMN \"offset\" int8"
    ))
    .await;
    db.run(&["migrate", "run"]).ok();
    // A foreign key to another unique key than the primary key, which migration 2 keeps,
    // stays valid throughout: adopted, the key still enforced.
    let mut db = TestDb::new(Backend::Postgres).await;
    db.exec(&format!(
        "{classic} ALTER TABLE processed_messages ADD CONSTRAINT by_both UNIQUE (consumer, \
         event_id); CREATE TABLE child (c text, e text, FOREIGN KEY (c, e) REFERENCES \
         processed_messages (consumer, event_id)); \
         INSERT INTO processed_messages (event_id, consumer) VALUES ('e1', 'c1'); \
         INSERT INTO child VALUES ('c1', 'e1')"
    ))
    .await;
    db.run(&["migrate", "run"]).ok();
    let orphan = db.try_exec("INSERT INTO child VALUES ('c2', 'e1')").await;
    assert!(orphan.is_err(), "the foreign key was lost");

    let mut db = TestDb::new(Backend::Postgres).await;
    db.exec("CREATE TABLE processed_messages ()").await;
    for args in [&["inspect"][..], &["migrate", "run", "--dry-run"]] {
        let refused = db.run(args).code(1);
        assert!(
            refused.stderr.contains(
                "is not an inbox table: it lacks the column(s) consumer, event_id, processed_at"
            ),
            "{args:?}: {}",
            refused.stderr
        );
    }
}

/// MySQL tells that migration 2 is in place by the table's primary key, not by an index a
/// DBA may rename: after a rename, `status` still says applied and `run` has nothing to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_migration_2_stays_applied_after_its_index_is_renamed() {
    let mut db = TestDb::new(Backend::Mysql).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(
        "ALTER TABLE processed_messages RENAME INDEX \
         processed_messages_consumer_coordinates_idx TO coordinates",
    )
    .await;
    assert_eq!(
        migration_states(&db),
        [(1, "applied".into()), (2, "applied".into())]
    );
    let again = db.run(&["migrate", "run"]).ok();
    assert!(
        again.stdout.starts_with("Nothing to do"),
        "{}",
        again.stdout
    );
}

/// A run whose second migration fails says that it applied the first, which stays applied
/// (on SQLite the run is one transaction, and nothing stays); fixed, the next run goes on.
async fn a_run_that_fails_midway_says_what_it_applied(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    // What the server refuses only as it runs the change, which nothing checks before: on
    // PostgreSQL another session's lock past the lock_timeout the URL sets; on MariaDB a row
    // too large for the compressed row format once the coordinates are added; on SQLite a
    // table named like the one the rebuild makes.
    let (table, options, obstacle, fix) = match backend {
        Backend::Postgres => (
            "event_id text PRIMARY KEY, consumer text NOT NULL, \
             processed_at timestamptz NOT NULL DEFAULT now()",
            "",
            "",
            "",
        ),
        Backend::Mysql => (
            "event_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PRIMARY KEY, \
             consumer VARCHAR(255) NOT NULL, \
             processed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)",
            " ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4",
            "",
            "ALTER TABLE processed_messages ROW_FORMAT=DYNAMIC KEY_BLOCK_SIZE=0",
        ),
        Backend::Sqlite => (
            "event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, \
             processed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP",
            "",
            "; CREATE TABLE processed_messages_inboxctl_new (x INTEGER)",
            "DROP TABLE processed_messages_inboxctl_new",
        ),
    };
    db.exec(&format!(
        "CREATE TABLE processed_messages ({table}){options}; \
         INSERT INTO processed_messages (event_id, consumer) VALUES ('e1', 'c'){obstacle}"
    ))
    .await;
    let pool = db.pool().await;
    let mut lock = pool.begin().await.unwrap();
    let mut command = db.cmd();
    if backend == Backend::Postgres {
        sqlx::query("LOCK TABLE processed_messages IN ACCESS SHARE MODE")
            .execute(&mut *lock)
            .await
            .unwrap();
        let separator = if db.url.contains('?') { '&' } else { '?' };
        command.env(
            "DATABASE_URL",
            format!("{}{separator}options=-c%20lock_timeout%3D100ms", db.url),
        );
    }
    let failed = Run::from(command.args(["migrate", "run"]).output().unwrap()).code(1);
    lock.rollback().await.unwrap();
    let (applied, states, cause) = match backend {
        Backend::Postgres => (
            " (this run applied 1 before it)",
            vec![(1, "applied".into()), (2, "pending".into())],
            "canceling statement due to lock timeout",
        ),
        Backend::Mysql => (
            " (this run applied 1 before it)",
            vec![(1, "applied".into()), (2, "pending".into())],
            "1118 (42000): Row size too large.",
        ),
        Backend::Sqlite => (
            "",
            vec![(1, "pending".into()), (2, "pending".into())],
            "table processed_messages_inboxctl_new already exists",
        ),
    };
    // On PostgreSQL the lock_timeout the URL sets is the session's own, which the run keeps
    // where --lock-timeout is not given.
    let first = match backend {
        Backend::Postgres => {
            "error: could not lock the inbox's tables within 100ms (the session's lock_timeout), "
        }
        _ => "error: migration 2 (",
    };
    assert!(
        failed.stderr.starts_with(first)
            && failed.stderr.contains(&format!(
                "migration 2 (key (consumer, event_id), topic/partition/offset, indexes) \
                 failed{applied}: "
            ))
            && failed.stderr.contains(cause),
        "{}",
        failed.stderr
    );
    assert_eq!(migration_states(&db), states);
    assert_eq!(db.count("processed_messages").await, 1);
    if !fix.is_empty() {
        db.exec(fix).await;
    }
    let again = db.run(&["migrate", "run"]).ok();
    assert!(again.stdout.contains("Applied 2/"), "{}", again.stdout);
    assert_eq!(
        again.stdout.contains("Applied 1/"),
        backend == Backend::Sqlite,
        "{}",
        again.stdout
    );
    assert_eq!(db.count("processed_messages").await, 1);
}

each_backend!(a_run_that_fails_midway_says_what_it_applied);

/// A classic table of one row, and an application's transaction that has read it, which holds
/// a lock `migrate run` must wait for.
async fn classic_table_an_open_transaction_read(
    backend: Backend,
) -> (TestDb, sqlx::Transaction<'static, sqlx::Any>) {
    let mut db = TestDb::new(backend).await;
    db.exec(match backend {
        Backend::Postgres => "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, processed_at TIMESTAMPTZ NOT NULL DEFAULT now())",
        _ => "CREATE TABLE processed_messages (event_id VARCHAR(255) PRIMARY KEY, consumer VARCHAR(255) NOT NULL, processed_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP)",
    })
    .await;
    db.exec("INSERT INTO processed_messages (event_id, consumer) VALUES ('e1', 'c')")
        .await;
    let pool = db.pool().await;
    let mut reader = pool.begin().await.unwrap();
    sqlx::raw_sql("SELECT COUNT(*) FROM processed_messages")
        .execute(&mut *reader)
        .await
        .unwrap();
    (db, reader)
}

/// Once the transaction ends, `migrate run` applies what is pending and keeps the row.
async fn migrate_once_the_reader_ends(
    db: &mut TestDb,
    reader: sqlx::Transaction<'static, sqlx::Any>,
) {
    reader.rollback().await.unwrap();
    db.run(&["migrate", "run"]).ok();
    assert_eq!(db.count("inboxctl_migrations").await, 2);
    assert_eq!(db.count("processed_messages").await, 1);
}

/// A migration waits at most --lock-timeout for a lock the application holds (here an open
/// transaction that read the table), since the application's own statements queue behind
/// that wait. It then fails, naming the session, with migration 2 still pending; a run after
/// the transaction ends applies it.
async fn a_migration_gives_up_a_lock_wait_after_its_lock_timeout(backend: Backend) {
    let (mut db, reader) = classic_table_an_open_transaction_read(backend).await;
    // Spawned and waited for with a deadline: a run that waited on would hang the test.
    let mut child = db.spawn(&["migrate", "run", "--lock-timeout", "1s"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let code = wait_until(&mut child, deadline);
    let run = Run::from(child.wait_with_output().unwrap());
    assert_eq!(code, Some(1), "{}", run.stderr);
    let holder = match backend {
        Backend::Postgres => "; sessions that may hold it: pid ",
        _ => "; sessions that may hold it: connection ",
    };
    for needle in [
        "error: could not lock the inbox's tables within 1s (--lock-timeout), which the \
         application's statements on them queue behind; ",
        holder,
        "run it again once they end, or give --lock-timeout a longer wait (0 waits without limit): \
         migration 2 (",
    ] {
        assert!(run.stderr.contains(needle), "{needle}\n{}", run.stderr);
    }
    let idle = match backend {
        Backend::Postgres => " (idle in transaction for ",
        _ => " (sleep for ",
    };
    assert!(run.stderr.contains(idle), "{}", run.stderr);
    assert_eq!(db.count("inboxctl_migrations").await, 1);
    // Without the option, 5 s where the session has no limit of its own (MariaDB's default
    // lock_wait_timeout, a day, is none), and the error says where the limit came from.
    if backend == Backend::Mysql {
        let mut child = db.spawn(&["migrate", "run"]);
        let code = wait_until(&mut child, deadline);
        let run = Run::from(child.wait_with_output().unwrap());
        assert_eq!(code, Some(1), "{}", run.stderr);
        assert!(
            run.stderr.starts_with(
                "error: could not lock the inbox's tables within 5s (the default; \
                 --lock-timeout sets another), which "
            ),
            "{}",
            run.stderr
        );
    }
    migrate_once_the_reader_ends(&mut db, reader).await;
}

/// Ctrl-C or SIGTERM during a migration cancels its statement on the server before the
/// process ends: left behind, it would go on waiting for its lock (here with no limit), and
/// every statement of the application on the table would queue behind it.
async fn a_signal_cancels_the_migration_in_flight(backend: Backend, signal: &str, code: i32) {
    let mut db = TestDb::new(backend).await;
    db.exec(match backend {
        Backend::Postgres => "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, processed_at TIMESTAMPTZ NOT NULL DEFAULT now())",
        _ => "CREATE TABLE processed_messages (event_id VARCHAR(255) PRIMARY KEY, consumer VARCHAR(255) NOT NULL, processed_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP)",
    })
    .await;
    let pool = db.pool().await;
    let mut reader = pool.begin().await.unwrap();
    sqlx::raw_sql("SELECT COUNT(*) FROM processed_messages")
        .execute(&mut *reader)
        .await
        .unwrap();
    let waiting = match backend {
        Backend::Postgres => {
            "SELECT COUNT(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'"
        }
        _ => {
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
             WHERE DB = DATABASE() AND STATE LIKE 'Waiting for table metadata lock%'"
        }
    };
    let mut child = db.spawn(&["migrate", "run", "--lock-timeout", "0"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while db.scalar(waiting).await == 0 {
        assert!(child.try_wait().unwrap().is_none(), "migrate ended early");
        assert!(std::time::Instant::now() < deadline, "migrate never waited");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    send_signal(signal, &child.id().to_string());
    let ended = wait_until(&mut child, deadline);
    let run = Run::from(child.wait_with_output().unwrap());
    assert_eq!(ended, Some(code), "{}", run.stderr);
    let name = match signal {
        "INT" => "Ctrl-C",
        _ => "SIGTERM",
    };
    assert_eq!(
        run.stderr,
        format!("{name}: cancelling the statement in flight on the server\n")
    );
    // Nothing waits any more, with the reader's transaction still open.
    while db.scalar(waiting).await > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the migration's statement was left waiting"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    reader.rollback().await.unwrap();
    assert_eq!(db.count("inboxctl_migrations").await, 1);
    db.run(&["migrate", "run"]).ok();
    assert_eq!(db.count("inboxctl_migrations").await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_cancels_the_migration_in_flight_on_postgres() {
    a_signal_cancels_the_migration_in_flight(Backend::Postgres, "INT", 130).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_cancels_the_migration_in_flight_on_mysql() {
    a_signal_cancels_the_migration_in_flight(Backend::Mysql, "TERM", 143).await;
}

/// A migration whose session the server ends (an administrator's `pg_terminate_backend` or
/// `KILL`) fails saying its outcome is unknown here and how to settle it; a re-run does.
async fn a_migration_whose_session_the_server_ends_says_how_to_settle_it(backend: Backend) {
    let (mut db, reader) = classic_table_an_open_transaction_read(backend).await;
    let mut child = db.spawn(&["migrate", "run", "--lock-timeout", "60s"]);
    // The migration's session, once it waits for the reader's lock.
    let waiting = match backend {
        Backend::Postgres => {
            "SELECT COALESCE(MAX(pid), 0)::bigint FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'"
        }
        _ => {
            "SELECT COALESCE(MAX(CAST(id AS SIGNED)), 0) FROM information_schema.processlist \
             WHERE db = DATABASE() AND state = 'Waiting for table metadata lock'"
        }
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let session = loop {
        let session = db.scalar(waiting).await;
        if session != 0 {
            break session;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the migration never waited"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    db.exec(&match backend {
        Backend::Postgres => format!("SELECT pg_terminate_backend({session})"),
        _ => format!("KILL {session}"),
    })
    .await;
    let code = wait_until(&mut child, deadline);
    let run = Run::from(child.wait_with_output().unwrap());
    assert_eq!(code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.starts_with("error: migration 2 (")
            && run.stderr.contains(
                ") failed (this run applied 1 before it); the connection to the server was \
                 lost, so whether its change is in place is not known here: `inboxctl migrate \
                 status` says, and `inboxctl migrate run` again applies or records it: "
            ),
        "{}",
        run.stderr
    );
    migrate_once_the_reader_ends(&mut db, reader).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_whose_session_the_server_ends_says_how_to_settle_it_on_postgres() {
    a_migration_whose_session_the_server_ends_says_how_to_settle_it(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_whose_session_the_server_ends_says_how_to_settle_it_on_mysql() {
    a_migration_whose_session_the_server_ends_says_how_to_settle_it(Backend::Mysql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_gives_up_a_lock_wait_after_its_lock_timeout_on_postgres() {
    a_migration_gives_up_a_lock_wait_after_its_lock_timeout(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_gives_up_a_lock_wait_after_its_lock_timeout_on_mysql() {
    a_migration_gives_up_a_lock_wait_after_its_lock_timeout(Backend::Mysql).await;
}

/// Runs `migrate run`, dry and not, on a table already in the inbox's layout, which must
/// both refuse it for reasons that begin with `reasons`: migration 2 is not recorded.
fn kept_layout_refused(db: &TestDb, reasons: &str) {
    for args in [&["migrate", "run", "--dry-run"][..], &["migrate", "run"]] {
        let refused = db.run(args).code(1);
        assert!(
            refused
                .stderr
                .contains(&format!("cannot adopt table processed_messages: {reasons}")),
            "{args:?}: {}",
            refused.stderr
        );
    }
    assert_eq!(
        migration_states(db).last(),
        Some(&(2, "pending".to_string()))
    );
}

/// Runs `migrate run`, dry and not, which must both refuse to adopt the inbox for `reasons`
/// and change nothing: no migration is recorded.
async fn adoption_refused(db: &mut TestDb, reasons: &str) {
    for args in [&["migrate", "run", "--dry-run"][..], &["migrate", "run"]] {
        let refused = db.run(args).code(1);
        assert!(
            refused.stderr.contains(&format!(
                "cannot adopt table processed_messages: {reasons}. Nothing was changed;"
            )),
            "{args:?}: {}",
            refused.stderr
        );
    }
    assert!(!db.table_exists("inboxctl_migrations").await);
}

/// Rows without a consumer or a time (or, on SQLite, whose text key can hold NULL, an event
/// id) are refused before anything is written, on every backend: the change makes those
/// columns NOT NULL. Given them, the run goes on.
async fn rows_without_a_consumer_are_refused(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let text = match backend {
        Backend::Mysql => "VARCHAR(255)",
        _ => "TEXT",
    };
    let key = match backend {
        Backend::Sqlite => "",
        _ => "NOT NULL",
    };
    db.exec(&format!(
        "CREATE TABLE processed_messages (event_id {text} {key} PRIMARY KEY, consumer {text}, \
         processed_at TIMESTAMP NULL DEFAULT CURRENT_TIMESTAMP); \
         INSERT INTO processed_messages (event_id) VALUES ('e1'), ('e2'); \
         INSERT INTO processed_messages (event_id, consumer, processed_at) VALUES ('e3', 'c', NULL)"
    ))
    .await;
    let mut reasons = "2 rows have no consumer (NULL), and migration 2 makes consumer NOT NULL; \
                       give them the consumer that processed them; "
        .to_string();
    // Two, which the look for duplicates must pass over.
    if backend == Backend::Sqlite {
        db.exec(
            "INSERT INTO processed_messages (event_id, consumer) VALUES (NULL, 'c'), (NULL, 'c')",
        )
        .await;
        reasons.push_str(
            "2 rows have no event_id (NULL), and migration 2 makes event_id NOT NULL; give them \
             their event id, or delete them; ",
        );
    }
    reasons.push_str(
        "1 row has no processed_at (NULL), and migration 2 makes processed_at NOT NULL; give it \
         the time it was processed",
    );
    adoption_refused(&mut db, &reasons).await;
    db.exec(
        "UPDATE processed_messages SET consumer = 'c', processed_at = CURRENT_TIMESTAMP; \
         DELETE FROM processed_messages WHERE event_id IS NULL",
    )
    .await;
    db.run(&["migrate", "run"]).ok();
    assert_eq!(db.count("processed_messages").await, 3);
}

each_backend!(rows_without_a_consumer_are_refused);

/// Rows that migration 2's key `(consumer, event_id)` would hold as one are refused before
/// anything is written, compared as the new key compares them: a table without a key
/// (PostgreSQL), an `event_id` in a collation where trailing spaces count (MySQL converts it
/// to `utf8mb4_bin`, where they do not), an untyped key holding the number 1 and the text '1'
/// (SQLite copies both into a TEXT column). With the extra rows deleted, the run goes on.
async fn rows_the_new_key_would_hold_as_one_are_refused(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let (table, rows, expected) = match backend {
        // A unique index on the key proves nothing where it is partial (or invalid, as a
        // CREATE UNIQUE INDEX CONCURRENTLY that failed leaves it).
        Backend::Postgres => (
            "event_id text NOT NULL, consumer text NOT NULL, \
             processed_at timestamptz NOT NULL DEFAULT now()",
            "('e2', 'c'), ('e2', 'c'), ('e2', 'c'), ('e1', 'c'), ('e1', 'c'), ('e3', 'c'), \
             ('e3', 'c'), ('e1', 'd'), ('e1', 'd'), ('e4', 'c')",
            "4 (consumer, event_id) pairs are each held by more than one row: (c, e2) in 3 rows, \
             (c, e1) in 2 rows, (c, e3) in 2 rows, …; migration 2's key (consumer, event_id) \
             holds one row for each, so keep one and delete the others",
        ),
        Backend::Mysql => (
            "event_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin PRIMARY KEY, \
             consumer VARCHAR(255) NOT NULL, \
             processed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)",
            "('x', 'c'), ('x ', 'c'), ('y', 'c')",
            "1 (consumer, event_id) is held by more than one row, compared as utf8mb4_bin \
             compares them (trailing spaces ignored): (c, x) in 2 rows; migration 2's key \
             (consumer, event_id) holds one row for each, so keep one and delete the others",
        ),
        Backend::Sqlite => (
            "event_id PRIMARY KEY, consumer TEXT NOT NULL, \
             processed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP",
            "(1, 'c'), ('1', 'c'), ('2', 'c')",
            "1 (consumer, event_id) is held by more than one row, compared as text (the number \
             1 and the text '1' are one id): (c, 1) in 2 rows; migration 2's key (consumer, \
             event_id) holds one row for each, so keep one and delete the others",
        ),
    };
    db.exec(&format!(
        "CREATE TABLE processed_messages ({table}); \
         INSERT INTO processed_messages (event_id, consumer) VALUES {rows}"
    ))
    .await;
    if backend == Backend::Postgres {
        db.exec(
            "CREATE UNIQUE INDEX recent ON processed_messages (consumer, event_id) \
             WHERE processed_at > '2100-01-01'",
        )
        .await;
    }
    let total = db.count("processed_messages").await;
    adoption_refused(&mut db, expected).await;
    assert_eq!(db.count("processed_messages").await, total);
    let extra = match backend {
        Backend::Postgres => {
            "DELETE FROM processed_messages a USING processed_messages b \
             WHERE a.consumer = b.consumer AND a.event_id = b.event_id AND a.ctid > b.ctid"
        }
        Backend::Mysql => "DELETE FROM processed_messages WHERE event_id = 'x '",
        Backend::Sqlite => "DELETE FROM processed_messages WHERE event_id = 1",
    };
    db.exec(extra).await;
    db.run(&["migrate", "run"]).ok();
    let kept = match backend {
        Backend::Postgres => 5,
        _ => 2,
    };
    assert_eq!(db.count("processed_messages").await, kept);

    // A SQLite table already in the inbox's layout is not copied: its untyped 1 and '1' stay
    // two ids, and the run only adds the indexes.
    if backend == Backend::Sqlite {
        let mut db = TestDb::new(backend).await;
        db.exec(
            "CREATE TABLE processed_messages (consumer NOT NULL, event_id NOT NULL, topic TEXT, \
             \"partition\" INTEGER, \"offset\" BIGINT, processed_at TIMESTAMP NOT NULL \
             DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (consumer, event_id)); \
             INSERT INTO processed_messages (consumer, event_id) VALUES ('c', 1), ('c', '1')",
        )
        .await;
        db.run(&["migrate", "run"]).ok();
        assert_eq!(db.count("processed_messages").await, 2);
    }
}

/// MariaDB converts consumer and event_id to utf8mb4: values of another character set that
/// utf8mb4 has no match for would be refused, or become '?' (and then duplicates), so they
/// are refused before anything is written, as themselves. Without them the run goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_key_values_utf8mb4_cannot_hold_are_refused() {
    let mut db = TestDb::new(Backend::Mysql).await;
    db.exec(
        "CREATE TABLE processed_messages (event_id VARCHAR(100) CHARACTER SET sjis \
         COLLATE sjis_bin NOT NULL PRIMARY KEY, consumer VARCHAR(100) NOT NULL, \
         processed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)); \
         INSERT INTO processed_messages (event_id, consumer) \
         VALUES (_sjis 0x8540, 'c'), (_sjis 0x8541, 'c'), ('x?', 'c')",
    )
    .await;
    adoption_refused(
        &mut db,
        "2 rows have an event_id with characters utf8mb4 has no match for, which migration 2's \
         conversion to utf8mb4 cannot keep (it would refuse them, or make them '?'); change or \
         delete those rows first (then migrate also checks for rows the new key would hold as \
         one)",
    )
    .await;
    assert_eq!(db.count("processed_messages").await, 3);
    db.exec("DELETE FROM processed_messages WHERE event_id <> 'x?'")
        .await;
    // A float key that two values share as text once converted: a duplicate then.
    let mut floats = TestDb::new(Backend::Mysql).await;
    floats
        .exec(
            "CREATE TABLE processed_messages (event_id FLOAT PRIMARY KEY, consumer VARCHAR(255) \
             NOT NULL, processed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)); \
             INSERT INTO processed_messages (event_id, consumer) \
             VALUES (1.00001e0, 'c'), (1.000011e0, 'c'), (1.5e0, 'c')",
        )
        .await;
    let refused = floats.run(&["migrate", "run", "--dry-run"]).code(1);
    assert!(
        refused
            .stderr
            .contains("1 (consumer, event_id) is held by more than one row"),
        "{}",
        refused.stderr
    );
    db.run(&["migrate", "run"]).ok();
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM processed_messages WHERE event_id = 'x?'")
            .await,
        1
    );
}

each_backend!(rows_the_new_key_would_hold_as_one_are_refused);

/// What already holds the name of an object migration 2 makes is refused before anything is
/// written: the server would refuse to make the object, or take the one there for it (the
/// inbox would go without its processed_at index, say). An index of the inbox that is already
/// the one migration 2 makes keeps its name. Renamed, the run makes the inbox's schema.
async fn names_migration_2_gives_its_own_objects_must_be_free(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let (setup, expected, fix) = match backend {
        Backend::Postgres => (
            "CREATE TABLE processed_messages (event_id text CONSTRAINT classic_key PRIMARY KEY, \
             consumer text NOT NULL, processed_at timestamptz NOT NULL DEFAULT now()); \
             CREATE TABLE processed_messages_pkey (id int); \
             CREATE TABLE other (id int); \
             CREATE INDEX processed_messages_consumer_processed_at_idx ON other (id); \
             CREATE INDEX processed_messages_consumer_coordinates_idx \
             ON processed_messages (consumer) WHERE consumer <> ''; \
             ALTER TABLE processed_messages ADD CONSTRAINT processed_messages_pkey \
             CHECK (consumer <> '')",
            "constraint processed_messages_pkey of table processed_messages has a name \
             migration 2 gives to one of its own; drop or rename it; \
             index processed_messages_consumer_coordinates_idx of table processed_messages has \
             a name migration 2 gives to one of its own; drop or rename it; index \
             processed_messages_consumer_processed_at_idx of table other has a name migration 2 \
             gives to one of its own; drop or rename it; table processed_messages_pkey has a \
             name migration 2 gives to one of its own; drop or rename it",
            "DROP TABLE processed_messages_pkey; DROP TABLE other; \
             ALTER TABLE processed_messages DROP CONSTRAINT processed_messages_pkey; \
             DROP INDEX processed_messages_consumer_coordinates_idx; \
             CREATE INDEX processed_messages_consumer_processed_at_idx \
             ON processed_messages (consumer, processed_at)",
        ),
        Backend::Mysql => (
            "CREATE TABLE processed_messages (event_id VARCHAR(255) CHARACTER SET utf8mb4 \
             COLLATE utf8mb4_bin PRIMARY KEY, consumer VARCHAR(255) NOT NULL, \
             processed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), \
             KEY processed_messages_consumer_coordinates_idx (consumer))",
            "index processed_messages_consumer_coordinates_idx of table processed_messages has \
             a name migration 2 gives to one of its own; drop or rename it",
            "DROP INDEX processed_messages_consumer_coordinates_idx ON processed_messages",
        ),
        Backend::Sqlite => (
            "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT \
             NULL, processed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP); \
             CREATE TABLE other (id INTEGER); \
             CREATE INDEX Processed_Messages_Consumer_Processed_At_Idx ON other (id); \
             CREATE VIEW processed_messages_consumer_coordinates_idx AS SELECT 1",
            "index Processed_Messages_Consumer_Processed_At_Idx of table other has a name \
             migration 2 gives to one of its own; drop or rename it; view \
             processed_messages_consumer_coordinates_idx has a name migration 2 gives to one \
             of its own; drop or rename it",
            "DROP INDEX processed_messages_consumer_processed_at_idx; \
             DROP VIEW processed_messages_consumer_coordinates_idx",
        ),
    };
    db.exec(setup).await;
    db.exec("INSERT INTO processed_messages (event_id, consumer) VALUES ('e1', 'c')")
        .await;
    adoption_refused(&mut db, expected).await;
    db.exec(fix).await;
    db.run(&["migrate", "run"]).ok();
    assert_eq!(db.schema().await, expected_schema(backend));
    assert_eq!(db.count("processed_messages").await, 1);
}

each_backend!(names_migration_2_gives_its_own_objects_must_be_free);

/// Reverting migration 2 drops the Kafka coordinates with their columns: while rows hold
/// them, only with a confirmation (`--yes` without a terminal); without rows that do, as
/// before.
async fn reverting_the_coordinates_away_needs_a_confirmation(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let now = chrono::Utc::now();
    db.insert_rows(&[
        row("billing", "e1", Some(("orders", 0, 7)), now),
        row("billing", "e2", None, now),
    ])
    .await;
    let refused = db.run(&["migrate", "revert"]).code(2);
    assert_eq!(
        refused.stderr,
        "error: refusing to drop the topic, partition and offset of 1 row of \
         processed_messages without confirmation; pass --yes\n"
    );
    assert_eq!(
        migration_states(&db),
        [(1, "applied".into()), (2, "applied".into())]
    );
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM processed_messages WHERE topic = 'orders'")
            .await,
        1
    );
    db.run(&["migrate", "revert", "--yes"]).ok();
    assert_eq!(
        migration_states(&db),
        [(1, "applied".into()), (2, "pending".into())]
    );
    assert_eq!(db.count("processed_messages").await, 2);

    // Without coordinates to lose, no confirmation is asked.
    db.run(&["migrate", "run"]).ok();
    db.run(&["migrate", "revert"]).ok();
    assert_eq!(
        migration_states(&db),
        [(1, "applied".into()), (2, "pending".into())]
    );
}

each_backend!(reverting_the_coordinates_away_needs_a_confirmation);

/// PostgreSQL reverts in one transaction: when `revert --to 0` cannot drop the table (another
/// table's foreign key holds it), migration 2 is not forgotten either, and `run` and `revert`
/// both still work from where the database is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_revert_that_fails_reverts_nothing() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id) VALUES ('c', 'e1'); \
         CREATE TABLE invoices (id int, consumer text, event_id text, \
         FOREIGN KEY (consumer, event_id) REFERENCES processed_messages (consumer, event_id)); \
         INSERT INTO invoices VALUES (1, 'c', 'e1')",
    )
    .await;
    let schema = db.schema().await;
    let failed = db.run(&["migrate", "revert", "--to", "0", "--yes"]).code(1);
    assert!(
        failed.stderr.starts_with(
            "error: reverting migration 1 (classic processed_messages table (created if \
             missing)) failed; nothing was reverted: "
        ),
        "{}",
        failed.stderr
    );
    assert!(
        failed
            .stderr
            .contains("cannot drop table processed_messages"),
        "{}",
        failed.stderr
    );
    assert_eq!(db.schema().await, schema);
    assert_eq!(
        migration_states(&db),
        [(1, "applied".into()), (2, "applied".into())]
    );
    let again = db.run(&["migrate", "run"]).ok();
    assert!(
        again.stdout.starts_with("Nothing to do"),
        "{}",
        again.stdout
    );
    assert_eq!(
        (
            db.count("processed_messages").await,
            db.count("invoices").await
        ),
        (1, 1)
    );
}

/// Column names are matched as the backend's SQL matches the unquoted names inboxctl writes:
/// in any case on SQLite and MySQL, where `Consumer` is `consumer`; on PostgreSQL a quoted
/// `"Consumer"` is another name, and the table is no inbox.
async fn classic_columns_spelled_in_capitals(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let classic = match backend {
        Backend::Postgres => r#"CREATE TABLE processed_messages ("Event_Id" TEXT PRIMARY KEY, "Consumer" TEXT NOT NULL, "Processed_At" TIMESTAMPTZ NOT NULL DEFAULT now())"#,
        Backend::Mysql => "CREATE TABLE processed_messages (Event_Id VARCHAR(255) PRIMARY KEY, Consumer VARCHAR(255) NOT NULL, Processed_At DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP)",
        Backend::Sqlite => "CREATE TABLE processed_messages (Event_Id TEXT PRIMARY KEY, Consumer TEXT NOT NULL, Processed_At TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)",
    };
    db.exec(classic).await;
    let refused = db.run(&["inspect"]).code(1);
    let expected = match backend {
        Backend::Postgres => {
            "is not an inbox table: it lacks the column(s) consumer, event_id, processed_at"
        }
        Backend::Mysql | Backend::Sqlite => {
            "has the classic layout (no topic/partition/offset); adopt it with `inboxctl migrate run`"
        }
    };
    assert!(refused.stderr.contains(expected), "{}", refused.stderr);
}

/// Runs `args`, which must refuse the inbox as a view before changing anything.
fn refused_as_a_view(db: &TestDb, args: &[&str]) {
    let refused = db.run(args).code(1);
    assert!(
        refused.stderr.starts_with("error: processed_messages in ")
            && refused.stderr.ends_with(
                "is a view, not a table: the migrations create and alter the inbox table \
                 itself; run migrate on the database that holds the table. Nothing was \
                 changed\n"
            ),
        "{args:?}: {}",
        refused.stderr
    );
}

/// A view named like the inbox, over a table elsewhere: the migrations would create or alter
/// a table of that name, so migrate refuses, dry run or not, and records nothing. On
/// PostgreSQL and MySQL prune deletes through such a view (by key) all the same.
async fn a_view_of_the_inbox_name_is_refused_by_migrate(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let time = match backend {
        Backend::Postgres => "TIMESTAMPTZ",
        Backend::Mysql => "DATETIME(6)",
        Backend::Sqlite => "TEXT",
    };
    db.exec(&format!(
        "CREATE TABLE real_inbox (consumer VARCHAR(100) NOT NULL, event_id VARCHAR(100) NOT NULL, \
         topic VARCHAR(100), partition_no INT, offset_no BIGINT, processed_at {time} NOT NULL, \
         PRIMARY KEY (consumer, event_id))"
    ))
    .await;
    let (partition, offset) = (
        backend.dialect().quote("partition"),
        backend.dialect().quote("offset"),
    );
    db.exec(&format!(
        "CREATE VIEW processed_messages AS SELECT consumer, event_id, topic, \
         partition_no AS {partition}, offset_no AS {offset}, processed_at FROM real_inbox"
    ))
    .await;
    db.exec(
        "INSERT INTO real_inbox (consumer, event_id, processed_at) VALUES \
         ('c', 'old', '2020-01-01 00:00:00'), ('c', 'new', '2100-01-01 00:00:00')",
    )
    .await;
    for args in [&["migrate", "run", "--dry-run"][..], &["migrate", "run"]] {
        refused_as_a_view(&db, args);
    }
    assert!(!db.table_exists("inboxctl_migrations").await);
    let inspected = db.run(&["inspect", "--format", "json"]).ok().json();
    assert_eq!(inspected["total_rows"], 2);
    if backend != Backend::Sqlite {
        let json = db
            .run(&[
                "prune",
                "--before",
                "2021-01-01",
                "--yes",
                "--format",
                "json",
            ])
            .ok()
            .json();
        assert_eq!(json["rows_deleted"], 1);
        assert_eq!(db.count("real_inbox").await, 1);
    }

    // A migrated inbox moved behind a view of its name is there, not dropped: its
    // migrations stay applied.
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    db.exec("ALTER TABLE processed_messages RENAME TO real_inbox")
        .await;
    db.exec("CREATE VIEW processed_messages AS SELECT * FROM real_inbox")
        .await;
    assert_eq!(
        migration_states(&db),
        [(1, "applied".into()), (2, "applied".into())]
    );
    // Nor is it reverted: its migrations would alter or drop the view, or be forgotten.
    for args in [
        &["migrate", "revert", "--dry-run"][..],
        &["migrate", "revert"],
        &["migrate", "revert", "--to", "0", "--yes"],
    ] {
        refused_as_a_view(&db, args);
    }
    assert_eq!(
        migration_states(&db),
        [(1, "applied".into()), (2, "applied".into())]
    );
    assert_eq!(db.count("real_inbox").await, 0);
    assert!(db.table_exists("real_inbox").await);
}

/// An inbox table dropped by hand leaves its migrations recorded: they are undone, as
/// `migrate status` says, `migrate run` makes the table again, and `migrate revert` only
/// forgets them, instead of each failing on the missing table. The prunes recorded of the
/// dropped table's rows go too: they would tell compare that the new table's missing
/// offsets were pruned. (A MySQL revert stopped between migration 1's two DROPs, each
/// committed on its own, leaves the same.)
async fn an_inbox_dropped_by_hand_is_made_again(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let now = chrono::Utc::now();
    db.insert_rows(&[row("c", "old", None, now - chrono::Duration::days(40))])
        .await;
    db.run(&["prune", "--older-than", "30d", "--yes"]).ok();
    assert_eq!(db.count("inboxctl_prunes").await, 1);
    db.exec("DROP TABLE processed_messages").await;
    assert_eq!(
        migration_states(&db),
        [(1, "undone".into()), (2, "undone".into())]
    );
    db.run(&["migrate", "run"]).ok();
    assert_eq!(
        migration_states(&db),
        [(1, "applied".into()), (2, "applied".into())]
    );
    assert_eq!(db.count("inboxctl_migrations").await, 2);
    assert_eq!(
        db.store().await.inbox_layout().await.unwrap(),
        InboxLayout::Current
    );
    assert!(!db.table_exists("inboxctl_prunes").await);
    db.insert_rows(&[row("c", "new", None, now)]).await;
    let inspected = db.run(&["inspect", "--format", "json"]).ok().json();
    let consumer = inspected["consumers"][0].as_object().unwrap();
    assert!(consumer["pruned_before"].is_null(), "{consumer:?}");
    db.exec("DROP TABLE processed_messages").await;
    let reverted = db.run(&["migrate", "revert", "--to", "0", "--yes"]).ok();
    let lines: Vec<&str> = reverted.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", reverted.stdout);
    for (line, version) in lines.iter().zip(["2/", "1/"]) {
        assert!(
            line.starts_with(&format!("Forgot {version}"))
                && line.contains(
                    ": its change was not in place (its table dropped by hand?), \
                     so only its record was removed ("
                ),
            "{}",
            reverted.stdout
        );
    }
    assert_eq!(db.count("inboxctl_migrations").await, 0);
    assert_eq!(
        migration_states(&db),
        [(1, "pending".into()), (2, "pending".into())]
    );
}

each_backend!(
    an_inbox_dropped_by_hand_is_made_again,
    a_view_of_the_inbox_name_is_refused_by_migrate,
    classic_columns_spelled_in_capitals,
    a_foreign_table_of_the_inbox_name_is_left_alone,
    revert_with_an_event_id_of_several_consumers,
    migrated_schema_is_exactly_the_design,
    dry_run_prints_sql_and_changes_nothing,
    revert_steps_back_and_to_zero_returns_to_empty,
    classic_table_is_adopted_with_every_row,
    concurrent_runs_apply_each_version_once,
    tampered_checksum_is_refused,
    unknown_newer_migration_is_refused,
);

/// A classic PostgreSQL table whose processed_at is `timestamp` (without time zone) holds the
/// wall-clock times of the zone the application's sessions had, the database's default. The
/// conversion to timestamptz reads them in that zone, not in inboxctl's UTC, and says so.
/// A classic MySQL table whose processed_at is a TIMESTAMP (kept in UTC, shown in each
/// session's zone): adopted, its values are the same instants in UTC, and the run says that
/// the application must write UTC from now on, since DATETIME keeps what it is given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_classic_timestamp_column_is_adopted_in_utc_with_a_note() {
    let mut db = TestDb::new(Backend::Mysql).await;
    db.exec(
        "CREATE TABLE processed_messages (event_id VARCHAR(255) PRIMARY KEY, \
         consumer VARCHAR(255) NOT NULL, \
         processed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)",
    )
    .await;
    // An application whose sessions run 5 hours west of UTC; the pooled session goes back.
    db.exec(
        "SET time_zone = '-05:00'; \
         INSERT INTO processed_messages (event_id, consumer, processed_at) \
         VALUES ('winter', 'c', '2026-01-15 04:00:00'); \
         SET time_zone = '+00:00'",
    )
    .await;
    let run = db.run(&["migrate", "run"]).ok();
    assert!(
        run.stderr.contains(
            "processed_at was TIMESTAMP, which MySQL converts to and from each session's \
             time_zone: its values are now DATETIME(6) in UTC"
        ),
        "{}",
        run.stderr
    );
    let found = db
        .run(&["inspect", "--event-id", "winter", "--format", "json"])
        .ok()
        .json();
    assert_eq!(found["rows"][0]["processed_at"], "2026-01-15T09:00:00Z");
    // A second run changes nothing and says nothing of it.
    let again = db.run(&["migrate", "run"]).ok();
    assert!(!again.stderr.contains("TIMESTAMP"), "{}", again.stderr);
}

/// A table in inboxctl's layout whose processed_at has no zone, never migrated: read as UTC,
/// its times written in New York would be 5 hours old at once, and prune would delete them.
/// inspect and prune refuse it until `migrate run` has converted it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_commands_refuse_times_without_a_zone_until_migrated() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.set_database_time_zone("America/New_York").await;
    db.exec(
        "CREATE TABLE processed_messages (consumer text NOT NULL, event_id text NOT NULL, \
         topic text, \"partition\" int, \"offset\" bigint, \
         processed_at timestamp NOT NULL DEFAULT now(), PRIMARY KEY (consumer, event_id))",
    )
    .await;
    // What the column's default gives a session of the database's zone.
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) \
         VALUES ('c', 'just-now', now() AT TIME ZONE 'America/New_York')",
    )
    .await;
    for args in [
        &["inspect", "--event-id", "just-now"][..],
        &["prune", "--older-than", "2h", "--yes"],
    ] {
        let run = db.run(args).code(1);
        assert!(
            run.stderr
                .starts_with("error: processed_messages.processed_at in ")
                && run.stderr.contains(
                    "is a timestamp without a time zone, so inboxctl cannot tell when its rows \
                     were processed; `inboxctl migrate run` makes it timestamptz"
                ),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert_eq!(db.count("processed_messages").await, 1);

    db.run(&["migrate", "run"]).ok();
    let json = db
        .run(&["prune", "--older-than", "2h", "--yes", "--format", "json"])
        .ok()
        .json();
    assert_eq!(json["rows_deleted"], 0);
    let found = db
        .run(&["inspect", "--event-id", "just-now", "--format", "json"])
        .ok()
        .json();
    let processed_at: chrono::DateTime<chrono::Utc> = found["rows"][0]["processed_at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let age = chrono::Utc::now() - processed_at;
    assert!(age < chrono::Duration::minutes(5), "{age}: {found}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_classic_timestamps_without_zone_are_read_in_the_database_default_zone() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.set_database_time_zone("America/New_York").await;
    db.exec(
        "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, \
         processed_at timestamp NOT NULL DEFAULT now()); \
         INSERT INTO processed_messages (event_id, consumer, processed_at) VALUES \
         ('winter', 'c', '2026-01-15 09:00:00'), ('summer', 'c', '2026-07-15 09:00:00.25')",
    )
    .await;

    // The dry run says which zone the run will read the times in.
    let dry = db
        .run(&["migrate", "run", "--dry-run", "--format", "json"])
        .ok()
        .json();
    let zones: Vec<&serde_json::Value> = dry["migrations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["times_read_in"])
        .collect();
    assert_eq!(
        zones,
        [
            &serde_json::Value::Null,
            &serde_json::json!({"zone": "America/New_York", "source": "the TimeZone set for this database"})
        ]
    );
    let run = db.run(&["migrate", "run"]).ok();
    assert_eq!(db.schema().await, expected_schema(Backend::Postgres));
    let pool = db.pool().await;
    let instants: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT event_id, \
                to_char(processed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), \
                to_char(processed_at AT TIME ZONE 'America/New_York', 'YYYY-MM-DD HH24:MI:SS.US') \
         FROM processed_messages ORDER BY event_id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        instants,
        [
            (
                "summer".to_string(),
                "2026-07-15 13:00:00.250000".to_string(),
                "2026-07-15 09:00:00.250000".to_string()
            ),
            (
                "winter".to_string(),
                "2026-01-15 14:00:00.000000".to_string(),
                "2026-01-15 09:00:00.000000".to_string()
            ),
        ]
    );
    let found = db
        .run(&["inspect", "--event-id", "winter", "--format", "json"])
        .ok()
        .json();
    assert_eq!(
        found["rows"][0]["processed_at"], "2026-01-15T14:00:00Z",
        "{found}"
    );
    assert_eq!(
        run.stderr,
        "adopted the classic processed_messages table in place, keeping its 2 rows\n\
         processed_at was timestamp without time zone: its values were read as times in \
         America/New_York (the TimeZone set for this database) and stored as timestamptz\n"
    );

    // A processed_at that already is timestamptz holds instants: nothing is read in a zone,
    // and nothing is said about it.
    let mut zoned = TestDb::new(Backend::Postgres).await;
    zoned.set_database_time_zone("America/New_York").await;
    zoned
        .exec(
            "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, \
             processed_at timestamptz NOT NULL DEFAULT now()); \
             INSERT INTO processed_messages (event_id, consumer, processed_at) VALUES \
             ('winter', 'c', '2026-01-15 09:00:00+00')",
        )
        .await;
    let run = zoned.run(&["migrate", "run"]).ok();
    assert_eq!(
        run.stderr,
        "adopted the classic processed_messages table in place, keeping its 1 row\n"
    );
    let pool = zoned.pool().await;
    let instant: String = sqlx::query_scalar(
        "SELECT to_char(processed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') \
         FROM processed_messages WHERE event_id = 'winter'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(instant, "2026-01-15 09:00:00.000000");
}

/// Times without a zone, where neither the database nor the role sets one and the role may
/// not read the server's: the zone cannot be known, so `migrate run` refuses, dry run or
/// not, before anything is written (migration 1 is not recorded either).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_times_without_a_zone_to_read_them_in_are_refused_before_anything_changes() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.exec(
        "CREATE TABLE processed_messages (event_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, \
         processed_at timestamp NOT NULL DEFAULT now()); \
         INSERT INTO processed_messages (event_id, consumer, processed_at) VALUES \
         ('winter', 'c', '2026-01-15 09:00:00')",
    )
    .await;
    let role = db.role("").await;
    db.exec(&format!(
        "ALTER TABLE processed_messages OWNER TO {role}; GRANT CREATE ON SCHEMA public TO {role}"
    ))
    .await;
    let mut url = url::Url::parse(&db.url).unwrap();
    url.set_username(&role).unwrap();
    let expected = "error: processed_messages.processed_at holds times without a time zone, \
                    which must be read in the zone the application wrote them in; neither this \
                    database nor this role sets TimeZone, and this role may not read the \
                    server's setting (pg_file_settings: error returned from database: \
                    permission denied for view pg_file_settings); set it with ALTER DATABASE … \
                    SET timezone = '…' or run `migrate run` as a superuser\n";
    for args in [&["migrate", "run", "--dry-run"][..], &["migrate", "run"]] {
        let refused = Run::from(
            db.cmd()
                .env("DATABASE_URL", url.as_str())
                .args(args)
                .output()
                .unwrap(),
        )
        .code(1);
        assert_eq!(refused.stderr, expected, "{args:?}");
        assert_eq!(refused.stdout, "", "{args:?}");
    }
    assert!(!db.table_exists("inboxctl_migrations").await);
    assert_eq!(
        db.scalar(
            "SELECT COUNT(*) FROM pg_attribute WHERE attrelid = 'processed_messages'::regclass \
             AND attname = 'processed_at' AND atttypid = 'timestamp'::regtype"
        )
        .await,
        1
    );
}

/// SQLite finds a table or view in any ASCII case, and so does migrate: a view named
/// `PROCESSED_MESSAGES` in front of the migrated table is the inbox, not a table dropped by
/// hand, and is refused as a view.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_names_the_inbox_in_any_case() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    db.exec("ALTER TABLE processed_messages RENAME TO real_inbox")
        .await;
    db.exec("CREATE VIEW PROCESSED_MESSAGES AS SELECT * FROM real_inbox")
        .await;
    assert_eq!(
        migration_states(&db),
        [(1, "applied".into()), (2, "applied".into())]
    );
    refused_as_a_view(&db, &["migrate", "revert"]);
    assert_eq!(db.count("inboxctl_migrations").await, 2);
}
