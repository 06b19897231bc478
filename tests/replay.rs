//! `replay` against the nisshi broker on every backend: each effect applied once whatever
//! happens (second runs, producer duplicates, SIGKILL at random moments, four replays at
//! once), poison messages and missing ids, the exec handler, odd ranges and the dry run.
//! Every run of the binary is bounded by a timeout, so a hang fails instead of blocking.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::kafka::*;
use common::*;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use serde_json::{json, Value};

/// The longest any one run of the binary may take.
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// The handler most tests use: a ledger line (no key, so a second application would show as
/// a second line) and the account's balance.
const HANDLER: &str = "-- one deposit\n\
    INSERT INTO ledger (event_id, account, amount) VALUES (:event_id, :account, :amount);\n\
    UPDATE accounts SET balance = balance + :amount WHERE id = :account;\n";

/// HANDLER's two effects in one PostgreSQL statement (a data-modifying CTE).
const ONE_STATEMENT_HANDLER: &str = "WITH line AS (\n\
    INSERT INTO ledger (event_id, account, amount) VALUES (:event_id, :account, :amount))\n\
    UPDATE accounts SET balance = balance + :amount WHERE id = :account;\n";

const ACCOUNTS: [i64; 4] = [1, 2, 3, 4];

// ---------------------------------------------------------------------------------------------
// Events

/// One message to produce: its event id goes into the `event_id` header and the JSON body;
/// `None` produces a message with no event id anywhere.
#[derive(Debug, Clone)]
struct Event {
    partition: i32,
    id: Option<String>,
    payload: Value,
}

impl Event {
    /// Neither an event_id header nor an event_id field: the default source finds no id.
    fn forget_id(&mut self) {
        self.id = None;
        self.payload.as_object_mut().unwrap().remove("event_id");
    }
}

/// A deposit of `amount` into `account`, also given nested at `/order/account`.
fn deposit(partition: i32, id: &str, account: i64, amount: i64) -> Event {
    Event {
        partition,
        id: Some(id.to_string()),
        payload: json!({
            "event_id": id,
            "account": account,
            "amount": amount,
            "order": {"account": account},
        }),
    }
}

/// `per_partition` deposits into each of `partitions`, amounts 1, 2, 3, … in production
/// order; inside a partition the accounts take turns.
fn deposits(prefix: &str, partitions: i32, per_partition: usize) -> Vec<Event> {
    let mut events = Vec::new();
    for n in 0..per_partition {
        for partition in 0..partitions {
            let index = events.len() as i64;
            events.push(deposit(
                partition,
                &format!("{prefix}-p{partition}-{n}"),
                ACCOUNTS[(n + partition as usize) % ACCOUNTS.len()],
                index + 1,
            ));
        }
    }
    events
}

/// Where a produced event landed.
#[derive(Debug, Clone)]
struct Landed {
    partition: i32,
    offset: i64,
    event: Event,
}

/// Produces the events (all queued at once, then each delivery awaited) and returns where
/// each landed, in the order given.
async fn produce(topic: &str, events: &[Event]) -> Vec<Landed> {
    let producer: FutureProducer = broker()
        .config()
        .set("linger.ms", "5")
        .set("message.timeout.ms", "30000")
        .create()
        .unwrap();
    let mut pending = Vec::with_capacity(events.len());
    for event in events {
        let body = event.payload.to_string();
        let mut record = FutureRecord::to(topic)
            .partition(event.partition)
            .payload(&body);
        if let Some(id) = &event.id {
            record = record
                .key(id.as_str())
                .headers(OwnedHeaders::new().insert(Header {
                    key: "event_id",
                    value: Some(id.as_bytes()),
                }));
        }
        let future = producer
            .send_result(record)
            .unwrap_or_else(|(error, _)| panic!("queue a message for {topic}: {error}"));
        pending.push(future);
    }
    let mut landed = Vec::with_capacity(events.len());
    for (event, future) in events.iter().zip(pending) {
        let delivery = future
            .await
            .expect("the producer answers")
            .unwrap_or_else(|(error, _)| panic!("produce to {topic}: {error}"));
        assert_eq!(delivery.partition, event.partition);
        landed.push(Landed {
            partition: delivery.partition,
            offset: delivery.offset,
            event: event.clone(),
        });
    }
    landed
}

/// A fresh topic with `partitions` partitions.
async fn topic(partitions: i32) -> String {
    let name = unique("replay");
    broker().create_topic(&name, partitions).await;
    name
}

/// The balance each account must have once every distinct event id with an amount has been
/// applied exactly once (a duplicate carries the same body as its first copy).
fn expected_balances(landed: &[Landed]) -> Vec<(i64, i64)> {
    let mut balances: BTreeMap<i64, i64> = ACCOUNTS.iter().map(|a| (*a, 0)).collect();
    let mut seen = BTreeSet::new();
    for l in landed {
        let Some(id) = &l.event.id else { continue };
        if !seen.insert(id.clone()) {
            continue;
        }
        if let (Some(account), Some(amount)) = (
            l.event.payload["account"].as_i64(),
            l.event.payload["amount"].as_i64(),
        ) {
            *balances.get_mut(&account).unwrap() += amount;
        }
    }
    balances.into_iter().collect()
}

/// Every distinct event id, sorted.
fn distinct_ids(landed: &[Landed]) -> Vec<String> {
    let set: BTreeSet<String> = landed.iter().filter_map(|l| l.event.id.clone()).collect();
    set.into_iter().collect()
}

/// Each event id's positions, in production order.
fn positions(landed: &[Landed]) -> HashMap<String, Vec<(i32, i64)>> {
    let mut map: HashMap<String, Vec<(i32, i64)>> = HashMap::new();
    for l in landed {
        if let Some(id) = &l.event.id {
            map.entry(id.clone())
                .or_default()
                .push((l.partition, l.offset));
        }
    }
    map
}

// ---------------------------------------------------------------------------------------------
// The database side

/// The migrated inbox, accounts 1-4 at balance 0 and an empty ledger.
async fn setup(db: &mut TestDb) {
    db.run(&["migrate", "run"]).ok();
    db.exec("CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL)")
        .await;
    db.exec("INSERT INTO accounts (id, balance) VALUES (1, 0), (2, 0), (3, 0), (4, 0)")
        .await;
    db.exec(
        "CREATE TABLE ledger (event_id VARCHAR(600) NOT NULL, account BIGINT NOT NULL, \
         amount BIGINT NOT NULL, CONSTRAINT positive_amount CHECK (amount > 0))",
    )
    .await;
}

async fn balances(db: &mut TestDb) -> Vec<(i64, i64)> {
    let pool = db.pool().await;
    sqlx::query_as("SELECT id, balance FROM accounts ORDER BY id")
        .fetch_all(&pool)
        .await
        .unwrap()
}

/// The ledger's event ids, sorted, with repeats.
async fn ledger(db: &mut TestDb) -> Vec<String> {
    let pool = db.pool().await;
    sqlx::query_scalar("SELECT event_id FROM ledger ORDER BY event_id")
        .fetch_all(&pool)
        .await
        .unwrap()
}

/// The consumer's inbox rows: (event id, topic, partition, offset), sorted by event id.
async fn inbox(db: &mut TestDb, consumer: &str) -> Vec<(String, String, i64, i64)> {
    let d = db.backend.dialect();
    let mut sql = db.store().await.sql();
    sql.push(&format!(
        "SELECT event_id, topic, {}, {} FROM processed_messages WHERE consumer = ",
        (d.bigint)(&d.quote("partition")),
        (d.bigint)(&d.quote("offset")),
    ))
    .param()
    .push(" ORDER BY event_id");
    let pool = db.pool().await;
    sqlx::query_as(&sql.build())
        .bind(consumer)
        .fetch_all(&pool)
        .await
        .unwrap()
}

async fn inbox_count(db: &mut TestDb) -> i64 {
    db.count("processed_messages").await
}

/// Writes a file into the test's folder and returns its path.
fn write(db: &TestDb, name: &str, text: &str) -> String {
    let path = db.dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// A login role that may use every table of the database (on PostgreSQL, every table so
/// far), and the database's URL with it.
async fn a_role_with_its_url(db: &mut TestDb) -> (String, url::Url) {
    let role = db.role("").await;
    let mut url = url::Url::parse(&db.url).unwrap();
    let database = url.path().trim_start_matches('/').to_string();
    db.exec(&match db.backend {
        Backend::Mysql => format!("GRANT ALL ON {database}.* TO '{role}'@'%'"),
        _ => format!("GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}"),
    })
    .await;
    url.set_username(&role).unwrap();
    (role, url)
}

/// Refuses the role's logins from now on (PostgreSQL: NOLOGIN; MySQL: ACCOUNT LOCK), or
/// takes them again.
async fn refuse_logins(db: &mut TestDb, role: &str, refuse: bool) {
    db.exec(&match (db.backend, refuse) {
        (Backend::Mysql, true) => format!("ALTER USER '{role}'@'%' ACCOUNT LOCK"),
        (Backend::Mysql, false) => format!("ALTER USER '{role}'@'%' ACCOUNT UNLOCK"),
        (_, true) => format!("ALTER ROLE {role} NOLOGIN"),
        (_, false) => format!("ALTER ROLE {role} LOGIN"),
    })
    .await;
}

/// Ends every session of the role, as an administrator (or a server restart) would.
async fn end_sessions(db: &mut TestDb, role: &str) {
    if db.backend == Backend::Postgres {
        db.exec(&format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'"
        ))
        .await;
        return;
    }
    let pool = db.pool().await;
    let sessions: Vec<i64> = sqlx::query_scalar(&format!(
        "SELECT CAST(id AS SIGNED) FROM information_schema.processlist WHERE user = '{role}'"
    ))
    .fetch_all(&pool)
    .await
    .unwrap();
    for id in sessions {
        // One that ended meanwhile is no longer there to kill.
        let _ = db.try_exec(&format!("KILL CONNECTION {id}")).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Running the binary

fn inboxctl(db: &TestDb, args: &[&str]) -> Run {
    let mut command = db.cmd();
    command
        .env("KAFKA_BROKERS", &broker().address)
        .args(args)
        .timeout(RUN_LIMIT);
    Run::from(command.output().unwrap())
}

/// `replay --topic T --from earliest --consumer C --format json` and `rest`.
fn replay(db: &TestDb, topic: &str, consumer: &str, rest: &[&str]) -> Run {
    let mut args = vec![
        "replay",
        "--topic",
        topic,
        "--consumer",
        consumer,
        "--format",
        "json",
    ];
    if !rest.contains(&"--from") {
        args.extend(["--from", "earliest"]);
    }
    args.extend_from_slice(rest);
    inboxctl(db, &args)
}

/// The totals of a JSON summary: (messages, processed, skipped_duplicate, failed, missing_id).
fn totals(json: &Value) -> (i64, i64, i64, i64, i64) {
    let n = |key: &str| {
        json[key]
            .as_i64()
            .unwrap_or_else(|| panic!("no {key} in {json}"))
    };
    (
        n("messages"),
        n("processed"),
        n("skipped_duplicate"),
        n("failed"),
        n("missing_id"),
    )
}

/// Per partition: (partition, from, to, messages, processed, skipped_duplicate, failed,
/// missing_id).
#[allow(clippy::type_complexity)]
fn per_partition(json: &Value) -> Vec<(i64, i64, i64, i64, i64, i64, i64, i64)> {
    json["partitions"]
        .as_array()
        .unwrap_or_else(|| panic!("no partitions in {json}"))
        .iter()
        .map(|p| {
            let n = |key: &str| p[key].as_i64().unwrap_or_else(|| panic!("{key} in {p}"));
            (
                n("partition"),
                n("from"),
                n("to"),
                n("messages"),
                n("processed"),
                n("skipped_duplicate"),
                n("failed"),
                n("missing_id"),
            )
        })
        .collect()
}

/// The binary as a child process, for killing and for running several at once.
fn spawn(db: &TestDb, args: &[String], stderr: &Path) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("inboxctl"))
        .env("DATABASE_URL", &db.url)
        .env("KAFKA_BROKERS", &broker().address)
        .current_dir(db.dir.path())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(stderr).unwrap())
        .spawn()
        .expect("start inboxctl")
}

/// A small deterministic generator (xorshift64*), seeded from the clock or from
/// `INBOXCTL_TEST_SEED` to repeat a run; the seed is printed.
struct Rng(u64);

impl Rng {
    fn new(what: &str) -> Rng {
        let seed = std::env::var("INBOXCTL_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        eprintln!("{what}: INBOXCTL_TEST_SEED={seed}");
        Rng(seed.max(1))
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// In `low..=high`.
    fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }
}

// ---------------------------------------------------------------------------------------------
// Each effect once

async fn replaying_twice_applies_each_effect_once(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    setup(&mut db).await;
    let topic = topic(3).await;
    let landed = produce(&topic, &deposits("e", 3, 20)).await;
    let handler = write(&db, "deposit.sql", HANDLER);

    let first = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--batch-size", "7"],
    )
    .ok()
    .json();
    assert_eq!(totals(&first), (60, 60, 0, 0, 0));
    assert_eq!(
        per_partition(&first),
        vec![
            (0, 0, 20, 20, 20, 0, 0, 0),
            (1, 0, 20, 20, 20, 0, 0, 0),
            (2, 0, 20, 20, 20, 0, 0, 0)
        ]
    );
    let lasts: Vec<&Value> = first["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["last_offset"])
        .collect();
    assert_eq!(lasts, [&json!(19), &json!(19), &json!(19)]);
    assert_eq!(
        (first["topic"].as_str(), first["consumer"].as_str()),
        (Some(topic.as_str()), Some("billing"))
    );
    let expected = expected_balances(&landed);
    // Amounts 1..=60; the n-th event of partition p goes to account (n + p) % 4 + 1.
    assert_eq!(expected, vec![(1, 465), (2, 450), (3, 435), (4, 480)]);
    assert_eq!(balances(&mut db).await, expected);
    assert_eq!(ledger(&mut db).await, distinct_ids(&landed));
    // The inbox names where each event was read.
    let mut rows: Vec<(String, String, i64, i64)> = landed
        .iter()
        .map(|l| {
            (
                l.event.id.clone().unwrap(),
                topic.clone(),
                i64::from(l.partition),
                l.offset,
            )
        })
        .collect();
    rows.sort();
    assert_eq!(inbox(&mut db, "billing").await, rows);

    // Again, in other batches: everything is in the inbox, nothing is applied.
    let second = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--batch-size", "13"],
    )
    .ok()
    .json();
    assert_eq!(totals(&second), (60, 0, 60, 0, 0));
    assert_eq!(
        per_partition(&second),
        vec![
            (0, 0, 20, 20, 0, 20, 0, 0),
            (1, 0, 20, 20, 0, 20, 0, 0),
            (2, 0, 20, 20, 0, 20, 0, 0)
        ]
    );
    assert_eq!(balances(&mut db).await, expected);
    assert_eq!(ledger(&mut db).await, distinct_ids(&landed));
    assert_eq!(inbox(&mut db, "billing").await, rows);

    // Another consumer is another inbox: its replay applies everything once more, through a
    // handler that takes the account from the nested field (--param), and only once.
    let nested = write(
        &db,
        "nested.sql",
        "UPDATE accounts SET balance = balance + :amount WHERE id = :acct",
    );
    for (run, expected_totals) in [(1, (60, 60, 0, 0, 0)), (2, (60, 0, 60, 0, 0))] {
        let json = replay(
            &db,
            &topic,
            "audit",
            &["--sql", &nested, "--param", "acct=json:/order/account"],
        )
        .ok()
        .json();
        assert_eq!(totals(&json), expected_totals, "run {run}");
        let doubled: Vec<(i64, i64)> = expected.iter().map(|(a, b)| (*a, 2 * b)).collect();
        assert_eq!(balances(&mut db).await, doubled, "run {run}");
    }
    assert_eq!(inbox(&mut db, "audit").await.len(), 60);
    assert_eq!(inbox(&mut db, "billing").await, rows);
    assert_eq!(inbox_count(&mut db).await, 120);
}

async fn producer_duplicates_apply_once(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    setup(&mut db).await;
    let topic = topic(2).await;
    let mut events = deposits("d", 2, 10);
    // The producer retried: p0-3 again at once (same batch) and later in partition 0, p0-1
    // in partition 1, and p1-4 twice at the end of partition 1 (another batch).
    let copy = |id: &str, partition: i32| {
        let original = events.iter().find(|e| e.id.as_deref() == Some(id)).unwrap();
        Event {
            partition,
            ..original.clone()
        }
    };
    let extra = vec![
        copy("d-p0-3", 0),
        copy("d-p0-3", 0),
        copy("d-p0-1", 1),
        copy("d-p1-4", 1),
        copy("d-p1-4", 1),
    ];
    events.extend(extra);
    let landed = produce(&topic, &events).await;
    assert_eq!(landed.len(), 25);
    let handler = write(&db, "deposit.sql", HANDLER);

    // Small batches so that copies fall into the same batch and into later ones.
    let dry = replay(&db, &topic, "billing", &["--dry-run", "--batch-size", "4"])
        .ok()
        .json();
    assert_eq!(totals(&dry), (25, 20, 5, 0, 0));
    let first = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--batch-size", "4"],
    )
    .ok()
    .json();
    assert_eq!(totals(&first), (25, 20, 5, 0, 0));
    // d-p0-1's copy is in the other partition: which of the two is applied first depends
    // on how the partitions' fetches interleave, so either partition counts it as the
    // duplicate. Inside a partition the order is the log's.
    let split = per_partition(&first);
    assert!(
        split == vec![(0, 0, 12, 12, 10, 2, 0, 0), (1, 0, 13, 13, 10, 3, 0, 0)]
            || split == vec![(0, 0, 12, 12, 9, 3, 0, 0), (1, 0, 13, 13, 11, 2, 0, 0)],
        "{split:?}"
    );
    assert_eq!(balances(&mut db).await, expected_balances(&landed));
    assert_eq!(ledger(&mut db).await, distinct_ids(&landed));
    // One inbox row per event id, at one of the places it was read; inside one partition the
    // first copy wins.
    let rows = inbox(&mut db, "billing").await;
    assert_eq!(rows.len(), 20);
    let places = positions(&landed);
    for (id, row_topic, partition, offset) in &rows {
        assert_eq!(row_topic, &topic);
        let at = (*partition as i32, *offset);
        assert!(places[id].contains(&at), "{id} at {at:?}");
        let first_in_partition = places[id].iter().find(|p| p.0 == at.0).unwrap();
        assert_eq!(&at, first_in_partition, "{id}");
    }
    let second = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--batch-size", "4"],
    )
    .ok()
    .json();
    assert_eq!(totals(&second), (25, 0, 25, 0, 0));
    assert_eq!(balances(&mut db).await, expected_balances(&landed));
    assert_eq!(ledger(&mut db).await.len(), 20);
}

// ---------------------------------------------------------------------------------------------
// The live group is left alone

/// Where the session may not create temporary objects, the handler cannot become a function:
/// replay then sends its statements pipelined, with the same result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_temporary_objects_the_handler_goes_statement_by_statement_on_postgres() {
    let mut db = TestDb::new(Backend::Postgres).await;
    setup(&mut db).await;
    let (_, url) = a_role_with_its_url(&mut db).await;
    let database = url.path().trim_start_matches('/').to_string();
    db.exec(&format!(
        "REVOKE TEMPORARY ON DATABASE {database} FROM PUBLIC"
    ))
    .await;

    let topic = topic(2).await;
    let landed = produce(&topic, &deposits("notemp", 2, 15)).await;
    let handler = write(
        &db,
        "balance.sql",
        "UPDATE accounts SET balance = balance + :amount WHERE id = :account",
    );
    let mut command = db.cmd();
    command
        .env("DATABASE_URL", url.as_str())
        .env("KAFKA_BROKERS", &broker().address)
        .args([
            "replay",
            "--topic",
            &topic,
            "--from",
            "earliest",
            "--consumer",
            "notemp",
            "--sql",
            &handler,
            "--format",
            "json",
            "-v",
        ])
        .timeout(RUN_LIMIT);
    let run = Run::from(command.output().unwrap()).ok();
    assert!(
        run.stderr.contains("handler statements go out pipelined"),
        "{}",
        run.stderr
    );
    assert_eq!(totals(&run.json()), (30, 30, 0, 0, 0));
    assert_eq!(balances(&mut db).await, expected_balances(&landed));
}

