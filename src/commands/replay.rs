//! `replay`: re-drive a range of a topic through an idempotent handler.
//!
//! Each batch is one transaction: a multi-row inbox insert that returns which event ids are
//! new, then the SQL handler for those only. A batch that fails is retried message by message,
//! so one poison message neither blocks the rest nor applies anything twice. The reader is an
//! assigned consumer: it joins no group and commits nothing. Re-running is always safe: what
//! the inbox holds is skipped.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{json, Value};
use sqlx::AnyConnection;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::task::block_in_place;

use crate::cli::{Format, OnError, OnMissingId, ReplayArgs};
use crate::commands::{retried, StopRequest};
use crate::error::usage;
use crate::event_id::{id_hash, EventIdSource};
use crate::exit::ExitStatus;
use crate::handler::{self, Statement};
use crate::kafka::{read_range, Fetched, Kafka};
use crate::output::{or_dash, table, Output};
use crate::store::pg_pipeline::{PgPipeline, SentAsText};
use crate::store::{
    is_connection_lost, postgres, Backend, BatchError, CreateMode, Store, INBOX_TABLE,
};
use crate::time::parse_timestamp;

/// Where the replay starts in each partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    Earliest,
    Offset(i64),
    PerPartition(BTreeMap<i32, i64>),
    Time(DateTime<Utc>),
    Ago(Duration),
    Committed(String),
}

/// Where it stops (exclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    Latest,
    Offset(i64),
    Time(DateTime<Utc>),
}

pub fn parse_start(text: &str) -> Result<Start, String> {
    let text = text.trim();
    if text == "earliest" {
        return Ok(Start::Earliest);
    }
    if let Some(group) = text.strip_prefix("committed:") {
        if group.is_empty() {
            return Err("committed: needs a group, e.g. committed:billing".into());
        }
        return Ok(Start::Committed(group.to_string()));
    }
    if let Some(ago) = text.strip_prefix('-') {
        if ago.parse::<u64>().is_ok() {
            return Err(format!(
                "'{text}' is a negative offset; offsets start at 0, and a time ago takes a unit, e.g. -{ago}h"
            ));
        }
        return crate::time::parse_ago(text).map(Start::Ago);
    }
    if let Ok(offset) = text.parse::<i64>() {
        return Ok(Start::Offset(offset));
    }
    // P:OFFSET,…, each pair read once: all of them make a start; a list with some wrong is
    // refused naming the first of those.
    let pairs: Vec<Result<(i32, i64), &str>> = text
        .split(',')
        .map(|pair| {
            let read = |(p, o): (&str, &str)| {
                let partition = p.trim().parse::<i32>().ok().filter(|p| *p >= 0)?;
                Some((partition, o.trim().parse::<i64>().ok().filter(|o| *o >= 0)?))
            };
            pair.split_once(':').and_then(read).ok_or(pair.trim())
        })
        .collect();
    if let Ok(pairs) = pairs.iter().copied().collect::<Result<Vec<_>, _>>() {
        let mut map = BTreeMap::new();
        for (partition, offset) in pairs {
            match map.insert(partition, offset) {
                Some(earlier) if earlier != offset => {
                    return Err(format!(
                        "partition {partition} is given two starts, {earlier} and {offset}"
                    ))
                }
                _ => {}
            }
        }
        return Ok(Start::PerPartition(map));
    }
    if pairs.len() > 1 && pairs.iter().any(Result::is_ok) {
        if let Some(Err(bad)) = pairs.iter().find(|pair| pair.is_err()) {
            return Err(format!(
                "'{bad}' in '{text}' is not P:OFFSET (a partition and an offset, both 0 or more)"
            ));
        }
    }
    parse_timestamp(text).map(Start::Time).map_err(|error| {
        // A date (`0000-01-01`, `2026-13-01`): the timestamp's own reason.
        let dated = text.len() >= 10
            && text.as_bytes()[4] == b'-'
            && text.as_bytes()[..4].iter().all(u8::is_ascii_digit);
        match dated {
            true => error,
            false => format!("'{text}' is not a start; expected earliest, OFFSET, P:OFFSET,…, a timestamp, -DURATION or committed:GROUP"),
        }
    })
}

pub fn parse_end(text: &str) -> Result<End, String> {
    let text = text.trim();
    if text == "latest" {
        return Ok(End::Latest);
    }
    if let Ok(offset) = text.parse::<i64>() {
        if offset < 0 {
            return Err(format!("{offset} is not an offset"));
        }
        return Ok(End::Offset(offset));
    }
    parse_timestamp(text)
        .map(End::Time)
        .map_err(|_| format!("'{text}' is not an end; expected latest, OFFSET or a timestamp"))
}

/// One message as replay needs it. Key, header values and payload stay bytes: an Avro or
/// Protobuf one is not text, and must reach the handler as it was.
#[derive(Debug, Clone)]
struct Replayed {
    partition: i32,
    offset: i64,
    key: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
    timestamp: Option<i64>,
    payload: Option<Vec<u8>>,
    event_id: Option<String>,
}

/// Bytes as JSON: their text where they are UTF-8, else null and their base64, which the
/// line carries in a field of its own. No bytes at all is null with nothing beside it.
fn text_or_base64(bytes: Option<&[u8]>) -> (Value, Option<Value>) {
    use base64::Engine;
    match bytes.map(|b| (std::str::from_utf8(b), b)) {
        None => (Value::Null, None),
        Some((Ok(text), _)) => (json!(text), None),
        Some((Err(_), bytes)) => (
            Value::Null,
            Some(json!(
                base64::engine::general_purpose::STANDARD.encode(bytes)
            )),
        ),
    }
}

/// A key's or payload's value for an SQL placeholder: its text, null when there is none, and
/// no value at all for bytes that are not UTF-8 (see [`Replayed::to_json`]).
fn text_value(bytes: Option<&[u8]>) -> Option<Value> {
    match text_or_base64(bytes) {
        (_, Some(_)) => None,
        (text, None) => Some(text),
    }
}

impl Replayed {
    fn from_message(topic: &str, message: &Fetched<'_>, source: &EventIdSource) -> Replayed {
        Replayed {
            partition: message.partition(),
            offset: message.offset(),
            key: message.key().map(<[u8]>::to_vec),
            headers: message
                .headers()
                .into_iter()
                .map(|(name, value)| (name, value.map(<[u8]>::to_vec)))
                .collect(),
            timestamp: message.timestamp(),
            payload: message.payload().map(<[u8]>::to_vec),
            event_id: source.extract(topic, message).map(Cow::into_owned),
        }
    }

    /// See [`EventIdSource::why_missing`].
    fn why_no_event_id(&self, args: &ReplayArgs) -> String {
        let source = args.event_id_from.clone().unwrap_or(EventIdSource::Default);
        // The last header of a name, as Kafka's clients read one given twice.
        let header = |name: &str| {
            self.headers
                .iter()
                .rev()
                .find(|(key, _)| key == name)
                .and_then(|(_, value)| value.as_deref())
        };
        source.why_missing(self.key.as_deref(), header, self.payload.as_deref())
    }

    fn payload_json(&self) -> Option<Value> {
        self.payload
            .as_deref()
            .and_then(|p| serde_json::from_slice(p).ok())
    }

    /// The line the exec handler reads, and the dead-letter record. Bytes that are not UTF-8
    /// text go as base64 in a field of their own (`key_base64`, `headers_base64`,
    /// `payload_base64`), the text field null.
    fn to_json(&self, topic: &str) -> Value {
        let mut headers = serde_json::Map::new();
        let mut binary_headers = serde_json::Map::new();
        // A name given twice has its last value (as the event id has): a later value
        // replaces an earlier one in both objects, and a text one drops an earlier base64.
        for (name, value) in &self.headers {
            let (text, binary) = text_or_base64(value.as_deref());
            headers.insert(name.clone(), text);
            match binary {
                Some(binary) => binary_headers.insert(name.clone(), binary),
                None => binary_headers.remove(name),
            };
        }
        let (key, binary_key) = text_or_base64(self.key.as_deref());
        let (payload, binary_payload) = match self.payload_json() {
            Some(json) => (json, None),
            None => text_or_base64(self.payload.as_deref()),
        };
        let mut line = json!({
            "event_id": self.event_id,
            "topic": topic,
            "partition": self.partition,
            "offset": self.offset,
            "key": key,
            "headers": headers,
            "timestamp": self.timestamp,
            "payload": payload,
        });
        if let Some(binary) = binary_key {
            line["key_base64"] = binary;
        }
        if !binary_headers.is_empty() {
            line["headers_base64"] = Value::Object(binary_headers);
        }
        if let Some(binary) = binary_payload {
            line["payload_base64"] = binary;
        }
        line
    }
}

#[derive(Debug, Default, Clone, Serialize)]
struct PartitionSummary {
    partition: i32,
    from: i64,
    to: i64,
    messages: u64,
    processed: u64,
    skipped_duplicate: u64,
    failed: u64,
    missing_id: u64,
    /// The last offset whose batch finished (committed or rolled back as a whole).
    last_offset: Option<i64>,
}

enum Handler {
    Sql(Vec<Statement>),
    Exec(Box<ExecHandler>),
    DryRun,
}

struct ExecHandler {
    /// The --exec command line, as errors name it.
    command: String,
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    replies: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    /// Whether it has answered a message yet: until then, the shell's 127 or 126 means the
    /// program could not be started.
    answered: bool,
    /// `--handler-timeout`: how long one message may take.
    timeout: Option<Duration>,
    /// `--on-error skip`: how many handlers in a row before this one failed before answering
    /// anything (see [`restart_exec`]).
    failed_unanswered: u32,
    /// The watchdog that ends the handler's process group once this end of its pipe closes,
    /// and the pipe: see [`start_watchdog`]. Declared last, so dropped last.
    watchdog: Option<(tokio::process::Child, tokio::process::ChildStdin)>,
}

const NO_HANDLER: &str =
    "replay needs a handler: --sql FILE or --exec CMD (or --dry-run to see what would run)";

pub async fn run(args: ReplayArgs, output: Output) -> anyhow::Result<ExitStatus> {
    if args.sql.is_none() && args.exec.is_none() && !args.dry_run {
        return Err(usage(NO_HANDLER));
    }
    check_params(&args.param)?;
    if let Some(command) = &args.exec {
        check_exec(command, args.dry_run)?;
        if let Some((name, _)) = args.param.first() {
            return Err(usage(format!(
                "--param {name}: --param binds a placeholder of a SQL handler (--sql); an exec \
                 handler gets each message whole, as a JSON line"
            )));
        }
    } else if args.handler_timeout.is_some() {
        let why = match args.sql {
            Some(_) => {
                "; a SQL handler runs in the inbox's transaction, which the server's \
                 statement_timeout or max_statement_time bounds"
            }
            None => "",
        };
        return Err(usage(format!(
            "--handler-timeout applies to an exec handler (--exec) only{why}"
        )));
    }
    let kafka = Kafka::new(&args.kafka)?;
    let ranges = block_in_place(|| resolve_ranges(&kafka, &args, &output))?;
    let store = super::connect(&args.database, CreateMode::MustExist, &output).await?;
    // Closed on every path, an error's too: a connection dropped at exit is a lost client to
    // the server. So is the handler's pipeline, which the replay leaves here.
    let mut pipeline = None;
    let result = replay(&store, &args, &output, &kafka, ranges, &mut pipeline).await;
    if let Some(pipeline) = pipeline {
        pipeline.close().await;
    }
    store.close().await;
    result
}

