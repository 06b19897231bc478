//! `compare`: the group's committed offsets against the inbox, per partition.
//!
//! - pending redelivery: processed (in the inbox) at or after the committed offset; the next
//!   restart redelivers them and the inbox absorbs them;
//! - lost: below the committed offset and not in the inbox (committed, never processed);
//! - duplicate deliveries (with `--scan`): one event id at several offsets;
//! - orphans: inbox rows at or past the log end, or in a partition the topic does not have
//!   (wrong cluster, recreated topic).
//!
//! Without `--scan` the comparison is by offset: an offset below the committed one with no
//! inbox row is a candidate, and compare reads those offsets (and only those) to decide
//! them. Kafka leaves offsets without a message (transaction markers, aborted transactions,
//! compaction), and a producer's duplicate is absorbed by the inbox under its first offset:
//! neither is lost. `--scan` reads the whole topic and decides by event id (a message
//! without one by its offset, when the consumer's rows have coordinates). After a prune
//! (recorded by `prune` in `inboxctl_prunes`), a missing row below the first offset whose
//! row could not have been pruned is counted as not checked rather than lost. Findings are
//! offsets, each once: two rows can share an offset (a recreated topic reused it, the event
//! id's extraction changed), and one of them must not stand in for an offset with none.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hasher;
use std::time::Instant;

use anyhow::{bail, Context};
use chrono::{DateTime, Utc};
use futures_util::{StreamExt, TryStreamExt};
use serde::Serialize;

use crate::cli::{CompareArgs, Format};
use crate::commands::offsets::{
    group_offsets, out_of_range, warn_unlisted, GroupOffsets, PartitionOffsets, UnknownGroup,
};
use crate::event_id::{id_hash, EventIdSource};
use crate::exit::ExitStatus;
use crate::kafka::{read_range, GroupState, Kafka, KafkaClient};
use crate::output::{first_of, or_dash, table, Output};
use crate::store::pg_pipeline;
use crate::store::{Backend, CreateMode, HeapExtent, IdKey, InboxLayout, Store, INBOX_TABLE};

/// Messages read per inbox lookup during a scan.
const SCAN_CHUNK: usize = 1000;
/// Chunks the topic reader may run ahead of the classification (256k messages).
const READ_AHEAD: usize = 256;
/// Lost events listed per partition when compare works by offset (all are counted).
const LOST_LISTED: usize = 10_000;
/// Candidate offsets closer than this are read as one span, the messages between them
/// included: reading a few thousand messages costs less than placing the reader again.
/// `INBOXCTL_SPAN_MERGE` overrides it (the tests use 1 to read gap by gap).
const SPAN_MERGE: i64 = 10_000;