/// On PostgreSQL a one-statement handler runs once per batch, as a temporary function over
/// the batch's values. The messages must still apply in their order, with their types (here
/// a NUMERIC, which goes as text and is cast by the server), each once; a handler of several
/// statements keeps to one statement per message.
/// On PostgreSQL a batch's inbox rows go in on a second connection while the batch before it
/// is handled and committed. A producer duplicate at the start of a batch, whose original
/// ends the batch before, makes that early insert wait for the commit and then fail: the
/// batch is rolled back and applied with the conflict check, each event once, no hang.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_inserted_ahead_apply_each_event_once_on_postgres() {
    let mut db = TestDb::new(Backend::Postgres).await;
    setup(&mut db).await;
    let topic = topic(1).await;
    let mut events = deposits("a", 1, 60);
    // Batches of 5: offsets 0-4, 5-9, … The copies land at 5, 30 and 50, each right after
    // its original, which ends a batch.
    for original in [47usize, 28, 4] {
        let copy = events[original].clone();
        events.insert(original + 1, copy);
    }
    let landed = produce(&topic, &events).await;
    assert_eq!(landed.len(), 63);
    for (offset, original) in [(5usize, 4usize), (30, 29), (50, 49)] {
        assert_eq!(landed[offset].event.id, landed[original].event.id);
        assert_eq!(landed[offset].offset, offset as i64);
    }
    let handler = write(&db, "deposit.sql", HANDLER);

    let run = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--batch-size", "5", "-v"],
    )
    .ok();
    assert_eq!(totals(&run.json()), (63, 60, 3, 0, 0));
    assert_eq!(balances(&mut db).await, expected_balances(&landed));
    assert_eq!(ledger(&mut db).await, distinct_ids(&landed));
    let ahead: u64 = run
        .stderr
        .lines()
        .find_map(|line| {
            line.strip_suffix(" batches committed with their inbox rows inserted ahead")
        })
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no count of batches inserted ahead: {}", run.stderr));
    // 13 batches. Ahead go at most those that follow a batch of new ids which itself had
    // its rows in before the next was read: the 5th, 9th and 10th. (The 2nd, 6th and 11th
    // meet their copy and go the conflict check's way, after which the 3rd, 7th and 12th
    // take the conflict check too and the 4th, 8th and 13th start over.)
    assert!(
        (1..=3).contains(&ahead),
        "{ahead} batches ahead\n{}",
        run.stderr
    );
}

/// The handler's statements run on connections of their own on PostgreSQL (the pipeline's),
/// which must be set up as the main one is: in UTC whatever the database's default time
/// zone, or a handler that turns `:timestamp` into a local time would write another hour
/// than the same handler run statement by statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handlers_connections_are_in_utc_whatever_the_databases_zone_on_postgres() {
    let mut db = TestDb::new(Backend::Postgres).await;
    setup(&mut db).await;
    db.exec(
        "CREATE TABLE zones (event_id TEXT PRIMARY KEY, zone TEXT NOT NULL, \
         local_time TEXT NOT NULL, utc_time TEXT NOT NULL)",
    )
    .await;
    db.exec_and_disconnect(
        "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET timezone = %L', \
         current_database(), 'Pacific/Chatham'); END $$",
    )
    .await;
    // A new session of this database starts in that zone, unless its client asks for
    // another (sqlx asks for UTC, so this asks with tokio-postgres, as the pipeline does).
    let (client, connection) = tokio_postgres::connect(&db.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let connection = tokio::spawn(connection);
    let zone: String = client.query_one("SHOW TimeZone", &[]).await.unwrap().get(0);
    assert_eq!(zone, "Pacific/Chatham");
    drop(client);
    connection.await.unwrap().unwrap();
    let topic = topic(2).await;
    let landed = produce(&topic, &deposits("z", 2, 20)).await;
    let handler = write(
        &db,
        "zones.sql",
        "INSERT INTO zones (event_id, zone, local_time, utc_time) VALUES (:event_id, \
         current_setting('TimeZone'), \
         to_char(to_timestamp(:timestamp / 1000.0)::timestamp, 'YYYY-MM-DD HH24:MI:SS'), \
         to_char(to_timestamp(:timestamp / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'))",
    );
    let run = replay(
        &db,
        &topic,
        "audit",
        &["--sql", &handler, "--batch-size", "5", "-v"],
    )
    .ok();
    assert_eq!(totals(&run.json()), (40, 40, 0, 0, 0));
    let pool = db.pool().await;
    // Each row as the handler saw it: its session's zone, and the message's time in it
    // against the same time in UTC.
    let rows: Vec<(String, String, bool)> =
        sqlx::query_as("SELECT event_id, zone, local_time = utc_time FROM zones ORDER BY event_id")
            .fetch_all(&pool)
            .await
            .unwrap();
    let mut expected: Vec<(String, String, bool)> = landed
        .iter()
        .map(|l| (l.event.id.clone().unwrap(), "UTC".to_string(), true))
        .collect();
    expected.sort();
    assert_eq!(rows, expected, "{}", run.stderr);
}

/// A trigger on the inbox that locks what the handler updates: rows inserted ahead then hold
/// locks the batch before them waits for, a wait only this process could end (the server
/// sees no cycle). After a second replay rolls them back, and every batch still applies
/// once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_waiting_on_rows_inserted_ahead_does_not_hang_on_postgres() {
    let mut db = TestDb::new(Backend::Postgres).await;
    setup(&mut db).await;
    // Rows from offset 5 on (the second batch of 5) lock account 1, which the first batch's
    // handler updates.
    db.exec(
        "CREATE FUNCTION touch_accounts() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN IF NEW.\"offset\" >= 5 THEN UPDATE accounts SET balance = balance WHERE id = 1; \
         END IF; RETURN NULL; END $$; \
         CREATE TRIGGER touch_accounts AFTER INSERT ON processed_messages \
         FOR EACH ROW EXECUTE FUNCTION touch_accounts()",
    )
    .await;
    let topic = topic(1).await;
    let landed = produce(&topic, &deposits("w", 1, 20)).await;
    // The first message's handler takes its time before it updates account 1: by then the
    // second batch's rows are in, and account 1 locked.
    let handler = write(
        &db,
        "deposit.sql",
        &format!("SELECT pg_sleep(CASE WHEN :offset = 0 THEN 0.3 ELSE 0 END);\n{HANDLER}"),
    );
    let started = Instant::now();
    let run = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--batch-size", "5", "-v"],
    )
    .ok();
    assert_eq!(totals(&run.json()), (20, 20, 0, 0, 0));
    assert_eq!(balances(&mut db).await, expected_balances(&landed));
    assert_eq!(ledger(&mut db).await, distinct_ids(&landed));
    assert!(started.elapsed() < RUN_LIMIT, "{:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_statement_handler_runs_per_batch_in_message_order_on_postgres() {
    let mut db = TestDb::new(Backend::Postgres).await;
    setup(&mut db).await;
    db.exec(
        "CREATE TABLE latest (account BIGINT PRIMARY KEY, last_event TEXT NOT NULL, \
         events INT NOT NULL, total NUMERIC(12, 2) NOT NULL, history TEXT NOT NULL)",
    )
    .await;
    let topic = topic(1).await;
    let landed = produce(&topic, &deposits("ord", 1, 40)).await;
    // Each message overwrites last_event and appends to history: any reordering or second
    // application shows.
    let handler = write(
        &db,
        "latest.sql",
        "INSERT INTO latest (account, last_event, events, total, history) \
         VALUES (:account, :event_id, 1, :amount, :event_id) \
         ON CONFLICT (account) DO UPDATE SET last_event = EXCLUDED.last_event, \
         events = latest.events + 1, total = latest.total + EXCLUDED.total, \
         history = latest.history || ',' || EXCLUDED.history",
    );
    // Batches of 7: five full ones and a partial one.
    let run = replay(
        &db,
        &topic,
        "ordered",
        &["--sql", &handler, "--batch-size", "7", "-v"],
    )
    .ok();
    assert!(
        run.stderr.contains("the handler runs once per batch"),
        "{}",
        run.stderr
    );
    assert_eq!(totals(&run.json()), (40, 40, 0, 0, 0));

    let mut expected: BTreeMap<i64, (String, i32, String, Vec<String>)> = BTreeMap::new();
    for l in &landed {
        let account = l.event.payload["account"].as_i64().unwrap();
        let amount = l.event.payload["amount"].as_i64().unwrap();
        let id = l.event.id.clone().unwrap();
        let entry = expected
            .entry(account)
            .or_insert((String::new(), 0, "0".into(), Vec::new()));
        entry.0 = id.clone();
        entry.1 += 1;
        entry.2 = (entry.2.parse::<i64>().unwrap() + amount).to_string();
        entry.3.push(id);
    }
    let expected: Vec<(i64, String, i32, String, String)> = expected
        .into_iter()
        .map(|(account, (last, events, total, history))| {
            (
                account,
                last,
                events,
                format!("{total}.00"),
                history.join(","),
            )
        })
        .collect();
    let pool = db.pool().await;
    let read = || async {
        sqlx::query_as::<_, (i64, String, i32, String, String)>(
            "SELECT account, last_event, events, CAST(total AS TEXT), history FROM latest ORDER BY account",
        )
        .fetch_all(&pool)
        .await
        .unwrap()
    };
    assert_eq!(read().await, expected);

    // Again: everything is in the inbox, nothing applies a second time.
    let again = replay(
        &db,
        &topic,
        "ordered",
        &["--sql", &handler, "--batch-size", "7"],
    )
    .ok();
    assert_eq!(totals(&again.json()), (40, 0, 40, 0, 0));
    assert_eq!(read().await, expected);

    // Two statements: pipelined one by one, same result for another consumer.
    let two = write(&db, "deposit.sql", HANDLER);
    let run = replay(&db, &topic, "two", &["--sql", &two, "-v"]).ok();
    assert!(
        run.stderr.contains("handler statements go out pipelined"),
        "{}",
        run.stderr
    );
    assert_eq!(balances(&mut db).await, expected_balances(&landed));
}

