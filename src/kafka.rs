//! The Kafka side: one place that builds librdkafka clients from `--brokers` and `-X`, and the
//! few broker calls the commands need, each bounded by `--kafka-timeout` (a commit by a few
//! times it: finding the coordinator takes up to one, and librdkafka tries a commit again
//! after a timeout).
//!
//! Every call here blocks (librdkafka's own threads do the I/O); async callers wrap them in
//! [`tokio::task::block_in_place`].

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::{KafkaError, KafkaResult, RDKafkaErrorCode};
use rdkafka::groups::GroupInfo;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use serde::Serialize;

use crate::error::usage;
use crate::output::{names_a_secret, register_secret};
use crate::time::parse_timeout;

mod batch;

pub use batch::Fetched;
use batch::{Batch, ConsumerQueue};

/// Messages taken off the consumer's queue at a time by [`read_range`].
const READ_BATCH: usize = 1024;

/// Kafka's own topics, which hold no consumer's messages. Only these are left out: a user's
/// topic may start with "__" too, and a group's offsets on it are as much its own (deleting
/// the group to forget some offsets commits the others again, and must not miss any).
const INTERNAL_TOPICS: [&str; 2] = ["__consumer_offsets", "__transaction_state"];

/// The cluster's partitions by topic and partition, and the topics whose metadata came with
/// an error (name, error).
pub struct ListedPartitions {
    pub partitions: Vec<(String, i32)>,
    pub failed: Vec<(String, String)>,
}

#[derive(Debug, Clone, Args)]
pub struct KafkaOpts {
    /// Bootstrap brokers, host:port[,host:port…]
    #[arg(
        long,
        env = "KAFKA_BROKERS",
        default_value = "localhost:9092",
        hide_env_values = true,
        value_parser = parse_brokers
    )]
    pub brokers: String,

    /// A librdkafka property, repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN
    #[arg(short = 'X', value_name = "KEY=VALUE", value_parser = PropertyParser)]
    pub properties: Vec<(String, String)>,

    /// Give up on any one broker call after this long
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_timeout, allow_hyphen_values = true)]
    pub kafka_timeout: Duration,
}

/// `key=value`, as kcat takes it. A value that is not one is shown in the error only when
/// it reads as a librdkafka property's name (lowercase words joined by dots, no digits) that
/// names no secret: `-X sasl.password:hunter2` is all secret, and so may be a bare word or
/// a token (`-X $SASL_PASSWORD`, a JWT).
pub fn parse_property(text: &str) -> Result<(String, String), String> {
    const EXPECTED: &str = "expected KEY=VALUE, e.g. -X security.protocol=SASL_SSL";
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_string(), value.to_string()))
        }
        Some(_) => Err(format!(
            "an -X property has no name before its '='; {EXPECTED}"
        )),
        None => {
            let name = text.trim();
            let plain_name = name.contains('.')
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || "._".contains(c))
                && !names_a_secret(name);
            match plain_name {
                true => Err(format!(
                    "-X {name} has no value; expected KEY=VALUE, e.g. -X {name}=VALUE"
                )),
                false => Err(format!(
                    "an -X property has no '=' (it is not shown: it may hold a secret); {EXPECTED}"
                )),
            }
        }
    }
}

/// [`parse_property`] for clap, whose own message would show the value, secret and all.
#[derive(Clone)]
struct PropertyParser;

impl clap::builder::TypedValueParser for PropertyParser {
    type Value = (String, String);

    fn parse_ref(
        &self,
        command: &clap::Command,
        _argument: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        let refused = |message: String| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("{message}\n"),
            )
            .with_cmd(command)
        };
        let text = value.to_str().ok_or_else(|| {
            refused("an -X property is not UTF-8 text; expected KEY=VALUE".to_string())
        })?;
        parse_property(text).map_err(refused)
    }
}

/// A broker list that names at least one broker, each as librdkafka takes it
/// (`[PROTOCOL://]host[:port]`, see [`check_broker`]). Refused here, a typo would otherwise
/// surface only as a transport failure once `--kafka-timeout` has passed.
fn parse_brokers(text: &str) -> Result<String, String> {
    // Credentials, which Kafka::new refuses: clap would show them in its message.
    if text.contains('@') {
        return Ok(text.trim().to_string());
    }
    let brokers: Vec<&str> = text
        .split(',')
        .map(str::trim)
        .filter(|broker| !broker.is_empty())
        .collect();
    if brokers.is_empty() {
        return Err("names no broker; expected host:port[,host:port…]".to_string());
    }
    for broker in brokers {
        check_broker(broker)?;
    }
    Ok(text.trim().to_string())
}

/// One broker of `--brokers`, read as librdkafka reads one: an optional `PROTOCOL://` (and
/// then anything after a `/` ignored), a port after the last `:` when it is the only one or
/// follows a `]` (so `::1` is an IPv6 host without a port), an empty host for localhost.
fn check_broker(broker: &str) -> Result<(), String> {
    const EXPECTED: &str = "expected host:port[,host:port…]";
    let address = match broker.split_once("://") {
        Some((protocol, address)) => {
            let known = ["plaintext", "ssl", "sasl_plaintext", "sasl_ssl"];
            if !known.contains(&protocol.to_ascii_lowercase().as_str()) {
                return Err(format!(
                    "'{broker}': '{protocol}://' is not a Kafka security protocol; {EXPECTED} \
                     (or PLAINTEXT://, SSL://, SASL_PLAINTEXT://, SASL_SSL:// before it)"
                ));
            }
            address.split('/').next().unwrap_or_default()
        }
        None => broker,
    };
    let (host, port) = match address.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') || host.ends_with(']') => (host, Some(port)),
        _ => (address, None),
    };
    if let Some(bad) = host
        .chars()
        .find(|c| c.is_whitespace() || "/?#".contains(*c))
    {
        return Err(format!(
            "'{broker}': a host name holds no '{bad}'; {EXPECTED}"
        ));
    }
    // As atoi reads it: the leading digits (`9092/` is 9092).
    let number = |port: &str| {
        let digits = port.len() - port.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        port[..digits].parse::<u16>()
    };
    match port.map(|port| (port, number(port))) {
        Some((port, Ok(0) | Err(_))) => Err(format!(
            "'{broker}' has the port '{port}'; expected a number from 1 to 65535"
        )),
        _ => Ok(()),
    }
}

