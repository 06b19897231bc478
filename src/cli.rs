//! The command line: one struct per command, shared option groups flattened where needed.

use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::kafka::KafkaOpts;
use crate::time::{parse_duration, parse_lock_timeout, parse_timestamp};

/// The command line as clap reads it, then options given on it that would do nothing
/// without another, which clap cannot tell: their flags have defaults, or an environment
/// variable that a cron line carries for every command. Refused as a usage error, since the
/// operator meant something by them.
pub fn parse() -> Result<Cli, clap::Error> {
    let mut command = Cli::command();
    let matches = command.try_get_matches_from_mut(std::env::args_os())?;
    if let Some(problem) = given_in_vain(&matches) {
        // With the usage line of the command it was given to.
        let (mut given_to, mut at) = (&command, &matches);
        while let Some((name, sub)) = at.subcommand() {
            match given_to.find_subcommand(name) {
                Some(found) => (given_to, at) = (found, sub),
                None => break,
            }
        }
        let mut given_to = given_to.clone();
        return Err(given_to.error(clap::error::ErrorKind::ArgumentConflict, problem));
    }
    Cli::from_arg_matches(&matches)
}

/// The first option of the command line that its command would not use, and why.
fn given_in_vain(matches: &ArgMatches) -> Option<String> {
    let given = |matches: &ArgMatches, id: &str| {
        matches.try_get_raw(id).is_ok_and(|value| value.is_some())
            && matches.value_source(id) == Some(ValueSource::CommandLine)
    };
    let flag = |matches: &ArgMatches, id: &str| matches.get_flag(id);
    match matches.subcommand()? {
        ("prune", prune) if !given(prune, "group") => [
            ("brokers", "--brokers"),
            ("properties", "-X"),
            ("kafka_timeout", "--kafka-timeout"),
        ]
        .into_iter()
        .find(|(id, _)| given(prune, id))
        .map(|(_, option)| {
            format!(
                "{option} is for --group GROUP, whose committed offsets keep the rows it could \
                 still have redelivered; without --group prune asks no broker"
            )
        }),
        ("offsets", offsets) => match offsets.subcommand()? {
            ("reset", reset) if given(reset, "consumer") && !flag(reset, "to_inbox") => Some(
                "--consumer names the inbox consumer of --to-inbox; without --to-inbox the \
                 inbox is not read"
                    .to_string(),
            ),
            ("reset", reset) if given(reset, "undo_file") && !flag(reset, "execute") => Some(
                "--undo-file is where --execute writes the undo plan; without --execute \
                 nothing is applied and no undo plan is written"
                    .to_string(),
            ),
            _ => None,
        },
        _ => None,
    }
}

/// A whole number, in words rather than Rust's ("invalid digit found in string").
fn parse_whole(text: &str) -> Result<i64, String> {
    match text.trim().parse::<i64>() {
        Ok(number) => Ok(number),
        Err(error)
            if matches!(
                error.kind(),
                std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow
            ) =>
        {
            Err(format!("'{text}' is too large"))
        }
        Err(_) => Err(format!("'{text}' is not a whole number")),
    }
}

/// A whole number of 0 or more.
fn parse_zero_or_more(text: &str) -> Result<i64, String> {
    match parse_whole(text)? {
        negative if negative < 0 => Err(format!("must be 0 or more, not {negative}")),
        number => Ok(number),
    }
}

/// A count to show: 0 or more.
fn parse_show(text: &str) -> Result<usize, String> {
    Ok(usize::try_from(parse_zero_or_more(text)?).unwrap_or(usize::MAX))
}

/// A count of rows: a whole number of at least 1.
fn parse_count(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".to_string()),
        Ok(count) => Ok(count),
        Err(error) if *error.kind() == std::num::IntErrorKind::PosOverflow => {
            Err(format!("'{text}' is too large"))
        }
        Err(_) => Err(format!("'{text}' is not a whole number of at least 1")),
    }
}

/// A count of rows from 1 to `max`; `why` follows the refusal of a larger one.
fn parse_count_at_most(text: &str, max: u64, why: &str) -> Result<u64, String> {
    match parse_count(text)? {
        count if count > max => Err(format!("{count} is more than {max}{why}")),
        count => Ok(count),
    }
}

