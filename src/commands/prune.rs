//! `prune`: delete rows older than a retention in bounded batches, each its own transaction.
//!
//! A row is deleted when `processed_at < cutoff`; a row processed exactly at the cutoff stays.

use std::time::Instant;

use anyhow::Context;
use chrono::{DateTime, Datelike, SubsecRound, Timelike, Utc};
use serde::Serialize;
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection};

use super::{retried, StopRequest};
use crate::cli::{Format, PruneArgs, PruneStrategy};
use crate::error::usage;
use crate::exit::ExitStatus;
use crate::kafka::{Kafka, KafkaOpts};
use crate::output::{confirm, counted, or_dash, table, Output};
use crate::store::{
    is_cancelled, is_deadlock, is_server_connection_lost, is_statement_timeout, is_transient,
    sqlx_causes, Backend, BatchError, CreateMode, HeapExtent, KeepFrom, PrunableRows, Store,
    INBOX_TABLE,
};

#[derive(Debug, Clone, Serialize)]
struct ConsumerPrune {
    consumer: String,
    /// `None` when prune did not count (see `counting` in `run`).
    matched: Option<u64>,
    /// `None` when a page-range prune covered several consumers: its batches count rows,
    /// not whose they were.
    deleted: Option<u64>,
    /// Rows older than the cutoff kept because the group could still redeliver them.
    kept_for_redelivery: u64,
    #[serde(skip)]
    keep: Vec<KeepFrom>,
    /// Its old rows when prune looked, counted exactly, or up to [`PACKED_BELOW`] without
    /// a count: which consumers can share a batch.
    #[serde(skip)]
    older: u64,
}

#[derive(Debug, Serialize)]
struct PruneReport {
    database: String,
    cutoff: DateTime<Utc>,
    dry_run: bool,
    /// Rows older than the cutoff when the command started; `None` when not counted.
    rows_matched: Option<u64>,
    /// Rows this run was to delete (`rows_matched`, capped by `--max-rows`).
    rows_planned: Option<u64>,
    /// `--max-rows`, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_rows: Option<u64>,
    /// `index` or `blocks`: how the batches found their rows.
    strategy: PruneStrategy,
    rows_deleted: u64,
    batches: u64,
    elapsed_ms: u128,
    rows_per_second: f64,
    interrupted: bool,
    /// With --group: rows older than the cutoff kept because they may be redelivered.
    rows_kept_for_redelivery: u64,
    consumers: Vec<ConsumerPrune>,
    /// Why a run that failed midway stopped (it is also on stderr); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// What a run a signal stopped says of it (also on stderr), as a stop at once says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
}

pub async fn run(args: PruneArgs, output: Output) -> anyhow::Result<ExitStatus> {
    let cutoff = match (args.older_than, args.before) {
        (Some(age), _) => {
            crate::time::ago(age)
                // The years --before takes, which every backend stores and compares.
                .filter(|cutoff| cutoff.year() >= 1000)
                .ok_or_else(|| {
                    usage("--older-than reaches back before the year 1000; expected a retention such as 7d or 2w")
                })?
                // Milliseconds: the precision every backend stores and every output shows.
                .trunc_subsecs(3)
        }
        // Finer than a millisecond, SQLite's stored times could not be told apart from it,
        // and the summary would show another cutoff than the one compared.
        (None, Some(before)) if before.nanosecond() % 1_000_000 != 0 => {
            return Err(usage(format!(
                "--before {} is finer than a millisecond; expected a cutoff to the \
                 millisecond, the precision SQLite stores and every output shows",
                before.format("%Y-%m-%d %H:%M:%S%.9f UTC")
            )))
        }
        (None, Some(before)) => before,
        (None, None) => return Err(usage("give --older-than DURATION or --before TIMESTAMP")),
    };
    // Every row would go, the ones processed a moment ago included, and with them the
    // deduplication of any message delivered again.
    if cutoff > Utc::now() {
        return Err(usage(format!(
            "--before {} is in the future: every row would be deleted, and with them the deduplication of any redelivery; expected a time in the past",
            crate::time::shown_utc(cutoff)
        )));
    }
    if args.strategy == PruneStrategy::Blocks && args.max_rows.is_some() {
        return Err(usage(
            "--strategy blocks deletes whole page ranges and cannot stop at --max-rows; \
             use --strategy index (oldest rows first) with --max-rows",
        ));
    }
    // Nothing is written before the first batch: until then Ctrl-C or SIGTERM end prune at
    // once (the server drops its reads with the connection), and from then on they stop it
    // after the batch in flight.
    let database = crate::store::DatabaseUrl::parse(&args.database.database_url)
        .map(|url| url.redacted)
        .unwrap_or_default();
    let before_deleting = super::end_at_once_on_signals(
        output,
        Some(NOTHING_DELETED),
        nothing_deleted(&database, cutoff),
    )?;
    // One connection for the rest: prune's queries follow one another, and its batches hold
    // the one connection they run on until the end.
    let store = super::connect_sequential(&args.database, CreateMode::MustExist, &output).await?;
    // Closed on every path, an error's too: a connection dropped at exit is a lost client to
    // the server.
    let result = prune(&store, &args, &output, cutoff, before_deleting).await;
    store.close().await;
    result
}

/// What prune says when it ends before its first batch.
const NOTHING_DELETED: &str = "Nothing deleted.";

/// The JSON result of a prune that ends before its first batch, as a stop at once's is.
fn nothing_deleted(database: &str, cutoff: DateTime<Utc>) -> Option<serde_json::Value> {
    Some(serde_json::json!({
        "database": database,
        "cutoff": cutoff,
        "rows_deleted": 0,
        "batches": 0,
    }))
}

/// How many empty batches in a row `by_index` tries while prunable rows remain.
const EMPTY_BATCHES_TRIED: u32 = 3;