/// A broker list holding `user:password@` (given in `given_in`), refused without being shown.
fn refuse_credentials(given_in: &str, brokers: &str) -> anyhow::Result<()> {
    match brokers.contains('@') {
        true => Err(crate::error::usage(format!(
            "a broker address in {given_in} must not hold a user or password ('@'); give them \
             with -X sasl.username=… -X sasl.password=…"
        ))),
        false => Ok(()),
    }
}

/// `-X bootstrap.servers` (or its older name), which overrides `--brokers`, checked as
/// `--brokers` is: credentials refused without being shown, a typo a usage error.
fn check_bootstrap_property(key: &str, value: &str) -> anyhow::Result<()> {
    refuse_credentials(&format!("-X {key}"), value)?;
    parse_brokers(value)
        .map(drop)
        .map_err(|message| crate::error::usage(format!("-X {key}: {message}")))
}

/// librdkafka's socket timeout takes at most 5 minutes; a longer --kafka-timeout still
/// bounds each call, through the calls' own timeouts.
const MAX_SOCKET_TIMEOUT_MS: u128 = 300_000;

/// A consumer group's state as the coordinator reports it.
#[derive(Debug, Clone, Serialize)]
pub struct GroupState {
    pub group: String,
    /// `Stable`, `Empty`, `PreparingRebalance`, `CompletingRebalance`, `Dead`, or `Unknown`.
    pub state: String,
    pub members: usize,
}

impl GroupState {
    /// What the coordinator said of one group.
    fn of(info: &GroupInfo) -> GroupState {
        GroupState {
            group: info.name().to_string(),
            state: info.state().to_string(),
            members: info.members().len(),
        }
    }

    /// Whether consumers are in the group. DescribeGroups may list no members for a Stable
    /// group (the test broker does), so the state decides, as kafka-consumer-groups.sh does.
    pub fn is_active(&self) -> bool {
        !matches!(self.state.as_str(), "Empty" | "Dead" | "" | "Unknown") || self.members > 0
    }

    /// A group the coordinator has never heard of.
    pub fn is_unknown(&self) -> bool {
        matches!(self.state.as_str(), "Dead" | "" | "Unknown") && self.members == 0
    }
}

/// Log start and end of one partition: the offsets of its first message and of the next one
/// to be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Watermarks {
    pub log_start: i64,
    pub log_end: i64,
}

pub struct Kafka {
    options: KafkaOpts,
}

/// Whether librdkafka's own log lines reach stderr (`-vv`).
static CLIENT_LOGS: AtomicBool = AtomicBool::new(false);

pub fn show_client_logs(show: bool) {
    CLIENT_LOGS.store(show, Ordering::Relaxed);
}

/// Prints librdkafka's log lines, which rdkafka hands to the `log` crate under the target
/// `librdkafka` ("librdkafka: FAIL [thrd:…]: …"), on stderr as they come. Nothing else in
/// inboxctl logs through that crate, and one target in one form needs no logging library.
struct ClientLogPrinter;

impl log::Log for ClientLogPrinter {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.target() == "librdkafka"
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            crate::stderr_line!(
                "{}",
                crate::output::redact_secrets(&record.args().to_string())
            );
        }
    }

    fn flush(&self) {}
}

static CLIENT_LOG_PRINTER: ClientLogPrinter = ClientLogPrinter;

/// Installs [`ClientLogPrinter`] once; without a logger the lines go nowhere.
fn print_client_logs() {
    if log::set_logger(&CLIENT_LOG_PRINTER).is_ok() {
        log::set_max_level(log::LevelFilter::Debug);
    }
}

/// The quoted values of `password="…"` options in a JAAS configuration
/// (`sasl.jaas.config`, `… required username="u" password="p";`).
fn jaas_passwords(config: &str) -> impl Iterator<Item = &str> {
    config.split("password=").skip(1).filter_map(|rest| {
        let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        rest[1..].split(quote).next()
    })
}

impl Kafka {
    pub fn new(options: &KafkaOpts) -> anyhow::Result<Kafka> {
        // Refused here, not while the arguments are read: clap's message would repeat the
        // value, password and all.
        refuse_credentials("--brokers (KAFKA_BROKERS)", &options.brokers)?;
        for (key, value) in &options.properties {
            if key == "bootstrap.servers" || key == "metadata.broker.list" {
                check_bootstrap_property(key, value)?;
            }
            if names_a_secret(key) {
                register_secret(value);
            }
            if key.contains("jaas") {
                jaas_passwords(value).for_each(register_secret);
            }
        }
        Ok(Kafka {
            options: options.clone(),
        })
    }

    /// The brokers the clients start from: `--brokers`, unless `-X bootstrap.servers` (or
    /// its older name) overrides it, as it does in [`Kafka::config`].
    pub fn brokers(&self) -> &str {
        self.options
            .properties
            .iter()
            .rev()
            .find(|(key, _)| key == "bootstrap.servers" || key == "metadata.broker.list")
            .map_or(&self.options.brokers, |(_, brokers)| brokers)
    }

