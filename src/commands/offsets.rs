//! `offsets show` and `offsets reset`: the group's committed offsets against the log, and
//! moving them with the vocabulary of kafka-consumer-groups.sh (dry run unless --execute).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context};
use chrono::Utc;
use rdkafka::consumer::BaseConsumer;
use serde::Serialize;
use serde_json::json;
use tokio::task::block_in_place;

use crate::cli::{Format, OffsetsArgs, OffsetsCommand, OffsetsResetArgs, OffsetsShowArgs};
use crate::exit::ExitStatus;
use crate::kafka::{CommitNotAnswered, DeleteNotAnswered, GroupState, Kafka, Watermarks};
use crate::output::{first_of, or_dash, table, Output};
use crate::store::{CreateMode, Store};

use super::{inboxctl_command, OnStop, StopRequest};

pub async fn run(args: OffsetsArgs, output: Output) -> anyhow::Result<ExitStatus> {
    match args.command {
        OffsetsCommand::Show(args) => show(args, output),
        OffsetsCommand::Reset(args) => reset(*args, output).await,
    }
}

/// One partition as `offsets show` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct PartitionOffsets {
    pub topic: String,
    pub partition: i32,
    pub committed: Option<i64>,
    pub log_start: i64,
    pub log_end: i64,
    /// Messages after the committed offset; `None` without a committed offset.
    pub lag: Option<i64>,
}

/// A group's state and committed offsets.
pub struct GroupOffsets {
    pub state: GroupState,
    pub partitions: Vec<PartitionOffsets>,
    /// Topics left out because the brokers answered their metadata with an error (name,
    /// error); only when all of the group's topics were asked for.
    pub unlisted: Vec<(String, String)>,
    /// Every topic the cluster has (Kafka's internal topics aside), those of `unlisted`
    /// included; only when all of the group's topics were asked for, empty otherwise.
    pub cluster_topics: std::collections::BTreeSet<String>,
}

/// The error of [`group_offsets`] for a group the cluster does not know, which callers can
/// tell apart to say more.
#[derive(Debug)]
pub struct UnknownGroup(pub String);

impl std::fmt::Display for UnknownGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnknownGroup {}

/// The group's committed offsets for these topics (all of its topics when empty), with the
/// log's bounds, read through `client` (a [`Kafka::group_client`] of the group). Fails for a
/// group the cluster does not know.
pub fn group_offsets(
    kafka: &Kafka,
    client: &BaseConsumer,
    group: &str,
    topics: &[String],
) -> anyhow::Result<GroupOffsets> {
    let (candidates, unlisted) = if topics.is_empty() {
        let listed = kafka.listed_partitions(client)?;
        (listed.partitions, listed.failed)
    } else {
        let mut list = Vec::new();
        let mut named = std::collections::BTreeSet::new();
        // A topic named twice is read once.
        for topic in topics.iter().filter(|topic| named.insert(*topic)) {
            for partition in kafka.partitions(client, topic)? {
                list.push((topic.clone(), partition));
            }
        }
        (list, Vec::new())
    };
    // After the metadata request: librdkafka's group listing waits up to a second for broker
    // connections when it is the client's first request.
    let state = kafka.group_state(client, group)?;
    let committed = kafka.committed(client, &candidates)?;
    // Without --topic, only the topics where the group has committed something.
    let with_offsets: std::collections::BTreeSet<&String> = committed
        .iter()
        .filter(|(_, offset)| offset.is_some())
        .map(|((topic, _), _)| topic)
        .collect();
    if with_offsets.is_empty() && state.is_unknown() {
        return Err(anyhow::Error::new(UnknownGroup(format!(
            "{}; `inboxctl offsets show` lists the groups there are",
            kafka.unknown_group(group)
        ))));
    }
    let shown = |topic: &String| !topics.is_empty() || with_offsets.contains(topic);
    let mut by_topic: BTreeMap<&String, Vec<i32>> = BTreeMap::new();
    for (topic, partition) in candidates.iter().filter(|(topic, _)| shown(topic)) {
        by_topic.entry(topic).or_default().push(*partition);
    }
    let mut marks = BTreeMap::new();
    for (topic, partitions) in by_topic {
        for (partition, found) in kafka.watermarks_of(client, topic, &partitions)? {
            marks.insert((topic.clone(), partition), found);
        }
    }
    let mut rows = Vec::new();
    for (topic, partition) in &candidates {
        if !shown(topic) {
            continue;
        }
        let Watermarks { log_start, log_end } = marks[&(topic.clone(), *partition)];
        let committed = committed
            .get(&(topic.clone(), *partition))
            .copied()
            .flatten();
        rows.push(PartitionOffsets {
            topic: topic.clone(),
            partition: *partition,
            committed,
            log_start,
            log_end,
            lag: committed.map(|c| (log_end - c).max(0)),
        });
    }
    let cluster_topics = candidates
        .iter()
        .map(|(topic, _)| topic)
        .chain(unlisted.iter().map(|(topic, _)| topic))
        .cloned()
        .collect();
    Ok(GroupOffsets {
        state,
        partitions: rows,
        unlisted,
        cluster_topics,
    })
}

/// What a committed offset outside its partition's log means, if it is: past the log end,
/// a topic deleted and created again (or another cluster's); below the log start, messages
/// deleted before the group committed past them. Either way the consumer's next fetch there
/// is out of range, and `auto.offset.reset` decides where it starts.
pub fn out_of_range(p: &PartitionOffsets) -> Option<String> {
    let committed = p.committed?;
    let (topic, partition) = (&p.topic, p.partition);
    if committed > p.log_end {
        Some(format!(
            "{topic}:{partition}: the committed offset {committed} is past the log end {} (a \
             topic deleted and created again, or another cluster's?); the group's next start \
             there goes where its auto.offset.reset says",
            p.log_end
        ))
    } else if committed < p.log_start {
        Some(format!(
            "{topic}:{partition}: the committed offset {committed} is below the log start {}: \
             {} message(s) were deleted before the group committed past them, so nothing can \
             read them again to tell whether they were processed; the group's next start \
             there goes where its auto.offset.reset says",
            p.log_start,
            p.log_start - committed
        ))
    } else {
        None
    }
}

/// Warns of each topic of [`GroupOffsets::unlisted`]: the report (`shown`, `compared`)
/// leaves it out.
pub fn warn_unlisted(output: &Output, unlisted: &[(String, String)], left_out_of: &str) {
    for (topic, error) in unlisted {
        output.warn(format!(
            "topic '{topic}' is not {left_out_of}: the brokers answered its metadata with an error ({error}), \
             so the group's offsets there cannot be read; try again, or name it with --topic"
        ));
    }
}

fn show(args: OffsetsShowArgs, output: Output) -> anyhow::Result<ExitStatus> {
    let kafka = Kafka::new(&args.kafka)?;
    let Some(group) = &args.group else {
        return list_groups(&kafka, &output);
    };
    let GroupOffsets {
        state,
        partitions: rows,
        unlisted,
        ..
    } = block_in_place(|| {
        let client = kafka.group_client(group)?;
        group_offsets(&kafka, &client, group, &args.topic)
    })?;
    warn_unlisted(&output, &unlisted, "shown");
    for warning in rows.iter().filter_map(out_of_range) {
        output.warn(warning);
    }
    let mut totals: BTreeMap<&str, TopicLag> = BTreeMap::new();
    for row in &rows {
        let total = totals.entry(&row.topic).or_default();
        match row.lag {
            Some(lag) => *total.lag.get_or_insert(0) += lag,
            None => total.without_commit += 1,
        }
    }
    match output.format {
        Format::Json => output.print_json(&json!({
            "group": group,
            "state": state.state,
            "members": state.members,
            "partitions": rows,
            "topics": totals.iter().map(|(topic, total)| json!({
                "topic": topic,
                "lag": total.lag,
                "partitions_without_commit": total.without_commit,
            })).collect::<Vec<_>>(),
        }))?,
        Format::Csv => output.print_csv(
            &[
                "topic",
                "partition",
                "committed",
                "log_start",
                "log_end",
                "lag",
            ],
            &rows
                .iter()
                .map(|r| {
                    vec![
                        r.topic.clone(),
                        r.partition.to_string(),
                        r.committed.map(|v| v.to_string()).unwrap_or_default(),
                        r.log_start.to_string(),
                        r.log_end.to_string(),
                        r.lag.map(|v| v.to_string()).unwrap_or_default(),
                    ]
                })
                .collect::<Vec<_>>(),
        )?,
        Format::Table => {
            output.print(format!(
                "Group '{}': {}, {} member(s)",
                group, state.state, state.members
            ));
            // Without --topic only topics with a committed offset are listed: there may be
            // none yet (members that have not committed).
            if rows.is_empty() {
                output.print(
                    "No committed offsets yet; --topic TOPIC shows a topic's partitions anyway.",
                );
                return Ok(ExitStatus::Success);
            }
            let mut t = table(
                &[
                    "TOPIC",
                    "PARTITION",
                    "COMMITTED",
                    "LOG-START",
                    "LOG-END",
                    "LAG",
                ],
                &[1, 2, 3, 4, 5],
            );
            for r in &rows {
                t.add_row(vec![
                    r.topic.clone(),
                    r.partition.to_string(),
                    or_dash(r.committed),
                    r.log_start.to_string(),
                    r.log_end.to_string(),
                    or_dash(r.lag),
                ]);
            }
            output.print(t.to_string());
            for (topic, total) in &totals {
                output.print(format!("Total lag of {topic}: {}", total.describe()));
            }
        }
    }
    Ok(ExitStatus::Success)
}