async fn prune(
    store: &Store,
    args: &PruneArgs,
    output: &Output,
    cutoff: DateTime<Utc>,
    mut before_deleting: tokio::task::JoinHandle<()>,
) -> anyhow::Result<ExitStatus> {
    store.require_inbox().await?;
    let extent = match args.strategy {
        PruneStrategy::Index => None,
        _ => store.heap_extent().await?,
    };
    if args.strategy == PruneStrategy::Blocks && extent.is_none() {
        return Err(usage(format!(
            "--strategy blocks needs PostgreSQL's physical row addresses in a plain table; \
             {} here has none: use --strategy index",
            store.url.endpoint
        )));
    }

    // A mistyped group would keep every row back night after night, or, named like no
    // consumer, prune nothing: an error before anything is deleted or recorded.
    if let Some(group) = &args.group {
        require_known_group(&Kafka::new(&args.kafka)?, group)?;
    }
    // A group's committed offsets say nothing about another consumer's rows: with --group,
    // prune that group's consumer (same name) unless --consumer names another.
    let only = args.consumer.clone().or_else(|| args.group.clone());
    if let Some(consumer) = &only {
        let given_as = match args.consumer {
            Some(_) => "--consumer",
            None => "--group",
        };
        super::require_held_consumer(store, consumer, given_as).await?;
    }
    // The exact count is for what is read before anything goes: the dry run, the
    // confirmation, and with --group the rows kept for redelivery. Under --yes alone
    // nothing waits for it, and it would be a second pass over every old row before the
    // first delete (0.1 s against the unbounded DELETE's 0.2-0.4 s in the benchmark), so prune
    // deletes at once and reports what it deleted, and only reads up to PACKED_BELOW of
    // each consumer's old rows' index entries: which consumers have any, and which can
    // share a batch. Counting on a second connection while the first deleted was tried: it
    // took the second core from the application's own writes, whose latency it doubled
    // (see the README's benchmarks).
    let counting = args.dry_run || !args.yes || args.group.is_some();
    let prunable = match store
        .prunable_by_consumer(only.as_deref(), cutoff, up_to(counting, only.is_some()))
        .await
    {
        // Each consumer's own statement may fit in the session's time limit where the one
        // for all of them did not, as it did before they were one.
        Err(error) if only.is_none() && is_statement_timeout(&error) => {
            output.debug(format!(
                "{} the old rows of every consumer in one statement ran past the session's \
                 statement time limit; one statement per consumer instead",
                reading(counting)
            ));
            prunable_one_by_one(store, cutoff, counting).await?
        }
        // Of one consumer: a time limit it cannot fit in is the only one left.
        result => result.map_err(|error| {
            with_time_limit_hint(error, RAISE_THE_LIMIT, || {
                reading_one(counting, only.as_deref().unwrap_or_default())
            })
        })?,
    };
    // Rows no cutoff can take would stay for good, unseen by the counts.
    let undatable: Vec<(&str, u64)> = prunable
        .iter()
        .filter(|rows| rows.undatable > 0)
        .map(|rows| (rows.consumer.as_str(), rows.undatable))
        .collect();
    if !undatable.is_empty() {
        let total: u64 = undatable.iter().map(|(_, count)| count).sum();
        let whose = match undatable.as_slice() {
            [(consumer, _)] => format!("of consumer '{consumer}'"),
            _ => format!(
                "of {} consumers ({})",
                undatable.len(),
                crate::output::first_of(
                    undatable
                        .iter()
                        .map(|(consumer, count)| format!("'{consumer}': {count}"))
                        .collect(),
                    5,
                )
            ),
        };
        output.warn(format!(
            "{total} row(s) {whose} have a number in processed_at, or text before 0000-01-01 \
             (an empty one, a zero date), not a time in the form YYYY-MM-DD HH:MM:SS.fff; \
             SQLite sorts them before every time, so prune cannot date them and keeps them"
        ));
    }
    let mut consumers = Vec::new();
    for rows in prunable.into_iter().filter(|rows| rows.older > 0) {
        // With --group the rows the group may still redeliver stay: counted apart.
        let (keep, matched, kept_for_redelivery) = match &args.group {
            Some(group) => {
                let keep = redeliverable(store, &args.kafka, group, &rows.consumer).await?;
                let matched = match keep.is_empty() {
                    true => rows.older,
                    false => store.count_older(&rows.consumer, cutoff, &keep).await?,
                };
                (keep, matched, rows.older - matched)
            }
            None => (Vec::new(), rows.older, 0),
        };
        consumers.push(ConsumerPrune {
            consumer: rows.consumer,
            matched: counting.then_some(matched),
            deleted: Some(0),
            kept_for_redelivery,
            keep,
            older: rows.older,
        });
    }
    // `auto` decides by the planner's estimate, which costs no reading of rows; without a
    // count, page ranges size their first batch by it and the progress bar its total.
    let expected = match extent {
        Some(_)
            if (args.strategy == PruneStrategy::Auto && args.max_rows.is_none()) || !counting =>
        {
            store.estimated_older_rows(only.as_deref(), cutoff).await?
        }
        _ => None,
    };
    let strategy = choose_strategy(args.strategy, extent, expected, args.max_rows);
    // Named as --strategy takes it, and as the JSON report does.
    if let Some(name) = clap::ValueEnum::to_possible_value(&strategy) {
        output.debug(format!("prune strategy: {}", name.get_name()));
    }

    let (mut rows_matched, mut rows_planned) = (None, None);
    if counting {
        let matched: u64 = consumers.iter().filter_map(|c| c.matched).sum();
        rows_matched = Some(matched);
        rows_planned = Some(args.max_rows.map_or(matched, |max| max.min(matched)));
    } else if consumers.is_empty() {
        // Without a count, the probes still tell that a table pruned already has nothing
        // to go, so that it is not read page by page again.
        (rows_matched, rows_planned) = (Some(0), Some(0));
    }
    // A consumer named like none in the inbox (a typo) would prune nothing night after night.
    // Asked only when nothing is to go: one index probe.
    if let (Some(name), true) = (&only, consumers.is_empty()) {
        let any_time = Utc::now() + chrono::Duration::days(36_500);
        if !store.has_older(name, any_time).await? {
            output.warn(match &args.consumer {
                None => format!(
                    "the inbox has no rows of consumer '{name}'; with --group, name the group's inbox consumer with --consumer"
                ),
                Some(_) => format!(
                    "the inbox has no rows of consumer '{name}' (`inboxctl inspect` lists the consumers it has)"
                ),
            });
        }
    }
    let rows_kept_for_redelivery = consumers.iter().map(|c| c.kept_for_redelivery).sum();
    let mut report = PruneReport {
        database: store.url.redacted.clone(),
        cutoff,
        dry_run: args.dry_run,
        rows_matched,
        rows_planned,
        max_rows: args.max_rows,
        strategy,
        rows_deleted: 0,
        batches: 0,
        elapsed_ms: 0,
        rows_per_second: 0.0,
        interrupted: false,
        rows_kept_for_redelivery,
        consumers,
        error: None,
        warning: None,
    };
    if args.dry_run || rows_planned == Some(0) {
        print_report(&report, output)?;
        return Ok(ExitStatus::Success);
    }
    if let (false, Some(rows_planned)) = (args.yes, rows_planned) {
        // The question catches both signals itself, to give the terminal back.
        before_deleting.abort();
        let answer = confirm(
            format!(
                "Delete {} of {INBOX_TABLE} processed before {} from {}?",
                counted(rows_planned, "row", "rows"),
                crate::time::shown_utc(cutoff),
                store.url.endpoint
            ),
            format!(
                "refusing to delete {} without confirmation: there is no terminal to ask on \
                 (standard input and standard error must both be one); \
                 pass --yes (as cron jobs must) or --dry-run to only count",
                counted(rows_planned, "row", "rows")
            ),
        )
        .await?;
        if let Some(status) = answer.declined() {
            output.note(NOTHING_DELETED);
            return Ok(status);
        }
        before_deleting = super::end_at_once_on_signals(
            *output,
            Some(NOTHING_DELETED),
            nothing_deleted(&store.url.redacted, cutoff),
        )?;
    }

    // compare must know that a consumer's offsets from before the cutoff may have no row any
    // more. The first batch that deletes a consumer's rows records that in its own
    // transaction (`Deleting::run_batch`), so that a run cut short counts too, and a consumer
    // whose rows all stayed (--max-rows, a first batch that failed) is not recorded, which
    // would hide its lost messages from compare.
    store
        .prepare_prune_record()
        .await
        .context("nothing was deleted")?;
    let (connection, canceller) = store
        .bulk_delete_connection()
        .await
        .context("nothing was deleted")?;

    // From the first batch on, Ctrl-C or SIGTERM asks to stop; the batch in flight finishes
    // (it is one transaction) and the summary says how far the run got.
    let (stop, signal) = super::stop_on_signals(super::OnStop::AfterTheBatch, *output)?;
    note_deleted(&stop, &report);
    stop.cancel_with_a_stop_at_once(canceller);
    before_deleting.abort();

    let started = Instant::now();
    // Without a count, the planner's estimate sizes the bar where there is one.
    let estimate = expected.map(|rows| args.max_rows.map_or(rows, |max| max.min(rows)));
    let progress = output.progress(rows_planned.or(estimate), "rows");
    let deleting = Deleting {
        store,
        cutoff,
        batch_size: args
            .batch_size
            .unwrap_or_else(|| default_batch_size(store.backend)),
        max_rows: args.max_rows,
        pause: args.pause,
        last_batch_nanos: Default::default(),
        progress: &progress,
        output,
        stop: &stop,
    };
    let deleted = match (strategy, extent) {
        (PruneStrategy::Blocks, Some(extent)) => {
            deleting
                .by_blocks(connection, &mut report, only.as_deref(), extent)
                .await
        }
        _ => deleting.by_index(connection, &mut report).await,
    };
    progress.finish_and_clear();
    signal.abort();
    let elapsed = started.elapsed();
    report.elapsed_ms = elapsed.as_millis();
    report.rows_per_second = if elapsed.as_secs_f64() > 0.0 {
        report.rows_deleted as f64 / elapsed.as_secs_f64()
    } else {
        0.0
    };
    if let Err(error) = deleted {
        // What the batches before it deleted is gone for good: the report says how much.
        report.error = Some(crate::shown_error(&error));
        stop.print_result(|| print_report(&report, output))?;
        return Err(error);
    }
    match report.rows_planned {
        // A row moved to a page already passed (an UPDATE of an inbox row) escapes the pass.
        Some(planned)
            if report.strategy == PruneStrategy::Blocks
                && !report.interrupted
                && report.rows_deleted < planned =>
        {
            output.warn(format!(
                "{} of the {planned} rows counted older than the cutoff were not found in the table's pages; \
                 re-run, or use --strategy index",
                planned - report.rows_deleted,
            ));
        }
        _ => {}
    }
    if report.interrupted {
        let of = report
            .rows_planned
            .map_or_else(String::new, |planned| format!(" of {planned}"));
        report.warning = Some(format!(
            "{}: deleted {}{of} rows; re-run the same command to continue",
            stop.describe(),
            report.rows_deleted
        ));
    }
    stop.print_result(|| print_report(&report, output))?;
    if let Some(warning) = &report.warning {
        output.warn(warning);
        return Ok(stop.exit_status());
    }
    Ok(ExitStatus::Success)
}

