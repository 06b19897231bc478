//! `compare`: the group's committed offsets against the inbox, per partition.
//!
//! - pending redelivery: processed (in the inbox) at or after the committed offset; the next
//!   restart redelivers them and the inbox absorbs them;
//! - lost: below the committed offset and not in the inbox (committed, never processed);
//! - duplicate deliveries (with `--scan`): one event id at several offsets;
//! - orphans: inbox rows at or past the log end (wrong cluster, recreated topic).
//!
//! Without `--scan` the comparison is by offset: an offset below the committed one with no
//! inbox row counts as lost, so a producer duplicate (absorbed by the inbox under its first
//! offset) also counts; `--scan` reads the topic and decides by event id.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hasher;
use std::time::Instant;

use anyhow::{bail, Context};
use rdkafka::Message;
use serde::Serialize;

use crate::cli::{CompareArgs, Format};
use crate::commands::offsets::{group_offsets, PartitionOffsets};
use crate::event_id::{id_hash, EventIdSource};
use crate::exit::ExitStatus;
use crate::kafka::{read_range, Kafka};
use crate::output::{or_dash, table, Output};
use crate::store::pg_pipeline;
use crate::store::{Backend, CreateMode, HeapExtent, Store, INBOX_TABLE};

/// Messages read per inbox lookup during a scan.
const SCAN_CHUNK: usize = 1000;
/// Chunks the topic reader may run ahead of the classification (256k messages).
const READ_AHEAD: usize = 256;
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
    /// `None` without `--scan`: only the offset is known.
    pub event_id: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PartitionComparison {
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
    /// Messages in which no event id was found (with `--scan`).
    pub missing_event_id: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Duplicate {
    pub event_id: String,
    /// (partition, offset) of every delivery, in the order read.
    pub positions: Vec<(i32, i64)>,
}

#[derive(Debug, Serialize)]
pub struct Comparison {
    pub group: String,
    pub group_state: String,
    pub consumer: String,
    pub topic: String,
    pub scan: bool,
    pub partitions: Vec<PartitionComparison>,
    pub duplicates: Vec<Duplicate>,
    pub lost_total: i64,
    pub pending_total: usize,
    pub orphans_total: usize,
    pub messages_scanned: u64,
}

pub async fn run(args: CompareArgs, output: Output) -> anyhow::Result<ExitStatus> {
    let kafka = Kafka::new(&args.kafka);
    let consumer = args.consumer.clone().unwrap_or_else(|| args.group.clone());
    // The group's offsets come from Kafka and the inbox from the database: both at once.
    let group = {
        let kafka = Kafka::new(&args.kafka);
        let (group, topic) = (args.group.clone(), args.topic.clone());
        tokio::task::spawn_blocking(move || group_offsets(&kafka, &group, &[topic]))
    };
    let store = super::connect(&args.database, CreateMode::MustExist, &output).await?;
    if !store.table_exists(INBOX_TABLE).await? {
        bail!(
            "table {INBOX_TABLE} does not exist in {}; create it with `inboxctl migrate run`",
            store.url.endpoint
        );
    }
    let has_coordinates = store.column_exists(INBOX_TABLE, "topic").await?;
    if !has_coordinates && !args.scan {
        bail!(
            "{INBOX_TABLE} has no topic/partition/offset columns: compare by event id with --scan"
        );
    }
    let started = Instant::now();
    let loading = async {
        if args.scan {
            load_inbox_ids(&store, &consumer, &output).await
        } else {
            Ok(None)
        }
    };
    // The topic's reader starts as soon as the offsets are known, while the ids still load.
    let source = args.event_id_from.clone().unwrap_or(EventIdSource::Default);
    let reading = async {
        let (state, offsets) = group
            .await
            .context("reading the group's offsets stopped unexpectedly")??;
        let reader = if args.scan {
            Some(start_reader(&kafka, &args.topic, &offsets, &source)?)
        } else {
            None
        };
        Ok::<_, anyhow::Error>((state, offsets, reader))
    };
    let (inbox_ids, (state, offsets, reader)) = tokio::try_join!(loading, reading)?;
    // The inbox's per-partition figures and the topic scan run side by side.
    let by_offsets = async {
        let mut partitions = Vec::new();
        for p in &offsets {
            partitions.push(
                compare_by_offsets(
                    &store,
                    &consumer,
                    &args.topic,
                    p,
                    has_coordinates,
                    args.scan,
                )
                .await?,
            );
        }
        Ok::<_, anyhow::Error>(partitions)
    };
    let scanning = async {
        match reader {
            Some(reader) => classify(reader, inbox_ids, &store, &consumer, &offsets, &output)
                .await
                .map(Some),
            None => Ok(None),
        }
    };
    let (mut partitions, scan) = tokio::try_join!(by_offsets, scanning)?;
    let mut duplicates = Vec::new();
    let mut messages_scanned = 0;
    if let Some(scan) = scan {
        messages_scanned = scan.messages;
        duplicates = scan.duplicates;
        for partition in &mut partitions {
            let found = scan.partitions.get(&partition.partition);
            partition.pending_redelivery = found.map(|f| f.pending.clone()).unwrap_or_default();
            partition.lost = found.map(|f| f.lost.clone()).unwrap_or_default();
            partition.lost_count = partition.lost.len() as i64;
            partition.missing_event_id = found.map_or(0, |f| f.missing_event_id);
        }
    }
    store.close().await;
    output.debug(format!(
        "compared in {:.2}s",
        started.elapsed().as_secs_f64()
    ));

    let comparison = Comparison {
        group: args.group.clone(),
        group_state: state.state.clone(),
        consumer,
        topic: args.topic.clone(),
        scan: args.scan,
        lost_total: partitions.iter().map(|p| p.lost_count).sum(),
        pending_total: partitions.iter().map(|p| p.pending_redelivery.len()).sum(),
        orphans_total: partitions.iter().map(|p| p.orphans.len()).sum(),
        partitions,
        duplicates,
        messages_scanned,
    };
    print(&comparison, args.show, &output)?;
    if comparison.lost_total > 0 || comparison.orphans_total > 0 {
        Ok(ExitStatus::Findings)
    } else {
        Ok(ExitStatus::Success)
    }
}

/// What the inbox's coordinates say about one partition.
async fn compare_by_offsets(
    store: &Store,
    consumer: &str,
    topic: &str,
    p: &PartitionOffsets,
    has_coordinates: bool,
    scan: bool,
) -> anyhow::Result<PartitionComparison> {
    let mut comparison = PartitionComparison {
        partition: p.partition,
        committed: p.committed,
        log_start: p.log_start,
        log_end: p.log_end,
        inbox_rows: 0,
        max_inbox_offset: None,
        pending_redelivery: Vec::new(),
        lost_count: 0,
        lost: Vec::new(),
        orphans: Vec::new(),
        missing_event_id: 0,
    };
    if !has_coordinates {
        return Ok(comparison);
    }
    let (rows, max) = store
        .offset_range_summary(consumer, topic, p.partition, 0, None)
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
            let (accounted, _) = store
                .offset_range_summary(consumer, topic, p.partition, p.log_start, Some(committed))
                .await?;
            comparison.lost_count = (committed - p.log_start - accounted).max(0);
            if comparison.lost_count > 0 {
                let present = store
                    .offsets_in_range(consumer, topic, p.partition, p.log_start, Some(committed))
                    .await?;
                comparison.lost = missing_offsets(p.log_start, committed, &present, 10_000)
                    .into_iter()
                    .map(|offset| LostEvent {
                        partition: p.partition,
                        offset,
                        event_id: None,
                    })
                    .collect();
            }
        }
    }
    Ok(comparison)
}

