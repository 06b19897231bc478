//! `prune`: delete rows older than a retention in bounded batches, each its own transaction.
//!
//! A row is deleted when `processed_at < cutoff`; a row processed exactly at the cutoff stays.

use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::Context;
use chrono::{DateTime, SubsecRound, Utc};
use serde::Serialize;

use crate::cli::{Format, PruneArgs};
use crate::error::usage;
use crate::exit::ExitStatus;
use crate::kafka::{Kafka, KafkaOpts};
use crate::output::{can_prompt, table, Output};
use crate::store::{CreateMode, KeepFrom, Store, EARLIEST_TIMESTAMP, INBOX_TABLE};

#[derive(Debug, Serialize)]
struct ConsumerPrune {
    consumer: String,
    matched: u64,
    deleted: u64,
    /// Rows older than the cutoff kept because the group could still redeliver them.
    kept_for_redelivery: u64,
    #[serde(skip)]
    keep: Vec<KeepFrom>,
}

#[derive(Debug, Serialize)]
struct PruneReport {
    database: String,
    cutoff: DateTime<Utc>,
    dry_run: bool,
    /// Rows older than the cutoff when the command started.
    rows_matched: u64,
    /// Rows this run was to delete (`rows_matched`, capped by `--max-rows`).
    rows_planned: u64,
    rows_deleted: u64,
    batches: u64,
    elapsed_ms: u128,
    rows_per_second: f64,
    interrupted: bool,
    /// With --group: rows older than the cutoff kept because they may be redelivered.
    rows_kept_for_redelivery: u64,
    consumers: Vec<ConsumerPrune>,
}

pub async fn run(args: PruneArgs, output: Output) -> anyhow::Result<ExitStatus> {
    let cutoff = match (args.older_than, args.before) {
        (Some(age), _) => {
            let age =
                chrono::Duration::from_std(age).map_err(|_| usage("--older-than is too large"))?;
            Utc::now()
                .checked_sub_signed(age)
                .ok_or_else(|| usage("--older-than reaches before the start of the calendar"))?
                // Milliseconds: the precision every backend stores and every output shows.
                .trunc_subsecs(3)
        }
        (None, Some(before)) => before,
        (None, None) => return Err(usage("give --older-than DURATION or --before TIMESTAMP")),
    };
    let store = super::connect(&args.database, CreateMode::MustExist, &output).await?;
    store.require_inbox().await?;

    let mut consumers = Vec::new();
    // A group's committed offsets say nothing about another consumer's rows: with --group,
    // prune that group's consumer (same name) unless --consumer names another.
    let only = args.consumer.clone().or_else(|| args.group.clone());
    if args.consumer.is_none() {
        if let Some(group) = &args.group {
            if store.consumer_rows(group).await? == 0 {
                output.warn(format!(
                    "the inbox has no rows of consumer '{group}'; with --group, name the group's inbox consumer with --consumer"
                ));
            }
        }
    }
    for consumer in store.consumers(only.as_deref()).await? {
        let keep = match &args.group {
            Some(group) => redeliverable(&store, &args.kafka, group, &consumer).await?,
            None => Vec::new(),
        };
        let older = store.count_older(&consumer, cutoff, &[]).await?;
        let matched = if keep.is_empty() {
            older
        } else {
            store.count_older(&consumer, cutoff, &keep).await?
        };
        if older > 0 {
            consumers.push(ConsumerPrune {
                consumer,
                matched,
                deleted: 0,
                kept_for_redelivery: older - matched,
                keep,
            });
        }
    }
    let rows_kept_for_redelivery = consumers.iter().map(|c| c.kept_for_redelivery).sum();
    let rows_matched: u64 = consumers.iter().map(|c| c.matched).sum();
    let rows_planned = args
        .max_rows
        .map_or(rows_matched, |max| max.min(rows_matched));
    let mut report = PruneReport {
        database: store.url.redacted.clone(),
        cutoff,
        dry_run: args.dry_run,
        rows_matched,
        rows_planned,
        rows_deleted: 0,
        batches: 0,
        elapsed_ms: 0,
        rows_per_second: 0.0,
        interrupted: false,
        rows_kept_for_redelivery,
        consumers,
    };
    if args.dry_run || rows_planned == 0 {
        print_report(&report, &output)?;
        store.close().await;
        return Ok(ExitStatus::Success);
    }
    if !args.yes {
        let question = format!(
            "Delete {rows_planned} rows of {INBOX_TABLE} processed before {} from {}?",
            cutoff.format("%Y-%m-%d %H:%M:%S UTC"),
            store.url.endpoint
        );
        if !can_prompt() {
            return Err(usage(format!(
                "refusing to delete {rows_planned} rows without confirmation: there is no terminal to ask on; \
                 pass --yes (as cron jobs must) or --dry-run to only count"
            )));
        }
        let confirmed = dialoguer::Confirm::new()
            .with_prompt(question)
            .default(false)
            .interact()
            .context("could not read the answer")?;
        if !confirmed {
            output.note("Nothing deleted.");
            store.close().await;
            return Ok(ExitStatus::Success);
        }
    }

    // Ctrl-C asks to stop; the batch in flight finishes (it is one transaction) and the
    // summary says how far the run got.
    let (stop, signal) = super::stop_on_ctrl_c();

    let started = Instant::now();
    let progress = output.progress(rows_planned, "rows");
    let mut remaining = rows_planned;
    'consumers: for consumer in &mut report.consumers {
        let mut from = EARLIEST_TIMESTAMP.to_string();
        while remaining > 0 {
            if stop.load(Ordering::SeqCst) {
                report.interrupted = true;
                break 'consumers;
            }
            let limit = args.batch_size.min(remaining);
            let (deleted, next_from) = store
                .delete_older_batch(&consumer.consumer, &from, cutoff, &consumer.keep, limit)
                .await
                .with_context(|| {
                    format!(
                        "prune stopped after deleting {} rows; re-run to continue",
                        report.rows_deleted
                    )
                })?;
            if deleted == 0 {
                break;
            }
            if let Some(next_from) = next_from {
                from = next_from;
            }
            report.batches += 1;
            report.rows_deleted += deleted;
            consumer.deleted += deleted;
            remaining = remaining.saturating_sub(deleted);
            progress.inc(deleted);
            output.debug(format!(
                "batch {}: deleted {deleted} rows of consumer '{}'",
                report.batches, consumer.consumer
            ));
        }
    }
    progress.finish_and_clear();
    signal.abort();
    let elapsed = started.elapsed();
    report.elapsed_ms = elapsed.as_millis();
    report.rows_per_second = if elapsed.as_secs_f64() > 0.0 {
        report.rows_deleted as f64 / elapsed.as_secs_f64()
    } else {
        0.0
    };
    print_report(&report, &output)?;
    store.close().await;
    if report.interrupted {
        output.warn(format!(
            "interrupted: deleted {} of {rows_planned} rows; re-run the same command to continue",
            report.rows_deleted
        ));
        return Ok(ExitStatus::Interrupted);
    }
    Ok(ExitStatus::Success)
}

