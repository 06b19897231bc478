//! `inspect`: what the inbox holds, or where one event went.

use std::collections::HashMap;

use chrono::Utc;
use serde::Serialize;
use serde_json::json;

use crate::cli::{Format, InspectArgs};
use crate::error::usage;
use crate::exit::ExitStatus;
use crate::output::{counted, or_dash, printable, table, Output};
use crate::store::{
    is_outdated_snapshot, Backend, ConsumerStats, CreateMode, PartitionStats, Store, FUTURE_MARGIN,
};
use crate::time::{format_age, StoredTime};

/// Labels of the age histogram's five buckets, as shown in tables and as JSON keys.
const AGE_LABELS: [(&str, &str); 5] = [
    ("< 1h", "under_1h"),
    ("1h-1d", "1h_to_1d"),
    ("1d-7d", "1d_to_7d"),
    ("7d-30d", "7d_to_30d"),
    (">= 30d", "30d_or_older"),
];

pub async fn run(args: InspectArgs, output: Output) -> anyhow::Result<ExitStatus> {
    let store = super::connect_sequential(&args.database, CreateMode::MustExist, &output).await?;
    let result = match &args.event_id {
        Some(event_id) => lookup(&store, event_id, args.consumer.as_deref(), &output).await,
        None => summary(&store, &args, &output).await,
    };
    store.close().await;
    result
}

/// Splits cumulative "newer than" counts into the histogram's disjoint buckets.
pub fn age_histogram(stats: &ConsumerStats) -> [i64; 5] {
    let n = stats.newer_than;
    [
        n[0],
        n[1] - n[0],
        n[2] - n[1],
        n[3] - n[2],
        stats.rows - n[3],
    ]
}

/// `inspect --format json`, serialised straight from the figures: as a `serde_json::Value`
/// an inbox of 100,000 consumers took over 500 MB.
#[derive(Serialize)]
struct SummaryReport<'a> {
    database: &'a str,
    total_rows: i64,
    total_rows_estimated: bool,
    consumers: Vec<ConsumerReport<'a>>,
    partitions: &'a [PartitionStats],
    age_histogram: AgeBuckets,
}

#[derive(Serialize)]
struct ConsumerReport<'a> {
    #[serde(flatten)]
    stats: &'a ConsumerStats,
    age: AgeBuckets,
    /// The cutoff of the last prune recorded for the consumer (`inboxctl_prunes`).
    pruned_before: Option<chrono::DateTime<Utc>>,
}

/// The histogram's counts, in JSON an object keyed by the buckets' names.
struct AgeBuckets([i64; 5]);

impl Serialize for AgeBuckets {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(AGE_LABELS.len()))?;
        for ((_, key), count) in AGE_LABELS.iter().zip(self.0) {
            map.serialize_entry(key, &count)?;
        }
        map.end()
    }
}

/// `--consumer` with no rows: most often a mistyped name, which must not read as a clean inbox.
fn warn_of_an_unknown_consumer<T>(args: &InspectArgs, consumers: &[T], output: &Output) {
    if let (Some(consumer), true) = (&args.consumer, consumers.is_empty()) {
        warn_of_a_consumer_without_rows(consumer, output);
    }
}

fn warn_of_a_consumer_without_rows(consumer: &str, output: &Output) {
    output.warn(format!(
        "consumer '{consumer}' has no rows in the inbox; `inboxctl inspect` without --consumer lists the consumers it has"
    ));
}

/// How many times inspect reads again when MySQL's snapshot saw a table change under it
/// (the first prune creating its record table, say).
const SNAPSHOT_ATTEMPTS: u32 = 3;

/// The consumers, the partitions and the last prunes, all as of one moment: during a prune,
/// separate statements would show a consumer's rows in one table and fewer in the next.
async fn read_one_moment(
    store: &Store,
    only: Option<&str>,
    now: chrono::DateTime<Utc>,
) -> anyhow::Result<(
    Vec<ConsumerStats>,
    Vec<PartitionStats>,
    HashMap<String, chrono::DateTime<Utc>>,
)> {
    let mut snapshot = store.read_snapshot().await?;
    let read = async {
        let consumers = store.consumer_stats(&mut snapshot, only, now).await?;
        let partitions = store.partition_stats(&mut snapshot, only).await?;
        let cutoffs = store.last_prune_cutoffs(&mut snapshot, only).await?;
        anyhow::Ok((consumers, partitions, cutoffs))
    }
    .await;
    // Ended either way, so that a second attempt starts a transaction of its own.
    let ended = store.end_snapshot(snapshot).await;
    let read = read?;
    ended?;
    Ok(read)
}