/// `--handler-timeout`: a duration, and more than none.
fn parse_handler_timeout(text: &str) -> Result<Duration, String> {
    crate::time::parse_more_than_nothing(
        text,
        "the handler must be given some time: expected e.g. 30s or 2m",
    )
}

/// `--older-than`: a duration, and more than none (`${RETENTION}d` with RETENTION=0, say),
/// which would delete every row, and with them the deduplication.
/// Under a millisecond is none: the cutoff is to the millisecond.
fn parse_retention(text: &str) -> Result<Duration, String> {
    match crate::time::parse_duration(text)? {
        short if short < Duration::from_millis(1) => Err(
            "every row would be deleted, the ones processed a moment ago too, and with them \
             the deduplication of any redelivery; expected a retention such as 7d"
                .to_string(),
        ),
        retention => Ok(retention),
    }
}

/// prune's batch size: 1 to 10,000,000. Each batch is one transaction, and a larger one is
/// one unbounded DELETE by another name.
fn parse_prune_batch_size(text: &str) -> Result<u64, String> {
    parse_count_at_most(text, 10_000_000, " (each batch is one transaction)")
}

#[derive(Debug, Parser)]
#[command(
    name = "inboxctl",
    version,
    about = "Operate the inbox (processed_messages) of Kafka consumers: migrate, inspect, prune, \
             offsets, compare, replay",
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOpts,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalOpts {
    /// Output format: tables for people, JSON for scripts, CSV where rows are the point
    #[arg(long, global = true, value_enum, default_value_t = Format::Table)]
    pub format: Format,

    /// Print more detail on stderr (repeat for more)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Only errors and warnings on stderr (no progress bars, no notes)
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, upgrade or downgrade the processed_messages table
    Migrate(MigrateArgs),
    /// Show what the inbox holds: rows per consumer, ages, offset ranges; or look up one event
    Inspect(InspectArgs),
    /// Delete rows older than a retention, in small batches
    Prune(PruneArgs),
    /// Show or reset a consumer group's committed offsets
    Offsets(OffsetsArgs),
    /// Compare a group's committed offsets with the inbox: lost, pending redelivery, orphans
    Compare(CompareArgs),
    /// Re-drive a range of a topic through an idempotent handler, each event exactly once
    Replay(ReplayArgs),
    /// Print a shell completion script
    Completions(CompletionsArgs),
}

#[derive(Debug, Clone, Args)]
pub struct DatabaseOpts {
    /// Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "sqlite://inbox.db",
        hide_env_values = true
    )]
    pub database_url: String,

    /// Give up connecting after this long (e.g. 5s, 1m)
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::time::parse_timeout, allow_hyphen_values = true)]
    pub connect_timeout: Duration,
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(subcommand)]
    pub command: MigrateCommand,
}

#[derive(Debug, Subcommand)]
pub enum MigrateCommand {
    /// Apply every pending migration (creates the database file for SQLite)
    Run {
        #[command(flatten)]
        database: DatabaseOpts,
        /// Print the SQL that would run and change nothing
        #[arg(long)]
        dry_run: bool,
        /// How long a migration may wait for a lock on the inbox's tables (PostgreSQL, MySQL),
        /// which the application's open transactions hold, before it gives up; the
        /// application's statements queue behind it meanwhile. 0 waits without limit
        /// [default: the session's own limit where it has one, 5s otherwise]
        #[arg(long, value_name = "DURATION", value_parser = parse_lock_timeout, allow_hyphen_values = true)]
        lock_timeout: Option<Duration>,
    },
    /// List the migrations and whether each is applied
    Status {
        #[command(flatten)]
        database: DatabaseOpts,
    },
    /// Undo the last migration, or every migration above --to
    Revert {
        #[command(flatten)]
        database: DatabaseOpts,
        /// Revert down to this version (0 reverts everything and drops the table)
        #[arg(long, value_name = "VERSION", allow_negative_numbers = true, value_parser = parse_zero_or_more)]
        to: Option<i64>,
        /// Print the SQL that would run and change nothing
        #[arg(long)]
        dry_run: bool,
        /// Do not ask before dropping a table that holds rows, or (reverting migration 2) the
        /// topic, partition and offset rows hold
        #[arg(long, short = 'y')]
        yes: bool,
        /// How long a migration may wait for a lock on the inbox's tables (PostgreSQL, MySQL),
        /// which the application's open transactions hold, before it gives up; the
        /// application's statements queue behind it meanwhile. 0 waits without limit
        /// [default: the session's own limit where it has one, 5s otherwise]
        #[arg(long, value_name = "DURATION", value_parser = parse_lock_timeout, allow_hyphen_values = true)]
        lock_timeout: Option<Duration>,
    },
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub database: DatabaseOpts,