/// A topic's lag summed over its partitions with a committed offset. Those without one
/// have no lag to add (kafka-consumer-groups.sh shows "-" for them): a total that left
/// them out silently would read as the whole topic's.
#[derive(Debug, Default)]
struct TopicLag {
    /// `None` when no partition has a committed offset.
    lag: Option<i64>,
    without_commit: usize,
}

impl TopicLag {
    fn describe(&self) -> String {
        match (self.lag, self.without_commit) {
            (None, _) => "- (no partition has a committed offset)".to_string(),
            (Some(lag), 0) => lag.to_string(),
            (Some(lag), 1) => format!("{lag} (1 partition without a committed offset not counted)"),
            (Some(lag), n) => {
                format!("{lag} ({n} partitions without a committed offset not counted)")
            }
        }
    }
}

/// `offsets show` without `--group`: the groups, as `kafka-consumer-groups.sh --list --state`
/// shows them, for finding a group's exact name.
fn list_groups(kafka: &Kafka, output: &Output) -> anyhow::Result<ExitStatus> {
    let groups = block_in_place(|| {
        let client = kafka.reader(&[])?;
        kafka.groups(&client)
    })?;
    match output.format {
        Format::Json => output.print_json(&json!({ "groups": groups }))?,
        Format::Csv => output.print_csv(
            &["group", "state", "members"],
            &groups
                .iter()
                .map(|g| vec![g.group.clone(), g.state.clone(), g.members.to_string()])
                .collect::<Vec<_>>(),
        )?,
        Format::Table => {
            if groups.is_empty() {
                output.print(format!("No consumer groups on {}.", kafka.brokers()));
            } else {
                let mut t = table(&["GROUP", "STATE", "MEMBERS"], &[2]);
                for g in &groups {
                    t.add_row(vec![
                        g.group.clone(),
                        g.state.clone(),
                        g.members.to_string(),
                    ]);
                }
                output.print(t.to_string());
            }
        }
    }
    Ok(ExitStatus::Success)
}

/// One partition of a reset plan.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedOffset {
    pub topic: String,
    pub partition: i32,
    pub current: Option<i64>,
    /// `None`: no committed offset (a plan line with an empty offset, as undo plans write
    /// for a partition the group had committed nothing for).
    pub new: Option<i64>,
    pub log_start: i64,
    pub log_end: i64,
    /// Set when the wanted offset was outside the log and was moved to its edge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clamped_from: Option<i64>,
    /// `--to-inbox` only: how many offsets a move forward passes that have no inbox row (0
    /// for any other move).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped_without_row: Option<i64>,
    /// The first runs of those offsets, (first, last), for the warning that names them.
    #[serde(skip)]
    pub skipped_runs: Vec<(i64, i64)>,
}

/// An offset, or none, per (topic, partition).
pub type OffsetsByPartition = BTreeMap<(String, i32), Option<i64>>;

/// Where each partition should go before clamping; `None` keeps the current offset.
enum Target {
    Earliest,
    Latest,
    Offset(i64),
    Time(i64),
    Shift(i64),
    Inbox(BTreeMap<(String, i32), i64>),
    Plan(OffsetsByPartition),
}