    /// What a group the coordinator does not know and that has no committed offsets is
    /// called, before what it means to the command.
    pub fn unknown_group(&self, group: &str) -> String {
        format!(
            "consumer group '{group}' does not exist on {} (no committed offsets, unknown to the coordinator)",
            self.brokers()
        )
    }

    pub fn timeout(&self) -> Duration {
        self.options.kafka_timeout
    }

    /// The configuration every client starts from: brokers, then `-X` (which may override).
    pub fn config(&self) -> ClientConfig {
        let mut config = ClientConfig::new();
        // librdkafka prints its own log lines on stderr, one for each failed connection
        // attempt of a broker restart that the client then rides out. The commands report
        // what failed in their own words, so these are for -vv, or for -X debug=….
        let client_logs = CLIENT_LOGS.load(Ordering::Relaxed) || self.has_property("debug");
        if client_logs {
            print_client_logs();
        }
        config.set_log_level(match client_logs {
            true => RDKafkaLogLevel::Debug,
            false => RDKafkaLogLevel::Critical,
        });
        config
            .set("bootstrap.servers", &self.options.brokers)
            .set(
                "socket.timeout.ms",
                self.timeout()
                    .as_millis()
                    .clamp(10, MAX_SOCKET_TIMEOUT_MS)
                    .to_string(),
            )
            .set("enable.auto.commit", "false")
            .set("enable.partition.eof", "false")
            .set("allow.auto.create.topics", "false")
            // librdkafka doubles its wait between attempts to reconnect up to 10 s: after a
            // broker restart of a few seconds, a read then sat idle long enough to hit
            // --kafka-timeout although the broker was back. A command waits at most a
            // second between attempts; -X, applied below, still decides.
            .set("reconnect.backoff.max.ms", "1000");
        for (key, value) in &self.options.properties {
            config.set(key, value);
        }
        config
    }

    /// A consumer that never joins a group: it reads group offsets, commits admin-style
    /// (allowed only while the group is empty, as in Kafka) and reads metadata.
    pub fn group_client(&self, group: &str) -> anyhow::Result<KafkaClient> {
        let mut config = self.config();
        config.set("group.id", group);
        // A commit waits for the group coordinator to be found for session.timeout.ms (45 s
        // by default), a wait no other setting bounds. This client never joins its group, so
        // the setting means nothing else here. -X still decides, and the KIP-848 protocol
        // (-X group.protocol=consumer) refuses it.
        if !self.has_property("session.timeout.ms") && !self.has_property("group.protocol") {
            config.set(
                "session.timeout.ms",
                self.timeout()
                    .as_millis()
                    .clamp(1, MAX_SOCKET_TIMEOUT_MS)
                    .to_string(),
            );
        }
        config
            .create()
            .map(KafkaClient)
            .map_err(|error| self.client_error(error))
    }