/// A consumer with fewer old rows than this shares its batches with others (see
/// [`Deleting::by_index`]); without a count, prune reads up to this many of each consumer's
/// old rows in the index to know which.
const PACKED_BELOW: u64 = 1_000;

/// The most consumers one shared batch names: a parameter each, well within SQLite's
/// oldest limit of 999.
const MOST_CONSUMERS_A_BATCH: usize = 500;

/// How far prune counts each consumer's old rows before deleting: all of them, or, when it
/// does not count, as far as tells whether the consumer shares its batches; of one consumer
/// alone (`sole`), which shares with none, only whether it has any.
fn up_to(counting: bool, sole: bool) -> Option<u64> {
    match (counting, sole) {
        (true, _) => None,
        (false, true) => Some(1),
        (false, false) => Some(PACKED_BELOW),
    }
}

/// What prune does before its batches: it counts the old rows, or under --yes only looks
/// them up.
fn reading(counting: bool) -> &'static str {
    match counting {
        true => "counting",
        false => "looking up",
    }
}

/// What prune was doing with one consumer's rows, for [`with_time_limit_hint`].
fn reading_one(counting: bool, consumer: &str) -> String {
    format!(
        "{} the old rows of consumer '{consumer}'",
        reading(counting)
    )
}

/// [`Store::prunable_by_consumer`] one consumer at a time: a statement each, so that each
/// fits in the session's statement time limit where the one for all of them did not.
async fn prunable_one_by_one(
    store: &Store,
    cutoff: DateTime<Utc>,
    counting: bool,
) -> anyhow::Result<Vec<PrunableRows>> {
    let consumers = store.consumers(None).await.map_err(|error| {
        with_time_limit_hint(
            error,
            "name one with --consumer, or raise the limit",
            || "listing the inbox's consumers".to_string(),
        )
    })?;
    let mut prunable = Vec::with_capacity(consumers.len());
    for consumer in &consumers {
        let rows = store
            .prunable_by_consumer(Some(consumer), cutoff, up_to(counting, false))
            .await
            .map_err(|error| {
                with_time_limit_hint(error, RAISE_THE_LIMIT, || reading_one(counting, consumer))
            })?;
        prunable.extend(rows);
    }
    Ok(prunable)
}