async fn reset(args: OffsetsResetArgs, output: Output) -> anyhow::Result<ExitStatus> {
    let kafka = Kafka::new(&args.kafka)?;
    // With --to-inbox: the inbox's consumer, and the store it is read from.
    let inbox_consumer = args.consumer.clone().unwrap_or_else(|| args.group.clone());
    let mut inbox = None;
    let target = if args.to_earliest {
        Target::Earliest
    } else if args.to_latest {
        Target::Latest
    } else if let Some(offset) = args.to_offset {
        if offset < 0 {
            return Err(crate::error::usage(format!(
                "--to-offset must be 0 or more, not {offset}"
            )));
        }
        Target::Offset(offset)
    } else if let Some(at) = args.to_datetime {
        Target::Time(crate::time::kafka_millis_from(at))
    } else if let Some(ago) = args.by_duration {
        let at = crate::time::ago(ago)
            .ok_or_else(|| crate::error::usage("--by-duration is too large"))?;
        Target::Time(crate::time::kafka_millis_from(at))
    } else if let Some(shift) = args.shift_by {
        Target::Shift(shift)
    } else if let Some(path) = &args.from_file {
        Target::Plan(read_plan(path)?)
    } else {
        // One connection for the positions now and, once the plan is known, the offsets
        // it would skip.
        let store =
            super::connect_sequential(&args.database, CreateMode::MustExist, &output).await?;
        let positions = match inbox_positions(&store, &inbox_consumer, &args).await {
            Ok(positions) => positions,
            Err(error) => {
                store.close().await;
                return Err(error);
            }
        };
        inbox = Some(store);
        Target::Inbox(positions)
    };

    // The partitions: named on the command line, or those in the plan file.
    let mut named: Vec<crate::cli::TopicPartitions> = args.topic.clone();
    if let Target::Plan(plan) = &target {
        if named.is_empty() {
            let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
            for (topic, partition) in plan.keys() {
                by_topic.entry(topic.clone()).or_default().push(*partition);
            }
            named = by_topic
                .into_iter()
                .map(|(topic, partitions)| crate::cli::TopicPartitions {
                    topic,
                    partitions: Some(partitions),
                })
                .collect();
        }
    }
    if named.is_empty() && !args.all_topics {
        return Err(crate::error::usage(
            "name the partitions to reset with --topic TOPIC[:P,…], or --all-topics",
        ));
    }

    let planned = block_in_place(
        || -> anyhow::Result<(GroupState, Vec<PlannedOffset>, Forgetting, bool, WithoutRows)> {
            let client = kafka.group_client(&args.group)?;
            let mut partitions = Vec::new();
            if args.all_topics {
                partitions = committed_partitions(&kafka, &client, &args.group)?;
            }
            for entry in &named {
                let existing = kafka.partitions(&client, &entry.topic)?;
                let chosen = match &entry.partitions {
                    None => existing.clone(),
                    Some(chosen) => {
                        for partition in chosen {
                            if !existing.contains(partition) {
                                bail!(
                                "partition {partition} of topic '{}' does not exist (it has partitions 0-{})",
                                entry.topic,
                                existing.len().saturating_sub(1)
                            );
                            }
                        }
                        chosen.clone()
                    }
                };
                // A partition named twice (`-t orders -t orders:0`) is planned once.
                for partition in chosen {
                    let key = (entry.topic.clone(), partition);
                    if !partitions.contains(&key) {
                        partitions.push(key);
                    }
                }
            }
            // --topic narrows a plan file: say what it leaves out, and refuse to leave out all.
            if let Target::Plan(positions) = &target {
                let left_out: Vec<String> = positions
                    .keys()
                    .filter(|key| !partitions.contains(key))
                    .map(|(topic, partition)| format!("{topic}:{partition}"))
                    .collect();
                if left_out.len() == positions.len() {
                    return Err(crate::error::usage(format!(
                        "none of the {} partition(s) of the plan file is among those --topic names; drop --topic to apply the whole plan",
                        positions.len()
                    )));
                }
                if !left_out.is_empty() {
                    output.warn(format!(
                        "--topic leaves out {} partition(s) of the plan file: {}",
                        left_out.len(),
                        left_out.join(", ")
                    ));
                }
            }
            // After the metadata requests, as in group_offsets.
            let state = kafka.group_state(&client, &args.group)?;
            let committed = kafka.committed(&client, &partitions)?;
            let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
            for (topic, partition) in &partitions {
                topics.entry(topic).or_default().push(*partition);
            }
            let mut by_time: BTreeMap<(String, i32), Option<i64>> = BTreeMap::new();
            let mut marks: BTreeMap<(String, i32), Watermarks> = BTreeMap::new();
            for (topic, list) in topics {
                if let Target::Time(at) = target {
                    for (partition, offset) in kafka.offsets_for_time(&client, topic, &list, at)? {
                        by_time.insert((topic.to_string(), partition), offset);
                    }
                }
                for (partition, found) in kafka.watermarks_of(&client, topic, &list)? {
                    marks.insert((topic.to_string(), partition), found);
                }
            }
            let mut plan = Vec::new();
            // --to-inbox: the partitions the inbox has no rows of, left as they are.
            let mut without_rows = Vec::new();
            for (topic, partition) in partitions {
                let key = (topic.clone(), partition);
                let Watermarks { log_start, log_end } = marks[&key];
                let current = committed.get(&key).copied().flatten();
                let wanted = match &target {
                Target::Earliest => Some(log_start),
                Target::Latest => Some(log_end),
                Target::Offset(offset) => Some(*offset),
                // No message that late: the end, as Kafka does.
                Target::Time(_) => Some(by_time.get(&key).copied().flatten().unwrap_or(log_end)),
                Target::Shift(shift) => match current {
                    Some(current) => Some(current.saturating_add(*shift)),
                    None => bail!("{topic}:{partition} has no committed offset to shift from; use --to-offset or --to-earliest"),
                },
                Target::Inbox(positions) => positions.get(&key).copied(),
                Target::Plan(positions) => match positions.get(&key) {
                    Some(None) => {
                        plan.push(PlannedOffset {
                            topic,
                            partition,
                            current,
                            new: None,
                            log_start,
                            log_end,
                            clamped_from: None,
                            skipped_without_row: None,
                            skipped_runs: Vec::new(),
                        });
                        continue;
                    }
                    found => found.copied().flatten(),
                },
            };
                let Some(wanted) = wanted else {
                    if let Target::Inbox(_) = target {
                        without_rows.push((topic, partition));
                    }
                    continue;
                };
                let new = wanted.clamp(log_start, log_end);
                plan.push(PlannedOffset {
                    topic,
                    partition,
                    current,
                    new: Some(new),
                    log_start,
                    log_end,
                    clamped_from: (new != wanted).then_some(wanted),
                    skipped_without_row: None,
                    skipped_runs: Vec::new(),
                });
            }
            let forgetting = forgetting(&kafka, &client, &plan)?;
            // A group the brokers know nothing of: the reset would create it, as
            // kafka-consumer-groups.sh's does, which a mistyped --group should not do without
            // a word. The other topics are asked only when the plan's have no offsets; one
            // whose metadata fails does not stop the reset over a warning.
            let unknown = committed.values().all(Option::is_none)
                && kafka.knows_nothing_of(&client, &state, || {
                    Ok(kafka.listed_partitions(&client)?.partitions)
                })?;
            Ok((state, plan, forgetting, unknown, without_rows))
        },
    );
    // The inbox's store is closed on every path, an error's too: a connection dropped at
    // exit is a lost client to the server.
    let (state, plan, forgetting, unknown_group, without_rows) = match (planned, inbox) {
        (Ok(mut planned), Some(store)) => {
            let counted = count_skipped_without_row(&store, &inbox_consumer, &mut planned.1).await;
            store.close().await;
            counted?;
            planned
        }
        (planned, Some(store)) => {
            store.close().await;
            planned?
        }
        (planned, None) => planned?,
    };

    for p in &plan {
        let (Some(skipped), Some(new)) = (p.skipped_without_row, p.new) else {
            continue;
        };
        // Back is safe (the inbox skips what it holds) but not what --to-inbox suggests.
        if let Some(current) = p.current.filter(|current| new < *current) {
            // Only offsets the log holds are given again; a commit past its end had none.
            let again_to = current.min(p.log_end);
            let again = match again_to - new {
                ..=0 => None,
                1 => Some(format!("offset {new}")),
                _ => Some(format!("offsets {new} to {}", again_to - 1)),
            };
            let past_the_end = match current > p.log_end {
                true => format!(", which is past the log's end ({}),", p.log_end),
                false => String::new(),
            };
            output.note(match again {
                Some(again) => format!(
                    "{}:{}: moving back from {current}{past_the_end} to {new}: the group will be \
                     given {again} again, and the inbox skips those it already holds",
                    p.topic, p.partition,
                ),
                None => format!(
                    "{}:{}: moving back from {current}{past_the_end} to {new}: no message is \
                     given again",
                    p.topic, p.partition,
                ),
            });
        }
        if let Some(&(first, _)) = p.skipped_runs.first() {
            let consumer = args.consumer.as_deref().unwrap_or(&args.group);
            let (partition, first_text, new_text) =
                (p.partition.to_string(), first.to_string(), new.to_string());
            output.warn(format!(
                "{}:{}: moving from {} to {new} skips {skipped} offset(s) without an inbox row \
                 ({}): their messages, if any, would never be processed; process them first \
                 with `{} …` (the inbox skips those it holds), or move this partition to {first} \
                 instead",
                p.topic,
                p.partition,
                or_dash(p.current),
                runs_text(&p.skipped_runs, skipped),
                inboxctl_command(&[
                    "replay",
                    "--topic",
                    &p.topic,
                    "--partition",
                    &partition,
                    "--from",
                    &first_text,
                    "--to",
                    &new_text,
                    "--consumer",
                    consumer,
                ])
            ));
        }
    }
    for p in plan.iter().filter(|p| p.clamped_from.is_some()) {
        output.warn(format!(
            "{}:{}: offset {} is outside the log [{}, {}]; using {}",
            p.topic,
            p.partition,
            p.clamped_from.unwrap_or_default(),
            p.log_start,
            p.log_end,
            or_dash(p.new)
        ));
    }
    // Listed in JSON with --to-inbox only, where it has a meaning.
    let mut without_inbox_rows = None;
    if let Target::Inbox(positions) = &target {
        let consumer = args.consumer.as_deref().unwrap_or(&args.group);
        if positions.is_empty() {
            output.warn(format!(
                "the inbox has no rows of consumer '{consumer}' with coordinates for these \
                 partitions; nothing to move (`inboxctl inspect` lists the consumers and their \
                 partitions)"
            ));
        } else if !without_rows.is_empty() {
            let named = first_of(
                without_rows
                    .iter()
                    .map(|(topic, partition)| format!("{topic}:{partition}"))
                    .collect(),
                PARTITIONS_NAMED,
            );
            let (which, left, them) = match without_rows.len() {
                // Committed or not: the reset leaves it as it is.
                1 => ("partition", "it is left as it is", "it"),
                _ => ("partitions", "they are left as they are", "them"),
            };
            output.warn(format!(
                "the inbox holds no rows of consumer '{consumer}' for {which} {named} (pruned, or \
                 never processed), so {left}; set {them} explicitly with \
                 --topic TOPIC:PARTITION and --to-offset N (or another target)"
            ));
        }
        without_inbox_rows = Some(without_rows);
    }
    let without_inbox_rows = without_inbox_rows.as_deref();

    // A plan that commits nothing creates nothing.
    if unknown_group && plan.iter().any(|p| p.new.is_some()) {
        let creates = match args.execute {
            true => "this reset creates it",
            false => "--execute creates it",
        };
        output.warn(format!(
            "{}; {creates} with these offsets; check --group if that is not meant",
            kafka.unknown_group(&args.group)
        ));
    }

    // `-`: the plan file is the output, as CSV tools take it; nothing else goes there.
    if args.export.as_deref() == Some(Path::new("-")) {
        output.print_csv(&PLAN_COLUMNS, &plan_lines(&plan))?;
        output.note(format!(
            "Wrote the plan for {} partition(s) to standard output",
            plan.len()
        ));
        return Ok(ExitStatus::Success);
    }
    if let Some(path) = &args.export {
        write_plan(
            path,
            plan.iter().map(|p| (p.topic.as_str(), p.partition, p.new)),
        )?;
        output.note(format!(
            "Wrote the plan for {} partition(s) to {}",
            plan.len(),
            path.display()
        ));
        print_plan(
            &args.group,
            &plan,
            None,
            &Forgetting::Nothing,
            without_inbox_rows,
            &output,
        )?;
        return Ok(ExitStatus::Success);
    }
    if !args.execute {
        print_plan(
            &args.group,
            &plan,
            None,
            &forgetting,
            without_inbox_rows,
            &output,
        )?;
        if let Forgetting::DeleteGroup { others } = &forgetting {
            output.note(deleting_group_note(&args.group, others.len(), false));
        }
        if state.is_active() {
            output.warn(format!(
                "group '{}' is {} with active members: --execute would be refused until its consumers stop",
                args.group, state.state
            ));
        }
        output.note("Dry run: nothing changed. Add --execute to apply.");
        return Ok(ExitStatus::Success);
    }
    if state.is_active() {
        // Some coordinators list no members for a Stable group: no "(0)" then.
        let count = match state.members {
            0 => String::new(),
            n => format!(" ({n})"),
        };
        bail!(
            "refusing to reset offsets of group '{}': it is {} with active members{count}; stop its consumers and retry",
            args.group,
            state.state,
        );
    }
    if plan.is_empty() {
        output.note("Nothing to reset.");
        return Ok(ExitStatus::Success);
    }

    let undo_path = args
        .undo_file
        .clone()
        .unwrap_or_else(|| default_undo_path(&args.group));
    // What is committed: the plan's offsets and, after deleting the group, its others.
    let to_commit: Vec<(String, i32, i64)> = plan
        .iter()
        .filter_map(|p| p.new.map(|new| (p.topic.clone(), p.partition, new)))
        .chain(forgetting.others().iter().cloned())
        .collect();
    // Deleting the group takes every committed offset with it: what is committed again
    // afterwards is written down first, so that a run that stops in between can be finished
    // with one command.
    let deleting = matches!(forgetting, Forgetting::DeleteGroup { .. });
    let recommit_path =
        (deleting && !to_commit.is_empty()).then(|| undo_path.with_extension("recommit.csv"));
    let reset = Reset {
        kafka: &kafka,
        group: &args.group,
        plan: &plan,
        forgetting: &forgetting,
        without_inbox_rows,
        to_commit: &to_commit,
        undo_path: &undo_path,
        recommit_path: recommit_path.as_deref(),
        output: &output,
        step: Default::default(),
    };
    // From here a signal lets the reset finish: one that stopped it between deleting the
    // group and committing again would leave the group with no offsets at all, and its
    // consumers would start wherever auto.offset.reset says.
    let (stop, signals) = super::stop_on_signals(reset.on_stop(), output)?;
    stop.note_done(String::new(), || serde_json::json!({ "group": args.group }));
    let result = reset.execute(&stop);
    signals.abort();
    let status = result?;
    if stop.requested() {
        return Ok(stop.exit_status());
    }
    Ok(status)
}