async fn replay_leaves_the_groups_committed_offsets_alone(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    setup(&mut db).await;
    let topic = topic(3).await;
    let landed = produce(&topic, &deposits("c", 3, 8)).await;
    let group = unique("billing");
    broker().commit(&group, &topic, &[(0, 3), (1, 5)]);
    let before = broker().committed(&group, &topic, 3);
    assert_eq!(before, vec![Some(3), Some(5), None]);
    let handler = write(&db, "deposit.sql", HANDLER);

    // From the group's position: partition 2 has none, so it starts at the log start.
    let from_group = format!("committed:{group}");
    let run = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--from", &from_group],
    )
    .ok();
    let no_offset_for_2 = format!(
        "warning: group '{group}' has no committed offset for partition(s) 2 of '{topic}': those are replayed from the log start"
    );
    assert!(run.stderr.contains(&no_offset_for_2), "{}", run.stderr);
    let json = run.json();
    assert_eq!(totals(&json), (16, 16, 0, 0, 0));
    assert_eq!(
        per_partition(&json),
        vec![
            (0, 3, 8, 5, 5, 0, 0, 0),
            (1, 5, 8, 3, 3, 0, 0, 0),
            (2, 0, 8, 8, 8, 0, 0, 0)
        ]
    );
    let applied: Vec<Landed> = landed
        .iter()
        .filter(|l| match l.partition {
            0 => l.offset >= 3,
            1 => l.offset >= 5,
            _ => true,
        })
        .cloned()
        .collect();
    assert_eq!(balances(&mut db).await, expected_balances(&applied));
    assert_eq!(broker().committed(&group, &topic, 3), before);

    // Only the partition without one: the group's offsets on the others show it exists.
    let run = replay(
        &db,
        &topic,
        "billing",
        &[
            "--sql",
            &handler,
            "--from",
            &from_group,
            "--partition",
            "2",
            "--dry-run",
        ],
    )
    .ok();
    assert!(run.stderr.contains(&no_offset_for_2), "{}", run.stderr);
    assert_eq!(totals(&run.json()), (8, 0, 8, 0, 0));

    // A group with no offsets on the topic (a typo, say) replays nothing.
    let nosuch = unique("nosuch");
    let refused = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--from", &format!("committed:{nosuch}")],
    )
    .code(1);
    assert!(
        refused.stderr.contains(&format!(
            "consumer group '{nosuch}' has no committed offset for topic '{topic}'"
        )) && refused.stderr.contains("--from earliest"),
        "{}",
        refused.stderr
    );
    assert_eq!(balances(&mut db).await, expected_balances(&applied));

    let json = replay(&db, &topic, "billing", &["--sql", &handler])
        .ok()
        .json();
    assert_eq!(totals(&json), (24, 8, 16, 0, 0));
    assert_eq!(balances(&mut db).await, expected_balances(&landed));
    assert_eq!(broker().committed(&group, &topic, 3), before);
    // Nor under the throwaway group id of its own reader.
    let readers: Vec<String> = broker()
        .groups()
        .into_iter()
        .filter(|name| name.starts_with("inboxctl-reader-"))
        .collect();
    for reader in readers {
        assert_eq!(
            broker().committed(&reader, &topic, 3),
            vec![None, None, None],
            "group {reader}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// SIGKILL at random moments

/// Replays a few thousand events in a child process killed with SIGKILL `kills` times (after
/// a random delay, or once the inbox has grown by a random number of rows), now and then
/// stopped with Ctrl-C instead, re-running until a run completes; then every event is
/// applied exactly once.
async fn killed_replays_converge(backend: Backend, kills: usize, handler_sql: &str) {
    let mut db = TestDb::new(backend).await;
    setup(&mut db).await;
    let topic = topic(4).await;
    let mut events = deposits("k", 4, 500);
    // A few producer duplicates, far from their originals.
    for n in [3usize, 777, 1500] {
        let original = events[n].clone();
        events.push(Event {
            partition: (original.partition + 1) % 4,
            ..original
        });
    }
    let landed = produce(&topic, &events).await;
    let total = distinct_ids(&landed).len() as i64;
    assert_eq!(total, 2000);
    let handler = write(&db, "deposit.sql", handler_sql);
    let mut rng = Rng::new(&format!(
        "killed_replays_converge({backend:?}, {})",
        handler_sql.len()
    ));
    let mut killed = 0;
    let mut interrupted = 0;
    let mut runs = 0;
    let mut log = Vec::new();
    // A kill's random delay is at most this; once nothing is left to replay, at most the
    // shortest run that went to its end.
    const MAX_DELAY_MS: u64 = 400;
    let mut shortest_complete = Duration::from_millis(MAX_DELAY_MS);
    loop {
        runs += 1;
        assert!(
            runs <= 4 * kills + 20,
            "no complete run after {runs} runs:\n{}",
            log.join("\n")
        );
        let batch = rng.range(5, 50).to_string();
        let args: Vec<String> = [
            "replay",
            "--topic",
            &topic,
            "--from",
            "earliest",
            "--consumer",
            "billing",
            "--sql",
            &handler,
            "--batch-size",
            &batch,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let stderr = db.dir.path().join(format!("run-{runs}.stderr"));
        let before = inbox_count(&mut db).await;
        let started = Instant::now();
        let mut child = spawn(&db, &args, &stderr);
        let mut exit = None;
        if killed < kills {
            // Leave room for the kills still to come.
            let left = (total - before).max(1) as u64;
            let room = (left / (kills - killed + 1) as u64).max(1);
            // Now and then a Ctrl-C instead of a kill.
            let interrupt = interrupted < 3 && rng.range(0, 5) == 0;
            // A kill after a random delay still comes no later than the run's share of
            // what is left: a fast run must not finish the work while kills remain to land.
            let (delay, rows) = if before >= total {
                // A run went past its share before a poll saw it (a poll held up on a busy
                // machine can let it) and replayed the rest: the kills still due can only
                // land during a run's start or its pass over events already in, so within
                // such a run's length. Delays of up to 400 ms mostly missed it, and the test
                // ran out of runs.
                let bound = shortest_complete.as_millis() as u64;
                (Some(Duration::from_millis(rng.range(0, bound))), i64::MAX)
            } else if rng.range(0, 2) == 0 {
                (
                    Some(Duration::from_millis(rng.range(0, MAX_DELAY_MS))),
                    before + room as i64,
                )
            } else {
                (None, before + rng.range(1, room) as i64)
            };
            loop {
                if let Some(status) = child.try_wait().unwrap() {
                    exit = Some(status.code().unwrap_or(-1));
                    break;
                }
                let due = delay.is_some_and(|delay| started.elapsed() >= delay)
                    || inbox_count(&mut db).await >= rows;
                if due && interrupt {
                    // Ctrl-C: the batch under way finishes, then the run stops (130), unless
                    // the signal came before the handler was set up, or after the last batch.
                    send_signal("INT", &child.id().to_string());
                    let status = loop {
                        if let Some(status) = child.try_wait().unwrap() {
                            break status;
                        }
                        assert!(started.elapsed() < RUN_LIMIT, "run {runs} ignores Ctrl-C");
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    };
                    let text = std::fs::read_to_string(&stderr).unwrap();
                    use std::os::unix::process::ExitStatusExt;
                    assert!(
                        matches!(status.code(), Some(130) | Some(0)) || status.signal() == Some(2),
                        "run {runs} after Ctrl-C: {status:?}\n{text}"
                    );
                    if status.code() == Some(130) {
                        assert!(
                            text.contains("interrupted: every finished batch is committed"),
                            "{text}"
                        );
                    }
                    interrupted += 1;
                    log.push(format!(
                        "run {runs}: batch {batch}, Ctrl-C after {:?}: {status:?} at {} rows",
                        started.elapsed(),
                        inbox_count(&mut db).await
                    ));
                    break;
                }
                if due {
                    child.kill().unwrap();
                    child.wait().unwrap();
                    killed += 1;
                    log.push(format!(
                        "run {runs}: batch {batch}, killed after {:?} at {} rows",
                        started.elapsed(),
                        inbox_count(&mut db).await
                    ));
                    break;
                }
                assert!(started.elapsed() < RUN_LIMIT, "run {runs} hangs");
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        } else {
            exit = Some(
                wait_until(&mut child, started + RUN_LIMIT)
                    .unwrap_or_else(|| panic!("run {runs} did not finish within {RUN_LIMIT:?}")),
            );
        }
        if let Some(code) = exit {
            let text = std::fs::read_to_string(&stderr).unwrap();
            assert_eq!(code, 0, "run {runs} (batch {batch}) failed:\n{text}");
            let took = started.elapsed();
            shortest_complete = shortest_complete.min(took);
            log.push(format!("run {runs}: batch {batch}, completed in {took:?}"));
            if killed >= kills {
                break;
            }
        }
    }
    eprintln!("{}", log.join("\n"));
    assert!(killed >= kills, "only {killed} kills landed: {log:?}");

    assert_eq!(balances(&mut db).await, expected_balances(&landed));
    assert_eq!(ledger(&mut db).await, distinct_ids(&landed));
    let rows = inbox(&mut db, "billing").await;
    let ids: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    assert_eq!(ids, distinct_ids(&landed));
    let places = positions(&landed);
    for (id, _, partition, offset) in &rows {
        assert!(places[id].contains(&(*partition as i32, *offset)), "{id}");
    }
    // And one more run finds nothing left to do, on the path the runs above took.
    let last = replay(&db, &topic, "billing", &["--sql", &handler, "-v"]).ok();
    assert_eq!(totals(&last.json()), (2003, 0, 2003, 0, 0));
    assert_eq!(balances(&mut db).await, expected_balances(&landed));
    if backend == Backend::Postgres {
        let path = if handler_sql == ONE_STATEMENT_HANDLER {
            "the handler runs once per batch"
        } else {
            "handler statements go out pipelined"
        };
        assert!(last.stderr.contains(path), "{}", last.stderr);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_replays_converge_on_sqlite() {
    killed_replays_converge(Backend::Sqlite, 12, HANDLER).await;
}

/// PostgreSQL both ways: the two statements pipelined, and the same effects as one statement,
/// which runs once per batch as a function.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_replays_converge_on_postgres() {
    killed_replays_converge(Backend::Postgres, 6, HANDLER).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_replays_converge_on_postgres_with_a_one_statement_handler() {
    killed_replays_converge(Backend::Postgres, 6, ONE_STATEMENT_HANDLER).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_replays_converge_on_mysql() {
    killed_replays_converge(Backend::Mysql, 6, HANDLER).await;
}

// ---------------------------------------------------------------------------------------------
// Four at once

/// Starts one replay of the topic up to `to` per (consumer, batch size) at the same moment,
/// waits for all (bounded), checks each succeeded and read all `messages`, and returns what
/// each processed.
fn replay_at_once(
    db: &TestDb,
    topic: &str,
    handler: &str,
    to: &str,
    messages: i64,
    runs: &[(&str, &str)],
) -> Vec<i64> {
    let mut children = Vec::new();
    for (n, (consumer, batch)) in runs.iter().enumerate() {
        let args: Vec<String> = [
            "replay",
            "--topic",
            topic,
            "--from",
            "earliest",
            "--to",
            to,
            "--consumer",
            consumer,
            "--sql",
            handler,
            "--batch-size",
            batch,
            "--format",
            "json",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let stdout = db.dir.path().join(format!("{consumer}-{n}.json"));
        let stderr = db.dir.path().join(format!("{consumer}-{n}.stderr"));
        let mut command = Command::new(assert_cmd::cargo::cargo_bin("inboxctl"));
        command
            .env("DATABASE_URL", &db.url)
            .env("KAFKA_BROKERS", &broker().address)
            .current_dir(db.dir.path())
            .args(&args)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap());
        children.push((command.spawn().unwrap(), stdout, stderr));
    }
    let deadline = Instant::now() + RUN_LIMIT;
    let mut processed = Vec::new();
    for (n, (mut child, stdout, stderr)) in children.into_iter().enumerate() {
        let code = wait_until(&mut child, deadline);
        let text = std::fs::read_to_string(&stderr).unwrap();
        assert_eq!(code, Some(0), "run {n} {:?}:\n{text}", runs[n]);
        let json: Value = serde_json::from_str(&std::fs::read_to_string(&stdout).unwrap())
            .unwrap_or_else(|error| panic!("run {n}: {error}"));
        let (read, p, skipped, failed, missing) = totals(&json);
        assert_eq!(
            (read, p + skipped, failed, missing),
            (messages, messages, 0, 0),
            "run {n} {:?}",
            runs[n]
        );
        processed.push(p);
    }
    processed
}

async fn four_replays_at_once_apply_each_effect_once(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    setup(&mut db).await;
    let topic = topic(4).await;
    let landed = produce(&topic, &deposits("f", 4, 500)).await;
    let handler = write(&db, "deposit.sql", HANDLER);
    let expected = expected_balances(&landed);

    // The same range, the same inbox: between them, each event is processed once.
    let processed = replay_at_once(
        &db,
        &topic,
        &handler,
        "latest",
        2000,
        &[
            ("billing", "5"),
            ("billing", "8"),
            ("billing", "13"),
            ("billing", "20"),
        ],
    );
    assert_eq!(
        processed.iter().sum::<i64>(),
        2000,
        "each event processed by exactly one run: {processed:?}"
    );
    assert_eq!(balances(&mut db).await, expected);
    assert_eq!(ledger(&mut db).await, distinct_ids(&landed));
    assert_eq!(inbox_count(&mut db).await, 2000);

    // Four consumers at once over the first 100 offsets of each partition: no inbox row holds
    // one back behind another, so their batches update the same accounts in different orders
    // all the time. The deadlocks (PostgreSQL, MariaDB) and busy waits (SQLite) this brings
    // are retried: each consumer applies every event exactly once.
    if backend == Backend::Postgres {
        // PostgreSQL looks for deadlocks after deadlock_timeout (1 s by default), InnoDB at
        // once; a shorter wait keeps this test short. The retries are what is under test.
        db.set_database_default("deadlock_timeout", "20ms").await;
    }
    let processed = replay_at_once(
        &db,
        &topic,
        &handler,
        "100",
        400,
        &[("c0", "5"), ("c1", "8"), ("c2", "13"), ("c3", "20")],
    );
    assert_eq!(processed, vec![400; 4]);
    let head: Vec<Landed> = landed.iter().filter(|l| l.offset < 100).cloned().collect();
    let four_times = expected_balances(&head);
    let both: Vec<(i64, i64)> = expected
        .iter()
        .zip(&four_times)
        .map(|((account, all), (_, head))| (*account, all + 4 * head))
        .collect();
    assert_eq!(balances(&mut db).await, both);
    assert_eq!(ledger(&mut db).await.len(), 2000 + 4 * 400);
    assert_eq!(inbox_count(&mut db).await, 2000 + 4 * 400);
}

/// A batch whose handler waited out PostgreSQL's lock_timeout (the application held the
/// row for a while) is tried again like a deadlock, not pinned on a message as its failure:
/// once the application lets go, every event is applied once and the run ends well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_that_waits_out_the_lock_timeout_is_tried_again() {
    let mut db = TestDb::new(Backend::Postgres).await;
    setup(&mut db).await;
    let topic = topic(1).await;
    let landed = produce(&topic, &deposits("l", 1, 8)).await;
    let handler = write(&db, "deposit.sql", HANDLER);
    db.set_database_default("lock_timeout", "200ms").await;
    let pool = db.pool().await;
    let mut application = pool.begin().await.unwrap();
    sqlx::query("SELECT balance FROM accounts WHERE id = 1 FOR UPDATE")
        .execute(&mut *application)
        .await
        .unwrap();

    let mut child = db
        .command(&[
            "replay",
            "--topic",
            &topic,
            "--from",
            "earliest",
            "--consumer",
            "billing",
            "--sql",
            &handler,
            "--format",
            "json",
        ])
        .env("KAFKA_BROKERS", &broker().address)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Three transactions of replay's in turn waiting for the row. Without the retry, the
    // batch would wait once, then its messages one by one, and the run would end when the
    // one that updates account 1 timed out too.
    let mut waits = BTreeSet::new();
    let deadline = Instant::now() + RUN_LIMIT;
    while waits.len() < 3 {
        assert!(
            Instant::now() < deadline,
            "replay waited {} times",
            waits.len()
        );
        if child.try_wait().unwrap().is_some() {
            let run = Run::from(child.wait_with_output().unwrap());
            panic!("replay ended while the row was held:\n{}", run.stderr);
        }
        let started: Vec<String> = sqlx::query_scalar(
            "SELECT xact_start::text FROM pg_stat_activity WHERE datname = current_database() \
             AND wait_event_type = 'Lock'",
        )
        .fetch_all(&pool)
        .await
        .unwrap();
        waits.extend(started);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    application.rollback().await.unwrap();

    let run = Run::from(
        tokio::task::spawn_blocking(|| child.wait_with_output().unwrap())
            .await
            .unwrap(),
    );
    assert_eq!(totals(&run.ok().json()), (8, 8, 0, 0, 0));
    assert_eq!(balances(&mut db).await, expected_balances(&landed));
}

// ---------------------------------------------------------------------------------------------
// Poison messages and missing ids

async fn a_poison_message_fails_alone(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    setup(&mut db).await;
    let topic = topic(1).await;
    let mut events = deposits("x", 1, 30);
    // Offset 12 breaks the ledger's CHECK (amount > 0); offset 20 has no amount at all.
    events[12] = deposit(0, "x-p0-12", 2, -5);
    events[20].payload.as_object_mut().unwrap().remove("amount");
    let landed = produce(&topic, &events).await;
    let handler = write(&db, "deposit.sql", HANDLER);
    let dead = db.dir.path().join("dead.jsonl");
    let dead = dead.to_str().unwrap();
    let good = |upto: i64| -> Vec<Landed> {
        landed
            .iter()
            .filter(|l| l.offset < upto && l.offset != 12 && l.offset != 20)
            .cloned()
            .collect()
    };

    // --on-error stop (the default): the failing batch of 5 (offsets 10-14) goes message by
    // message, so 10, 11, 13 and 14 are applied, then the replay stops.
    let stopped = replay(
        &db,
        &topic,
        "billing",
        &[
            "--sql",
            &handler,
            "--batch-size",
            "5",
            "--dead-letter",
            dead,
        ],
    )
    .code(1);
    assert_eq!(totals(&stopped.json()), (15, 14, 0, 1, 0));
    assert!(
        stopped.stderr.lines().any(|line| line
            .starts_with("error: the handler failed on 0:12 (event x-p0-12): ")
            && line.contains("positive_amount")),
        "{}",
        stopped.stderr
    );
    assert!(
        stopped.stderr.contains("--on-error skip goes on"),
        "{}",
        stopped.stderr
    );
    // Said once, by the error that ends the run.
    assert_eq!(
        stopped.stderr.matches("0:12 (event x-p0-12)").count(),
        1,
        "{}",
        stopped.stderr
    );
    assert_eq!(balances(&mut db).await, expected_balances(&good(15)));
    assert_eq!(ledger(&mut db).await, distinct_ids(&good(15)));
    let lines: Vec<Value> = std::fs::read_to_string(dead)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(
        (
            &lines[0]["offset"],
            &lines[0]["event_id"],
            &lines[0]["partition"]
        ),
        (&json!(12), &json!("x-p0-12"), &json!(0))
    );
    assert_eq!(lines[0]["topic"], topic.as_str());
    assert_eq!(lines[0]["payload"]["amount"], -5);
    // The server's own words, on every backend: not those of a statement it skipped after
    // the failure ("current transaction is aborted").
    let error = lines[0]["error"].as_str().unwrap();
    assert!(
        error.contains("handler statement failed on 0:12: ") && error.contains("positive_amount"),
        "{error}"
    );

    // --on-error skip: the rest is applied, both poison messages are reported and written to
    // the dead-letter file, and the exit code still says something failed.
    let skipped = replay(
        &db,
        &topic,
        "billing",
        &[
            "--sql",
            &handler,
            "--batch-size",
            "5",
            "--dead-letter",
            dead,
            "--on-error",
            "skip",
        ],
    )
    .code(1);
    let json = skipped.json();
    assert_eq!(totals(&json), (30, 14, 14, 2, 0));
    for needle in [
        "warning: 0:12 (event x-p0-12): handler statement failed on 0:12",
        "warning: 0:20 (event x-p0-20): message 0:20 has no value for :amount",
        "warning: 2 message(s) failed; see above and the dead-letter file",
    ] {
        assert!(
            skipped.stderr.contains(needle),
            "{needle}\n{}",
            skipped.stderr
        );
    }
    assert!(
        skipped
            .stderr
            .lines()
            .any(|line| line.starts_with("warning: 0:12 (event x-p0-12): ")
                && line.contains("positive_amount")),
        "{}",
        skipped.stderr
    );
    assert_eq!(balances(&mut db).await, expected_balances(&good(30)));
    assert_eq!(ledger(&mut db).await, distinct_ids(&good(30)));
    assert_eq!(inbox(&mut db, "billing").await.len(), 28);
    let lines: Vec<Value> = std::fs::read_to_string(dead)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let offsets: Vec<(&Value, &Value)> = lines
        .iter()
        .map(|l| (&l["offset"], &l["event_id"]))
        .collect();
    assert_eq!(
        offsets,
        vec![
            (&json!(12), &json!("x-p0-12")),
            (&json!(12), &json!("x-p0-12")),
            (&json!(20), &json!("x-p0-20"))
        ]
    );
    assert_eq!(
        lines[2]["error"], "message 0:20 has no value for :amount",
        "{}",
        lines[2]
    );

    // A run where nothing fails leaves no dead-letter file behind (one that exists says
    // something failed), and keeps one that was there.
    let clean = db.dir.path().join("clean.jsonl");
    for (file, kept) in [(clean.to_str().unwrap(), false), (dead, true)] {
        let args = ["--sql", &handler, "--dead-letter", file, "--to", "10"];
        let run = replay(&db, &topic, "billing", &args).ok();
        assert_eq!(totals(&run.json()), (10, 0, 10, 0, 0));
        assert_eq!(std::path::Path::new(file).exists(), kept, "{file}");
    }
    assert_eq!(std::fs::read_to_string(dead).unwrap().lines().count(), 3);
}

/// Keys, header values and payloads that are not UTF-8 text (Avro, Protobuf) reach an exec
/// handler as they were, in base64, not with their bytes replaced; a header given twice is
/// its last value, as Kafka's clients read one. Text goes as text, without those fields.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_messages_reach_an_exec_handler_in_base64() {
    let db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let topic = topic(1).await;
    let producer: FutureProducer = broker().config().create().unwrap();
    let binary = FutureRecord::to(&topic)
        .partition(0)
        .key(&b"\xff\x00k"[..])
        .payload(&b"\xff\xfe{\"x\":1}"[..])
        .headers(
            OwnedHeaders::new()
                .insert(Header {
                    key: "event_id",
                    value: Some("bin-1"),
                })
                .insert(Header {
                    key: "raw",
                    value: Some(&b"\xff\x01"[..]),
                })
                .insert(Header {
                    key: "dup",
                    value: Some("a"),
                })
                .insert(Header {
                    key: "dup",
                    value: Some("b"),
                }),
        );
    producer
        .send(binary, Duration::from_secs(30))
        .await
        .unwrap();
    let text = FutureRecord::to(&topic)
        .partition(0)
        .key("k-2")
        .payload(r#"{"event_id":"txt-2","amount":1}"#);
    producer.send(text, Duration::from_secs(30)).await.unwrap();
    let (command, _, received) = exec_handler(&db, 0.0);
    replay(&db, &topic, "mailer", &["--exec", &command]).ok();
    let lines: Vec<Value> = lines(&received)
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    let (first, second) = (&lines[0], &lines[1]);
    assert_eq!(first["event_id"], "bin-1");
    assert_eq!(
        (&first["key"], &first["key_base64"]),
        (&Value::Null, &json!("/wBr"))
    );
    assert_eq!(
        first["headers"],
        json!({"event_id": "bin-1", "raw": null, "dup": "b"})
    );
    assert_eq!(first["headers_base64"], json!({"raw": "/wE="}));
    assert_eq!(
        (&first["payload"], &first["payload_base64"]),
        (&Value::Null, &json!("//57IngiOjF9"))
    );
    assert_eq!(second["key"], "k-2");
    assert_eq!(second["payload"], json!({"event_id": "txt-2", "amount": 1}));
    for field in ["key_base64", "headers_base64", "payload_base64"] {
        assert!(second.get(field).is_none(), "{second}");
    }
}

/// A header given twice is its last value, as Kafka's clients read one and as the exec
/// handler's line has it: the event id recorded is the last `event_id` header's, by the
/// default source and by `--event-id-from header:event_id` alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_given_twice_is_its_last_value_on_sqlite() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    setup(&mut db).await;
    let topic = topic(1).await;
    let producer: FutureProducer = broker().config().create().unwrap();
    let record = FutureRecord::<str, str>::to(&topic)
        .partition(0)
        .payload(r#"{"account":1,"amount":5}"#)
        .headers(
            OwnedHeaders::new()
                .insert(Header {
                    key: "event_id",
                    value: Some("first-A"),
                })
                .insert(Header {
                    key: "event_id",
                    value: Some("last-B"),
                }),
        );
    producer
        .send(record, Duration::from_secs(30))
        .await
        .unwrap();
    let handler = write(&db, "deposit.sql", HANDLER);
    for (consumer, source) in [("billing", None), ("other", Some("header:event_id"))] {
        let mut args = vec!["--sql", handler.as_str()];
        if let Some(source) = source {
            args.extend(["--event-id-from", source]);
        }
        let json = replay(&db, &topic, consumer, &args).ok().json();
        assert_eq!(totals(&json), (1, 1, 0, 0, 0), "{consumer}");
        let rows: Vec<String> = inbox(&mut db, consumer)
            .await
            .into_iter()
            .map(|(event_id, ..)| event_id)
            .collect();
        assert_eq!(rows, ["last-B"], "{consumer}");
    }
    assert_eq!(ledger(&mut db).await, ["last-B", "last-B"]);
}

/// Mistakes that would otherwise go unseen are usage errors, before anything is read: an
/// empty consumer (an unset variable), a --param the built-in of its name would overrule or
/// given twice, a negative offset where a time ago lacks its unit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_mistakes_in_the_arguments_are_usage_errors() {
    let db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    for (consumer, rest, error) in [
        (
            "",
            vec!["--dry-run"],
            "error: invalid value '' for '--consumer <CONSUMER>': the name is empty",
        ),
        (
            "  ",
            vec!["--dry-run"],
            "error: invalid value '  ' for '--consumer <CONSUMER>': the name is only blanks",
        ),
        (
            "billing",
            vec!["--dry-run", "--param", "offset=json:/amount"],
            "error: --param offset: :offset is a built-in (event_id, topic, partition, offset, \
             key, timestamp, payload); give the parameter another name",
        ),
        (
            "billing",
            vec![
                "--dry-run",
                "--param",
                "tags=json:/tags",
                "--param",
                "tags=json:/ok",
            ],
            "error: --param tags is given twice",
        ),
        (
            "billing",
            vec!["--dry-run", "--from", "-1"],
            "error: invalid value '-1' for '--from <START>': '-1' is a negative offset; offsets \
             start at 0, and a time ago takes a unit, e.g. -1h",
        ),
    ] {
        let run = replay(&db, "orders", consumer, &rest).code(2);
        assert_eq!(run.stderr.lines().next(), Some(error), "{}", run.stderr);
    }
}

/// A PostgreSQL inbox whose event_id is a uuid cannot take the text ids replay inserts:
/// refused before anything is read, rather than every message failing on the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uuid_event_id_column_is_refused_before_reading_on_postgres() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.uuid_inbox().await;
    let topic = topic(1).await;
    produce(&topic, &deposits("u", 1, 2)).await;
    for dry_run in [false, true] {
        let mut args = vec!["--exec", "cat"];
        if dry_run {
            args.push("--dry-run");
        }
        let run = replay(&db, &topic, "billing", &args).code(1);
        assert_refuses_uuid_event_ids(&run);
        assert_eq!(run.stdout, "");
    }
    assert_eq!(db.count("processed_messages").await, 0);
}

/// A handler statement that cannot be prepared (a syntax error, a table that is not there)
/// would fail every message, and under --on-error skip dead-letter them all: the run stops
/// before it reads anything, and so does its dry run. A file with no statement is a usage
/// error.
async fn a_handler_that_cannot_be_prepared_stops_before_reading(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    setup(&mut db).await;
    let topic = topic(1).await;
    produce(&topic, &deposits("s", 1, 3)).await;
    let dead = db.dir.path().join("dead.jsonl");
    let dead = dead.to_str().unwrap();
    for (sql, wrong) in [
        (
            "INSERT INTO ledger (event_id, account, amount) VALUES (:event_id, :account, :amount);\n\
             INSERT INTO ledger (event_id) VALUS (:event_id);\n",
            "VALUS",
        ),
        (
            "UPDATE no_such_table SET balance = balance + :amount WHERE id = :account;\n",
            "no_such_table",
        ),
    ] {
        let handler = write(&db, "broken.sql", sql);
        for dry_run in [false, true] {
            let mut args = vec!["--sql", &handler, "--on-error", "skip", "--dead-letter", dead];
            if dry_run {
                args.push("--dry-run");
            }
            let run = replay(&db, &topic, "billing", &args).code(1);
            let statement = if wrong == "VALUS" { 2 } else { 1 };
            let expected = format!(
                "error: statement {statement} of the SQL handler {handler} cannot be prepared, \
                 so every message would fail on it; nothing was read: "
            );
            assert!(run.stderr.starts_with(&expected), "{}", run.stderr);
            assert!(run.stderr.contains(wrong), "{}", run.stderr);
            assert_eq!(run.stdout, "");
        }
    }
    assert!(!std::path::Path::new(dead).exists());
    assert_eq!(inbox_count(&mut db).await, 0);
    assert_eq!(db.count("ledger").await, 0);

    let empty = write(&db, "empty.sql", "-- nothing yet\n");
    let run = replay(&db, &topic, "billing", &["--sql", &empty]).code(2);
    assert_eq!(
        run.stderr,
        format!("error: in {empty}: the handler SQL file holds no statement\n")
    );
    // A file saved as UTF-16 (with its byte-order mark), or in another encoding.
    let utf16 = db.dir.path().join("utf16.sql");
    let mut bytes = vec![0xFF, 0xFE];
    bytes.extend("SELECT 1;\n".encode_utf16().flat_map(u16::to_le_bytes));
    std::fs::write(&utf16, bytes).unwrap();
    let latin1 = db.dir.path().join("latin1.sql");
    std::fs::write(&latin1, b"SELECT 'caf\xe9';\n").unwrap();
    for (file, expected) in [
        (
            &utf16,
            "is UTF-16 text (it starts with a byte-order mark); save it as UTF-8",
        ),
        (&latin1, "is not UTF-8 text ("),
    ] {
        let file = file.to_str().unwrap();
        let run = replay(&db, &topic, "billing", &["--sql", file, "--dry-run"]).code(2);
        assert!(
            run.stderr
                .starts_with(&format!("error: the SQL handler {file} {expected}")),
            "{}",
            run.stderr
        );
    }

    // A placeholder of the database's own would take another's value, or none.
    let own = match backend {
        Backend::Postgres => "$2",
        _ => "?",
    };
    let handler = write(
        &db,
        "own.sql",
        &format!(
            "INSERT INTO ledger (event_id, account, amount) VALUES (:event_id, {own}, :amount);\n\
             SELECT 1;\n"
        ),
    );
    let run = replay(&db, &topic, "billing", &["--sql", &handler]).code(2);
    assert_eq!(
        run.stderr,
        format!(
            "error: in {handler}: the handler SQL has a placeholder of its own, {own}, on line 1; \
             name each value with a :name placeholder (:event_id, :payload, a payload field, or \
             --param)\n"
        )
    );
    assert_eq!(inbox_count(&mut db).await, 0);
    assert_eq!(db.count("ledger").await, 0);

    // A COMMIT would let the inbox row and the effect commit apart; on MySQL so would DDL,
    // which commits implicitly. Refused before anything is read, dry run or not.
    let mut ending = vec![(
        "INSERT INTO ledger (event_id, account, amount) VALUES (:event_id, :account, :amount);\n\
         COMMIT;\n",
        "statement 2 of the handler SQL is a COMMIT statement, ending",
    )];
    if backend == Backend::Mysql {
        ending.push((
            "TRUNCATE TABLE accounts;\n",
            "statement 1 of the handler SQL is a TRUNCATE statement, which MySQL commits \
             implicitly, ending",
        ));
    }
    for (sql, problem) in ending {
        let handler = write(&db, "ending.sql", sql);
        for dry_run in [false, true] {
            let mut args = vec!["--sql", handler.as_str()];
            if dry_run {
                args.push("--dry-run");
            }
            let run = replay(&db, &topic, "billing", &args).code(2);
            assert!(
                run.stderr
                    .starts_with(&format!("error: in {handler}: {problem} the transaction")),
                "{}",
                run.stderr
            );
            assert_eq!(run.stdout, "");
        }
    }
    assert_eq!(inbox_count(&mut db).await, 0);
    assert_eq!(db.count("ledger").await, 0);

    // MySQL's rows come through a driver that cannot take every type (DATETIME here), and
    // replay reads none: a statement that returns rows is refused, and DO evaluates an
    // expression for its effect.
    if backend == Backend::Mysql {
        let handler = write(&db, "select.sql", "SELECT NOW();\n");
        let run = replay(&db, &topic, "billing", &["--sql", &handler]).code(2);
        assert_eq!(
            run.stderr,
            format!(
                "error: statement 1 of the SQL handler {handler} returns rows, which replay does \
                 not read and cannot always take from MySQL; evaluate an expression for its \
                 effect with DO … instead of SELECT, and leave out RETURNING\n"
            )
        );
        let handler = write(
            &db,
            "do.sql",
            "DO :amount + 0;\n\
             INSERT INTO ledger (event_id, account, amount) VALUES (:event_id, :account, :amount);\n",
        );
        replay(&db, &topic, "billing", &["--sql", &handler]).ok();
        assert_eq!(db.count("ledger").await, 3);
    }
}

/// On PostgreSQL the handler's connections type each parameter from the statement. The
/// payload goes into a jsonb column as the JSON it holds, not as a JSON string. And when one
/// message fails a batch, the others go again on those connections, one at a time, so the
/// jsonb parameter that the batch took there does not fail them on the way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jsonb_payload_is_json_and_a_bad_message_fails_alone_on_postgres() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(
        "CREATE TABLE deposit_log (event_id text PRIMARY KEY, payload jsonb NOT NULL, \
         amount int NOT NULL CHECK (amount > 0))",
    )
    .await;
    let topic = topic(1).await;
    let mut events = deposits("j", 1, 6);
    events[3] = deposit(0, "j-p0-3", 1, -5);
    produce(&topic, &events).await;
    let handler = write(
        &db,
        "log.sql",
        "INSERT INTO deposit_log (event_id, payload, amount) VALUES (:event_id, :payload, :amount);",
    );
    let run = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--batch-size", "6", "--on-error", "skip"],
    )
    .code(1);
    assert_eq!(totals(&run.json()), (6, 5, 0, 1, 0), "{}", run.stderr);
    let failed: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning: 0:"))
        .collect();
    assert_eq!(failed.len(), 1, "{}", run.stderr);
    assert!(
        failed[0].starts_with("warning: 0:3 (event j-p0-3): "),
        "{}",
        run.stderr
    );
    assert!(
        failed[0].contains("deposit_log_amount_check"),
        "{}",
        run.stderr
    );
    let pool = db.pool().await;
    let stored: Vec<(String, String, i32)> = sqlx::query_as(
        "SELECT event_id, jsonb_typeof(payload), (payload->>'amount')::int \
         FROM deposit_log ORDER BY event_id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let expected: Vec<(String, String, i32)> = [0, 1, 2, 4, 5]
        .iter()
        .map(|&n| (format!("j-p0-{n}"), "object".to_string(), n + 1))
        .collect();
    assert_eq!(stored, expected);

    // On the main connection (the handler's connections off, as with sslmode=verify-full),
    // a value goes with its JSON type, and a cast in the statement makes it jsonb. The
    // statements prepared before the run to check them must not serve the batches there:
    // typed by the server alone, they took an integer for `amount` and JSON for the cast.
    db.exec("TRUNCATE deposit_log").await;
    let cast = write(
        &db,
        "cast.sql",
        "INSERT INTO deposit_log (event_id, payload, amount) \
         VALUES (:event_id, :payload::jsonb, :amount);",
    );
    for batch in ["1", "3"] {
        db.exec("TRUNCATE deposit_log").await;
        let consumer = format!("plain-{batch}");
        let args = [
            "replay",
            "--topic",
            &topic,
            "--from",
            "earliest",
            "--consumer",
            &consumer,
            "--format",
            "json",
            "--sql",
            &cast,
            "--batch-size",
            batch,
            "--on-error",
            "skip",
        ];
        let mut command = db.cmd();
        command
            .env("KAFKA_BROKERS", &broker().address)
            .env("INBOXCTL_PG_PIPELINE", "0")
            .args(args)
            .timeout(RUN_LIMIT);
        let run = Run::from(command.output().unwrap()).code(1);
        assert_eq!(totals(&run.json()), (6, 5, 0, 1, 0), "{}", run.stderr);
        // The server's DETAIL says which row, as on the handler's connections.
        assert!(
            run.stderr.contains(
                "violates check constraint \"deposit_log_amount_check\" DETAIL: Failing row \
                 contains (j-p0-3, "
            ),
            "{}",
            run.stderr
        );
        let stored: Vec<(String, String, i32)> = sqlx::query_as(
            "SELECT event_id, jsonb_typeof(payload), (payload->>'amount')::int \
             FROM deposit_log ORDER BY event_id",
        )
        .fetch_all(&pool)
        .await
        .unwrap();
        assert_eq!(stored, expected, "batch {batch}");
    }
}

/// PostgreSQL's main connection (the handler's connections off, as with sslmode=verify-full)
/// takes a handler without casts as the handler's connections do: each parameter goes as
/// the type the server gives it, uuid, timestamptz, numeric, jsonb, char(5) and bit(3)
/// included, in a WHERE clause too, and text in dollar quotes stays as written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_main_connection_types_parameters_as_the_server_does_on_postgres() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(
        "CREATE TABLE typed (id uuid PRIMARY KEY, at timestamptz NOT NULL, \
         amount numeric(12,2) NOT NULL, account int NOT NULL, tags jsonb NOT NULL, \
         body jsonb NOT NULL, note text, code char(5) NOT NULL, bits bit(3) NOT NULL, \
         literal text NOT NULL, seen int NOT NULL DEFAULT 0)",
    )
    .await;
    let topic = topic(1).await;
    let events: Vec<Event> = (0..4)
        .map(|n| {
            let id = format!("00000000-0000-4000-8000-00000000000{n}");
            Event {
                partition: 0,
                id: Some(id.clone()),
                payload: json!({
                    "event_id": id,
                    "at": format!("2026-12-0{}T10:00:00+02:00", n + 1),
                    "amount": 12.5 + f64::from(n),
                    "account": n,
                    "tags": ["a", n],
                    "note": n * 10,
                    "code": format!("c{n}x"),
                    "bits": "101",
                }),
            }
        })
        .collect();
    produce(&topic, &events).await;
    let handler = write(
        &db,
        "typed.sql",
        "INSERT INTO typed (id, at, amount, account, tags, body, note, code, bits, literal) \
         VALUES (:event_id, :at, :amount, :account, :tags, :payload, :note, :code, :bits, \
         $$dollar $1 :code$$);\n\
         UPDATE typed SET seen = seen + 1 \
         WHERE id = :event_id AND account = :account AND code = :code;",
    );
    let pool = db.pool().await;
    let mut seen = Vec::new();
    for (consumer, pipeline) in [("plain", "0"), ("typed", "1")] {
        db.exec("TRUNCATE typed").await;
        let mut command = db.cmd();
        command
            .env("KAFKA_BROKERS", &broker().address)
            .env("INBOXCTL_PG_PIPELINE", pipeline)
            .args(["replay", "--topic", &topic, "--from", "earliest"])
            .args([
                "--consumer",
                consumer,
                "--format",
                "json",
                "--sql",
                &handler,
            ])
            .args(["--batch-size", "3"])
            .timeout(RUN_LIMIT);
        let run = Run::from(command.output().unwrap()).code(0);
        assert_eq!(totals(&run.json()), (4, 4, 0, 0, 0), "{}", run.stderr);
        let rows: Vec<String> = sqlx::query_scalar(
            "SELECT concat_ws(' | ', id, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'), \
             amount, account, tags, body->>'note', note, code, bits, literal, seen) \
             FROM typed ORDER BY id",
        )
        .fetch_all(&pool)
        .await
        .unwrap();
        seen.push(rows);
    }
    let expected: Vec<String> = (0..4)
        .map(|n| {
            format!(
                "00000000-0000-4000-8000-00000000000{n} | 2026-12-0{} 08:00 | {}.50 | {n} | \
                 [\"a\", {n}] | {} | {} | c{n}x   | 101 | dollar $1 :code | 1",
                n + 1,
                12 + n,
                n * 10,
                n * 10
            )
        })
        .collect();
    assert_eq!(seen[0], expected, "main connection");
    assert_eq!(seen[1], expected, "handler's connections");
}

async fn messages_without_an_event_id_fail_or_are_skipped(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    setup(&mut db).await;
    let topic = topic(1).await;
    let mut events = deposits("m", 1, 12);
    // Offset 7: neither an event_id header nor an event_id field.
    events[7].forget_id();
    let landed = produce(&topic, &events).await;
    let handler = write(&db, "deposit.sql", HANDLER);
    let dead = db.dir.path().join("dead.jsonl");
    let dead = dead.to_str().unwrap();

    // --on-missing-id fail (the default): stops at offset 7, in the batch of 5-9, after
    // applying the messages before it, so that every message read is accounted for. The
    // dry run stops there too, with the same error, and writes nothing.
    let stopped_at_7 = "error: no event id (header:event_id, then json:/event_id) in message \
                        0:7 (no header event_id, and the payload has no /event_id); stopping \
                        (--on-missing-id skip goes on)";
    let dry = replay(
        &db,
        &topic,
        "billing",
        &[
            "--sql",
            &handler,
            "--batch-size",
            "5",
            "--dead-letter",
            dead,
            "--dry-run",
        ],
    )
    .code(1);
    assert!(dry.stderr.contains(stopped_at_7), "{}", dry.stderr);
    assert_eq!(dry.json()["dry_run"], true);
    assert!(!Path::new(dead).exists(), "a dry run writes no dead letter");
    assert_eq!(balances(&mut db).await, expected_balances(&[]));
    assert_eq!(inbox_count(&mut db).await, 0);
    let failed = replay(
        &db,
        &topic,
        "billing",
        &[
            "--sql",
            &handler,
            "--batch-size",
            "5",
            "--dead-letter",
            dead,
        ],
    )
    .code(1);
    assert!(failed.stderr.contains(stopped_at_7), "{}", failed.stderr);
    let (messages, processed, _, failures, missing) = totals(&failed.json());
    assert_eq!((messages, processed, failures, missing), (8, 7, 0, 1));
    assert_eq!(failed.json()["partitions"][0]["last_offset"], 7);
    assert_eq!(per_partition(&dry.json()), per_partition(&failed.json()));
    assert_eq!(dry.json()["partitions"][0]["last_offset"], 7);
    let first_seven: Vec<Landed> = landed.iter().take(7).cloned().collect();
    assert_eq!(balances(&mut db).await, expected_balances(&first_seven));
    // The same message first in its batch: read, counted, and the last offset read.
    let at_once = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--batch-size", "5", "--from", "7"],
    )
    .code(1);
    let json = at_once.json();
    assert_eq!(totals(&json), (1, 0, 0, 0, 1));
    assert_eq!(json["partitions"][0]["last_offset"], 7);
    assert_eq!(balances(&mut db).await, expected_balances(&first_seven));
    let line: Value = serde_json::from_str(std::fs::read_to_string(dead).unwrap().trim()).unwrap();
    assert_eq!(
        (&line["offset"], &line["event_id"], &line["partition"]),
        (&json!(7), &Value::Null, &json!(0))
    );
    assert!(line["error"]
        .as_str()
        .unwrap()
        .starts_with("no event id (header:event_id, then json:/event_id) in message 0:7"));

    // --on-missing-id skip: everything else applied, the message counted; success.
    let json = replay(
        &db,
        &topic,
        "billing",
        &[
            "--sql",
            &handler,
            "--batch-size",
            "5",
            "--on-missing-id",
            "skip",
        ],
    )
    .ok()
    .json();
    assert_eq!(totals(&json), (12, 4, 7, 0, 1));
    assert_eq!(balances(&mut db).await, expected_balances(&landed));
    assert_eq!(inbox(&mut db, "billing").await.len(), 11);

    // An explicit source that finds nothing: every message is missing its id.
    let json = replay(
        &db,
        &topic,
        "other",
        &[
            "--sql",
            &handler,
            "--event-id-from",
            "header:trace_id",
            "--on-missing-id",
            "skip",
        ],
    )
    .ok()
    .json();
    assert_eq!(totals(&json), (12, 0, 0, 0, 12));
    assert_eq!(balances(&mut db).await, expected_balances(&landed));
}