async fn summary(store: &Store, args: &InspectArgs, output: &Output) -> anyhow::Result<ExitStatus> {
    store.require_inbox().await?;
    if let Some(consumer) = &args.consumer {
        super::require_held_consumer(store, consumer, "--consumer").await?;
    }
    if args.estimate && output.format == Format::Csv {
        return Err(usage(
            "--format csv lists the partitions' rows, which --estimate does not count; drop one of the two",
        ));
    }
    if args.estimate {
        if let Some(total) = store.estimated_rows().await? {
            return estimated_summary(store, args, total, output).await;
        }
    }
    let now = Utc::now();
    let only = args.consumer.as_deref();
    let mut attempt = 1;
    let (consumers, partitions, cutoffs) = loop {
        match read_one_moment(store, only, now).await {
            Err(error) if attempt < SNAPSHOT_ATTEMPTS && is_outdated_snapshot(&error) => {
                output.debug(format!("inspect: reading again ({error:#})"));
                attempt += 1;
            }
            result => break result?,
        }
    };
    let total: i64 = consumers.iter().map(|c| c.rows).sum();
    if args.estimate {
        let why = match store.backend {
            Backend::Sqlite => "SQLite keeps none",
            Backend::Postgres => "none before the table's first ANALYZE",
            Backend::Mysql => "none for this table yet",
        };
        output.note(format!(
            "{} has no row estimates for this table ({why}); counted exactly",
            store.backend
        ));
    }
    warn_of_an_unknown_consumer(args, &consumers, output);
    for stats in consumers.iter().filter(|stats| stats.in_future > 0) {
        if let Some(newest) = &stats.newest {
            output.warn(future_warning(
                &format!("{} row(s)", stats.in_future),
                &stats.consumer,
                newest,
                now,
                true,
            ));
        }
    }
    let pruned_before: Vec<Option<chrono::DateTime<Utc>>> = consumers
        .iter()
        .map(|stats| cutoffs.get(&stats.consumer).copied())
        .collect();
    let mut histogram = [0i64; 5];
    for stats in &consumers {
        for (slot, count) in histogram.iter_mut().zip(age_histogram(stats)) {
            *slot += count;
        }
    }
    match output.format {
        Format::Json => {
            output.print_json(&SummaryReport {
                database: &store.url.redacted,
                total_rows: total,
                total_rows_estimated: false,
                consumers: consumers
                    .iter()
                    .zip(&pruned_before)
                    .map(|(stats, pruned_before)| ConsumerReport {
                        stats,
                        age: AgeBuckets(age_histogram(stats)),
                        pruned_before: *pruned_before,
                    })
                    .collect(),
                partitions: &partitions,
                age_histogram: AgeBuckets(histogram),
            })?;
        }
        Format::Csv => print_partitions_csv(&partitions, output)?,
        Format::Table => {
            output.print(format!("{}: {}", store.url.endpoint, rows(total)));
            if consumers.is_empty() {
                if args.consumer.is_none() {
                    output.print("The inbox is empty.");
                }
                return Ok(ExitStatus::Success);
            }
            let mut header = vec!["CONSUMER", "ROWS", "OLDEST (UTC)", "NEWEST (UTC)"];
            header.extend(AGE_LABELS.iter().map(|(label, _)| *label));
            let mut consumer_table = table(&header, &[1, 4, 5, 6, 7, 8]);
            for stats in &consumers {
                let mut row = vec![
                    stats.consumer.clone(),
                    stats.rows.to_string(),
                    or_dash(stats.oldest.as_ref().map(|at| when_and_age(at, now))),
                    or_dash(stats.newest.as_ref().map(|at| when_and_age(at, now))),
                ];
                row.extend(age_histogram(stats).iter().map(i64::to_string));
                consumer_table.add_row(row);
            }
            output.print(consumer_table.to_string());
            print_prunes(
                consumers
                    .iter()
                    .map(|c| c.consumer.as_str())
                    .zip(pruned_before.iter().copied()),
                output,
            );
            let mut partition_table = table(
                &[
                    "CONSUMER",
                    "TOPIC",
                    "PARTITION",
                    "ROWS",
                    "MIN OFFSET",
                    "MAX OFFSET",
                ],
                &[2, 3, 4, 5],
            );
            for p in &partitions {
                partition_table.add_row(vec![
                    p.consumer.clone(),
                    p.topic
                        .clone()
                        .unwrap_or_else(|| "(no coordinates)".to_string()),
                    or_dash(p.partition),
                    p.rows.to_string(),
                    or_dash(p.min_offset),
                    or_dash(p.max_offset),
                ]);
            }
            output.print(partition_table.to_string());
        }
    }
    Ok(ExitStatus::Success)
}