fn span_merge() -> i64 {
    std::env::var("INBOXCTL_SPAN_MERGE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|merge| *merge > 0)
        .unwrap_or(SPAN_MERGE)
}
/// Up to this many inbox rows, a scan loads the consumer's event ids (as 16-byte hashes, so
/// 10M rows take ~300 MB at most) instead of asking the database about every chunk.
/// `INBOXCTL_SCAN_LOAD_LIMIT` overrides it (the tests use 0 to exercise chunked lookups).
const LOAD_INBOX_UP_TO: i64 = 10_000_000;

fn load_limit() -> i64 {
    std::env::var("INBOXCTL_SCAN_LOAD_LIMIT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(LOAD_INBOX_UP_TO)
}

#[derive(Debug, Clone, Serialize)]
pub struct LostEvent {
    pub partition: i32,
    pub offset: i64,
    /// `None` for a message in which no event id was found: lost by its offset, which has no
    /// inbox row.
    pub event_id: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PartitionComparison {
    pub topic: String,
    pub partition: i32,
    pub committed: Option<i64>,
    pub log_start: i64,
    pub log_end: i64,
    /// Inbox rows of this consumer at this partition (by coordinates).
    pub inbox_rows: i64,
    pub max_inbox_offset: Option<i64>,
    pub pending_redelivery: Vec<i64>,
    pub lost_count: i64,
    pub lost: Vec<LostEvent>,
    pub orphans: Vec<i64>,
    /// Messages in which no event id was found: with `--scan`, all of them (those below the
    /// committed offset without an inbox row at their offset counted lost, unnamed); without,
    /// those read at offsets without an inbox row (counted lost, unnamed).
    pub missing_event_id: i64,
    /// Without `--scan`: offsets below the committed one with no inbox row that hold no
    /// message (transaction markers, aborted transactions, compacted records). Not lost.
    pub empty_offsets: i64,
    /// Offsets below the committed one and below `checked_from` without an inbox row (or,
    /// with `--scan`, whose event the inbox lacks): their rows may have been pruned, so they
    /// are not called lost.
    pub not_checked: i64,
    /// After a prune of the consumer's rows: the first offset whose row, had it been
    /// written, could not have been pruned (see [`checked_from`]). `None` without a prune.
    pub checked_from: Option<i64>,
    /// Without `--scan`: offsets below the committed one with no inbox row there whose event
    /// the inbox holds all the same, under another offset (a producer's duplicate, absorbed)
    /// or none (a row written without coordinates). Not lost.
    pub found_by_event_id: i64,
    /// False for a partition the topic does not have, where the inbox has rows: all of
    /// them are orphans.
    pub in_topic: bool,
}

impl PartitionComparison {
    /// A partition with its group's offset and log, and no findings yet.
    fn new(
        topic: &str,
        partition: i32,
        committed: Option<i64>,
        (log_start, log_end): (i64, i64),
        in_topic: bool,
    ) -> PartitionComparison {
        PartitionComparison {
            topic: topic.to_string(),
            partition,
            committed,
            log_start,
            log_end,
            inbox_rows: 0,
            max_inbox_offset: None,
            pending_redelivery: Vec::new(),
            lost_count: 0,
            lost: Vec::new(),
            orphans: Vec::new(),
            missing_event_id: 0,
            not_checked: 0,
            checked_from: None,
            empty_offsets: 0,
            found_by_event_id: 0,
            in_topic,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Duplicate {
    pub topic: String,
    pub event_id: String,
    /// (partition, offset) of every delivery, in the order read.
    pub positions: Vec<(i32, i64)>,
}

#[derive(Debug, Serialize)]
pub struct Comparison {
    pub group: String,
    pub group_state: String,
    pub consumer: String,
    /// The topics compared, in name order.
    pub topics: Vec<String>,
    pub scan: bool,
    /// The latest cutoff a prune of the consumer's rows recorded (rows processed before it
    /// may be gone), in UTC; `None` when it was never pruned.
    pub pruned_before: Option<DateTime<Utc>>,
    /// Every topic's partitions, by topic, then partition.
    pub partitions: Vec<PartitionComparison>,
    /// Found by `--scan` only: `None` (`null` in JSON) without it, as nothing was looked at.
    pub duplicates: Option<Vec<Duplicate>>,
    pub lost_total: i64,
    pub pending_total: usize,
    pub orphans_total: usize,
    /// With `--scan`; `None` (`null` in JSON) without it.
    pub messages_scanned: Option<u64>,
    /// `messages_scanned` topic by topic, in the order of `topics`.
    #[serde(skip)]
    pub scanned_per_topic: Vec<u64>,
    /// Without `--topic`: the topics the consumer has inbox rows of where the group has no
    /// committed offsets, which were not compared; in name order.
    pub uncompared_topics: Vec<String>,
    /// Without `--topic`: the topics the consumer has inbox rows of that do not exist on the
    /// brokers (deleted, or of another cluster), not compared; in name order.
    pub missing_topics: Vec<String>,
}

/// What `compare_topics` found, before the totals.
struct Compared {
    state: GroupState,
    /// Where the event ids were looked for (`--event-id-from`), for the warnings.
    source: EventIdSource,
    /// The inbox consumer has no rows at all.
    consumer_without_rows: bool,
    pruned_before: Option<DateTime<Utc>>,
    topics: Vec<(String, TopicComparison)>,
    uncompared: Vec<String>,
    missing: Vec<String>,
}

/// Topics named in a message at most; JSON lists them all.
const TOPICS_NAMED: usize = 10;

/// `topic 'a'`, `topics 'a', 'b'`, or the first [`TOPICS_NAMED`] and how many more.
fn quoted_list(topics: &[String]) -> String {
    let quoted = first_of(
        topics.iter().map(|topic| format!("'{topic}'")).collect(),
        TOPICS_NAMED,
    );
    match topics.len() {
        1 => format!("topic {quoted}"),
        _ => format!("topics {quoted}"),
    }
}

/// What one topic's comparison found.
struct TopicComparison {
    partitions: Vec<PartitionComparison>,
    duplicates: Vec<Duplicate>,
    messages_scanned: u64,
    /// With `--scan`: messages without an event id were checked by their offsets.
    without_id_by_offset: bool,
}

pub async fn run(args: CompareArgs, output: Output) -> anyhow::Result<ExitStatus> {
    // Every offset missing a row would pass as pruned: nothing could be found lost.
    if let Some(cutoff) = args.pruned_before.filter(|cutoff| *cutoff > Utc::now()) {
        return Err(crate::error::usage(format!(
            "--pruned-before {} is in the future: no prune can have deleted rows processed after now, and every offset without a row would pass as pruned; expected a time in the past",
            crate::time::shown_utc(cutoff)
        )));
    }
    let kafka = Kafka::new(&args.kafka)?;
    let consumer = args.consumer.clone().unwrap_or_else(|| args.group.clone());
    // The group's offsets come from Kafka and the inbox from the database: both at once.
    let group = {
        let kafka = Kafka::new(&args.kafka)?;
        let (group, topics) = (args.group.clone(), args.topic.clone());
        tokio::task::spawn_blocking(move || {
            let client = kafka.group_client(&group)?;
            let offsets = group_offsets(&kafka, &client, &group, &topics)?;
            Ok::<_, anyhow::Error>((offsets, client))
        })
    };
    // The scan's consumer is made now: librdkafka connects to the brokers and reads their
    // metadata in the background while the offsets and the database are on their way.
    let reader_client = if args.scan {
        Some(kafka.reader(&[])?)
    } else {
        None
    };
    // At most two of the store's queries overlap: the per-partition figures with either the
    // scan's lookups or (off PostgreSQL) the load of the inbox's ids. A larger pool would
    // open connections that are not needed (see `Store::connect_with`). During a scan the
    // per-partition counts run beside the reading and the classification, which keep the
    // cores busy: parallel workers would only add their start-up to the same cores.
    let store =
        super::connect_pooled(&args.database, CreateMode::MustExist, &output, 2, args.scan).await?;
    // The store is closed on every path, an error's too: a connection dropped at exit is a
    // lost client to the server.
    let compared = compare_topics(
        &args,
        &kafka,
        &store,
        &consumer,
        group,
        reader_client,
        &output,
    )
    .await;
    store.close().await;
    let Compared {
        state,
        source,
        consumer_without_rows,
        pruned_before,
        topics,
        uncompared,
        missing,
    } = compared?;

    let mut comparison = Comparison {
        group: args.group.clone(),
        group_state: state.state.clone(),
        consumer,
        topics: topics.iter().map(|(topic, _)| topic.clone()).collect(),
        scan: args.scan,
        pruned_before,
        partitions: Vec::new(),
        duplicates: args.scan.then(Vec::new),
        lost_total: 0,
        pending_total: 0,
        orphans_total: 0,
        messages_scanned: args.scan.then_some(0),
        scanned_per_topic: Vec::new(),
        uncompared_topics: uncompared,
        missing_topics: missing,
    };
    // Said after the report, which they qualify.
    let mut warnings = Vec::new();
    // Every offset below the committed one then counts as lost: more likely a consumer
    // name that is not the one the application records than that much loss.
    if consumer_without_rows {
        warnings.push(format!(
            "inbox consumer '{}' has no rows; if the application records its rows under another name, give it with --consumer (`inboxctl inspect` lists the consumers)",
            comparison.consumer
        ));
    }
    if !comparison.uncompared_topics.is_empty() {
        warnings.push(format!(
            "the inbox of consumer '{}' holds rows of {}, where group '{}' has no committed offsets, so they were not compared (the group never committed there, or its offsets expired); name them with --topic to compare them",
            comparison.consumer,
            quoted_list(&comparison.uncompared_topics),
            comparison.group
        ));
    }
    if !comparison.missing_topics.is_empty() {
        let (which, left) = match comparison.missing_topics.len() {
            1 => ("which does not", "a deleted topic"),
            _ => ("which do not", "deleted topics"),
        };
        warnings.push(format!(
            "the inbox of consumer '{}' holds rows of {}, {which} exist on {}: rows left from {left} or another cluster",
            comparison.consumer,
            quoted_list(&comparison.missing_topics),
            kafka.brokers()
        ));
    }
    for (topic, found) in topics {
        // Named only when there are several: one topic's warnings read as before.
        let of_topic = match comparison.topics.len() {
            1 => String::new(),
            _ => format!(" of topic '{topic}'"),
        };
        let without_id: i64 = found.partitions.iter().map(|p| p.missing_event_id).sum();
        // Messages without an id cannot be checked by id (only by their offsets, when the
        // rows have them); when no message has one, the extraction is the likelier mistake
        // than the topic.
        let scanned = found.messages_scanned;
        if scanned > 0 && without_id as u64 == scanned {
            let checked = match found.without_id_by_offset {
                true => " by event id; they were checked by their offsets",
                false => " against the inbox",
            };
            warnings.push(format!(
                "none of the {scanned} messages scanned{of_topic} carries an event id where --event-id-from ({source}) looks, so none could be checked{checked}"
            ));
        }
        // Without --scan they are lost all the same (their offsets have no row), but unnamed.
        let read: i64 = found
            .partitions
            .iter()
            .map(|p| p.lost_count + p.found_by_event_id)
            .sum();
        if !args.scan && read > 0 && without_id == read {
            warnings.push(format!(
                "none of the {read} messages read{of_topic} at offsets without an inbox row carries an event id where --event-id-from ({source}) looks, so none could be looked up in the inbox by id"
            ));
        }
        if let Some(total) = &mut comparison.messages_scanned {
            *total += scanned;
        }
        comparison.scanned_per_topic.push(scanned);
        comparison.partitions.extend(found.partitions);
        if let Some(duplicates) = &mut comparison.duplicates {
            duplicates.extend(found.duplicates);
        }
    }
    let partitions = &comparison.partitions;
    comparison.lost_total = partitions.iter().map(|p| p.lost_count).sum();
    comparison.pending_total = partitions.iter().map(|p| p.pending_redelivery.len()).sum();
    comparison.orphans_total = partitions.iter().map(|p| p.orphans.len()).sum();
    print(&comparison, args.show, &output)?;
    for warning in warnings {
        output.warn(warning);
    }
    if comparison.lost_total > 0 || comparison.orphans_total > 0 {
        Ok(ExitStatus::Findings)
    } else {
        Ok(ExitStatus::Success)
    }
}

type GroupRead = tokio::task::JoinHandle<anyhow::Result<(GroupOffsets, KafkaClient)>>;

/// Checks the inbox, waits for the group's offsets, then compares topic by topic: the
/// group's state, the prune cutoff that applies, each topic's findings, and without
/// `--topic` the inbox's topics the group has no offsets on.
async fn compare_topics(
    args: &CompareArgs,
    kafka: &Kafka,
    store: &Store,
    consumer: &str,
    group: GroupRead,
    mut reader_client: Option<KafkaClient>,
    output: &Output,
) -> anyhow::Result<Compared> {
    let started = Instant::now();
    let has_coordinates = store.require_inbox_table().await? == InboxLayout::Current;
    store.require_text_event_ids().await?;
    super::require_held_consumer(store, consumer, "the consumer").await?;
    let pruned_before = store
        .last_prune_cutoff(consumer)
        .await?
        .max(args.pruned_before);
    if !has_coordinates && !args.scan {
        bail!(
            "{INBOX_TABLE} has no topic/partition/offset columns: compare by event id with --scan"
        );
    }
    // With --scan and few enough rows, the inbox's ids stream in from the database while
    // the topic is read and classified; otherwise the scan asks the database chunk by chunk.
    let ids_to_load = match args.scan {
        true => ids_to_load(store, consumer).await?,
        false => None,
    };
    // Without --topic, the inbox's own topics tell which of them the group has no offsets
    // on (it never committed there, or its offsets expired), so that they are not passed
    // over in silence.
    let inbox_topics = match args.topic.is_empty() && has_coordinates {
        true => store.consumer_topics(consumer).await?,
        false => Vec::new(),
    };
    let (
        GroupOffsets {
            state,
            partitions: offsets,
            unlisted,
            cluster_topics,
        },
        group_client,
    ) = match group
        .await
        .context("reading the group's offsets stopped unexpectedly")?
    {
        Ok(read) => read,
        // A mistyped group must not pass for one that committed nothing, `--topic` or not;
        // the inbox's topics may show what the group is called.
        Err(error) => match error.downcast::<UnknownGroup>() {
            Ok(UnknownGroup(message)) => {
                let mut topics = match (has_coordinates, inbox_topics.is_empty()) {
                    (true, true) => store.consumer_topics(consumer).await?,
                    _ => inbox_topics,
                };
                topics.sort_unstable();
                if topics.is_empty() {
                    bail!("{message}");
                }
                bail!(
                    "{message} (the inbox of consumer '{consumer}' holds rows of {})",
                    quoted_list(&topics)
                );
            }
            Err(error) => return Err(error),
        },
    };
    warn_unlisted(output, &unlisted, "compared");
    for warning in offsets.iter().filter_map(out_of_range) {
        output.warn(warning);
    }
    let mut by_topic: BTreeMap<String, Vec<PartitionOffsets>> = BTreeMap::new();
    for p in offsets {
        by_topic.entry(p.topic.clone()).or_default().push(p);
    }
    // In the order of `by_topic`'s names, whatever the database's collation.
    // A topic the brokers do not have cannot be compared, named or not.
    let (mut uncompared, mut missing): (Vec<String>, Vec<String>) = inbox_topics
        .into_iter()
        .filter(|topic| !by_topic.contains_key(topic))
        .partition(|topic| cluster_topics.contains(topic));
    uncompared.sort_unstable();
    missing.sort_unstable();
    if by_topic.is_empty() {
        let held = match (uncompared.is_empty(), missing.is_empty()) {
            (true, true) => String::new(),
            (false, true) => format!(
                " (the inbox of consumer '{consumer}' holds rows of {})",
                quoted_list(&uncompared)
            ),
            (true, false) => format!(
                " (the inbox of consumer '{consumer}' holds rows only of {}, not on the brokers)",
                quoted_list(&missing)
            ),
            (false, false) => format!(
                " (the inbox of consumer '{consumer}' holds rows of {}, and of {}, not on the brokers)",
                quoted_list(&uncompared),
                quoted_list(&missing)
            ),
        };
        bail!(
            "consumer group '{}' has no committed offsets on {}: there is nothing to compare; name the topic with --topic{held}",
            args.group,
            kafka.brokers()
        );
    }
    // After a prune, where each partition's offsets can be checked: the first message late
    // enough that its row could not have been pruned, by Kafka's timestamps.
    let (group_client, late_enough) = match pruned_before {
        Some(cutoff) => {
            let kafka = Kafka::new(&args.kafka)?;
            let wanted: Vec<(String, Vec<i32>)> = by_topic
                .iter()
                .map(|(topic, offsets)| {
                    (topic.clone(), offsets.iter().map(|p| p.partition).collect())
                })
                .collect();
            let at = crate::time::kafka_millis_from(cutoff + PRUNE_MARGIN);
            tokio::task::spawn_blocking(move || {
                let found: anyhow::Result<BTreeMap<String, BTreeMap<i32, Option<i64>>>> = wanted
                    .into_iter()
                    .map(|(topic, partitions)| {
                        let found =
                            kafka.offsets_for_time(&group_client, &topic, &partitions, at)?;
                        Ok((topic, found))
                    })
                    .collect();
                (group_client, found)
            })
            .await
            .context("looking up offsets by time stopped unexpectedly")?
        }
        None => (group_client, Ok(BTreeMap::new())),
    };
    let mut late_enough = late_enough?;
    // The group's client closes beside the comparison, awaited only at the end.
    let closing = tokio::task::spawn_blocking(move || drop(group_client));
    // Where the event ids are, worked out once for every topic and the warnings.
    let source = args.event_id_from.clone().unwrap_or(EventIdSource::Default);
    let comparing = TopicCheck {
        args,
        kafka,
        store,
        consumer,
        source: &source,
        has_coordinates,
        pruned_before,
        ids_to_load,
        // The consumer's ids are the same for every topic: loaded once, kept for the next.
        loaded_ids: (by_topic.len() > 1).then(std::sync::OnceLock::new),
        output,
    };
    let mut topics = Vec::new();
    for (topic, offsets) in by_topic {
        let late_enough = late_enough.remove(&topic).unwrap_or_default();
        let reader_client = match (args.scan, reader_client.take()) {
            (true, None) => Some(kafka.reader(&[])?),
            (_, made) => made,
        };
        let found = comparing
            .compare(&topic, offsets, late_enough, reader_client)
            .await?;
        topics.push((topic, found));
    }
    let _ = closing.await;
    output.debug(format!(
        "compared in {:.2}s",
        started.elapsed().as_secs_f64()
    ));
    // Rows on the topics compared show the consumer has some; otherwise it is looked up.
    let consumer_without_rows = topics
        .iter()
        .all(|(_, found)| found.partitions.iter().all(|p| p.inbox_rows == 0))
        && !store.consumer_has_rows(consumer).await?;
    Ok(Compared {
        state,
        source,
        consumer_without_rows,
        pruned_before,
        topics,
        uncompared,
        missing,
    })
}

/// What comparing a topic needs, the same for every topic.
struct TopicCheck<'a> {
    args: &'a CompareArgs,
    kafka: &'a Kafka,
    store: &'a Store,
    consumer: &'a str,
    source: &'a EventIdSource,
    has_coordinates: bool,
    pruned_before: Option<DateTime<Utc>>,
    ids_to_load: Option<i64>,
    /// With several topics to scan, the consumer's id hashes once loaded (see
    /// [`load_inbox_ids`]), sent again for each next topic instead of read again.
    loaded_ids: Option<std::sync::OnceLock<Vec<Vec<u128>>>>,
    output: &'a Output,
}

impl TopicCheck<'_> {
    /// One topic against the inbox: its partitions' offsets (`offsets`), the first offset
    /// by time that a prune left each (`late_enough`), and with --scan the reader's client.
    async fn compare(
        &self,
        topic: &str,
        offsets: Vec<PartitionOffsets>,
        late_enough: BTreeMap<i32, Option<i64>>,
        reader_client: Option<KafkaClient>,
    ) -> anyhow::Result<TopicComparison> {
        let (args, store, consumer, output) = (self.args, self.store, self.consumer, self.output);
        let source = self.source;
        let (id_sender, id_receiver) = tokio::sync::mpsc::unbounded_channel();
        let loading = async {
            if self.ids_to_load.is_none() {
                return Ok(());
            }
            let kept = self.loaded_ids.as_ref().and_then(std::sync::OnceLock::get);
            match kept {
                // A closed receiver means the scan stopped; its own error tells why.
                Some(batches) => batches.iter().for_each(|batch| {
                    let _ = id_sender.send(batch.clone());
                }),
                None => {
                    let batches = load_inbox_ids(
                        store,
                        consumer,
                        id_sender,
                        self.loaded_ids.is_some(),
                        output,
                    )
                    .await?;
                    if let Some(loaded) = &self.loaded_ids {
                        let _ = loaded.set(batches);
                    }
                }
            }
            Ok(())
        };
        let comparing = async {
            let mut checked_from = BTreeMap::new();
            if self.pruned_before.is_some() {
                for p in &offsets {
                    let lowest_row = match self.has_coordinates {
                        true => store.lowest_offset(consumer, topic, p.partition).await?,
                        false => None,
                    };
                    let by_time = late_enough.get(&p.partition).copied().flatten();
                    checked_from.insert(p.partition, checked_from_offset(p, by_time, lowest_row));
                }
            }
            // The topic's reader starts as soon as the offsets are known.
            let id_key = store.id_key().await?;
            let reader = reader_client.map(|client| {
                let whole: Vec<(i32, i64, i64)> = offsets
                    .iter()
                    .map(|p| (p.partition, p.log_start, p.log_end))
                    .collect();
                start_reader(
                    client,
                    self.kafka.timeout(),
                    topic,
                    vec![whole],
                    None,
                    source,
                    id_key,
                )
            });
            // The inbox's per-partition figures and the topic scan run side by side.
            let by_offsets = async {
                // Without a scan nothing else queries the store meanwhile: two partitions at a
                // time, one on each connection of the pool.
                let at_once = if args.scan { 1 } else { 2 };
                let compared: Vec<_> = futures_util::stream::iter(&offsets)
                    .map(|p| {
                        compare_by_offsets(
                            store,
                            consumer,
                            p,
                            checked_from.get(&p.partition).copied(),
                            self.has_coordinates,
                            args.scan,
                        )
                    })
                    .buffered(at_once)
                    .try_collect()
                    .await?;
                let mut partitions = Vec::new();
                let mut candidates = BTreeMap::new();
                for (partition, gaps) in compared {
                    if !gaps.is_empty() {
                        candidates.insert(partition.partition, gaps);
                    }
                    partitions.push(partition);
                }
                if self.has_coordinates {
                    partitions.extend(outside_partitions(store, consumer, topic, &offsets).await?);
                    partitions.sort_by_key(|p| p.partition);
                }
                Ok::<_, anyhow::Error>((partitions, candidates))
            };
            let scanning = async {
                match reader {
                    Some(reader) => {
                        let inbox = if let Some(rows) = self.ids_to_load {
                            InboxIds::Streaming(id_receiver, rows)
                        } else {
                            InboxIds::AskPerChunk(store)
                        };
                        classify(
                            reader,
                            inbox,
                            consumer,
                            topic,
                            Findings::new(&offsets, &checked_from, self.has_coordinates),
                            output,
                        )
                        .await
                        .map(Some)
                    }
                    None => Ok(None),
                }
            };
            let ((mut partitions, candidates), mut scan) = tokio::try_join!(by_offsets, scanning)?;
            if let Some(scan) = &mut scan {
                self.check_without_id(topic, &partitions, &checked_from, scan)
                    .await?;
            }
            if !candidates.is_empty() {
                let checking = Checking {
                    topic,
                    store,
                    consumer,
                    source,
                    output,
                    id_less_by_offset: self.checks_id_less_by_offset(&partitions).await?,
                };
                checking
                    .check(self.kafka, candidates, &mut partitions)
                    .await?;
            }
            Ok::<_, anyhow::Error>((partitions, scan))
        };
        // An error of either side ends both (the load's is never taken for the end of the ids).
        let ((), (mut partitions, scan)) = tokio::try_join!(loading, comparing)?;
        let mut found = TopicComparison {
            partitions: Vec::new(),
            duplicates: Vec::new(),
            messages_scanned: 0,
            without_id_by_offset: false,
        };
        if let Some(scan) = scan {
            found.messages_scanned = scan.messages;
            found.without_id_by_offset = scan.without_id_by_offset;
            found.duplicates = scan.duplicates;
            for partition in &mut partitions {
                let scanned = scan.partitions.get(&partition.partition);
                partition.pending_redelivery =
                    scanned.map(|f| f.pending.clone()).unwrap_or_default();
                partition.lost = scanned.map(|f| f.lost.clone()).unwrap_or_default();
                partition.lost_count = partition.lost.len() as i64;
                partition.missing_event_id = scanned.map_or(0, |f| f.missing_event_id);
                partition.not_checked = scanned.map_or(0, |f| f.not_checked);
            }
        }
        found.partitions = partitions;
        Ok(found)
    }
}

impl TopicCheck<'_> {
    /// Whether a message without an event id is decided by its offset, in either mode: only
    /// where the consumer records coordinates (rows at them in this topic, or in another).
    /// A consumer that records none leaves such a message undecided, not lost.
    async fn checks_id_less_by_offset(
        &self,
        partitions: &[PartitionComparison],
    ) -> anyhow::Result<bool> {
        Ok(partitions.iter().any(|p| p.inbox_rows > 0)
            || !self.store.consumer_topics(self.consumer).await?.is_empty())
    }

    /// With `--scan`, decides the messages in which no event id was found by their
    /// coordinates, as compare does without `--scan`: below the committed offset, one without
    /// an inbox row at its offset is lost (or, below where a prune left the partition, not
    /// checked); at or after it, one with a row there is pending redelivery. A consumer whose
    /// rows carry no coordinates leaves them undecided.
    async fn check_without_id(
        &self,
        topic: &str,
        partitions: &[PartitionComparison],
        checked_from: &BTreeMap<i32, i64>,
        scan: &mut Scan,
    ) -> anyhow::Result<()> {
        if scan
            .partitions
            .values()
            .all(|p| p.without_id_below.is_empty() && p.without_id_after.is_empty())
        {
            return Ok(());
        }
        if !self.checks_id_less_by_offset(partitions).await? {
            return Ok(());
        }
        scan.without_id_by_offset = true;
        for (partition, found) in scan.partitions.iter_mut() {
            let offsets = std::mem::take(&mut found.without_id_below);
            let from = checked_from.get(partition).copied().unwrap_or(i64::MIN);
            for chunk in offsets.chunks(SCAN_CHUNK) {
                let held = self
                    .store
                    .offsets_with_rows(self.consumer, topic, *partition, chunk)
                    .await?;
                for offset in chunk {
                    if held.binary_search(offset).is_ok() {
                        continue;
                    }
                    if *offset < from {
                        found.not_checked += 1;
                    } else {
                        found.lost.push(LostEvent {
                            partition: *partition,
                            offset: *offset,
                            event_id: None,
                        });
                    }
                }
            }
            found.lost.sort_by_key(|lost| lost.offset);
            let after = std::mem::take(&mut found.without_id_after);
            for chunk in after.chunks(SCAN_CHUNK) {
                let held = self
                    .store
                    .offsets_with_rows(self.consumer, topic, *partition, chunk)
                    .await?;
                found.pending.extend(held);
            }
            found.pending.sort_unstable();
        }
        Ok(())
    }
}

/// What the inbox's coordinates say about one partition.
async fn compare_by_offsets(
    store: &Store,
    consumer: &str,
    p: &PartitionOffsets,
    checked_from: Option<i64>,
    has_coordinates: bool,
    scan: bool,
) -> anyhow::Result<(PartitionComparison, Vec<(i64, i64)>)> {
    let topic = p.topic.as_str();
    let mut comparison = PartitionComparison::new(
        topic,
        p.partition,
        p.committed,
        (p.log_start, p.log_end),
        true,
    );
    comparison.checked_from = checked_from;
    if !has_coordinates {
        return Ok((comparison, Vec::new()));
    }
    let (rows, max) = store
        .offset_range_summary(consumer, topic, p.partition, 0)
        .await?;
    comparison.inbox_rows = rows;
    comparison.max_inbox_offset = max;
    comparison.orphans = store
        .offsets_in_range(consumer, topic, p.partition, p.log_end, None)
        .await?;
    // A group without a committed offset has committed nothing: nothing is lost, and all it
    // has processed would be delivered again.
    let committed = p
        .committed
        .unwrap_or(p.log_start)
        .clamp(p.log_start, p.log_end);
    if !scan {
        comparison.pending_redelivery = store
            .offsets_in_range(consumer, topic, p.partition, committed, Some(p.log_end))
            .await?;
        if committed > p.log_start {
            let accounted = store
                .distinct_offsets(consumer, topic, p.partition, p.log_start, committed)
                .await?;
            if accounted < committed - p.log_start {
                let present = store
                    .offsets_in_range(consumer, topic, p.partition, p.log_start, Some(committed))
                    .await?;
                // Candidates only: reading them decides which are lost.
                let gaps = missing_ranges(p.log_start, committed, &present);
                let (not_checked, gaps) = split_gaps(gaps, checked_from.unwrap_or(i64::MIN));
                comparison.not_checked = not_checked;
                return Ok((comparison, gaps));
            }
        }
    }
    Ok((comparison, Vec::new()))
}

/// Inbox rows of the consumer at the topic in partitions the topic does not have (below 0
/// or past its last): orphans, one entry per such partition, the topic's log taken as empty.
async fn outside_partitions(
    store: &Store,
    consumer: &str,
    topic: &str,
    offsets: &[PartitionOffsets],
) -> anyhow::Result<Vec<PartitionComparison>> {
    let Some(last) = offsets.iter().map(|p| p.partition).max() else {
        return Ok(Vec::new());
    };
    let rows = store.rows_outside_partitions(consumer, topic, last).await?;
    let mut partitions: Vec<PartitionComparison> = Vec::new();
    for (partition, offset) in rows {
        let partition = partition as i32;
        if partitions.last().map(|p| p.partition) != Some(partition) {
            partitions.push(PartitionComparison::new(
                topic,
                partition,
                None,
                (0, 0),
                false,
            ));
        }
        let p = partitions.last_mut().expect("pushed above");
        p.inbox_rows += 1;
        p.max_inbox_offset = Some(offset);
        if p.orphans.last() != Some(&offset) {
            p.orphans.push(offset);
        }
    }
    Ok(partitions)
}

/// The runs of offsets in `[from, to)` not in `present` (sorted, repeats allowed), as
/// `[start, end)` ranges in order.
pub fn missing_ranges(from: i64, to: i64, present: &[i64]) -> Vec<(i64, i64)> {
    let mut gaps = Vec::new();
    let mut next = from;
    for &offset in present.iter().filter(|o| **o >= from && **o < to) {
        if next < offset {
            gaps.push((next, offset));
        }
        next = next.max(offset + 1);
    }
    if next < to {
        gaps.push((next, to));
    }
    gaps
}

/// How far past a prune's cutoff a message's timestamp must be for its row to be certain to
/// have outlived the prune: a message is processed after it is produced, and this is room
/// for the producer's and the database's clocks to disagree.
const PRUNE_MARGIN: chrono::Duration = chrono::Duration::minutes(5);

/// After a prune, the first offset of a partition from which a missing row means a lost
/// message rather than a pruned row: a row processed before the cutoff belongs to a message
/// produced before it (so before `by_time`, the first offset late enough by Kafka's
/// timestamps) and, a partition being processed in order, processed before the lowest row
/// the inbox still has. Either bound alone proves a row could not have been pruned.
fn checked_from_offset(p: &PartitionOffsets, by_time: Option<i64>, lowest_row: Option<i64>) -> i64 {
    let by_time = by_time.unwrap_or(p.log_end);
    lowest_row
        .map_or(by_time, |row| row.min(by_time))
        .clamp(p.log_start, p.log_end)
}

/// Splits `gaps` (sorted) at offset `at`: how many offsets lie below it, and the ranges from
/// it on.
fn split_gaps(gaps: Vec<(i64, i64)>, at: i64) -> (i64, Vec<(i64, i64)>) {
    let mut below = 0;
    let mut from = Vec::with_capacity(gaps.len());
    for (start, end) in gaps {
        if end <= at {
            below += end - start;
        } else if start < at {
            below += at - start;
            from.push((at, end));
        } else {
            from.push((start, end));
        }
    }
    (below, from)
}

/// The spans a reader places itself at to read `gaps` (sorted): gaps less than `merge`
/// apart are read as one span, the offsets between them included.
pub fn read_spans(gaps: &[(i64, i64)], merge: i64) -> Vec<(i64, i64)> {
    let mut spans: Vec<(i64, i64)> = Vec::new();
    for &(start, end) in gaps {
        match spans.last_mut() {
            Some(last) if start - last.1 < merge => last.1 = end,
            _ => spans.push((start, end)),
        }
    }
    spans
}

/// Whether `offset` lies in one of `gaps` (sorted, disjoint).
fn in_gaps(gaps: &[(i64, i64)], offset: i64) -> bool {
    let after = gaps.partition_point(|(_, end)| *end <= offset);
    gaps.get(after).is_some_and(|(start, _)| *start <= offset)
}

/// Without `--scan`, what decides the offsets below the committed one that have no inbox
/// row.
struct Checking<'a> {
    topic: &'a str,
    store: &'a Store,
    consumer: &'a str,
    source: &'a EventIdSource,
    output: &'a Output,
    /// See [`TopicCheck::checks_id_less_by_offset`].
    id_less_by_offset: bool,
}

impl Checking<'_> {
    /// Reads the candidate offsets (`gaps` per partition) and decides each: one that
    /// delivers no message is not lost (a transaction marker, an aborted transaction's
    /// message, a compacted record), nor is one whose event the inbox holds from another
    /// offset or without one (a producer's duplicate, a row without coordinates); the rest
    /// are lost, named by their event id where the message has one.
    async fn check(
        &self,
        kafka: &Kafka,
        gaps: BTreeMap<i32, Vec<(i64, i64)>>,
        partitions: &mut [PartitionComparison],
    ) -> anyhow::Result<()> {
        let started = Instant::now();
        let candidates: BTreeMap<i32, i64> = gaps
            .iter()
            .map(|(p, gaps)| (*p, gaps.iter().map(|(start, end)| end - start).sum()))
            .collect();
        let spans: Vec<Vec<(i64, i64)>> =
            gaps.values().map(|g| read_spans(g, span_merge())).collect();
        // Round k reads the k-th span of every partition, side by side.
        let rounds: Vec<Vec<(i32, i64, i64)>> = (0..spans.iter().map(Vec::len).max().unwrap_or(0))
            .map(|k| {
                gaps.keys()
                    .zip(&spans)
                    .filter_map(|(p, spans)| spans.get(k).map(|(start, end)| (*p, *start, *end)))
                    .collect()
            })
            .collect();
        let client = kafka.reader(&[])?;
        let mut reader = start_reader(
            client,
            kafka.timeout(),
            self.topic,
            rounds,
            Some(gaps),
            self.source,
            self.store.id_key().await?,
        );
        let progress = self
            .output
            .progress(Some(reader.total.max(0) as u64), "offsets");
        let index: HashMap<i32, usize> = partitions
            .iter()
            .enumerate()
            .map(|(i, p)| (p.partition, i))
            .collect();
        // Messages without an id that nothing decides (see `id_less_by_offset`), per
        // partition: offsets that hold a message all the same.
        let mut undecided: HashMap<i32, i64> = HashMap::new();
        while let Some(chunk) = reader.chunks.recv().await {
            let ids: Vec<&str> = chunk
                .iter()
                .filter_map(|(_, event_id)| event_id.map(|(id, _)| id))
                .collect();
            let held = self.store.processed_ids(self.consumer, &ids).await?;
            for (message, event_id) in chunk.iter() {
                let p = &mut partitions[index[&message.partition]];
                match event_id {
                    Some((id, _)) if held.contains(id) => p.found_by_event_id += 1,
                    None if !self.id_less_by_offset => {
                        p.missing_event_id += 1;
                        *undecided.entry(message.partition).or_default() += 1;
                    }
                    _ => {
                        p.lost_count += 1;
                        if event_id.is_none() {
                            p.missing_event_id += 1;
                        }
                        if p.lost.len() < LOST_LISTED {
                            p.lost.push(LostEvent {
                                partition: message.partition,
                                offset: message.offset,
                                event_id: event_id.map(|(id, _)| id.to_string()),
                            });
                        }
                    }
                }
            }
            progress.inc(chunk.messages.len() as u64);
        }
        progress.finish_and_clear();
        reader.finish().await?;
        for p in partitions.iter_mut() {
            if let Some(count) = candidates.get(&p.partition) {
                p.empty_offsets = count
                    - p.lost_count
                    - p.found_by_event_id
                    - undecided.get(&p.partition).copied().unwrap_or(0);
            }
        }
        self.output.debug(format!(
            "read {} offsets without an inbox row in {:.2}s",
            candidates.values().sum::<i64>(),
            started.elapsed().as_secs_f64()
        ));
        Ok(())
    }
}

#[derive(Default)]
struct ScannedPartition {
    pending: Vec<i64>,
    lost: Vec<LostEvent>,
    missing_event_id: i64,
    not_checked: i64,
    /// Offsets below the committed one of messages without an event id, ascending: decided
    /// by whether the inbox has a row at their coordinates (kept only when it can).
    without_id_below: Vec<i64>,
    /// The same at or after the committed offset: pending redelivery where the inbox has a
    /// row at their coordinates.
    without_id_after: Vec<i64>,
}

struct Scan {
    partitions: BTreeMap<i32, ScannedPartition>,
    duplicates: Vec<Duplicate>,
    messages: u64,
    /// Messages without an event id were decided by the inbox's rows at their offsets.
    without_id_by_offset: bool,
}

/// Messages as the reader hands them over: their event ids end to end in one string, so a
/// message costs no allocation of its own.
#[derive(Default)]
struct ScanChunk {
    messages: Vec<Scanned>,
    ids: String,
}

struct Scanned {
    partition: i32,
    offset: i64,
    /// The event id's hash and where it ends in the chunk's `ids` (it starts where the
    /// previous message's ended); `None` for a message without one.
    event_id: Option<(u128, usize)>,
}

impl ScanChunk {
    fn with_capacity(messages: usize) -> ScanChunk {
        ScanChunk {
            messages: Vec::with_capacity(messages),
            ids: String::with_capacity(messages * 16),
        }
    }

    /// `key` says which part of the id its inbox compares.
    fn add(&mut self, partition: i32, offset: i64, event_id: Option<&str>, key: IdKey) {
        let event_id = event_id.map(|id| {
            self.ids.push_str(id);
            (id_hash(key.of(id)), self.ids.len())
        });
        self.messages.push(Scanned {
            partition,
            offset,
            event_id,
        });
    }

    /// Each message with its event id and the id's hash.
    fn iter(&self) -> impl Iterator<Item = (&Scanned, Option<(&str, u128)>)> {
        let mut start = 0;
        self.messages.iter().map(move |message| {
            let event_id = message.event_id.map(|(key, end)| {
                let id = &self.ids[start..end];
                start = end;
                (id, key)
            });
            (message, event_id)
        })
    }
}

/// What the scan knows of one event id, under its hash: whether the inbox holds it, and
/// where the topic first had it (`partition` is [`NOT_SEEN`] until then). One map for both,
/// so a message costs one probe of it.
#[derive(Clone, Copy)]
struct IdState {
    offset: i64,
    partition: i32,
    in_inbox: bool,
}

const NOT_SEEN: i32 = -1;

/// An id the scan has just met, from either side.
const UNKNOWN_ID: IdState = IdState {
    offset: 0,
    partition: NOT_SEEN,
    in_inbox: false,
};

type IdMap = HashMap<u128, IdState, HashIsKey>;

/// The topic reader's thread and the channel its chunks come through.
struct Reader {
    thread: tokio::task::JoinHandle<anyhow::Result<()>>,
    chunks: tokio::sync::mpsc::Receiver<ScanChunk>,
    total: i64,
    /// How the inbox's key compares the ids.
    key: IdKey,
}

impl Reader {
    /// Waits for the reader's thread, whose error (if any) says why reading stopped.
    async fn finish(self) -> anyhow::Result<()> {
        self.thread
            .await
            .context("the topic reader stopped unexpectedly")?
    }
}

/// Starts reading on a thread of its own: each round's `(partition, start, end)` ranges
/// side by side, the rounds one after another, keeping only the offsets in `only`'s ranges
/// when it is given. Up to READ_AHEAD chunks wait in the channel, so reading overlaps
/// loading the inbox's ids, with memory still bounded.
fn start_reader(
    client: KafkaClient,
    idle_limit: std::time::Duration,
    topic: &str,
    rounds: Vec<Vec<(i32, i64, i64)>>,
    only: Option<BTreeMap<i32, Vec<(i64, i64)>>>,
    source: &EventIdSource,
    key: IdKey,
) -> Reader {
    let (sender, chunks) = tokio::sync::mpsc::channel::<ScanChunk>(READ_AHEAD);
    let total = match &only {
        Some(only) => only
            .values()
            .flatten()
            .map(|(start, end)| end - start)
            .sum(),
        None => rounds
            .iter()
            .flatten()
            .map(|(_, start, end)| end - start)
            .sum(),
    };
    let topic = topic.to_string();
    let source = source.clone();
    let thread = tokio::task::spawn_blocking(move || {
        // Where each partition's last kept message was: a message from before the current
        // round (still queued when the reader moved on) is never taken twice.
        let mut kept: HashMap<i32, i64> = HashMap::new();
        let mut read = Ok(());
        for round in &rounds {
            if sender.is_closed() {
                break;
            }
            read = read_range(
                &client,
                &topic,
                round,
                idle_limit,
                SCAN_CHUNK,
                &sender,
                || ScanChunk::with_capacity(SCAN_CHUNK),
                |chunk, message| {
                    let (partition, offset) = (message.partition(), message.offset());
                    if let Some(only) = &only {
                        let wanted = only.get(&partition).is_some_and(|g| in_gaps(g, offset));
                        let last = kept.entry(partition).or_insert(i64::MIN);
                        if !wanted || offset <= *last {
                            return;
                        }
                        *last = offset;
                    }
                    let event_id = source.extract(&topic, message);
                    chunk.add(partition, offset, event_id.as_deref(), key);
                },
            );
            if read.is_err() {
                break;
            }
        }
        // The last chunks are classified while the consumer closes.
        drop(sender);
        drop(client);
        read
    });
    Reader {
        thread,
        chunks,
        total,
        key,
    }
}

/// Inbox ids per batch sent to the classification.
const ID_BATCH: usize = 50_000;

/// Streams the consumer's event ids, as hashes in batches, to the classification. Dropping
/// `sender` at the end tells it the inbox is complete. With `keep`, returns the batches sent,
/// for the next topic.
async fn load_inbox_ids(
    store: &Store,
    consumer: &str,
    sender: tokio::sync::mpsc::UnboundedSender<Vec<u128>>,
    keep: bool,
    output: &Output,
) -> anyhow::Result<Vec<Vec<u128>>> {
    let started = Instant::now();
    // PostgreSQL: a connection of its own, reading the ids as arrays, on a task of its own
    // so that decoding and hashing them leaves the classification's thread alone.
    let fast = match store.backend {
        Backend::Postgres => pg_pipeline::connect_client(store.url.connect_url())
            .await
            .ok(),
        _ => None,
    };
    let key = store.id_key().await?;
    let (count, kept) = match fast {
        Some((client, connection)) => {
            let consumer = consumer.to_string();
            tokio::spawn(async move {
                let client = std::sync::Arc::new(client);
                let mut batches = IdBatches::new(sender, key, keep);
                let loaded =
                    pg_pipeline::for_each_event_id(&client, &consumer, |id| batches.add(id)).await;
                pg_pipeline::end_session(client, connection).await;
                loaded?;
                Ok::<_, anyhow::Error>(batches.finish())
            })
            .await
            .context("loading the inbox's ids stopped unexpectedly")??
        }
        None => {
            let mut batches = IdBatches::new(sender, key, keep);
            store
                .for_each_event_id(consumer, |id| batches.add(id))
                .await?;
            batches.finish()
        }
    };
    output.debug(format!(
        "loaded {count} inbox ids in {:.2}s",
        started.elapsed().as_secs_f64()
    ));
    Ok(kept)
}

/// Hashes ids into batches and sends each when full.
struct IdBatches {
    sender: tokio::sync::mpsc::UnboundedSender<Vec<u128>>,
    key: IdKey,
    batch: Vec<u128>,
    count: usize,
    /// The batches sent, when they are to be kept.
    kept: Option<Vec<Vec<u128>>>,
}

impl IdBatches {
    fn new(
        sender: tokio::sync::mpsc::UnboundedSender<Vec<u128>>,
        key: IdKey,
        keep: bool,
    ) -> IdBatches {
        IdBatches {
            sender,
            key,
            batch: Vec::with_capacity(ID_BATCH),
            count: 0,
            kept: keep.then(Vec::new),
        }
    }

    fn add(&mut self, id: &str) {
        self.batch.push(id_hash(self.key.of(id)));
        if self.batch.len() == ID_BATCH {
            self.send();
        }
    }

    fn send(&mut self) {
        self.count += self.batch.len();
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(ID_BATCH));
        if let Some(kept) = &mut self.kept {
            kept.push(batch.clone());
        }
        // A closed receiver means the scan stopped; its own error tells why.
        let _ = self.sender.send(batch);
    }

    /// Sends the last batch; dropping the sender then tells the scan all ids are in. Returns
    /// how many ids were sent, and the batches if kept.
    fn finish(mut self) -> (usize, Vec<Vec<u128>>) {
        self.send();
        (self.count, self.kept.unwrap_or_default())
    }
}