async fn replay(
    store: &Store,
    args: &ReplayArgs,
    output: &Output,
    kafka: &Kafka,
    ranges: Vec<(i32, i64, i64)>,
    pipeline: &mut Option<PgPipeline>,
) -> anyhow::Result<ExitStatus> {
    store.require_inbox().await?;
    store.require_text_event_ids().await?;
    if !args.dry_run {
        store.require_insert_returning().await?;
    }
    let widths = inbox_widths(store).await?;
    let id_key = store.id_key().await?;
    if let Some(width) = widths.consumer {
        let length = args.consumer.chars().count();
        if length > width {
            return Err(usage(format!(
                "--consumer is {length} characters long; the inbox's consumer column holds at most {width}"
            )));
        }
    }
    super::require_held_consumer(store, &args.consumer, "--consumer").await?;
    // Checked in a dry run too: it says whether the real run could go.
    let statements = match &args.sql {
        Some(path) => {
            let bytes = std::fs::read(path)
                .with_context(|| format!("could not read the SQL handler {}", path.display()))?;
            // A byte-order mark of UTF-16 (a Windows "Unicode" file) is said as such, before
            // the bytes are read as UTF-8.
            if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
                return Err(usage(format!(
                    "the SQL handler {} is UTF-16 text (it starts with a byte-order mark); save \
                     it as UTF-8",
                    path.display()
                )));
            }
            let text = String::from_utf8(bytes).map_err(|error| {
                usage(format!(
                    "the SQL handler {} is not UTF-8 text ({error}); save it as UTF-8",
                    path.display()
                ))
            })?;
            let mut statements = handler::parse(&text, store.dialect)
                .with_context(|| format!("in {}", path.display()))?;
            check_statements(store, &mut statements, path).await?;
            if store.backend == Backend::Postgres {
                let untyped = statements.iter().enumerate().filter(|(_, statement)| {
                    statement.sent_as_text.is_none() && !statement.params.is_empty()
                });
                for (index, _) in untyped {
                    output.debug(format!(
                        "statement {} of the handler: the server could not type all its \
                         parameters; where it runs on the main connection, its values go with \
                         the types of their JSON values",
                        index + 1
                    ));
                }
            }
            Some(statements)
        }
        None => None,
    };
    let mut handler = if args.dry_run {
        Handler::DryRun
    } else if let Some(statements) = statements {
        Handler::Sql(statements)
    } else if let Some(command) = &args.exec {
        Handler::Exec(Box::new(start_exec(command, args.handler_timeout)?))
    } else {
        return Err(usage(NO_HANDLER));
    };
    let pointers: BTreeMap<String, String> = args.param.iter().cloned().collect();
    // On PostgreSQL the handler's statements of a batch go out pipelined on a connection of
    // their own; where that connection cannot be made (TLS required, say), one at a time.
    *pipeline = match &handler {
        Handler::Sql(statements)
            if store.backend == Backend::Postgres
                && std::env::var("INBOXCTL_PG_PIPELINE").as_deref() != Ok("0") =>
        {
            match PgPipeline::connect(store.url.connect_url(), statements).await {
                Ok(pipeline) => {
                    output.debug(if pipeline.is_set_based() {
                        "the handler runs once per batch, as a temporary function over the batch's values, on a connection of its own"
                    } else {
                        "handler statements go out pipelined on a connection of their own"
                    });
                    if pipeline.overlaps() {
                        output.debug("two such connections: a batch's inbox rows go in while the batch before it is handled and committed");
                    }
                    Some(pipeline)
                }
                Err(error) => {
                    output.debug(format!(
                        "no pipelined connection ({error:#}); handler statements go one at a time"
                    ));
                    None
                }
            }
        }
        Handler::Sql(_) if store.backend == Backend::Postgres => {
            output.debug(
                "INBOXCTL_PG_PIPELINE=0: handler statements go one at a time on the main connection",
            );
            None
        }
        _ => None,
    };
    // Opened before anything is read, so that a path it cannot write fails the run before a
    // handler runs; made here, it goes again if nothing failed (a file that exists after a
    // run says that something did).
    let dead_letter_made = args
        .dead_letter
        .as_deref()
        .filter(|path| !args.dry_run && !path.exists());
    // A dry run writes nothing, the dead-letter file included: the real run would write the
    // same lines again.
    let mut dead_letter = match &args.dead_letter {
        Some(path) if !args.dry_run => Some(open_dead_letter(path)?),
        Some(path) => {
            check_dead_letter(path)?;
            None
        }
        None => None,
    };

    let mut summaries: BTreeMap<i32, PartitionSummary> = ranges
        .iter()
        .map(|&(partition, from, to)| {
            (
                partition,
                PartitionSummary {
                    partition,
                    from,
                    to,
                    ..Default::default()
                },
            )
        })
        .collect();
    let total: i64 = ranges.iter().map(|(_, from, to)| to - from).sum();
    let progress = output.progress(Some(total.max(0) as u64), "messages");

    let (stop, signal) = super::stop_on_signals(super::OnStop::AfterTheBatch, *output)?;
    note_done(&stop, args, &summaries);
    stop.before_the_first_batch();

    let started = Instant::now();
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<Vec<Replayed>>(4);
    let reader = {
        // The handler, not the broker, sets the pace: a small prefetch queue (librdkafka's
        // default is 64 MiB) and small fetches keep memory flat however long the range. A
        // fetch returns at least one whole record batch per partition however small the
        // limits, so these bound memory without starving the handler.
        let client = kafka.reader(&[
            ("queued.max.messages.kbytes", "1024"),
            ("fetch.max.bytes", "1048576"),
            ("max.partition.fetch.bytes", "262144"),
        ])?;
        let topic = args.topic.clone();
        let source = args.event_id_from.clone().unwrap_or(EventIdSource::Default);
        let idle_limit = kafka.timeout();
        let chunk = args.batch_size as usize;
        tokio::task::spawn_blocking(move || {
            let read = read_range(
                &client,
                &topic,
                &ranges,
                idle_limit,
                chunk,
                &sender,
                || Vec::with_capacity(chunk),
                |messages, m| messages.push(Replayed::from_message(&topic, m, &source)),
            );
            // The last batch is taken while the consumer closes.
            drop(sender);
            drop(client);
            read
        })
    };

    let mut failure: Option<anyhow::Error> = None;
    let mut interrupted = false;
    // The dry run's "would process" ids so far: a producer duplicate in a later batch would be
    // skipped by the real run (the inbox holds it by then), so it is a "would skip" here too.
    // Every id a dry run would process, as hashes: a long range stays small in memory.
    let mut would_process: HashSet<u128> = HashSet::new();
    // The batch after the current one, when it was already read: its inbox rows may be
    // inserted while the current batch's handler runs (see PgPipeline::run).
    let mut peeked: Option<Vec<Replayed>> = None;
    // The ids of `peeked` the inbox cannot hold, found when its rows were inserted ahead:
    // not asked again when it is handled.
    let mut peeked_unheld: Option<Unheld> = None;
    // When the handler's pipelined connections were lost and could not be made again.
    let mut pipeline_lost_at: Option<Instant> = None;
    // A batch that fails ends the run; the summary still shows the batches before it, and
    // the error what became of this one.
    let mut settled = summaries.clone();
    macro_rules! or_fail {
        ($result:expr) => {
            match $result {
                Ok(value) => value,
                Err(error) => {
                    summaries = std::mem::take(&mut settled);
                    failure = Some(error);
                    break;
                }
            }
        };
    }
    loop {
        let batch = match peeked.take() {
            Some(batch) => batch,
            None => {
                // A stop while no batch is in flight has nothing to wait for.
                match stop.unless_asked(receiver.recv()).await {
                    Some(Some(batch)) => batch,
                    Some(None) => break,
                    None => {
                        interrupted = true;
                        break;
                    }
                }
            }
        };
        if stop.requested() {
            interrupted = true;
            break;
        }
        settled.clone_from(&summaries);
        let batch_len = batch.len();
        let mut with_id = Vec::with_capacity(batch_len);
        // Where each message with an id stands in the batch, and the messages without one:
        // the dead-letter file gets both in the order they were read.
        let mut positions = Vec::with_capacity(batch_len);
        let mut without_id: Vec<(usize, Replayed, String)> = Vec::new();
        // Every message of the batch counts for the last offset, those without an id too.
        let mut last_offsets: BTreeMap<i32, i64> = BTreeMap::new();
        for (position, message) in batch.into_iter().enumerate() {
            let summary = summaries
                .get_mut(&message.partition)
                .expect("read only assigned partitions");
            summary.messages += 1;
            let last = last_offsets
                .entry(message.partition)
                .or_insert(message.offset);
            *last = (*last).max(message.offset);
            if message.event_id.is_some() {
                positions.push(position);
                with_id.push(message);
                continue;
            }
            summary.missing_id += 1;
            let error = format!(
                "no event id ({}) in message {}:{} ({})",
                source_name(args),
                message.partition,
                message.offset,
                message.why_no_event_id(args)
            );
            // The dry run stops here too: its counts are those of the real run.
            let stop_here = args.on_missing_id == OnMissingId::Fail;
            if stop_here {
                failure = Some(anyhow!("{error}; stopping (--on-missing-id skip goes on)"));
            }
            without_id.push((position, message, error));
            if stop_here {
                break;
            }
        }
        // --on-missing-id fail: the messages before the one without an id are applied, so
        // that the run stops exactly there and every message read is accounted for.
        if failure.is_some() && with_id.is_empty() {
            for (_, message, error) in &without_id {
                or_fail!(write_dead_letter(
                    &mut dead_letter,
                    &args.topic,
                    message,
                    error
                ));
            }
            note_last_offsets(&mut summaries, last_offsets);
            break;
        }
        // Ids the inbox cannot hold fail on their own; the handler sees the others.
        let ids: Vec<&str> = with_id
            .iter()
            .map(|m| m.event_id.as_deref().unwrap_or_default())
            .collect();
        let unheld = match peeked_unheld.take() {
            Some(unheld) => unheld,
            None => or_fail!(Unheld::of(store, args, &ids, &[], output).await),
        };
        let unstorable: Vec<(usize, String)> = ids
            .iter()
            .enumerate()
            .filter_map(|(index, id)| {
                unstorable_id(store, id, widths.event_id, &unheld).map(|why| (index, why))
            })
            .collect();
        let mut accepted: Vec<usize> = Vec::new();
        let handled: Vec<Replayed>;
        let for_handler: &[Replayed] = if unstorable.is_empty() {
            &with_id
        } else {
            accepted = (0..with_id.len())
                .filter(|index| !unstorable.iter().any(|(i, _)| i == index))
                .collect();
            handled = accepted.iter().map(|&i| with_id[i].clone()).collect();
            &handled
        };
        let mut outcome = match &mut handler {
            Handler::DryRun => {
                let with_id = for_handler;
                let ids: Vec<&str> = with_id
                    .iter()
                    .filter_map(|m| m.event_id.as_deref())
                    .collect();
                let done = or_fail!(processed_ids(output, store, &args.consumer, &ids).await);
                let mut outcome = Outcome::default();
                for (index, m) in with_id.iter().enumerate() {
                    let id = m.event_id.as_deref().unwrap_or_default();
                    if done.contains(id) || !would_process.insert(id_hash(id_key.of(id))) {
                        outcome.duplicates.push(index);
                    } else {
                        outcome.processed.push(index);
                        if unheld.key_index_untried(store, &args.consumer, id) {
                            output.warn(format!(
                                "{}:{}: the real run may fail on it: its event id is {} \
                                 bytes long; {}",
                                m.partition,
                                m.offset,
                                id.len(),
                                postgres::KEY_INDEX_LIMIT
                            ));
                        }
                    }
                }
                outcome
            }
            Handler::Sql(statements) => {
                let job = SqlJob {
                    store,
                    statements,
                    consumer: &args.consumer,
                    topic: &args.topic,
                    batch: for_handler,
                    pointers: &pointers,
                    output,
                };
                let next = match pipeline.as_ref() {
                    Some(pipeline) if pipeline.overlaps() => {
                        peeked = receiver.try_recv().ok();
                        let next_ids: Vec<&str> = peeked
                            .iter()
                            .flatten()
                            .filter_map(|m| m.event_id.as_deref())
                            .collect();
                        // The ids in hand are known to fit, and their rows, inserted ahead,
                        // are not committed yet: a try of one of them would wait for them.
                        let unheld =
                            or_fail!(Unheld::of(store, args, &next_ids, for_handler, output).await);
                        let next = peeked.as_deref().map(|next| {
                            inbox_rows(next.iter().filter(|m| {
                                m.event_id.as_deref().is_some_and(|id| {
                                    unstorable_id(store, id, widths.event_id, &unheld).is_none()
                                })
                            }))
                        });
                        peeked_unheld = peeked.is_some().then_some(unheld);
                        next
                    }
                    _ => None,
                };
                or_fail!(apply_sql(job, pipeline, &mut pipeline_lost_at, next.as_deref()).await)
            }
            Handler::Exec(exec) => {
                let skip = args.on_error == OnError::Skip;
                let job = apply_exec(
                    output,
                    store,
                    exec,
                    &args.consumer,
                    &args.topic,
                    for_handler,
                    skip,
                );
                or_fail!(job.await)
            }
        };
        if !unstorable.is_empty() {
            outcome.remap(&accepted);
            outcome.failed.extend(unstorable);
            outcome.failed.sort_by_key(|(index, _)| *index);
        }
        // An exec handler that stopped partway: the batch is what came before the message it
        // did not answer, which a re-run reads again with the rest.
        if let Some((at, error)) = outcome.stopped.take() {
            let cut = positions[at];
            outcome.failed.retain(|(index, _)| positions[*index] < cut);
            let mut unreached = |message: &Replayed, missing_id: bool| {
                let summary = summaries.get_mut(&message.partition).unwrap();
                summary.messages -= 1;
                summary.missing_id -= u64::from(missing_id);
            };
            for (index, message) in with_id.iter().enumerate() {
                if positions[index] >= cut {
                    unreached(message, false);
                }
            }
            without_id.retain(|(position, message, _)| {
                let reached = *position < cut;
                if !reached {
                    unreached(message, true);
                }
                reached
            });
            last_offsets = with_id
                .iter()
                .enumerate()
                .filter(|(index, _)| positions[*index] < cut)
                .map(|(_, message)| message)
                .chain(without_id.iter().map(|(_, message, _)| message))
                .fold(BTreeMap::new(), |mut last, message| {
                    let offset = last.entry(message.partition).or_insert(message.offset);
                    *offset = (*offset).max(message.offset);
                    last
                });
            failure = Some(error);
        }
        for &index in &outcome.processed {
            summaries
                .get_mut(&with_id[index].partition)
                .unwrap()
                .processed += 1;
        }
        for &index in &outcome.duplicates {
            summaries
                .get_mut(&with_id[index].partition)
                .unwrap()
                .skipped_duplicate += 1;
        }
        let mut rejected: Vec<(usize, &Replayed, &str)> = without_id
            .iter()
            .map(|(position, message, error)| (*position, message, error.as_str()))
            .collect();
        for (position, (index, error)) in outcome.failed.iter().enumerate() {
            let message = &with_id[*index];
            summaries.get_mut(&message.partition).unwrap().failed += 1;
            // Under --on-error stop the error that ends the run names the first failure.
            if position == 0 && args.on_error == OnError::Stop && failure.is_none() {
                rejected.push((positions[*index], message, error));
                continue;
            }
            output.warn(format!(
                "{}:{} (event {}): {error}",
                message.partition,
                message.offset,
                crate::output::shown_id(message.event_id.as_deref().unwrap_or(""))
            ));
            rejected.push((positions[*index], message, error));
        }
        rejected.sort_by_key(|(position, _, _)| *position);
        for (_, message, error) in rejected {
            or_fail!(write_dead_letter(
                &mut dead_letter,
                &args.topic,
                message,
                error
            ));
        }
        note_last_offsets(&mut summaries, last_offsets);
        progress.inc(batch_len as u64);
        note_done(&stop, args, &summaries);
        if failure.is_some() {
            break;
        }
        if let (Some((index, error)), OnError::Stop) = (outcome.failed.first(), args.on_error) {
            let m = &with_id[*index];
            failure = Some(anyhow!(
                "the handler failed on {}:{} (event {}): {error}; stopping (--on-error skip goes on)",
                m.partition,
                m.offset,
                crate::output::shown_id(m.event_id.as_deref().unwrap_or(""))
            ));
            break;
        }
    }
    if let Some(pipeline) = pipeline.take() {
        output.debug(format!(
            "{} batches committed with their inbox rows inserted ahead",
            pipeline.committed_ahead()
        ));
        pipeline.close().await;
    }
    drop(receiver);
    progress.finish_and_clear();
    signal.abort();
    let read = reader
        .await
        .context("the topic reader stopped unexpectedly")?;
    if let Handler::Exec(exec) = handler {
        finish_exec(*exec).await;
    }
    if let (Err(error), None, false) = (read, &failure, interrupted) {
        failure = Some(error);
    }
    if let Some(path) = dead_letter_made {
        drop(dead_letter);
        if std::fs::metadata(path).is_ok_and(|file| file.len() == 0) {
            let _ = std::fs::remove_file(path);
        }
    }
    let elapsed = started.elapsed();
    let error = failure.as_ref().map(crate::shown_error);
    stop.print_result(|| print_summary(args, &summaries, elapsed, interrupted, error, output))?;
    if let Some(error) = failure {
        return Err(error);
    }
    let failed: u64 = summaries.values().map(|s| s.failed).sum();
    // Said after a stop too, whose exit code goes before the failure's.
    if failed > 0 {
        output.warn(format!(
            "{failed} message(s) failed; see above{}",
            if args.dead_letter.is_some() {
                " and the dead-letter file"
            } else {
                ""
            }
        ));
    }
    if interrupted {
        output.warn(match args.dry_run {
            true => format!(
                "{}: the dry run changed nothing; re-run it to see the whole range",
                stop.describe()
            ),
            false => format!(
                "{}: every finished batch is committed; re-run the same command to complete the replay",
                stop.describe()
            ),
        });
        return Ok(stop.exit_status());
    }
    if failed > 0 {
        return Ok(ExitStatus::Error);
    }
    Ok(ExitStatus::Success)
}

