//! The nisshi test broker (a Kafka-protocol broker in Rust), started once per test binary on
//! a free port in a temporary folder, and helpers that create topics and produce events the
//! way a real producer does, returning where each event landed.

use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

pub struct Broker {
    pub address: String,
    /// The CA file clients trust, for a broker that speaks TLS.
    pub tls_ca: Option<std::path::PathBuf>,
    /// SASL/SCRAM-SHA-512 user and password, for a broker that requires authentication.
    pub sasl: Option<(String, String)>,
}

/// How a test broker's listener is secured.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Security {
    Plaintext,
    Tls,
    Scram,
}

static BROKER: OnceLock<Broker> = OnceLock::new();

fn nisshi_binary() -> String {
    if let Ok(path) = std::env::var("NISSHI_BIN") {
        return path;
    }
    let home_bin = format!(
        "{}/.cargo/bin/nisshi",
        std::env::var("HOME").unwrap_or_default()
    );
    if std::path::Path::new(&home_bin).exists() {
        return home_bin;
    }
    "nisshi".to_string()
}

/// The broker shared by this test binary's tests; they keep apart by random topic and group
/// names. It stops when the test process exits (a watchdog shell waits on our pid).
pub fn broker() -> &'static Broker {
    BROKER.get_or_init(|| start_broker(Security::Plaintext, ""))
}

/// A broker of its own that sweeps its topics every second: retention and compaction run
/// within a second or two instead of every few minutes.
pub fn sweeping_broker() -> Broker {
    start_broker(Security::Plaintext, "?maintenance_interval=1s")
}

/// A broker of its own whose listener speaks TLS only, with a self-signed certificate for
/// 127.0.0.1 made by the openssl command.
pub fn tls_broker() -> Broker {
    start_broker(Security::Tls, "")
}

/// A broker of its own that requires SASL/SCRAM-SHA-512 authentication, with one user. The
/// user is created through a first, open broker on the same storage, which then stops.
pub fn scram_broker() -> Broker {
    start_broker(Security::Scram, "")
}

/// A plaintext broker of its own that a test can stop and start again on the same port and
/// storage, as a broker restart does. It is killed when dropped.
pub struct RestartableBroker {
    pub broker: Broker,
    dir: tempfile::TempDir,
    port: u16,
    process: Option<std::process::Child>,
}

impl RestartableBroker {
    pub fn start() -> RestartableBroker {
        let port = free_port();
        let mut broker = RestartableBroker {
            broker: Broker {
                address: format!("127.0.0.1:{port}"),
                tls_ca: None,
                sasl: None,
            },
            dir: tempfile::Builder::new()
                .prefix("inboxctl-nisshi-")
                .tempdir()
                .unwrap(),
            port,
            process: None,
        };
        broker.resume();
        broker
    }

    /// Kills the broker at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut process) = self.process.take() {
            let _ = process.kill();
            let _ = process.wait();
        }
    }

    /// Stops the broker's process (SIGSTOP) without closing its connections: it accepts
    /// and answers nothing, as a hung broker does.
    pub fn pause(&self) {
        let process = self.process.as_ref().expect("the broker runs");
        super::send_signal("STOP", &process.id().to_string());
    }

    /// Lets a paused broker go on (SIGCONT).
    pub fn unpause(&self) {
        let process = self.process.as_ref().expect("the broker runs");
        super::send_signal("CONT", &process.id().to_string());
    }

    /// Starts the broker again on its port and storage, and waits until it answers.
    pub fn resume(&mut self) {
        let log = self.dir.path().join("broker.log");
        let url = format!("tcp://127.0.0.1:{}", self.port);
        let process = Command::new(nisshi_binary())
            .args(["broker", "--storage-engine", "sqlite://broker.db"])
            .args(["--listener-url", &url, "--advertised-listener-url", &url])
            .args(["--group-initial-rebalance-delay", "0s"])
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the nisshi broker (installed by scripts/test.sh)");
        self.process = Some(process);
        wait_until_answering(&self.broker, &log);
    }
}