    /// A consumer for reading topics by assignment; its group id is throwaway and it commits
    /// nothing anywhere.
    pub fn reader(&self, extra: &[(&str, &str)]) -> anyhow::Result<KafkaClient> {
        let mut config = self.config();
        config
            .set(
                "group.id",
                format!("inboxctl-reader-{}", std::process::id()),
            )
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "error");
        for (key, value) in extra {
            config.set(*key, *value);
        }
        // librdkafka waits this long before fetching again once its queue was full (1 s by
        // default), even when the queue has long been drained: a reader that keeps up would
        // sit idle most of the time. -X still decides.
        if !self.has_property("fetch.queue.backoff.ms") {
            config.set("fetch.queue.backoff.ms", "10");
        }
        // The reads have a known end, so there is nothing to wait for at a log's end: the
        // broker need not hold a fetch for new messages (500 ms by default). -X still decides.
        if !self.has_property("fetch.wait.max.ms") {
            config.set("fetch.wait.max.ms", "10");
        }
        config
            .create()
            .map(KafkaClient)
            .map_err(|error| self.client_error(error))
    }

    fn has_property(&self, key: &str) -> bool {
        self.options.properties.iter().any(|(k, _)| k == key)
    }

    fn client_error(&self, error: KafkaError) -> anyhow::Error {
        match error {
            // The key alone: a mistyped one (`sasl.pasword`) is not known to hold a secret.
            // librdkafka's description quotes a value it refuses, of a known property.
            KafkaError::ClientConfig(_, description, key, _) => usage(format!(
                "invalid Kafka client configuration -X {key}: {description}"
            )),
            KafkaError::ClientCreation(message) => usage(format!(
                "invalid Kafka client configuration (-X): {message}"
            )),
            other => anyhow::Error::new(other).context("could not create a Kafka client"),
        }
    }

    fn unreachable(&self, error: KafkaError) -> anyhow::Error {
        // A refused login or an untrusted certificate looks the same as a dead broker from
        // here; say so when security is configured.
        let secured = self.options.properties.iter().any(|(key, _)| {
            key.starts_with("sasl.") || key.starts_with("ssl.") || key == "security.protocol"
        });
        let hint = if secured {
            "; with -X security settings, also check the credentials and certificates"
        } else {
            ""
        };
        anyhow::Error::new(error).context(format!(
            "could not reach the Kafka brokers {} within {} (see --brokers / KAFKA_BROKERS, --kafka-timeout){hint}",
            self.brokers(),
            humantime::format_duration(self.timeout())
        ))
    }

    /// The partition ids of a topic, in order. Unknown topics are an error that says so.
    pub fn partitions(&self, client: &BaseConsumer, topic: &str) -> anyhow::Result<Vec<i32>> {
        let metadata = client
            .fetch_metadata(Some(topic), self.timeout())
            .map_err(|error| self.unreachable(error))?;
        let Some(found) = metadata.topics().iter().find(|t| t.name() == topic) else {
            bail!("topic '{topic}' does not exist on {}", self.brokers());
        };
        if let Some(error) = found.error() {
            let code = RDKafkaErrorCode::from(error);
            if code == RDKafkaErrorCode::UnknownTopicOrPartition
                || code == RDKafkaErrorCode::UnknownTopic
            {
                bail!("topic '{topic}' does not exist on {}", self.brokers());
            }
            bail!("the brokers report an error for topic '{topic}': {code}");
        }
        let mut partitions: Vec<i32> = found.partitions().iter().map(|p| p.id()).collect();
        partitions.sort_unstable();
        if partitions.is_empty() {
            bail!("topic '{topic}' does not exist on {}", self.brokers());
        }
        Ok(partitions)
    }

    /// As [`Kafka::listed_partitions`], but a topic the metadata answers with an error fails:
    /// for `offsets reset --all-topics`, and for deleting a group, whose offsets on every
    /// topic must be committed again.
    pub fn every_partition(&self, client: &BaseConsumer) -> anyhow::Result<Vec<(String, i32)>> {
        let listed = self.listed_partitions(client)?;
        if let Some((topic, error)) = listed.failed.first() {
            bail!(
                "the brokers answered the metadata of topic '{topic}' with an error ({error}): \
                 its partitions, and a group's offsets on them, cannot be listed"
            );
        }
        Ok(listed.partitions)
    }

    /// Every partition of every topic in the cluster (Kafka's internal topics excluded), by
    /// topic and partition, and the topics the metadata answers with an error, left out of
    /// the partitions.
    pub fn listed_partitions(&self, client: &BaseConsumer) -> anyhow::Result<ListedPartitions> {
        let metadata = client
            .fetch_metadata(None, self.timeout())
            .map_err(|error| self.unreachable(error))?;
        let mut partitions = Vec::new();
        let mut failed = Vec::new();
        for topic in metadata.topics() {
            if INTERNAL_TOPICS.contains(&topic.name()) {
                continue;
            }
            if let Some(error) = topic.error() {
                failed.push((
                    topic.name().to_string(),
                    RDKafkaErrorCode::from(error).to_string(),
                ));
                continue;
            }
            partitions.extend(
                topic
                    .partitions()
                    .iter()
                    .map(|p| (topic.name().to_string(), p.id())),
            );
        }
        partitions.sort_unstable();
        Ok(ListedPartitions { partitions, failed })
    }

    pub fn watermarks(
        &self,
        client: &BaseConsumer,
        topic: &str,
        partition: i32,
    ) -> anyhow::Result<Watermarks> {
        let (log_start, log_end) = client
            .fetch_watermarks(topic, partition, self.timeout())
            .with_context(|| {
                format!("could not read the log start and end of {topic}:{partition}")
            })?;
        Ok(Watermarks { log_start, log_end })
    }

    /// The group's committed offset per (topic, partition); `None` where it has none.
    pub fn committed(
        &self,
        client: &BaseConsumer,
        partitions: &[(String, i32)],
    ) -> anyhow::Result<BTreeMap<(String, i32), Option<i64>>> {
        let mut list = TopicPartitionList::new();
        for (topic, partition) in partitions {
            list.add_partition(topic, *partition);
        }
        let committed = client
            .committed_offsets(list, self.timeout())
            .map_err(|error| self.unreachable(error))
            .context("could not read the group's committed offsets")?;
        let mut offsets = BTreeMap::new();
        for element in committed.elements() {
            // An error for one partition is no "nothing committed": compare would take the
            // partition's every row as pending, a reset's undo plan would lose its offset.
            element.error().with_context(|| {
                format!(
                    "could not read the group's committed offset of {}:{}",
                    element.topic(),
                    element.partition()
                )
            })?;
            let offset = match element.offset() {
                Offset::Offset(offset) => Some(offset),
                _ => None,
            };
            offsets.insert((element.topic().to_string(), element.partition()), offset);
        }
        Ok(offsets)
    }

    pub fn group_state(&self, client: &BaseConsumer, group: &str) -> anyhow::Result<GroupState> {
        let list = client
            .fetch_group_list(Some(group), self.timeout())
            .map_err(|error| self.unreachable(error))
            .with_context(|| format!("could not describe group '{group}'"))?;
        let info = list.groups().iter().find(|g| g.name() == group);
        Ok(info.map_or_else(
            || GroupState {
                group: group.to_string(),
                state: "Unknown".to_string(),
                members: 0,
            },
            GroupState::of,
        ))
    }

    /// Whether the brokers know nothing of the group whose `state` this is: its coordinator
    /// does not know it, and it has no committed offset on any of `partitions` (asked only
    /// then). A group that only ever committed (an offsets reset on a new group, say) is
    /// unknown to the coordinator on some brokers, so its offsets decide.
    pub fn knows_nothing_of(
        &self,
        client: &BaseConsumer,
        state: &GroupState,
        partitions: impl FnOnce() -> anyhow::Result<Vec<(String, i32)>>,
    ) -> anyhow::Result<bool> {
        Ok(state.is_unknown()
            && self
                .committed(client, &partitions()?)?
                .values()
                .all(Option::is_none))
    }

    /// Every group the brokers know, by name.
    pub fn groups(&self, client: &BaseConsumer) -> anyhow::Result<Vec<GroupState>> {
        let list = client
            .fetch_group_list(None, self.timeout())
            .map_err(|error| self.unreachable(error))
            .context("could not list the consumer groups")?;
        let mut groups: Vec<GroupState> = list.groups().iter().map(GroupState::of).collect();
        groups.sort_by(|a, b| a.group.cmp(&b.group));
        Ok(groups)
    }

    /// The log start and end of several partitions of a topic: one ListOffsets request per
    /// broker for the earliest offsets and one for the latest, where [`Kafka::watermarks`]
    /// costs two round trips per partition. A partition missing from the answer is asked
    /// about on its own, so its error is the one reported.
    pub fn watermarks_of(
        &self,
        client: &BaseConsumer,
        topic: &str,
        partitions: &[i32],
    ) -> anyhow::Result<BTreeMap<i32, Watermarks>> {
        if partitions.is_empty() {
            return Ok(BTreeMap::new());
        }
        // ListOffsets takes "earliest" and "latest" as the timestamps -2 and -1, the raw
        // values of Offset::Beginning and Offset::End.
        let context = "could not read the log start and end of";
        let starts = self.list_offsets(client, topic, partitions, Offset::Beginning, context)?;
        let ends = self.list_offsets(client, topic, partitions, Offset::End, context)?;
        partitions
            .iter()
            .map(|&partition| {
                let found = |answer: &BTreeMap<i32, KafkaResult<Option<i64>>>| {
                    answer
                        .get(&partition)
                        .and_then(|a| a.clone().ok().flatten())
                };
                let marks = match (found(&starts), found(&ends)) {
                    (Some(log_start), Some(log_end)) => Watermarks { log_start, log_end },
                    _ => self.watermarks(client, topic, partition)?,
                };
                Ok((partition, marks))
            })
            .collect()
    }

    /// For each partition, the first offset whose timestamp is at or after `timestamp_ms`;
    /// `None` when no message is that late (Kafka answers -1 / end). A partition the broker
    /// answered with an error fails the whole question: its callers would otherwise take
    /// "no message that late" and reset, replay or check from the log end.
    pub fn offsets_for_time(
        &self,
        client: &BaseConsumer,
        topic: &str,
        partitions: &[i32],
        timestamp_ms: i64,
    ) -> anyhow::Result<BTreeMap<i32, Option<i64>>> {
        let context = "could not look up offsets by time in";
        // A time before 1970 is before every message, as 1970 itself is; a negative one would
        // read as ListOffsets' special queries (-1 latest, -2 earliest), which librdkafka
        // refuses here.
        let answer = self.list_offsets(
            client,
            topic,
            partitions,
            Offset::Offset(timestamp_ms.max(0)),
            context,
        )?;
        partitions
            .iter()
            .map(|&partition| match answer.get(&partition) {
                Some(Ok(offset)) => Ok((partition, *offset)),
                Some(Err(error)) => Err(anyhow::Error::new(error.clone())
                    .context(format!("{context} {topic}:{partition}"))),
                None => bail!("{context} {topic}:{partition}: the broker's answer left it out"),
            })
            .collect()
    }

    /// One ListOffsets question for every partition (`query` is a timestamp, or earliest or
    /// latest): each partition's answer, `None` where the broker has no such offset (no
    /// message that late), or the partition's own error.
    fn list_offsets(
        &self,
        client: &BaseConsumer,
        topic: &str,
        partitions: &[i32],
        query: Offset,
        context: &str,
    ) -> anyhow::Result<BTreeMap<i32, KafkaResult<Option<i64>>>> {
        let mut list = TopicPartitionList::new();
        for partition in partitions {
            list.add_partition_offset(topic, *partition, query)?;
        }
        let answer = client
            .offsets_for_times(list, self.timeout())
            .map_err(|error| self.unreachable(error))
            .with_context(|| format!("{context} '{topic}'"))?;
        Ok(answer
            .elements()
            .iter()
            .map(|e| {
                let offset = match (e.error(), e.offset()) {
                    (Ok(()), Offset::Offset(offset)) if offset >= 0 => Ok(Some(offset)),
                    (Ok(()), _) => Ok(None),
                    (Err(error), _) => Err(error),
                };
                (e.partition(), offset)
            })
            .collect())
    }

    /// Commits offsets for the group without joining it. Kafka refuses this while the group
    /// has members (UNKNOWN_MEMBER_ID), which is the protection we want.
    ///
    /// librdkafka's synchronous commit has no limit of its own: it tries again after a
    /// timeout, and where no coordinator answers at all (one seen right after the group was
    /// deleted) it waited for good. A commit with no outcome after [`COMMIT_TRIES`] times
    /// --kafka-timeout counts as not answered; its thread is left to the process's end.
    pub fn commit(
        &self,
        client: &std::sync::Arc<KafkaClient>,
        offsets: &[(String, i32, i64)],
    ) -> anyhow::Result<()> {
        let mut list = TopicPartitionList::new();
        for (topic, partition, offset) in offsets {
            list.add_partition_offset(topic, *partition, Offset::Offset(*offset))?;
        }
        let started = Instant::now();
        let not_answered = || {
            anyhow::Error::new(CommitNotAnswered {
                waited: started.elapsed(),
                timeout: self.timeout(),
            })
        };
        let (answered, answer) = std::sync::mpsc::channel();
        let committing = std::sync::Arc::clone(client);
        std::thread::spawn(move || {
            let _ = answered.send(committing.commit(&list, CommitMode::Sync));
        });
        match answer.recv_timeout(self.timeout() * COMMIT_TRIES) {
            Err(_) => Err(not_answered()),
            Ok(Ok(())) => Ok(()),
            Ok(Err(KafkaError::ConsumerCommit(code))) if is_unanswered(code) => Err(not_answered()),
            Ok(Err(error)) => {
                Err(anyhow::Error::new(error)
                    .context("the group coordinator refused the new offsets"))
            }
        }
    }

    /// Deletes an empty group with everything it committed (Kafka's DeleteGroups): the one
    /// request that returns partitions to "no committed offset" without OffsetDelete. A group
    /// the coordinator no longer knows is already gone. A coordinator that answers it is not
    /// (or not yet) the group's is asked again after a pause, as Kafka's own admin client
    /// does, for up to a few times --kafka-timeout: librdkafka finds the coordinator for each
    /// request but does not retry one that moved. Blocks: call it where blocking is allowed
    /// on the runtime (`block_in_place`), as the other broker calls are.
    pub fn delete_group(&self, group: &str) -> anyhow::Result<()> {
        let admin: AdminClient<DefaultClientContext> = self
            .config()
            .create()
            .map_err(|error| self.client_error(error))?;
        let options = AdminOptions::new().request_timeout(Some(self.timeout()));
        let deadline = Instant::now() + self.timeout() * COMMIT_TRIES;
        let mut pause = Duration::from_millis(100);
        loop {
            let answer =
                tokio::runtime::Handle::current().block_on(admin.delete_groups(&[group], &options));
            let code = match answer {
                Ok(results) => match results.into_iter().find_map(Result::err) {
                    None => return Ok(()),
                    Some((_, code)) => code,
                },
                Err(KafkaError::AdminOp(code)) => code,
                Err(error) => {
                    return Err(error).with_context(|| format!("could not delete group '{group}'"))
                }
            };
            match deletion_outcome(code) {
                DeletionOutcome::Gone => return Ok(()),
                DeletionOutcome::NotDone if Instant::now() + pause < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                DeletionOutcome::NotDone | DeletionOutcome::Unanswered => {
                    return Err(DeleteNotAnswered { code }.into())
                }
                DeletionOutcome::Refused => bail!("could not delete group '{group}': {code}"),
            }
        }
    }
}