fn source_name(args: &ReplayArgs) -> String {
    args.event_id_from
        .clone()
        .unwrap_or(EventIdSource::Default)
        .to_string()
}

/// Fixes each partition's `[from, to)` when the command starts.
fn resolve_ranges(
    kafka: &Kafka,
    args: &ReplayArgs,
    output: &Output,
) -> anyhow::Result<Vec<(i32, i64, i64)>> {
    let client = match &args.from {
        Start::Committed(group) => kafka.group_client(group)?,
        _ => kafka.reader(&[])?,
    };
    let start_time = match &args.from {
        Start::Time(at) => Some(*at),
        Start::Ago(ago) => crate::time::ago(*ago),
        _ => None,
    };
    if let (Some(from), End::Time(to)) = (start_time, &args.to) {
        if *to < from {
            return Err(usage(format!(
                "--to {} is before --from {}",
                to.to_rfc3339(),
                from.to_rfc3339()
            )));
        }
    }
    // Starts per partition and --partition must name the same partitions: either left out
    // silently would replay another range than the one typed.
    if let (Start::PerPartition(map), false) = (&args.from, args.partition.is_empty()) {
        if let Some(partition) = map.keys().find(|p| !args.partition.contains(p)) {
            return Err(usage(format!(
                "--from gives partition {partition} a start, but --partition leaves it out"
            )));
        }
        if let Some(partition) = args.partition.iter().find(|p| !map.contains_key(p)) {
            return Err(usage(format!(
                "--partition {partition} has no start in --from; give it one ({partition}:OFFSET) or leave it out"
            )));
        }
    }
    let existing = kafka.partitions(&client, &args.topic)?;
    let mut partitions: Vec<i32> = if args.partition.is_empty() {
        match &args.from {
            Start::PerPartition(map) => map.keys().copied().collect(),
            _ => existing.clone(),
        }
    } else {
        args.partition.clone()
    };
    partitions.sort_unstable();
    partitions.dedup();
    for partition in &partitions {
        if !existing.contains(partition) {
            bail!(
                "partition {partition} of topic '{}' does not exist (it has partitions 0-{})",
                args.topic,
                existing.len().saturating_sub(1)
            );
        }
    }
    let by_time = |at: DateTime<Utc>| {
        kafka.offsets_for_time(
            &client,
            &args.topic,
            &partitions,
            crate::time::kafka_millis_from(at),
        )
    };
    let start_times = match &args.from {
        Start::Time(at) => Some(by_time(*at)?),
        Start::Ago(ago) => Some(by_time(crate::time::ago(*ago).ok_or_else(|| {
            usage("--from is too long ago: before what a timestamp holds")
        })?)?),
        _ => None,
    };
    let end_times = match &args.to {
        End::Time(at) => Some(by_time(*at)?),
        _ => None,
    };
    let committed = match &args.from {
        Start::Committed(group) => {
            // Asked of every partition of the topic: the group's offsets elsewhere in it show
            // that the group exists when the partitions replayed have none.
            let keys: Vec<(String, i32)> =
                existing.iter().map(|p| (args.topic.clone(), *p)).collect();
            let committed = kafka.committed(&client, &keys)?;
            // A mistyped group has no offsets either: replaying the whole topic for it would
            // be the costliest way to find out.
            let without: Vec<String> = committed
                .iter()
                .filter(|((_, partition), offset)| {
                    offset.is_none() && partitions.contains(partition)
                })
                .map(|((_, partition), _)| partition.to_string())
                .collect();
            if committed.values().all(Option::is_none) {
                bail!(
                    "consumer group '{group}' has no committed offset for topic '{}' on {}; \
                     check the group's name (`inboxctl offsets show --group {group}`), or give \
                     --from earliest to replay from the log start",
                    args.topic,
                    kafka.brokers()
                );
            }
            if !without.is_empty() {
                output.warn(format!(
                    "group '{group}' has no committed offset for partition(s) {} of '{}': those are replayed from the log start",
                    without.join(", "),
                    args.topic
                ));
            }
            Some(committed)
        }
        _ => None,
    };
    let mut ranges = Vec::new();
    let all_marks = kafka.watermarks_of(&client, &args.topic, &partitions)?;
    for partition in partitions {
        let marks = all_marks[&partition];
        let committed_here = committed
            .as_ref()
            .and_then(|c| c.get(&(args.topic.clone(), partition)).copied().flatten());
        let from = match &args.from {
            Start::Earliest => marks.log_start,
            Start::Offset(offset) => *offset,
            Start::PerPartition(map) => map.get(&partition).copied().unwrap_or(marks.log_start),
            Start::Time(_) | Start::Ago(_) => start_times
                .as_ref()
                .and_then(|t| t.get(&partition).copied().flatten())
                .unwrap_or(marks.log_end),
            Start::Committed(_) => committed_here.unwrap_or(marks.log_start),
        };
        let to = match &args.to {
            End::Latest => marks.log_end,
            End::Offset(offset) => *offset,
            End::Time(_) => end_times
                .as_ref()
                .and_then(|t| t.get(&partition).copied().flatten())
                .unwrap_or(marks.log_end),
        };
        if let (Start::Offset(_) | Start::PerPartition(_), End::Offset(_)) = (&args.from, &args.to)
        {
            if to < from {
                return Err(usage(format!(
                    "--to {to} is before --from {from} in partition {partition}"
                )));
            }
        }
        // Fixed now, and inside the log: a start past the end is an empty range, not a wait.
        // An offset typed, or committed, outside the log is said, as `offsets reset` says it.
        let start = match &args.from {
            Start::Offset(_) | Start::PerPartition(_) => Some(format!("--from {from}")),
            Start::Committed(group) if committed_here.is_some() => {
                Some(format!("group '{group}' committed offset {from}"))
            }
            _ => None,
        };
        if let Some(start) = start {
            if from > marks.log_end {
                output.warn(format!(
                    "partition {partition}: {start} is past the log end {}; nothing to replay there",
                    marks.log_end
                ));
            } else if from < marks.log_start && to <= marks.log_start && to >= from {
                output.warn(format!(
                    "partition {partition}: {start} to {to} is all before the log start {} \
                     (retention deleted those messages); nothing to replay there",
                    marks.log_start
                ));
            } else if from < marks.log_start {
                output.warn(format!(
                    "partition {partition}: {start} is before the log start {} (retention deleted the messages before it); replaying from {}",
                    marks.log_start, marks.log_start
                ));
            }
        }
        // Two forms that resolve per partition (a time, a committed offset) can cross.
        if to < from && from <= marks.log_end {
            let end = match &args.to {
                End::Time(at) => format!("--to {} (offset {to})", at.to_rfc3339()),
                _ => format!("--to {to}"),
            };
            output.warn(format!(
                "partition {partition}: {end} is before the start, offset {from}; nothing to \
                 replay there"
            ));
        }
        let from = from.clamp(marks.log_start, marks.log_end);
        let to = to.clamp(from, marks.log_end);
        ranges.push((partition, from, to));
    }
    Ok(ranges)
}