/// `inspect --estimate`: rows from the planner's statistics, each consumer's oldest and
/// newest row from the ends of its index range. Nothing reads the rows themselves, so it
/// takes milliseconds on any size of table; partitions and ages need the exact count.
async fn estimated_summary(
    store: &Store,
    args: &InspectArgs,
    total: i64,
    output: &Output,
) -> anyhow::Result<ExitStatus> {
    let now = Utc::now();
    let cutoffs = {
        let mut connection = store.acquire().await?;
        store
            .last_prune_cutoffs(&mut connection, args.consumer.as_deref())
            .await?
    };
    let mut consumers = Vec::new();
    for consumer in store.consumers(args.consumer.as_deref()).await? {
        let rows = store.estimated_consumer_rows(&consumer).await?.unwrap_or(0);
        let (oldest, newest) = store.consumer_time_range(&consumer).await?;
        // A consumer named with --consumer that has no rows is not listed, as when counting.
        if oldest.is_some() {
            consumers.push(EstimatedConsumer {
                pruned_before: cutoffs.get(&consumer).copied(),
                consumer,
                rows,
                oldest,
                newest,
            });
        }
    }
    let total = match &args.consumer {
        Some(_) => consumers.iter().map(|c| c.rows).sum(),
        None => total,
    };
    warn_of_an_unknown_consumer(args, &consumers, output);
    for c in &consumers {
        // PostgreSQL's `infinity` is no time, but later than every one, as plain inspect
        // counts it.
        if let Some(newest) = c.newest.as_ref().filter(|newest| match newest {
            StoredTime::At(newest) => *newest > now + FUTURE_MARGIN,
            StoredTime::NotATime(text) => text == "infinity",
        }) {
            output.warn(future_warning("rows", &c.consumer, newest, now, false));
        }
    }
    match output.format {
        Format::Json => output.print_json(&json!({
            "database": store.url.redacted,
            "total_rows": total,
            "total_rows_estimated": true,
            "consumers": consumers,
            "partitions": null,
            "age_histogram": null,
        }))?,
        _ => {
            output.print(format!(
                "{}: about {} (planner estimate)",
                store.url.endpoint,
                rows(total)
            ));
            if consumers.is_empty() {
                if args.consumer.is_none() {
                    output.print("The inbox is empty.");
                }
                return Ok(ExitStatus::Success);
            }
            let mut consumer_table = table(
                &[
                    "CONSUMER",
                    "ROWS (ESTIMATE)",
                    "OLDEST (UTC)",
                    "NEWEST (UTC)",
                ],
                &[1],
            );
            for c in &consumers {
                consumer_table.add_row(vec![
                    c.consumer.clone(),
                    c.rows.to_string(),
                    or_dash(c.oldest.as_ref().map(|at| when_and_age(at, now))),
                    or_dash(c.newest.as_ref().map(|at| when_and_age(at, now))),
                ]);
            }
            output.print(consumer_table.to_string());
            print_prunes(
                consumers
                    .iter()
                    .map(|c| (c.consumer.as_str(), c.pruned_before)),
                output,
            );
            output.print(format!(
                "{}; run without --estimate for exact counts, ages and offset ranges.",
                estimates_from(store.backend)
            ));
        }
    }
    Ok(ExitStatus::Success)
}

#[derive(Serialize)]
struct EstimatedConsumer {
    consumer: String,
    rows: i64,
    oldest: Option<StoredTime>,
    newest: Option<StoredTime>,
    pruned_before: Option<chrono::DateTime<Utc>>,
}

/// The line under the consumers' table for each consumer with a recorded prune.
fn print_prunes<'a>(
    consumers: impl Iterator<Item = (&'a str, Option<chrono::DateTime<Utc>>)>,
    output: &Output,
) {
    for (consumer, cutoff) in consumers {
        if let Some(cutoff) = cutoff {
            output.print(format!(
                "Last prune of {}: rows processed before {}",
                printable(consumer),
                crate::time::shown_utc(cutoff)
            ));
        }
    }
}