/// The remedy for a statement of one consumer that ran past the session's time limit.
const RAISE_THE_LIMIT: &str = "raise the limit";

/// What to do (`remedy`) when `doing`, a statement before anything is deleted, ran past the
/// session's statement time limit; other errors as they are.
fn with_time_limit_hint(
    error: anyhow::Error,
    remedy: &str,
    doing: impl FnOnce() -> String,
) -> anyhow::Error {
    if !is_statement_timeout(&error) {
        return error;
    }
    error.context(format!(
        "{} ran past the session's statement time limit; {remedy} (nothing was deleted)",
        doing()
    ))
}

/// Index when the caller asked for it, the backend has no block addressing, --max-rows needs
/// the oldest rows first, or only a small part of the table goes: there the index reads just
/// the rows to delete, while a block scan would read the whole table.
fn choose_strategy(
    asked: PruneStrategy,
    extent: Option<HeapExtent>,
    expected_rows: Option<u64>,
    max_rows: Option<u64>,
) -> PruneStrategy {
    match (asked, extent) {
        (PruneStrategy::Blocks, Some(_)) => PruneStrategy::Blocks,
        (PruneStrategy::Auto, Some(extent)) if max_rows.is_none() => {
            match (expected_rows, extent.estimated_rows) {
                (Some(expected), Some(total)) if expected.saturating_mul(10) >= total => {
                    PruneStrategy::Blocks
                }
                _ => PruneStrategy::Index,
            }
        }
        _ => PruneStrategy::Index,
    }
}

/// Rows a batch deletes without --batch-size. PostgreSQL deletes 20,000 in a few
/// milliseconds, and its fewer commits delayed a concurrent writer's commits less than
/// batches of 5,000 did, at a higher rate (bench/README.md). SQLite lets one writer in at a
/// time and MySQL deletes more slowly, so there a batch stays at 5,000 to keep the
/// application's writes waiting briefly.
fn default_batch_size(backend: Backend) -> u64 {
    match backend {
        Backend::Postgres => 20_000,
        Backend::Sqlite | Backend::Mysql => 5_000,
    }
}

/// The longest pause SQLite's default takes (as long as the batch took).
const MAX_SQLITE_PAUSE: std::time::Duration = std::time::Duration::from_secs(1);

/// How long a pause sleeps at a time before it looks whether Ctrl-C asked to stop.
const PAUSE_SLICE: std::time::Duration = std::time::Duration::from_millis(20);

/// What both strategies share while they delete.
struct Deleting<'a> {
    store: &'a Store,
    cutoff: DateTime<Utc>,
    batch_size: u64,
    max_rows: Option<u64>,
    /// `--pause`; without it none, but on SQLite as long as the batch before took (see
    /// [`Deleting::pause`]).
    pause: Option<std::time::Duration>,
    /// How long the last batch took, in nanoseconds.
    last_batch_nanos: std::sync::atomic::AtomicU64,
    progress: &'a indicatif::ProgressBar,
    output: &'a Output,
    stop: &'a StopRequest,
}