/// What an error code of a group deletion says of the group.
#[derive(Debug, PartialEq)]
enum DeletionOutcome {
    /// The coordinator does not know the group: it is gone, by this deletion or before.
    Gone,
    /// A broker answered that it is not the group's coordinator, or not ready to be: nothing
    /// was deleted, and the coordinator found anew may take it.
    NotDone,
    /// No answer came: the group may or may not be gone.
    Unanswered,
    /// The coordinator refused it (a group with members, no rights): nothing was deleted.
    Refused,
}

fn deletion_outcome(code: RDKafkaErrorCode) -> DeletionOutcome {
    use RDKafkaErrorCode::*;
    match code {
        GroupIdNotFound => DeletionOutcome::Gone,
        NotCoordinator | CoordinatorNotAvailable | CoordinatorLoadInProgress => {
            DeletionOutcome::NotDone
        }
        code if is_unanswered(code) => DeletionOutcome::Unanswered,
        _ => DeletionOutcome::Refused,
    }
}

/// A group deletion no broker answered (timed out, connection lost), as opposed to one it
/// refused: the group may or may not be gone.
#[derive(Debug)]
pub struct DeleteNotAnswered {
    pub code: RDKafkaErrorCode,
}

impl std::fmt::Display for DeleteNotAnswered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the deletion of the group was not answered ({})",
            self.code
        )
    }
}