/// Where the classification learns which event ids the inbox holds.
enum InboxIds<'s> {
    /// Hashes streaming in from [`load_inbox_ids`] (about this many); the channel closes
    /// when all are in.
    Streaming(tokio::sync::mpsc::UnboundedReceiver<Vec<u128>>, i64),
    /// Too many to hold: the database is asked about each chunk of messages.
    AskPerChunk(&'s Store),
}

/// Messages read while the inbox's ids were still loading and not (yet) found among them;
/// decided once the load completes. Ids are kept (in one buffer) only where the message
/// would be lost, the one finding that names them.
#[derive(Default)]
struct Undecided {
    messages: Vec<UndecidedMessage>,
    ids: String,
}

struct UndecidedMessage {
    key: u128,
    offset: i64,
    partition: i32,
    /// End of the message's id in `ids` (it starts where the previous one ended); equal to
    /// the previous end when the id is not kept.
    id_end: usize,
}

/// Messages held undecided at most, before reading waits for the load (a few tens of MB).
const UNDECIDED_LIMIT: usize = 500_000;

/// Sorts every message the reader delivers into lost, pending redelivery and duplicates,
/// starting from `findings` (the topic's partitions, see [`Findings::new`]).
async fn classify(
    mut reader: Reader,
    mut inbox: InboxIds<'_>,
    consumer: &str,
    topic: &str,
    mut findings: Findings,
    output: &Output,
) -> anyhow::Result<Scan> {
    let started = Instant::now();
    let progress = output.progress(Some(reader.total.max(0) as u64), "messages");
    // Streaming, the map holds the inbox's ids as they arrive as well as where the topic
    // first had each id; asking per chunk, only the latter.
    // Sized up front when the ids stream in: growing it a million entries at a time is
    // rehashing and page faults on the classification's thread.
    let expected = match &inbox {
        InboxIds::Streaming(_, rows) => (*rows).max(reader.total).min(load_limit()),
        InboxIds::AskPerChunk(_) => 0,
    };
    let mut ids = IdMap::with_capacity_and_hasher(expected.max(0) as usize, HashIsKey);
    let mut scan = Scan {
        partitions: BTreeMap::new(),
        duplicates: Vec::new(),
        messages: 0,
        without_id_by_offset: false,
    };
    let mut duplicates: BTreeMap<String, Vec<(i32, i64)>> = BTreeMap::new();
    let mut undecided = Undecided::default();
    let mut loading = matches!(inbox, InboxIds::Streaming(..));
    let mut reading = true;
    while loading || reading {
        let next = tokio::select! {
            // The inbox's ids first: the sooner they are in, the fewer messages wait.
            biased;
            batch = next_ids(&mut inbox), if loading => Next::Ids(batch),
            chunk = reader.chunks.recv(), if reading && undecided.messages.len() < UNDECIDED_LIMIT => {
                Next::Chunk(chunk)
            }
        };
        let chunk = match next {
            Next::Ids(Some(hashes)) => {
                for key in hashes {
                    ids.entry(key).or_insert(UNKNOWN_ID).in_inbox = true;
                }
                continue;
            }
            Next::Ids(None) => {
                loading = false;
                decide(&mut undecided, &ids, &mut findings);
                continue;
            }
            Next::Chunk(None) => {
                reading = false;
                continue;
            }
            Next::Chunk(Some(chunk)) => chunk,
        };
        let processed = match &inbox {
            InboxIds::AskPerChunk(store) => {
                let ids: Vec<&str> = chunk
                    .iter()
                    .filter_map(|(_, event_id)| event_id.map(|(id, _)| id))
                    .collect();
                Some(store.processed_ids(consumer, &ids).await?)
            }
            InboxIds::Streaming(..) => None,
        };
        for (message, event_id) in chunk.iter() {
            scan.messages += 1;
            let slot = findings.slot(message.partition);
            let Some((event_id, key)) = event_id else {
                slot.found.missing_event_id += 1;
                if slot.keep_without_id && message.offset < slot.committed {
                    slot.found.without_id_below.push(message.offset);
                } else if slot.keep_without_id {
                    slot.found.without_id_after.push(message.offset);
                }
                continue;
            };
            let state = ids.entry(key).or_insert(UNKNOWN_ID);
            if state.partition == NOT_SEEN {
                state.partition = message.partition;
                state.offset = message.offset;
            } else {
                // Under the key's spelling: MariaDB's `x` and `x ` are one event.
                duplicates
                    .entry(reader.key.of(event_id).to_string())
                    .or_insert_with(|| vec![(state.partition, state.offset)])
                    .push((message.partition, message.offset));
            }
            let in_inbox = match &processed {
                Some(processed) => processed.contains(event_id),
                None => state.in_inbox,
            };
            if !in_inbox && loading {
                // Its id may still arrive.
                if message.offset < slot.committed {
                    undecided.ids.push_str(event_id);
                }
                undecided.messages.push(UndecidedMessage {
                    key,
                    offset: message.offset,
                    partition: message.partition,
                    id_end: undecided.ids.len(),
                });
            } else {
                slot.record(message.partition, message.offset, in_inbox, event_id);
            }
        }
        progress.inc(chunk.messages.len() as u64);
    }
    progress.finish_and_clear();
    reader.finish().await?;
    scan.partitions = findings.into_map();
    // Messages decided while the ids loaded and those decided after are in two runs.
    for partition in scan.partitions.values_mut() {
        partition.pending.sort_unstable();
        partition.lost.sort_by_key(|lost| lost.offset);
    }
    output.debug(format!(
        "classified {} messages in {:.2}s",
        scan.messages,
        started.elapsed().as_secs_f64()
    ));
    scan.duplicates = duplicates
        .into_iter()
        .map(|(event_id, mut positions)| {
            // Read order interleaves the partitions, which the reader reads side by side.
            positions.sort_unstable();
            Duplicate {
                topic: topic.to_string(),
                event_id,
                positions,
            }
        })
        .collect();
    Ok(scan)
}