impl Deleting<'_> {
    /// Before each batch: `--pause` after the one before, then whether Ctrl-C asked to stop
    /// (which the report records).
    async fn stop_before_batch(&self, report: &mut PruneReport) -> bool {
        let pause = self.pause();
        if report.batches > 0 && !pause.is_zero() {
            // In slices, so that Ctrl-C during a long pause stops at once, not after it.
            let resume = tokio::time::Instant::now() + pause;
            while !self.stop.requested() {
                let now = tokio::time::Instant::now();
                if now >= resume {
                    break;
                }
                tokio::time::sleep((resume - now).min(PAUSE_SLICE)).await;
            }
        }
        if self.stop.requested() {
            report.interrupted = true;
        }
        report.interrupted
    }

    /// The pause after a batch. SQLite has one writer at a time, and an application waiting
    /// to write sleeps between its tries (its busy timeout): with batches back to back it
    /// finds the file locked on each try, and waits for all of prune (seconds for a million
    /// rows) or fails with "database is locked". A pause as long as the batch leaves the
    /// file free half the time, and each try a fair chance.
    fn pause(&self) -> std::time::Duration {
        match (self.pause, self.store.backend) {
            (Some(pause), _) => pause,
            (None, Backend::Sqlite) => std::time::Duration::from_nanos(
                self.last_batch_nanos
                    .load(std::sync::atomic::Ordering::Relaxed),
            )
            .min(MAX_SQLITE_PAUSE),
            (None, _) => std::time::Duration::ZERO,
        }
    }

    /// Counts rows deleted for the consumer at `index` in the report, or for no consumer
    /// in particular.
    fn count(&self, report: &mut PruneReport, index: Option<usize>, deleted: u64) {
        report.rows_deleted += deleted;
        self.progress.inc(deleted);
        note_deleted(self.stop, report);
        if let Some(entry) = index.and_then(|index| report.consumers.get_mut(index)) {
            entry.deleted = Some(entry.deleted.unwrap_or(0) + deleted);
        }
    }

    /// Records, in the transaction of the batch that deleted rows of `consumers` (see
    /// [`Deleting::run_batch`]), that their rows from before the cutoff may be gone.
    async fn record(
        &self,
        connection: &mut AnyConnection,
        consumers: &[&str],
    ) -> anyhow::Result<()> {
        if consumers.is_empty() {
            return Ok(());
        }
        self.store
            .record_prune(connection, consumers, self.cutoff)
            .await
            .context("this batch deleted nothing")
    }

    /// One batch, its own transaction, tried again when it was rolled back to break a
    /// deadlock (another prune, or the application, locking the same rows in another order):
    /// the server undid it whole, so trying again deletes nothing twice. A lock wait that
    /// timed out is not tried again: the rows are held for long, and waiting again would
    /// only make prune hang for longer.
    ///
    /// A batch that may record a prune (`records`; see [`Deleting::record`]) runs in a
    /// transaction, so that the record and the delete are kept or undone together: without
    /// the record compare would take the offsets of the deleted rows for lost messages, and
    /// a record without a delete would hide real losses. `batch` returns the rows it
    /// deleted first.
    async fn run_batch<T>(
        &self,
        connection: &mut AnyConnection,
        records: bool,
        mut batch: impl AsyncFnMut(&mut AnyConnection) -> anyhow::Result<(u64, T)>,
    ) -> anyhow::Result<(u64, T)> {
        let started = Instant::now();
        let done = retried(self.output, 1, async || {
            let attempt = async {
                if !records {
                    return batch(&mut *connection).await;
                }
                // Nothing deleted, nothing recorded: undone, and a later batch records.
                self.store
                    .in_write_transaction(connection, &mut batch, |(deleted, _)| *deleted > 0)
                    .await
            };
            self.stop.run_batch(attempt).await.map_err(|error| {
                let deadlock = error.downcast_ref::<sqlx::Error>().is_some_and(is_deadlock);
                BatchError {
                    error,
                    transient: deadlock,
                    connection_lost: false,
                }
            })
        })
        .await
        .map_err(|failure| failure.error);
        let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last_batch_nanos
            .store(took, std::sync::atomic::Ordering::Relaxed);
        done
    }

    /// The error of a batch that ended prune, saying how far it got and whether a re-run
    /// alone can go on: after a lost connection or a lock held for long it can, while a
    /// missing right or a broken table fails the same way until someone fixes it.
    fn stopped_after(report: &PruneReport, error: anyhow::Error) -> anyhow::Error {
        let next = match sqlx_causes(&error)
            .any(|cause| is_transient(cause) || is_server_connection_lost(cause))
        {
            true => "re-run to continue",
            false => "re-run to continue once the cause is fixed",
        };
        // The server may have committed the batch and lost only its answer.
        let in_flight = match sqlx_causes(&error).any(is_server_connection_lost) {
            true => {
                " (and perhaps the batch in flight, whose outcome was lost with the connection)"
            }
            false => "",
        };
        error.context(format!(
            "prune stopped after deleting {} rows{in_flight}; {next}",
            report.rows_deleted
        ))
    }

    /// The consumer's oldest row still to prune from `from` on, if any: one index probe.
    async fn oldest_left(
        &self,
        connection: &mut AnyConnection,
        consumer: &str,
        from: Option<&str>,
        keep: &[KeepFrom],
    ) -> anyhow::Result<Option<String>> {
        self.store
            .oldest_prunable(connection, consumer, from, self.cutoff, keep)
            .await
    }

    /// Consumer by consumer, the oldest rows first, each batch an index range scan from where
    /// the last one stopped. Consumers with few old rows share a batch (see
    /// [`Deleting::shared_batch`]): a batch of its own each would cost a transaction per
    /// consumer, seconds for an inbox of many (one per tenant, say).
    async fn by_index(
        &self,
        mut connection: PoolConnection<Any>,
        report: &mut PruneReport,
    ) -> anyhow::Result<()> {
        let shares = self.store.deletes_in_packs(&mut connection).await?;
        let mut next = 0;
        while next < report.consumers.len() && self.remaining(report) > 0 {
            let limit = self.batch_size.min(self.remaining(report));
            let sharing = match shares {
                true => consumers_sharing_a_batch(&report.consumers[next..], limit),
                false => 0,
            };
            if sharing < 2 {
                self.one_consumer(&mut connection, report, next, false)
                    .await?;
                next += 1;
            } else {
                let again = self
                    .shared_batch(&mut connection, report, next..next + sharing, limit)
                    .await?;
                for (index, recorded) in again {
                    self.one_consumer(&mut connection, report, index, recorded)
                        .await?;
                }
                next += sharing;
            }
            if report.interrupted {
                break;
            }
        }
        Ok(())
    }

    /// One batch for the consumers at `pack` in the report, each with fewer old rows than
    /// [`PACKED_BELOW`] and all of them fewer than `limit`: every old row of each goes in
    /// it. Returns the consumers to go over one by one, and whether their prune is recorded:
    /// those of which it deleted another number of rows than prune had seen (another
    /// session deleted some meanwhile, a trigger kept some, or the application wrote more),
    /// or all of them when the batch reached `limit`.
    async fn shared_batch(
        &self,
        connection: &mut AnyConnection,
        report: &mut PruneReport,
        pack: std::ops::Range<usize>,
        limit: u64,
    ) -> anyhow::Result<Vec<(usize, bool)>> {
        if self.stop_before_batch(report).await {
            return Ok(Vec::new());
        }
        let names: Vec<&str> = report.consumers[pack.clone()]
            .iter()
            .map(|c| c.consumer.as_str())
            .collect();
        let from = self.store.dialect.earliest_prunable;
        let attempt = self
            .run_batch(connection, true, async |connection| {
                let (deleted, of_each) = self
                    .store
                    .delete_older_of_consumers(connection, &names, from, self.cutoff, limit)
                    .await?;
                let went: Vec<&str> = names
                    .iter()
                    .zip(&of_each)
                    .filter(|(_, rows)| **rows > 0)
                    .map(|(name, _)| *name)
                    .collect();
                self.record(connection, &went).await?;
                Ok((deleted, of_each))
            })
            .await;
        let (deleted, of_each) = match attempt {
            Ok(done) => done,
            // The server undid the whole batch. Unless it may have gone, the failure is one
            // of waiting (which each consumer's batch would wait through again), or someone
            // cancelled the statement (a DBA's cancel means stop), each consumer goes on its
            // own, as before they shared: those before the one at fault lose their rows, and
            // an error that comes again names it.
            Err(error)
                if !sqlx_causes(&error).any(|cause| {
                    is_transient(cause) || is_server_connection_lost(cause) || is_cancelled(cause)
                }) =>
            {
                self.output.debug(format!(
                    "the batch of consumers '{}' to '{}' failed ({}); each of them on its own instead",
                    names[0],
                    names[names.len() - 1],
                    crate::shown_error(&error)
                ));
                return Ok(pack.map(|index| (index, false)).collect());
            }
            Err(error) => return Err(Self::stopped_after(report, error)),
        };
        let (mut again, mut went) = (Vec::new(), 0);
        for (index, of_it) in pack.clone().zip(of_each) {
            let consumer = &mut report.consumers[index];
            consumer.deleted = Some(consumer.deleted.unwrap_or(0) + of_it);
            went += usize::from(of_it > 0);
            if of_it != consumer.older || deleted >= limit {
                again.push((index, of_it > 0));
            }
        }
        // Counted before the rows: a stop at once reports what `count` noted last.
        if deleted > 0 {
            report.batches += 1;
            self.output.debug(format!(
                "batch {}: deleted {deleted} rows of {went} consumers ('{}' to '{}')",
                report.batches,
                report.consumers[pack.start].consumer,
                report.consumers[pack.end - 1].consumer,
            ));
        }
        self.count(report, None, deleted);
        Ok(again)
    }

    /// Rows this run may still delete: those planned (or `--max-rows`) less those deleted.
    fn remaining(&self, report: &PruneReport) -> u64 {
        report
            .rows_planned
            .or(self.max_rows)
            .map_or(u64::MAX, |planned| {
                planned.saturating_sub(report.rows_deleted)
            })
    }

    /// The batches of the consumer at `index` in the report, while the run may delete
    /// more, each from where the last one stopped; `recorded` when its prune is recorded
    /// already.
    async fn one_consumer(
        &self,
        connection: &mut AnyConnection,
        report: &mut PruneReport,
        index: usize,
        mut recorded: bool,
    ) -> anyhow::Result<()> {
        let consumer = report.consumers[index].consumer.clone();
        let keep = std::mem::take(&mut report.consumers[index].keep);
        let mut from = self.store.dialect.earliest_prunable.map(String::from);
        let mut empty_in_a_row = 0;
        let mut stuck_at: Option<String> = None;
        while self.remaining(report) > 0 {
            if self.stop_before_batch(report).await {
                return Ok(());
            }
            let limit = self.batch_size.min(self.remaining(report));
            let (deleted, next_from) = self
                .run_batch(connection, !recorded, async |connection| {
                    let (deleted, next_from) = self
                        .store
                        .delete_older_batch(
                            connection,
                            &consumer,
                            from.as_deref(),
                            self.cutoff,
                            &keep,
                            limit,
                        )
                        .await?;
                    if !recorded && deleted > 0 {
                        self.record(connection, &[&consumer]).await?;
                    }
                    Ok((deleted, next_from))
                })
                .await
                .map_err(|error| Self::stopped_after(report, error))?;
            recorded |= deleted > 0;
            if deleted == 0 {
                // Empty although rows remain: another session deleted or changed the rows
                // this batch had selected (PostgreSQL then skips them), another prune
                // most often. A new statement selects again. Only when the same oldest
                // row stays, batch after batch, is it given up on, and said.
                let oldest = self
                    .oldest_left(connection, &consumer, from.as_deref(), &keep)
                    .await?;
                let remain = oldest.is_some();
                empty_in_a_row = match oldest == stuck_at {
                    true => empty_in_a_row + 1,
                    false => 1,
                };
                stuck_at = oldest;
                if remain && empty_in_a_row < EMPTY_BATCHES_TRIED {
                    continue;
                }
                if remain {
                    self.output.warn(format!(
                        "{EMPTY_BATCHES_TRIED} batches of consumer '{consumer}' in a row \
                         deleted nothing although older rows remain: another session \
                         changed or deleted them meanwhile (re-run prune), or a trigger or \
                         rule on {INBOX_TABLE} keeps them from being deleted"
                    ));
                }
                break;
            }
            (empty_in_a_row, stuck_at) = (0, None);
            if next_from.is_some() {
                from = next_from;
            }
            report.batches += 1;
            self.count(report, Some(index), deleted);
            self.output.debug(format!(
                "batch {}: deleted {deleted} rows of consumer '{consumer}'",
                report.batches
            ));
            // Fewer rows than asked for: most often the consumer's last old ones. One
            // probe tells, where another batch would cost a transaction that finds
            // nothing (for an inbox of many consumers, one per consumer).
            if deleted < limit
                && self
                    .oldest_left(connection, &consumer, from.as_deref(), &keep)
                    .await?
                    .is_none()
            {
                break;
            }
        }
        Ok(())
    }

    /// The table's pages in physical order, one range per batch. The range grows or shrinks
    /// after each batch so that a batch deletes about --batch-size rows, and never reads more
    /// than `MAX_ROWS_READ_PER_BATCH` batches' worth of rows, so every transaction stays short.
    async fn by_blocks(
        &self,
        mut connection: PoolConnection<Any>,
        report: &mut PruneReport,
        only: Option<&str>,
        extent: HeapExtent,
    ) -> anyhow::Result<()> {
        // Without statistics: PostgreSQL's own default guess for a narrow row.
        let rows_per_page = extent.rows_per_page.unwrap_or(50.0).max(1.0);
        let max_pages = page_count(
            MAX_ROWS_READ_PER_BATCH * self.batch_size as f64,
            rows_per_page,
            0,
        );
        // First guess: every row of the first pages goes. An inbox is written oldest first,
        // so its old rows fill the first pages; a guess from the share of old rows in the
        // whole table made the first batch of a half-old inbox twice --batch-size. Where
        // the old rows are sparser, the first batch is only smaller, and the next adapts.
        let mut pages = page_count(self.batch_size as f64, rows_per_page, max_pages);
        // With --group, prune covers one consumer, whose protected partitions these are.
        let (keep, sole_consumer) = match report.consumers.as_slice() {
            [sole] => (sole.keep.clone(), true),
            _ => (Vec::new(), false),
        };
        if !sole_consumer {
            for consumer in &mut report.consumers {
                consumer.deleted = None;
            }
        }
        let pruned: Vec<String> = report
            .consumers
            .iter()
            .map(|c| c.consumer.clone())
            .collect();
        let pruned: Vec<&str> = pruned.iter().map(String::as_str).collect();
        let mut recorded = false;
        let mut block = 0;
        while block < extent.pages {
            if self.stop_before_batch(report).await {
                return Ok(());
            }
            let end = (block + pages).min(extent.pages);
            let (deleted, ()) = self
                .run_batch(&mut connection, !recorded, async |connection| {
                    let deleted = self
                        .store
                        .delete_older_in_blocks(connection, only, self.cutoff, &keep, block..end)
                        .await?;
                    if !recorded && deleted > 0 {
                        self.record(connection, &pruned).await?;
                    }
                    Ok((deleted, ()))
                })
                .await
                .map_err(|error| Self::stopped_after(report, error))?;
            recorded |= deleted > 0;
            report.batches += 1;
            self.count(report, sole_consumer.then_some(0), deleted);
            self.output.debug(format!(
                "batch {}: deleted {deleted} rows in pages {block}..{end}",
                report.batches
            ));
            pages = if deleted == 0 {
                (pages * 2).min(max_pages)
            } else {
                let density = deleted as f64 / (end - block) as f64;
                page_count(self.batch_size as f64, density, max_pages)
            };
            block = end;
        }
        Ok(())
    }
}