/// `offsets reset --execute` once the plan is made.
struct Reset<'a> {
    kafka: &'a Kafka,
    group: &'a str,
    plan: &'a [PlannedOffset],
    forgetting: &'a Forgetting,
    /// With --to-inbox: the partitions left out of the plan for want of inbox rows.
    without_inbox_rows: Option<&'a [(String, i32)]>,
    to_commit: &'a [(String, i32, i64)],
    undo_path: &'a Path,
    /// Where the offsets to commit after deleting the group are written down first.
    recommit_path: Option<&'a Path>,
    output: &'a Output,
    /// How far it got: a [`ResetStep`].
    step: std::sync::Arc<std::sync::atomic::AtomicU8>,
}

/// The steps of `offsets reset --execute` that a second signal can stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ResetStep {
    /// Nothing sent to the brokers yet.
    Planned,
    /// The group's deletion is sent, and not answered yet.
    Deleting,
    /// The new offsets are sent (after the group was deleted, if it was), and not answered.
    Committing,
    /// The new offsets are committed.
    Committed,
}

impl From<u8> for ResetStep {
    fn from(step: u8) -> Self {
        match step {
            0 => ResetStep::Planned,
            1 => ResetStep::Deleting,
            2 => ResetStep::Committing,
            _ => ResetStep::Committed,
        }
    }
}

/// The command that applies the plan file `plan` to `group`, ready to paste.
fn apply_command(group: &str, plan: &Path) -> String {
    inboxctl_command(&[
        "offsets",
        "reset",
        "--group",
        group,
        "--from-file",
        &plan.to_string_lossy(),
        "--execute",
    ])
}

/// What a reset stopped at once at `step` leaves, and how to finish it by hand.
fn if_stopped_at(step: ResetStep, group: &str, undo: &Path, recommit: Option<&Path>) -> String {
    let show = inboxctl_command(&["offsets", "show", "--group", group]);
    let apply = |plan: &Path| apply_command(group, plan);
    let not_needed = match recommit {
        Some(recommit) => format!("{} and {}", undo.display(), recommit.display()),
        None => undo.display().to_string(),
    };
    match (step, recommit) {
        (ResetStep::Planned, _) => format!(
            "nothing was sent to the brokers, so group '{group}' keeps its offsets ({not_needed} \
             can go)"
        ),
        (ResetStep::Deleting, Some(recommit)) => format!(
            "the deletion of group '{group}' was sent but not answered; if `{show}` says the \
             group does not exist, it was deleted: commit its offsets with: {}; if it lists the \
             old offsets, nothing changed ({not_needed} can go)",
            apply(recommit)
        ),
        (ResetStep::Deleting, None) => format!(
            "the deletion of group '{group}' was sent but not answered (`{show}` tells whether \
             it went); the undo plan puts back the old offsets: {}",
            apply(undo)
        ),
        (ResetStep::Committing, Some(recommit)) => format!(
            "group '{group}' was deleted, and its offsets were sent but not answered; commit \
             them with: {}",
            apply(recommit)
        ),
        (ResetStep::Committing, None) => format!(
            "the new offsets of group '{group}' were sent but not answered (`{show}` tells \
             whether they were committed); the undo plan puts back the old ones: {}",
            apply(undo)
        ),
        (ResetStep::Committed, _) => format!(
            "the new offsets of group '{group}' are committed, but were not read back (`{show}` \
             shows them); the undo plan puts back the old ones: {}",
            apply(undo)
        ),
    }
}