    /// Only this consumer
    #[arg(long, value_name = "CONSUMER", value_parser = non_empty)]
    pub consumer: Option<String>,

    /// Look up one event id: did we process it, when, from where?
    #[arg(long, value_name = "ID", value_parser = non_empty_id)]
    pub event_id: Option<String>,

    /// Row counts from the planner's statistics (PostgreSQL, MySQL), without reading the rows:
    /// fast on large tables of few consumers (it asks twice per consumer), no ages or
    /// partitions
    #[arg(long, conflicts_with = "event_id")]
    pub estimate: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("cutoff").required(true).args(["older_than", "before"])))]
pub struct PruneArgs {
    #[command(flatten)]
    pub database: DatabaseOpts,

    /// Delete rows processed longer ago than this (e.g. 7d, 36h, 2w; 1m is a minute, 1M a
    /// month)
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = parse_retention,
        allow_hyphen_values = true
    )]
    pub older_than: Option<Duration>,

    /// Delete rows processed before this time (RFC 3339, or YYYY-MM-DD[ HH:MM[:SS]] in UTC)
    #[arg(long, value_name = "TIMESTAMP", value_parser = parse_timestamp)]
    pub before: Option<DateTime<Utc>>,

    /// Only this consumer's rows
    #[arg(long, value_name = "CONSUMER", value_parser = non_empty)]
    pub consumer: Option<String>,

    /// Rows deleted per transaction, at most 10000000 [default: 20000 on PostgreSQL, 5000 on
    /// SQLite and MySQL]
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = parse_prune_batch_size)]
    pub batch_size: Option<u64>,

    /// Stop after deleting this many rows in all
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = parse_count)]
    pub max_rows: Option<u64>,

    /// Wait this long after each batch (e.g. 2ms), leaving the database to the application's
    /// own writes: a slower prune for steadier latency [default: 0s; on SQLite, as long as
    /// the batch took]
    #[arg(long, value_name = "DURATION", value_parser = crate::time::parse_wait, allow_hyphen_values = true)]
    pub pause: Option<Duration>,

    /// How batches find their rows: `index` takes the oldest first through the (consumer,
    /// processed_at) index; `blocks` (PostgreSQL) reads the table's pages in physical order,
    /// one page range per batch, as one DELETE would; `auto` takes blocks on PostgreSQL when
    /// at least a tenth of the table goes and no --max-rows is given, index otherwise
    #[arg(long, value_enum, value_name = "STRATEGY", default_value_t = PruneStrategy::Auto)]
    pub strategy: PruneStrategy,

    /// Count what would be deleted and delete nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Do not ask for confirmation (required when not on a terminal, e.g. from cron); the
    /// rows are then deleted without being counted first
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// Keep every row this consumer group could still have redelivered (offset >= its
    /// committed offset for that partition); prunes only consumer GROUP unless --consumer
    /// names the group's inbox consumer; needs the brokers
    #[arg(long, value_name = "GROUP", value_parser = non_empty)]
    pub group: Option<String>,

    #[command(flatten)]
    pub kafka: KafkaOpts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PruneStrategy {
    Auto,
    Index,
    Blocks,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to generate the script for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct OffsetsArgs {
    #[command(subcommand)]
    pub command: OffsetsCommand,
}

#[derive(Debug, Subcommand)]
pub enum OffsetsCommand {
    /// Committed offset, log start, log end and lag per partition, and the group's state;
    /// without --group, the groups there are
    Show(OffsetsShowArgs),
    /// Move the group's committed offsets (dry run unless --execute)
    Reset(Box<OffsetsResetArgs>),
}

#[derive(Debug, Args)]
pub struct OffsetsShowArgs {
    #[command(flatten)]
    pub kafka: KafkaOpts,

    /// The consumer group; without it, every group the brokers know, with its state and
    /// member count
    #[arg(long, short = 'g', value_name = "GROUP", value_parser = non_empty)]
    pub group: Option<String>,

    /// Only these topics (repeatable); default: every topic the group has offsets for
    #[arg(long, short = 't', value_name = "TOPIC", value_parser = parse_topic, requires = "group")]
    pub topic: Vec<String>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args([
    "to_earliest", "to_latest", "to_offset", "to_datetime", "by_duration", "shift_by", "to_inbox", "from_file",
])))]
pub struct OffsetsResetArgs {
    #[command(flatten)]
    pub kafka: KafkaOpts,