/// Offsets in `[from, to)` not in `present` (sorted), at most `limit` of them.
pub fn missing_offsets(from: i64, to: i64, present: &[i64], limit: usize) -> Vec<i64> {
    let mut missing = Vec::new();
    let mut next = from;
    for &offset in present.iter().filter(|o| **o >= from && **o < to) {
        while next < offset && missing.len() < limit {
            missing.push(next);
            next += 1;
        }
        next = next.max(offset + 1);
    }
    while next < to && missing.len() < limit {
        missing.push(next);
        next += 1;
    }
    missing
}

#[derive(Default)]
struct ScannedPartition {
    pending: Vec<i64>,
    lost: Vec<LostEvent>,
    missing_event_id: i64,
}

struct Scan {
    partitions: BTreeMap<i32, ScannedPartition>,
    duplicates: Vec<Duplicate>,
    messages: u64,
}

/// One message as the reader hands it over.
struct Scanned {
    partition: i32,
    offset: i64,
    /// The event id and its hash, taken on the reader's thread.
    event_id: Option<(String, u128)>,
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

type IdMap = HashMap<u128, IdState, HashIsKey>;

/// The topic reader's thread and the channel its chunks come through.
struct Reader {
    thread: tokio::task::JoinHandle<anyhow::Result<()>>,
    chunks: tokio::sync::mpsc::Receiver<Vec<Scanned>>,
    total: i64,
}

/// Starts reading every partition from log start to log end on a thread of its own. Up to
/// READ_AHEAD chunks wait in the channel, so reading overlaps loading the inbox's ids, with
/// memory still bounded.
fn start_reader(
    kafka: &Kafka,
    topic: &str,
    offsets: &[PartitionOffsets],
    source: &EventIdSource,
) -> anyhow::Result<Reader> {
    let (sender, chunks) = tokio::sync::mpsc::channel::<Vec<Scanned>>(READ_AHEAD);
    let client = kafka.reader(&[])?;
    let ranges: Vec<(i32, i64, i64)> = offsets
        .iter()
        .map(|p| (p.partition, p.log_start, p.log_end))
        .collect();
    let topic = topic.to_string();
    let source = source.clone();
    let idle_limit = kafka.timeout();
    let thread = tokio::task::spawn_blocking(move || {
        read_range(
            &client,
            &topic,
            &ranges,
            idle_limit,
            SCAN_CHUNK,
            &sender,
            |message| Scanned {
                partition: message.partition(),
                offset: message.offset(),
                event_id: source.extract(message).map(|id| {
                    let key = id_hash(&id);
                    (id, key)
                }),
            },
        )
    });
    Ok(Reader {
        thread,
        chunks,
        total: offsets.iter().map(|p| p.log_end - p.log_start).sum(),
    })
}

/// The consumer's event ids as a map of hashes, or `None` when there are too many to hold
/// (the scan then asks the database about every chunk).
async fn load_inbox_ids(
    store: &Store,
    consumer: &str,
    output: &Output,
) -> anyhow::Result<Option<IdMap>> {
    let started = Instant::now();
    if !fits_in_memory(store, consumer).await? {
        return Ok(None);
    }
    let mut ids = IdMap::with_hasher(HashIsKey);
    let mut add = |id: &str| {
        ids.insert(
            id_hash(id),
            IdState {
                offset: 0,
                partition: NOT_SEEN,
                in_inbox: true,
            },
        );
    };
    // PostgreSQL: a connection of its own, reading the ids as arrays.
    let fast = match store.backend {
        Backend::Postgres => pg_pipeline::connect_client(store.url.connect_url())
            .await
            .ok(),
        _ => None,
    };
    match fast {
        Some(client) => {
            pg_pipeline::for_each_event_id(&std::sync::Arc::new(client), consumer, &mut add).await?
        }
        None => store.for_each_event_id(consumer, &mut add).await?,
    }
    output.debug(format!(
        "loaded {} inbox ids in {:.2}s",
        ids.len(),
        started.elapsed().as_secs_f64()
    ));
    Ok(Some(ids))
}

/// Sorts every message the reader delivers into lost, pending redelivery and duplicates.
async fn classify(
    mut reader: Reader,
    inbox_ids: Option<IdMap>,
    store: &Store,
    consumer: &str,
    offsets: &[PartitionOffsets],
    output: &Output,
) -> anyhow::Result<Scan> {
    let started = Instant::now();
    let progress = output.progress(reader.total.max(0) as u64, "messages");
    let committed: HashMap<i32, i64> = offsets
        .iter()
        .map(|p| (p.partition, p.committed.unwrap_or(p.log_start)))
        .collect();
    let loaded = inbox_ids.is_some();
    // Without the inbox's ids in memory, the map only holds where each id was first seen.
    let mut ids = inbox_ids.unwrap_or_else(|| IdMap::with_hasher(HashIsKey));
    let mut scan = Scan {
        partitions: BTreeMap::new(),
        duplicates: Vec::new(),
        messages: 0,
    };
    let mut duplicates: BTreeMap<String, Vec<(i32, i64)>> = BTreeMap::new();
    while let Some(chunk) = reader.chunks.recv().await {
        let processed = if loaded {
            Default::default()
        } else {
            let ids: Vec<&str> = chunk
                .iter()
                .filter_map(|m| m.event_id.as_ref().map(|(id, _)| id.as_str()))
                .collect();
            store.processed_ids(consumer, &ids).await?
        };
        for message in &chunk {
            scan.messages += 1;
            let partition = scan.partitions.entry(message.partition).or_default();
            let Some((event_id, key)) = &message.event_id else {
                partition.missing_event_id += 1;
                continue;
            };
            let state = ids.entry(*key).or_insert(IdState {
                offset: 0,
                partition: NOT_SEEN,
                in_inbox: false,
            });
            if state.partition == NOT_SEEN {
                state.partition = message.partition;
                state.offset = message.offset;
            } else {
                duplicates
                    .entry(event_id.clone())
                    .or_insert_with(|| vec![(state.partition, state.offset)])
                    .push((message.partition, message.offset));
            }
            let in_inbox = if loaded {
                state.in_inbox
            } else {
                processed.contains(event_id)
            };
            let below_committed =
                message.offset < committed.get(&message.partition).copied().unwrap_or(0);
            if below_committed && !in_inbox {
                partition.lost.push(LostEvent {
                    partition: message.partition,
                    offset: message.offset,
                    event_id: Some(event_id.clone()),
                });
            } else if !below_committed && in_inbox {
                partition.pending.push(message.offset);
            }
        }
        progress.inc(chunk.len() as u64);
    }
    progress.finish_and_clear();
    reader
        .thread
        .await
        .context("the topic reader stopped unexpectedly")??;
    output.debug(format!(
        "classified {} messages in {:.2}s",
        scan.messages,
        started.elapsed().as_secs_f64()
    ));
    scan.duplicates = duplicates
        .into_iter()
        .map(|(event_id, positions)| Duplicate {
            event_id,
            positions,
        })
        .collect();
    Ok(scan)
}

/// Whether the consumer's event ids are few enough to load (see [`LOAD_INBOX_UP_TO`]). On
/// PostgreSQL the planner's estimate of the whole table answers when it is well under the
/// limit, which saves counting a million rows; otherwise they are counted.
async fn fits_in_memory(store: &Store, consumer: &str) -> anyhow::Result<bool> {
    let limit = load_limit();
    if let Some(HeapExtent {
        pages,
        rows_per_page: Some(rows_per_page),
        ..
    }) = store.heap_extent().await?
    {
        if (2.0 * rows_per_page * pages as f64) < limit as f64 {
            return Ok(true);
        }
    }
    Ok(store.consumer_rows(consumer).await? <= limit)
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
    let limited = |items: Vec<String>| -> String {
        let total = items.len();
        let mut shown: Vec<String> = items.into_iter().take(show).collect();
        if total > show {
            shown.push(format!("… and {} more", total - show));
        }
        shown.join(", ")
    };
    output.print(format!(
        "Group '{}' ({}) against inbox consumer '{}' on topic '{}'{}",
        c.group,
        c.group_state,
        c.consumer,
        c.topic,
        if c.scan {
            format!(", {} messages scanned", c.messages_scanned)
        } else {
            String::new()
        }
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
    for p in &c.partitions {
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
    for p in &c.partitions {
        if !p.lost.is_empty() || p.lost_count > 0 {
            let items = p
                .lost
                .iter()
                .map(|l| match &l.event_id {
                    Some(id) => format!("{} ({id})", l.offset),
                    None => l.offset.to_string(),
                })
                .collect();
            output.print(format!(
                "Lost in partition {} (committed, never processed): {}",
                p.partition,
                limited(items)
            ));
        }
        if !p.pending_redelivery.is_empty() {
            output.print(format!(
                "Pending redelivery in partition {} (processed, not committed): offsets {}",
                p.partition,
                limited(p.pending_redelivery.iter().map(i64::to_string).collect())
            ));
        }
        if !p.orphans.is_empty() {
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
    if !c.duplicates.is_empty() {
        let items = c
            .duplicates
            .iter()
            .map(|d| {
                let at: Vec<String> = d
                    .positions
                    .iter()
                    .map(|(p, o)| format!("{p}:{o}"))
                    .collect();
                format!("{} at {}", d.event_id, at.join(" "))
            })
            .collect();
        output.print(format!(
            "Duplicate deliveries ({}): {}",
            c.duplicates.len(),
            limited(items)
        ));
    }
    let verdict = if c.lost_total > 0 || c.orphans_total > 0 {
        format!(
            "FINDINGS: {} lost, {} orphaned",
            c.lost_total, c.orphans_total
        )
    } else {
        "OK: nothing lost".to_string()
    };
    output.print(format!(
        "{verdict}; {} pending redelivery; {} duplicate event id(s){}",
        c.pending_total,
        c.duplicates.len(),
        if c.scan {
            ""
        } else {
            " (duplicates need --scan; without it, lost counts offsets with no inbox row)"
        }
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_offsets_are_the_gaps() {
        assert_eq!(missing_offsets(0, 6, &[0, 2, 3, 5], 100), vec![1, 4]);
        assert_eq!(missing_offsets(3, 6, &[], 100), vec![3, 4, 5]);
        assert_eq!(
            missing_offsets(3, 6, &[1, 3, 4, 5, 9], 100),
            Vec::<i64>::new()
        );
        assert_eq!(missing_offsets(0, 100, &[], 3), vec![0, 1, 2]);
    }

    #[test]
    fn hashes_tell_ids_apart() {
        assert_eq!(id_hash("evt-1"), id_hash("evt-1"));
        assert_ne!(id_hash("evt-1"), id_hash("evt-2"));
    }
}
