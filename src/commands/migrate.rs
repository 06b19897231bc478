//! `migrate run | status | revert`.

use anyhow::Context;
use serde_json::json;

use crate::cli::{Format, MigrateArgs, MigrateCommand};
use crate::exit::ExitStatus;
use crate::migrate::{self, MigrationStep};
use crate::output::{confirm, counted, or_dash, table, Output};
use crate::store::{mysql, Backend, CreateMode, InboxLayout, Store, INBOX_TABLE};

pub async fn run(args: MigrateArgs, output: Output) -> anyhow::Result<ExitStatus> {
    match args.command {
        MigrateCommand::Run {
            database,
            dry_run,
            lock_timeout,
        } => {
            let create = if dry_run {
                CreateMode::MustExist
            } else {
                CreateMode::CreateIfMissing
            };
            let store = match super::connect(&database, create, &output).await {
                Ok(store) => store,
                // A dry run against a SQLite file that does not exist yet: everything is pending.
                Err(_) if dry_run && sqlite_file_missing(&database.database_url) => {
                    return print_plan(&output, all_migrations(&database.database_url)?, "apply");
                }
                Err(error) => return Err(error),
            };
            let result = run_migrations(&store, dry_run, lock_timeout, &output).await;
            store.close().await;
            result
        }
        MigrateCommand::Status { database } => {
            let store = super::connect(&database, CreateMode::MustExist, &output).await?;
            let result = status(&store, &output).await;
            store.close().await;
            result
        }
        MigrateCommand::Revert {
            database,
            to,
            dry_run,
            yes,
            lock_timeout,
        } => {
            let store = super::connect(&database, CreateMode::MustExist, &output).await?;
            let result = revert(&store, to, dry_run, yes, lock_timeout, &output).await;
            store.close().await;
            result
        }
    }
}

fn sqlite_file_missing(url: &str) -> bool {
    let Ok(parsed) = crate::store::DatabaseUrl::parse(url) else {
        return false;
    };
    parsed.backend == crate::store::Backend::Sqlite
        && parsed
            .sqlite_path()
            .is_some_and(|path| !std::path::Path::new(path).exists())
}

fn all_migrations(url: &str) -> anyhow::Result<Vec<MigrationStep>> {
    let backend = crate::store::DatabaseUrl::parse(url)?.backend;
    Ok(backend
        .dialect()
        .migrations
        .iter()
        .map(|m| MigrationStep {
            version: m.version,
            description: m.description,
            duration_ms: None,
            sql: Some(m.up.into()),
            times_read_in: None,
            only_forgotten: false,
        })
        .collect())
}