#[derive(Default)]
struct Outcome {
    processed: Vec<usize>,
    duplicates: Vec<usize>,
    failed: Vec<(usize, String)>,
    /// Where an exec handler stopped partway through the batch, and why: the message it did
    /// not answer, from which on the batch was not handled.
    stopped: Option<(usize, anyhow::Error)>,
}

impl Outcome {
    /// From indexes into a subset of the batch to indexes into the batch: `subset[i]` is the
    /// batch index of the subset's `i`-th message.
    fn remap(&mut self, subset: &[usize]) {
        for index in self.processed.iter_mut().chain(self.duplicates.iter_mut()) {
            *index = subset[*index];
        }
        let failed = self.failed.iter_mut().map(|(index, _)| index);
        for index in failed.chain(self.stopped.as_mut().map(|(index, _)| index)) {
            *index = subset[*index];
        }
    }
}

/// The widest event id and consumer name the inbox can hold, in characters, where the backend
/// would otherwise cut a longer one short: MySQL's `INSERT IGNORE`, which is how the inbox
/// insert skips what is already there, also turns "too long" into a warning and stores the
/// first characters. The event would then be recorded under another id with its effect never
/// applied, and two ids that share their first 255 characters would dedupe each other.
#[derive(Debug, Default, Clone, Copy)]
struct Widths {
    event_id: Option<usize>,
    consumer: Option<usize>,
}

async fn inbox_widths(store: &Store) -> anyhow::Result<Widths> {
    if store.backend != Backend::Mysql {
        return Ok(Widths::default());
    }
    let width = |column: &'static str| async move {
        let width: Option<Option<i64>> = sqlx::query_scalar(
            "SELECT CAST(character_maximum_length AS SIGNED) FROM information_schema.columns \
             WHERE table_schema = DATABASE() AND table_name = ? AND column_name = ?",
        )
        .bind(INBOX_TABLE)
        .bind(column)
        .fetch_optional(store.pool())
        .await
        .with_context(|| format!("could not read the width of {INBOX_TABLE}.{column}"))?;
        anyhow::Ok(width.flatten().and_then(|w| usize::try_from(w).ok()))
    };
    Ok(Widths {
        event_id: width("event_id").await?,
        consumer: width("consumer").await?,
    })
}

/// A placeholder's value for one message: a built-in, a `--param` pointer or a payload field.
fn message_value(
    topic: &str,
    message: &Replayed,
    payload: Option<&Value>,
    pointers: &BTreeMap<String, String>,
    name: &str,
) -> Option<Value> {
    // Only the value asked for is made: this runs for every placeholder of every message.
    let built_in = match name {
        "event_id" => Some(json!(message.event_id)),
        "topic" => Some(json!(topic)),
        "partition" => Some(json!(message.partition)),
        "offset" => Some(json!(message.offset)),
        "key" => text_value(message.key.as_deref()),
        "timestamp" => Some(json!(message.timestamp)),
        "payload" => text_value(message.payload.as_deref()),
        _ => None,
    };
    handler::value(name, built_in, pointers, payload)
}

/// Why the inbox cannot hold this event id, when it cannot: it is longer than the column (at
/// most `width` characters, if limited), or holds a character the column's text cannot (see
/// [`Store::can_store_text`]) or its character set lacks, or its key is over what
/// PostgreSQL's index of it holds (see [`Unheld`]). Such a message fails on its own, before
/// any lookup or handler sees it.
fn unstorable_id(store: &Store, id: &str, width: Option<usize>, unheld: &Unheld) -> Option<String> {
    if !store.can_store_text(id) {
        return Some(
            "the event id holds a NUL character, which PostgreSQL's text cannot store".into(),
        );
    }
    if unheld
        .key_index
        .as_ref()
        .is_some_and(|over| over.contains(id))
    {
        return Some(format!(
            "the event id is {} bytes long; {}",
            id.len(),
            postgres::KEY_INDEX_LIMIT
        ));
    }
    if unheld.character_set.contains(id) {
        return Some(format!(
            "the event id has characters the inbox's event_id column ({}) cannot hold",
            store.narrow_character_set("event_id").unwrap_or_default()
        ));
    }
    let length = id.chars().count();
    match width {
        Some(width) if length > width => Some(format!(
            "the event id is {length} characters long; the inbox's event_id column holds at \
             most {width}"
        )),
        _ => None,
    }
}

/// The ids of a batch the inbox cannot hold, as the server says: those its column's character
/// set lacks ([`Store::not_held`]), and those whose key is over what PostgreSQL's index of
/// it holds ([`Store::over_the_key_index`]).
struct Unheld {
    character_set: HashSet<String>,
    /// `None` where the try could not be made: in a dry run by a user who may not insert,
    /// which then warns of such an id instead.
    key_index: Option<HashSet<String>>,
}

impl Unheld {
    /// `in_hand`: messages whose ids are known to fit the key index, not tried again.
    async fn of(
        store: &Store,
        args: &ReplayArgs,
        ids: &[&str],
        in_hand: &[Replayed],
        output: &Output,
    ) -> anyhow::Result<Unheld> {
        let character_set = store.not_held("event_id", ids).await?;
        // Asked of long ids only, which are rare: a scan of the batch in hand will do.
        let fits = |id: &str| in_hand.iter().any(|m| m.event_id.as_deref() == Some(id));
        let key_index = match store.over_the_key_index(&args.consumer, ids, fits).await {
            Ok(over) => Some(over),
            Err(error) if args.dry_run => {
                output.debug(format!("{error:#}"));
                None
            }
            Err(error) => return Err(error),
        };
        Ok(Unheld {
            character_set,
            key_index,
        })
    }

    /// Whether `id` is long enough to be over the key index, which could not be tried.
    fn key_index_untried(&self, store: &Store, consumer: &str, id: &str) -> bool {
        self.key_index.is_none() && store.may_be_over_the_key_index(consumer, id)
    }
}

/// The inbox rows (event id, partition, offset) of messages that go to the handler.
fn inbox_rows<'a>(messages: impl Iterator<Item = &'a Replayed>) -> Vec<(String, i32, i64)> {
    messages
        .map(|m| {
            (
                m.event_id.clone().unwrap_or_default(),
                m.partition,
                m.offset,
            )
        })
        .collect()
}

/// The whole batch through the PostgreSQL pipeline, retrying deadlocks. An error when it
/// failed otherwise: the caller then goes message by message on the plain path, which names
/// the failing message.
async fn apply_pipelined(
    pipeline: &mut PgPipeline,
    job: &SqlJob<'_>,
    next: Option<&[(String, i32, i64)]>,
) -> Result<HashSet<usize>, BatchError> {
    let (consumer, topic, batch, pointers) = (job.consumer, job.topic, job.batch, job.pointers);
    let rows = inbox_rows(batch.iter());
    // Parsed when first asked for: on the plain path that is while the server inserts.
    let payloads: Vec<OnceLock<Option<Value>>> = batch.iter().map(|_| OnceLock::new()).collect();
    let values = |index: usize, name: &str| {
        let message = &batch[index];
        let payload = payloads[index].get_or_init(|| message.payload_json());
        message_value(topic, message, payload.as_ref(), pointers, name).ok_or_else(|| {
            format!(
                "message {}:{} has no value for :{name}",
                message.partition, message.offset
            )
        })
    };
    // The pipeline's connections do not come back once lost: that is the caller's to mend,
    // so a lost connection gets one attempt here.
    retried(job.output, 1, async || {
        pipeline.run(consumer, topic, &rows, next, values).await
    })
    .await
}

/// How often handler connections that were lost, and could not be made again at once, are
/// tried again: a replay that rode out a server restart gets its fast path back.
const PIPELINE_RETRY_EVERY: Duration = Duration::from_secs(5);

/// The batch in one transaction; when that fails, each message in its own, so that the
/// failure is pinned on the message that caused it. A lost or refused connection is no
/// message's doing: the batch fails as a whole, and the run stops. The pipeline, when its
/// connection is lost, is connected again at once, or else the plain path takes the batches
/// until a later try (`lost_at`, every PIPELINE_RETRY_EVERY) connects it.
async fn apply_sql(
    job: SqlJob<'_>,
    pipeline: &mut Option<PgPipeline>,
    lost_at: &mut Option<Instant>,
    next: Option<&[(String, i32, i64)]>,
) -> anyhow::Result<Outcome> {
    let (batch, output) = (job.batch, job.output);
    let all: Vec<usize> = (0..batch.len()).collect();
    if pipeline.is_none() && lost_at.is_some_and(|at| at.elapsed() >= PIPELINE_RETRY_EVERY) {
        *pipeline = reconnect_pipeline(&job).await;
        *lost_at = match pipeline {
            Some(_) => {
                output.debug("the pipelined connection to the database is back");
                None
            }
            None => Some(Instant::now()),
        };
    }
    let whole = match pipeline.as_mut() {
        Some(lanes) => match apply_pipelined(lanes, &job, next).await {
            Err(failure) if failure.connection_lost => {
                if let Some(lost) = pipeline.take() {
                    lost.close().await;
                }
                *pipeline = reconnect_pipeline(&job).await;
                if pipeline.is_none() {
                    *lost_at = Some(Instant::now());
                }
                output.debug(format!(
                    "the pipelined connection to the database was lost ({}); {}",
                    crate::error_chain(&failure.error),
                    match pipeline {
                        Some(_) => "connected again, the batch goes again".to_string(),
                        None => format!(
                            "the batch goes again on the plain path, and the pipelined \
                             connection is tried again every {}",
                            humantime::format_duration(PIPELINE_RETRY_EVERY)
                        ),
                    }
                ));
                match pipeline.as_mut() {
                    Some(lanes) => apply_pipelined(lanes, &job, None).await,
                    None => job.run(&all).await,
                }
            }
            other => other,
        },
        None => job.run(&all).await,
    };
    match whole {
        Ok(new) => return Ok(split(&all, &new)),
        Err(failure) if failure.connection_lost => return Err(lost_during(failure, batch)),
        Err(failure) => output.debug(format!(
            "the batch {} failed as a whole ({}); retrying it message by message",
            batch_range(batch),
            crate::error_chain(&failure.error)
        )),
    }
    let mut outcome = Outcome::default();
    for index in 0..batch.len() {
        // On the path the batch took: the pipeline types each parameter from the statement,
        // which the plain path does only where the server could type them all, so a message
        // that goes there could fail there alone.
        let one = match pipeline.as_mut() {
            Some(lanes) => {
                let alone = SqlJob {
                    batch: &batch[index..=index],
                    ..job
                };
                apply_pipelined(lanes, &alone, None)
                    .await
                    .map(|new| new.into_iter().map(|_| index).collect())
                    // The server's errors say where, as on the plain path; the message's
                    // own (a missing value) already do.
                    .map_err(
                        |failure| match failure.error.is::<tokio_postgres::Error>() {
                            true => BatchError {
                                error: failure.error.context(format!(
                                    "handler statement failed on {}:{}",
                                    batch[index].partition, batch[index].offset
                                )),
                                ..failure
                            },
                            false => failure,
                        },
                    )
            }
            None => job.run(&[index]).await,
        };
        match one {
            Ok(new) => {
                let one = split(&[index], &new);
                outcome.processed.extend(one.processed);
                outcome.duplicates.extend(one.duplicates);
            }
            Err(failure) if failure.connection_lost => {
                return Err(lost_one_at_a_time(failure, batch, index, &outcome))
            }
            Err(failure) => outcome
                .failed
                .push((index, crate::error_chain(&failure.error))),
        }
    }
    Ok(outcome)
}