impl Reset<'_> {
    /// What Ctrl-C or SIGTERM says while the reset runs, and what a second one leaves to do
    /// by hand, which depends on the step the reset had got to.
    fn on_stop(&self) -> OnStop {
        let group = self.group.to_string();
        let finishing = match self.recommit_path {
            Some(_) => format!(
                "finishing the reset first, since deleting group '{group}' takes its offsets \
                 until they are committed again"
            ),
            None => "finishing the reset first".to_string(),
        };
        let step = self.step.clone();
        let undo = self.undo_path.to_path_buf();
        let recommit = self.recommit_path.map(Path::to_path_buf);
        OnStop::FinishFirst {
            finishing,
            if_stopped_now: Box::new(move || {
                let step = ResetStep::from(step.load(std::sync::atomic::Ordering::SeqCst));
                if_stopped_at(step, &group, &undo, recommit.as_deref())
            }),
        }
    }

    /// Writes the undo plan (and the offsets to commit again), then changes the group's
    /// offsets and reads them back.
    fn execute(&self, stop: &StopRequest) -> anyhow::Result<ExitStatus> {
        let (group, output) = (self.group, self.output);
        // The undo plan is written before anything changes: each partition's offset before,
        // or an empty offset where the group had committed nothing.
        write_plan(
            self.undo_path,
            self.plan
                .iter()
                .map(|p| (p.topic.as_str(), p.partition, p.current)),
        )
        .with_context(|| {
            format!(
                "could not write the undo plan to {}; nothing changed",
                self.undo_path.display()
            )
        })?;
        if let Some(path) = self.recommit_path {
            let rows = self
                .to_commit
                .iter()
                .map(|(topic, partition, offset)| (topic.as_str(), *partition, Some(*offset)));
            if let Err(error) = write_plan(path, rows) {
                // Nothing changes, so the undo plan written a moment ago undoes nothing.
                let _ = std::fs::remove_file(self.undo_path);
                return Err(error.context(format!(
                    "could not write the offsets to commit after deleting group '{group}' to {}; nothing changed",
                    path.display()
                )));
            }
        }
        // The way back: shown with -q too, since its name is made up for each reset.
        output.note_even_quiet(format!(
            "Undo plan written to {} (apply it with: {})",
            self.undo_path.display(),
            apply_command(group, self.undo_path)
        ));
        let after = block_in_place(|| self.apply())?;
        let applied: Vec<PlannedOffset> = self
            .plan
            .iter()
            .map(|p| PlannedOffset {
                new: after
                    .get(&(p.topic.clone(), p.partition))
                    .copied()
                    .flatten(),
                ..p.clone()
            })
            .collect();
        // The checks below run even when stdout cannot be written: the reset is done, and
        // what they find matters more than the table.
        let printed = stop.print_result(|| {
            print_plan(
                group,
                &applied,
                Some(self.undo_path),
                self.forgetting,
                self.without_inbox_rows,
                output,
            )
        });
        let expected = self
            .plan
            .iter()
            .map(|p| (p.topic.as_str(), p.partition, p.new))
            .chain(
                self.forgetting
                    .others()
                    .iter()
                    .map(|(topic, partition, offset)| (topic.as_str(), *partition, Some(*offset))),
            );
        for (topic, partition, offset) in expected {
            let read = after
                .get(&(topic.to_string(), partition))
                .copied()
                .flatten();
            if read != offset {
                let kept = self.recommit_path.map_or_else(String::new, |path| {
                    format!(
                        " ({} holds every offset group '{group}' should have)",
                        path.display()
                    )
                });
                bail!(
                    "the committed offset of {topic}:{partition} reads back as {}, not {}{kept}",
                    or_dash(read),
                    or_dash(offset)
                );
            }
        }
        if let Forgetting::DeleteGroup { others } = self.forgetting {
            output.note(deleting_group_note(group, others.len(), true));
        }
        if let Some(path) = self.recommit_path {
            // Everything it holds is committed and read back: it would only mislead later.
            if let Err(error) = std::fs::remove_file(path) {
                output.warn(format!(
                    "could not remove {}, which is no longer needed: {error}",
                    path.display()
                ));
            }
        }
        if stop.requested() {
            output.warn(format!("{}: the reset was finished first", stop.describe()));
        }
        // A table's lines are written as they come and a failed write is only noted (see
        // `Output::print`): asked for here, so that the error says the reset was applied.
        printed
            .and_then(|()| crate::output::stdout_written())
            .context("the reset was applied, and its offsets read back as planned")?;
        Ok(ExitStatus::Success)
    }

    /// Deletes the group where the plan needs it, commits, and reads the offsets back.
    /// Blocks on the broker.
    fn apply(&self) -> anyhow::Result<OffsetsByPartition> {
        let (kafka, group) = (self.kafka, self.group);
        let client = std::sync::Arc::new(kafka.group_client(group)?);
        let reached = |step: ResetStep| {
            self.step
                .store(step as u8, std::sync::atomic::Ordering::SeqCst)
        };
        if let Forgetting::DeleteGroup { .. } = self.forgetting {
            reached(ResetStep::Deleting);
            if let Err(error) = kafka.delete_group(group) {
                // Unanswered, it may have gone through: keep what commits the offsets again.
                if error.is::<DeleteNotAnswered>() {
                    bail!(
                        "{error}: {}",
                        if_stopped_at(
                            ResetStep::Deleting,
                            group,
                            self.undo_path,
                            self.recommit_path
                        )
                    );
                }
                // Refused, nothing changed: the offsets written down to commit again would
                // mislead.
                if let Some(path) = self.recommit_path {
                    let _ = std::fs::remove_file(path);
                }
                return Err(error);
            }
        }
        reached(ResetStep::Committing);
        if !self.to_commit.is_empty() {
            if let Err(error) = kafka.commit(&client, self.to_commit) {
                let context = match (self.recommit_path, error.downcast_ref::<CommitNotAnswered>()) {
                    (Some(path), Some(_)) => format!(
                        "group '{group}' was deleted, and committing its offsets again was not \
                         answered (they may or may not be committed; `{}` tells); commit them \
                         with: {}",
                        inboxctl_command(&["offsets", "show", "--group", group]),
                        apply_command(group, path)
                    ),
                    (Some(path), None) => format!(
                        "group '{group}' was deleted, and its offsets could not be committed again; \
                         commit them with: {}",
                        apply_command(group, path)
                    ),
                    // No answer is no refusal: the commit may have been applied all the same.
                    (None, Some(unanswered)) => bail!(
                        "{unanswered}: the new offsets of group '{group}' may or may not have been \
                         committed; check with `{}`; the undo plan {} puts back the old ones: {}",
                        inboxctl_command(&["offsets", "show", "--group", group]),
                        self.undo_path.display(),
                        apply_command(group, self.undo_path)
                    ),
                    (None, None) => format!(
                        "could not commit the new offsets of group '{group}' (is a consumer still in the group?)"
                    ),
                };
                return Err(error.context(context));
            }
        }
        reached(ResetStep::Committed);
        let applied = || {
            format!(
                "the reset of group '{group}' was applied, but its offsets could not be read \
                 back to check it; check with `{}`",
                inboxctl_command(&["offsets", "show", "--group", group])
            )
        };
        let keys: Vec<(String, i32)> = self
            .plan
            .iter()
            .map(|p| (p.topic.clone(), p.partition))
            .chain(
                self.forgetting
                    .others()
                    .iter()
                    .map(|(topic, partition, _)| (topic.clone(), *partition)),
            )
            .collect();
        kafka.committed(&client, &keys).with_context(applied)
    }
}

/// What `--execute` does about the planned partitions with an empty offset ("no committed
/// offset") where the group has one.
enum Forgetting {
    /// There are none.
    Nothing,
    /// Delete the group, then commit the plan's offsets and these, the group's committed
    /// offsets outside the plan, again.
    DeleteGroup { others: Vec<(String, i32, i64)> },
}

impl Forgetting {
    /// The group's committed offsets outside the plan, committed again after deleting it.
    fn others(&self) -> &[(String, i32, i64)] {
        match self {
            Forgetting::DeleteGroup { others } => others,
            Forgetting::Nothing => &[],
        }
    }
}

/// `--all-topics`: the partitions the group has a committed offset for, as
/// kafka-consumer-groups.sh takes them; an error when there are none, since a mistyped group
/// would otherwise reset nothing without a word. A topic whose metadata the brokers answer
/// with an error fails too: its partitions cannot be listed, and a reset that left them out
/// would report the group reset while its offsets there stayed where they were.
fn committed_partitions(
    kafka: &Kafka,
    client: &BaseConsumer,
    group: &str,
) -> anyhow::Result<Vec<(String, i32)>> {
    let partitions: Vec<(String, i32)> =
        committed_offsets(kafka, client, &kafka.every_partition(client)?)?
            .into_iter()
            .map(|(topic, partition, _)| (topic, partition))
            .collect();
    if partitions.is_empty() {
        bail!(
            "consumer group '{group}' has no committed offsets on {}: --all-topics has nothing to reset; name the partitions with --topic",
            kafka.brokers()
        );
    }
    Ok(partitions)
}