impl std::error::Error for DeleteNotAnswered {}

/// How many times --kafka-timeout a commit may go without an outcome: librdkafka's own tries
/// of one that no coordinator answers ended after about four (8.2 s with `2s`).
const COMMIT_TRIES: u32 = 5;

/// A commit that no coordinator answered (not found, timed out, connection lost), as opposed
/// to one it refused: the offsets may or may not have been committed.
#[derive(Debug)]
pub struct CommitNotAnswered {
    pub waited: Duration,
    pub timeout: Duration,
}

impl std::fmt::Display for CommitNotAnswered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // librdkafka tries again after a timeout, so the wait is longer than one.
        write!(
            f,
            "the group coordinator did not answer the commit in {:.1}s (--kafka-timeout is {} a try)",
            self.waited.as_secs_f64(),
            humantime::format_duration(self.timeout)
        )
    }
}

impl std::error::Error for CommitNotAnswered {}

/// Errors of a commit that mean no answer came, rather than a refusal.
fn is_unanswered(code: RDKafkaErrorCode) -> bool {
    use RDKafkaErrorCode::*;
    matches!(
        code,
        OperationTimedOut
            | RequestTimedOut
            | WaitingForCoordinator
            | CoordinatorNotAvailable
            | NotCoordinator
            | CoordinatorLoadInProgress
            | BrokerTransportFailure
            | AllBrokersDown
            | NetworkException
            | BrokerNotAvailable
    )
}

/// A librdkafka consumer that closes promptly when dropped. rdkafka's own drop closes it
/// and polls in steps of 100 ms until it is closed, which it usually is a few milliseconds
/// into the first: every command would wait most of 0.1 s for nothing. This one polls every
/// millisecond first; rdkafka's drop then finds it closed.
pub struct KafkaClient(BaseConsumer);

impl std::ops::Deref for KafkaClient {
    type Target = BaseConsumer;
    fn deref(&self) -> &BaseConsumer {
        &self.0
    }
}

impl Drop for KafkaClient {
    fn drop(&mut self) {
        // Serves what is queued first: librdkafka's log lines wait in the client's queue
        // (rdkafka routes them there) for a poll, and a client that fails may otherwise be
        // closed without one.
        let _ = self.0.poll(Duration::ZERO);
        if self.0.close_queue().is_ok() {
            let deadline = Instant::now() + Duration::from_secs(5);
            while !self.0.closed() && Instant::now() < deadline {
                self.0.poll(Duration::from_millis(1));
            }
        }
    }
}