/// [`lost_connection`] while the messages of `batch` went one at a time, each in its own
/// transaction, at message `index`: those before it are committed (`outcome`), though the
/// summary, which counts whole batches, leaves them out.
fn lost_one_at_a_time(
    failure: BatchError,
    batch: &[Replayed],
    index: usize,
    outcome: &Outcome,
) -> anyhow::Error {
    let message = &batch[index];
    let while_ = format!(
        "at message {}:{}, while the batch {} went one message at a time",
        message.partition,
        message.offset,
        batch_range(batch)
    );
    if index == 0 {
        return lost_connection(failure, &while_, "none of the batch is recorded");
    }
    let became = format!(
        "of the {index} message(s) before it, {} processed and {} already in the inbox are \
         recorded and {} failed, which the summary leaves out; it and the rest of the batch \
         are not recorded",
        outcome.processed.len(),
        outcome.duplicates.len(),
        outcome.failed.len()
    );
    lost_connection(failure, &while_, &became)
}

/// The handler's pipelined connections made again, within --connect-timeout; `None` when
/// they cannot be.
async fn reconnect_pipeline(job: &SqlJob<'_>) -> Option<PgPipeline> {
    let url = job.store.url.connect_url();
    let limit = job.store.pool().options().get_acquire_timeout();
    let connect = PgPipeline::connect(url, job.statements);
    tokio::time::timeout(limit, connect)
        .await
        .ok()
        .and_then(Result::ok)
}

/// The error that stops a run whose database went away `while` doing something, and what
/// became of the batch: skipping messages would not help.
fn lost_connection(failure: BatchError, while_: &str, batch_became: &str) -> anyhow::Error {
    failure.error.context(format!(
        "lost the connection to the database (tried {CONNECTION_ATTEMPTS} times) {while_}; \
         {batch_became}; re-run the same command once the database answers again"
    ))
}

/// [`lost_connection`] during `batch`, whose transaction rolled back.
fn lost_during(failure: BatchError, batch: &[Replayed]) -> anyhow::Error {
    lost_connection(
        failure,
        &format!("during the batch {}", batch_range(batch)),
        "its transaction rolled back, so none of it is recorded",
    )
}

/// A batch as its first and last message: `0:5 … 0:9`.
fn batch_range(batch: &[Replayed]) -> String {
    match (batch.first(), batch.last()) {
        (Some(first), Some(last)) => format!(
            "{}:{} … {}:{}",
            first.partition, first.offset, last.partition, last.offset
        ),
        _ => String::new(),
    }
}

/// Which of `indexes` were new (processed) and which the inbox already held.
fn split(indexes: &[usize], new: &HashSet<usize>) -> Outcome {
    let mut outcome = Outcome::default();
    for &index in indexes {
        if new.contains(&index) {
            outcome.processed.push(index);
        } else {
            outcome.duplicates.push(index);
        }
    }
    outcome
}

/// Which of `ids` the inbox holds for `consumer`; asked again as [`retried`] says.
async fn processed_ids(
    output: &Output,
    store: &Store,
    consumer: &str,
    ids: &[&str],
) -> anyhow::Result<HashSet<String>> {
    retried(output, CONNECTION_ATTEMPTS, async || {
        store
            .processed_ids(consumer, ids)
            .await
            .map_err(BatchError::from_anyhow)
    })
    .await
    .map_err(|failure| match failure.connection_lost {
        true => lost_connection(
            failure,
            "while looking up which events of the batch the inbox holds",
            "nothing of the batch was handled",
        ),
        false => failure.error,
    })
}

/// Attempts of one transaction whose connection was lost or refused, a second apart: a
/// killed session or a server that restarts. The pool itself keeps trying a refused
/// connection for --connect-timeout within each.
const CONNECTION_ATTEMPTS: u32 = 3;

/// `work` in one write transaction on a connection of the pool: committed when it passes,
/// rolled back when anything fails.
async fn in_write_transaction<T>(
    store: &Store,
    work: impl AsyncFnOnce(&mut AnyConnection) -> Result<T, BatchError>,
) -> Result<T, BatchError> {
    let mut conn = store.acquire().await.map_err(BatchError::from_anyhow)?;
    store.in_write_transaction(&mut conn, work, |_| true).await
}

#[derive(Clone, Copy)]
struct SqlJob<'a> {
    store: &'a Store,
    statements: &'a [Statement],
    consumer: &'a str,
    topic: &'a str,
    batch: &'a [Replayed],
    pointers: &'a BTreeMap<String, String>,
    output: &'a Output,
}

impl SqlJob<'_> {
    /// One transaction: the inbox rows of `indexes`, then the handler for the new ones.
    /// Returns the indexes that were new. See [`retried`] for what is tried again.
    async fn run(&self, indexes: &[usize]) -> Result<HashSet<usize>, BatchError> {
        retried(self.output, CONNECTION_ATTEMPTS, async || {
            in_write_transaction(self.store, async |conn| {
                self.in_transaction(conn, indexes).await
            })
            .await
        })
        .await
    }

    async fn in_transaction(
        &self,
        conn: &mut AnyConnection,
        indexes: &[usize],
    ) -> Result<HashSet<usize>, BatchError> {
        let messages: Vec<&Replayed> = indexes.iter().map(|i| &self.batch[*i]).collect();
        let inserted = insert_new(self.store, conn, self.consumer, self.topic, &messages).await?;
        let mut new = HashSet::new();
        let mut handled: HashSet<&str> = HashSet::new();
        for &index in indexes {
            let message = &self.batch[index];
            let id = message.event_id.as_deref().unwrap_or_default();
            if !inserted.contains(id) || !handled.insert(id) {
                continue;
            }
            new.insert(index);
            for statement in self.statements {
                self.execute(conn, statement, message).await?;
            }
        }
        Ok(new)
    }

    async fn execute(
        &self,
        conn: &mut AnyConnection,
        statement: &Statement,
        message: &Replayed,
    ) -> Result<(), BatchError> {
        let payload = message.payload_json();
        let sent_as_text = statement.sent_as_text.as_ref();
        let mut query = sqlx::query(sent_as_text.map_or(&statement.sql, |typed| &typed.sql));
        for (index, name) in statement.params.iter().enumerate() {
            let Some(value) =
                message_value(self.topic, message, payload.as_ref(), self.pointers, name)
            else {
                return Err(BatchError::final_error(anyhow!(
                    "message {}:{} has no value for :{name}",
                    message.partition,
                    message.offset
                )));
            };
            if let Some(typed) = sent_as_text {
                let text = typed.text(index, name, value).map_err(|e| {
                    BatchError::final_error(anyhow!(
                        "message {}:{}: {e}",
                        message.partition,
                        message.offset
                    ))
                })?;
                query = query.bind(text);
                continue;
            }
            query = match value {
                Value::Null => query.bind(None::<String>),
                Value::Bool(b) => query.bind(b),
                Value::Number(n) => match n.as_i64() {
                    Some(i) => query.bind(i),
                    None => query.bind(n.as_f64().unwrap_or_default()),
                },
                Value::String(s) => query.bind(s),
                other => query.bind(other.to_string()),
            };
        }
        query
            .execute(&mut *conn)
            .await
            .map(|_| ())
            .map_err(|error| {
                let failure = BatchError::from_sqlx(error);
                BatchError {
                    error: failure.error.context(format!(
                        "handler statement failed on {}:{}",
                        message.partition, message.offset
                    )),
                    ..failure
                }
            })
    }
}

/// Multi-row inserts into the inbox, [`ROWS_AN_INSERT`] rows each; returns the event ids
/// they inserted (the new ones).
/// Fails on an id the inbox stored as another: MySQL's `INSERT IGNORE` turns a value its
/// column cannot hold into a warning and stores what it made of it, which would record the
/// event under an id no message has, and take the message for a duplicate. (Ids its
/// character set cannot hold fail before, see [`unstorable_id`].)
async fn insert_new(
    store: &Store,
    conn: &mut AnyConnection,
    consumer: &str,
    topic: &str,
    messages: &[&Replayed],
) -> Result<HashSet<String>, BatchError> {
    let mut inserted = HashSet::new();
    for rows in messages.chunks(ROWS_AN_INSERT) {
        inserted.extend(insert_new_rows(store, conn, consumer, topic, rows).await?);
    }
    Ok(inserted)
}

/// The most rows one INSERT of [`insert_new`] writes: 5 parameters each, where SQLite takes
/// at most 32,766 in a statement (a batch of 10,000 messages would need 50,000).
const ROWS_AN_INSERT: usize = 1_000;

/// [`insert_new`] of at most [`ROWS_AN_INSERT`] messages, in one statement.
async fn insert_new_rows(
    store: &Store,
    conn: &mut AnyConnection,
    consumer: &str,
    topic: &str,
    messages: &[&Replayed],
) -> Result<HashSet<String>, BatchError> {
    let d = store.dialect;
    let (prefix, suffix) = d.insert_new;
    let mut sql = store.sql();
    sql.push(&format!(
        "{prefix} {INBOX_TABLE} (consumer, event_id, topic, {}, {}) VALUES ",
        d.quote("partition"),
        d.quote("offset")
    ))
    .value_rows(messages.len(), 5)
    .push(suffix);
    let text = sql.build();
    let mut query = sqlx::query_scalar::<_, String>(&text);
    for message in messages {
        query = query
            .bind(consumer)
            .bind(message.event_id.as_deref().unwrap_or_default())
            .bind(topic)
            .bind(message.partition)
            .bind(message.offset);
    }
    let returned: Vec<String> = query.fetch_all(&mut *conn).await?;
    // A CHAR column gives `x` back for `x `: each id returned is the message's that the key
    // takes it for, its own first.
    let key = store.id_key().await.map_err(BatchError::from_anyhow)?;
    let ids = || messages.iter().filter_map(|m| m.event_id.as_deref());
    let given_ids: HashSet<&str> = ids().collect();
    let mut by_key: HashMap<&str, &str> = HashMap::new();
    for id in ids() {
        by_key.entry(key.of(id)).or_insert(id);
    }
    let mut inserted = HashSet::new();
    let mut stored_as_another = None;
    for id in &returned {
        let given = given_ids
            .get(id.as_str())
            .or_else(|| by_key.get(key.of(id)))
            .copied();
        match given {
            Some(given) => {
                inserted.insert(given.to_string());
            }
            None => {
                stored_as_another.get_or_insert(id);
            }
        }
    }
    let Some(stored) = stored_as_another else {
        return Ok(inserted);
    };
    // Which id it was is known only of a message alone (the SQL path retries one by one).
    let candidates: Vec<String> = messages
        .iter()
        .filter(|m| !m.event_id.as_ref().is_some_and(|id| inserted.contains(id)))
        .map(|m| {
            format!(
                "{}:{} (event {})",
                m.partition,
                m.offset,
                crate::output::shown_id(m.event_id.as_deref().unwrap_or_default())
            )
        })
        .collect();
    let shown = candidates
        .iter()
        .take(3)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    let given = match candidates.len() {
        0 => "an id of this batch".to_string(),
        1 => shown,
        2 | 3 => format!("one of {shown}"),
        more => format!("one of {shown} and {} more", more - 3),
    };
    Err(BatchError::final_error(anyhow!(
        "the inbox stored event id {} for {given}: its event_id column cannot hold the id as \
         it is (MySQL's INSERT IGNORE stores what it can make of a value its column cannot \
         hold), and the event would be recorded under an id no message has; nothing of this \
         was kept",
        crate::output::shown_id(stored),
    )))
}