/// How many consumers from the first of `consumers` on share one batch of at most `limit`
/// rows: those with fewer old rows than [`PACKED_BELOW`] and none kept for redelivery, up to
/// [`MOST_CONSUMERS_A_BATCH`], whose old rows together are fewer than `limit` (so that a
/// batch that reaches it tells that rows came after prune looked).
fn consumers_sharing_a_batch(consumers: &[ConsumerPrune], limit: u64) -> usize {
    let mut rows = 0;
    consumers
        .iter()
        .take(MOST_CONSUMERS_A_BATCH)
        .take_while(|consumer| {
            rows += consumer.older;
            consumer.keep.is_empty() && consumer.older < PACKED_BELOW && rows < limit
        })
        .count()
}

/// A batch of page ranges reads at most this many times --batch-size rows.
const MAX_ROWS_READ_PER_BATCH: f64 = 8.0;

/// Pages holding `rows` at `rows_per_page`, at least 1 and at most `max` (when `max` > 0).
fn page_count(rows: f64, rows_per_page: f64, max: u64) -> u64 {
    let pages = (rows / rows_per_page.max(f64::MIN_POSITIVE))
        .ceil()
        .max(1.0) as u64;
    if max > 0 {
        pages.min(max)
    } else {
        pages
    }
}

/// What a stop at once reports of the batches so far.
fn note_deleted(stop: &StopRequest, report: &PruneReport) {
    stop.note_done(format!("{} rows deleted", report.rows_deleted), || {
        serde_json::json!({
            "database": report.database,
            "cutoff": report.cutoff,
            "rows_deleted": report.rows_deleted,
            "batches": report.batches,
        })
    });
}