/// Reads `[start, end)` of each partition with an assigned consumer that commits nothing.
/// Stops when every partition's position reaches its end, so gaps and transaction markers
/// (offsets never delivered) cannot make it wait forever.
///
/// Messages go to `sender` in chunks of `chunk_size`: `new_chunk` makes an empty one and
/// `add` puts a message in. A closed receiver stops the reading quietly.
#[allow(clippy::too_many_arguments)]
pub fn read_range<C>(
    client: &BaseConsumer,
    topic: &str,
    ranges: &[(i32, i64, i64)],
    idle_limit: Duration,
    chunk_size: usize,
    sender: &tokio::sync::mpsc::Sender<C>,
    mut new_chunk: impl FnMut() -> C,
    mut add: impl FnMut(&mut C, &Fetched<'_>),
) -> anyhow::Result<()> {
    let mut assignment = TopicPartitionList::new();
    let mut ends: HashMap<i32, i64> = HashMap::new();
    for &(partition, start, end) in ranges {
        if end > start {
            assignment.add_partition_offset(topic, partition, Offset::Offset(start))?;
            ends.insert(partition, end);
        }
    }
    if ends.is_empty() {
        return Ok(());
    }
    let queue = ConsumerQueue::of(client).context("the topic reader has no consumer queue")?;
    client
        .assign(&assignment)
        .context("could not assign the partitions to read")?;
    let mut batch = Batch::with_capacity(READ_BATCH);
    let mut chunk = new_chunk();
    let mut in_chunk = 0;
    let mut last_progress = Instant::now();
    while !ends.is_empty() {
        queue.consume(&mut batch, Duration::from_millis(100));
        if batch.is_empty() {
            // No one takes the batches any more: a replay stopped while nothing arrived.
            if sender.is_closed() {
                return Ok(());
            }
            // Nothing delivered: partitions whose position passed their end are done.
            if let Ok(positions) = client.position() {
                for element in positions.elements() {
                    if let Offset::Offset(position) = element.offset() {
                        if ends
                            .get(&element.partition())
                            .is_some_and(|end| position >= *end)
                        {
                            ends.remove(&element.partition());
                        }
                    }
                }
            }
            if !ends.is_empty() && last_progress.elapsed() > idle_limit {
                let waiting: Vec<String> = ends.keys().map(|p| format!("{topic}:{p}")).collect();
                bail!(
                    "no messages arrived for {} while reading {}; the brokers stopped answering \
                     (a longer --kafka-timeout rides out a longer broker restart)",
                    humantime::format_duration(idle_limit),
                    waiting.join(", ")
                );
            }
            continue;
        }
        last_progress = Instant::now();
        let mut messages = batch.drain();
        while let Some(released) = messages.next_message() {
            let message = released.view();
            if let Some((code, text)) = message.error() {
                // Only asked for with -X enable.partition.eof=true; the end decides here.
                if code == RDKafkaErrorCode::PartitionEOF {
                    continue;
                }
                bail!(
                    "could not read {topic}:{}: {text} ({code:?})",
                    message.partition()
                );
            }
            let partition = message.partition();
            let Some(&end) = ends.get(&partition) else {
                continue;
            };
            if message.offset() >= end {
                ends.remove(&partition);
                continue;
            }
            add(&mut chunk, &message);
            in_chunk += 1;
            if message.offset() + 1 >= end {
                ends.remove(&partition);
            }
            if in_chunk >= chunk_size {
                in_chunk = 0;
                if sender
                    .blocking_send(std::mem::replace(&mut chunk, new_chunk()))
                    .is_err()
                {
                    return Ok(());
                }
            }
        }
    }
    if in_chunk > 0 {
        let _ = sender.blocking_send(chunk);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_lists_are_checked_before_anything_waits_on_them() {
        for good in [
            "localhost:9092",
            "a:1, b:2,",
            "kafka-1.example.com",
            "kafka_1.x-y:09092",
            "[::1]:9092",
            "[::1]",
            "::1",
            ":9092",
            "SASL_SSL://broker:9093",
            "plaintext://127.0.0.1:19092/",
            "127.0.0.1:19092/",
        ] {
            assert!(parse_brokers(good).is_ok(), "{good}");
        }
        for (bad, expected) in [
            (",", "names no broker"),
            (
                "localhost:abc",
                "'localhost:abc' has the port 'abc'; expected a number from 1 to 65535",
            ),
            ("localhost:99999", "has the port '99999'"),
            ("localhost:0", "has the port '0'"),
            (
                "http://127.0.0.1:9092",
                "'http://' is not a Kafka security protocol",
            ),
            (
                "://127.0.0.1:9092",
                "'://' is not a Kafka security protocol",
            ),
            ("kafka 1:9092", "a host name holds no ' '"),
            ("a:1,b:x", "'b:x' has the port 'x'"),
        ] {
            let error = parse_brokers(bad).unwrap_err();
            assert!(error.contains(expected), "{bad}: {error}");
        }
        // Left to Kafka::new, which refuses it without showing it.
        for credentials in [
            "bad:x,user:SECRET@h:1",
            "user:pa,ss@h:1",
            "SASL_SSL://u:a://S@h:1",
        ] {
            assert!(parse_brokers(credentials).is_ok(), "{credentials}");
            let mut options = options(&[]);
            options.brokers = credentials.into();
            let error = Kafka::new(&options).err().unwrap().to_string();
            assert!(
                error.contains("must not hold a user or password"),
                "{error}"
            );
            assert!(!error.contains(credentials), "{error}");
        }
    }

    fn options(properties: &[(&str, &str)]) -> KafkaOpts {
        KafkaOpts {
            brokers: "localhost:9092".into(),
            properties: properties
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect(),
            kafka_timeout: Duration::from_secs(10),
        }
    }

    #[test]
    fn a_deletion_the_coordinator_passed_on_is_asked_again() {
        use RDKafkaErrorCode::*;
        assert_eq!(deletion_outcome(GroupIdNotFound), DeletionOutcome::Gone);
        for code in [
            NotCoordinator,
            CoordinatorNotAvailable,
            CoordinatorLoadInProgress,
        ] {
            assert_eq!(deletion_outcome(code), DeletionOutcome::NotDone, "{code}");
        }
        for code in [
            OperationTimedOut,
            RequestTimedOut,
            BrokerTransportFailure,
            AllBrokersDown,
        ] {
            assert_eq!(
                deletion_outcome(code),
                DeletionOutcome::Unanswered,
                "{code}"
            );
        }
        for code in [NonEmptyGroup, GroupAuthorizationFailed, InvalidGroupId] {
            assert_eq!(deletion_outcome(code), DeletionOutcome::Refused, "{code}");
        }
    }

    #[test]
    fn clients_log_little_and_reconnect_soon() {
        let level = |properties: &[(&str, &str)]| {
            Kafka::new(&options(properties)).unwrap().config().log_level as i32
        };
        assert_eq!(level(&[]), RDKafkaLogLevel::Critical as i32);
        let reconnect = |properties: &[(&str, &str)]| {
            let config = Kafka::new(&options(properties)).unwrap().config();
            config.get("reconnect.backoff.max.ms").map(str::to_string)
        };
        assert_eq!(reconnect(&[]).as_deref(), Some("1000"));
        assert_eq!(
            reconnect(&[("reconnect.backoff.max.ms", "5000")]).as_deref(),
            Some("5000")
        );
        assert_eq!(level(&[("debug", "broker")]), RDKafkaLogLevel::Debug as i32);
        show_client_logs(true);
        let shown = level(&[]);
        show_client_logs(false);
        assert_eq!(shown, RDKafkaLogLevel::Debug as i32);
    }

    #[test]
    fn jaas_passwords_are_found() {
        let config = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p w";"#;
        assert_eq!(jaas_passwords(config).collect::<Vec<_>>(), ["p w"]);
        assert_eq!(
            jaas_passwords("x password='a' password=\"b\" password=c").collect::<Vec<_>>(),
            ["a", "b"]
        );
    }

    #[test]
    fn properties_are_key_equals_value() {
        assert_eq!(
            parse_property("sasl.password=a=b").unwrap(),
            ("sasl.password".to_string(), "a=b".to_string())
        );
        assert_eq!(
            parse_property("security.protocol").unwrap_err(),
            "-X security.protocol has no value; expected KEY=VALUE, e.g. -X security.protocol=VALUE"
        );
        // Shown only when it is a name that names no secret.
        for secret in [
            "sasl.password:hunter2",
            "sasl.password",
            "hunter2",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.Sfl-hunter2",
            "api.key.hunter2",
            "hunter2 x",
            "=hunter2",
            " ",
        ] {
            let error = parse_property(secret).unwrap_err();
            assert!(error.contains("expected KEY=VALUE"), "{error}");
            assert!(!error.contains("hunter2"), "{error}");
            assert!(!error.contains("sasl.password"), "{error}");
        }
    }

    /// `-X bootstrap.servers` is checked as `--brokers` is, never showing credentials.
    #[test]
    fn a_bootstrap_property_is_checked_as_brokers_are() {
        for key in ["bootstrap.servers", "metadata.broker.list"] {
            let error = Kafka::new(&options(&[(key, "u:hunter2@h:9092")]))
                .err()
                .unwrap();
            assert!(crate::error::is_usage(&error));
            assert_eq!(
                error.to_string(),
                format!(
                    "a broker address in -X {key} must not hold a user or password ('@'); give them \
                     with -X sasl.username=… -X sasl.password=…"
                )
            );
            let error = Kafka::new(&options(&[(key, "h:x")])).err().unwrap();
            assert!(crate::error::is_usage(&error));
            assert_eq!(
                error.to_string(),
                format!("-X {key}: 'h:x' has the port 'x'; expected a number from 1 to 65535")
            );
            assert!(Kafka::new(&options(&[(key, "SSL://h:9093,[::1]:9092")])).is_ok());
        }
    }

    #[test]
    fn the_socket_timeout_stays_within_what_librdkafka_takes() {
        let kafka = |timeout: &str, properties: &[(&str, &str)]| {
            Kafka::new(&KafkaOpts {
                brokers: "a:9092".into(),
                properties: properties
                    .iter()
                    .map(|(key, value)| (key.to_string(), value.to_string()))
                    .collect(),
                kafka_timeout: humantime::parse_duration(timeout).unwrap(),
            })
            .unwrap()
        };
        let socket_timeout =
            |kafka: Kafka| kafka.config().get("socket.timeout.ms").map(String::from);
        assert_eq!(socket_timeout(kafka("6m", &[])).as_deref(), Some("300000"));
        assert_eq!(socket_timeout(kafka("10s", &[])).as_deref(), Some("10000"));
        assert_eq!(socket_timeout(kafka("1ms", &[])).as_deref(), Some("10"));
        // The brokers named are those the clients are given: -X overrides --brokers.
        assert_eq!(kafka("1s", &[]).brokers(), "a:9092");
        let overridden = kafka(
            "1s",
            &[
                ("bootstrap.servers", "b:9092"),
                ("metadata.broker.list", "c:9092"),
            ],
        );
        assert_eq!(overridden.brokers(), "c:9092");
        assert_eq!(
            overridden.config().get("metadata.broker.list"),
            Some("c:9092")
        );
    }

    #[test]
    fn activity_is_judged_by_state() {
        let state = |state: &str, members| GroupState {
            group: "g".into(),
            state: state.into(),
            members,
        };
        assert!(state("Stable", 0).is_active());
        assert!(state("PreparingRebalance", 0).is_active());
        assert!(!state("Empty", 0).is_active());
        assert!(!state("Dead", 0).is_active());
        assert!(state("Dead", 0).is_unknown());
        assert!(!state("Empty", 0).is_unknown());
    }
}