/// A --param named like a built-in, or given twice, would be silently overruled.
fn check_params(params: &[(String, String)]) -> anyhow::Result<()> {
    let mut seen = HashSet::new();
    for (name, _) in params {
        if handler::BUILT_INS.contains(&name.as_str()) {
            return Err(usage(format!(
                "--param {name}: :{name} is a built-in ({}); give the parameter another name",
                handler::BUILT_INS.join(", ")
            )));
        }
        if !seen.insert(name) {
            return Err(usage(format!("--param {name} is given twice")));
        }
    }
    Ok(())
}

/// Before anything is read, each handler statement is prepared on the server: one that
/// cannot be (a syntax error, a table or column that is not there) would fail every message,
/// and under --on-error skip skip them all. PostgreSQL cannot always type a parameter without
/// values (`SELECT :x`); such a statement is left to run, where its values type it.
async fn check_statements(
    store: &Store,
    statements: &mut [Statement],
    path: &Path,
) -> anyhow::Result<()> {
    use sqlx::Connection;
    // A connection of its own, closed after: the statements it prepares are typed by the
    // server alone (a placeholder cast to jsonb is jsonb), and kept in its cache they would
    // serve the batches, whose values are sent with the types replay binds them with.
    let mut conn = store.pool().acquire().await?.detach();
    let checked = prepare_each(&mut conn, store.backend, statements, path).await;
    let _ = conn.close().await;
    checked
}

async fn prepare_each(
    conn: &mut sqlx::AnyConnection,
    backend: Backend,
    statements: &mut [Statement],
    path: &Path,
) -> anyhow::Result<()> {
    use sqlx::Executor;
    for (number, statement) in statements.iter_mut().enumerate() {
        let prepared = (&mut *conn).prepare(statement.sql.as_str()).await;
        // MySQL's rows reach replay through the generic driver, which cannot take every
        // column type (DATETIME, DECIMAL) and then fails the message; replay reads no rows.
        let returns_rows = match &prepared {
            Ok(prepared) => !sqlx::Statement::columns(prepared).is_empty(),
            Err(error) => matches!(error, sqlx::Error::AnyDriverError(_)),
        };
        if backend == Backend::Mysql && returns_rows {
            return Err(crate::error::usage(format!(
                "statement {} of the SQL handler {} returns rows, which replay does not read \
                 and cannot always take from MySQL; evaluate an expression for its effect \
                 with DO … instead of SELECT, and leave out RETURNING",
                number + 1,
                path.display()
            )));
        }
        if let Err(error) = prepared {
            if is_connection_lost(&error) {
                return Err(error.into());
            }
            // Only the server's refusal counts: the generic driver's own limits (a column of
            // a type it does not map, such as numeric) do not stop the statement from running.
            let refused = matches!(
                &error,
                sqlx::Error::Database(database) if database.code().as_deref() != Some("42P18")
            );
            if refused {
                return Err(anyhow::Error::new(error).context(format!(
                    "statement {} of the SQL handler {} cannot be prepared, so every message \
                     would fail on it; nothing was read",
                    number + 1,
                    path.display()
                )));
            }
        }
        if backend == Backend::Postgres && !statement.params.is_empty() {
            let types = crate::store::postgres::parameter_types(conn, &statement.sql).await?;
            statement.sent_as_text = types
                .filter(|types| types.len() == statement.params.len())
                .map(|types| SentAsText::new(statement, &types));
        }
    }
    Ok(())
}

/// Before anything is read: an empty --exec is a usage error, and a program given as a path
/// (the command's first word, holding a `/` and nothing the shell would expand) must exist and
/// be executable. A program found through PATH is left to the shell, whose exit status 127 or
/// 126 then says it could not be started. A dry run starts nothing, so checks only the first.
fn check_exec(command: &str, dry_run: bool) -> anyhow::Result<()> {
    let Some(program) = command.split_whitespace().next() else {
        return Err(usage(
            "--exec is empty; give the command that handles the messages",
        ));
    };
    if dry_run
        || !program.contains('/')
        || program.contains(|c: char| "'\"\\$`;&|<>(){}*?[]~=#".contains(c))
    {
        return Ok(());
    }
    use std::os::unix::fs::PermissionsExt;
    let reason = match std::fs::metadata(program) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => "not found",
        Ok(meta) if meta.is_dir() => "permission denied: it is a directory",
        Ok(meta) if meta.permissions().mode() & 0o111 == 0 => {
            "permission denied: it is not executable (chmod +x)"
        }
        _ => return Ok(()),
    };
    bail!("could not start the exec handler ({command}): {program}: {reason}")
}

fn start_exec(command: &str, timeout: Option<Duration>) -> anyhow::Result<ExecHandler> {
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        // A process group of its own: Ctrl-C on the terminal reaches inboxctl alone, which
        // finishes the batch under way (the handler still answering) before it stops.
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("could not start the exec handler ({command})"))?;
    let mut watchdog = None;
    if let Some(pid) = child.id() {
        super::end_with_a_stop_at_once(pid);
        watchdog = Some(start_watchdog(pid).with_context(|| {
            format!("could not start the watchdog of the exec handler ({command})")
        })?);
    }
    let stdin = child
        .stdin
        .take()
        .context("the exec handler has no stdin")?;
    let stdout = child
        .stdout
        .take()
        .context("the exec handler has no stdout")?;
    Ok(ExecHandler {
        command: command.to_string(),
        child,
        stdin,
        replies: BufReader::new(stdout).lines(),
        answered: false,
        timeout,
        failed_unanswered: 0,
        watchdog,
    })
}

/// `--on-error skip`: the handlers in a row that may fail before answering anything, the
/// last of them stopping the run. Two poison messages in a row are skipped; a program that
/// fails whatever it is sent is not skipped message by message for long.
const UNANSWERED_FAILURES: u32 = 3;

/// `--on-error skip`: a handler that failed on a message (it exited, closed its output, or
/// took over --handler-timeout) is replaced by a new one. Not one that could not be started
/// (the shell's 127 or 126 before any answer), nor the UNANSWERED_FAILURES-th in a row to fail
/// before answering anything: a program that cannot run is not skipped message by message.
/// `Ok(None)` when it was replaced; otherwise why not.
async fn restart_exec(exec: &mut ExecHandler) -> anyhow::Result<Option<String>> {
    if !exec.answered {
        let cannot_start = matches!(
            exec.child.try_wait(),
            Ok(Some(status)) if matches!(status.code(), Some(126 | 127))
        );
        if cannot_start {
            return Ok(Some("the handler cannot be started".to_string()));
        }
        let in_a_row = exec.failed_unanswered + 1;
        if in_a_row >= UNANSWERED_FAILURES {
            return Ok(Some(format!(
                "{in_a_row} handlers in a row failed before answering anything"
            )));
        }
    }
    let mut fresh = start_exec(&exec.command, exec.timeout)?;
    fresh.failed_unanswered = if exec.answered {
        0
    } else {
        exec.failed_unanswered + 1
    };
    let failed = std::mem::replace(exec, fresh);
    // One that closed its output may still run: it goes, with whatever it started.
    if let Some(pid) = failed.child.id() {
        super::signal_group(pid, libc::SIGTERM);
    }
    finish_exec(failed).await;
    Ok(None)
}

/// A process that ends the handler's process group (SIGTERM) when inboxctl is gone, however
/// it went: SIGKILL leaves no time to do it, and the kernel's death signal would reach only
/// the shell, not the program it runs. It learns that from its input, a pipe that only
/// inboxctl writes to (the pipe is closed on exec), which reads end-of-file once inboxctl
/// has exited. A process group of its own, so that Ctrl-C on the terminal leaves it alone.
fn start_watchdog(
    group: u32,
) -> std::io::Result<(tokio::process::Child, tokio::process::ChildStdin)> {
    let mut watchdog = tokio::process::Command::new("sh")
        .arg("-c")
        // No `--` before the group: dash's kill takes none.
        .arg("read -r _; kill -TERM \"-$1\" 2>/dev/null")
        .arg("inboxctl-exec-watchdog")
        .arg(group.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()?;
    let pipe = watchdog
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("the watchdog has no stdin"))?;
    Ok((watchdog, pipe))
}

/// How long a handler that closed its input or output is given to exit, for its status.
const EXEC_EXIT_WAIT: Duration = Duration::from_secs(5);

/// How long the end of a batch waits for a line no message asked for: twice the longest an
/// answer of the batch took (not counting a first answer, which includes the start-up), at
/// most a tenth of the batch's time so far and 1 s, at least 1 ms. A program whose answers
/// fell out of step (a second answer that came after the next message was sent) has the last
/// message's answer still to come, about one answer's time later when its answers take about
/// as long, and the batch must not be recorded before it. The tenth bounds what the wait costs
/// a correct program, which prints nothing.
const UNASKED_WAIT_MIN: Duration = Duration::from_millis(1);
const UNASKED_WAIT_MAX: Duration = Duration::from_secs(1);
const UNASKED_WAIT_SHARE: u32 = 10;

/// Closes the handler's input and gives it EXEC_EXIT_WAIT to exit. One that exits takes its
/// watchdog with it; one that does not is ended by the watchdog, with its process group.
async fn finish_exec(mut exec: ExecHandler) {
    drop(exec.stdin);
    let exited = tokio::time::timeout(EXEC_EXIT_WAIT, exec.child.wait()).await;
    if let (Ok(Ok(_)), Some((watchdog, _))) = (exited, exec.watchdog.as_mut()) {
        let _ = watchdog.kill().await;
    }
}

/// Sends one message to the exec handler and reads its reply, a JSON object, within
/// `--handler-timeout`. A handler that takes longer is stopped: its next line could be this
/// message's answer or a later one's, and what it did with this one cannot be known. One
/// that closes its input or output in that time is reported as such, with how it exited.
async fn ask_exec(
    exec: &mut ExecHandler,
    message: &Replayed,
    topic: &str,
) -> anyhow::Result<Value> {
    let deadline = exec
        .timeout
        .map(|timeout| tokio::time::Instant::now() + timeout);
    unasked_line(exec, Duration::ZERO).await?;
    let mut line = message.to_json(topic).to_string();
    line.push('\n');
    let write = async {
        exec.stdin.write_all(line.as_bytes()).await?;
        exec.stdin.flush().await
    };
    let Some(written) = before(deadline, write).await else {
        return Err(took_too_long(exec, message).await);
    };
    if let Err(error) = written {
        return Err(exec_stopped(exec, message, "stopped reading its input", error).await);
    }
    let Some(read) = before(deadline, exec.replies.next_line()).await else {
        return Err(took_too_long(exec, message).await);
    };
    let reply = match read {
        Ok(Some(reply)) => reply,
        Ok(None) => {
            let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
            return Err(exec_stopped(exec, message, "closed its output", eof).await);
        }
        Err(error) => return Err(anyhow!(error).context("could not read the exec handler's reply")),
    };
    let reply: Value = serde_json::from_str(&reply).map_err(|_| {
        anyhow!(
            "the exec handler answered {}:{} with '{}', not a JSON object like \
             {{\"ok\":true}} (it must print one line per message on stdout; log to stderr)",
            message.partition,
            message.offset,
            crate::output::printable(&reply)
        )
    })?;
    // An answer that names another event is out of step with the messages. A number names
    // the id as written, as a number in a payload does.
    let named = match reply.get("event_id") {
        Some(Value::String(id)) => Some(id.clone()),
        Some(Value::Number(id)) => Some(id.to_string()),
        _ => None,
    };
    if let Some(named) = named {
        if Some(named.as_str()) != message.event_id.as_deref() {
            return Err(OutOfStep(format!(
                "the exec handler answered {}:{} (event {}) for event {}",
                message.partition,
                message.offset,
                crate::output::shown_id(message.event_id.as_deref().unwrap_or("")),
                crate::output::shown_id(&named)
            ))
            .into());
        }
    }
    // Only a JSON answer shows that the program runs: one that prints anything else on
    // every message is at fault, not the messages (see restart_exec).
    exec.answered = true;
    Ok(reply)
}