impl Drop for RestartableBroker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A plaintext broker of its own that clients reach only through a proxy in the test
/// process, which it advertises as its address. The proxy can hold the requests of one kind
/// (by Kafka API key) until the test lets them through: a test stops a command in the middle
/// of a step that otherwise takes a millisecond.
pub struct HoldingBroker {
    pub broker: Broker,
    hold: Arc<Hold>,
}

#[derive(Default)]
struct Hold {
    state: Mutex<HoldState>,
    changed: Condvar,
}

#[derive(Default)]
struct HoldState {
    /// The API key whose requests wait, if any.
    api_key: Option<i16>,
    /// Whether every request waits, as at a broker that stopped answering.
    everything: bool,
    /// Requests waiting now.
    waiting: usize,
    /// What waiting requests do once no longer held: go on to the broker, or be dropped
    /// with their connection.
    drop_held: bool,
}

/// Kafka API keys (the first field of every request header).
pub const FETCH: i16 = 1;
pub const OFFSET_COMMIT: i16 = 8;
pub const OFFSET_FETCH: i16 = 9;
pub const DELETE_GROUPS: i16 = 42;

impl HoldingBroker {
    pub fn start() -> HoldingBroker {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy_port = listener.local_addr().unwrap().port();
        let broker_port = free_port();
        let hold = Arc::new(Hold::default());
        let held = hold.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let hold = held.clone();
                std::thread::spawn(move || proxy_connection(client, broker_port, hold));
            }
        });
        let broker = start_broker_at(Security::Plaintext, "", broker_port, proxy_port);
        HoldingBroker { broker, hold }
    }

    /// From now on, requests with this API key wait in the proxy.
    pub fn hold(&self, api_key: i16) {
        let mut state = self.hold.state.lock().unwrap();
        state.api_key = Some(api_key);
        state.drop_held = false;
    }

    /// Waits until a request is held; false after `within`.
    pub fn wait_until_held(&self, within: Duration) -> bool {
        let state = self.hold.state.lock().unwrap();
        let (state, _) = self
            .hold
            .changed
            .wait_timeout_while(state, within, |state| state.waiting == 0)
            .unwrap();
        state.waiting > 0
    }

    /// From now on, every request waits, whatever its API key, as at a broker that hangs
    /// (SIGSTOP): those held already stay held.
    pub fn hold_everything(&self) {
        self.hold.state.lock().unwrap().everything = true;
    }

    /// Lets held requests through to the broker, and holds no more.
    pub fn release(&self) {
        self.stop_holding(false);
    }

    /// Drops held requests with their connections, as if they had never been sent, and
    /// holds no more.
    pub fn drop_held(&self) {
        self.stop_holding(true);
    }

    fn stop_holding(&self, drop_held: bool) {
        let mut state = self.hold.state.lock().unwrap();
        state.api_key = None;
        state.everything = false;
        state.drop_held = drop_held;
        self.hold.changed.notify_all();
    }
}