async fn run_migrations(
    store: &Store,
    dry_run: bool,
    lock_timeout: Option<std::time::Duration>,
    output: &Output,
) -> anyhow::Result<ExitStatus> {
    if dry_run {
        // A table of the inbox's name that is no inbox is refused as the run refuses it.
        store.inbox_layout().await?;
        return print_plan(output, migrate::pending(store).await?, "apply");
    }
    // A table of the inbox's name that is no inbox, or one a table rebuild would lose
    // columns of, is refused before anything is written or announced. The run judges the
    // rebuild again under its lock.
    let timestamp_column = || async {
        match store.backend {
            Backend::Mysql => {
                let count: i64 = sqlx::query_scalar(mysql::TIMESTAMP_COLUMN)
                    .fetch_one(store.pool())
                    .await
                    .with_context(|| {
                        format!("could not read the type of {INBOX_TABLE}.processed_at")
                    })?;
                Ok::<_, anyhow::Error>(count > 0)
            }
            _ => Ok(false),
        }
    };
    let checked = async {
        let layout = store.inbox_layout().await?;
        migrate::pending(store).await?;
        let classic_rows = match layout {
            InboxLayout::Classic => migrate::inbox_rows(store).await?,
            _ => None,
        };
        let was_timestamp = timestamp_column().await?;
        Ok::<_, anyhow::Error>((classic_rows, was_timestamp))
    };
    let (classic_rows, was_timestamp) = match checked.await {
        Ok(checked) => checked,
        // The table is locked (by another run's migration, say) past a limit the session
        // has of its own: the run judges it again under its lock, once it is free, and
        // then finds nothing left to do or names who holds it.
        Err(error) if migrate::is_lock_timeout(&error) => (None, false),
        Err(error) => return Err(error),
    };
    let session = migrate::MigrationSession::default();
    let signals = super::cancel_on_signals(session.clone())?;
    let steps = migrate::run(store, lock_timeout, &session).await;
    signals.end(steps.is_err()).await;
    let steps = steps?;
    // Said once the run has adopted it: a run that waited for another's lock finds nothing
    // left to do.
    if let (Some(rows), false) = (classic_rows, steps.is_empty()) {
        output.note(format!(
            "adopted the classic {INBOX_TABLE} table in place, keeping its {}",
            counted(rows.max(0) as u64, "row", "rows")
        ));
    }
    for read in steps.iter().filter_map(|step| step.times_read_in.as_ref()) {
        output.note(format!(
            "processed_at was timestamp without time zone: its values were read as times in {} ({}) and stored as timestamptz",
            read.zone, read.source
        ));
    }
    // Migration 2 converts the values to UTC (inboxctl's session is UTC); the application's
    // later writes are another matter.
    // Not where migration 2 was only recorded, its change found in place.
    if was_timestamp && steps.iter().any(|step| step.version == 2) && !timestamp_column().await? {
        output.note(
            "processed_at was TIMESTAMP, which MySQL converts to and from each session's \
             time_zone: its values are now DATETIME(6) in UTC, and DATETIME keeps what it is \
             given, so the application must write UTC from now on (a session time_zone of \
             '+00:00', or UTC_TIMESTAMP(6)), or its rows are dated by its own zone",
        );
    }
    let version = store.dialect.migrations.last().map_or(0, |m| m.version);
    match output.format {
        Format::Json => output.print_json(&json!({
            "database": store.url.redacted,
            "applied": steps,
            "version": version,
        }))?,
        Format::Table | Format::Csv => {
            if steps.is_empty() {
                output.print(format!(
                    "Nothing to do: {} is at version {version}.",
                    store.url.endpoint
                ));
            }
            for step in &steps {
                output.print(format!(
                    "Applied {}/{} ({} ms)",
                    step.version,
                    step.description,
                    step.duration_ms.unwrap_or(0)
                ));
            }
        }
    }
    Ok(ExitStatus::Success)
}

/// Prints what a dry run would execute: the SQL for people, the steps with their SQL for scripts.
fn print_plan(
    output: &Output,
    steps: Vec<MigrationStep>,
    verb: &str,
) -> anyhow::Result<ExitStatus> {
    match output.format {
        Format::Json => output.print_json(&json!({ "dry_run": true, "migrations": steps }))?,
        Format::Table | Format::Csv => {
            if steps.is_empty() {
                output.print(format!("-- dry run: nothing to {verb}"));
            }
            for step in &steps {
                output.print(format!(
                    "-- dry run: would {verb} migration {} ({})\n{}",
                    step.version,
                    step.description,
                    step.sql.as_deref().unwrap_or_default().trim_end()
                ));
            }
        }
    }
    Ok(ExitStatus::Success)
}