/// The exec handler's answers are out of step with the messages sent: a line nobody asked
/// for, or an answer naming another event. Answers are matched to messages by their order, so
/// none of the batch's can be trusted: the run stops, with nothing of the batch recorded.
#[derive(Debug)]
struct OutOfStep(String);

impl std::fmt::Display for OutOfStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}; answers are matched to messages by their order, so none of this batch's \
             answers can be trusted: nothing of the batch is recorded, and the run stops \
             (the program must print exactly one line per message on stdout; log to stderr)",
            self.0
        )
    }
}

impl std::error::Error for OutOfStep {}

/// An error when the handler has a line that no message asked for (a second answer to the
/// message before, say), ready now or within `wait`. A line still on its way is caught by the
/// next look, by the event id in an answer that carries one, or by the wait at the batch's
/// end (see [`UNASKED_WAIT_MIN`]).
async fn unasked_line(exec: &mut ExecHandler, wait: Duration) -> anyhow::Result<()> {
    // `next_line` is cancel-safe: a partial line stays buffered. No wait is one poll, not a
    // zero timeout, which tokio rounds up to its next millisecond tick and waits for: before
    // each message, that was a millisecond a message.
    let line = match wait.is_zero() {
        true => futures_util::FutureExt::now_or_never(exec.replies.next_line()),
        false => tokio::time::timeout(wait, exec.replies.next_line())
            .await
            .ok(),
    };
    match line {
        Some(Ok(Some(line))) => Err(OutOfStep(format!(
            "the exec handler printed a line no message asked for: '{}'",
            crate::output::printable(&line)
        ))
        .into()),
        _ => Ok(()),
    }
}

/// `future`'s output, or `None` if the deadline came first.
async fn before<F: std::future::Future>(
    deadline: Option<tokio::time::Instant>,
    future: F,
) -> Option<F::Output> {
    match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, future).await.ok(),
        None => Some(future.await),
    }
}

/// Ends a handler that went over `--handler-timeout` on `message`, and says so.
async fn took_too_long(exec: &mut ExecHandler, message: &Replayed) -> anyhow::Error {
    let ended = end_exec(exec).await;
    anyhow!(
        "the exec handler ({}) took over {} (--handler-timeout) over {}:{} (event {}); {ended}",
        exec.command,
        humantime::format_duration(exec.timeout.unwrap_or_default()),
        message.partition,
        message.offset,
        crate::output::shown_id(message.event_id.as_deref().unwrap_or(""))
    )
}

/// Whether any process of process group `group` still runs. One that has exited but is not
/// reaped yet (its parent, the shell, gone before it) is a zombie, which kill(2) still finds
/// until init reaps it, a second or more in some containers; /proc tells the two apart.
fn group_runs(group: u32) -> bool {
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return super::signal_group(group, 0);
    };
    processes
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .any(|stat| state_and_group(&stat).is_some_and(|(state, of)| state != "Z" && of == group))
}

/// A process's state and process group, from its `/proc/PID/stat`: `pid (comm) state ppid
/// pgrp …`, where comm may hold spaces and parentheses.
fn state_and_group(stat: &str) -> Option<(&str, u32)> {
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?;
    let group = fields.nth(1)?.parse().ok()?;
    Some((state, group))
}