/// Copies one client connection to the broker and back, frame by frame towards the broker
/// (a 4-byte big-endian length, then the request, whose header starts with its API key).
fn proxy_connection(mut client: std::net::TcpStream, broker_port: u16, hold: Arc<Hold>) {
    use std::io::{Read, Write};
    let Ok(mut broker) = std::net::TcpStream::connect(("127.0.0.1", broker_port)) else {
        return;
    };
    let (Ok(mut from_broker), Ok(mut to_client)) = (broker.try_clone(), client.try_clone()) else {
        return;
    };
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from_broker, &mut to_client);
        let _ = to_client.shutdown(std::net::Shutdown::Both);
    });
    loop {
        let mut length = [0u8; 4];
        if client.read_exact(&mut length).is_err() {
            break;
        }
        let mut request = vec![0u8; u32::from_be_bytes(length) as usize];
        if client.read_exact(&mut request).is_err() {
            break;
        }
        let api_key = i16::from_be_bytes([request[0], request[1]]);
        let mut state = hold.state.lock().unwrap();
        let held = |state: &mut HoldState| state.everything || state.api_key == Some(api_key);
        if held(&mut state) {
            state.waiting += 1;
            hold.changed.notify_all();
            state = hold.changed.wait_while(state, held).unwrap();
            state.waiting -= 1;
            if state.drop_held {
                break;
            }
        }
        drop(state);
        if broker.write_all(&length).is_err() || broker.write_all(&request).is_err() {
            break;
        }
    }
    let _ = broker.shutdown(std::net::Shutdown::Both);
    let _ = client.shutdown(std::net::Shutdown::Both);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_until_answering(broker: &Broker, log: &std::path::Path) {
    let client: BaseConsumer = broker
        .config()
        .set("group.id", "inboxctl-test-probe")
        .create()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while client.fetch_metadata(None, Duration::from_secs(1)).is_err() {
        assert!(
            Instant::now() < deadline,
            "nisshi did not answer on {} within 60s; its log:\n{}",
            broker.address,
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts nisshi on SQLite storage; `storage_query` is added to the storage URL.
fn start_broker(security: Security, storage_query: &str) -> Broker {
    let port = free_port();
    start_broker_at(security, storage_query, port, port)
}

/// [`start_broker`] listening on `port`, telling clients to connect to `advertised_port`.
fn start_broker_at(
    security: Security,
    storage_query: &str,
    port: u16,
    advertised_port: u16,
) -> Broker {
    let tls = security == Security::Tls;
    let dir = tempfile::Builder::new()
        .prefix("inboxctl-nisshi-")
        .tempdir()
        .unwrap()
        .keep();
    let mut extra = String::new();
    let mut tls_ca = None;
    if tls {
        let made = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            ])
            .args([
                "-keyout",
                "key.pem",
                "-out",
                "cert.pem",
                "-subj",
                "/CN=127.0.0.1",
            ])
            .args(["-addext", "subjectAltName=IP:127.0.0.1"])
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run openssl (installed by scripts/test.sh)");
        assert!(made.success(), "openssl could not make a certificate");
        extra = " --cert cert.pem --key key.pem".to_string();
        tls_ca = Some(dir.join("cert.pem"));
    }
    let mut sasl = None;
    if security == Security::Scram {
        let setup_port = free_port();
        let mut open = Command::new(nisshi_binary())
            .args(["broker", "--storage-engine", "sqlite://broker.db"])
            .arg("--listener-url")
            .arg(format!("tcp://127.0.0.1:{setup_port}"))
            .arg("--advertised-listener-url")
            .arg(format!("tcp://127.0.0.1:{setup_port}"))
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the nisshi broker");
        let setup = Broker {
            address: format!("127.0.0.1:{setup_port}"),
            tls_ca: None,
            sasl: None,
        };
        wait_until_answering(&setup, &dir.join("setup.log"));
        let created = Command::new(nisshi_binary())
            .args([
                "user",
                "create",
                "alice",
                "alice-s3cret",
                "--mechanism",
                "scram512",
            ])
            .arg("--broker")
            .arg(format!("tcp://127.0.0.1:{setup_port}"))
            .status()
            .expect("run nisshi user create");
        let _ = open.kill();
        let _ = open.wait();
        assert!(created.success(), "nisshi could not create the SCRAM user");
        extra = " --authentication".to_string();
        sasl = Some(("alice".to_string(), "alice-s3cret".to_string()));
    }
    let script = format!(
        r#"cd "$1" || exit 1
"$2" broker --storage-engine "sqlite://broker.db$5" \
    --listener-url "tcp://127.0.0.1:$3" --advertised-listener-url "tcp://127.0.0.1:$6" \
    --group-initial-rebalance-delay 0s{extra} > broker.log 2>&1 &
broker=$!
while kill -0 "$4" 2>/dev/null && kill -0 "$broker" 2>/dev/null; do sleep 0.5; done
kill "$broker" 2>/dev/null; wait "$broker" 2>/dev/null
rm -rf "$1""#
    );
    // The watchdog outlives this process by design (it cleans up after it), so it is
    // never waited for.
    #[allow(clippy::zombie_processes)]
    let _watchdog = Command::new("bash")
        .args(["-c", &script, "nisshi-watchdog"])
        .arg(&dir)
        .arg(nisshi_binary())
        .arg(port.to_string())
        .arg(std::process::id().to_string())
        .arg(storage_query)
        .arg(advertised_port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the nisshi broker (installed by scripts/test.sh)");
    let broker = Broker {
        address: format!("127.0.0.1:{advertised_port}"),
        tls_ca,
        sasl,
    };
    wait_until_answering(&broker, &dir.join("broker.log"));
    broker
}

/// A name no other test uses.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{prefix}-{}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst),
        chrono::Utc::now().timestamp_subsec_nanos()
    )
}