/// Where `--estimate`'s row counts come from, and how fresh they are. PostgreSQL's are as
/// of the last ANALYZE (autovacuum's or by hand); InnoDB updates its own as rows are written
/// and deleted, so pointing at ANALYZE TABLE there would mislead.
fn estimates_from(backend: Backend) -> &'static str {
    match backend {
        Backend::Postgres => {
            "Row counts are the planner's estimates as of the table's last ANALYZE"
        }
        Backend::Mysql => {
            "Row counts are InnoDB's estimates, which the server updates as the table changes"
        }
        // SQLite keeps no statistics: --estimate counts there.
        Backend::Sqlite => "Row counts are estimates",
    }
}

/// "1 row", "2 rows".
fn rows(count: i64) -> String {
    counted(count.max(0) as u64, "row", "rows")
}

/// Rows dated ahead of the clock: most likely written in local time east of UTC (see
/// "Timestamps" in the README), which also makes them look younger than they are.
fn future_warning(
    rows: &str,
    consumer: &str,
    newest: &StoredTime,
    now: chrono::DateTime<Utc>,
    in_histogram: bool,
) -> String {
    let counted = match in_histogram {
        true => ", counted as under 1h old",
        false => "",
    };
    let ahead = match newest {
        // Only SQLite, which compares the stored text: a row written in another form (`T`
        // between date and time, say) sorts after the present's text without being ahead.
        StoredTime::At(newest) if *newest <= now => {
            return format!(
                "{rows} of consumer '{}' compare as later than the present, though the newest \
                 of them is {} old: SQLite compares processed_at as text, and these are written \
                 in another form than YYYY-MM-DD HH:MM:SS (a 'T' between date and time, or a \
                 zone){counted}; see Limits in the README",
                printable(consumer),
                format_age(now - *newest),
            )
        }
        StoredTime::At(newest) => format!("up to {} ahead", format_age(*newest - now)),
        StoredTime::NotATime(text) => format!("the newest at {text}"),
    };
    format!(
        "{rows} of consumer '{}' are dated in the future ({ahead}){counted}; does the application write local time rather than UTC?",
        printable(consumer),
    )
}

/// A row's age, or for one dated ahead of `now`, how far ahead ("in 3h").
fn age_or_ahead(at: chrono::DateTime<Utc>, now: chrono::DateTime<Utc>) -> String {
    match at > now {
        true => format!("in {}", format_age(at - now)),
        false => format_age(now - at),
    }
}

fn when_and_age(at: &StoredTime, now: chrono::DateTime<Utc>) -> String {
    let StoredTime::At(at) = *at else {
        return at.to_rfc3339();
    };
    let age = match at > now {
        true => age_or_ahead(at, now),
        false => format!("{} ago", format_age(now - at)),
    };
    format!("{} ({age})", at.format("%Y-%m-%d %H:%M"))
}

fn print_partitions_csv(partitions: &[PartitionStats], output: &Output) -> anyhow::Result<()> {
    let rows: Vec<Vec<String>> = partitions
        .iter()
        .map(|p| {
            vec![
                p.consumer.clone(),
                p.topic.clone().unwrap_or_default(),
                p.partition.map(|v| v.to_string()).unwrap_or_default(),
                p.rows.to_string(),
                p.min_offset.map(|v| v.to_string()).unwrap_or_default(),
                p.max_offset.map(|v| v.to_string()).unwrap_or_default(),
            ]
        })
        .collect();
    output.print_csv(
        &[
            "consumer",
            "topic",
            "partition",
            "rows",
            "min_offset",
            "max_offset",
        ],
        &rows,
    )
}