/// Kafka returns single partitions to "no committed offset" with OffsetDelete, which
/// librdkafka's consumer API does not send. Deleting the group (empty whenever offsets are
/// reset) returns all of them to none; the offsets it should keep are then committed again,
/// as was done before Kafka had OffsetDelete.
fn forgetting(
    kafka: &Kafka,
    client: &BaseConsumer,
    plan: &[PlannedOffset],
) -> anyhow::Result<Forgetting> {
    if !plan.iter().any(|p| p.new.is_none() && p.current.is_some()) {
        return Ok(Forgetting::Nothing);
    }
    let planned: std::collections::BTreeSet<(&str, i32)> = plan
        .iter()
        .map(|p| (p.topic.as_str(), p.partition))
        .collect();
    let others = committed_offsets(kafka, client, &kafka.every_partition(client)?)?
        .into_iter()
        .filter(|(topic, partition, _)| !planned.contains(&(topic.as_str(), *partition)))
        .collect();
    Ok(Forgetting::DeleteGroup { others })
}

/// The group's committed offsets among `partitions`, leaving out those with none.
fn committed_offsets(
    kafka: &Kafka,
    client: &BaseConsumer,
    partitions: &[(String, i32)],
) -> anyhow::Result<Vec<(String, i32, i64)>> {
    Ok(kafka
        .committed(client, partitions)?
        .into_iter()
        .filter_map(|((topic, partition), offset)| offset.map(|offset| (topic, partition, offset)))
        .collect())
}

/// What deleting the group to forget some partitions' offsets does: before (`done` false,
/// the dry run) or after.
fn deleting_group_note(group: &str, others: usize, done: bool) -> String {
    let (subject, verb, again) = match done {
        false => ("--execute", "would delete", "would be"),
        true => ("Reset", "deleted", "were"),
    };
    let others = match others {
        0 => String::new(),
        n => format!("; its {n} committed offset(s) outside the plan {again} committed again"),
    };
    format!(
        "{subject} {verb} group '{group}' to return partitions to no committed offset, \
         which only deleting the group does without Kafka's OffsetDelete{others}"
    )
}

/// `inboxctl-undo-GROUP-TIME.csv` in the working folder; a second reset of the group within
/// the same second gets `-2`, `-3`, … rather than overwriting the first one's undo plan.
fn default_undo_path(group: &str) -> PathBuf {
    let stem = format!(
        "inboxctl-undo-{}-{}",
        sanitize(group),
        Utc::now().format("%Y%m%dT%H%M%SZ")
    );
    let mut path = PathBuf::from(format!("{stem}.csv"));
    let mut next = 2;
    while path.exists() {
        path = PathBuf::from(format!("{stem}-{next}.csv"));
        next += 1;
    }
    path
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Runs of offsets as `7, 50-59`, and how many offsets the runs not shown hold.
fn runs_text(runs: &[(i64, i64)], total: i64) -> String {
    let shown: i64 = runs.iter().map(|(first, last)| last - first + 1).sum();
    let mut text: Vec<String> = runs
        .iter()
        .map(|&(first, last)| match first == last {
            true => first.to_string(),
            false => format!("{first}-{last}"),
        })
        .collect();
    if total > shown {
        text.push(format!("and {} more", total - shown));
    }
    text.join(", ")
}

/// How many runs of skipped offsets a `--to-inbox` warning names.
const SKIPPED_RUNS_NAMED: usize = 5;

/// `--to-inbox` moves a partition to the inbox's highest offset + 1, gaps or not. Where
/// that moves it forward, offsets it passes without a row are messages the group would never
/// be given again: counted here, to be said before anything is applied.
async fn count_skipped_without_row(
    store: &Store,
    consumer: &str,
    plan: &mut [PlannedOffset],
) -> anyhow::Result<()> {
    for p in plan.iter_mut() {
        p.skipped_without_row = Some(0);
        let (Some(new), from) = (p.new, p.current.unwrap_or(p.log_start).max(p.log_start)) else {
            continue;
        };
        if new <= from {
            continue;
        }
        let present = store
            .distinct_offsets(consumer, &p.topic, p.partition, from, new)
            .await?;
        let skipped = (new - from) - present;
        p.skipped_without_row = Some(skipped);
        if skipped > 0 {
            p.skipped_runs = store
                .runs_without_row(
                    consumer,
                    &p.topic,
                    p.partition,
                    (from, new),
                    SKIPPED_RUNS_NAMED,
                )
                .await?;
        }
    }
    Ok(())
}

/// Highest inbox offset + 1 per partition of the named topics, for `--to-inbox`.
async fn inbox_positions(
    store: &Store,
    consumer: &str,
    args: &OffsetsResetArgs,
) -> anyhow::Result<BTreeMap<(String, i32), i64>> {
    store.require_inbox().await?;
    super::require_held_consumer(store, consumer, "the consumer").await?;
    let mut connection = store.acquire().await?;
    let stats = store
        .partition_stats(&mut connection, Some(consumer))
        .await?;
    let topics: Vec<&str> = args.topic.iter().map(|t| t.topic.as_str()).collect();
    Ok(stats
        .into_iter()
        .filter_map(|s| {
            let topic = s.topic?;
            let partition = i32::try_from(s.partition?).ok()?;
            let max = s.max_offset?;
            // --all-topics keeps what the plan's partitions need.
            (args.all_topics || topics.contains(&topic.as_str()))
                // Saturated: a row at the largest offset asks for one past any log end,
                // which the plan moves to the end.
                .then_some(((topic, partition), max.saturating_add(1)))
        })
        .collect())
}

/// Reads `topic,partition,offset` lines. A first line that names the columns, in any order
/// (case and spaces aside), is a header, and the lines after it are read in its order; one
/// that names some of them but not exactly these three is a usage error, as is any other line
/// that is not a plan's (exit code 2, as for a bad value on the command line). Errors name the
/// line of the file, blank lines included.
pub fn read_plan(path: &Path) -> anyhow::Result<OffsetsByPartition> {
    let text = std::fs::read(path)
        .with_context(|| format!("could not open the plan file {}", path.display()))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        // Lines of the wrong length get this function's own message, not the reader's.
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_slice());
    // The line a record is on, counted in the file: the reader places a record where the
    // previous one ended, before the line ends and blank lines it skips.
    let line_of = |position: Option<&csv::Position>, index: usize| -> usize {
        let Some(position) = position else {
            return index + 1;
        };
        let mut start = usize::try_from(position.byte()).map_or(text.len(), |b| b.min(text.len()));
        while start < text.len() && matches!(text[start], b'\r' | b'\n') {
            start += 1;
        }
        1 + text[..start].iter().filter(|b| **b == b'\n').count()
    };
    let mut plan = BTreeMap::new();
    // Where the topic, the partition and the offset are in a line: as written without a
    // header, or as the header names them.
    let mut order = [0, 1, 2];
    for (index, record) in reader.records().enumerate() {
        let record = match record {
            Ok(record) => record,
            Err(error) => {
                let line = line_of(error.position(), index);
                return Err(crate::error::usage(format!(
                    "{}:{line}: not valid CSV: {error}",
                    path.display()
                )));
            }
        };
        let line = line_of(record.position(), index);
        if index == 0 && is_header(&record) {
            order = header_order(&record).map_err(|problem| {
                let found: Vec<&str> = record.iter().collect();
                crate::error::usage(format!(
                    "{}:{line}: the header line '{}' does not name the plan's columns: expected {}, each once, in any order ({problem})",
                    path.display(),
                    found.join(","),
                    PLAN_COLUMNS.join(", ")
                ))
            })?;
            continue;
        }
        if record.len() != 3 {
            // The columns in the order the lines have them.
            let mut expected = [""; 3];
            for (column, position) in order.into_iter().enumerate() {
                expected[position] = PLAN_COLUMNS[column];
            }
            return Err(crate::error::usage(format!(
                "{}:{line}: expected {} but found {} field(s)",
                path.display(),
                expected.join(","),
                record.len()
            )));
        }
        let [topic, partition, offset] = order.map(|column| &record[column]);
        // The rules `--topic` follows: an empty or illegal name is the file's mistake, not
        // the brokers'.
        let topic = crate::cli::parse_topic(topic).map_err(|problem| {
            crate::error::usage(format!("{}:{line}: {problem}", path.display()))
        })?;
        let partition: i32 = partition
            .parse()
            .ok()
            .filter(|p: &i32| *p >= 0)
            .ok_or_else(|| {
                crate::error::usage(format!(
                    "{}:{line}: '{partition}' is not a partition number",
                    path.display(),
                ))
            })?;
        // Empty: no committed offset.
        let offset: Option<i64> = match offset {
            "" => None,
            text => Some(text.parse().ok().filter(|o: &i64| *o >= 0).ok_or_else(|| {
                crate::error::usage(format!(
                    "{}:{line}: '{text}' is not an offset",
                    path.display()
                ))
            })?),
        };
        let key = (topic, partition);
        match plan.get(&key) {
            Some((earlier, earlier_line)) if *earlier != offset => {
                return Err(crate::error::usage(format!(
                    "{}:{line}: {}:{partition} is given again, with another offset than on line {earlier_line}; a plan names each partition once",
                    path.display(),
                    key.0
                )))
            }
            Some(_) => {}
            None => {
                plan.insert(key, (offset, line));
            }
        }
    }
    if plan.is_empty() {
        return Err(crate::error::usage(format!(
            "the plan file {} names no partitions",
            path.display()
        )));
    }
    Ok(plan
        .into_iter()
        .map(|(key, (offset, _))| (key, offset))
        .collect())
}