/// Ends a handler that took too long, with the processes it started: SIGTERM to its process
/// group, then SIGKILL to what is left of the group after EXEC_EXIT_WAIT. Says how it went.
async fn end_exec(exec: &mut ExecHandler) -> String {
    let Some(pid) = exec.child.id() else {
        return "it had exited".to_string();
    };
    super::signal_group(pid, libc::SIGTERM);
    let deadline = tokio::time::Instant::now() + EXEC_EXIT_WAIT;
    let _ = tokio::time::timeout_at(deadline, exec.child.wait()).await;
    // The shell gone, a program it started may still be finishing.
    while group_runs(pid) {
        if tokio::time::Instant::now() >= deadline {
            super::signal_group(pid, libc::SIGKILL);
            let _ = exec.child.wait().await;
            return format!(
                "it was killed (SIGKILL to its process group, {}s after SIGTERM)",
                EXEC_EXIT_WAIT.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    "it was stopped (SIGTERM to its process group)".to_string()
}

/// The error for a handler that stopped reading its input or closed its output before
/// answering `message`: it is reaped (waiting at most EXEC_EXIT_WAIT) so the error can say how
/// it exited. `what` and `error` say what was seen, for a handler that is still running.
async fn exec_stopped(
    exec: &mut ExecHandler,
    message: &Replayed,
    what: &str,
    error: std::io::Error,
) -> anyhow::Error {
    use std::os::unix::process::ExitStatusExt;
    let command = &exec.command;
    let at = format!("{}:{}", message.partition, message.offset);
    let status = match tokio::time::timeout(EXEC_EXIT_WAIT, exec.child.wait()).await {
        Ok(Ok(status)) => status,
        Ok(Err(wait_error)) => {
            return anyhow!(wait_error).context(format!(
                "the exec handler ({command}) {what} before answering {at} ({error}), and its exit status could not be read"
            ))
        }
        Err(_) => {
            return anyhow!(
                "the exec handler ({command}) {what} before answering {at} ({error}) but had not exited {}s later",
                EXEC_EXIT_WAIT.as_secs()
            )
        }
    };
    match (status.code(), status.signal()) {
        (Some(127), _) if !exec.answered => anyhow!(
            "could not start the exec handler ({command}): command not found (the shell exited with status 127)"
        ),
        (Some(126), _) if !exec.answered => anyhow!(
            "could not start the exec handler ({command}): permission denied, not executable (the shell exited with status 126)"
        ),
        // A shell that ran the program as a child reports its death by signal N as 128 + N.
        (Some(code), _) if code > 128 && code < 128 + 64 => anyhow!(
            "the exec handler ({command}) exited with status {code} (the shell's status for a program killed by signal {}) before answering {at}",
            describe_signal(code - 128)
        ),
        (Some(code), _) => {
            anyhow!("the exec handler ({command}) exited with status {code} before answering {at}")
        }
        (None, Some(signal)) => anyhow!(
            "the exec handler ({command}) was killed by signal {} before answering {at}",
            describe_signal(signal)
        ),
        (None, None) => anyhow!("the exec handler ({command}) ended ({status}) before answering {at}"),
    }
}

/// `9 (SIGKILL)`, or the bare number for a signal whose number differs between systems.
fn describe_signal(signal: i32) -> String {
    let name = match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return signal.to_string(),
    };
    format!("{signal} ({name})")
}

/// Feeds the batch's new events to the handler one line each, then records in the inbox, in
/// one transaction, those it answered ok for. A kill between a reply and that commit makes the
/// next run send those events again: the handler must be idempotent by event id.
async fn apply_exec(
    output: &Output,
    store: &Store,
    exec: &mut ExecHandler,
    consumer: &str,
    topic: &str,
    batch: &[Replayed],
    skip: bool,
) -> anyhow::Result<Outcome> {
    let ids: Vec<&str> = batch.iter().filter_map(|m| m.event_id.as_deref()).collect();
    let done = processed_ids(output, store, consumer, &ids).await?;
    let id_key = store.id_key().await?;
    let mut outcome = Outcome::default();
    // The ids the handler answered ok for in this batch: a later copy of one is a duplicate.
    // A copy of one it failed is sent again, as the SQL handler applies it again.
    let mut applied: HashSet<&str> = HashSet::new();
    let mut ok: Vec<&Replayed> = Vec::new();
    // A handler that stops answering ends the run, but only after the events it did answer
    // ok for are recorded: their effects happened, and a re-run must not send them again.
    let mut stopped = None;
    // Where the failures of handlers that ended before answering anything began, in a row:
    // if no handler can be started after them, they were the handler's, not the messages'.
    let mut unanswered_from: Option<usize> = None;
    // The longest an answer of this batch took, for the wait at its end.
    let mut slowest_answer: Option<Duration> = None;
    let started = std::time::Instant::now();
    for (index, message) in batch.iter().enumerate() {
        let id = message.event_id.as_deref().unwrap_or_default();
        if done.contains(id) || applied.contains(id_key.of(id)) {
            outcome.duplicates.push(index);
            continue;
        }
        let asked = std::time::Instant::now();
        let first_answer = !exec.answered;
        let reply = match ask_exec(exec, message, topic).await {
            Ok(reply) => reply,
            Err(error) if error.is::<OutOfStep>() => {
                end_exec(exec).await;
                return Err(error);
            }
            Err(error) if !skip => {
                stopped = Some((index, error));
                break;
            }
            Err(error) => {
                let chain = crate::error_chain(&error);
                // A handler that had answered before it failed failed on the message.
                let on_the_message = exec.answered;
                let error = match restart_exec(exec).await {
                    Ok(None) => {
                        outcome.failed.push((index, chain));
                        match on_the_message {
                            true => unanswered_from = None,
                            false => _ = unanswered_from.get_or_insert(index),
                        }
                        continue;
                    }
                    Ok(Some(why)) => anyhow!(
                        "{chain}; {why}, so the run stops (--on-error skip skips a message, not \
                         a handler that cannot run)"
                    ),
                    Err(restart) => anyhow!(
                        "{chain}; and starting it again failed: {}",
                        crate::error_chain(&restart)
                    ),
                };
                let from = unanswered_from.unwrap_or(index);
                outcome.failed.retain(|(failed, _)| *failed < from);
                outcome.duplicates.retain(|duplicate| *duplicate < from);
                let error = match from < index {
                    true => anyhow!(
                        "{}; the batch ends at {}:{}, where those handlers began to fail: its \
                         messages from there on are not counted, and a re-run sends them again",
                        crate::error_chain(&error),
                        batch[from].partition,
                        batch[from].offset
                    ),
                    false => error,
                };
                stopped = Some((from, error));
                break;
            }
        };
        unanswered_from = None;
        let took = match first_answer {
            true => Duration::ZERO,
            false => asked.elapsed(),
        };
        slowest_answer = Some(slowest_answer.map_or(took, |slowest| slowest.max(took)));
        if reply.get("ok") == Some(&Value::Bool(true)) {
            applied.insert(id_key.of(id));
            ok.push(message);
            outcome.processed.push(index);
        } else {
            let error = match (reply.get("error").and_then(Value::as_str), reply.get("ok")) {
                (Some(error), _) => error.to_string(),
                (None, Some(Value::Bool(false))) => "the handler answered ok: false".to_string(),
                // Anything but true is a failure: the effect cannot be taken as done.
                (None, Some(other)) => format!("the handler answered ok: {other}, not true"),
                (None, None) => format!(
                    "the handler's answer has no \"ok\" field: {}",
                    crate::output::printable(&reply.to_string())
                ),
            };
            outcome.failed.push((index, error));
        }
    }
    // A last answer given twice shows only now, and answers out of step only now if their
    // extra line came late. A handler that failed is past asking.
    if stopped.is_none() {
        let wait = match slowest_answer {
            Some(slowest) => (slowest * 2)
                .min(UNASKED_WAIT_MAX)
                .min(started.elapsed() / UNASKED_WAIT_SHARE)
                .max(UNASKED_WAIT_MIN),
            None => Duration::ZERO,
        };
        if let Err(error) = unasked_line(exec, wait).await {
            end_exec(exec).await;
            return Err(error);
        }
    }
    if !ok.is_empty() {
        let recorded = retried(output, CONNECTION_ATTEMPTS, async || {
            in_write_transaction(store, async |conn| {
                insert_new(store, conn, consumer, topic, &ok)
                    .await
                    .map(|_| ())
            })
            .await
        })
        .await;
        if let Err(failure) = recorded {
            let lost = match failure.connection_lost {
                true => format!(
                    " (the connection to the database was lost or refused; tried \
                     {CONNECTION_ATTEMPTS} times)"
                ),
                false => String::new(),
            };
            // Their effects happened, but nothing says so: a re-run sends them again.
            return Err(failure.error.context(format!(
                "could not record in the inbox the {} event(s) of this batch the handler \
                 answered ok for{lost}; a re-run sends them to the handler again",
                ok.len()
            )));
        }
    }
    // The run ends here; what the handler answered is reported as a batch's is.
    outcome.stopped = stopped.map(|(index, error)| match ok.len() {
        0 => (index, error),
        // The cause first, as every other failure of the handler reads.
        recorded => (
            index,
            anyhow!(
                "{}; {} of this batch it had answered ok for {} recorded in the inbox",
                crate::error_chain(&error),
                match recorded {
                    1 => "the 1 event".to_string(),
                    n => format!("the {n} events"),
                },
                if recorded == 1 { "is" } else { "are" }
            ),
        ),
    });
    Ok(outcome)
}

fn open_dead_letter(path: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("could not open the dead-letter file {}", path.display()))
}

/// Whether the real run could open the dead-letter file, asked without writing: a dry run
/// fails where the real run would, before anything is read.
fn check_dead_letter(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let failed = |error: std::io::Error| {
        anyhow::Error::from(error).context(format!(
            "could not open the dead-letter file {}",
            path.display()
        ))
    };
    if path.exists() {
        return std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(drop)
            .map_err(failed);
    }
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    let folder = std::ffi::CString::new(folder.as_os_str().as_bytes())
        .map_err(|error| failed(std::io::Error::other(error)))?;
    // SAFETY: access(2) reads the NUL-terminated path and nothing else.
    match unsafe { libc::access(folder.as_ptr(), libc::W_OK | libc::X_OK) } {
        0 => Ok(()),
        _ => Err(failed(std::io::Error::last_os_error())),
    }
}

fn write_dead_letter(
    file: &mut Option<std::fs::File>,
    topic: &str,
    message: &Replayed,
    error: &str,
) -> anyhow::Result<()> {
    if let Some(file) = file {
        let mut record = message.to_json(topic);
        record["error"] = json!(error);
        writeln!(file, "{record}").context("could not write the dead-letter file")?;
    }
    Ok(())
}

/// Each partition's last offset read, raised to the batch's.
fn note_last_offsets(
    summaries: &mut BTreeMap<i32, PartitionSummary>,
    last_offsets: BTreeMap<i32, i64>,
) {
    for (partition, offset) in last_offsets {
        let summary = summaries
            .get_mut(&partition)
            .expect("read only assigned partitions");
        summary.last_offset = Some(summary.last_offset.map_or(offset, |o| o.max(offset)));
    }
}

/// What a stop at once reports of the batches so far.
fn note_done(stop: &StopRequest, args: &ReplayArgs, summaries: &BTreeMap<i32, PartitionSummary>) {
    let text = match summaries.values().map(|s| s.messages).sum::<u64>() {
        // Said as "nothing was done yet".
        0 => String::new(),
        messages => format!("{messages} messages read, each finished batch committed"),
    };
    stop.note_done(text, || summary_json(args, summaries));
}

/// The JSON summary's fields that count messages, as far as the batches so far go.
fn summary_json(args: &ReplayArgs, summaries: &BTreeMap<i32, PartitionSummary>) -> Value {
    json!({
        "topic": args.topic,
        "consumer": args.consumer,
        "dry_run": args.dry_run,
        "interrupted": false,
        "partitions": summaries.values().collect::<Vec<_>>(),
        "messages": summaries.values().map(|s| s.messages).sum::<u64>(),
        "processed": summaries.values().map(|s| s.processed).sum::<u64>(),
        "skipped_duplicate": summaries.values().map(|s| s.skipped_duplicate).sum::<u64>(),
        "failed": summaries.values().map(|s| s.failed).sum::<u64>(),
        "missing_id": summaries.values().map(|s| s.missing_id).sum::<u64>(),
    })
}

fn print_summary(
    args: &ReplayArgs,
    summaries: &BTreeMap<i32, PartitionSummary>,
    elapsed: Duration,
    interrupted: bool,
    error: Option<String>,
    output: &Output,
) -> anyhow::Result<()> {
    let messages: u64 = summaries.values().map(|s| s.messages).sum();
    let rate = if elapsed.as_secs_f64() > 0.0 {
        messages as f64 / elapsed.as_secs_f64()
    } else {
        0.0
    };
    if output.format == Format::Json {
        let mut summary = summary_json(args, summaries);
        summary["interrupted"] = json!(interrupted);
        summary["elapsed_ms"] = json!(elapsed.as_millis());
        summary["messages_per_second"] = json!(rate);
        // Why a run that failed stopped (it is also on stderr).
        if let Some(error) = error {
            summary["error"] = json!(error);
        }
        return output.print_json(&summary);
    }
    let (processed, skipped) = if args.dry_run {
        ("WOULD PROCESS", "WOULD SKIP")
    } else {
        ("PROCESSED", "SKIPPED (IN INBOX)")
    };
    let mut t = table(
        &[
            "PARTITION",
            "FROM",
            "TO",
            "MESSAGES",
            processed,
            skipped,
            "FAILED",
            "MISSING ID",
            "LAST OFFSET",
        ],
        &[0, 1, 2, 3, 4, 5, 6, 7, 8],
    );
    for s in summaries.values() {
        t.add_row(vec![
            s.partition.to_string(),
            s.from.to_string(),
            s.to.to_string(),
            s.messages.to_string(),
            s.processed.to_string(),
            s.skipped_duplicate.to_string(),
            s.failed.to_string(),
            s.missing_id.to_string(),
            or_dash(s.last_offset),
        ]);
    }
    output.print(t.to_string());
    output.print(summary_line(
        args.dry_run,
        summaries,
        elapsed.as_secs_f64(),
        rate,
    ));
    Ok(())
}

/// The last line of the table output: what was read, and what became of it, so that a run
/// whose messages all failed does not read as a success.
fn summary_line(
    dry_run: bool,
    summaries: &BTreeMap<i32, PartitionSummary>,
    seconds: f64,
    rate: f64,
) -> String {
    let sum = |count: fn(&PartitionSummary) -> u64| summaries.values().map(count).sum::<u64>();
    let messages = sum(|s| s.messages);
    let (processed, skipped) = if dry_run {
        ("would be processed", "already in the inbox or repeated")
    } else {
        ("processed", "already in the inbox")
    };
    let mut outcome = vec![format!("{} {processed}", sum(|s| s.processed))];
    for (count, what) in [
        (sum(|s| s.skipped_duplicate), skipped),
        (sum(|s| s.failed), "failed"),
        (sum(|s| s.missing_id), "without an event id"),
    ] {
        if count > 0 {
            outcome.push(format!("{count} {what}"));
        }
    }
    format!(
        "{} {messages} message{} in {seconds:.2}s ({rate:.0} msg/s): {}{}",
        if dry_run { "Dry run: read" } else { "Read" },
        if messages == 1 { "" } else { "s" },
        outcome.join(", "),
        if dry_run { "; nothing was written" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process group whose only member has exited but is not reaped is a zombie that
    /// kill(2) still finds: it no longer runs. A sleeping one does.
    #[test]
    fn a_group_of_zombies_runs_no_more() {
        use std::os::unix::process::CommandExt;
        let mut exited = std::process::Command::new("sh")
            .args(["-c", "exit 0"])
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = exited.id();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            if state_and_group(&stat).is_some_and(|(state, _)| state == "Z") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "never exited: {stat}");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(super::super::signal_group(pid, 0));
        assert!(!group_runs(pid));
        exited.wait().unwrap();

        let mut sleeping = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let runs = group_runs(sleeping.id());
        sleeping.kill().unwrap();
        sleeping.wait().unwrap();
        assert!(runs);
    }

    /// Each object of the exec handler's line holds a repeated header's last value only: a
    /// binary first value must not linger in `headers_base64` beside a text last one.
    #[test]
    fn a_header_given_twice_goes_to_the_handler_with_its_last_value() {
        let message = Replayed {
            partition: 0,
            offset: 3,
            key: None,
            headers: vec![
                ("event_id".into(), Some(b"first-A".to_vec())),
                ("raw".into(), Some(b"\xff\x01".to_vec())),
                ("event_id".into(), Some(b"last-B".to_vec())),
                ("raw".into(), Some(b"text".to_vec())),
            ],
            timestamp: None,
            payload: None,
            event_id: Some("last-B".into()),
        };
        let line = message.to_json("orders");
        assert_eq!(
            line["headers"],
            json!({"event_id": "last-B", "raw": "text"})
        );
        assert!(line.get("headers_base64").is_none(), "{line}");
    }

    #[test]
    fn starts_in_every_form() {
        assert_eq!(parse_start("earliest").unwrap(), Start::Earliest);
        assert_eq!(parse_start("42").unwrap(), Start::Offset(42));
        assert_eq!(
            parse_start("0:5,2:7").unwrap(),
            Start::PerPartition(BTreeMap::from([(0, 5), (2, 7)]))
        );
        assert_eq!(
            parse_start("-2h").unwrap(),
            Start::Ago(Duration::from_secs(7200))
        );
        assert_eq!(
            parse_start("committed:billing").unwrap(),
            Start::Committed("billing".into())
        );
        assert!(matches!(
            parse_start("2026-11-01T08:00:00Z").unwrap(),
            Start::Time(_)
        ));
        assert!(parse_start("soon")
            .unwrap_err()
            .contains("expected earliest"));
        assert!(parse_start("-7x").is_err());
        assert!(parse_start("committed:").is_err());
        assert_eq!(
            parse_start("0:5,0:6").unwrap_err(),
            "partition 0 is given two starts, 5 and 6"
        );
        assert_eq!(
            parse_start("0:5,1:2,0:5").unwrap(),
            Start::PerPartition(BTreeMap::from([(0, 5), (1, 2)]))
        );
        // A wrong pair of a list is named; a date its own reason.
        assert_eq!(
            parse_start("0:5, 1:x").unwrap_err(),
            "'1:x' in '0:5, 1:x' is not P:OFFSET (a partition and an offset, both 0 or more)"
        );
        assert!(parse_start("0000-01-01")
            .unwrap_err()
            .contains("is in the year 0"));
    }

    #[test]
    fn the_summary_line_says_what_became_of_the_messages() {
        let partition = |partition, processed, skipped_duplicate, failed, missing_id| {
            let summary = PartitionSummary {
                partition,
                from: 0,
                to: 10,
                messages: processed + skipped_duplicate + failed + missing_id,
                processed,
                skipped_duplicate,
                failed,
                missing_id,
                last_offset: Some(9),
            };
            (partition, summary)
        };
        let all_new = BTreeMap::from([partition(0, 10, 0, 0, 0)]);
        assert_eq!(
            summary_line(false, &all_new, 0.104, 96.2),
            "Read 10 messages in 0.10s (96 msg/s): 10 processed"
        );
        let all_failed = BTreeMap::from([partition(0, 0, 0, 1, 0)]);
        assert_eq!(
            summary_line(false, &all_failed, 0.5, 2.0),
            "Read 1 message in 0.50s (2 msg/s): 0 processed, 1 failed"
        );
        let mixed = BTreeMap::from([partition(0, 3, 4, 0, 1), partition(1, 2, 0, 1, 0)]);
        assert_eq!(
            summary_line(false, &mixed, 1.0, 11.0),
            "Read 11 messages in 1.00s (11 msg/s): 5 processed, 4 already in the inbox, \
             1 failed, 1 without an event id"
        );
        assert_eq!(
            summary_line(true, &mixed, 1.0, 11.0),
            "Dry run: read 11 messages in 1.00s (11 msg/s): 5 would be processed, \
             4 already in the inbox or repeated, 1 failed, 1 without an event id; \
             nothing was written"
        );
    }

    #[test]
    fn ends_in_every_form() {
        assert_eq!(parse_end("latest").unwrap(), End::Latest);
        assert_eq!(parse_end("100").unwrap(), End::Offset(100));
        assert!(matches!(parse_end("2026-11-01").unwrap(), End::Time(_)));
        assert!(parse_end("-5").is_err());
        assert!(parse_end("later").unwrap_err().contains("expected latest"));
    }
}