    /// The consumer group; it must have no active members
    #[arg(long, short = 'g', value_name = "GROUP", value_parser = non_empty)]
    pub group: String,

    /// TOPIC or TOPIC:P,P,… (repeatable); not needed with --from-file or --all-topics
    #[arg(long, short = 't', value_name = "TOPIC[:P,…]", value_parser = parse_topic_partitions)]
    pub topic: Vec<TopicPartitions>,

    /// Every partition the group has a committed offset for, in every topic
    #[arg(long, conflicts_with_all = ["topic", "from_file"])]
    pub all_topics: bool,

    /// To each partition's log start
    #[arg(long)]
    pub to_earliest: bool,
    /// To each partition's log end (skip everything not yet read)
    #[arg(long)]
    pub to_latest: bool,
    /// To this offset in every partition named
    // Negative numbers pass clap, for the command's own message on them.
    #[arg(long, value_name = "OFFSET", allow_negative_numbers = true, value_parser = parse_whole)]
    pub to_offset: Option<i64>,
    /// To the first message at or after this time (RFC 3339, or YYYY-MM-DD[ HH:MM[:SS]] UTC)
    #[arg(long, value_name = "TIMESTAMP", value_parser = parse_timestamp)]
    pub to_datetime: Option<DateTime<Utc>>,
    /// To the first message at or after this long ago (e.g. 30m, 2h)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
    pub by_duration: Option<Duration>,
    /// Move each committed offset by N (negative: back)
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = parse_whole)]
    pub shift_by: Option<i64>,
    /// To the inbox's position: highest processed offset + 1 per partition
    #[arg(long)]
    pub to_inbox: bool,
    /// Apply a plan file: CSV with topic,partition,offset (as --export and undo files are)
    #[arg(long, value_name = "PLAN.csv")]
    pub from_file: Option<std::path::PathBuf>,

    /// The inbox consumer for --to-inbox (default: the group name)
    #[arg(long, value_name = "CONSUMER", value_parser = non_empty)]
    pub consumer: Option<String>,

    #[command(flatten)]
    pub database: DatabaseOpts,

    /// Apply the new offsets (without it, only show them)
    #[arg(long, conflicts_with = "export")]
    pub execute: bool,

    /// Only show the new offsets, as without --execute (for kafka-consumer-groups.sh habits)
    #[arg(long, conflicts_with = "execute")]
    pub dry_run: bool,

    /// Write the computed plan to this CSV file instead of applying it (`-`: to standard output)
    #[arg(long, value_name = "PLAN.csv")]
    pub export: Option<std::path::PathBuf>,

    /// Where --execute writes the undo plan (default: inboxctl-undo-GROUP-TIME.csv here)
    #[arg(long, value_name = "PATH")]
    pub undo_file: Option<std::path::PathBuf>,
}

/// A topic and, optionally, some of its partitions (`orders` or `orders:0,2`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicPartitions {
    pub topic: String,
    pub partitions: Option<Vec<i32>>,
}