/// What the scan found per partition, beside the partition's committed offset, indexed by
/// partition id (Kafka's count from 0): a message costs an index instead of two lookups.
struct Findings {
    slots: Vec<Slot>,
}

#[derive(Default)]
struct Slot {
    /// The group's committed offset (the log start when it has none).
    committed: i64,
    /// Below this offset a message the inbox lacks may have had its row pruned.
    checked_from: i64,
    found: ScannedPartition,
    /// A partition of the topic, or one a message came from; the others are gaps.
    known: bool,
    /// Whether offsets of messages without an event id are kept (see
    /// [`ScannedPartition::without_id_below`]).
    keep_without_id: bool,
}

impl Slot {
    /// One message's finding: lost below the committed offset when the inbox lacks it,
    /// pending redelivery at or after it when the inbox has it.
    fn record(&mut self, partition: i32, offset: i64, in_inbox: bool, event_id: &str) {
        let below = offset < self.committed;
        if below && !in_inbox && offset < self.checked_from {
            self.found.not_checked += 1;
        } else if below && !in_inbox {
            self.found.lost.push(LostEvent {
                partition,
                offset,
                event_id: Some(event_id.to_string()),
            });
        } else if !below && in_inbox {
            self.found.pending.push(offset);
        }
    }
}

impl Findings {
    fn new(
        offsets: &[PartitionOffsets],
        checked_from: &BTreeMap<i32, i64>,
        keep_without_id: bool,
    ) -> Findings {
        let mut findings = Findings { slots: Vec::new() };
        for p in offsets {
            let slot = findings.slot(p.partition);
            slot.keep_without_id = keep_without_id;
            slot.committed = p.committed.unwrap_or(p.log_start);
            slot.checked_from = checked_from.get(&p.partition).copied().unwrap_or(i64::MIN);
        }
        findings
    }