async fn status(store: &Store, output: &Output) -> anyhow::Result<ExitStatus> {
    let states = migrate::status(store).await?;
    let rows: Vec<Vec<String>> = states
        .iter()
        .map(|s| {
            vec![
                s.version.to_string(),
                s.description.clone(),
                s.state.to_string(),
                or_dash(s.applied_at.map(|at| at.format("%Y-%m-%d %H:%M:%S UTC"))),
                or_dash(s.duration_ms),
            ]
        })
        .collect();
    let header = [
        "VERSION",
        "DESCRIPTION",
        "STATE",
        "APPLIED AT",
        "DURATION MS",
    ];
    match output.format {
        Format::Json => {
            output.print_json(&json!({ "database": store.url.redacted, "migrations": states }))?
        }
        Format::Csv => output.print_csv(
            &[
                "version",
                "description",
                "state",
                "applied_at",
                "duration_ms",
            ],
            &rows,
        )?,
        Format::Table => {
            let mut t = table(&header, &[0, 4]);
            for row in rows {
                t.add_row(row);
            }
            output.print(t.to_string());
            if states.iter().any(|s| s.state == "changed") {
                output.warn("a migration changed after it was applied; `migrate run` will refuse to continue");
            }
            if states.iter().any(|s| s.state == "undone") {
                output.warn("a recorded migration's change is not in place (a revert stopped before its bookkeeping, or the table was dropped by hand); `migrate run` applies it again");
            }
        }
    }
    Ok(ExitStatus::Success)
}

async fn revert(
    store: &Store,
    to: Option<i64>,
    dry_run: bool,
    yes: bool,
    lock_timeout: Option<std::time::Duration>,
    output: &Output,
) -> anyhow::Result<ExitStatus> {
    let plan = migrate::revert_plan(store, to).await?;
    if dry_run {
        let sql = migrate::revert_sql(store, &plan).await?;
        let steps = plan
            .iter()
            .zip(sql)
            .map(|(m, sql)| MigrationStep {
                version: m.version,
                description: m.description,
                duration_ms: None,
                sql: Some(sql.into()),
                times_read_in: None,
                only_forgotten: false,
            })
            .collect();
        return print_plan(output, steps, "revert");
    }
    // Reverting version 1 drops the table, and version 2 the Kafka coordinates compare and
    // replay read: never silently when rows hold them.
    let loss = match (plan.iter().any(|m| m.version == 1), yes) {
        (_, true) => None,
        (true, false) => migrate::inbox_rows(store)
            .await?
            .filter(|rows| *rows > 0)
            .map(|rows| {
                let rows = counted(rows as u64, "row", "rows");
                (
                    format!("Revert drops {INBOX_TABLE} with its {rows}. Continue?"),
                    format!(
                        "refusing to drop {INBOX_TABLE} with {rows} without confirmation; pass \
                         --yes"
                    ),
                )
            }),
        (false, false) if plan.iter().any(|m| m.version == 2) => {
            migrate::rows_with_coordinates(store)
                .await?
                .filter(|rows| *rows > 0)
                .map(|rows| {
                    let rows = counted(rows as u64, "row", "rows");
                    (
                        format!(
                            "Revert drops the topic, partition and offset of {rows} of \
                             {INBOX_TABLE}, which compare and replay read. Continue?"
                        ),
                        format!(
                            "refusing to drop the topic, partition and offset of {rows} of \
                             {INBOX_TABLE} without confirmation; pass --yes"
                        ),
                    )
                })
        }
        (false, false) => None,
    };
    if let Some((question, refusal)) = loss {
        let answer = confirm(question, refusal).await?;
        if let Some(status) = answer.declined() {
            output.note("Nothing reverted.");
            return Ok(status);
        }
    }
    let session = migrate::MigrationSession::default();
    let signals = super::cancel_on_signals(session.clone())?;
    let steps = migrate::revert(store, to, lock_timeout, &session).await;
    signals.end(steps.is_err()).await;
    let steps = steps?;
    match output.format {
        Format::Json => {
            output.print_json(&json!({ "database": store.url.redacted, "reverted": steps }))?
        }
        Format::Table | Format::Csv => {
            if steps.is_empty() {
                output.print("Nothing to revert.");
            }
            for step in &steps {
                let (done, why) = match step.only_forgotten {
                    true => ("Forgot", ": its change was not in place (its table dropped by hand?), so only its record was removed"),
                    false => ("Reverted", ""),
                };
                output.print(format!(
                    "{done} {}/{}{why} ({} ms)",
                    step.version,
                    step.description,
                    step.duration_ms.unwrap_or(0)
                ));
            }
        }
    }
    Ok(ExitStatus::Success)
}