pub fn parse_topic_partitions(text: &str) -> Result<TopicPartitions, String> {
    let (topic, partitions) = match text.split_once(':') {
        Some((topic, list)) => {
            let partitions = list
                .split(',')
                .map(|p| {
                    p.trim()
                        .parse::<i32>()
                        .ok()
                        .filter(|p| *p >= 0)
                        .ok_or_else(|| format!("'{p}' is not a partition number (expected TOPIC:P,P,… e.g. orders:0,2)"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            (topic, Some(partitions))
        }
        None => (text, None),
    };
    if topic.trim().is_empty() {
        return Err("the topic name is empty (expected TOPIC or TOPIC:P,P,…)".to_string());
    }
    Ok(TopicPartitions {
        topic: parse_topic(topic)?,
        partitions,
    })
}

/// A name Kafka accepts for a topic: 1 to 249 of ASCII letters, digits, '.', '_' and '-'.
/// Anything else cannot name a topic, and the broker would only answer InvalidTopic.
/// A consumer or group name: an empty or blank one is a mistake (`--consumer "$GROUP"` with
/// the variable unset), which would otherwise write or read rows under the consumer ''.
pub fn non_empty(text: &str) -> Result<String, String> {
    match text.trim() {
        "" if text.is_empty() => Err("the name is empty".to_string()),
        "" => Err("the name is only blanks".to_string()),
        _ => Ok(text.to_string()),
    }
}

/// An event id to look up: an empty one is a script's unset variable, which would read as
/// "not processed".
pub fn non_empty_id(text: &str) -> Result<String, String> {
    match text.trim() {
        "" => Err("the event id is empty".to_string()),
        _ => Ok(text.to_string()),
    }
}

pub fn parse_topic(text: &str) -> Result<String, String> {
    let topic = text.trim();
    let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if topic.is_empty() {
        return Err("the topic name is empty".to_string());
    }
    if topic == "." || topic == ".." {
        return Err(format!("'{topic}' is not a Kafka topic name"));
    }
    if let Some(bad) = topic.chars().find(|c| !legal(*c)) {
        let hint = match bad {
            ':' => "; partitions are chosen with TOPIC:P,P only by offsets reset",
            _ => "",
        };
        return Err(format!(
            "'{topic}' is not a Kafka topic name: '{bad}' is not allowed (letters, digits, '.', '_' and '-' are){hint}"
        ));
    }
    if topic.len() > 249 {
        return Err(format!(
            "the topic name is {} characters long; Kafka allows at most 249",
            topic.len()
        ));
    }
    Ok(topic.to_string())
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub kafka: KafkaOpts,

    #[command(flatten)]
    pub database: DatabaseOpts,

    /// The consumer group whose committed offsets are compared
    #[arg(long, short = 'g', value_name = "GROUP", value_parser = non_empty)]
    pub group: String,

    /// Only these topics (repeatable); default: every topic the group has offsets for
    #[arg(long, short = 't', value_name = "TOPIC", value_parser = parse_topic)]
    pub topic: Vec<String>,

    /// The inbox consumer (default: the group name)
    #[arg(long, value_name = "CONSUMER", value_parser = non_empty)]
    pub consumer: Option<String>,

    /// Read the topic from log start to log end: name each lost event, find duplicates, and
    /// match by event id (works on tables without coordinates)
    #[arg(long)]
    pub scan: bool,

    /// Where a message's event id is: header:NAME, json:/pointer, key, coordinates
    /// (default: header event_id, then JSON field event_id)
    #[arg(long, value_name = "SPEC", value_parser = crate::event_id::EventIdSource::parse)]
    pub event_id_from: Option<crate::event_id::EventIdSource>,

    /// Rows processed before WHEN may be gone, deleted by a prune inboxctl did not record
    /// (an application's own DELETE): a timestamp or -DURATION (ago). Offsets are then
    /// checked as after a recorded prune; the later of the two cutoffs counts
    #[arg(long, value_name = "WHEN", allow_hyphen_values = true, value_parser = crate::time::parse_time_or_ago)]
    pub pruned_before: Option<chrono::DateTime<chrono::Utc>>,

    /// Show at most this many offsets or events per finding in tables (JSON lists all, but
    /// without --scan at most 10,000 lost per partition)
    #[arg(
        long,
        value_name = "N",
        default_value_t = 20,
        allow_negative_numbers = true,
        value_parser = parse_show
    )]
    pub show: usize,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("handler").args(["sql", "exec"]).required(false)))]