    fn slot(&mut self, partition: i32) -> &mut Slot {
        // Partition ids come from the topic's metadata: small, dense and never negative.
        let index = partition.max(0) as usize;
        if index >= self.slots.len() {
            self.slots.resize_with(index + 1, Slot::default);
        }
        let slot = &mut self.slots[index];
        slot.known = true;
        slot
    }

    fn into_map(self) -> BTreeMap<i32, ScannedPartition> {
        self.slots
            .into_iter()
            .enumerate()
            .filter(|(_, slot)| slot.known)
            .map(|(partition, slot)| (partition as i32, slot.found))
            .collect()
    }
}

enum Next {
    Ids(Option<Vec<u128>>),
    Chunk(Option<ScanChunk>),
}

async fn next_ids(inbox: &mut InboxIds<'_>) -> Option<Vec<u128>> {
    match inbox {
        InboxIds::Streaming(receiver, _) => receiver.recv().await,
        InboxIds::AskPerChunk(_) => None,
    }
}

/// Decides the messages held while the inbox's ids loaded, now that all are in.
fn decide(undecided: &mut Undecided, ids: &IdMap, findings: &mut Findings) {
    let mut id_start = 0;
    for message in undecided.messages.drain(..) {
        let in_inbox = ids.get(&message.key).is_some_and(|state| state.in_inbox);
        // The id was kept where the message would be lost, the one case that uses it.
        let event_id = &undecided.ids[id_start..message.id_end];
        findings.slot(message.partition).record(
            message.partition,
            message.offset,
            in_inbox,
            event_id,
        );
        id_start = message.id_end;
    }
    undecided.ids = String::new();
}