/// A batch whose handler failure comes before a message without an id: the dead-letter file
/// lists them as the topic holds them, whichever the replay found first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letter_lines_follow_the_topic_on_sqlite() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    setup(&mut db).await;
    let topic = topic(1).await;
    let mut events = deposits("o", 1, 5);
    // Offset 1 breaks the ledger's CHECK (amount > 0); offset 3 has no event id.
    events[1] = deposit(0, "o-p0-1", 2, -5);
    events[3].forget_id();
    produce(&topic, &events).await;
    let handler = write(&db, "deposit.sql", HANDLER);
    let dead = db.dir.path().join("dead.jsonl");
    let dead = dead.to_str().unwrap();
    let run = replay(
        &db,
        &topic,
        "billing",
        &[
            "--sql",
            &handler,
            "--dead-letter",
            dead,
            "--on-error",
            "skip",
            "--on-missing-id",
            "skip",
        ],
    )
    .code(1);
    assert_eq!(totals(&run.json()), (5, 3, 0, 1, 1));
    let lines: Vec<(Value, Value)> = std::fs::read_to_string(dead)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|l| (l["offset"].clone(), l["event_id"].clone()))
        .collect();
    assert_eq!(
        lines,
        vec![(json!(1), json!("o-p0-1")), (json!(3), Value::Null)]
    );
}

// ---------------------------------------------------------------------------------------------
// The exec handler

/// The command line of the test's exec handler (tests/fixtures/exec_handler.py), which
/// appends each event id it applies to `effects.txt` and each line it reads to
/// `received.jsonl` in the test's folder, taking `delay` seconds per message.
fn exec_handler(db: &TestDb, delay: f64) -> (String, PathBuf, PathBuf) {
    let script: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests",
        "fixtures",
        "exec_handler.py",
    ]
    .iter()
    .collect();
    let effects = db.dir.path().join("effects.txt");
    let received = db.dir.path().join("received.jsonl");
    let command = format!(
        "python3 '{}' '{}' '{}' {delay}",
        script.display(),
        effects.display(),
        received.display()
    );
    (command, effects, received)
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// A consumer new since the inbox was last analysed, as one replayed for the first time is,
/// is looked up by its primary key. PostgreSQL, estimating such a consumer at one row, would
/// as well read all of its rows through another index, for every batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_the_statistics_do_not_know_is_looked_up_by_its_key_on_postgres() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    db.analyse_with_one_known_consumer().await;
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id, topic, \"partition\", \"offset\") \
         SELECT 'mailer', 'earlier-' || i, 'earlier', 0, i FROM generate_series(1, 20000) AS i",
    )
    .await;
    let topic = topic(2).await;
    produce(&topic, &deposits("x", 2, 10)).await;
    let (command, effects, _) = exec_handler(&db, 0.0);
    for rest in [
        &["--dry-run", "--batch-size", "4"][..],
        &["--exec", &command, "--batch-size", "4"],
    ] {
        let read = db
            .index_tuples_read_by(|db| replay(db, &topic, "mailer", rest).ok())
            .await;
        for index in [
            "processed_messages_consumer_coordinates_idx",
            "processed_messages_consumer_processed_at_idx",
        ] {
            assert_eq!(read[index], 0, "{rest:?}: {read:?}");
        }
        // At most the entries of the 20 event ids asked about.
        assert!(read["processed_messages_pkey"] <= 20, "{rest:?}: {read:?}");
    }
    assert_eq!(lines(&effects).len(), 20);
}

async fn exec_handler_gets_each_event_once(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let topic = topic(2).await;
    let mut events = deposits("x", 2, 10);
    // A producer duplicate, and one message the handler refuses.
    events.push(Event {
        partition: 1,
        ..events[0].clone()
    });
    events[9].payload["refuse"] = json!(true);
    let refused = events[9].id.clone().unwrap();
    let landed = produce(&topic, &events).await;
    let (command, effects, received) = exec_handler(&db, 0.0);
    let accepted: Vec<String> = distinct_ids(&landed)
        .into_iter()
        .filter(|id| *id != refused)
        .collect();

    let first = replay(
        &db,
        &topic,
        "mailer",
        &[
            "--exec",
            &command,
            "--on-error",
            "skip",
            "--batch-size",
            "4",
        ],
    )
    .code(1);
    assert_eq!(totals(&first.json()), (21, 19, 1, 1, 0));
    assert!(
        first
            .stderr
            .contains(&format!("(event {refused}): refused by the handler")),
        "{}",
        first.stderr
    );
    let mut effected = lines(&effects);
    effected.sort();
    assert_eq!(effected, accepted, "each accepted event once");
    assert_eq!(lines(&received).len(), 20);
    // What the handler reads: the message with its coordinates and parsed payload.
    let sent: Value = serde_json::from_str(&lines(&received)[0]).unwrap();
    let l0 = landed
        .iter()
        .find(|l| Some(sent["event_id"].as_str().unwrap()) == l.event.id.as_deref())
        .unwrap();
    assert_eq!(sent["topic"], topic.as_str());
    assert_eq!(
        (&sent["partition"], &sent["offset"], &sent["payload"]),
        (&json!(l0.partition), &json!(l0.offset), &l0.event.payload)
    );
    assert_eq!(sent["headers"]["event_id"], sent["event_id"]);
    let mut ids: Vec<String> = inbox(&mut db, "mailer")
        .await
        .into_iter()
        .map(|r| r.0)
        .collect();
    ids.sort();
    assert_eq!(ids, accepted);

    // Again: only the refused message is sent (it is not in the inbox); nothing else.
    let second = replay(
        &db,
        &topic,
        "mailer",
        &["--exec", &command, "--on-error", "skip"],
    )
    .code(1);
    assert_eq!(totals(&second.json()), (21, 0, 20, 1, 0));
    let mut effected = lines(&effects);
    effected.sort();
    assert_eq!(effected, accepted);
    let received_now = lines(&received);
    assert_eq!(received_now.len(), 21);
    let last: Value = serde_json::from_str(&received_now[20]).unwrap();
    assert_eq!(last["event_id"], refused.as_str());
}

/// A message the exec handler failed does not make a later copy of its event in the same
/// batch a duplicate: the copy is sent and applied, as the SQL handler applies it, and only
/// the failed message goes to the dead-letter file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_of_an_event_the_exec_handler_failed_is_sent_again_on_sqlite() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let topic = topic(1).await;
    let mut events = deposits("y", 1, 3);
    events[1] = events[0].clone();
    events[0].payload["refuse"] = json!(true);
    produce(&topic, &events).await;
    let (command, effects, _) = exec_handler(&db, 0.0);
    let dead = db.dir.path().join("dead.jsonl");
    let dead = dead.to_str().unwrap();
    let run = replay(
        &db,
        &topic,
        "mailer",
        &[
            "--exec",
            &command,
            "--on-error",
            "skip",
            "--dead-letter",
            dead,
        ],
    )
    .code(1);
    assert_eq!(totals(&run.json()), (3, 2, 0, 1, 0));
    let mut effected = lines(&effects);
    effected.sort();
    assert_eq!(effected, ["y-p0-0", "y-p0-2"]);
    let recorded: Vec<(String, i64)> = inbox(&mut db, "mailer")
        .await
        .into_iter()
        .map(|(id, _, _, offset)| (id, offset))
        .collect();
    assert_eq!(recorded, [("y-p0-0".into(), 1), ("y-p0-2".into(), 2)]);
    let dead_offsets: Vec<Value> = lines(Path::new(dead))
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["offset"].clone())
        .collect();
    assert_eq!(dead_offsets, [json!(0)]);
}