pub struct ReplayArgs {
    #[command(flatten)]
    pub kafka: KafkaOpts,

    #[command(flatten)]
    pub database: DatabaseOpts,

    /// The topic to replay
    #[arg(long, short = 't', value_name = "TOPIC", value_parser = parse_topic)]
    pub topic: String,

    /// Only these partitions (repeatable); default: all
    #[arg(long, short = 'p', value_name = "P", allow_negative_numbers = true, value_parser = clap::value_parser!(i32).range(0..))]
    pub partition: Vec<i32>,

    /// Where to start: earliest, OFFSET, P:OFFSET,…, a timestamp, -DURATION (ago), committed:GROUP
    #[arg(long, value_name = "START", allow_hyphen_values = true, value_parser = crate::commands::replay::parse_start)]
    pub from: crate::commands::replay::Start,

    /// Where to stop, exclusive: latest, OFFSET, a timestamp; fixed when the command starts
    #[arg(long, value_name = "END", default_value = "latest", allow_hyphen_values = true, value_parser = crate::commands::replay::parse_end)]
    pub to: crate::commands::replay::End,

    /// The inbox consumer the events are recorded under
    #[arg(long, value_name = "CONSUMER", value_parser = non_empty)]
    pub consumer: String,

    /// Where a message's event id is: header:NAME, json:/pointer, key, coordinates
    /// (default: header event_id, then JSON field event_id)
    #[arg(long, value_name = "SPEC", value_parser = crate::event_id::EventIdSource::parse)]
    pub event_id_from: Option<crate::event_id::EventIdSource>,

    /// SQL handler: a file of statements with :placeholders, run in the inbox's transaction
    #[arg(long, value_name = "FILE")]
    pub sql: Option<std::path::PathBuf>,

    /// Exec handler: a command started once, fed one JSON line per message, answering
    /// {"ok":true} or {"ok":false,"error":"…"} per line
    #[arg(long, value_name = "CMD")]
    pub exec: Option<String>,

    /// Exec handler: how long it may take over one message (e.g. 30s). One that takes longer
    /// is stopped, with its process group, and the run ends (exit 1) after recording what it
    /// answered ok for; with --on-error skip, the message fails and a new handler goes on
    /// [default: no limit]
    #[arg(long, value_name = "DURATION", value_parser = parse_handler_timeout, allow_hyphen_values = true)]
    pub handler_timeout: Option<Duration>,

    /// Bind a placeholder to a nested JSON field: NAME=json:/a/b (repeatable)
    #[arg(long, value_name = "NAME=json:/POINTER", value_parser = crate::handler::parse_param)]
    pub param: Vec<(String, String)>,

    /// Say what would run and what would be skipped; write nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Messages per transaction
    #[arg(long, value_name = "N", default_value_t = 500, allow_negative_numbers = true, value_parser = parse_batch_size)]
    pub batch_size: u64,

    /// A message without an event id: fail (stop) or skip it
    #[arg(long, value_enum, default_value_t = OnMissingId::Fail)]
    pub on_missing_id: OnMissingId,

    /// A message the handler fails on: stop, or skip it (and go on)
    #[arg(long, value_enum, default_value_t = OnError::Stop)]
    pub on_error: OnError,

    /// Append failed and skipped messages here as JSON lines, with the error
    #[arg(long, value_name = "FILE")]
    pub dead_letter: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnMissingId {
    Fail,
    Skip,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnError {
    Stop,
    Skip,
}

/// A batch size: 1 to 10,000 (PostgreSQL binds at most 65,535 parameters per statement).
fn parse_batch_size(text: &str) -> Result<u64, String> {
    parse_count_at_most(text, 10_000, "")
}