/// How many event ids a scan would load (at most), when they are few enough to (see
/// [`LOAD_INBOX_UP_TO`]). On PostgreSQL the planner's estimate of the whole table answers
/// when it is well under the limit, which saves counting a million rows; otherwise they are
/// counted.
async fn ids_to_load(store: &Store, consumer: &str) -> anyhow::Result<Option<i64>> {
    let limit = load_limit();
    if let Some(HeapExtent {
        pages,
        rows_per_page: Some(rows_per_page),
        ..
    }) = store.heap_extent().await?
    {
        let estimate = rows_per_page * pages as f64;
        if 2.0 * estimate < limit as f64 {
            return Ok(Some(estimate as i64));
        }
    }
    let rows = store.consumer_rows(consumer).await?;
    Ok((rows <= limit).then_some(rows))
}

/// The keys of the scan's maps are already 128-bit hashes: their low bits are the hash.
#[derive(Clone, Copy, Default)]
struct HashIsKey;

impl std::hash::BuildHasher for HashIsKey {
    type Hasher = KeyBits;
    fn build_hasher(&self) -> KeyBits {
        KeyBits(0)
    }
}

#[derive(Default)]
struct KeyBits(u64);

impl Hasher for KeyBits {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u128 keys reach here (via write_u128); fold anything else in, in case.
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }
    fn write_u128(&mut self, value: u128) {
        self.0 = value as u64;
    }
}