fn print_report(report: &PruneReport, output: &Output) -> anyhow::Result<()> {
    if output.format == Format::Json {
        return output.print_json(report);
    }
    let cutoff = report.cutoff.format("%Y-%m-%d %H:%M:%S%.3f UTC");
    if report.dry_run {
        let mut t = table(&["CONSUMER", "WOULD DELETE"], &[1]);
        for consumer in &report.consumers {
            t.add_row(vec![
                consumer.consumer.clone(),
                consumer.matched.to_string(),
            ]);
        }
        if !report.consumers.is_empty() {
            output.print(t.to_string());
        }
        let capped = if report.rows_planned < report.rows_matched {
            format!(" ({} with --max-rows)", report.rows_planned)
        } else {
            String::new()
        };
        output.print(format!(
            "Dry run: would delete {} rows{capped} processed before {cutoff}. Nothing was deleted.",
            report.rows_matched
        ));
        print_kept(report, output);
        return Ok(());
    }
    if report.rows_planned == 0 {
        output.print(format!(
            "Nothing to prune: no rows processed before {cutoff}."
        ));
        return Ok(());
    }
    let mut t = table(&["CONSUMER", "OLDER THAN CUTOFF", "DELETED"], &[1, 2]);
    for consumer in &report.consumers {
        t.add_row(vec![
            consumer.consumer.clone(),
            consumer.matched.to_string(),
            consumer.deleted.to_string(),
        ]);
    }
    output.print(t.to_string());
    output.print(format!(
        "Deleted {} rows in {} batches in {:.2}s ({:.0} rows/s); cutoff {cutoff}.",
        report.rows_deleted,
        report.batches,
        report.elapsed_ms as f64 / 1000.0,
        report.rows_per_second
    ));
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
    let partitions: Vec<(String, i32)> = store
        .partition_stats(Some(consumer))
        .await?
        .into_iter()
        .filter_map(|s| Some((s.topic?, i32::try_from(s.partition?).ok()?)))
        .collect();
    if partitions.is_empty() {
        return Ok(Vec::new());
    }
    let kafka = Kafka::new(kafka);
    let committed = tokio::task::block_in_place(|| {
        let client = kafka.group_client(group)?;
        kafka.committed(&client, &partitions)
    })?;
    Ok(partitions
        .into_iter()
        .map(|(topic, partition)| KeepFrom {
            committed: committed
                .get(&(topic.clone(), partition))
                .copied()
                .flatten(),
            topic,
            partition,
        })
        .collect())
}

fn print_kept(report: &PruneReport, output: &Output) {
    if report.rows_kept_for_redelivery > 0 {
        output.print(format!(
            "Kept {} older rows at or above the group's committed offsets: they may still be redelivered.",
            report.rows_kept_for_redelivery
        ));
    }
}