/// PostgreSQL's text cannot hold a NUL character: a message whose event id has one fails on
/// its own, in the dry run as in both handlers' runs, and the others go on.
/// Replays `topic` with `--on-error skip` through each handler: a dry run and the exec
/// handler as `mailer`, the SQL handler (HANDLER) as `billing`. Each run must end with exit
/// code 1, these totals and `why` on stderr. Returns the exec handler's effects file and the
/// SQL handler's path.
fn each_handler_skips_one(
    db: &TestDb,
    topic: &str,
    expected: (i64, i64, i64, i64, i64),
    why: &str,
) -> (PathBuf, String) {
    let (command, effects, _) = exec_handler(db, 0.0);
    let handler = write(db, "deposit.sql", HANDLER);
    for (consumer, handled) in [
        ("mailer", &["--dry-run"][..]),
        ("billing", &["--sql", &handler]),
        ("mailer", &["--exec", &command]),
    ] {
        let mut args = handled.to_vec();
        args.extend(["--on-error", "skip"]);
        let run = replay(db, topic, consumer, &args).code(1);
        assert_eq!(totals(&run.json()), expected, "{handled:?}: {}", run.stderr);
        assert!(run.stderr.contains(why), "{handled:?}: {}", run.stderr);
    }
    (effects, handler)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_id_postgres_cannot_store_fails_on_its_own() {
    let mut db = TestDb::new(Backend::Postgres).await;
    setup(&mut db).await;
    let topic = topic(1).await;
    let mut events = deposits("n", 1, 3);
    events[1] = deposit(0, "n\0b", 1, 5);
    produce(&topic, &events).await;
    let why = "the event id holds a NUL character, which PostgreSQL's text cannot store";
    let (effects, _) = each_handler_skips_one(&db, &topic, (3, 2, 0, 1, 0), why);
    assert_eq!(lines(&effects), ["n-p0-0", "n-p0-2"]);
    assert_eq!(inbox_count(&mut db).await, 4);
}

/// PostgreSQL's index on the inbox's key holds at most 2,704 bytes an entry: an id over it
/// that does not compress fails on its own, in the dry run (which the server asks) as in both
/// handlers' runs, before the handler sees it; one that compresses under it is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_id_over_the_key_index_fails_on_its_own_on_postgres() {
    let mut db = TestDb::new(Backend::Postgres).await;
    setup(&mut db).await;
    db.exec("ALTER TABLE ledger ALTER COLUMN event_id TYPE text")
        .await;
    let topic = topic(1).await;
    // A pseudo-random text: nothing the server could compress.
    let mut state: u64 = 7;
    let noise: String = (0..3000)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            char::from(b"0123456789abcdefghijklmnopqrstuv"[(state >> 59) as usize])
        })
        .collect();
    let compressible = "a".repeat(3000);
    let mut events = deposits("k", 1, 4);
    events[1] = deposit(0, &noise, 1, 5);
    events[2] = deposit(0, &compressible, 1, 7);
    produce(&topic, &events).await;
    let why = "the event id is 3000 bytes long; with the consumer's name it is over the 2,704 \
               bytes an entry of PostgreSQL's index on the inbox's key holds";
    let (effects, handler) = each_handler_skips_one(&db, &topic, (4, 3, 0, 1, 0), why);
    assert_eq!(
        lines(&effects),
        ["k-p0-0".to_string(), compressible.clone(), "k-p0-3".into()]
    );
    let mut ids: Vec<String> = inbox(&mut db, "billing")
        .await
        .into_iter()
        .map(|row| row.0)
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [compressible.clone(), "k-p0-0".into(), "k-p0-3".into()]
    );
    assert_eq!(inbox_count(&mut db).await, 6);

    // A dry run by a user who may only read cannot try such an id: it warns of it instead.
    let reader = db.role("").await;
    db.exec(&format!(
        "GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader}"
    ))
    .await;
    let mut url = url::Url::parse(&db.url).unwrap();
    url.set_username(&reader).unwrap();
    let run = replay(
        &db,
        &topic,
        "reader",
        &["--dry-run", "--database-url", url.as_str()],
    )
    .ok();
    assert_eq!(totals(&run.json()), (4, 4, 0, 0, 0));
    assert!(
        run.stderr.contains(
            "warning: 0:1: the real run may fail on it: its event id is 3000 bytes long; with \
             the consumer's name it is over the 2,704 bytes"
        ),
        "{}",
        run.stderr
    );
    // The one that compresses too: only the server could tell.
    assert_eq!(
        run.stderr.matches("the real run may fail on it").count(),
        2,
        "{}",
        run.stderr
    );

    // A consumer name over 126 bytes takes a longer header: less of the entry for the id.
    let consumer = "c".repeat(201);
    let edge = self::topic(1).await;
    produce(
        &edge,
        &[deposit(0, "e-0", 1, 1), deposit(0, &noise[..2487], 1, 1)],
    )
    .await;
    let run = replay(
        &db,
        &edge,
        &consumer,
        &["--sql", &handler, "--on-error", "skip"],
    )
    .code(1);
    assert_eq!(totals(&run.json()), (2, 1, 0, 1, 0));
    assert!(
        run.stderr
            .contains("the event id is 2487 bytes long; with the consumer's name"),
        "{}",
        run.stderr
    );

    // The same long id a batch apart: the next batch's inbox rows are inserted ahead, not
    // yet committed, when the batch after it is tried; the try must not wait for them.
    let twice = self::topic(1).await;
    let events = [
        deposit(0, "t-0", 1, 1),
        deposit(0, &compressible, 1, 1),
        deposit(0, &compressible, 1, 1),
        deposit(0, "t-3", 1, 1),
    ];
    produce(&twice, &events).await;
    let run = replay(
        &db,
        &twice,
        "twice",
        &["--sql", &handler, "--batch-size", "1"],
    )
    .ok();
    assert_eq!(totals(&run.json()), (4, 3, 1, 0, 0));
}

/// Ctrl-C on a terminal signals the whole foreground process group. The handler, in a group
/// of its own, keeps answering until the batch under way is recorded; the run stops with 130
/// and every effect the handler applied is in the inbox, so a re-run applies only the rest.
async fn ctrl_c_lets_the_exec_handler_finish_the_batch(backend: Backend) {
    a_signal_lets_the_exec_handler_finish_the_batch(backend, "INT", "interrupted", 130).await;
}

/// SIGTERM to inboxctl alone, as `kill` or Kubernetes send it: the same, with 143.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_the_exec_handler_finish_the_batch_on_sqlite() {
    a_signal_lets_the_exec_handler_finish_the_batch(
        Backend::Sqlite,
        "TERM",
        "stopped by SIGTERM",
        143,
    )
    .await;
}

/// Sends `signal` to the replay's process group (`INT`) or to inboxctl alone (`TERM`) once
/// the handler is under way, and checks that the run stops cleanly with `code`. The handler
/// refuses the first message, which `--on-error skip` goes past: the stop's code wins over
/// the failure's 1, and the warning still counts it.
async fn a_signal_lets_the_exec_handler_finish_the_batch(
    backend: Backend,
    signal: &str,
    said: &str,
    code: i32,
) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let topic = topic(2).await;
    let mut events = deposits("i", 2, 40);
    events[0].payload["refuse"] = json!(true);
    let refused = events[0].id.clone().unwrap();
    let landed = produce(&topic, &events).await;
    let (command, effects, _) = exec_handler(&db, 0.01);
    let stderr = db.dir.path().join("interrupted.stderr");
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("inboxctl"))
        .env("DATABASE_URL", &db.url)
        .env("KAFKA_BROKERS", &broker().address)
        .current_dir(db.dir.path())
        .args(["replay", "--topic", &topic, "--from", "earliest"])
        .args([
            "--consumer",
            "mailer",
            "--batch-size",
            "20",
            "--exec",
            &command,
            "--on-error",
            "skip",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        // As a shell starts a foreground job: a process group led by inboxctl.
        .process_group(0)
        .spawn()
        .expect("start inboxctl");
    let deadline = Instant::now() + RUN_LIMIT;
    while lines(&effects).len() < 5 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the replay ended early"
        );
        assert!(
            Instant::now() < deadline,
            "the exec handler applied nothing"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let target = match signal {
        "INT" => format!("-{}", child.id()),
        _ => child.id().to_string(),
    };
    send_signal(signal, &target);
    let exited = wait_until(&mut child, deadline).expect("the replay ignored the signal");
    let text = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(exited, code, "{text}");
    assert!(
        text.contains(&format!("{said}: every finished batch is committed")),
        "{text}"
    );
    assert!(
        text.contains("\nwarning: 1 message(s) failed; see above\n"),
        "{text}"
    );
    // At least the first batch of 20, less the refused message.
    let applied = lines(&effects);
    assert!(applied.len() >= 19 && applied.len() < 80, "{applied:?}");
    let mut recorded: Vec<String> = inbox(&mut db, "mailer")
        .await
        .into_iter()
        .map(|row| row.0)
        .collect();
    let mut applied_sorted = applied.clone();
    applied_sorted.sort();
    recorded.sort();
    assert_eq!(recorded, applied_sorted, "every applied effect is recorded");

    let again = replay(
        &db,
        &topic,
        "mailer",
        &["--exec", &command, "--on-error", "skip"],
    );
    again.code(1);
    let mut applied = lines(&effects);
    applied.sort();
    let mut expected = distinct_ids(&landed);
    expected.retain(|id| *id != refused);
    assert_eq!(applied, expected, "each event applied once");
}

/// A handler that hangs goes with its replay, and nothing of the batch is recorded; the next
/// run applies it all.
///
/// - Ctrl-C: the first waits for the batch; a second stops the replay at once and ends the
///   handler's process group (of its own, which Ctrl-C on a terminal does not reach).
/// - SIGKILL, which inboxctl cannot catch: a watchdog ends the handler's process group once
///   inboxctl is gone.
async fn a_hung_exec_handler_goes_with_its_replay(sigkill: bool) {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let topic = topic(1).await;
    let landed = produce(&topic, &deposits("h", 1, 3)).await;
    let (hanging, _, received) = exec_handler(&db, 3600.0);
    let stderr = db.dir.path().join("replay.stderr");
    let deadline = Instant::now() + RUN_LIMIT;
    let args = [
        "--consumer",
        "mailer",
        "--exec",
        &hanging,
        "--format",
        "json",
    ];
    let mut child = replay_under_way(
        &db,
        &broker().address,
        &topic,
        &args,
        &stderr,
        &received,
        deadline,
    )
    .await;
    if sigkill {
        child.kill().unwrap();
        child.wait().unwrap();
    } else {
        // Signals are not queued: two sent at once may arrive as one.
        while child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "the replay ignored Ctrl-C");
            send_signal("INT", &child.id().to_string());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let text = std::fs::read_to_string(&stderr).unwrap();
        assert_eq!(child.wait().unwrap().code(), Some(130), "{text}");
        assert!(
            text.contains("warning: Ctrl-C again: stopping now (nothing was done yet)"),
            "{text}"
        );
        // A script reading the result gets one, of no message done.
        let stdout = std::fs::read_to_string(stderr.with_extension("stdout")).unwrap();
        let json: serde_json::Value = serde_json::from_str(&stdout).expect(&stdout);
        for (field, value) in [
            ("messages", json!(0)),
            ("processed", json!(0)),
            ("interrupted", json!(true)),
            ("stopped_at_once", json!(true)),
            ("consumer", json!("mailer")),
        ] {
            assert_eq!(json[field], value, "{field}: {json}");
        }
        assert_eq!(json["partitions"][0]["to"], json!(3), "{json}");
    }
    // The handler's processes (its shell and python) go with it.
    let marker = received.to_str().unwrap().to_string();
    while handler_processes(&marker) > 0 {
        if Instant::now() > deadline {
            let _ = Command::new("pkill")
                .args(["-KILL", "-f", &marker])
                .status();
            panic!("the hung handler was left running");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(inbox(&mut db, "mailer").await.is_empty());
    let (command, effects, _) = exec_handler(&db, 0.0);
    replay(&db, &topic, "mailer", &["--exec", &command]).ok();
    assert_eq!(lines(&effects), distinct_ids(&landed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_ctrl_c_ends_a_hung_exec_handler_on_sqlite() {
    a_hung_exec_handler_goes_with_its_replay(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_killed_with_sigkill_takes_its_exec_handler_along_on_sqlite() {
    a_hung_exec_handler_goes_with_its_replay(true).await;
}

/// Starts `inboxctl replay --topic TOPIC --from earliest ARGS` against `brokers` and waits
/// until its exec handler has received a message (`received` has a line). Its stdout goes
/// to `stderr` with the extension `stdout`.
async fn replay_under_way(
    db: &TestDb,
    brokers: &str,
    topic: &str,
    args: &[&str],
    stderr: &Path,
    received: &Path,
    deadline: Instant,
) -> Child {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("inboxctl"))
        .env("DATABASE_URL", &db.url)
        .env("KAFKA_BROKERS", brokers)
        .current_dir(db.dir.path())
        .args(["replay", "--topic", topic, "--from", "earliest"])
        .args(args)
        .stdin(Stdio::null())
        // Files, not pipes: the handler shares inboxctl's stdout and stderr, and a pipe it
        // kept open would hang the test instead of failing it.
        .stdout(std::fs::File::create(stderr.with_extension("stdout")).unwrap())
        .stderr(std::fs::File::create(stderr).unwrap())
        .spawn()
        .expect("start inboxctl");
    while lines(received).is_empty() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the replay ended early"
        );
        assert!(Instant::now() < deadline, "the handler never got a message");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    child
}

/// How many processes have `marker` in their command line.
fn handler_processes(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| std::fs::read(entry.ok()?.path().join("cmdline")).ok())
        .filter(|cmdline| String::from_utf8_lossy(cmdline).contains(marker))
        .count()
}

/// A broker that restarts while a replay runs: librdkafka reconnects, the replay completes
/// with every effect applied once, and stderr stays empty under -q (a cron job mails
/// whatever is there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_restart_during_a_replay_is_ridden_out_quietly_on_sqlite() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let mut restarting = RestartableBroker::start();
    let topic = unique("restart");
    restarting.broker.create_topic(&topic, 1).await;
    let events: Vec<(i32, String)> = (0..30).map(|n| (0, format!("r-{n}"))).collect();
    restarting.broker.produce(&topic, &events).await;
    let (command, effects, received) = exec_handler(&db, 0.1);
    let stderr = db.dir.path().join("replay.stderr");
    let deadline = Instant::now() + RUN_LIMIT;
    let args = [
        "-q",
        "--consumer",
        "mailer",
        "--batch-size",
        "5",
        "--exec",
        &command,
    ];
    let address = restarting.broker.address.clone();
    let mut child =
        replay_under_way(&db, &address, &topic, &args, &stderr, &received, deadline).await;
    // Down for a second and a half: the client's attempts to reconnect fail meanwhile.
    restarting.kill();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    restarting.resume();
    let code = wait_until(&mut child, deadline).expect("the replay did not finish");
    let text = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!((code, text.as_str()), (0, ""));
    assert_eq!(lines(&effects).len(), 30);
    assert_eq!(inbox_count(&mut db).await, 30);
}

/// An exec handler that dies mid-batch stops the run (exit 1), but the events it answered ok
/// for before dying are recorded: a re-run does not send them again.
async fn an_exec_handler_that_dies_keeps_what_it_answered(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let topic = topic(1).await;
    let mut events = deposits("d", 1, 12);
    events[6].payload["crash"] = json!(true);
    let crash_id = events[6].id.clone().unwrap();
    let landed = produce(&topic, &events).await;
    let (command, effects, _) = exec_handler(&db, 0.0);

    let first = replay(
        &db,
        &topic,
        "mailer",
        &["--exec", &command, "--batch-size", "10"],
    );
    let first = first.code(1);
    assert!(
        first.stderr.contains(&format!(
            "the exec handler ({command}) exited with status 3 before answering 0:6"
        )),
        "{}",
        first.stderr
    );
    assert!(
        first
            .stderr
            .contains("before answering 0:6; the 6 events of this batch it had answered ok for are recorded in the inbox"),
        "{}",
        first.stderr
    );
    let applied = lines(&effects);
    let before_crash: Vec<String> = events[..6].iter().map(|e| e.id.clone().unwrap()).collect();
    assert_eq!(applied, before_crash);
    let mut recorded: Vec<String> = inbox(&mut db, "mailer")
        .await
        .into_iter()
        .map(|row| row.0)
        .collect();
    recorded.sort();
    let mut expected = before_crash.clone();
    expected.sort();
    assert_eq!(recorded, expected);

    let second = replay(&db, &topic, "mailer", &["--exec", &command]).ok();
    assert_eq!(totals(&second.json()), (12, 6, 6, 0, 0));
    let mut applied = lines(&effects);
    applied.sort();
    assert_eq!(applied, distinct_ids(&landed), "each event applied once");
    assert!(applied.contains(&crash_id));
}

/// An exec handler that stops answering ends the run after --handler-timeout (exit 1): it
/// is stopped with its processes, by SIGTERM or, when it ignores that, by SIGKILL, and the
/// events it answered ok for are recorded. A re-run applies the rest, each once.
async fn an_exec_handler_that_takes_too_long_is_stopped(hang: &str, ended: &str) {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let topic = topic(1).await;
    let mut events = deposits("t", 1, 5);
    events[2].payload["hang"] = json!(hang);
    let landed = produce(&topic, &events).await;
    let (command, effects, received) = exec_handler(&db, 0.0);
    let marker = received.to_str().unwrap().to_string();

    let stderr = db.dir.path().join("replay.stderr");
    let deadline = Instant::now() + RUN_LIMIT;
    let args = [
        "--consumer",
        "mailer",
        "--exec",
        &command,
        "--handler-timeout",
        "1s",
    ];
    let mut child = replay_under_way(
        &db,
        &broker().address,
        &topic,
        &args,
        &stderr,
        &received,
        deadline,
    )
    .await;
    let Some(code) = wait_until(&mut child, deadline) else {
        let _ = Command::new("pkill")
            .args(["-KILL", "-f", &marker])
            .status();
        panic!("the replay did not end after the handler's timeout");
    };
    let text = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(&format!(
            "error: the exec handler ({command}) took over 1s (--handler-timeout) over 0:2 (event {}); \
             {ended}; the 2 events of this batch it had answered ok for are recorded in the inbox",
            events[2].id.as_deref().unwrap()
        )),
        "{text}"
    );
    // Gone with its run, whatever it did with SIGTERM.
    let left = handler_processes(&marker);
    if left > 0 {
        let _ = Command::new("pkill")
            .args(["-KILL", "-f", &marker])
            .status();
        panic!("{left} of the handler's processes were left running");
    }
    let before: Vec<String> = events[..2].iter().map(|e| e.id.clone().unwrap()).collect();
    assert_eq!(lines(&effects), before);
    let recorded: Vec<String> = inbox(&mut db, "mailer")
        .await
        .into_iter()
        .map(|row| row.0)
        .collect();
    assert_eq!(recorded, before);

    let second = replay(&db, &topic, "mailer", &["--exec", &command]).ok();
    assert_eq!(totals(&second.json()), (5, 3, 2, 0, 0));
    let mut applied = lines(&effects);
    applied.sort();
    assert_eq!(applied, distinct_ids(&landed), "each event applied once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_handler_that_takes_too_long_is_stopped_on_sqlite() {
    an_exec_handler_that_takes_too_long_is_stopped(
        "yes",
        "it was stopped (SIGTERM to its process group)",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_handler_that_ignores_sigterm_is_killed_on_sqlite() {
    an_exec_handler_that_takes_too_long_is_stopped(
        "ignoring SIGTERM",
        "it was killed (SIGKILL to its process group, 5s after SIGTERM)",
    )
    .await;
}

/// With --on-error skip, a message the exec handler dies on or hangs over fails like any
/// other: it goes to the dead-letter file, and a new handler takes the rest. A re-run (the
/// handler crashes and hangs only once) applies the two it skipped, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_on_error_skip_a_handler_that_dies_or_hangs_is_started_again() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let topic = topic(1).await;
    let mut events = deposits("k", 1, 5);
    events[1].payload["crash"] = json!(true);
    events[3].payload["hang"] = json!("yes");
    let landed = produce(&topic, &events).await;
    let id = |n: usize| events[n].id.clone().unwrap();
    let (command, effects, received) = exec_handler(&db, 0.0);
    let args = [
        "--exec",
        &command,
        "--on-error",
        "skip",
        "--handler-timeout",
        "1s",
        "--dead-letter",
        "dead.jsonl",
    ];

    let run = replay(&db, &topic, "mailer", &args).code(1);
    assert_eq!(totals(&run.json()), (5, 3, 0, 2, 0), "{}", run.stderr);
    assert_eq!(lines(&effects), [id(0), id(2), id(4)]);
    let recorded: Vec<String> = inbox(&mut db, "mailer")
        .await
        .into_iter()
        .map(|row| row.0)
        .collect();
    assert_eq!(recorded, [id(0), id(2), id(4)]);
    let crashed = format!("the exec handler ({command}) exited with status 3 before answering 0:1");
    let hung = format!(
        "the exec handler ({command}) took over 1s (--handler-timeout) over 0:3 (event {}); \
         it was stopped (SIGTERM to its process group)",
        id(3)
    );
    let dead: Vec<(i64, String)> = lines(&db.dir.path().join("dead.jsonl"))
        .iter()
        .map(|line| {
            let record: Value = serde_json::from_str(line).unwrap();
            let offset = record["offset"].as_i64().unwrap();
            (offset, record["error"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(dead, [(1, crashed.clone()), (3, hung.clone())]);
    assert!(
        run.stderr
            .contains(&format!("warning: 0:1 (event {}): {crashed}", id(1)))
            && run
                .stderr
                .contains(&format!("warning: 0:3 (event {}): {hung}", id(3))),
        "{}",
        run.stderr
    );
    // Three handlers were started: each message reached one of them once.
    assert_eq!(lines(&received).len(), 5);
    assert_eq!(handler_processes(received.to_str().unwrap()), 0);

    let again = replay(&db, &topic, "mailer", &["--exec", &command]).ok();
    assert_eq!(totals(&again.json()), (5, 2, 3, 0, 0));
    let mut applied = lines(&effects);
    applied.sort();
    assert_eq!(applied, distinct_ids(&landed), "each event applied once");
}

/// Two poison messages in a row, the first of the range, each ending its handler before it
/// answers anything: both are skipped, and the third handler takes the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_on_error_skip_two_poison_messages_in_a_row_are_both_skipped() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let topic = topic(1).await;
    let mut events = deposits("p", 1, 5);
    events[0].payload["crash"] = json!("always");
    events[1].payload["crash"] = json!("always");
    produce(&topic, &events).await;
    let id = |n: usize| events[n].id.clone().unwrap();
    let (command, effects, received) = exec_handler(&db, 0.0);
    let args = ["--exec", &command, "--on-error", "skip"];
    let run = replay(&db, &topic, "mailer", &args).code(1);
    assert_eq!(totals(&run.json()), (5, 3, 0, 2, 0), "{}", run.stderr);
    assert_eq!(lines(&effects), [id(2), id(3), id(4)]);
    for n in [0, 1] {
        let warning = format!(
            "warning: 0:{n} (event {}): the exec handler ({command}) exited with status 3 \
             before answering 0:{n}",
            id(n)
        );
        assert!(run.stderr.contains(&warning), "{}", run.stderr);
    }
    assert_eq!(lines(&received).len(), 5);
    assert_eq!(handler_processes(received.to_str().unwrap()), 0);
    let recorded: Vec<String> = inbox(&mut db, "mailer")
        .await
        .into_iter()
        .map(|row| row.0)
        .collect();
    assert_eq!(recorded, [id(2), id(3), id(4)]);
}

/// Answers are matched to messages by their order. A handler out of step with them (an
/// answer given twice, one naming another event) would have one message's answer taken for
/// another's, a refused event recorded: the run stops with nothing of the batch recorded,
/// under --on-error skip too. So it does when the second answer comes only after the next
/// message was sent, when every answer after it is one message late: the batch's end waits
/// for the last one. One that prints lines of its own on every message is stopped
/// by the rule of three handlers in a row, not run to the end with nothing recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_handler_out_of_step_with_the_messages_stops_the_run() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let out_of_step = "answers are matched to messages by their order, so none of this \
                       batch's answers can be trusted: nothing of the batch is recorded, and \
                       the run stops (the program must print exactly one line per message on \
                       stdout; log to stderr)";
    let twice = {
        let mut events = deposits("t", 1, 4);
        events[0].payload["twice"] = json!(true);
        events[1].payload["refuse"] = json!(true);
        events
    };
    let named = {
        let mut events = deposits("n", 1, 4);
        events[2].payload["answer_for"] = json!("someone-else");
        events
    };
    let twice_later = {
        let mut events = deposits("l", 1, 20);
        events[1].payload["twice"] = json!("later");
        events[2].payload["refuse"] = json!(true);
        events
    };
    let unasked =
        format!("error: the exec handler printed a line no message asked for: '{{\"ok\": true}}'; {out_of_step}");
    for (events, on_error, delay, error) in [
        (&twice, "stop", 0.0, unasked.clone()),
        (&twice, "skip", 0.0, unasked.clone()),
        (
            &named,
            "skip",
            0.0,
            format!(
                "error: the exec handler answered 0:2 (event {}) for event someone-else; {out_of_step}",
                named[2].id.clone().unwrap()
            ),
        ),
        // 5 ms a message: the last answer comes well after the 1 ms a look once waited.
        (&twice_later, "skip", 0.005, unasked.clone()),
    ] {
        let topic = topic(1).await;
        produce(&topic, events).await;
        let (command, effects, _) = exec_handler(&db, delay);
        let run = replay(&db, &topic, "mailer", &["--exec", &command, "--on-error", on_error]);
        let run = run.code(1);
        assert_eq!(run.stderr.lines().last(), Some(error.as_str()), "{}", run.stderr);
        assert_eq!(totals(&run.json()), (0, 0, 0, 0, 0));
        assert!(!lines(&effects).is_empty());
        assert_eq!(inbox(&mut db, "mailer").await, []);
    }

    let topic = topic(1).await;
    let mut chatty = deposits("c", 1, 5);
    for event in &mut chatty {
        event.payload["chatty"] = json!(true);
    }
    produce(&topic, &chatty).await;
    let (command, effects, _) = exec_handler(&db, 0.0);
    let effects_before = lines(&effects).len();
    let run = replay(
        &db,
        &topic,
        "mailer",
        &["--exec", &command, "--on-error", "skip"],
    );
    let run = run.code(1);
    let error = format!(
        "error: the exec handler answered 0:2 with 'handling {}', not a JSON object like \
         {{\"ok\":true}} (it must print one line per message on stdout; log to stderr); 3 \
         handlers in a row failed before answering anything, so the run stops (--on-error \
         skip skips a message, not a handler that cannot run); the batch ends at 0:0, where \
         those handlers began to fail: its messages from there on are not counted, and a \
         re-run sends them again",
        chatty[2].id.clone().unwrap()
    );
    assert_eq!(
        run.stderr.lines().last(),
        Some(error.as_str()),
        "{}",
        run.stderr
    );
    assert_eq!(lines(&effects).len() - effects_before, 3);
    assert_eq!(inbox(&mut db, "mailer").await, []);
}

/// A program that fails whatever it is sent ends the run under --on-error skip too: at once
/// when the shell cannot start it, and when it can, once three handlers in a row have failed
/// before answering anything. It is not skipped message by message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_on_error_skip_a_handler_that_cannot_run_still_ends_the_run() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let topic = topic(1).await;
    produce(&topic, &deposits("n", 1, 4)).await;
    // Already in the inbox, between the failures: not counted either.
    db.exec("INSERT INTO processed_messages (consumer, event_id) VALUES ('mailer', 'n-p0-1')")
        .await;
    let stops = "so the run stops (--on-error skip skips a message, not a handler that cannot run)";
    for (command, error) in [
        (
            "exit 3",
            format!(
                "error: the exec handler (exit 3) exited with status 3 before answering 0:3; 3 \
                 handlers in a row failed before answering anything, {stops}; the batch ends at \
                 0:0, where those handlers began to fail: its messages from there on are not \
                 counted, and a re-run sends them again"
            ),
        ),
        (
            "inboxctl-no-such-handler",
            format!(
                "error: could not start the exec handler (inboxctl-no-such-handler): command \
                 not found (the shell exited with status 127); the handler cannot be started, \
                 {stops}"
            ),
        ),
    ] {
        let run = replay(
            &db,
            &topic,
            "mailer",
            &["--exec", command, "--on-error", "skip"],
        );
        let run = run.code(1);
        // The shell's own complaint, if any, comes first.
        assert_eq!(
            run.stderr.lines().last(),
            Some(error.as_str()),
            "{}",
            run.stderr
        );
        assert_eq!(totals(&run.json()), (0, 0, 0, 0, 0));
    }
}

/// Ctrl-C while the brokers are slow to deliver the next batch: with no batch in flight to
/// finish, replay stops at once rather than after --kafka-timeout (here a minute).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_while_replay_waits_for_messages_stops_at_once() {
    let holding = HoldingBroker::start();
    let db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let topic = unique("replay");
    holding.broker.create_topic(&topic, 1).await;
    holding
        .broker
        .produce(&topic, &[(0, "a".to_string()), (0, "b".to_string())])
        .await;
    holding.hold(FETCH);
    let stderr = db.dir.path().join("replay.stderr");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("inboxctl"))
        .args(["replay", "--topic", &topic, "--from", "earliest"])
        .args(["--consumer", "mailer", "--dry-run", "--format", "json"])
        .args(["--kafka-timeout", "60s"])
        .env("DATABASE_URL", &db.url)
        .env("KAFKA_BROKERS", &holding.broker.address)
        .current_dir(db.dir.path())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    assert!(
        holding.wait_until_held(Duration::from_secs(30)),
        "replay never fetched:\n{}",
        std::fs::read_to_string(&stderr).unwrap()
    );
    send_signal("INT", &child.id().to_string());
    let code = wait_until(&mut child, Instant::now() + Duration::from_secs(20));
    holding.release();
    let text = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(code, Some(130), "{text}");
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "Ctrl-C: stopping (no batch was in flight)",
            "warning: interrupted: the dry run changed nothing; re-run it to see the whole range"
        ]
    );
    let output = child.wait_with_output().unwrap();
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["interrupted"], true);
    assert_eq!(totals(&json), (0, 0, 0, 0, 0));
}