fn print(c: &Comparison, show: usize, output: &Output) -> anyhow::Result<()> {
    if output.format == Format::Json {
        return output.print_json(c);
    }
    for n in 0..c.topics.len() {
        if n > 0 {
            output.print("");
        }
        print_topic(c, n, show, output);
    }
    let verdict = if c.lost_total > 0 || c.orphans_total > 0 {
        format!(
            "FINDINGS: {} lost, {} orphaned",
            c.lost_total, c.orphans_total
        )
    } else {
        "OK: nothing lost".to_string()
    };
    let duplicates = match &c.duplicates {
        Some(duplicates) => format!("{} duplicate event id(s)", duplicates.len()),
        None => "duplicate event ids not looked for (--scan looks)".to_string(),
    };
    output.print(format!(
        "{verdict}; {} pending redelivery; {duplicates}",
        c.pending_total
    ));
    Ok(())
}

/// The table output's section for the `n`th topic: its partitions and what was found in
/// each.
fn print_topic(c: &Comparison, n: usize, show: usize, output: &Output) {
    let topic = c.topics[n].as_str();
    // The first `show` items, and how many of `total` are not shown (the list may hold
    // only the first of very many).
    let limited_of = |items: Vec<String>, total: usize| -> String {
        let mut shown: Vec<String> = items.into_iter().take(show).collect();
        if total > shown.len() {
            shown.push(format!("… and {} more", total - shown.len()));
        }
        shown.join(", ")
    };
    let limited = |items: Vec<String>| {
        let total = items.len();
        limited_of(items, total)
    };
    let partitions: Vec<&PartitionComparison> =
        c.partitions.iter().filter(|p| p.topic == topic).collect();
    let duplicates: Vec<&Duplicate> = c
        .duplicates
        .iter()
        .flatten()
        .filter(|d| d.topic == topic)
        .collect();
    let scanned_note = if c.scan {
        format!(", {} messages scanned", c.scanned_per_topic[n])
    } else {
        String::new()
    };
    output.print(format!(
        "Group '{}' ({}) against inbox consumer '{}' on topic '{topic}'{scanned_note}",
        c.group, c.group_state, c.consumer,
    ));
    let mut t = table(
        &[
            "PARTITION",
            "COMMITTED",
            "LOG-START",
            "LOG-END",
            "INBOX ROWS",
            "MAX INBOX OFFSET",
            "PENDING",
            "LOST",
            "ORPHANS",
        ],
        &[0, 1, 2, 3, 4, 5, 6, 7, 8],
    );
    for p in &partitions {
        t.add_row(vec![
            p.partition.to_string(),
            or_dash(p.committed),
            p.log_start.to_string(),
            p.log_end.to_string(),
            p.inbox_rows.to_string(),
            or_dash(p.max_inbox_offset),
            p.pending_redelivery.len().to_string(),
            p.lost_count.to_string(),
            p.orphans.len().to_string(),
        ]);
    }
    output.print(t.to_string());
    for p in &partitions {
        if !p.lost.is_empty() || p.lost_count > 0 {
            let items = p
                .lost
                .iter()
                .map(|l| match &l.event_id {
                    Some(id) => format!("{} ({})", l.offset, crate::output::printable(id)),
                    None => format!("{} (no event id)", l.offset),
                })
                .collect();
            output.print(format!(
                "Lost in partition {} (committed, never processed): {}",
                p.partition,
                limited_of(items, p.lost_count.max(0) as usize)
            ));
        }
        if p.not_checked > 0 {
            output.print(format!(
                "Not checked in partition {}: {} {} below {}, from before the last prune{}: their rows may have been deleted",
                p.partition,
                p.not_checked,
                // The scan decides by event id, the offset mode by the rows' offsets.
                if c.scan {
                    "message(s) whose event the inbox lacks"
                } else {
                    "offset(s) without an inbox row"
                },
                // Only offsets below the committed one can be lost, whatever the prune left.
                or_dash(match (p.checked_from, p.committed) {
                    (Some(from), Some(committed)) => Some(from.min(committed)),
                    (from, _) => from,
                }),
                c.pruned_before
                    .map(|at| format!(" (of rows processed before {})", crate::time::shown_utc(at)))
                    .unwrap_or_default()
            ));
        }
        if p.empty_offsets > 0 || p.found_by_event_id > 0 {
            let mut reasons = Vec::new();
            if p.empty_offsets > 0 {
                reasons.push(format!(
                    "{} hold no message (transaction markers, aborted or compacted records)",
                    p.empty_offsets
                ));
            }
            if p.found_by_event_id > 0 {
                reasons.push(format!(
                    "{} hold events the inbox has under another offset, or without one",
                    p.found_by_event_id
                ));
            }
            output.print(format!(
                "Not lost in partition {}, offsets without an inbox row: {}",
                p.partition,
                reasons.join("; ")
            ));
        }
        if !p.pending_redelivery.is_empty() {
            output.print(format!(
                "Pending redelivery in partition {} (processed, not committed): offsets {}",
                p.partition,
                limited(p.pending_redelivery.iter().map(i64::to_string).collect())
            ));
        }
        if !p.orphans.is_empty() && !p.in_topic {
            output.print(format!(
                "Orphans in partition {} (the topic has no such partition): offsets {}",
                p.partition,
                limited(p.orphans.iter().map(i64::to_string).collect())
            ));
        } else if !p.orphans.is_empty() {
            output.print(format!(
                "Orphans in partition {} (inbox rows at or past the log end {}): offsets {}",
                p.partition,
                p.log_end,
                limited(p.orphans.iter().map(i64::to_string).collect())
            ));
        }
        if p.missing_event_id > 0 {
            output.print(format!(
                "{} message(s) in partition {} carry no event id",
                p.missing_event_id, p.partition
            ));
        }
    }
    if !duplicates.is_empty() {
        let items = duplicates
            .iter()
            .map(|d| {
                let at: Vec<String> = d
                    .positions
                    .iter()
                    .map(|(p, o)| format!("{p}:{o}"))
                    .collect();
                format!(
                    "{} at {}",
                    crate::output::printable(&d.event_id),
                    at.join(" ")
                )
            })
            .collect();
        output.print(format!(
            "Duplicate deliveries ({}): {}",
            duplicates.len(),
            limited(items)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_lists_name_the_first_ten() {
        let topics: Vec<String> = (1..=12).map(|n| format!("t{n}")).collect();
        assert_eq!(quoted_list(&topics[..1]), "topic 't1'");
        assert_eq!(quoted_list(&topics[..2]), "topics 't1', 't2'");
        assert_eq!(
            quoted_list(&topics),
            "topics 't1', 't2', 't3', 't4', 't5', 't6', 't7', 't8', 't9', 't10', and 2 more"
        );
    }

    #[test]
    fn missing_ranges_are_the_gaps() {
        assert_eq!(missing_ranges(0, 6, &[0, 2, 3, 5]), vec![(1, 2), (4, 5)]);
        assert_eq!(missing_ranges(3, 6, &[]), vec![(3, 6)]);
        assert_eq!(missing_ranges(3, 6, &[1, 3, 4, 5, 9]), vec![]);
        assert_eq!(
            missing_ranges(0, 10, &[1, 5]),
            vec![(0, 1), (2, 5), (6, 10)]
        );
    }

    /// Two rows at one offset account for that offset only: the gap beside them stays.
    #[test]
    fn rows_sharing_an_offset_count_once() {
        let present = [0, 1, 2, 4, 4, 5, 6, 7, 8, 9];
        assert_eq!(missing_ranges(0, 10, &present), vec![(3, 4)]);
        assert_eq!(
            missing_ranges(0, 10, &[2, 2, 2, 7, 7]),
            vec![(0, 2), (3, 7), (8, 10)]
        );
    }

    #[test]
    fn near_gaps_are_read_as_one_span() {
        let gaps = [(0, 1), (5, 6), (20, 30), (100, 101)];
        assert_eq!(read_spans(&gaps, 10), vec![(0, 6), (20, 30), (100, 101)]);
        assert_eq!(read_spans(&gaps, 1), gaps.to_vec());
        assert_eq!(read_spans(&gaps, 1000), vec![(0, 101)]);
        assert_eq!(read_spans(&[], 10), vec![]);
    }

    #[test]
    fn gaps_split_at_the_first_offset_checked() {
        let gaps = vec![(0, 3), (5, 8), (10, 12)];
        assert_eq!(split_gaps(gaps.clone(), i64::MIN), (0, gaps.clone()));
        assert_eq!(split_gaps(gaps.clone(), 6), (4, vec![(6, 8), (10, 12)]));
        assert_eq!(split_gaps(gaps.clone(), 5), (3, vec![(5, 8), (10, 12)]));
        assert_eq!(split_gaps(gaps, 100), (8, vec![]));
    }

    #[test]
    fn a_prune_is_checked_from_the_earlier_of_its_two_bounds() {
        let p = PartitionOffsets {
            topic: "orders".into(),
            partition: 0,
            committed: Some(50),
            log_start: 10,
            log_end: 100,
            lag: Some(50),
        };
        // The first message late enough, or the lowest row left, whichever comes first.
        assert_eq!(checked_from_offset(&p, Some(40), Some(30)), 30);
        assert_eq!(checked_from_offset(&p, Some(20), Some(30)), 20);
        // No message that late: the whole log may have been pruned, unless rows remain.
        assert_eq!(checked_from_offset(&p, None, None), 100);
        assert_eq!(checked_from_offset(&p, None, Some(60)), 60);
        // Never below the log start.
        assert_eq!(checked_from_offset(&p, Some(0), Some(5)), 10);
    }

    #[test]
    fn offsets_are_found_in_their_gaps() {
        let gaps = [(3, 5), (9, 10)];
        let found: Vec<i64> = (0..12).filter(|o| in_gaps(&gaps, *o)).collect();
        assert_eq!(found, vec![3, 4, 9]);
        assert!(!in_gaps(&[], 0));
    }

    #[test]
    fn hashes_tell_ids_apart() {
        assert_eq!(id_hash("evt-1"), id_hash("evt-1"));
        assert_ne!(id_hash("evt-1"), id_hash("evt-2"));
    }

    #[test]
    fn a_chunk_keeps_its_ids_end_to_end() {
        let mut chunk = ScanChunk::with_capacity(5);
        let padded = IdKey {
            ignores_trailing_spaces: true,
        };
        chunk.add(0, 10, Some("evt-1"), IdKey::EXACT);
        chunk.add(0, 11, None, IdKey::EXACT);
        chunk.add(1, 12, Some("evt-22 ü"), IdKey::EXACT);
        chunk.add(1, 13, Some("x "), IdKey::EXACT);
        // MariaDB's key takes `x ` for `x`: so does the hash, and the id stays as it was.
        chunk.add(1, 14, Some("x "), padded);
        type Seen<'a> = (i32, i64, Option<(&'a str, u128)>);
        let seen: Vec<Seen> = chunk
            .iter()
            .map(|(m, id)| (m.partition, m.offset, id))
            .collect();
        assert_eq!(
            seen,
            vec![
                (0, 10, Some(("evt-1", id_hash("evt-1")))),
                (0, 11, None),
                (1, 12, Some(("evt-22 ü", id_hash("evt-22 ü")))),
                (1, 13, Some(("x ", id_hash("x ")))),
                (1, 14, Some(("x ", id_hash("x")))),
            ]
        );
    }

    /// Partition 0, committed at 5: e3 is lost (below, not processed), e6 and e7 are pending
    /// (processed, at or after), e3 comes again at offset 9 (a duplicate, not lost there), and
    /// offset 8 has no event id.
    async fn classify_scenario(ids_first: bool) -> Scan {
        let offsets = [PartitionOffsets {
            topic: "orders".into(),
            partition: 0,
            committed: Some(5),
            log_start: 0,
            log_end: 10,
            lag: Some(5),
        }];
        let inbox: Vec<u128> = ["e0", "e1", "e2", "e4", "e6", "e7", "e-gone"]
            .iter()
            .map(|id| id_hash(id))
            .collect();
        // One slot: the second chunk is only taken once the first is classified.
        let (chunk_sender, chunks) = tokio::sync::mpsc::channel(1);
        let (id_sender, id_receiver) = tokio::sync::mpsc::unbounded_channel();
        if ids_first {
            id_sender.send(inbox.clone()).unwrap();
        }
        let reader = Reader {
            thread: tokio::spawn(async { Ok(()) }),
            chunks,
            total: 10,
            key: IdKey::EXACT,
        };
        let output = Output {
            format: Format::Json,
            verbose: 0,
            quiet: true,
        };
        let feeding = async move {
            for part in [0..5, 5..10] {
                let mut chunk = ScanChunk::with_capacity(5);
                for offset in part {
                    let id = match offset {
                        8 => None,
                        9 => Some("e3".to_string()),
                        n => Some(format!("e{n}")),
                    };
                    chunk.add(0, offset, id.as_deref(), IdKey::EXACT);
                }
                chunk_sender.send(chunk).await.unwrap();
            }
            // Every message is taken (and classified) before the ids arrive.
            let _ = chunk_sender.reserve().await.unwrap();
            drop(chunk_sender);
            if !ids_first {
                id_sender.send(inbox).unwrap();
            }
            drop(id_sender);
        };
        let no_prune = BTreeMap::new();
        let (scan, ()) = tokio::join!(
            classify(
                reader,
                InboxIds::Streaming(id_receiver, 7),
                "billing",
                "orders",
                Findings::new(&offsets, &no_prune, false),
                &output
            ),
            feeding
        );
        scan.unwrap()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn messages_read_before_the_ids_are_decided_as_those_read_after() {
        for ids_first in [true, false] {
            let scan = classify_scenario(ids_first).await;
            assert_eq!(scan.messages, 10, "ids first: {ids_first}");
            let partition = &scan.partitions[&0];
            let lost: Vec<(i64, Option<&str>)> = partition
                .lost
                .iter()
                .map(|l| (l.offset, l.event_id.as_deref()))
                .collect();
            assert_eq!(lost, vec![(3, Some("e3"))], "ids first: {ids_first}");
            assert_eq!(partition.pending, vec![6, 7], "ids first: {ids_first}");
            assert_eq!(partition.missing_event_id, 1);
            assert_eq!(scan.duplicates.len(), 1);
            assert_eq!(scan.duplicates[0].event_id, "e3");
            assert_eq!(scan.duplicates[0].positions, vec![(0, 3), (0, 9)]);
        }
    }
}