fn print_report(report: &PruneReport, output: &Output) -> anyhow::Result<()> {
    if output.format == Format::Json {
        return output.print_json(report);
    }
    let cutoff = crate::time::shown_utc(report.cutoff);
    if report.dry_run {
        let mut t = table(&["CONSUMER", "WOULD DELETE"], &[1]);
        for consumer in &report.consumers {
            t.add_row(vec![
                consumer.consumer.clone(),
                consumer.matched.unwrap_or(0).to_string(),
            ]);
        }
        if !report.consumers.is_empty() {
            output.print(t.to_string());
        }
        let (matched, planned) = (
            report.rows_matched.unwrap_or(0),
            report.rows_planned.unwrap_or(0),
        );
        let capped = if planned < matched {
            format!(" ({planned} with --max-rows)")
        } else {
            String::new()
        };
        output.print(format!(
            "Dry run: would delete {}{capped} processed before {cutoff}. Nothing was deleted.",
            counted(matched, "row", "rows")
        ));
        print_kept(report, output);
        return Ok(());
    }
    if report.rows_planned == Some(0) {
        // With --group, older rows may be there, all kept back.
        match report.rows_kept_for_redelivery {
            0 => output.print(format!(
                "Nothing to prune: no rows processed before {cutoff}."
            )),
            _ => output.print(format!(
                "Nothing to prune: every row processed before {cutoff} is kept."
            )),
        }
        print_kept(report, output);
        return Ok(());
    }
    if report.rows_matched.is_some() {
        let mut t = table(&["CONSUMER", "OLDER THAN CUTOFF", "DELETED"], &[1, 2]);
        for consumer in &report.consumers {
            t.add_row(vec![
                consumer.consumer.clone(),
                consumer.matched.unwrap_or(0).to_string(),
                or_dash(consumer.deleted),
            ]);
        }
        output.print(t.to_string());
    } else if report.consumers.iter().any(|c| c.deleted.is_some()) {
        // Page ranges over several consumers know no consumer's share: then only the total.
        let mut t = table(&["CONSUMER", "DELETED"], &[1]);
        for consumer in &report.consumers {
            t.add_row(vec![consumer.consumer.clone(), or_dash(consumer.deleted)]);
        }
        output.print(t.to_string());
    }
    output.print(format!(
        "Deleted {} in {} in {:.2}s ({:.0} rows/s); cutoff {cutoff}.",
        counted(report.rows_deleted, "row", "rows"),
        match report.strategy {
            PruneStrategy::Blocks =>
                counted(report.batches, "page-range batch", "page-range batches"),
            _ => counted(report.batches, "batch", "batches"),
        },
        report.elapsed_ms as f64 / 1000.0,
        report.rows_per_second
    ));
    // --max-rows stopped it: the rest waits for the next run.
    if let (Some(max), false) = (report.max_rows, report.interrupted) {
        let remain = match report.rows_matched {
            Some(matched) if matched > report.rows_deleted => {
                Some(match matched - report.rows_deleted {
                    1 => "1 row older than the cutoff remains; the next run deletes it".to_string(),
                    n => {
                        format!("{n} rows older than the cutoff remain; the next run deletes them")
                    }
                })
            }
            Some(_) => None,
            None => Some("older rows may remain; the next run deletes them".to_string()),
        };
        if let (Some(remain), true) = (remain, report.rows_deleted >= max) {
            output.print(format!("--max-rows {max} reached: {remain}."));
        }
    }
    print_kept(report, output);
    Ok(())
}