async fn lookup(
    store: &Store,
    event_id: &str,
    consumer: Option<&str>,
    output: &Output,
) -> anyhow::Result<ExitStatus> {
    store.require_inbox().await?;
    store.require_text_event_ids().await?;
    if let Some(consumer) = consumer {
        super::require_held_consumer(store, consumer, "--consumer").await?;
    }
    let consumers = store.consumers(consumer).await?;
    let rows = store.find_event(event_id, &consumers).await?;
    // Not found for a consumer that has no rows at all: most often a mistyped name, which
    // must not read as "not processed".
    if let (Some(consumer), true) = (consumer, rows.is_empty()) {
        if !store.consumer_has_rows(consumer).await? {
            warn_of_a_consumer_without_rows(consumer, output);
        }
    }
    let now = Utc::now();
    match output.format {
        Format::Json => output.print_json(&json!({
            "event_id": event_id,
            "found": !rows.is_empty(),
            "consumers_searched": consumers.len(),
            "rows": rows,
        }))?,
        Format::Csv => output.print_csv(
            &[
                "consumer",
                "event_id",
                "topic",
                "partition",
                "offset",
                "processed_at",
            ],
            &rows
                .iter()
                .map(|r| {
                    vec![
                        r.consumer.clone(),
                        r.event_id.clone(),
                        r.topic.clone().unwrap_or_default(),
                        r.partition.map(|v| v.to_string()).unwrap_or_default(),
                        r.offset.map(|v| v.to_string()).unwrap_or_default(),
                        r.processed_at.to_rfc3339(),
                    ]
                })
                .collect::<Vec<_>>(),
        )?,
        Format::Table => {
            if rows.is_empty() {
                let scope = match consumer {
                    Some(consumer) => format!("consumer '{}'", printable(consumer)),
                    None => format!("any of {} consumers", consumers.len()),
                };
                output.print(format!(
                    "Event '{}' was not processed by {scope}.",
                    printable(event_id)
                ));
            } else {
                let mut t = table(
                    &[
                        "CONSUMER",
                        "EVENT ID",
                        "TOPIC",
                        "PARTITION",
                        "OFFSET",
                        "PROCESSED AT (UTC)",
                        "AGE",
                    ],
                    &[3, 4],
                );
                for r in &rows {
                    t.add_row(vec![
                        r.consumer.clone(),
                        r.event_id.clone(),
                        or_dash(r.topic.clone()),
                        or_dash(r.partition),
                        or_dash(r.offset),
                        r.processed_at.format("%Y-%m-%d %H:%M:%S%.3f"),
                        or_dash(r.processed_at.time().map(|at| age_or_ahead(at, now))),
                    ]);
                }
                output.print(t.to_string());
            }
        }
    }
    Ok(ExitStatus::Success)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::AGE_BUCKETS;

    #[test]
    fn cumulative_counts_become_disjoint_buckets() {
        let stats = ConsumerStats {
            consumer: "c".into(),
            rows: 100,
            oldest: None,
            newest: None,
            newer_than: [5, 20, 50, 90],
            in_future: 0,
        };
        assert_eq!(age_histogram(&stats), [5, 15, 30, 40, 10]);
        assert_eq!(AGE_LABELS.len(), AGE_BUCKETS.len() + 1);
    }

    #[test]
    fn estimates_say_how_each_backend_keeps_them() {
        assert!(estimates_from(Backend::Postgres).ends_with("as of the table's last ANALYZE"));
        assert!(!estimates_from(Backend::Mysql).contains("ANALYZE"));
    }

    #[test]
    fn rows_dated_ahead_show_how_far_ahead() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-06T03:14:30Z")
            .unwrap()
            .with_timezone(&Utc);
        let ahead = now + chrono::Duration::hours(3);
        assert_eq!(
            when_and_age(&StoredTime::At(ahead), now),
            "2026-12-06 06:14 (in 3h)"
        );
        assert_eq!(age_or_ahead(ahead, now), "in 3h");
        let behind = now - chrono::Duration::minutes(90);
        assert_eq!(
            when_and_age(&StoredTime::At(behind), now),
            "2026-12-06 01:44 (1h 30m ago)"
        );
        assert_eq!(age_or_ahead(behind, now), "1h 30m");
        assert_eq!(
            future_warning("2 row(s)", "c", &StoredTime::At(ahead), now, true),
            "2 row(s) of consumer 'c' are dated in the future (up to 3h ahead), counted as under 1h old; does the application write local time rather than UTC?"
        );
        assert_eq!(
            future_warning("1 row(s)", "c", &StoredTime::At(behind), now, true),
            "1 row(s) of consumer 'c' compare as later than the present, though the newest of \
             them is 1h 30m old: SQLite compares processed_at as text, and these are written in \
             another form than YYYY-MM-DD HH:MM:SS (a 'T' between date and time, or a zone), \
             counted as under 1h old; see Limits in the README"
        );
        let infinity = StoredTime::NotATime("infinity".into());
        assert_eq!(when_and_age(&infinity, now), "infinity");
        assert_eq!(
            future_warning("1 row(s)", "c", &infinity, now, true),
            "1 row(s) of consumer 'c' are dated in the future (the newest at infinity), counted as under 1h old; does the application write local time rather than UTC?"
        );
    }
}