/// Where a produced event landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    pub event_id: String,
    pub partition: i32,
    pub offset: i64,
}

impl Broker {
    pub fn config(&self) -> ClientConfig {
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", &self.address);
        if let Some(ca) = &self.tls_ca {
            config
                .set("security.protocol", "SSL")
                .set("ssl.ca.location", ca.display().to_string());
        }
        if let Some((user, password)) = &self.sasl {
            config
                .set("security.protocol", "SASL_PLAINTEXT")
                .set("sasl.mechanism", "SCRAM-SHA-512")
                .set("sasl.username", user)
                .set("sasl.password", password);
        }
        config
    }

    /// Deletes the messages of `topic`'s `partition` before `offset`, as retention does: the
    /// log start moves there.
    pub async fn delete_records(&self, topic: &str, partition: i32, offset: i64) {
        let admin: AdminClient<DefaultClientContext> = self.config().create().unwrap();
        let mut list = TopicPartitionList::new();
        list.add_partition_offset(topic, partition, Offset::Offset(offset))
            .unwrap();
        let result = admin
            .delete_records(
                &list,
                &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
            )
            .await
            .expect("delete records");
        let element = result
            .find_partition(topic, partition)
            .expect("partition in the answer");
        element.error().expect("delete records of the partition");
        assert_eq!(
            element.offset(),
            Offset::Offset(offset),
            "the new log start"
        );
    }

    pub async fn create_topic(&self, name: &str, partitions: i32) {
        self.create_topic_with(name, partitions, &[]).await
    }