/// The partitions of this consumer's rows, each with the group's committed offset: rows at or
/// above it may still be delivered again, so their inbox rows must stay to absorb that.
async fn redeliverable(
    store: &Store,
    kafka: &KafkaOpts,
    group: &str,
    consumer: &str,
) -> anyhow::Result<Vec<KeepFrom>> {
    if let Some(collation) = store.topics_merged_by_collation(consumer).await? {
        anyhow::bail!(
            "the inbox's topic column compares by {collation}, which takes topics of consumer \
             '{consumer}' whose names differ only in case for one, so prune cannot tell apart \
             their committed offsets; nothing was deleted; give the column an exact collation \
             (ALTER TABLE processed_messages MODIFY topic VARCHAR(255) CHARACTER SET utf8mb4 \
             COLLATE utf8mb4_bin)"
        );
    }
    let mut connection = store.acquire().await?;
    let partitions: Vec<(String, i64)> = store
        .partition_stats(&mut connection, Some(consumer))
        .await?
        .into_iter()
        .filter_map(|s| Some((s.topic?, s.partition?)))
        .collect();
    // A number no Kafka partition has (SQLite's column takes any) has no committed offset
    // to ask for: its rows are kept, as a partition's without one are.
    let asked: Vec<(String, i32)> = partitions
        .iter()
        .filter_map(|(topic, partition)| Some((topic.clone(), i32::try_from(*partition).ok()?)))
        .collect();
    if partitions.is_empty() {
        return Ok(Vec::new());
    }
    let committed = match asked.is_empty() {
        true => Default::default(),
        false => {
            let kafka = Kafka::new(kafka)?;
            tokio::task::block_in_place(|| {
                let client = kafka.group_client(group)?;
                kafka.committed(&client, &asked)
            })?
        }
    };
    Ok(partitions
        .into_iter()
        .map(|(topic, partition)| KeepFrom {
            committed: i32::try_from(partition)
                .ok()
                .and_then(|partition| committed.get(&(topic.clone(), partition)).copied())
                .flatten(),
            topic,
            partition,
        })
        .collect())
}

/// Fails for a group the coordinator does not know and that has no committed offsets on
/// any topic: a mistyped `--group`.
fn require_known_group(kafka: &Kafka, group: &str) -> anyhow::Result<()> {
    tokio::task::block_in_place(|| {
        let client = kafka.group_client(group)?;
        let state = kafka.group_state(&client, group)?;
        if !kafka.knows_nothing_of(&client, &state, || kafka.every_partition(&client))? {
            return Ok(());
        }
        anyhow::bail!(
            "{}, so prune cannot tell what it may redeliver; check --group (`inboxctl offsets show` lists the groups there are)",
            kafka.unknown_group(group)
        )
    })
}

fn print_kept(report: &PruneReport, output: &Output) {
    if report.rows_kept_for_redelivery > 0 {
        output.print(format!(
            "Kept {} older rows at or above the group's committed offsets: they may still be redelivered.",
            report.rows_kept_for_redelivery
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn consumer(older: u64) -> ConsumerPrune {
        ConsumerPrune {
            consumer: format!("c{older}"),
            matched: None,
            deleted: Some(0),
            kept_for_redelivery: 0,
            keep: Vec::new(),
            older,
        }
    }

    /// Consumers share a batch from the first on while each has fewer than 1,000 old rows,
    /// none is kept for redelivery, they are at most 500, and their rows stay under the limit.
    #[test]
    fn consumers_share_a_batch_while_their_old_rows_fit() {
        let sharing = |olders: &[u64], limit| {
            let consumers: Vec<ConsumerPrune> = olders.iter().map(|&o| consumer(o)).collect();
            consumers_sharing_a_batch(&consumers, limit)
        };
        assert_eq!(sharing(&[3, 3, 3, 3], 10), 3);
        assert_eq!(sharing(&[3, 3, 4], 10), 2);
        assert_eq!(sharing(&[3, 999, 3], 20_000), 3);
        assert_eq!(sharing(&[3, 1000, 3], 20_000), 1);
        assert_eq!(sharing(&[1000, 3, 3], 20_000), 0);
        assert_eq!(sharing(&[12, 3], 10), 0);
        assert_eq!(sharing(&[1; 600], 20_000), 500);
        assert_eq!(sharing(&[], 10), 0);
        let mut kept = vec![consumer(2), consumer(2), consumer(2)];
        kept[1].keep.push(KeepFrom {
            topic: "t".into(),
            partition: 0,
            committed: Some(5),
        });
        assert_eq!(consumers_sharing_a_batch(&kept, 100), 1);
    }
}