/// A handler script in the test's folder, executable or not.
fn script(db: &TestDb, name: &str, text: &str, executable: bool) {
    use std::os::unix::fs::PermissionsExt;
    let path = write(db, name, text);
    let mode = if executable { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A handler that answers one message and then exits with 3, then one killed by SIGKILL,
/// itself and as the shell's child: the error names the command and how it ended, and the
/// events it answered ok for are recorded.
async fn an_exec_handler_that_exits_is_named_with_its_status(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let topic = topic(1).await;
    produce(&topic, &deposits("q", 1, 4)).await;
    script(
        &db,
        "once.sh",
        "#!/bin/sh\nread -r line\necho '{\"ok\":true}'\nexit 3\n",
        true,
    );
    script(
        &db,
        "killed.sh",
        "#!/bin/sh\nread -r line\necho '{\"ok\":true}'\nread -r line\nkill -KILL $$\n",
        true,
    );
    let recorded = "; the 1 event of this batch it had answered ok for is recorded in the inbox";
    let row = |n: i64| (format!("q-p0-{n}"), topic.clone(), 0, n);

    let first = replay(&db, &topic, "mailer", &["--exec", "./once.sh"]).code(1);
    assert_eq!(
        first.stderr.trim(),
        format!("error: the exec handler (./once.sh) exited with status 3 before answering 0:1{recorded}")
    );
    assert_eq!(inbox(&mut db, "mailer").await, vec![row(0)]);

    // q-p0-0 is in the inbox: the handler answers q-p0-1 and is killed reading q-p0-2.
    let second = replay(&db, &topic, "mailer", &["--exec", "exec ./killed.sh"]).code(1);
    assert_eq!(
        second.stderr.trim(),
        format!("error: the exec handler (exec ./killed.sh) was killed by signal 9 (SIGKILL) before answering 0:2{recorded}")
    );
    assert_eq!(inbox(&mut db, "mailer").await, vec![row(0), row(1)]);

    // Killed as the shell's child, which exits with 128 + 9.
    let third = replay(&db, &topic, "mailer", &["--exec", "./killed.sh"]).code(1);
    assert!(
        third.stderr.contains(&format!(
            "error: the exec handler (./killed.sh) exited with status 137 \
             (the shell's status for a program killed by signal 9 (SIGKILL)) before answering 0:3{recorded}"
        )),
        "{}",
        third.stderr
    );
    assert_eq!(inbox(&mut db, "mailer").await, vec![row(0), row(1), row(2)]);

    // A failure it answered before it stopped is reported as a batch's is, in the summary
    // and the dead-letter file; the batch ends where it stopped, as the summary says.
    script(
        &db,
        "fails.sh",
        "#!/bin/sh\nread -r line\necho '{\"ok\":false,\"error\":\"boom\"}'\nread -r line\n\
         echo '{\"ok\":true}'\nexit 3\n",
        true,
    );
    // Messages without an id at offsets 2 and 4: the one before the stop is the batch's, the
    // one after is not.
    let mixed = self::topic(1).await;
    let mut events = deposits("q", 1, 5);
    events[2].forget_id();
    events[4].forget_id();
    produce(&mixed, &events).await;
    let failed = replay(
        &db,
        &mixed,
        "other",
        &[
            "--exec",
            "./fails.sh",
            "--dead-letter",
            "failed.jsonl",
            "--on-missing-id",
            "skip",
        ],
    )
    .code(1);
    assert_eq!(
        failed.stderr.trim(),
        format!(
            "warning: 0:0 (event q-p0-0): boom\n\
             error: the exec handler (./fails.sh) exited with status 3 before answering \
             0:3{recorded}"
        )
    );
    let json = failed.json();
    assert_eq!(totals(&json), (3, 1, 0, 1, 1));
    assert_eq!(json["partitions"][0]["last_offset"], 2);
    let dead: Vec<Value> = std::fs::read_to_string(db.dir.path().join("failed.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let dead: Vec<(&Value, &str)> = dead
        .iter()
        .map(|line| (&line["offset"], line["error"].as_str().unwrap()))
        .collect();
    assert_eq!(
        dead,
        [
            (&json!(0), "boom"),
            (
                &json!(2),
                "no event id (header:event_id, then json:/event_id) in message 0:2 (no \
                 header event_id, and the payload has no /event_id)"
            )
        ]
    );
    assert_eq!(
        inbox(&mut db, "other").await,
        vec![("q-p0-1".to_string(), mixed.clone(), 0, 1)]
    );

    // One that closes its output and goes on running is reported as such, although the wait
    // for its exit (5 s) outlasts --handler-timeout, which bounds only the answer; it is
    // ended with the run.
    // A sleep of its own length per backend, to be told apart from the other backends' runs.
    let nap = format!("30.424{}", backend as u8);
    script(
        &db,
        "closes.sh",
        &format!("#!/bin/sh\nread -r line\nexec >&-\nexec sleep {nap}\n"),
        true,
    );
    let fourth = replay(
        &db,
        &topic,
        "mailer",
        &["--exec", "exec ./closes.sh", "--handler-timeout", "2s"],
    )
    .code(1);
    assert_eq!(
        fourth.stderr.trim(),
        "error: the exec handler (exec ./closes.sh) closed its output before answering 0:3 \
         (unexpected end of file) but had not exited 5s later"
    );
    // Its watchdog ends it once the run is over.
    let deadline = Instant::now() + RUN_LIMIT;
    while handler_processes(&nap) > 0 {
        assert!(Instant::now() < deadline, "the handler was left running");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(inbox(&mut db, "mailer").await, vec![row(0), row(1), row(2)]);
}

/// The handler did its work but the inbox cannot record it (here the handler moves the inbox
/// table away while it answers the third message): the error says a re-run sends those events
/// again, and the summary still shows the batches finished before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_the_inbox_cannot_record_fails_after_the_summary_of_the_others() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let topic = topic(1).await;
    produce(&topic, &deposits("r", 1, 4)).await;
    script(
        &db,
        "moves.py",
        "#!/usr/bin/env python3\n\
         import json, sqlite3, sys\n\
         for n, line in enumerate(sys.stdin):\n\
         \x20   if n == 2:\n\
         \x20       db = sqlite3.connect('inbox.db')\n\
         \x20       db.execute('ALTER TABLE processed_messages RENAME TO inbox_moved')\n\
         \x20       db.commit()\n\
         \x20       db.close()\n\
         \x20   print(json.dumps({'ok': True}), flush=True)\n",
        true,
    );
    let run = replay(
        &db,
        &topic,
        "mailer",
        &["--exec", "./moves.py", "--batch-size", "2"],
    )
    .code(1);
    assert!(
        run.stderr.starts_with(
            "error: could not record in the inbox the 2 event(s) of this batch the handler \
             answered ok for; a re-run sends them to the handler again: "
        ) && run.stderr.contains("no such table: processed_messages"),
        "{}",
        run.stderr
    );
    let json = run.json();
    assert_eq!(totals(&json), (2, 2, 0, 0, 0));
    assert_eq!(json["partitions"][0]["last_offset"], 1);
    // The error is in the summary too, for a script that reads only stdout.
    assert_eq!(
        format!("error: {}\n", json["error"].as_str().unwrap()),
        run.stderr
    );

    db.exec("ALTER TABLE inbox_moved RENAME TO processed_messages")
        .await;
    let row = |n: i64| (format!("r-p0-{n}"), topic.clone(), 0, n);
    assert_eq!(inbox(&mut db, "mailer").await, vec![row(0), row(1)]);
    let again = replay(&db, &topic, "mailer", &["--exec", "./moves.py"]).ok();
    assert_eq!(totals(&again.json()), (4, 2, 2, 0, 0));
    assert_eq!(again.json().get("error"), None);
    assert_eq!(
        inbox(&mut db, "mailer").await,
        vec![row(0), row(1), row(2), row(3)]
    );
}

/// The database ends the replay's sessions in the middle of the range (the server was
/// restarted, an administrator ended them). When it takes logins again at once, the replay
/// connects again and finishes. When it refuses them (here the role lost LOGIN), the replay
/// stops after a few tries with the batch in flight rolled back whole: no message is tried
/// alone for a failure that is none of its doing, and with --on-error skip none is skipped
/// for it. Once logins come back, the same command finishes the range, each effect once.
/// What becomes of the database in the middle of a replay.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Outage {
    /// Its sessions are ended; new ones are taken.
    SessionsEnded,
    /// Its sessions are ended, and logins refused until the test is done with the replay.
    LoginsRefused,
    /// Its sessions are ended, and logins refused until the replay has given up on its
    /// pipelined connections for now (PostgreSQL).
    LoginsRefusedAWhile,
}

/// HANDLER, then a pause of `seconds` a message: the database's sessions can be ended while
/// the replay is partway.
fn slow_handler(db: &TestDb, seconds: f64) -> String {
    // MySQL: DO, as a SELECT's rows are refused there.
    let sleep = match db.backend {
        Backend::Mysql => "DO SLEEP",
        _ => "SELECT pg_sleep",
    };
    write(
        db,
        "deposit.sql",
        &format!("{HANDLER}{sleep}({seconds});\n"),
    )
}

/// Starts inboxctl with `args` in the test's folder, on `url`, its stderr into `stderr`, and
/// returns once the inbox holds a first row.
async fn replay_until_a_first_row(
    db: &mut TestDb,
    url: &url::Url,
    args: &[&str],
    env: &[(&str, &str)],
    stderr: &Path,
) -> std::process::Child {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("inboxctl"))
        .env("DATABASE_URL", url.as_str())
        .env("KAFKA_BROKERS", &broker().address)
        .envs(env.iter().copied())
        .current_dir(db.dir.path())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(stderr).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while inbox_count(db).await == 0 {
        assert!(
            Instant::now() < deadline && child.try_wait().unwrap().is_none(),
            "nothing recorded:\n{}",
            std::fs::read_to_string(stderr).unwrap()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child
}

async fn a_replay_whose_sessions_are_ended(backend: Backend, outage: Outage) {
    let refuse = outage != Outage::SessionsEnded;
    let mut db = TestDb::new(backend).await;
    setup(&mut db).await;
    let (role, url) = a_role_with_its_url(&mut db).await;
    let topic = topic(1).await;
    let landed = produce(&topic, &deposits("ended", 1, 60)).await;
    // Slow enough (about 3 s in all) that the sessions end with most of the range to go;
    // about 9 s when the replay must go on past its next try of the pipelined connections.
    let handler = slow_handler(
        &db,
        match outage {
            Outage::LoginsRefusedAWhile => 0.15,
            _ => 0.05,
        },
    );
    let stderr = db.dir.path().join("replay.stderr");
    let args = [
        "replay",
        "--topic",
        &topic,
        "--from",
        "earliest",
        "--consumer",
        "ended",
        "--sql",
        &handler,
        "--batch-size",
        "5",
        "--on-error",
        "skip",
        "--dead-letter",
        "dead.jsonl",
        "--connect-timeout",
        "2s",
        "--format",
        "json",
        "-v",
    ];
    let mut child = replay_until_a_first_row(&mut db, &url, &args, &[], &stderr).await;
    if refuse {
        refuse_logins(&mut db, &role, true).await;
    }
    end_sessions(&mut db, &role).await;
    if outage == Outage::LoginsRefusedAWhile {
        let deadline = Instant::now() + Duration::from_secs(30);
        let given_up = "the pipelined connection is tried again every 5s";
        while !std::fs::read_to_string(&stderr).unwrap().contains(given_up) {
            assert!(
                Instant::now() < deadline && child.try_wait().unwrap().is_none(),
                "{}",
                std::fs::read_to_string(&stderr).unwrap()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        refuse_logins(&mut db, &role, false).await;
    }
    let code = wait_until(&mut child, Instant::now() + Duration::from_secs(60));
    let text = std::fs::read_to_string(&stderr).unwrap();
    let output = child.wait_with_output().unwrap();
    let json: Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("{code:?}: {text}"));
    assert!(!text.contains("message by message"), "{text}");
    assert_eq!(
        lines(&db.dir.path().join("dead.jsonl")),
        Vec::<String>::new()
    );
    let recorded = inbox_count(&mut db).await;
    if outage != Outage::LoginsRefused {
        assert_eq!(code, Some(0), "{text}");
        // PostgreSQL's handler connections are its own to make again: at once, or on a
        // later try once the server takes logins again.
        assert_eq!(
            text.contains("the pipelined connection to the database was lost (")
                && text.contains("); connected again, the batch goes again"),
            backend == Backend::Postgres && outage == Outage::SessionsEnded,
            "{text}"
        );
        assert_eq!(
            text.contains("the pipelined connection to the database is back"),
            outage == Outage::LoginsRefusedAWhile,
            "{text}"
        );
        assert_eq!(totals(&json), (60, 60, 0, 0, 0));
        assert_eq!(recorded, 60);
        assert_eq!(ledger(&mut db).await, distinct_ids(&landed));
        return;
    }
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("the connection to the database was lost or refused (")
            && text.contains("; trying again in 1s (3 of 3)"),
        "{text}"
    );
    let error = text.lines().last().unwrap();
    assert!(
        error.starts_with(
            "error: lost the connection to the database (tried 3 times) during the batch 0:"
        ) && error.contains(
            "; its transaction rolled back, so none of it is recorded; re-run the same \
                 command once the database answers again: "
        ) && error.contains(&match backend {
            Backend::Mysql => "Access denied, this account is locked".to_string(),
            _ => format!("\"{role}\" is not permitted to log in"),
        }),
        "{text}"
    );
    // Whole batches only, each recorded with its effects, and none failed or skipped.
    let (messages, processed, duplicates, failed, missing) = totals(&json);
    assert_eq!((duplicates, failed, missing), (0, 0, 0), "{json}");
    assert_eq!((messages, recorded), (processed, processed), "{json}");
    assert!(processed % 5 == 0 && processed < 60, "{json}");
    assert_eq!(ledger(&mut db).await.len() as i64, recorded);

    refuse_logins(&mut db, &role, false).await;
    let mut command = db.cmd();
    command
        .env("DATABASE_URL", url.as_str())
        .env("KAFKA_BROKERS", &broker().address)
        .args(&args[..args.len() - 1])
        .timeout(RUN_LIMIT);
    let again = Run::from(command.output().unwrap()).ok();
    assert_eq!(totals(&again.json()), (60, 60 - recorded, recorded, 0, 0));
    assert_eq!(ledger(&mut db).await, distinct_ids(&landed));
    assert_eq!(balances(&mut db).await, expected_balances(&landed));
}

/// A batch with a poison message goes again one message at a time, each in a transaction of
/// its own. When the database is lost partway (sessions ended, logins refused), the error
/// says which messages before the stop are recorded: the summary, which counts whole
/// batches, leaves them out. A re-run finishes the range, each effect once.
async fn a_replay_that_loses_the_database_one_message_at_a_time(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    setup(&mut db).await;
    let (role, url) = a_role_with_its_url(&mut db).await;
    let topic = topic(1).await;
    let mut events = deposits("alone", 1, 8);
    // The last message fails the ledger's CHECK: the batch of 8 fails as a whole.
    events[7] = deposit(0, "alone-p0-7", 2, -1);
    let landed = produce(&topic, &events).await;
    // Slow enough (0.6 s a message) that the sessions end while the messages go alone, on
    // a loaded machine too (at 0.3 s, a run once finished first).
    let handler = slow_handler(&db, 0.6);
    let stderr = db.dir.path().join("replay.stderr");
    let args = [
        "replay",
        "--topic",
        &topic,
        "--from",
        "earliest",
        "--consumer",
        "alone",
        "--sql",
        &handler,
        "--batch-size",
        "8",
        "--on-error",
        "skip",
        "--connect-timeout",
        "2s",
        "--format",
        "json",
    ];
    // The whole batch commits nothing: a first row is a message that went alone.
    let pipeline_off = [("INBOXCTL_PG_PIPELINE", "0")];
    let mut child = replay_until_a_first_row(&mut db, &url, &args, &pipeline_off, &stderr).await;
    refuse_logins(&mut db, &role, true).await;
    end_sessions(&mut db, &role).await;
    let code = wait_until(&mut child, Instant::now() + Duration::from_secs(60));
    let text = std::fs::read_to_string(&stderr).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(code, Some(1), "{text}");
    let recorded = inbox_count(&mut db).await;
    assert!((1..7).contains(&recorded), "{recorded}: {text}");
    let stopped_at = landed[recorded as usize].offset;
    let error = text.lines().last().unwrap();
    assert!(
        error.starts_with(&format!(
            "error: lost the connection to the database (tried 3 times) at message 0:{stopped_at}, \
             while the batch 0:{} … 0:{} went one message at a time; of the {recorded} \
             message(s) before it, {recorded} processed and 0 already in the inbox are recorded \
             and 0 failed, which the summary leaves out; it and the rest of the batch are not \
             recorded; re-run the same command once the database answers again: ",
            landed[0].offset, landed[7].offset
        )),
        "{text}"
    );
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(totals(&json), (0, 0, 0, 0, 0), "{json}");
    assert_eq!(ledger(&mut db).await.len() as i64, recorded);

    refuse_logins(&mut db, &role, false).await;
    let mut command = db.cmd();
    command
        .env("DATABASE_URL", url.as_str())
        .env("KAFKA_BROKERS", &broker().address)
        .args(args)
        .timeout(RUN_LIMIT);
    let again = Run::from(command.output().unwrap()).code(1);
    assert_eq!(
        totals(&again.json()),
        (8, 7 - recorded, recorded, 1, 0),
        "{}",
        again.stderr
    );
    assert_eq!(ledger(&mut db).await, distinct_ids(&landed[..7]));
}

/// The two servers: SQLite has no sessions to end.
mod a_replay_whose_database_goes {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn away_connects_again_on_postgres() {
        a_replay_whose_sessions_are_ended(Backend::Postgres, Outage::SessionsEnded).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn away_connects_again_on_mysql() {
        a_replay_whose_sessions_are_ended(Backend::Mysql, Outage::SessionsEnded).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_refusing_logins_stops_whole_on_postgres() {
        a_replay_whose_sessions_are_ended(Backend::Postgres, Outage::LoginsRefused).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_refusing_logins_stops_whole_on_mysql() {
        a_replay_whose_sessions_are_ended(Backend::Mysql, Outage::LoginsRefused).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn while_messages_go_alone_says_which_are_recorded_on_postgres() {
        a_replay_that_loses_the_database_one_message_at_a_time(Backend::Postgres).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn while_messages_go_alone_says_which_are_recorded_on_mysql() {
        a_replay_that_loses_the_database_one_message_at_a_time(Backend::Mysql).await;
    }

    /// The pipelined connections cannot be made at once, so the plain path takes the
    /// batches; once logins come back, a later try makes them again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn away_a_while_gets_its_pipelined_connection_back_on_postgres() {
        a_replay_whose_sessions_are_ended(Backend::Postgres, Outage::LoginsRefusedAWhile).await;
    }
}

/// An answer that is not `"ok": true` is a failure, and the warning says what came back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_handler_answer_without_ok_true_is_a_failure_that_says_why() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let topic = topic(1).await;
    produce(&topic, &deposits("a", 1, 4)).await;
    script(
        &db,
        "answers.sh",
        "#!/bin/sh\nread -r line\necho '{\"ok\":false}'\nread -r line\necho '{\"ok\":\"yes\"}'\n\
         read -r line\necho '{\"status\":\"done\"}'\nread -r line\necho '{\"ok\":true}'\ncat >/dev/null\n",
        true,
    );
    let run = replay(
        &db,
        &topic,
        "mailer",
        &["--exec", "./answers.sh", "--on-error", "skip"],
    )
    .code(1);
    let warnings: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        warnings,
        [
            "warning: 0:0 (event a-p0-0): the handler answered ok: false",
            "warning: 0:1 (event a-p0-1): the handler answered ok: \"yes\", not true",
            "warning: 0:2 (event a-p0-2): the handler's answer has no \"ok\" field: {\"status\":\"done\"}",
            "warning: 3 message(s) failed; see above",
        ]
    );
    assert_eq!(
        inbox(&mut db, "mailer").await,
        vec![("a-p0-3".to_string(), topic.clone(), 0, 3)]
    );
}

each_backend!(
    exec_handler_gets_each_event_once,
    ctrl_c_lets_the_exec_handler_finish_the_batch,
    an_exec_handler_that_dies_keeps_what_it_answered,
    an_exec_handler_that_exits_is_named_with_its_status,
);

/// MariaDB's key takes `x ` and `x` for one event id (README, Limits): an exec handler is sent
/// only one of them, an event whose inbox row is `done ` is not sent as `done`, and a dry run
/// counts them as the real run does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_that_differ_in_trailing_spaces_are_one_event_on_mysql() {
    let mut db = TestDb::new(Backend::Mysql).await;
    db.run(&["migrate", "run"]).ok();
    db.insert_rows(&[row("mailer", "done ", None, chrono::Utc::now())])
        .await;
    let topic = topic(1).await;
    let events = [
        deposit(0, "pad", 1, 1),
        deposit(0, "pad ", 1, 2),
        deposit(0, "done", 1, 3),
        deposit(0, "other", 1, 4),
    ];
    produce(&topic, &events).await;
    let (command, effects, _) = exec_handler(&db, 0.0);
    let args = ["--exec", command.as_str()];
    let dry = replay(&db, &topic, "mailer", &[&args[..], &["--dry-run"]].concat()).ok();
    assert_eq!(totals(&dry.json()), (4, 2, 2, 0, 0));
    let run = replay(&db, &topic, "mailer", &args).ok();
    assert_eq!(totals(&run.json()), (4, 2, 2, 0, 0));
    assert_eq!(lines(&effects), ["pad", "other"]);
}

/// A program that cannot be started is named with the reason. Given as a path, it is checked
/// before Kafka is asked anything (the topic here does not exist); found through PATH or
/// quoted, the shell's exit status 127 or 126 says why, and nothing is recorded. An empty
/// --exec is a usage error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_handler_that_cannot_start_is_named() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    script(&db, "plain.sh", "#!/bin/sh\ncat\n", false);
    let no_topic = "exec-no-such-topic";

    let missing = replay(&db, no_topic, "mailer", &["--exec", "./nosuch.sh"]).code(1);
    assert_eq!(
        missing.stderr.trim(),
        "error: could not start the exec handler (./nosuch.sh): ./nosuch.sh: not found"
    );
    let plain = replay(&db, no_topic, "mailer", &["--exec", "./plain.sh --flag"]).code(1);
    assert_eq!(
        plain.stderr.trim(),
        "error: could not start the exec handler (./plain.sh --flag): ./plain.sh: permission denied: it is not executable (chmod +x)"
    );
    for empty in ["", "  "] {
        let run = replay(&db, no_topic, "mailer", &["--exec", empty]).code(2);
        assert!(
            run.stderr
                .contains("--exec is empty; give the command that handles the messages"),
            "{}",
            run.stderr
        );
    }

    let topic = topic(1).await;
    produce(&topic, &deposits("s", 1, 2)).await;
    let unknown = replay(
        &db,
        &topic,
        "mailer",
        &["--exec", "inboxctl-no-such-handler --flag"],
    )
    .code(1);
    assert!(
        unknown.stderr.contains(
            "error: could not start the exec handler (inboxctl-no-such-handler --flag): command not found (the shell exited with status 127)"
        ),
        "{}",
        unknown.stderr
    );
    let quoted = replay(&db, &topic, "mailer", &["--exec", "'./plain.sh'"]).code(1);
    assert!(
        quoted.stderr.contains(
            "error: could not start the exec handler ('./plain.sh'): permission denied, not executable (the shell exited with status 126)"
        ),
        "{}",
        quoted.stderr
    );
    assert_eq!(inbox_count(&mut db).await, 0);
}

// ---------------------------------------------------------------------------------------------
// Odd ranges: never a hang

async fn odd_ranges_end_cleanly(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    setup(&mut db).await;
    // Four partitions, only 0 and 2 hold messages.
    let topic = topic(4).await;
    let mut events: Vec<Event> = (0..5)
        .map(|n| deposit(0, &format!("o-p0-{n}"), 1, n + 1))
        .collect();
    events.extend((0..3).map(|n| deposit(2, &format!("o-p2-{n}"), 2, 10 * (n + 1))));
    let landed = produce(&topic, &events).await;
    let handler = write(&db, "deposit.sql", HANDLER);
    let started = Instant::now();

    let json = replay(&db, &topic, "billing", &["--sql", &handler])
        .ok()
        .json();
    assert_eq!(totals(&json), (8, 8, 0, 0, 0));
    assert_eq!(
        per_partition(&json),
        vec![
            (0, 0, 5, 5, 5, 0, 0, 0),
            (1, 0, 0, 0, 0, 0, 0, 0),
            (2, 0, 3, 3, 3, 0, 0, 0),
            (3, 0, 0, 0, 0, 0, 0, 0)
        ]
    );
    assert_eq!(json["partitions"][1]["last_offset"], Value::Null);
    assert_eq!(balances(&mut db).await, expected_balances(&landed));

    // A start past the log end: an empty range in every partition, at once.
    let json = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--from", "1000"],
    )
    .ok()
    .json();
    assert_eq!(totals(&json), (0, 0, 0, 0, 0));
    assert_eq!(
        per_partition(&json),
        vec![
            (0, 5, 5, 0, 0, 0, 0, 0),
            (1, 0, 0, 0, 0, 0, 0, 0),
            (2, 3, 3, 0, 0, 0, 0, 0),
            (3, 0, 0, 0, 0, 0, 0, 0)
        ]
    );

    // Only the empty partitions; and an empty --from..--to.
    let json = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "-p", "1", "-p", "3"],
    )
    .ok()
    .json();
    assert_eq!(totals(&json), (0, 0, 0, 0, 0));
    assert_eq!(json["partitions"].as_array().unwrap().len(), 2);
    let json = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--from", "2", "--to", "2"],
    )
    .ok()
    .json();
    assert_eq!(totals(&json), (0, 0, 0, 0, 0));

    // Messages retention deleted: a range before the log start starts there, and one wholly
    // before it is empty, each said.
    let retained = self::topic(1).await;
    let six: Vec<Event> = (0..6)
        .map(|n| deposit(0, &format!("r-{n}"), 9, 1))
        .collect();
    produce(&retained, &six).await;
    broker().delete_records(&retained, 0, 3).await;
    for (to, replayed, warning) in [
        (
            "5",
            (3, 5, 2),
            "warning: partition 0: --from 1 is before the log start 3 (retention deleted the \
             messages before it); replaying from 3",
        ),
        (
            "2",
            (3, 3, 0),
            "warning: partition 0: --from 1 to 2 is all before the log start 3 (retention \
             deleted those messages); nothing to replay there",
        ),
    ] {
        let run = replay(
            &db,
            &retained,
            "retained",
            &["--sql", &handler, "-p", "0", "--from", "1", "--to", to],
        )
        .ok();
        let partition = &run.json()["partitions"][0];
        assert_eq!(
            (
                partition["from"].as_i64().unwrap(),
                partition["to"].as_i64().unwrap(),
                partition["processed"].as_i64().unwrap()
            ),
            replayed,
            "--to {to}"
        );
        assert!(run.stderr.contains(warning), "{}", run.stderr);
    }

    // Per-partition starts, an end past the log end clamped to it.
    let json = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--from", "0:2,2:1", "--to", "4"],
    )
    .ok()
    .json();
    assert_eq!(
        per_partition(&json),
        vec![(0, 2, 4, 2, 0, 2, 0, 0), (2, 1, 3, 2, 0, 2, 0, 0)]
    );

    // By time: everything from an hour ago up to a time in the future.
    let json = replay(
        &db,
        &topic,
        "billing",
        &[
            "--sql",
            &handler,
            "--from",
            "-1h",
            "--to",
            "2999-01-01T00:00:00Z",
        ],
    )
    .ok()
    .json();
    assert_eq!(totals(&json), (8, 0, 8, 0, 0));

    // A topic with no message at all.
    let empty = self::topic(3).await;
    let json = replay(&db, &empty, "billing", &["--sql", &handler])
        .ok()
        .json();
    assert_eq!(totals(&json), (0, 0, 0, 0, 0));
    assert_eq!(json["partitions"].as_array().unwrap().len(), 3);

    // --to before --from: a usage error.
    let run = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--from", "5", "--to", "3"],
    )
    .code(2);
    assert!(
        run.stderr
            .contains("error: --to 3 is before --from 5 in partition 0"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "");
    let run = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--from", "0:1,2:3", "--to", "2"],
    )
    .code(2);
    assert!(
        run.stderr
            .contains("error: --to 2 is before --from 3 in partition 2"),
        "{}",
        run.stderr
    );
    // An offset start and a time end that resolves before it: said, not silently empty.
    let run = replay(
        &db,
        &topic,
        "billing",
        &[
            "--sql",
            &handler,
            "-p",
            "0",
            "--from",
            "3",
            "--to",
            "2000-01-01T00:00:00Z",
            "--dry-run",
        ],
    )
    .ok();
    assert_eq!(totals(&run.json()), (0, 0, 0, 0, 0));
    assert!(
        run.stderr.contains(
            "warning: partition 0: --to 2000-01-01T00:00:00+00:00 (offset 0) is before the \
             start, offset 3; nothing to replay there"
        ),
        "{}",
        run.stderr
    );
    // A start longer ago than a timestamp holds: said, where subtracting it panicked.
    let run = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--from", "-100000000y", "--dry-run"],
    )
    .code(2);
    assert!(
        run.stderr
            .contains("error: --from is too long ago: before what a timestamp holds"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "");
    // Times the wrong way round; an offset past the log end is said, not silently empty.
    let run = replay(
        &db,
        &topic,
        "billing",
        &[
            "--sql",
            &handler,
            "--from",
            "2030-01-01",
            "--to",
            "2026-01-01",
            "--dry-run",
        ],
    )
    .code(2);
    assert!(
        run.stderr.contains(
            "error: --to 2026-01-01T00:00:00+00:00 is before --from 2030-01-01T00:00:00+00:00"
        ),
        "{}",
        run.stderr
    );
    let run = replay(
        &db,
        &topic,
        "billing",
        &[
            "--sql",
            &handler,
            "--from",
            "1000000",
            "-p",
            "0",
            "--dry-run",
        ],
    )
    .ok();
    assert!(
        run.stderr
            .contains("warning: partition 0: --from 1000000 is past the log end"),
        "{}",
        run.stderr
    );
    // As a group's committed offset past the log end is.
    let group = unique("far-ahead");
    broker().commit(&group, &topic, &[(0, 1_000_000)]);
    let from = format!("committed:{group}");
    let run = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--from", &from, "-p", "0", "--dry-run"],
    )
    .ok();
    assert!(
        run.stderr.contains(&format!(
            "warning: partition 0: group '{group}' committed offset 1000000 is past the log end"
        )),
        "{}",
        run.stderr
    );
    assert_eq!(run.json()["messages"], 0, "{}", run.stdout);
    // A negative end is named as one, not taken for a flag.
    let run = replay(
        &db,
        &topic,
        "billing",
        &[
            "--sql",
            &handler,
            "--from",
            "earliest",
            "--to",
            "-1",
            "--dry-run",
        ],
    )
    .code(2);
    assert!(
        run.stderr
            .contains("invalid value '-1' for '--to <END>': -1 is not an offset"),
        "{}",
        run.stderr
    );
    // Starts per partition and --partition must agree, and a partition has one start.
    for (from, partition, message) in [
        (
            "1:3",
            "0",
            "error: --from gives partition 1 a start, but --partition leaves it out",
        ),
        ("0:3", "0", ""),
        (
            "0:3,1:0",
            "2",
            "error: --from gives partition 0 a start, but --partition leaves it out",
        ),
        (
            "0:3",
            "1",
            "error: --from gives partition 0 a start, but --partition leaves it out",
        ),
        ("0:5,0:6", "0", "partition 0 is given two starts, 5 and 6"),
    ] {
        let args = [
            "--sql",
            &handler,
            "--from",
            from,
            "-p",
            partition,
            "--dry-run",
        ];
        let run = replay(&db, &topic, "billing", &args);
        if message.is_empty() {
            run.ok();
            continue;
        }
        let run = run.code(2);
        assert!(
            run.stderr.contains(message),
            "{from} -p {partition}: {}",
            run.stderr
        );
    }
    let run = replay(
        &db,
        &topic,
        "billing",
        &[
            "--sql",
            &handler,
            "--from",
            "0:3",
            "-p",
            "0",
            "-p",
            "1",
            "--dry-run",
        ],
    )
    .code(2);
    assert!(
        run.stderr.contains(
            "error: --partition 1 has no start in --from; give it one (1:OFFSET) or leave it out"
        ),
        "{}",
        run.stderr
    );
    // A partition or topic that does not exist.
    let run = replay(&db, &topic, "billing", &["--sql", &handler, "-p", "7"]).code(1);
    assert!(
        run.stderr.contains(&format!(
            "partition 7 of topic '{topic}' does not exist (it has partitions 0-3)"
        )),
        "{}",
        run.stderr
    );
    let missing = unique("missing");
    let run = replay(&db, &missing, "billing", &["--sql", &handler]).code(1);
    assert!(
        run.stderr
            .contains(&format!("topic '{missing}' does not exist")),
        "{}",
        run.stderr
    );
    // No handler at all.
    let run = replay(&db, &topic, "billing", &[]).code(2);
    assert!(run.stderr.contains("--sql"), "{}", run.stderr);

    assert_eq!(balances(&mut db).await, expected_balances(&landed));
    // Billing's 8, and the 2 messages retention left of the range given consumer retained.
    assert_eq!(inbox_count(&mut db).await, 10);
    assert!(
        started.elapsed() < Duration::from_secs(45),
        "odd ranges took {:?}",
        started.elapsed()
    );
}