    /// [`Broker::create_topic`] with topic configuration (`cleanup.policy`, …).
    pub async fn create_topic_with(&self, name: &str, partitions: i32, config: &[(&str, &str)]) {
        let admin: AdminClient<DefaultClientContext> = self.config().create().unwrap();
        let mut topic = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
        for (key, value) in config {
            topic = topic.set(key, value);
        }
        let results = admin
            .create_topics(
                &[topic],
                &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
            )
            .await
            .expect("create topic");
        for result in results {
            result.unwrap_or_else(|(topic, error)| panic!("create topic {topic}: {error}"));
        }
        // Wait until metadata shows every partition.
        let client: BaseConsumer = self.config().set("group.id", "probe").create().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(metadata) = client.fetch_metadata(Some(name), Duration::from_secs(2)) {
                if metadata.topics().iter().any(|t| {
                    t.name() == name
                        && t.error().is_none()
                        && t.partitions().len() == partitions as usize
                }) {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "topic {name} never showed {partitions} partitions"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Produces each (partition, event id) as a message with an `event_id` header and a JSON
    /// body `{"event_id", "amount"}`, in order, and returns where each landed.
    pub async fn produce(&self, topic: &str, events: &[(i32, String)]) -> Vec<Delivered> {
        self.produce_at(topic, events, None).await
    }

    /// [`Broker::produce`] with every message's timestamp (CreateTime, milliseconds since
    /// the epoch) set to `timestamp` instead of the producer's clock.
    pub async fn produce_at(
        &self,
        topic: &str,
        events: &[(i32, String)],
        timestamp: Option<i64>,
    ) -> Vec<Delivered> {
        let producer: FutureProducer = self
            .config()
            .set("linger.ms", "0")
            .set("message.timeout.ms", "30000")
            .create()
            .unwrap();
        let mut delivered = Vec::new();
        for (index, (partition, event_id)) in events.iter().enumerate() {
            let body = serde_json::json!({"event_id": event_id, "amount": index + 1}).to_string();
            let mut record = FutureRecord::to(topic)
                .partition(*partition)
                .key(event_id.as_str())
                .payload(&body)
                .headers(OwnedHeaders::new().insert(Header {
                    key: "event_id",
                    value: Some(event_id.as_bytes()),
                }));
            if let Some(timestamp) = timestamp {
                record = record.timestamp(timestamp);
            }
            let rdkafka::producer::future_producer::Delivery {
                partition, offset, ..
            } = producer
                .send(record, Duration::from_secs(30))
                .await
                .unwrap_or_else(|(error, _)| panic!("produce to {topic}: {error}"));
            delivered.push(Delivered {
                event_id: event_id.clone(),
                partition,
                offset,
            });
        }
        delivered
    }

    /// The names of the consumer groups the broker knows.
    pub fn groups(&self) -> Vec<String> {
        let client: BaseConsumer = self.config().create().unwrap();
        let list = client
            .fetch_group_list(None, Duration::from_secs(10))
            .unwrap();
        list.groups().iter().map(|g| g.name().to_string()).collect()
    }

    /// The group's committed offsets, read back as a separate client would.
    pub fn committed(&self, group: &str, topic: &str, partitions: i32) -> Vec<Option<i64>> {
        let client: BaseConsumer = self.config().set("group.id", group).create().unwrap();
        let mut list = TopicPartitionList::new();
        for partition in 0..partitions {
            list.add_partition(topic, partition);
        }
        let committed = client
            .committed_offsets(list, Duration::from_secs(10))
            .unwrap();
        (0..partitions)
            .map(
                |p| match committed.find_partition(topic, p).unwrap().offset() {
                    Offset::Offset(offset) => Some(offset),
                    _ => None,
                },
            )
            .collect()
    }

    /// Commits offsets for a group as a consumer of it does (the group must be empty).
    pub fn commit(&self, group: &str, topic: &str, offsets: &[(i32, i64)]) {
        let client: BaseConsumer = self.config().set("group.id", group).create().unwrap();
        let mut list = TopicPartitionList::new();
        for (partition, offset) in offsets {
            list.add_partition_offset(topic, *partition, Offset::Offset(*offset))
                .unwrap();
        }
        client
            .commit(&list, CommitMode::Sync)
            .expect("commit offsets");
    }
}

/// What the service in a test does with one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The inbox pattern done right: inbox insert (and effect) in one transaction, then commit.
    ProcessThenCommit,
    /// Crash between effect and commit: the inbox row is written, the offset never committed.
    ProcessNoCommit,
    /// The at-most-once bug: commit first, then crash before the effect.
    CommitNoProcess,
}

/// A message as the service saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub event_id: String,
    pub partition: i32,
    pub offset: i64,
}

/// A consumer of `group` subscribed to `topic`, as a real service runs: it reads until it has
/// seen `expected` messages, asks `decide` what to do with each, and hands the messages to
/// `process` (which writes the inbox). Offsets are committed one message at a time after
/// processing, or before it for `CommitNoProcess`. Once a partition has a step other than
/// `ProcessThenCommit`, the service stops committing that partition, as a crashed one would.
pub async fn run_service<D, P, F>(
    broker: &Broker,
    group: &str,
    topic: &str,
    expected: usize,
    mut decide: D,
    mut process: P,
) -> Vec<Seen>
where
    D: FnMut(&Seen) -> Step,
    P: FnMut(Seen) -> F,
    F: std::future::Future<Output = ()>,
{
    let consumer: BaseConsumer = broker
        .config()
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .create()
        .unwrap();
    consumer.subscribe(&[topic]).unwrap();
    let mut seen = Vec::new();
    let mut crashed: std::collections::HashSet<i32> = Default::default();
    let deadline = Instant::now() + Duration::from_secs(90);
    while seen.len() < expected {
        assert!(
            Instant::now() < deadline,
            "the service saw {} of {expected} messages",
            seen.len()
        );
        let Some(message) = consumer.poll(Duration::from_millis(100)) else {
            continue;
        };
        let message = message.expect("consume");
        let event_id = message
            .headers()
            .and_then(|h| h.iter().find(|h| h.key == "event_id").and_then(|h| h.value))
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .expect("every test event has an event_id header");
        let item = Seen {
            event_id,
            partition: message.partition(),
            offset: message.offset(),
        };
        let step = if crashed.contains(&item.partition) {
            Step::ProcessNoCommit
        } else {
            decide(&item)
        };
        let mut commit = TopicPartitionList::new();
        commit
            .add_partition_offset(topic, item.partition, Offset::Offset(item.offset + 1))
            .unwrap();
        match step {
            Step::ProcessThenCommit => {
                process(item.clone()).await;
                consumer.commit(&commit, CommitMode::Sync).expect("commit");
            }
            Step::ProcessNoCommit => {
                crashed.insert(item.partition);
                process(item.clone()).await;
            }
            Step::CommitNoProcess => {
                consumer.commit(&commit, CommitMode::Sync).expect("commit");
            }
        }
        seen.push(item);
    }
    consumer.unsubscribe();
    drop(consumer);
    seen
}

/// The `process` of [`run_service`] for a service that records each message in the inbox
/// of `consumer`, with its coordinates.
pub fn recording(
    pool: sqlx::AnyPool,
    backend: inboxctl::store::Backend,
    consumer: &str,
    topic: &str,
) -> impl FnMut(Seen) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    let (consumer, topic) = (consumer.to_string(), topic.to_string());
    move |seen| {
        Box::pin(record(
            pool.clone(),
            backend,
            consumer.clone(),
            topic.clone(),
            seen,
            true,
        ))
    }
}