/// Whether the first line of a plan file is meant as its header: it names one of the columns
/// and has no partition number where a line without a header has it (a topic may be called
/// `topic`).
fn is_header(record: &csv::StringRecord) -> bool {
    let names_a_column = record
        .iter()
        .any(|field| PLAN_COLUMNS.iter().any(|c| field.eq_ignore_ascii_case(c)));
    names_a_column
        && record
            .get(1)
            .is_none_or(|field| field.parse::<i64>().is_err())
}

/// Where each of [`PLAN_COLUMNS`] is in a header line, or what is wrong with it.
fn header_order(record: &csv::StringRecord) -> Result<[usize; 3], String> {
    let mut found: [Option<usize>; 3] = [None; 3];
    let mut unknown = Vec::new();
    let mut repeated = Vec::new();
    for (position, field) in record.iter().enumerate() {
        match PLAN_COLUMNS
            .iter()
            .position(|c| field.eq_ignore_ascii_case(c))
        {
            Some(column) if found[column].is_some() => repeated.push(PLAN_COLUMNS[column]),
            Some(column) => found[column] = Some(position),
            None => unknown.push(format!("'{field}'")),
        }
    }
    let missing: Vec<&str> = (0..3)
        .filter(|column| found[*column].is_none())
        .map(|column| PLAN_COLUMNS[column])
        .collect();
    let mut problems = Vec::new();
    if !unknown.is_empty() {
        problems.push(format!("not a column: {}", unknown.join(", ")));
    }
    if !repeated.is_empty() {
        problems.push(format!("named twice: {}", repeated.join(", ")));
    }
    if !missing.is_empty() {
        problems.push(format!("missing: {}", missing.join(", ")));
    }
    match (problems.is_empty(), found) {
        (true, [Some(topic), Some(partition), Some(offset)]) => Ok([topic, partition, offset]),
        _ => Err(problems.join("; ")),
    }
}

/// Writes a plan as CSV. A file already there is never replaced: it may be an undo plan, the
/// only record of the offsets before an earlier reset (re-running a command must not lose
/// it). A terminal or a pipe (`/dev/stdout`) is no plan file, and is written to.
pub fn write_plan<'a>(
    path: &Path,
    rows: impl Iterator<Item = (&'a str, i32, Option<i64>)>,
) -> anyhow::Result<()> {
    let special = std::fs::metadata(path).is_ok_and(|found| !found.is_file());
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(!special)
        .open(path)
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::AlreadyExists => anyhow!(
                "{} already exists, and may be the undo plan of an earlier reset; give another path, or move that one away first",
                path.display()
            ),
            _ => anyhow!(error).context(format!("could not create {}", path.display())),
        })?;
    let mut writer = csv::Writer::from_writer(file);
    writer.write_record(PLAN_COLUMNS)?;
    for (topic, partition, offset) in rows {
        let offset = offset.map(|o| o.to_string()).unwrap_or_default();
        writer.write_record([topic.to_string(), partition.to_string(), offset])?;
    }
    writer
        .flush()
        .with_context(|| format!("could not write {}", path.display()))?;
    Ok(())
}

/// Partitions named in a warning at most.
const PARTITIONS_NAMED: usize = 10;

/// Partitions, as `(topic, partition)`.
type WithoutRows = Vec<(String, i32)>;

/// The columns of a plan file, as `--export` writes and `--from-file` reads them.
const PLAN_COLUMNS: [&str; 3] = ["topic", "partition", "offset"];

/// The plan's `topic,partition,offset` lines, an empty offset for "no committed offset".
fn plan_lines(plan: &[PlannedOffset]) -> Vec<Vec<String>> {
    plan.iter()
        .map(|p| {
            let new = p.new.map(|o| o.to_string()).unwrap_or_default();
            vec![p.topic.clone(), p.partition.to_string(), new]
        })
        .collect()
}