// ---------------------------------------------------------------------------------------------
// Dry run

async fn dry_run_counts_and_writes_nothing(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    setup(&mut db).await;
    let topic = topic(3).await;
    let mut events = deposits("y", 3, 8);
    // Partition 0's y-p0-2 again in partitions 0 and 1; y-p1-0 again at the end of 1; a
    // message without an id in 2.
    events.push(Event {
        partition: 0,
        ..events[6].clone()
    });
    events.push(Event {
        partition: 1,
        ..events[6].clone()
    });
    events.push(Event {
        partition: 1,
        ..events[1].clone()
    });
    let mut anonymous = deposit(2, "unused", 3, 1000);
    anonymous.forget_id();
    events.push(anonymous);
    let landed = produce(&topic, &events).await;
    assert_eq!(events[6].id.as_deref(), Some("y-p0-2"));
    let handler = write(&db, "deposit.sql", HANDLER);

    // Partition 0 first.
    let json = replay(&db, &topic, "billing", &["--sql", &handler, "-p", "0"])
        .ok()
        .json();
    assert_eq!(totals(&json), (9, 8, 1, 0, 0));
    let applied: Vec<Landed> = landed
        .iter()
        .filter(|l| l.partition == 0)
        .cloned()
        .collect();
    let after_p0 = balances(&mut db).await;
    assert_eq!(after_p0, expected_balances(&applied));

    let dead = db.dir.path().join("dead.jsonl");
    let dead = dead.to_str().unwrap();
    let dry = replay(
        &db,
        &topic,
        "billing",
        &[
            "--dry-run",
            "--sql",
            &handler,
            "--batch-size",
            "3",
            "--on-missing-id",
            "skip",
            "--dead-letter",
            dead,
        ],
    )
    .ok()
    .json();
    assert!(!Path::new(dead).exists(), "a dry run writes no dead letter");
    // But it fails, as the real run would, on one it could not write.
    let nowhere = db.dir.path().join("no-such-folder/dead.jsonl");
    let nowhere = nowhere.to_str().unwrap();
    let refused = replay(
        &db,
        &topic,
        "billing",
        &["--dry-run", "--sql", &handler, "--dead-letter", nowhere],
    )
    .code(1);
    assert_eq!(
        refused.stderr,
        format!(
            "error: could not open the dead-letter file {nowhere}: No such file or directory (os \
             error 2)\n"
        )
    );
    assert_eq!(dry["dry_run"], true);
    assert_eq!(totals(&dry), (28, 16, 11, 0, 1));
    assert_eq!(
        per_partition(&dry),
        vec![
            (0, 0, 9, 9, 0, 9, 0, 0),
            (1, 0, 10, 10, 8, 2, 0, 0),
            (2, 0, 9, 9, 8, 0, 0, 1)
        ]
    );
    assert_eq!(balances(&mut db).await, after_p0);
    assert_eq!(inbox_count(&mut db).await, 8);
    assert_eq!(ledger(&mut db).await.len(), 8);

    // The table says the same, in its own words.
    let table = inboxctl(
        &db,
        &[
            "replay",
            "--topic",
            &topic,
            "--from",
            "earliest",
            "--consumer",
            "billing",
            "--on-missing-id",
            "skip",
            "--dry-run",
        ],
    )
    .ok();
    assert!(table.stdout.contains("WOULD PROCESS"), "{}", table.stdout);
    assert!(
        table.stdout.contains("Dry run: read 28 messages in ")
            && table.stdout.contains("nothing was written"),
        "{}",
        table.stdout
    );
    assert_eq!(
        table.table_rows(),
        vec![
            ["0", "0", "9", "9", "0", "9", "0", "0", "8"],
            ["1", "0", "10", "10", "8", "2", "0", "0", "9"],
            ["2", "0", "9", "9", "8", "0", "0", "1", "8"],
        ]
    );

    // The real run does what the dry run said.
    let real = replay(
        &db,
        &topic,
        "billing",
        &[
            "--sql",
            &handler,
            "--batch-size",
            "3",
            "--on-missing-id",
            "skip",
            "--dead-letter",
            dead,
        ],
    )
    .ok()
    .json();
    assert_eq!(per_partition(&real), per_partition(&dry));
    let lines: Vec<Value> = std::fs::read_to_string(dead)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(
        (
            &lines[0]["partition"],
            &lines[0]["offset"],
            &lines[0]["event_id"]
        ),
        (&json!(2), &json!(8), &Value::Null)
    );
    assert_eq!(balances(&mut db).await, expected_balances(&landed));
    assert_eq!(inbox_count(&mut db).await, 24);
}