/// The service's half of the inbox pattern: insert the event's row (with its coordinates when
/// `coordinates`), ignoring a duplicate, which is the inbox absorbing a redelivery.
pub async fn record(
    pool: sqlx::AnyPool,
    backend: inboxctl::store::Backend,
    consumer: String,
    topic: String,
    seen: Seen,
    coordinates: bool,
) {
    let d = backend.dialect();
    let mut sql = inboxctl::store::SqlBuilder::new(d);
    let result = if coordinates {
        sql.push(&format!(
            "INSERT INTO processed_messages (consumer, event_id, topic, {}, {}) VALUES (",
            d.quote("partition"),
            d.quote("offset")
        ))
        .params(5)
        .push(")");
        sqlx::query(&sql.build())
            .bind(consumer)
            .bind(seen.event_id)
            .bind(topic)
            .bind(seen.partition)
            .bind(seen.offset)
            .execute(&pool)
            .await
    } else {
        sql.push("INSERT INTO processed_messages (consumer, event_id) VALUES (")
            .params(2)
            .push(")");
        sqlx::query(&sql.build())
            .bind(consumer)
            .bind(seen.event_id)
            .execute(&pool)
            .await
    };
    match result {
        Ok(_) => {}
        Err(error)
            if error
                .as_database_error()
                .is_some_and(|e| e.is_unique_violation()) => {}
        Err(error) => panic!("inbox insert: {error}"),
    }
}