/// `undo_file`: the undo plan of a reset applied, `None` for one shown. `forgetting`: in JSON, a plan that deletes the group says so, and lists the group's
/// offsets outside the plan that it commits again. `without_inbox_rows` (--to-inbox): in
/// JSON, the partitions left as they are because the inbox holds no rows of them.
fn print_plan(
    group: &str,
    plan: &[PlannedOffset],
    undo_file: Option<&Path>,
    forgetting: &Forgetting,
    without_inbox_rows: Option<&[(String, i32)]>,
    output: &Output,
) -> anyhow::Result<()> {
    let applied = undo_file.is_some();
    let (before, after) = if applied {
        ("BEFORE", "AFTER")
    } else {
        ("CURRENT", "NEW")
    };
    match output.format {
        Format::Json => {
            let mut report = json!({ "group": group, "applied": applied, "partitions": plan });
            if let Some(path) = undo_file {
                report["undo_file"] = path.display().to_string().into();
            }
            if let Forgetting::DeleteGroup { others } = forgetting {
                report["deletes_group"] = json!(true);
                report["commits_again"] = others
                    .iter()
                    .map(|(topic, partition, offset)| {
                        json!({ "topic": topic, "partition": partition, "offset": offset })
                    })
                    .collect();
            }
            if let Some(left) = without_inbox_rows {
                report["partitions_without_inbox_rows"] = left
                    .iter()
                    .map(|(topic, partition)| json!({ "topic": topic, "partition": partition }))
                    .collect();
            }
            output.print_json(&report)
        }
        Format::Csv => output.print_csv(&PLAN_COLUMNS, &plan_lines(plan)),
        Format::Table => {
            let mut t = table(
                &["TOPIC", "PARTITION", before, after, "LOG-START", "LOG-END"],
                &[1, 2, 3, 4, 5],
            );
            for p in plan {
                t.add_row(vec![
                    p.topic.clone(),
                    p.partition.to_string(),
                    or_dash(p.current),
                    or_dash(p.new),
                    p.log_start.to_string(),
                    p.log_end.to_string(),
                ]);
            }
            output.print(t.to_string());
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_committed_offset_outside_the_log_is_explained() {
        let at = |committed: Option<i64>| PartitionOffsets {
            topic: "orders".to_string(),
            partition: 1,
            committed,
            log_start: 5,
            log_end: 9,
            lag: None,
        };
        assert_eq!(out_of_range(&at(None)), None);
        assert_eq!(out_of_range(&at(Some(5))), None);
        assert_eq!(out_of_range(&at(Some(9))), None);
        assert!(out_of_range(&at(Some(12)))
            .unwrap()
            .starts_with("orders:1: the committed offset 12 is past the log end 9 (a topic"));
        // No command can check those messages against the inbox: none is suggested.
        assert_eq!(
            out_of_range(&at(Some(2))).unwrap(),
            "orders:1: the committed offset 2 is below the log start 5: 3 message(s) were \
             deleted before the group committed past them, so nothing can read them again to \
             tell whether they were processed; the group's next start there goes where its \
             auto.offset.reset says"
        );
    }

    #[test]
    fn runs_of_skipped_offsets_read_as_ranges() {
        assert_eq!(runs_text(&[(5, 5)], 1), "5");
        assert_eq!(runs_text(&[(4, 6), (9, 9)], 4), "4-6, 9");
        // Only the first runs are read: the rest is counted.
        assert_eq!(runs_text(&[(0, 1), (3, 3)], 10), "0-1, 3, and 7 more");
    }

    /// The wordings the integration tests cannot stop at (they hold a request to stop in
    /// the deletion and in the commit after it).
    #[test]
    fn a_reset_stopped_at_once_says_what_it_leaves() {
        let (undo, recommit) = (Path::new("u.csv"), Path::new("u.recommit.csv"));
        let said = |step, recommit| if_stopped_at(step, "g", undo, recommit);
        assert_eq!(
            said(ResetStep::Planned, Some(recommit)),
            "nothing was sent to the brokers, so group 'g' keeps its offsets (u.csv and \
             u.recommit.csv can go)"
        );
        assert_eq!(
            said(ResetStep::Deleting, None),
            "the deletion of group 'g' was sent but not answered (`inboxctl offsets show \
             --group g` tells whether it went); the undo plan puts back the old offsets: \
             inboxctl offsets reset --group g --from-file u.csv --execute"
        );
        assert_eq!(
            said(ResetStep::Committing, None),
            "the new offsets of group 'g' were sent but not answered (`inboxctl offsets show \
             --group g` tells whether they were committed); the undo plan puts back the old \
             ones: inboxctl offsets reset --group g --from-file u.csv --execute"
        );
        assert_eq!(
            said(ResetStep::Committed, Some(recommit)),
            "the new offsets of group 'g' are committed, but were not read back (`inboxctl \
             offsets show --group g` shows them); the undo plan puts back the old ones: \
             inboxctl offsets reset --group g --from-file u.csv --execute"
        );
    }

    /// Pasted into a shell, the commands given keep each argument whole and unexpanded.
    #[test]
    fn commands_to_paste_are_quoted_for_the_shell() {
        assert_eq!(
            apply_command("billing-service", Path::new("undo.csv")),
            "inboxctl offsets reset --group billing-service --from-file undo.csv --execute"
        );
        assert_eq!(
            apply_command("ops team", Path::new("my plans/undo $1.csv")),
            "inboxctl offsets reset --group 'ops team' --from-file 'my plans/undo $1.csv' --execute"
        );
        assert_eq!(
            inboxctl_command(&["offsets", "show", "--group", "it's"]),
            r#"inboxctl offsets show --group "it's""#
        );
        // What a shell makes of them: each word back as it was.
        let nasty = [
            "ops team",
            "a\"b'c",
            "$HOME",
            "x;rm -rf y",
            "`id`",
            "*",
            "~",
            "-",
        ];
        let line = inboxctl_command(&nasty);
        let script = r#"shift; printf '%s\n' "$@""#;
        let words = line.strip_prefix("inboxctl ").unwrap();
        let echoed = std::process::Command::new("sh")
            .args(["-c", &format!("set -- x {words}; {script}")])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(echoed.stdout).unwrap(),
            nasty.map(|word| format!("{word}\n")).concat(),
            "{line}"
        );
        let said = if_stopped_at(
            ResetStep::Committing,
            "ops team",
            Path::new("u.csv"),
            Some(Path::new("u.recommit.csv")),
        );
        assert_eq!(
            said,
            "group 'ops team' was deleted, and its offsets were sent but not answered; commit \
             them with: inboxctl offsets reset --group 'ops team' --from-file u.recommit.csv --execute"
        );
    }

    #[test]
    fn plans_round_trip_through_csv() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.csv");
        let rows = [
            ("orders", 0, Some(5)),
            ("orders", 1, None),
            ("orders", 2, Some(0)),
        ];
        write_plan(&path, rows.into_iter()).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "topic,partition,offset\norders,0,5\norders,1,\norders,2,0\n"
        );
        let plan = read_plan(&path).unwrap();
        let read: Vec<(&str, i32, Option<i64>)> = plan
            .iter()
            .map(|((topic, partition), offset)| (topic.as_str(), *partition, *offset))
            .collect();
        assert_eq!(read, rows);
    }

    #[test]
    fn a_plan_header_names_the_columns_in_any_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.csv");
        let read = |text: &str| -> anyhow::Result<Vec<(String, i32, Option<i64>)>> {
            std::fs::write(&path, text).unwrap();
            Ok(read_plan(&path)?
                .into_iter()
                .map(|((topic, partition), offset)| (topic, partition, offset))
                .collect())
        };
        let expected = vec![
            ("orders".to_string(), 0, Some(5)),
            ("orders".into(), 1, None),
        ];
        for text in [
            "orders,0,5\norders,1,\n",
            "topic,partition,offset\norders,0,5\norders,1,\n",
            "partition,offset,topic\n0,5,orders\n1,,orders\n",
            " Offset ,TOPIC, Partition\n5,orders,0\n,orders,1\n",
        ] {
            assert_eq!(read(text).unwrap(), expected, "{text:?}");
        }
        // A topic may be called `topic`: a partition number says the line is data.
        assert_eq!(
            read("topic,0,5\n").unwrap(),
            vec![("topic".to_string(), 0, Some(5))]
        );
        for (text, problem) in [
            (
                "topic,part,offset\n",
                "(not a column: 'part'; missing: partition)",
            ),
            ("topic,offset\n", "(missing: partition)"),
            (
                "topic,topic,offset\n",
                "(named twice: topic; missing: partition)",
            ),
            ("topic,partition,offset,note\n", "(not a column: 'note')"),
        ] {
            let error = read(text).unwrap_err();
            assert!(crate::error::is_usage(&error), "{text:?}");
            let message = format!("{error:#}");
            assert!(
                message.contains("plan.csv:1: the header line '")
                    && message.contains(
                        "' does not name the plan's columns: expected topic, partition, offset, each once, in any order"
                    )
                    && message.ends_with(problem),
                "{text:?}: {message}"
            );
        }
    }

    #[test]
    fn bad_plan_lines_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.csv");
        std::fs::write(&path, "orders,0,5\norders,x,1\n").unwrap();
        let message = format!("{:#}", read_plan(&path).unwrap_err());
        assert!(
            message.contains("plan.csv:2: 'x' is not a partition number"),
            "{message}"
        );
        std::fs::write(&path, "orders,0\n").unwrap();
        let message = format!("{:#}", read_plan(&path).unwrap_err());
        assert!(
            message.contains("expected topic,partition,offset but found 2 field(s)"),
            "{message}"
        );
        // After a good line too, and counting blank lines and CRLF line ends.
        std::fs::write(&path, "topic,partition,offset\norders,0,5\norders,1\n").unwrap();
        let message = format!("{:#}", read_plan(&path).unwrap_err());
        assert!(
            message.contains("plan.csv:3: expected topic,partition,offset but found 2 field(s)"),
            "{message}"
        );
        std::fs::write(&path, "orders,0,5\r\n\r\n\r\norders,1,-4\r\n").unwrap();
        let message = format!("{:#}", read_plan(&path).unwrap_err());
        assert!(
            message.contains("plan.csv:4: '-4' is not an offset"),
            "{message}"
        );
        for (text, problem) in [
            (",1,2\n", "plan.csv:2: the topic name is empty"),
            ("   ,1,2\n", "plan.csv:2: the topic name is empty"),
            (
                "or/ders,1,2\n",
                "plan.csv:2: 'or/ders' is not a Kafka topic name",
            ),
        ] {
            std::fs::write(&path, format!("orders,0,5\n{text}")).unwrap();
            let error = read_plan(&path).unwrap_err();
            assert!(crate::error::is_usage(&error), "{text:?}");
            let message = format!("{error:#}");
            assert!(message.contains(problem), "{text:?}: {message}");
        }
        std::fs::write(&path, b"orders,0,5\n\norders,1,\xff\n").unwrap();
        let message = format!("{:#}", read_plan(&path).unwrap_err());
        assert!(message.contains("plan.csv:3: not valid CSV"), "{message}");
    }
}