/// A range the inbox already holds in places: batches all new, batches with a few ids
/// already processed, and all new again. Each event is applied once, and no batch has to
/// be retried message by message for holding processed ids (`-v` says when one is).
async fn a_partly_processed_range_applies_only_the_rest(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    setup(&mut db).await;
    let handler = write(&db, "deposit.sql", HANDLER);
    let topic = topic(1).await;
    let landed = produce(&topic, &deposits("r", 1, 40)).await;
    for (from, to, processed) in [("10", "14", 4), ("30", "31", 1)] {
        let run = replay(
            &db,
            &topic,
            "billing",
            &["--sql", &handler, "--from", from, "--to", to],
        )
        .ok();
        assert_eq!(totals(&run.json()), (processed, processed, 0, 0, 0));
    }
    // Batches of 5: 0–4 and 5–9 new, 10–14 four processed, 15–29 new, 30–34 one processed,
    // 35–39 new.
    let run = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--batch-size", "5", "-v"],
    )
    .ok();
    assert_eq!(totals(&run.json()), (40, 35, 5, 0, 0));
    assert!(
        !run.stderr.contains("failed as a whole"),
        "a batch was retried message by message:\n{}",
        run.stderr
    );
    assert_eq!(balances(&mut db).await, expected_balances(&landed));
    assert_eq!(ledger(&mut db).await, distinct_ids(&landed));
    assert_eq!(inbox(&mut db, "billing").await.len(), 40);
}

/// The largest batch, 10,000 messages, here 7,000: its inbox rows go in several INSERTs
/// (one would need 35,000 parameters, past SQLite's 32,766), not message by message after
/// the batch failed as a whole.
async fn a_batch_past_a_statements_parameters_is_applied_whole(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    setup(&mut db).await;
    let handler = write(&db, "deposit.sql", HANDLER);
    let topic = topic(1).await;
    let landed = produce(&topic, &deposits("w", 1, 7_000)).await;
    let run = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--batch-size", "10000", "-v"],
    )
    .ok();
    assert_eq!(totals(&run.json()), (7_000, 7_000, 0, 0, 0));
    assert!(
        !run.stderr.contains("failed as a whole"),
        "the batch was retried message by message:\n{}",
        run.stderr
    );
    assert_eq!(balances(&mut db).await, expected_balances(&landed));
    assert_eq!(inbox(&mut db, "billing").await.len(), 7_000);
}

/// A row the built-ins handler wrote: event id, topic, partition, offset, key, timestamp,
/// payload.
type SeenRow = (String, String, i64, i64, Option<String>, i64, String);

/// Every built-in placeholder reaches the handler with the message's own value: event id,
/// topic, partition, offset, key, timestamp (milliseconds, as the producer stamped it) and
/// the payload as text.
async fn built_in_values_reach_the_handler(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    setup(&mut db).await;
    db.exec(
        "CREATE TABLE seen (event_id VARCHAR(100) NOT NULL, topic VARCHAR(100) NOT NULL,          part BIGINT NOT NULL, off BIGINT NOT NULL, k VARCHAR(100), ts BIGINT NOT NULL,          payload VARCHAR(1000) NOT NULL)",
    )
    .await;
    let topic = topic(2).await;
    let before = chrono::Utc::now().timestamp_millis();
    let landed = produce(&topic, &deposits("b", 2, 3)).await;
    let after = chrono::Utc::now().timestamp_millis();
    let handler = write(
        &db,
        "seen.sql",
        "INSERT INTO seen (event_id, topic, part, off, k, ts, payload) \
         VALUES (:event_id, :topic, :partition, :offset, :key, :timestamp, :payload)",
    );
    let run = replay(&db, &topic, "audit", &["--sql", &handler]).ok();
    assert_eq!(totals(&run.json()), (6, 6, 0, 0, 0));
    let pool = db.pool().await;
    let seen: Vec<SeenRow> = sqlx::query_as(
        "SELECT event_id, topic, part, off, k, ts, payload FROM seen ORDER BY event_id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let mut expected: Vec<_> = landed
        .iter()
        .map(|l| {
            let id = l.event.id.clone().unwrap();
            (
                id.clone(),
                topic.clone(),
                i64::from(l.partition),
                l.offset,
                Some(id),
                l.event.payload.to_string(),
            )
        })
        .collect();
    expected.sort();
    let without_time: Vec<_> = seen
        .iter()
        .map(|(id, t, p, o, k, _, payload)| {
            (id.clone(), t.clone(), *p, *o, k.clone(), payload.clone())
        })
        .collect();
    assert_eq!(without_time, expected);
    for row in &seen {
        assert!(
            (before..=after).contains(&row.5),
            "timestamp {} of {} is not between {before} and {after}",
            row.5,
            row.0
        );
    }
}

each_backend!(
    a_handler_that_cannot_be_prepared_stops_before_reading,
    built_in_values_reach_the_handler,
    a_partly_processed_range_applies_only_the_rest,
    a_batch_past_a_statements_parameters_is_applied_whole,
    replaying_twice_applies_each_effect_once,
    producer_duplicates_apply_once,
    four_replays_at_once_apply_each_effect_once,
    a_poison_message_fails_alone,
    dry_run_counts_and_writes_nothing,
    long_event_ids_are_applied_or_refused_never_cut,
    replay_leaves_the_groups_committed_offsets_alone,
    messages_without_an_event_id_fail_or_are_skipped,
    odd_ranges_end_cleanly,
);

// ---------------------------------------------------------------------------------------------
// Ids wider than the inbox

/// PostgreSQL and SQLite store ids of any length; MySQL's inbox holds 255 characters, and an
/// id longer than that must fail, not be cut short (recorded under another id, its effect
/// never applied, and two such ids deduping each other).
async fn long_event_ids_are_applied_or_refused_never_cut(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    setup(&mut db).await;
    let topic = topic(1).await;
    let stem = "L".repeat(260);
    let (a, b) = (format!("{stem}-a"), format!("{stem}-b"));
    let landed = produce(
        &topic,
        &[
            deposit(0, &a, 1, 1),
            deposit(0, &b, 1, 2),
            deposit(0, "short", 1, 4),
        ],
    )
    .await;
    let handler = write(&db, "deposit.sql", HANDLER);
    let run = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--on-error", "skip"],
    );
    let ids: Vec<String> = inbox(&mut db, "billing")
        .await
        .into_iter()
        .map(|r| r.0)
        .collect();
    if backend == Backend::Mysql {
        let run = run.code(1);
        assert_eq!(totals(&run.json()), (3, 1, 0, 2, 0));
        // The warnings show the ids cut short; the two differ only at their end.
        let shown = format!("{}… (262 characters)", "L".repeat(32));
        for offset in [0, 1] {
            let needle = format!(
                "warning: 0:{offset} (event {shown}): the event id is 262 characters long; \
                 the inbox's event_id column holds at most 255"
            );
            assert!(run.stderr.contains(&needle), "{}", run.stderr);
        }
        assert_eq!(
            balances(&mut db).await,
            vec![(1, 4), (2, 0), (3, 0), (4, 0)]
        );
        assert_eq!(ids, ["short"]);
        // Stopping names the first of them.
        let stopped = replay(&db, &topic, "billing", &["--sql", &handler]).code(1);
        assert!(
            stopped.stderr.contains(&format!(
                "error: the handler failed on 0:0 (event {shown}): "
            )),
            "{}",
            stopped.stderr
        );
        // A consumer name the inbox cannot hold is refused before anything is read.
        let long = "c".repeat(256);
        let refused = replay(&db, &topic, &long, &["--sql", &handler]).code(2);
        assert!(
            refused.stderr.contains(
                "error: --consumer is 256 characters long; the inbox's consumer column holds at most 255"
            ),
            "{}",
            refused.stderr
        );
    } else {
        let run = run.ok();
        assert_eq!(totals(&run.json()), (3, 3, 0, 0, 0));
        assert_eq!(balances(&mut db).await, expected_balances(&landed));
        assert_eq!(ids, distinct_ids(&landed));
    }
    assert_eq!(
        balances(&mut db).await[0].1,
        if backend == Backend::Mysql { 4 } else { 7 }
    );
}

/// A MySQL inbox made by hand in the inbox's layout, its key columns of these types, which
/// `migrate run` (in [`setup`]) only records; with the tables the SQL handler writes.
async fn mysql_inbox_made_by_hand(consumer: &str, event_id: &str) -> TestDb {
    let mut db = TestDb::new(Backend::Mysql).await;
    db.exec(&format!(
        "CREATE TABLE processed_messages (consumer {consumer} NOT NULL, event_id {event_id} NOT \
         NULL, topic VARCHAR(255), `partition` INT, `offset` BIGINT, processed_at DATETIME(6) \
         NOT NULL DEFAULT CURRENT_TIMESTAMP(6), PRIMARY KEY (consumer, event_id))"
    ))
    .await;
    setup(&mut db).await;
    db
}

/// A MySQL inbox made by hand in the inbox's layout, which migrate only records, may keep
/// ids in a narrower character set (latin1 here). An id with characters it lacks must fail on
/// its own, with either handler, not be stored with `?` in their place (MySQL's `INSERT
/// IGNORE` does so with a warning), which took the message for a duplicate, its effect never
/// applied, or took it for the message whose id is that text. A consumer name the column
/// cannot hold is refused before anything is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_a_narrower_character_set_cannot_hold_fail_on_their_own_on_mysql() {
    let latin1 = "VARCHAR(255) CHARACTER SET latin1 COLLATE latin1_bin";
    let mut db = mysql_inbox_made_by_hand(latin1, latin1).await;
    let topic = topic(1).await;
    // ó is in latin1; ż, ł and ć are not. The last id is what latin1 makes of the first.
    let mut events = deposits("n", 1, 4);
    events[1] = deposit(0, "zażółć", 1, 5);
    events[2] = deposit(0, "gó", 1, 6);
    events[3] = deposit(0, "za?ó??", 1, 7);
    produce(&topic, &events).await;
    let why = "warning: 0:1 (event zażółć): the event id has characters the inbox's event_id \
               column (latin1) cannot hold";
    let (effects, handler) = each_handler_skips_one(&db, &topic, (4, 3, 0, 1, 0), why);
    assert_eq!(ledger(&mut db).await, ["gó", "n-p0-0", "za?ó??"]);
    assert_eq!(lines(&effects), ["n-p0-0", "gó", "za?ó??"]);
    let pool = db.pool().await;
    let ids: Vec<(String, String)> =
        sqlx::query_as("SELECT consumer, event_id FROM processed_messages ORDER BY 1, 2")
            .fetch_all(&pool)
            .await
            .unwrap();
    let expected: Vec<(String, String)> = ["billing", "mailer"]
        .into_iter()
        .flat_map(|consumer| {
            ["gó", "n-p0-0", "za?ó??"].map(|id| (consumer.to_string(), id.to_string()))
        })
        .collect();
    assert_eq!(ids, expected);
    let refused = replay(&db, &topic, "płatności", &["--sql", &handler]).code(2);
    assert!(
        refused.stderr.contains(
            "error: --consumer płatności has characters the inbox's consumer column (latin1) \
             cannot hold"
        ),
        "{}",
        refused.stderr
    );
    // As elsewhere: the server would refuse to compare them with the columns.
    for args in [
        &["inspect", "--consumer", "płatności"][..],
        &["inspect", "--event-id", "a", "--consumer", "płatności"],
        &[
            "prune",
            "--older-than",
            "1d",
            "--consumer",
            "płatności",
            "--yes",
        ],
    ] {
        let refused = inboxctl(&db, args).code(2);
        assert!(
            refused.stderr.contains(
                "error: --consumer płatności has characters the inbox's consumer column \
                 (latin1) cannot hold"
            ),
            "{args:?}: {}",
            refused.stderr
        );
    }
    let lookup = inboxctl(
        &db,
        &["inspect", "--event-id", "zażółć", "--format", "json"],
    )
    .ok();
    assert_eq!(lookup.json()["found"], false, "{}", lookup.stderr);
}

/// A PostgreSQL database in another encoding than UTF-8 refuses, in any statement, text
/// with characters it lacks, and may store a character as another: such an event id fails on
/// its own, and such a consumer name is a usage error, as on MySQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_a_latin1_database_cannot_hold_fail_on_their_own_on_postgres() {
    let mut db = TestDb::with_options(
        Backend::Postgres,
        "ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0",
    )
    .await;
    setup(&mut db).await;
    let topic = topic(1).await;
    // A NUL no text holds, whatever else the id has.
    let mut events = deposits("n", 1, 4);
    events[1] = deposit(0, "zażółć", 1, 5);
    events[2] = deposit(0, "gó", 1, 6);
    events[3] = deposit(0, "é\0x", 1, 7);
    produce(&topic, &events).await;
    let handler = write(&db, "deposit.sql", HANDLER);
    let run = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--on-error", "skip"],
    )
    .code(1);
    assert_eq!(totals(&run.json()), (4, 2, 0, 2, 0), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "warning: 0:1 (event zażółć): the event id has characters the inbox's event_id \
             column (LATIN1) cannot hold"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(ledger(&mut db).await, ["gó", "n-p0-0"]);
    // A batch a message: each batch's rows are inserted ahead while the one before is
    // handled, and the ids it cannot hold, found then, are not taken for holdable later.
    let one_by_one = replay(
        &db,
        &topic,
        "auditor",
        &["--sql", &handler, "--on-error", "skip", "--batch-size", "1"],
    )
    .code(1);
    assert_eq!(
        totals(&one_by_one.json()),
        (4, 2, 0, 2, 0),
        "{}",
        one_by_one.stderr
    );
    assert_eq!(ledger(&mut db).await, ["gó", "gó", "n-p0-0", "n-p0-0"]);
    assert!(
        one_by_one.stderr.contains(
            "warning: 0:1 (event zażółć): the event id has characters the inbox's event_id \
             column (LATIN1) cannot hold"
        ),
        "{}",
        one_by_one.stderr
    );
    let refused = inboxctl(&db, &["inspect", "--consumer", "płatności"]).code(2);
    assert!(
        refused.stderr.contains(
            "error: --consumer płatności has characters the inbox's consumer column (LATIN1) \
             cannot hold"
        ),
        "{}",
        refused.stderr
    );
    let lookup = inboxctl(
        &db,
        &["inspect", "--event-id", "zażółć", "--format", "json"],
    )
    .ok();
    assert_eq!(lookup.json()["found"], false, "{}", lookup.stderr);
    // EUC_JP stores `¦` as `￤`: an id with it would be another message's.
    let mut db = TestDb::with_options(
        Backend::Postgres,
        "ENCODING 'EUC_JP' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0",
    )
    .await;
    setup(&mut db).await;
    let topic = self::topic(1).await;
    produce(&topic, &[deposit(0, "b¦", 1, 5), deposit(0, "b￤", 1, 6)]).await;
    let run = replay(
        &db,
        &topic,
        "billing",
        &["--sql", &handler, "--on-error", "skip"],
    )
    .code(1);
    assert_eq!(totals(&run.json()), (2, 1, 0, 1, 0), "{}", run.stderr);
    assert_eq!(ledger(&mut db).await, ["b￤"]);
}

/// A CHAR event_id, which a MySQL inbox made by hand may have, gives `b1` back for `b1 `: the
/// message is the one the key takes the row for, applied and recorded once, with either
/// handler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_char_event_id_records_an_id_with_trailing_spaces_on_mysql() {
    let mut db = mysql_inbox_made_by_hand(
        "VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
        "CHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
    )
    .await;
    let topic = topic(1).await;
    produce(&topic, &[deposit(0, "b1 ", 1, 5), deposit(0, "b2", 1, 6)]).await;
    let (command, effects, _) = exec_handler(&db, 0.0);
    let handler = write(&db, "deposit.sql", HANDLER);
    for (consumer, handled) in [
        ("billing", &["--sql", &handler][..]),
        ("mailer", &["--exec", &command]),
    ] {
        let run = replay(&db, &topic, consumer, handled).ok();
        assert_eq!(
            totals(&run.json()),
            (2, 2, 0, 0, 0),
            "{handled:?}: {}",
            run.stderr
        );
        let again = replay(&db, &topic, consumer, handled).ok();
        assert_eq!(
            totals(&again.json()),
            (2, 0, 2, 0, 0),
            "{handled:?}: {}",
            again.stderr
        );
    }
    assert_eq!(ledger(&mut db).await, ["b1 ", "b2"]);
    assert_eq!(lines(&effects), ["b1 ", "b2"]);
    assert_eq!(inbox_count(&mut db).await, 4);
}

/// replay ends every session it opens as the protocol asks: the store's and the two of the
/// PostgreSQL pipeline, after a run that applies, one that finds everything done, one whose
/// handler fails and one that stops with an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_ends_its_sessions_cleanly_on_postgres() {
    let db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    db.exec_and_disconnect(
        "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL); \
         INSERT INTO accounts (id, balance) VALUES (1, 0), (2, 0), (3, 0), (4, 0); \
         CREATE TABLE ledger (event_id VARCHAR(600) NOT NULL, account BIGINT NOT NULL, \
         amount BIGINT NOT NULL, CONSTRAINT positive_amount CHECK (amount > 0))",
    )
    .await;
    let (before, abandoned) = db.ended_sessions().await;
    assert_eq!(abandoned, 0);

    let topic = topic(2).await;
    produce(&topic, &deposits("s", 2, 10)).await;
    let handler = write(&db, "deposit.sql", HANDLER);
    let args = ["--sql", handler.as_str(), "--batch-size", "5"];
    let first = replay(&db, &topic, "billing", &args).ok().json();
    assert_eq!(totals(&first), (20, 20, 0, 0, 0));
    let second = replay(&db, &topic, "billing", &args).ok().json();
    assert_eq!(totals(&second), (20, 0, 20, 0, 0));
    let failing = write(
        &db,
        "failing.sql",
        "INSERT INTO nowhere VALUES (:event_id);\n",
    );
    let run = replay(&db, &topic, "other", &["--sql", &failing]);
    assert_ne!(run.code, 0, "{}", run.stderr);
    // An error once the handler's connections are open: the dead-letter file cannot be made.
    let nowhere = db.dir.path().join("missing").join("dead.jsonl");
    let mut args = args.to_vec();
    args.extend(["--dead-letter", nowhere.to_str().unwrap()]);
    let run = replay(&db, &topic, "third", &args).code(1);
    assert!(run.stderr.contains("dead.jsonl"), "{}", run.stderr);
    let (ended, abandoned) = db.ended_sessions().await;
    assert!(
        ended >= before + 4,
        "{before} sessions before, {ended} after"
    );
    assert_eq!(abandoned, 0, "of {} sessions", ended - before);
}
