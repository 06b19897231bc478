//! `offsets reset` against the nisshi broker. Every mode is checked twice: by reading the
//! group's committed offsets back, and by a consumer of the group that must start exactly
//! there. Dry run, export, plan files, undo files, clamping and the refusal while the group
//! has a polling member are checked with exact offsets and file contents.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{SecondsFormat, Utc};
use common::kafka::*;
use common::*;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::Message;
use serde_json::json;

fn inboxctl(db: &TestDb, broker: &Broker, args: &[&str]) -> Run {
    let mut command = db.cmd();
    command.env("KAFKA_BROKERS", &broker.address).args(args);
    Run::from(command.output().unwrap())
}

/// `offsets reset --group GROUP --topic TOPIC` followed by `rest`.
fn reset(db: &TestDb, group: &str, topic: &str, rest: &[&str]) -> Run {
    let mut args = vec!["offsets", "reset", "--group", group, "--topic", topic];
    args.extend_from_slice(rest);
    inboxctl(db, broker(), &args)
}

/// `offsets reset --group GROUP --topic TOPIC TARGET… --execute --undo-file UNDO`.
fn execute_with_undo(db: &TestDb, group: &str, topic: &str, target: &[&str], undo: &Path) -> Run {
    let mut rest = target.to_vec();
    rest.extend(["--execute", "--undo-file", undo.to_str().unwrap()]);
    reset(db, group, topic, &rest)
}

/// `offsets reset --group GROUP --from-file PLAN` followed by `rest`.
fn apply_plan(db: &TestDb, group: &str, plan: &Path, rest: &[&str]) -> Run {
    let plan = plan.to_str().unwrap();
    let mut args = vec!["offsets", "reset", "--group", group, "--from-file", plan];
    args.extend_from_slice(rest);
    inboxctl(db, broker(), &args)
}

/// The NEW offsets of a JSON plan, partition by partition.
fn new_offsets(plan: &Run) -> Vec<i64> {
    plan.json()["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["new"].as_i64().unwrap())
        .collect()
}

/// Committed offsets as `Broker::committed` returns them.
fn at(offsets: &[i64]) -> Vec<Option<i64>> {
    offsets.iter().map(|o| Some(*o)).collect()
}

/// Produces `counts[p]` events into each partition `p` and checks they landed at 0..count.
async fn fill(broker: &Broker, topic: &str, prefix: &str, counts: &[usize]) {
    let mut events = Vec::new();
    for (partition, count) in counts.iter().enumerate() {
        for n in 0..*count {
            events.push((partition as i32, format!("{prefix}-p{partition}-{n}")));
        }
    }
    let delivered = broker.produce(topic, &events).await;
    for (partition, count) in counts.iter().enumerate() {
        let offsets: Vec<i64> = delivered
            .iter()
            .filter(|d| d.partition == partition as i32)
            .map(|d| d.offset)
            .collect();
        assert_eq!(
            offsets,
            (0..*count as i64).collect::<Vec<_>>(),
            "partition {partition}"
        );
    }
}

/// One more event at the end of every partition, so that a consumer positioned at the log
/// end has a message to read there; checks each lands at the expected old log end.
async fn mark_ends(broker: &Broker, topic: &str, log_ends: &[i64]) {
    let events: Vec<(i32, String)> = (0..log_ends.len())
        .map(|p| (p as i32, format!("marker-p{p}")))
        .collect();
    let delivered = broker.produce(topic, &events).await;
    let offsets: Vec<i64> = delivered.iter().map(|d| d.offset).collect();
    assert_eq!(offsets, log_ends, "markers at the old log ends");
}

/// Where a consumer of `group` starts in each of `partitions`: it subscribes as a service
/// does, with auto.offset.reset=earliest (so a missing or ignored commit shows up as the log
/// start), takes the offset of the first message it is given per partition, never commits,
/// and leaves the group.
fn first_offsets(broker: &Broker, group: &str, topic: &str, partitions: &[i32]) -> Vec<i64> {
    let consumer: BaseConsumer = broker
        .config()
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .create()
        .unwrap();
    consumer.subscribe(&[topic]).unwrap();
    let mut first: BTreeMap<i32, i64> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while partitions.iter().any(|p| !first.contains_key(p)) {
        assert!(
            Instant::now() < deadline,
            "a consumer of {group} read only {first:?} of partitions {partitions:?}"
        );
        if let Some(message) = consumer.poll(Duration::from_millis(100)) {
            let message = message.expect("consume");
            first.entry(message.partition()).or_insert(message.offset());
        }
    }
    consumer.unsubscribe();
    drop(consumer);
    partitions.iter().map(|p| first[p]).collect()
}

/// `first_offsets` for several groups at once (each join takes seconds), in the order given.
fn consumers_start(
    broker: &'static Broker,
    topic: &str,
    groups: &[&str],
    partitions: &[i32],
) -> Vec<Vec<i64>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = groups
            .iter()
            .map(|group| scope.spawn(move || first_offsets(broker, group, topic, partitions)))
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("consumer thread"))
            .collect()
    })
}

/// The header cells of the first table printed.
fn header(run: &Run) -> Vec<String> {
    let mut lines = run.stdout.lines().skip_while(|line| !line.starts_with('┌'));
    lines.next();
    let line = lines
        .next()
        .unwrap_or_else(|| panic!("no table in:\n{}", run.stdout));
    line.trim_matches('│')
        .split('┆')
        .map(|cell| cell.trim().to_string())
        .collect()
}

/// The `warning:` lines on stderr.
fn warnings(run: &Run) -> Vec<String> {
    run.stderr
        .lines()
        .filter(|line| line.starts_with("warning: "))
        .map(str::to_string)
        .collect()
}

/// The group's state as `offsets show` reports it.
fn group_state(db: &TestDb, group: &str) -> String {
    let json = inboxctl(
        db,
        broker(),
        &["offsets", "show", "--group", group, "--format", "json"],
    )
    .ok()
    .json();
    json["state"].as_str().unwrap().to_string()
}

async fn wait_for_state(db: &TestDb, group: &str, wanted: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let state = group_state(db, group);
        if state == wanted {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "group {group} is still {state}, never {wanted}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The undo plan's path as the run printed it on stderr.
fn undo_written(run: &Run) -> String {
    let (_, rest) = run
        .stderr
        .split_once("Undo plan written to ")
        .unwrap_or_else(|| panic!("no undo plan named in:\n{}", run.stderr));
    let (path, _) = rest.split_once(" (apply it with: ").unwrap();
    path.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latest_offset_and_shift_move_the_group_where_its_consumer_starts() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let topic = unique("orders");
    broker.create_topic(&topic, 3).await;
    fill(broker, &topic, "e", &[6, 9, 4]).await;
    let (latest, offset, back, forward) = (
        unique("latest"),
        unique("offset"),
        unique("back"),
        unique("forward"),
    );
    for group in [&latest, &offset, &back] {
        broker.commit(group, &topic, &[(0, 5), (1, 7), (2, 3)]);
    }
    broker.commit(&forward, &topic, &[(0, 1), (1, 2), (2, 1)]);

    let run = reset(&db, &latest, &topic, &["--to-latest", "--execute"]).ok();
    assert_eq!(warnings(&run), Vec::<String>::new());
    assert_eq!(broker.committed(&latest, &topic, 3), at(&[6, 9, 4]));

    // Only the partitions named move.
    let named = format!("{topic}:0,2");
    let run = reset(&db, &offset, &named, &["--to-offset", "2", "--execute"]).ok();
    assert_eq!(warnings(&run), Vec::<String>::new());
    assert_eq!(broker.committed(&offset, &topic, 3), at(&[2, 7, 2]));

    let run = reset(&db, &back, &topic, &["--shift-by", "-2", "--execute"]).ok();
    assert_eq!(warnings(&run), Vec::<String>::new());
    assert_eq!(broker.committed(&back, &topic, 3), at(&[3, 5, 1]));

    let run = reset(&db, &forward, &topic, &["--shift-by", "+2", "--execute"]).ok();
    assert_eq!(warnings(&run), Vec::<String>::new());
    assert_eq!(broker.committed(&forward, &topic, 3), at(&[3, 4, 3]));

    // Shifting needs a committed offset to shift from.
    let fresh = unique("fresh");
    let run = reset(&db, &fresh, &topic, &["--shift-by", "1", "--execute"]).code(1);
    assert!(
        run.stderr
            .contains(&format!("{topic}:0 has no committed offset to shift from")),
        "{}",
        run.stderr
    );
    assert_eq!(broker.committed(&fresh, &topic, 3), vec![None, None, None]);

    mark_ends(broker, &topic, &[6, 9, 4]).await;
    let starts = consumers_start(
        broker,
        &topic,
        &[&latest, &offset, &back, &forward],
        &[0, 1, 2],
    );
    assert_eq!(
        starts,
        vec![vec![6, 9, 4], vec![2, 7, 2], vec![3, 5, 1], vec![3, 4, 3]]
    );
}

/// --all-topics takes every partition the group has a committed offset for, in every topic,
/// as kafka-consumer-groups.sh does: not the partitions it never committed, not the topics
/// only other groups read. --dry-run only shows the plan, as no --execute does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_topics_moves_every_partition_the_group_committed() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let (orders, payments, other) = (unique("a-orders"), unique("b-payments"), unique("other"));
    broker.create_topic(&orders, 2).await;
    broker.create_topic(&payments, 2).await;
    broker.create_topic(&other, 1).await;
    fill(broker, &orders, "o", &[4, 3]).await;
    fill(broker, &payments, "p", &[5, 2]).await;
    fill(broker, &other, "x", &[3]).await;
    let (group, bystander) = (unique("billing"), unique("bystander"));
    broker.commit(&group, &orders, &[(0, 1), (1, 1)]);
    broker.commit(&group, &payments, &[(0, 2)]);
    broker.commit(&bystander, &other, &[(0, 1)]);

    let all = [
        "offsets",
        "reset",
        "--group",
        &group,
        "--all-topics",
        "--to-latest",
    ];
    let dry = inboxctl(
        &db,
        broker,
        &[&all[..], &["--dry-run", "--format", "json"]].concat(),
    )
    .ok();
    assert_eq!(
        dry.json()["partitions"],
        json!([
            {"topic": orders, "partition": 0, "current": 1, "new": 4, "log_start": 0, "log_end": 4},
            {"topic": orders, "partition": 1, "current": 1, "new": 3, "log_start": 0, "log_end": 3},
            {"topic": payments, "partition": 0, "current": 2, "new": 5, "log_start": 0, "log_end": 5},
        ])
    );
    assert_eq!(broker.committed(&group, &orders, 2), at(&[1, 1]));
    assert_eq!(broker.committed(&group, &payments, 2), vec![Some(2), None]);

    inboxctl(&db, broker, &[&all[..], &["--execute"]].concat()).ok();
    assert_eq!(broker.committed(&group, &orders, 2), at(&[4, 3]));
    assert_eq!(broker.committed(&group, &payments, 2), vec![Some(5), None]);
    assert_eq!(broker.committed(&bystander, &other, 1), at(&[1]));

    // A group that committed nothing (a mistyped name, say) is an error, not a silent no-op.
    let nobody = unique("nobody");
    let run = inboxctl(
        &db,
        broker,
        &[
            "offsets",
            "reset",
            "--group",
            &nobody,
            "--all-topics",
            "--to-earliest",
        ],
    )
    .code(1);
    assert!(
        run.stderr.contains(&format!(
            "consumer group '{nobody}' has no committed offsets"
        )),
        "{}",
        run.stderr
    );
    // --all-topics names the partitions itself; --dry-run and --execute contradict.
    for conflicting in [&["--topic", &orders][..], &["--execute", "--dry-run"][..]] {
        let run = inboxctl(&db, broker, &[&all[..], conflicting].concat()).code(2);
        assert!(run.stderr.contains("cannot be used with"), "{}", run.stderr);
    }
    assert_eq!(broker.committed(&group, &orders, 2), at(&[4, 3]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn earliest_and_out_of_range_targets_stop_at_the_log_edges() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let topic = unique("orders");
    broker.create_topic(&topic, 2).await;
    fill(broker, &topic, "e", &[6, 4]).await;
    // Retention removed the first two records of partition 0: its log starts at 2.
    broker.delete_records(&topic, 0, 2).await;
    let (earliest, high, low) = (unique("earliest"), unique("high"), unique("low"));
    broker.commit(&earliest, &topic, &[(0, 4), (1, 3)]);
    broker.commit(&high, &topic, &[(0, 3), (1, 1)]);
    broker.commit(&low, &topic, &[(0, 5), (1, 3)]);

    let run = reset(&db, &earliest, &topic, &["--to-earliest", "--execute"]).ok();
    assert_eq!(warnings(&run), Vec::<String>::new());
    assert_eq!(broker.committed(&earliest, &topic, 2), at(&[2, 0]));

    // Past the log end: the end, with a warning naming the offset asked for.
    let high_warnings = vec![
        format!("warning: {topic}:0: offset 100 is outside the log [2, 6]; using 6"),
        format!("warning: {topic}:1: offset 100 is outside the log [0, 4]; using 4"),
    ];
    let dry = reset(
        &db,
        &high,
        &topic,
        &["--to-offset", "100", "--format", "json"],
    )
    .ok();
    assert_eq!(warnings(&dry), high_warnings);
    assert_eq!(
        dry.json()["partitions"],
        json!([
            {"topic": topic, "partition": 0, "current": 3, "new": 6, "log_start": 2, "log_end": 6, "clamped_from": 100},
            {"topic": topic, "partition": 1, "current": 1, "new": 4, "log_start": 0, "log_end": 4, "clamped_from": 100},
        ])
    );
    assert_eq!(broker.committed(&high, &topic, 2), at(&[3, 1]), "a dry run");
    let run = reset(&db, &high, &topic, &["--to-offset", "100", "--execute"]).ok();
    assert_eq!(warnings(&run), high_warnings);
    assert_eq!(broker.committed(&high, &topic, 2), at(&[6, 4]));

    // Before the log start: the start.
    let run = reset(&db, &low, &topic, &["--shift-by", "-1000", "--execute"]).ok();
    assert_eq!(
        warnings(&run),
        vec![
            format!("warning: {topic}:0: offset -995 is outside the log [2, 6]; using 2"),
            format!("warning: {topic}:1: offset -997 is outside the log [0, 4]; using 0"),
        ]
    );
    assert_eq!(broker.committed(&low, &topic, 2), at(&[2, 0]));

    mark_ends(broker, &topic, &[6, 4]).await;
    let starts = consumers_start(broker, &topic, &[&earliest, &high, &low], &[0, 1]);
    assert_eq!(starts, vec![vec![2, 0], vec![6, 4], vec![2, 0]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn to_datetime_and_by_duration_find_the_first_message_after_the_time() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let topic = unique("orders");
    broker.create_topic(&topic, 3).await;
    // The two batches carry timestamps (CreateTime) two hours and one hour ago; `between`
    // lies half-way, far from both, whatever the time the binary takes to start.
    let now = Utc::now();
    let (first_at, between, second_at) = (
        now - chrono::Duration::hours(2),
        now - chrono::Duration::minutes(90),
        now - chrono::Duration::hours(1),
    );
    let first: Vec<(i32, String)> = [3, 1, 2]
        .iter()
        .enumerate()
        .flat_map(|(partition, count)| {
            (0..*count).map(move |n| (partition as i32, format!("first-p{partition}-{n}")))
        })
        .collect();
    broker
        .produce_at(&topic, &first, Some(first_at.timestamp_millis()))
        .await;
    let second = vec![
        (0, "second-p0-0".to_string()),
        (1, "second-p1-0".to_string()),
        (2, "second-p2-0".to_string()),
        (0, "second-p0-1".to_string()),
        (1, "second-p1-1".to_string()),
        (1, "second-p1-2".to_string()),
    ];
    let delivered = broker
        .produce_at(&topic, &second, Some(second_at.timestamp_millis()))
        .await;
    let firsts: Vec<(i32, i64)> = delivered
        .iter()
        .take(3)
        .map(|d| (d.partition, d.offset))
        .collect();
    assert_eq!(
        firsts,
        vec![(0, 3), (1, 1), (2, 2)],
        "where the second batch starts"
    );
    // Log ends: 5, 4, 3.

    let (datetime, duration, future) = (unique("datetime"), unique("duration"), unique("future"));
    for group in [&datetime, &duration, &future] {
        broker.commit(group, &topic, &[(0, 1), (1, 1), (2, 1)]);
    }

    let at_between = between.to_rfc3339_opts(SecondsFormat::Millis, true);
    let run = reset(
        &db,
        &datetime,
        &topic,
        &["--to-datetime", &at_between, "--execute"],
    )
    .ok();
    assert_eq!(warnings(&run), Vec::<String>::new());
    assert_eq!(broker.committed(&datetime, &topic, 3), at(&[3, 1, 2]));

    // "This long ago": 90 minutes, half-way between the batches.
    let run = reset(
        &db,
        &duration,
        &topic,
        &["--by-duration", "90m", "--execute"],
    )
    .ok();
    assert_eq!(warnings(&run), Vec::<String>::new());
    assert_eq!(broker.committed(&duration, &topic, 3), at(&[3, 1, 2]));

    // No message that late: the log end, as Kafka does (the broker answers -1).
    let tomorrow =
        (Utc::now() + chrono::Duration::days(1)).to_rfc3339_opts(SecondsFormat::Secs, true);
    let dry = reset(
        &db,
        &future,
        &topic,
        &["--to-datetime", &tomorrow, "--format", "json"],
    )
    .ok();
    assert_eq!(new_offsets(&dry), vec![5, 4, 3]);
    // Kafka's times are whole milliseconds: a tenth of one after the first batch's time is
    // after the first batch.
    let first_ms = chrono::DateTime::from_timestamp_millis(first_at.timestamp_millis()).unwrap();
    for (at, expected) in [
        (first_ms, vec![0, 0, 0]),
        (
            first_ms + chrono::Duration::microseconds(100),
            vec![3, 1, 2],
        ),
    ] {
        let at = at.to_rfc3339_opts(SecondsFormat::Nanos, true);
        let dry = reset(
            &db,
            &future,
            &topic,
            &["--to-datetime", &at, "--format", "json"],
        )
        .ok();
        assert_eq!(new_offsets(&dry), expected, "{at}");
    }
    // Before 1970, before every message: the log start.
    for before_1970 in [
        &["--to-datetime", "1969-12-31T00:00:00Z", "--format", "json"][..],
        &["--by-duration", "100y", "--format", "json"],
    ] {
        let dry = reset(&db, &future, &topic, before_1970).ok();
        assert_eq!(new_offsets(&dry), vec![0, 0, 0], "{before_1970:?}");
    }
    let too_long = reset(&db, &future, &topic, &["--by-duration", "300000y"]).code(2);
    assert!(
        too_long.stderr.contains("--by-duration is too large"),
        "{}",
        too_long.stderr
    );
    assert!(!too_long.stderr.contains("panicked"), "{}", too_long.stderr);
    let just_now = reset(
        &db,
        &future,
        &topic,
        &["--by-duration", "0s", "--format", "json"],
    )
    .ok();
    assert_eq!(just_now.json()["partitions"], dry.json()["partitions"]);
    let run = reset(
        &db,
        &future,
        &topic,
        &["--to-datetime", &tomorrow, "--execute"],
    )
    .ok();
    assert_eq!(warnings(&run), Vec::<String>::new());
    assert_eq!(broker.committed(&future, &topic, 3), at(&[5, 4, 3]));

    mark_ends(broker, &topic, &[5, 4, 3]).await;
    let starts = consumers_start(broker, &topic, &[&datetime, &duration, &future], &[0, 1, 2]);
    assert_eq!(starts, vec![vec![3, 1, 2], vec![3, 1, 2], vec![5, 4, 3]]);
}

/// A partition the broker answers with an error is not "no message that late": the lookup
/// by time fails, where taking it for the log end would send a reset, a replay's start or
/// compare's first checked offset there. The library call is tested here because the
/// commands check partitions against the metadata first: an unknown partition is the one
/// per-partition error a test can ask for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_answered_with_an_error_fails_the_lookup_by_time() {
    use inboxctl::kafka::{Kafka, KafkaOpts};
    let broker = broker();
    let topic = unique("orders");
    broker.create_topic(&topic, 2).await;
    broker
        .produce(&topic, &[(0, "p0-0".to_string()), (1, "p1-0".to_string())])
        .await;
    let kafka = Kafka::new(&KafkaOpts {
        brokers: broker.address.clone(),
        properties: Vec::new(),
        kafka_timeout: Duration::from_secs(10),
    })
    .unwrap();
    let client = kafka.group_client(&unique("lookup")).unwrap();
    let later = (Utc::now() + chrono::Duration::hours(1)).timestamp_millis();
    let asked = topic.clone();
    let (found, none_that_late, unknown) = tokio::task::spawn_blocking(move || {
        (
            kafka.offsets_for_time(&client, &asked, &[0, 1], 0),
            kafka.offsets_for_time(&client, &asked, &[0, 1], later),
            kafka
                .offsets_for_time(&client, &asked, &[0, 7], 0)
                .map_err(|error| format!("{error:#}")),
        )
    })
    .await
    .unwrap();
    assert_eq!(found.unwrap(), BTreeMap::from([(0, Some(0)), (1, Some(0))]));
    assert_eq!(
        none_that_late.unwrap(),
        BTreeMap::from([(0, None), (1, None)])
    );
    let error = unknown.unwrap_err();
    assert!(
        error.starts_with(&format!("could not look up offsets by time in {topic}:7")),
        "{error}"
    );
}

/// A committed offset past the log's end moved back by --to-inbox: only the offsets the log
/// holds are given again, and where none is, the note says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn to_inbox_back_from_past_the_log_end_names_only_offsets_the_log_holds() {
    let broker = broker();
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 2).await;
    fill(broker, &topic, "e", &[10, 10]).await;
    // Partition 0 processed through offset 3; partition 1 through its last, 9.
    let now = Utc::now();
    let rows: Vec<Row_> = [(0, 3), (1, 9)]
        .iter()
        .map(|&(partition, offset)| {
            let id = format!("e-p{partition}-{offset}");
            row(&group, &id, Some((&topic, partition, offset)), now)
        })
        .collect();
    db.insert_rows(&rows).await;
    broker.commit(&group, &topic, &[(0, 50), (1, 50)]);
    let dry = reset(&db, &group, &topic, &["--to-inbox"]).ok();
    for note in [
        format!(
            "{topic}:0: moving back from 50, which is past the log's end (10), to 4: the group \
             will be given offsets 4 to 9 again, and the inbox skips those it already holds"
        ),
        format!(
            "{topic}:1: moving back from 50, which is past the log's end (10), to 10: no \
             message is given again"
        ),
    ] {
        assert!(
            dry.stderr.lines().any(|line| line == note),
            "{note}\n{}",
            dry.stderr
        );
    }
    // A row at the largest offset there is asks for one past any end: the log's end, not
    // (the sum wrapping round) its start.
    db.insert_rows(&[row(&group, "e-last", Some((&topic, 1, i64::MAX)), now)])
        .await;
    let largest = reset(&db, &group, &topic, &["--to-inbox", "--format", "json"]).ok();
    assert_eq!(largest.json()["partitions"][1]["new"], json!(10));
    assert_eq!(
        warnings(&largest),
        vec![format!(
            "warning: {topic}:1: offset {} is outside the log [0, 10]; using 10",
            i64::MAX
        )]
    );
}

async fn to_inbox_moves_each_partition_past_the_highest_processed_offset(backend: Backend) {
    let broker = broker();
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 4).await;
    fill(broker, &topic, "e", &[8, 8, 8, 0]).await;
    // Partition 0 runs clean. Partition 1 crashes after the effect of offset 4 and goes on
    // processing without committing (processed through 7, committed 4). Partition 2 commits
    // offsets 6 and 7 before their effects (committed 8, processed through 5). Partition 3
    // never has a message.
    let pool = db.pool().await;
    run_service(
        broker,
        &group,
        &topic,
        24,
        |seen| match (seen.partition, seen.offset) {
            (1, offset) if offset >= 4 => Step::ProcessNoCommit,
            (2, offset) if offset >= 6 => Step::CommitNoProcess,
            _ => Step::ProcessThenCommit,
        },
        recording(pool, backend, &group, &topic),
    )
    .await;
    assert_eq!(
        broker.committed(&group, &topic, 4),
        vec![Some(8), Some(4), Some(8), None]
    );
    // In partition 1 the handler failed on offset 5 (its transaction rolled back) and the
    // service went on with 6 and 7: --to-inbox moves past 5 all the same, and says so.
    db.exec(&format!(
        "DELETE FROM processed_messages WHERE consumer = '{group}' AND event_id = 'e-p1-5'"
    ))
    .await;
    // Rows --to-inbox must not look at: another consumer's, and the group's on another topic.
    let now = Utc::now();
    db.insert_rows(&[
        row("audit", "a-1", Some((&topic, 0, 2)), now),
        row("ledger", "l-1", Some((&topic, 1, 7)), now),
        row(&group, "elsewhere", Some(("other-topic", 0, 50)), now),
    ])
    .await;

    let dry = reset(&db, &group, &topic, &["--to-inbox"]).ok();
    assert_eq!(
        warnings(&dry),
        vec![
            format!(
                "warning: {topic}:1: moving from 4 to 8 skips 1 offset(s) without an inbox row \
                 (5): their messages, if any, would never be processed; process them first with \
                 `inboxctl replay --topic {topic} --partition 1 --from 5 --to 8 --consumer \
                 {group} …` (the inbox skips those it holds), or move this partition to 5 instead"
            ),
            // Partition 3 never had a message, so the inbox has no row of it.
            format!(
                "warning: the inbox holds no rows of consumer '{group}' for partition {topic}:3 \
                 (pruned, or never processed), so it is left as it is; set it \
                 explicitly with --topic TOPIC:PARTITION and --to-offset N (or another target)"
            ),
        ]
    );
    let json = reset(&db, &group, &topic, &["--to-inbox", "--format", "json"]).ok();
    assert_eq!(
        json.json()["partitions_without_inbox_rows"],
        json!([{"topic": topic, "partition": 3}])
    );
    let skipped: Vec<serde_json::Value> = json.json()["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["skipped_without_row"].clone())
        .collect();
    assert_eq!(skipped, [json!(0), json!(1), json!(0)]);
    // With --consumer, the rows and the replay the warning suggests are that consumer's.
    let partition_1 = format!("{topic}:1");
    let audit = inboxctl(
        &db,
        broker,
        &[
            "offsets",
            "reset",
            "--group",
            &group,
            "--topic",
            &partition_1,
            "--to-inbox",
            "--consumer",
            "ledger",
        ],
    )
    .ok();
    assert_eq!(
        warnings(&audit),
        vec![format!(
            "warning: {topic}:1: moving from 4 to 8 skips 3 offset(s) without an inbox row \
             (4-6): their messages, if any, would never be processed; process them first with \
             `inboxctl replay --topic {topic} --partition 1 --from 4 --to 8 --consumer ledger \
             …` (the inbox skips those it holds), or move this partition to 4 instead"
        )]
    );
    // Partition 2 goes back, over the two offsets committed before their effects.
    let back = format!(
        "{topic}:2: moving back from 8 to 6: the group will be given offsets 6 to 7 again, \
         and the inbox skips those it already holds"
    );
    assert!(
        dry.stderr.lines().any(|line| line == back),
        "{}",
        dry.stderr
    );
    assert_eq!(
        header(&dry),
        [
            "TOPIC",
            "PARTITION",
            "CURRENT",
            "NEW",
            "LOG-START",
            "LOG-END"
        ]
    );
    assert_eq!(
        dry.table_rows(),
        vec![
            vec![
                topic.clone(),
                "0".into(),
                "8".into(),
                "8".into(),
                "0".into(),
                "8".into()
            ],
            vec![
                topic.clone(),
                "1".into(),
                "4".into(),
                "8".into(),
                "0".into(),
                "8".into()
            ],
            vec![
                topic.clone(),
                "2".into(),
                "8".into(),
                "6".into(),
                "0".into(),
                "8".into()
            ],
        ]
    );
    assert_eq!(
        broker.committed(&group, &topic, 4),
        vec![Some(8), Some(4), Some(8), None],
        "a dry run"
    );

    // --consumer picks another consumer's rows.
    let audit = reset(
        &db,
        &group,
        &topic,
        &["--to-inbox", "--consumer", "audit", "--format", "json"],
    )
    .ok();
    assert_eq!(
        audit.json()["partitions"],
        json!([{"topic": topic, "partition": 0, "current": 8, "new": 3, "log_start": 0, "log_end": 8, "skipped_without_row": 0}])
    );
    // A consumer without rows moves nothing, and says so.
    let nobody = reset(
        &db,
        &group,
        &topic,
        &["--to-inbox", "--consumer", "nobody", "--execute"],
    )
    .ok();
    assert_eq!(
        warnings(&nobody),
        vec![
            "warning: the inbox has no rows of consumer 'nobody' with coordinates for these \
             partitions; nothing to move (`inboxctl inspect` lists the consumers and their \
             partitions)"
                .to_string()
        ]
    );
    assert!(
        nobody.stderr.contains("Nothing to reset."),
        "{}",
        nobody.stderr
    );

    let dir = tempfile::tempdir().unwrap();
    let undo = dir.path().join("undo.csv");
    execute_with_undo(&db, &group, &topic, &["--to-inbox"], &undo).ok();
    assert_eq!(
        broker.committed(&group, &topic, 4),
        vec![Some(8), Some(8), Some(6), None]
    );
    assert_eq!(
        std::fs::read_to_string(&undo).unwrap(),
        format!("topic,partition,offset\n{topic},0,8\n{topic},1,4\n{topic},2,8\n")
    );

    mark_ends(broker, &topic, &[8, 8, 8, 0]).await;
    let starts = consumers_start(broker, &topic, &[&group], &[0, 1, 2]);
    assert_eq!(starts, vec![vec![8, 8, 6]]);
}

/// A partition the inbox holds no rows of (all pruned, or never processed) has no inbox
/// position: --to-inbox leaves its committed offset as it is, and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn to_inbox_names_the_partitions_it_leaves_for_want_of_inbox_rows() {
    let broker = broker();
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 3).await;
    fill(broker, &topic, "e", &[6, 6, 6]).await;
    broker.commit(&group, &topic, &[(0, 1), (1, 2), (2, 3)]);
    // Processed through 3 in partition 0 and through 4 in partition 2; partition 1's rows
    // were all pruned.
    let now = Utc::now();
    let mut rows = Vec::new();
    for (partition, last) in [(0, 3), (2, 4)] {
        for offset in 0..=last {
            let event_id = format!("e-p{partition}-{offset}");
            rows.push(row(
                &group,
                &event_id,
                Some((&topic, partition, offset)),
                now,
            ));
        }
    }
    db.insert_rows(&rows).await;

    let warning = format!(
        "warning: the inbox holds no rows of consumer '{group}' for partition {topic}:1 \
         (pruned, or never processed), so it is left as it is; set it \
         explicitly with --topic TOPIC:PARTITION and --to-offset N (or another target)"
    );
    let json = reset(&db, &group, &topic, &["--to-inbox", "--format", "json"]).ok();
    let plan: Vec<(i64, i64)> = json.json()["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["partition"].as_i64().unwrap(), p["new"].as_i64().unwrap()))
        .collect();
    assert_eq!(plan, [(0, 4), (2, 5)]);
    assert_eq!(
        json.json()["partitions_without_inbox_rows"],
        json!([{"topic": topic, "partition": 1}])
    );
    assert!(warnings(&json).contains(&warning), "{}", json.stderr);
    // Other targets plan every partition: the field belongs to --to-inbox.
    let latest = reset(&db, &group, &topic, &["--to-latest", "--format", "json"]).ok();
    assert_eq!(latest.json().get("partitions_without_inbox_rows"), None);

    let dir = tempfile::tempdir().unwrap();
    let undo = dir.path().join("undo.csv");
    let run = execute_with_undo(&db, &group, &topic, &["--to-inbox"], &undo).ok();
    assert_eq!(warnings(&run), [warning]);
    assert_eq!(
        run.table_rows()
            .iter()
            .map(|r| (r[1].clone(), r[3].clone()))
            .collect::<Vec<_>>(),
        [("0".to_string(), "4".to_string()), ("2".into(), "5".into())]
    );
    assert_eq!(broker.committed(&group, &topic, 3), at(&[4, 2, 5]));
    assert_eq!(
        std::fs::read_to_string(&undo).unwrap(),
        format!("topic,partition,offset\n{topic},0,1\n{topic},2,3\n")
    );
}

/// A member of a group, subscribed and polling on a thread of its own, as a running service
/// is; it commits nothing.
struct Member {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Member {
    /// Joins `group` on `topic` and returns once the member has partitions assigned.
    async fn join(broker: &'static Broker, group: &str, topic: &str) -> Member {
        let stop = Arc::new(AtomicBool::new(false));
        let assigned = Arc::new(AtomicBool::new(false));
        let thread = {
            let (stop, assigned) = (stop.clone(), assigned.clone());
            let (group, topic) = (group.to_string(), topic.to_string());
            std::thread::spawn(move || {
                let consumer: BaseConsumer = broker
                    .config()
                    .set("group.id", &group)
                    .set("enable.auto.commit", "false")
                    .set("auto.offset.reset", "earliest")
                    .set("session.timeout.ms", "6000")
                    .create()
                    .unwrap();
                consumer.subscribe(&[&topic]).unwrap();
                while !stop.load(Ordering::SeqCst) {
                    if let Some(message) = consumer.poll(Duration::from_millis(100)) {
                        message.expect("consume");
                    }
                    if consumer.assignment().is_ok_and(|a| a.count() > 0) {
                        assigned.store(true, Ordering::SeqCst);
                    }
                }
                consumer.unsubscribe();
            })
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !assigned.load(Ordering::SeqCst) {
            assert!(
                Instant::now() < deadline,
                "the member never got an assignment"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Member { stop, thread }
    }

    /// Leaves the group.
    fn leave(self) {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().expect("member thread");
    }
}

/// A group whose member has committed nothing yet: `offsets show` says so rather than show
/// an empty table, and with --topic lists the topic's partitions without an offset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_without_commits_is_said_to_have_none() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = (unique("orders"), unique("fresh"));
    broker.create_topic(&topic, 2).await;
    fill(broker, &topic, "e", &[2, 1]).await;
    let member = Member::join(broker, &group, &topic).await;
    wait_for_state(&db, &group, "Stable").await;
    let shown = inboxctl(&db, broker, &["offsets", "show", "--group", &group]).ok();
    assert_eq!(
        shown.stdout,
        format!(
            "Group '{group}': Stable, 1 member(s)\n\
             No committed offsets yet; --topic TOPIC shows a topic's partitions anyway.\n"
        )
    );
    let of_topic = inboxctl(
        &db,
        broker,
        &["offsets", "show", "--group", &group, "--topic", &topic],
    )
    .ok();
    assert_eq!(
        of_topic.table_rows(),
        [
            vec![
                topic.clone(),
                "0".into(),
                "-".into(),
                "0".into(),
                "2".into(),
                "-".into()
            ],
            vec![
                topic.clone(),
                "1".into(),
                "-".into(),
                "0".into(),
                "1".into(),
                "-".into()
            ],
        ],
        "{}",
        of_topic.stdout
    );
    member.leave();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execute_is_refused_while_a_member_is_polling() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 2).await;
    fill(broker, &topic, "e", &[5, 5]).await;
    broker.commit(&group, &topic, &[(0, 2), (1, 3)]);

    // A member of the group, subscribed and polling, as a running service is.
    let member = Member::join(broker, &group, &topic).await;
    wait_for_state(&db, &group, "Stable").await;

    // Without --group, offsets show lists the groups with their state, as
    // kafka-consumer-groups.sh --list --state does: this one Stable, an idle one Empty.
    let idle = unique("idle");
    broker.commit(&idle, &topic, &[(0, 1)]);
    let ours = |run: &Run| -> Vec<(String, String, i64)> {
        run.json()["groups"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["group"] == group.as_str() || g["group"] == idle.as_str())
            .map(|g| {
                let text = |key: &str| g[key].as_str().unwrap().to_string();
                (text("group"), text("state"), g["members"].as_i64().unwrap())
            })
            .collect()
    };
    let listed = inboxctl(&db, broker, &["offsets", "show", "--format", "json"]).ok();
    assert_eq!(
        ours(&listed),
        [
            (group.clone(), "Stable".to_string(), 1),
            (idle.clone(), "Empty".to_string(), 0)
        ]
    );
    let table = inboxctl(&db, broker, &["offsets", "show"]).ok();
    assert!(
        table
            .table_rows()
            .contains(&vec![group.clone(), "Stable".to_string(), "1".to_string()]),
        "{}",
        table.stdout
    );
    // --topic narrows one group's offsets: without a group it is a usage error.
    let alone = inboxctl(&db, broker, &["offsets", "show", "--topic", &topic]).code(2);
    assert!(alone.stderr.contains("--group"), "{}", alone.stderr);

    let dir = tempfile::tempdir().unwrap();
    let undo = dir.path().join("undo.csv");
    let dry = reset(&db, &group, &topic, &["--to-earliest"]).ok();
    assert_eq!(
        warnings(&dry),
        vec![format!(
            "warning: group '{group}' is Stable with active members: --execute would be refused until its consumers stop"
        )]
    );
    // The tool refuses before the broker would (an admin commit to a Stable group fails with
    // UNKNOWN_MEMBER_ID, Kafka's rule), and before writing anything. nisshi lists the member
    // of the Stable group here, as Kafka does.
    let show = inboxctl(
        &db,
        broker,
        &["offsets", "show", "-g", &group, "--format", "json"],
    )
    .ok()
    .json();
    assert_eq!(
        (show["state"].as_str(), show["members"].as_i64()),
        (Some("Stable"), Some(1))
    );
    let refused = execute_with_undo(&db, &group, &topic, &["--to-earliest"], &undo).code(1);
    assert_eq!(
        refused.stderr,
        format!(
            "error: refusing to reset offsets of group '{group}': it is Stable with active members (1); stop its consumers and retry\n"
        )
    );
    assert!(refused.stdout.is_empty(), "{}", refused.stdout);
    assert_eq!(broker.committed(&group, &topic, 2), at(&[2, 3]));
    assert!(!undo.exists(), "no undo plan for a refused reset");
    assert_eq!(files_in(db.dir.path()), Vec::<String>::new());

    // Once the member has left, the same reset goes through; the undo plan goes to the
    // working folder under a name of its own.
    member.leave();
    wait_for_state(&db, &group, "Empty").await;
    let run = reset(&db, &group, &topic, &["--to-earliest", "--execute"]).ok();
    assert_eq!(broker.committed(&group, &topic, 2), at(&[0, 0]));
    let written = undo_written(&run);
    assert_eq!(files_in(db.dir.path()), vec![written.clone()]);
    let stamp = written
        .strip_prefix(&format!("inboxctl-undo-{group}-"))
        .and_then(|rest| rest.strip_suffix(".csv"))
        .unwrap_or_else(|| panic!("{written}"));
    chrono::NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%SZ")
        .unwrap_or_else(|error| panic!("{written}: {error}"));
    assert_eq!(
        std::fs::read_to_string(db.dir.path().join(&written)).unwrap(),
        format!("topic,partition,offset\n{topic},0,2\n{topic},1,3\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_undo_files_never_overwrite_an_earlier_one() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 1).await;
    fill(broker, &topic, "e", &[5]).await;
    broker.commit(&group, &topic, &[(0, 2)]);
    // Undo plans of earlier resets of the group, under every name the next few seconds give.
    let now = Utc::now();
    let mut earlier = Vec::new();
    for second in -1..10 {
        let time = now + chrono::Duration::seconds(second);
        let name = format!(
            "inboxctl-undo-{group}-{}.csv",
            time.format("%Y%m%dT%H%M%SZ")
        );
        std::fs::write(
            db.dir.path().join(&name),
            "topic,partition,offset\nearlier,0,1\n",
        )
        .unwrap();
        earlier.push(name);
    }

    let first = reset(&db, &group, &topic, &["--to-earliest", "--execute"]).ok();
    let second = reset(&db, &group, &topic, &["--to-latest", "--execute"]).ok();
    assert_eq!(broker.committed(&group, &topic, 1), at(&[5]));
    let (first, second) = (undo_written(&first), undo_written(&second));
    assert!(
        first.ends_with("-2.csv") && earlier.contains(&first.replace("-2.csv", ".csv")),
        "{first}"
    );
    assert!(second.ends_with(".csv") && second != first, "{second}");
    assert_eq!(
        std::fs::read_to_string(db.dir.path().join(&first)).unwrap(),
        format!("topic,partition,offset\n{topic},0,2\n")
    );
    assert_eq!(
        std::fs::read_to_string(db.dir.path().join(&second)).unwrap(),
        format!("topic,partition,offset\n{topic},0,0\n")
    );
    for name in &earlier {
        assert_eq!(
            std::fs::read_to_string(db.dir.path().join(name)).unwrap(),
            "topic,partition,offset\nearlier,0,1\n",
            "{name}"
        );
    }
    // With -q and JSON, a script still learns where the undo plan went.
    let quiet = reset(
        &db,
        &group,
        &topic,
        &["-q", "--format", "json", "--to-earliest", "--execute"],
    )
    .ok();
    let third = undo_written(&quiet);
    assert_eq!(quiet.json()["undo_file"], third.as_str());
    assert_eq!(quiet.json()["applied"], true);
    assert_eq!(
        std::fs::read_to_string(db.dir.path().join(&third)).unwrap(),
        format!("topic,partition,offset\n{topic},0,5\n")
    );
    let mut all = earlier.clone();
    all.extend([first, second, third]);
    all.sort();
    assert_eq!(files_in(db.dir.path()), all);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_shows_current_and_new_and_changes_nothing() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 3).await;
    fill(broker, &topic, "e", &[6, 9, 4]).await;
    broker.commit(&group, &topic, &[(0, 5), (1, 7)]);

    let table = reset(&db, &group, &topic, &["--to-earliest"]).ok();
    assert_eq!(
        header(&table),
        [
            "TOPIC",
            "PARTITION",
            "CURRENT",
            "NEW",
            "LOG-START",
            "LOG-END"
        ]
    );
    assert_eq!(
        table.table_rows(),
        vec![
            vec![
                topic.clone(),
                "0".into(),
                "5".into(),
                "0".into(),
                "0".into(),
                "6".into()
            ],
            vec![
                topic.clone(),
                "1".into(),
                "7".into(),
                "0".into(),
                "0".into(),
                "9".into()
            ],
            vec![
                topic.clone(),
                "2".into(),
                "-".into(),
                "0".into(),
                "0".into(),
                "4".into()
            ],
        ]
    );
    assert!(
        table
            .stderr
            .contains("Dry run: nothing changed. Add --execute to apply."),
        "{}",
        table.stderr
    );

    let json = reset(&db, &group, &topic, &["--to-latest", "--format", "json"])
        .ok()
        .json();
    assert_eq!(
        json,
        json!({
            "group": group,
            "applied": false,
            "partitions": [
                {"topic": topic, "partition": 0, "current": 5, "new": 6, "log_start": 0, "log_end": 6},
                {"topic": topic, "partition": 1, "current": 7, "new": 9, "log_start": 0, "log_end": 9},
                {"topic": topic, "partition": 2, "current": null, "new": 4, "log_start": 0, "log_end": 4},
            ],
        })
    );
    // A partition named twice is planned once.
    let zero = format!("{topic}:0");
    let twice = reset(
        &db,
        &group,
        &topic,
        &["--topic", &zero, "--to-earliest", "--format", "csv"],
    )
    .ok();
    assert_eq!(
        twice.stdout,
        format!("topic,partition,offset\n{topic},0,0\n{topic},1,0\n{topic},2,0\n")
    );
    let committed_ones = format!("{topic}:0,1");
    let csv = reset(
        &db,
        &group,
        &committed_ones,
        &["--shift-by", "-1", "--format", "csv"],
    )
    .ok();
    assert_eq!(
        csv.stdout,
        format!("topic,partition,offset\n{topic},0,4\n{topic},1,6\n")
    );

    assert_eq!(
        broker.committed(&group, &topic, 3),
        vec![Some(5), Some(7), None]
    );
    assert_eq!(
        files_in(db.dir.path()),
        Vec::<String>::new(),
        "no undo file for a dry run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execute_writes_an_undo_plan_that_restores_the_previous_offsets() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 3).await;
    fill(broker, &topic, "e", &[6, 9, 4]).await;
    broker.commit(&group, &topic, &[(0, 5), (1, 7), (2, 3)]);
    let dir = tempfile::tempdir().unwrap();
    let undo = dir.path().join("undo.csv");

    let run = execute_with_undo(&db, &group, &topic, &["--to-latest"], &undo).ok();
    assert!(
        run.stderr.contains(&format!(
            "Undo plan written to {} (apply it with: inboxctl offsets reset --group {group} --from-file {} --execute)",
            undo.display(),
            undo.display()
        )),
        "{}",
        run.stderr
    );
    assert_eq!(
        header(&run),
        [
            "TOPIC",
            "PARTITION",
            "BEFORE",
            "AFTER",
            "LOG-START",
            "LOG-END"
        ]
    );
    assert_eq!(
        run.table_rows(),
        vec![
            vec![
                topic.clone(),
                "0".into(),
                "5".into(),
                "6".into(),
                "0".into(),
                "6".into()
            ],
            vec![
                topic.clone(),
                "1".into(),
                "7".into(),
                "9".into(),
                "0".into(),
                "9".into()
            ],
            vec![
                topic.clone(),
                "2".into(),
                "3".into(),
                "4".into(),
                "0".into(),
                "4".into()
            ],
        ]
    );
    assert_eq!(
        std::fs::read_to_string(&undo).unwrap(),
        format!("topic,partition,offset\n{topic},0,5\n{topic},1,7\n{topic},2,3\n")
    );
    assert_eq!(broker.committed(&group, &topic, 3), at(&[6, 9, 4]));

    // The same command again must not overwrite the only record of the offsets before.
    let again = execute_with_undo(&db, &group, &topic, &["--to-earliest"], &undo).code(1);
    assert!(
        again.stderr.contains(&format!(
            "could not write the undo plan to {}; nothing changed: {} already exists",
            undo.display(),
            undo.display()
        )),
        "{}",
        again.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&undo).unwrap(),
        format!("topic,partition,offset\n{topic},0,5\n{topic},1,7\n{topic},2,3\n")
    );
    assert_eq!(broker.committed(&group, &topic, 3), at(&[6, 9, 4]));

    // Applying the undo plan puts every offset back, and is itself undoable.
    let redo = dir.path().join("redo.csv");
    let json = apply_plan(
        &db,
        &group,
        &undo,
        &[
            "--execute",
            "--undo-file",
            redo.to_str().unwrap(),
            "--format",
            "json",
        ],
    )
    .ok()
    .json();
    assert_eq!(
        json,
        json!({
            "group": group,
            "applied": true,
            "partitions": [
                {"topic": topic, "partition": 0, "current": 6, "new": 5, "log_start": 0, "log_end": 6},
                {"topic": topic, "partition": 1, "current": 9, "new": 7, "log_start": 0, "log_end": 9},
                {"topic": topic, "partition": 2, "current": 4, "new": 3, "log_start": 0, "log_end": 4},
            ],
            "undo_file": redo.to_str().unwrap(),
        })
    );
    assert_eq!(broker.committed(&group, &topic, 3), at(&[5, 7, 3]));
    assert_eq!(
        std::fs::read_to_string(&redo).unwrap(),
        format!("topic,partition,offset\n{topic},0,6\n{topic},1,9\n{topic},2,4\n")
    );

    let starts = consumers_start(broker, &topic, &[&group], &[0, 1, 2]);
    assert_eq!(starts, vec![vec![5, 7, 3]]);
}

/// A partition the group had no offset for goes back to "none" while the group keeps its
/// offsets elsewhere: without OffsetDelete, applying the undo plan deletes the group and
/// commits the rest again, on this topic and on another one the plan does not name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_undo_plan_returns_one_partition_to_no_offset_and_keeps_the_others() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    // A topic whose name starts with "__", as only Kafka's internal topics should: its offsets
    // are the group's too.
    let (topic, other, group) = (unique("orders"), unique("__payments"), unique("billing"));
    broker.create_topic(&topic, 3).await;
    broker.create_topic(&other, 2).await;
    fill(broker, &topic, "e", &[6, 9, 4]).await;
    fill(broker, &other, "p", &[5, 5]).await;
    broker.commit(&group, &topic, &[(0, 5), (2, 3)]);
    broker.commit(&group, &other, &[(1, 2)]);
    let dir = tempfile::tempdir().unwrap();
    let undo = dir.path().join("undo.csv");

    let run = execute_with_undo(&db, &group, &topic, &["--to-earliest"], &undo).ok();
    assert_eq!(warnings(&run), Vec::<String>::new());
    assert_eq!(broker.committed(&group, &topic, 3), at(&[0, 0, 0]));
    assert_eq!(
        std::fs::read_to_string(&undo).unwrap(),
        format!("topic,partition,offset\n{topic},0,5\n{topic},1,\n{topic},2,3\n")
    );

    let note = |verb: &str, again: &str| {
        format!(
            "{verb} group '{group}' to return partitions to no committed offset, which only \
             deleting the group does without Kafka's OffsetDelete; its 1 committed offset(s) \
             outside the plan {again} committed again"
        )
    };
    let dry = apply_plan(&db, &group, &undo, &[]).ok();
    assert!(
        dry.stderr
            .contains(&note("--execute would delete", "would be")),
        "{}",
        dry.stderr
    );
    assert_eq!(broker.committed(&group, &topic, 3), at(&[0, 0, 0]));

    // Where the offsets to commit again cannot be written down first, nothing changes, and
    // the undo plan written just before is taken back.
    let redo = dir.path().join("redo.csv");
    let taken = dir.path().join("redo.recommit.csv");
    std::fs::write(&taken, "kept\n").unwrap();
    let refused = apply_plan(
        &db,
        &group,
        &undo,
        &["--execute", "--undo-file", redo.to_str().unwrap()],
    )
    .code(1);
    assert!(
        refused.stderr.contains(&format!(
            "could not write the offsets to commit after deleting group '{group}' to {}; nothing changed: {} already exists",
            taken.display(),
            taken.display()
        )),
        "{}",
        refused.stderr
    );
    assert_eq!(broker.committed(&group, &topic, 3), at(&[0, 0, 0]));
    assert_eq!(broker.committed(&group, &other, 2), vec![None, Some(2)]);
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), "kept\n");
    std::fs::remove_file(&taken).unwrap();
    assert_eq!(files_in(dir.path()), ["undo.csv"]);

    let run = apply_plan(
        &db,
        &group,
        &undo,
        &[
            "--execute",
            "--undo-file",
            redo.to_str().unwrap(),
            "--format",
            "json",
        ],
    )
    .ok();
    assert_eq!(warnings(&run), Vec::<String>::new());
    assert!(
        run.stderr.contains(&note("Reset deleted", "were")),
        "{}",
        run.stderr
    );
    let json = run.json();
    assert_eq!(
        json["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["new"].as_i64())
            .collect::<Vec<_>>(),
        vec![Some(5), None, Some(3)]
    );
    assert_eq!(json["deletes_group"], true);
    assert_eq!(
        json["commits_again"],
        json!([{"topic": other, "partition": 1, "offset": 2}])
    );
    assert_eq!(
        broker.committed(&group, &topic, 3),
        vec![Some(5), None, Some(3)]
    );
    assert_eq!(broker.committed(&group, &other, 2), vec![None, Some(2)]);
    // The offsets to commit after the delete were written down first, and removed once
    // they read back.
    assert_eq!(files_in(dir.path()), ["redo.csv", "undo.csv"]);
    // auto.offset.reset=earliest for the partition with none again.
    assert_eq!(
        consumers_start(broker, &topic, &[&group], &[0, 1, 2]),
        vec![vec![5, 0, 3]]
    );
}

/// A group that had committed nothing: its undo plan is all empty offsets, and applying it
/// leaves the group with no committed offset at all (the group is deleted), so its consumers
/// start where auto.offset.reset says again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_undo_plan_returns_a_new_group_to_no_offsets() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 2).await;
    fill(broker, &topic, "e", &[6, 9]).await;
    let dir = tempfile::tempdir().unwrap();
    let undo = dir.path().join("undo.csv");

    let run = execute_with_undo(&db, &group, &topic, &["--to-offset", "4"], &undo).ok();
    assert_eq!(
        warnings(&run),
        [format!(
            "warning: consumer group '{group}' does not exist on {} (no committed offsets, \
             unknown to the coordinator); this reset creates it with these offsets; check \
             --group if that is not meant",
            broker.address
        )]
    );
    assert_eq!(broker.committed(&group, &topic, 2), at(&[4, 4]));
    assert_eq!(
        std::fs::read_to_string(&undo).unwrap(),
        format!("topic,partition,offset\n{topic},0,\n{topic},1,\n")
    );

    let dry = apply_plan(&db, &group, &undo, &["--format", "json"]).ok();
    assert!(
        dry.stderr.contains(&format!(
            "--execute would delete group '{group}' to return partitions to no committed offset, \
             which only deleting the group does without Kafka's OffsetDelete\n"
        )),
        "{}",
        dry.stderr
    );
    let dry = dry.json();
    assert_eq!(dry["partitions"][0]["new"], serde_json::Value::Null);
    assert_eq!(dry["partitions"][1]["new"], serde_json::Value::Null);
    assert_eq!(dry["deletes_group"], true);
    assert_eq!(dry["commits_again"], json!([]));
    assert_eq!(broker.committed(&group, &topic, 2), at(&[4, 4]));

    let run = apply_plan(&db, &group, &undo, &["--execute"]).ok();
    assert_eq!(warnings(&run), Vec::<String>::new());
    assert_eq!(broker.committed(&group, &topic, 2), vec![None, None]);
    // auto.offset.reset=earliest: from the start, not from 4.
    assert_eq!(
        consumers_start(broker, &topic, &[&group], &[0, 1]),
        vec![vec![0, 0]]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_writes_the_plan_and_from_file_applies_it() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 3).await;
    fill(broker, &topic, "e", &[6, 9, 4]).await;
    broker.commit(&group, &topic, &[(0, 5), (1, 7), (2, 3)]);
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.csv");
    let plan_text = plan.to_str().unwrap();

    let run = reset(
        &db,
        &group,
        &topic,
        &["--shift-by", "-3", "--export", plan_text],
    )
    .ok();
    assert_eq!(
        std::fs::read_to_string(&plan).unwrap(),
        format!("topic,partition,offset\n{topic},0,2\n{topic},1,4\n{topic},2,0\n")
    );
    assert!(
        run.stderr
            .contains(&format!("Wrote the plan for 3 partition(s) to {plan_text}")),
        "{}",
        run.stderr
    );
    assert_eq!(
        header(&run),
        [
            "TOPIC",
            "PARTITION",
            "CURRENT",
            "NEW",
            "LOG-START",
            "LOG-END"
        ]
    );
    assert_eq!(
        run.table_rows(),
        vec![
            vec![
                topic.clone(),
                "0".into(),
                "5".into(),
                "2".into(),
                "0".into(),
                "6".into()
            ],
            vec![
                topic.clone(),
                "1".into(),
                "7".into(),
                "4".into(),
                "0".into(),
                "9".into()
            ],
            vec![
                topic.clone(),
                "2".into(),
                "3".into(),
                "0".into(),
                "0".into(),
                "4".into()
            ],
        ]
    );
    assert_eq!(
        broker.committed(&group, &topic, 3),
        at(&[5, 7, 3]),
        "export changes nothing"
    );
    assert_eq!(
        files_in(db.dir.path()),
        Vec::<String>::new(),
        "no undo file for an export"
    );
    assert_eq!(files_in(dir.path()), ["plan.csv"]);
    // A device is no plan: writing to it is what was asked (`/dev/stdout` in a pipe).
    let to_device = reset(
        &db,
        &group,
        &topic,
        &["--to-earliest", "--export", "/dev/null"],
    )
    .ok();
    assert!(
        to_device
            .stderr
            .contains("Wrote the plan for 3 partition(s) to /dev/null"),
        "{}",
        to_device.stderr
    );
    // A file there may be an earlier reset's undo plan: it is never replaced.
    let again = reset(
        &db,
        &group,
        &topic,
        &["--to-earliest", "--export", plan_text],
    )
    .code(1);
    assert_eq!(
        again.stderr,
        format!("error: {plan_text} already exists, and may be the undo plan of an earlier reset; give another path, or move that one away first\n")
    );
    assert_eq!(
        std::fs::read_to_string(&plan).unwrap(),
        format!("topic,partition,offset\n{topic},0,2\n{topic},1,4\n{topic},2,0\n")
    );

    let both = reset(
        &db,
        &group,
        &topic,
        &["--to-earliest", "--export", plan_text, "--execute"],
    )
    .code(2);
    assert!(
        both.stderr.contains("cannot be used with"),
        "{}",
        both.stderr
    );

    // The plan, read back: a dry run shows it, --topic narrows it, --execute applies it.
    let dry = apply_plan(&db, &group, &plan, &[]).ok();
    assert_eq!(dry.table_rows(), run.table_rows());
    assert_eq!(broker.committed(&group, &topic, 3), at(&[5, 7, 3]));
    let one = dir.path().join("undo-one.csv");
    let named = format!("{topic}:1");
    apply_plan(
        &db,
        &group,
        &plan,
        &[
            "--topic",
            &named,
            "--execute",
            "--undo-file",
            one.to_str().unwrap(),
        ],
    )
    .ok();
    assert_eq!(broker.committed(&group, &topic, 3), at(&[5, 4, 3]));
    assert_eq!(
        std::fs::read_to_string(&one).unwrap(),
        format!("topic,partition,offset\n{topic},1,7\n")
    );
    let all = dir.path().join("undo-all.csv");
    apply_plan(
        &db,
        &group,
        &plan,
        &["--execute", "--undo-file", all.to_str().unwrap()],
    )
    .ok();
    assert_eq!(broker.committed(&group, &topic, 3), at(&[2, 4, 0]));

    let starts = consumers_start(broker, &topic, &[&group], &[0, 1, 2]);
    assert_eq!(starts, vec![vec![2, 4, 0]]);
}

/// A plan file's header may name its columns in any order; the lines are then read in that
/// order. A header that does not name exactly the three columns is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_header_names_its_columns_in_any_order() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 3).await;
    fill(broker, &topic, "e", &[6, 6, 6]).await;
    broker.commit(&group, &topic, &[(0, 1), (1, 1), (2, 1)]);
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.csv");
    let p = plan.display().to_string();

    std::fs::write(
        &plan,
        format!("partition,offset,topic\n0,4,{topic}\n1,2,{topic}\n2,5,{topic}\n"),
    )
    .unwrap();
    let dry = apply_plan(&db, &group, &plan, &["--format", "json"]).ok();
    assert_eq!(new_offsets(&dry), [4, 2, 5]);
    assert_eq!(broker.committed(&group, &topic, 3), at(&[1, 1, 1]));
    let undo = dir.path().join("undo.csv");
    apply_plan(
        &db,
        &group,
        &plan,
        &["--execute", "--undo-file", undo.to_str().unwrap()],
    )
    .ok();
    assert_eq!(broker.committed(&group, &topic, 3), at(&[4, 2, 5]));
    // Case and spaces aside; a short line names the header's order.
    std::fs::write(
        &plan,
        format!(" Offset , TOPIC,Partition\n3,{topic},0\n3,{topic}\n"),
    )
    .unwrap();
    let run = apply_plan(&db, &group, &plan, &["--execute"]).code(2);
    assert_eq!(
        run.stderr,
        format!("error: {p}:3: expected offset,topic,partition but found 2 field(s)\n")
    );
    std::fs::write(&plan, format!(" Offset , TOPIC,Partition\n3,{topic},0\n")).unwrap();
    let dry = apply_plan(&db, &group, &plan, &["--format", "json"]).ok();
    assert_eq!(new_offsets(&dry), [3]);

    // A column misnamed: a usage error, naming what was expected.
    std::fs::write(&plan, format!("topic,part,offset\n{topic},0,3\n")).unwrap();
    let run = apply_plan(&db, &group, &plan, &["--execute"]).code(2);
    assert_eq!(
        run.stderr,
        format!(
            "error: {p}:1: the header line 'topic,part,offset' does not name the plan's \
             columns: expected topic, partition, offset, each once, in any order (not a \
             column: 'part'; missing: partition)\n"
        )
    );
    std::fs::write(&plan, format!("topic,offset\n{topic},3\n")).unwrap();
    let run = apply_plan(&db, &group, &plan, &["--execute"]).code(2);
    assert!(
        run.stderr.contains(&format!(
            "{p}:1: the header line 'topic,offset' does not name the plan's columns: expected \
             topic, partition, offset, each once, in any order (missing: partition)"
        )),
        "{}",
        run.stderr
    );
    assert_eq!(broker.committed(&group, &topic, 3), at(&[4, 2, 5]));
    assert_eq!(files_in(dir.path()), ["plan.csv", "undo.csv"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_plan_files_are_refused_naming_the_line() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 2).await;
    fill(broker, &topic, "e", &[3, 3]).await;
    broker.commit(&group, &topic, &[(0, 1), (1, 2)]);
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.csv");
    let p = plan.display().to_string();

    let cases = [
        (
            format!("topic,partition,offset\n{topic},0,1\n{topic},x,2\n"),
            format!("{p}:3: 'x' is not a partition number"),
        ),
        (
            format!("{topic},0,0\n{topic},1\n"),
            format!("{p}:2: expected topic,partition,offset but found 2 field(s)"),
        ),
        (
            format!("{topic},0,0\n{topic},1,0,9\n"),
            format!("{p}:2: expected topic,partition,offset but found 4 field(s)"),
        ),
        (
            format!("{topic},0,0\n\n{topic},1,-4\n"),
            format!("{p}:3: '-4' is not an offset"),
        ),
        (
            format!("{topic},-1,0\n"),
            format!("{p}:1: '-1' is not a partition number"),
        ),
        (
            format!("{topic},0,0\n{topic},1,0\n{topic},0,3\n"),
            format!("{p}:3: {topic}:0 is given again, with another offset than on line 1; a plan names each partition once"),
        ),
        (
            "topic,partition,offset\n".to_string(),
            format!("the plan file {p} names no partitions"),
        ),
        (
            String::new(),
            format!("the plan file {p} names no partitions"),
        ),
    ];
    // A file that is not a plan is a bad value, as on the command line (exit code 2); a plan
    // the brokers cannot carry out is an error (exit code 1).
    let usage = cases.map(|(text, message)| (text, message, 2));
    let refused = [
        (
            "no-such-topic,0,1\n".to_string(),
            "topic 'no-such-topic' does not exist".to_string(),
            1,
        ),
        (
            format!("{topic},7,1\n"),
            format!("partition 7 of topic '{topic}' does not exist (it has partitions 0-1)"),
            1,
        ),
    ];
    for (text, message, code) in usage.iter().chain(&refused) {
        std::fs::write(&plan, text).unwrap();
        let run = apply_plan(&db, &group, &plan, &["--execute"]).code(*code);
        assert!(
            run.stderr.starts_with("error: "),
            "{text:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains(message.as_str()),
            "{text:?}: expected {message:?} in\n{}",
            run.stderr
        );
        assert_eq!(broker.committed(&group, &topic, 2), at(&[1, 2]), "{text:?}");
    }
    let missing = dir.path().join("missing.csv");
    let run = apply_plan(&db, &group, &missing, &["--execute"]).code(1);
    assert!(
        run.stderr.contains(&format!(
            "could not open the plan file {}",
            missing.display()
        )),
        "{}",
        run.stderr
    );
    assert_eq!(broker.committed(&group, &topic, 2), at(&[1, 2]));
    assert_eq!(
        files_in(db.dir.path()),
        Vec::<String>::new(),
        "no undo file for a refused plan"
    );

    // --topic narrows a plan: what it leaves out is named, and leaving out all is refused.
    std::fs::write(&plan, format!("{topic},0,0\n")).unwrap();
    let only_1 = format!("{topic}:1");
    let run = apply_plan(&db, &group, &plan, &["--topic", &only_1, "--execute"]).code(2);
    assert!(
        run.stderr.contains(
            "none of the 1 partition(s) of the plan file is among those --topic names; drop --topic to apply the whole plan"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(broker.committed(&group, &topic, 2), at(&[1, 2]));
    std::fs::write(&plan, format!("{topic},0,0\n{topic},1,0\n{topic},1,0\n")).unwrap();
    let run = apply_plan(&db, &group, &plan, &["--topic", &only_1, "--execute"]).ok();
    assert!(
        run.stderr.contains(&format!(
            "warning: --topic leaves out 1 partition(s) of the plan file: {topic}:0"
        )),
        "{}",
        run.stderr
    );
    assert_eq!(broker.committed(&group, &topic, 2), at(&[1, 0]));
    std::fs::write(&plan, format!("{topic},1,2\n")).unwrap();
    apply_plan(&db, &group, &plan, &["--execute"]).ok();
    assert_eq!(broker.committed(&group, &topic, 2), at(&[1, 2]));
}

each_backend!(to_inbox_moves_each_partition_past_the_highest_processed_offset);

/// `--to-inbox` ends the session it reads the inbox on as the protocol asks: after a plan,
/// and after a broker error that comes once the inbox has been read (a partition the topic
/// does not have).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn to_inbox_ends_its_session_cleanly_on_postgres() {
    let broker = broker();
    let db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 2).await;
    fill(broker, &topic, "e", &[5, 5]).await;
    broker.commit(&group, &topic, &[(0, 1), (1, 1)]);
    db.exec_and_disconnect(&format!(
        "INSERT INTO processed_messages (consumer, event_id, topic, \"partition\", \"offset\") \
         VALUES ('{group}', 'e-0-2', '{topic}', 0, 2), ('{group}', 'e-1-3', '{topic}', 1, 3)"
    ))
    .await;
    let (before, abandoned) = db.ended_sessions().await;
    assert_eq!(abandoned, 0);

    let plan = reset(&db, &group, &topic, &["--to-inbox", "--format", "json"]).ok();
    assert_eq!(new_offsets(&plan), [3, 4]);
    let run = reset(&db, &group, &format!("{topic}:7"), &["--to-inbox"]).code(1);
    assert!(run.stderr.contains("partition 7"), "{}", run.stderr);
    let (after, abandoned) = db.ended_sessions().await;
    assert_eq!((after - before, abandoned), (2, 0));
}

/// `offsets reset` started on `holding`'s broker with `args`, its stderr going to a file that
/// the test reads while it runs.
struct ResetUnderWay {
    child: std::process::Child,
    stderr_file: std::path::PathBuf,
}

impl ResetUnderWay {
    /// Starts the reset with its commits held, and waits until its first one is.
    fn held_at_its_commit(db: &TestDb, holding: &HoldingBroker, args: &[&str]) -> ResetUnderWay {
        ResetUnderWay::held_at(db, holding, OFFSET_COMMIT, args)
    }

    /// Starts the reset with its requests of `api_key` held, and waits until one is.
    fn held_at(db: &TestDb, holding: &HoldingBroker, api_key: i16, args: &[&str]) -> ResetUnderWay {
        holding.hold(api_key);
        let reset = ResetUnderWay::start(db, holding, args);
        assert!(
            holding.wait_until_held(Duration::from_secs(30)),
            "the reset never sent request {api_key}:\n{}",
            reset.stderr()
        );
        reset
    }

    fn start(db: &TestDb, holding: &HoldingBroker, args: &[&str]) -> ResetUnderWay {
        let stderr_file = db.dir.path().join("reset.stderr");
        let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("inboxctl"))
            .args(["offsets", "reset"])
            .args(args)
            .env("DATABASE_URL", &db.url)
            .env("KAFKA_BROKERS", &holding.broker.address)
            .current_dir(db.dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::fs::File::create(&stderr_file).unwrap())
            .spawn()
            .unwrap();
        ResetUnderWay { child, stderr_file }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_file).unwrap_or_default()
    }

    /// Sends `signal` and waits until the reset says `answer` on stderr.
    fn signal(&mut self, signal: &str, answer: &str) {
        send_signal(signal, &self.child.id().to_string());
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.stderr().contains(answer) {
            assert!(
                self.child.try_wait().unwrap().is_none() && Instant::now() < deadline,
                "no '{answer}' after {signal}:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for the reset to end, at most 30 s.
    fn finish(mut self) -> Run {
        let deadline = Instant::now() + Duration::from_secs(30);
        if wait_until(&mut self.child, deadline).is_none() {
            panic!("the reset did not end:\n{}", self.stderr());
        }
        let stderr = self.stderr();
        let output = self.child.wait_with_output().unwrap();
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr,
        }
    }
}

/// A group with offsets on two topics, and a reset that returns one partition to no offset
/// (`--from-file plan.csv --undo-file undo.csv`): it deletes the group and commits the rest
/// again, which the proxy holds. Returns (topic, other topic, group, the reset).
async fn a_reset_that_deleted_its_group(
    holding: &HoldingBroker,
    db: &TestDb,
    more_args: &[&str],
) -> (String, String, String, ResetUnderWay) {
    let (topic, other, group, reset) =
        a_reset_that_deletes_its_group(holding, db, OFFSET_COMMIT, more_args).await;
    // The group is gone, with every offset it had.
    assert_has_no_offsets(&holding.broker, (&topic, &other, &group));
    (topic, other, group, reset)
}

/// The group of [`a_reset_that_deleted_its_group`] has no offset on either topic.
fn assert_has_no_offsets(broker: &Broker, names: (&str, &str, &str)) {
    let (topic, other, group) = names;
    assert_eq!(broker.committed(group, topic, 3), vec![None, None, None]);
    assert_eq!(broker.committed(group, other, 2), vec![None, None]);
}

/// The reset of [`a_reset_that_deleted_its_group`], held at its first request of `api_key`.
async fn a_reset_that_deletes_its_group(
    holding: &HoldingBroker,
    db: &TestDb,
    api_key: i16,
    more_args: &[&str],
) -> (String, String, String, ResetUnderWay) {
    let broker = &holding.broker;
    let (topic, other, group) = (unique("orders"), unique("payments"), unique("billing"));
    broker.create_topic(&topic, 3).await;
    broker.create_topic(&other, 2).await;
    fill(broker, &topic, "e", &[6, 9, 4]).await;
    fill(broker, &other, "p", &[5, 5]).await;
    broker.commit(&group, &topic, &[(0, 5), (1, 7), (2, 3)]);
    broker.commit(&group, &other, &[(1, 2)]);
    std::fs::write(
        db.dir.path().join("plan.csv"),
        format!("topic,partition,offset\n{topic},0,4\n{topic},1,\n{topic},2,1\n"),
    )
    .unwrap();
    let mut args = vec![
        "--group",
        &group,
        "--from-file",
        "plan.csv",
        "--execute",
        "--undo-file",
        "undo.csv",
    ];
    args.extend_from_slice(more_args);
    let reset = ResetUnderWay::held_at(db, holding, api_key, &args);
    (topic, other, group, reset)
}

/// Ctrl-C between deleting the group and committing its offsets again: stopped there, the
/// group would have no offsets at all, and its consumers would start wherever
/// auto.offset.reset says. The reset finishes first, then exits 130.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_after_a_reset_deleted_its_group_lets_it_commit_again() {
    let holding = HoldingBroker::start();
    let broker = &holding.broker;
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, other, group, mut reset) = a_reset_that_deleted_its_group(&holding, &db, &[]).await;
    reset.signal(
        "INT",
        &format!(
            "Ctrl-C: finishing the reset first, since deleting group '{group}' takes its offsets \
             until they are committed again (Ctrl-C again stops at once)"
        ),
    );
    holding.release();
    let run = reset.finish().code(130);
    assert_eq!(
        warnings(&run),
        ["warning: interrupted: the reset was finished first"]
    );
    assert_eq!(
        broker.committed(&group, &topic, 3),
        vec![Some(4), None, Some(1)]
    );
    assert_eq!(broker.committed(&group, &other, 2), vec![None, Some(2)]);
    // The undo plan stays; the offsets to commit again, all committed, go.
    assert_eq!(
        std::fs::read_to_string(db.dir.path().join("undo.csv")).unwrap(),
        format!("topic,partition,offset\n{topic},0,5\n{topic},1,7\n{topic},2,3\n")
    );
    assert!(!db.dir.path().join("undo.recommit.csv").exists());
}

/// A second Ctrl-C stops at once, and the warning gives the one command that commits the
/// offsets the deleted group lost; run, it puts every one of them back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_twice_after_a_reset_deleted_its_group_says_how_to_commit_again() {
    let holding = HoldingBroker::start();
    let broker = &holding.broker;
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, other, group, mut reset) = a_reset_that_deleted_its_group(&holding, &db, &[]).await;
    reset.signal("INT", "Ctrl-C: finishing the reset first");
    send_signal("INT", &reset.child.id().to_string());
    let run = reset.finish().code(130);
    // The commit it had sent never reaches the broker.
    holding.drop_held();
    // Named as the undo plan was, relative to where the reset ran.
    let command =
        format!("inboxctl offsets reset --group {group} --from-file undo.recommit.csv --execute");
    assert_eq!(
        warnings(&run),
        [format!(
            "warning: Ctrl-C again: stopping now; group '{group}' was deleted, and its offsets \
             were sent but not answered; commit them with: {command}"
        )]
    );
    assert_has_no_offsets(broker, (&topic, &other, &group));

    commit_again(&db, broker, &command, (&topic, &other, &group));
}

/// A second Ctrl-C while the group's deletion is on its way: the warning cannot know whether
/// the broker deleted it, and says how to tell, and what to do in either case. Here the
/// deletion never arrives, and the group keeps its old offsets, as `offsets show` says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_twice_while_a_reset_deletes_its_group_says_how_to_tell() {
    let holding = HoldingBroker::start();
    let broker = &holding.broker;
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, other, group, mut reset) =
        a_reset_that_deletes_its_group(&holding, &db, DELETE_GROUPS, &[]).await;
    reset.signal("INT", "Ctrl-C: finishing the reset first");
    send_signal("INT", &reset.child.id().to_string());
    let run = reset.finish().code(130);
    holding.drop_held();
    assert_eq!(
        warnings(&run),
        [format!(
            "warning: Ctrl-C again: stopping now; the deletion of group '{group}' was sent but \
             not answered; if `inboxctl offsets show --group {group}` says the group does not \
             exist, it was deleted: commit its offsets with: inboxctl offsets reset --group \
             {group} --from-file undo.recommit.csv --execute; if it lists the old offsets, \
             nothing changed (undo.csv and undo.recommit.csv can go)"
        )]
    );
    assert_eq!(
        broker.committed(&group, &topic, 3),
        vec![Some(5), Some(7), Some(3)]
    );
    assert_eq!(broker.committed(&group, &other, 2), vec![None, Some(2)]);
    let shown = inboxctl(
        &db,
        broker,
        &["offsets", "show", "--group", &group, "--format", "json"],
    )
    .ok()
    .json();
    let committed: Vec<_> = shown["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["committed"].as_i64())
        .collect();
    assert_eq!(
        committed,
        [Some(5), Some(7), Some(3), None, Some(2)],
        "{shown}"
    );
}

/// The deletion of the group goes unanswered within --kafka-timeout: it may have gone
/// through, so the offsets to commit again stay written down, and the error says how to tell
/// and how to finish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_not_answered_keeps_the_offsets_to_commit_again() {
    let holding = HoldingBroker::start();
    let broker = &holding.broker;
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, other, group, reset) =
        a_reset_that_deletes_its_group(&holding, &db, DELETE_GROUPS, &["--kafka-timeout", "2s"])
            .await;
    let run = reset.finish().code(1);
    holding.drop_held();
    let error = run.stderr.lines().last().unwrap();
    assert!(
        error.starts_with("error: the deletion of the group was not answered ("),
        "{}",
        run.stderr
    );
    assert!(
        error.ends_with(&format!(
            "): the deletion of group '{group}' was sent but not answered; if `inboxctl offsets \
             show --group {group}` says the group does not exist, it was deleted: commit its \
             offsets with: inboxctl offsets reset --group {group} --from-file \
             undo.recommit.csv --execute; if it lists the old offsets, nothing changed (undo.csv \
             and undo.recommit.csv can go)"
        )),
        "{}",
        run.stderr
    );
    assert!(db.dir.path().join("undo.recommit.csv").exists());
    // Dropped unanswered here, the deletion changed nothing.
    assert_eq!(
        broker.committed(&group, &topic, 3),
        vec![Some(5), Some(7), Some(3)]
    );
    assert_eq!(broker.committed(&group, &other, 2), vec![None, Some(2)]);
}

/// Runs `command`, the one a reset stopped after deleting its group gave, and checks that
/// it commits every offset the group should have after [`a_reset_that_deleted_its_group`].
fn commit_again(db: &TestDb, broker: &Broker, command: &str, names: (&str, &str, &str)) {
    let (topic, other, group) = names;
    assert_eq!(
        std::fs::read_to_string(db.dir.path().join("undo.recommit.csv")).unwrap(),
        format!("topic,partition,offset\n{topic},0,4\n{topic},2,1\n{other},1,2\n")
    );
    let args: Vec<&str> = command.split(' ').skip(1).collect();
    inboxctl(db, broker, &args).ok();
    assert_eq!(
        broker.committed(group, topic, 3),
        vec![Some(4), None, Some(1)]
    );
    assert_eq!(broker.committed(group, other, 2), vec![None, Some(2)]);
}

/// The commit after the delete fails (the broker does not answer it within
/// --kafka-timeout): the error names the file of offsets to commit again, and the command it
/// gives puts every one of them back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_fails_after_the_group_was_deleted_says_how_to_commit_again() {
    let holding = HoldingBroker::start();
    let broker = &holding.broker;
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, other, group, reset) =
        a_reset_that_deleted_its_group(&holding, &db, &["--kafka-timeout", "2s"]).await;
    let run = reset.finish().code(1);
    holding.drop_held();
    let command =
        format!("inboxctl offsets reset --group {group} --from-file undo.recommit.csv --execute");
    let error = run.stderr.lines().last().unwrap();
    let (said, waited) = error
        .strip_suffix("s (--kafka-timeout is 2s a try)")
        .and_then(|e| e.rsplit_once(" in "))
        .unwrap_or_else(|| panic!("{error}"));
    assert_eq!(
        said,
        format!(
            "error: group '{group}' was deleted, and committing its offsets again was not \
             answered (they may or may not be committed; `inboxctl offsets show --group \
             {group}` tells); commit them with: {command}: the group coordinator did not answer \
             the commit"
        )
    );
    assert!(waited.parse::<f64>().unwrap() >= 2.0, "{error}");
    assert_has_no_offsets(broker, (&topic, &other, &group));
    commit_again(&db, broker, &command, (&topic, &other, &group));
}

/// The broker stops answering anything once the reset, its group deleted, sends the commit:
/// librdkafka then waited for a coordinator without end. The reset gives up after a few
/// times --kafka-timeout, and its error says how to commit the offsets again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_hangs_after_the_group_was_deleted_does_not_hang_the_reset() {
    let holding = HoldingBroker::start();
    let broker = &holding.broker;
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, other, group, reset) =
        a_reset_that_deleted_its_group(&holding, &db, &["--kafka-timeout", "2s"]).await;
    holding.hold_everything();
    let run = reset.finish().code(1);
    holding.drop_held();
    let command =
        format!("inboxctl offsets reset --group {group} --from-file undo.recommit.csv --execute");
    let error = run.stderr.lines().last().unwrap();
    assert!(
        error.starts_with(&format!(
            "error: group '{group}' was deleted, and committing its offsets again was not \
             answered (they may or may not be committed; `inboxctl offsets show --group \
             {group}` tells); commit them with: {command}: the group coordinator did not answer \
             the commit in "
        )),
        "{error}"
    );
    assert_has_no_offsets(broker, (&topic, &other, &group));
    commit_again(&db, broker, &command, (&topic, &other, &group));
}

/// A group at offsets 5 and 7 of a new topic of 2 partitions, and its reset `--to-earliest
/// --execute MORE`, held at its commit. Returns (topic, group, the reset).
async fn a_reset_to_the_earliest_held_at_its_commit(
    holding: &HoldingBroker,
    db: &TestDb,
    more_args: &[&str],
) -> (String, String, ResetUnderWay) {
    let broker = &holding.broker;
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 2).await;
    fill(broker, &topic, "e", &[6, 9]).await;
    broker.commit(&group, &topic, &[(0, 5), (1, 7)]);
    let mut args = vec![
        "--group",
        &group,
        "--topic",
        &topic,
        "--to-earliest",
        "--execute",
    ];
    args.extend_from_slice(more_args);
    let reset = ResetUnderWay::held_at_its_commit(db, holding, &args);
    (topic, group, reset)
}

/// SIGTERM while a reset's commit is on its way: the reset finishes, then exits 143.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_reset_lets_its_commit_finish() {
    let holding = HoldingBroker::start();
    let broker = &holding.broker;
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group, mut reset) =
        a_reset_to_the_earliest_held_at_its_commit(&holding, &db, &[]).await;
    reset.signal(
        "TERM",
        "SIGTERM: finishing the reset first (SIGTERM again stops at once)",
    );
    holding.release();
    let run = reset.finish().code(143);
    assert_eq!(
        warnings(&run),
        ["warning: stopped by SIGTERM: the reset was finished first"]
    );
    assert_eq!(broker.committed(&group, &topic, 2), at(&[0, 0]));
}

/// The broker answers the commit, then not the read of the offsets back: the error says that
/// the reset was applied, and how to look at the group, not that the reset failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_whose_offsets_cannot_be_read_back_says_it_was_applied() {
    let holding = HoldingBroker::start();
    let broker = &holding.broker;
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group, reset) =
        a_reset_to_the_earliest_held_at_its_commit(&holding, &db, &["--kafka-timeout", "2s"]).await;
    // The commit goes through; the reads after it wait.
    holding.hold(OFFSET_FETCH);
    let run = reset.finish().code(1);
    holding.release();
    let error = run.stderr.lines().last().unwrap();
    assert!(
        error.starts_with(&format!(
            "error: the reset of group '{group}' was applied, but its offsets could not be read \
             back to check it; check with `inboxctl offsets show --group {group}`: "
        )),
        "{error}"
    );
    assert_eq!(broker.committed(&group, &topic, 2), at(&[0, 0]));
}

/// Whether a thread of process `pid` waits for the other end of a FIFO to open it.
fn waits_on_a_fifo(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|task| {
        std::fs::read_to_string(task.path().join("wchan")).is_ok_and(|w| w == "wait_for_partner")
    })
}

/// A broker that stops answering once the undo plan is written: the commit cannot even find
/// the group's coordinator. The error says that no answer came (no refusal), that the
/// offsets may or may not have been committed, and how to check and undo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_no_coordinator_answers_says_the_outcome_is_unknown() {
    let broker = RestartableBroker::start();
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.broker.create_topic(&topic, 2).await;
    fill(&broker.broker, &topic, "e", &[6, 9]).await;
    broker.broker.commit(&group, &topic, &[(0, 5), (1, 7)]);
    // The undo plan goes to a FIFO: the reset, all of its planning done, waits there until
    // the test reads it, so the broker is paused before the commit starts, not racing it.
    let undo = db.dir.path().join("undo.csv");
    assert!(std::process::Command::new("mkfifo")
        .arg(&undo)
        .status()
        .unwrap()
        .success());
    let stderr_file = db.dir.path().join("reset.stderr");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("inboxctl"))
        .args(["offsets", "reset", "--group", &group, "--topic", &topic])
        .args(["--to-earliest", "--execute", "--undo-file", "undo.csv"])
        .args(["--kafka-timeout", "2s"])
        .env("DATABASE_URL", &db.url)
        .env("KAFKA_BROKERS", &broker.broker.address)
        .current_dir(db.dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr_file).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !waits_on_a_fifo(child.id()) {
        assert!(
            child.try_wait().unwrap().is_none() && Instant::now() < deadline,
            "the reset never came to write its undo plan:\n{}",
            std::fs::read_to_string(&stderr_file).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    broker.pause();
    assert_eq!(
        std::fs::read_to_string(&undo).unwrap(),
        format!("topic,partition,offset\n{topic},0,5\n{topic},1,7\n")
    );
    let code = wait_until(&mut child, Instant::now() + Duration::from_secs(120));
    broker.unpause();
    let stderr = std::fs::read_to_string(&stderr_file).unwrap();
    assert_eq!(code, Some(1), "{stderr}");
    let error = stderr.lines().last().unwrap();
    assert!(
        error.starts_with("error: the group coordinator did not answer the commit in "),
        "{error}"
    );
    assert!(
        error.ends_with(&format!(
            "s (--kafka-timeout is 2s a try): the new offsets of group '{group}' may or may not \
             have been committed; check with `inboxctl offsets show --group {group}`; the undo \
             plan undo.csv puts back the old ones: inboxctl offsets reset --group {group} \
             --from-file undo.csv --execute"
        )),
        "{error}"
    );
}

/// A group the brokers do not know (a typo, say) may be given offsets, as with
/// kafka-consumer-groups.sh, but not without a word: the dry run and --execute warn that
/// the reset creates it. Once it has offsets, it is known, and nothing is said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_of_a_group_the_brokers_do_not_know_warns_that_it_creates_it() {
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = (unique("orders"), unique("nope"));
    broker().create_topic(&topic, 2).await;
    fill(broker(), &topic, "e", &[3, 4]).await;
    let unknown = format!(
        "warning: consumer group '{group}' does not exist on {} (no committed offsets, unknown \
         to the coordinator);",
        broker().address
    );
    let dry = reset(&db, &group, &topic, &["--to-earliest"]).ok();
    assert_eq!(
        warnings(&dry),
        [format!(
            "{unknown} --execute creates it with these offsets; check --group if that is not meant"
        )]
    );
    let undo = db.dir.path().join("undo.csv");
    let run = execute_with_undo(&db, &group, &topic, &["--to-latest"], &undo).ok();
    assert_eq!(
        warnings(&run),
        [format!(
            "{unknown} this reset creates it with these offsets; check --group if that is not meant"
        )]
    );
    assert_eq!(broker().committed(&group, &topic, 2), at(&[3, 4]));
    let again = reset(&db, &group, &topic, &["--to-earliest"]).ok();
    assert_eq!(warnings(&again), Vec::<String>::new());
}

/// A new topic of 2 partitions holding 3 and 4 messages, and a new group committed at offset
/// 1 of each: (topic, group).
async fn a_group_at_offset_1_of_two_partitions() -> (String, String) {
    let (topic, group) = (unique("orders"), unique("billing"));
    broker().create_topic(&topic, 2).await;
    fill(broker(), &topic, "e", &[3, 4]).await;
    broker().commit(&group, &topic, &[(0, 1), (1, 1)]);
    (topic, group)
}

/// A negative --to-offset gets the tool's own usage error, not clap's "unexpected
/// argument"; `--export -` writes the plan to standard output, as CSV tools take `-`, and
/// leaves no file named `-`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negative_offsets_are_named_and_export_dash_is_standard_output() {
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = a_group_at_offset_1_of_two_partitions().await;
    let negative = reset(&db, &group, &topic, &["--to-offset", "-1"]).code(2);
    assert_eq!(
        negative.stderr,
        "error: --to-offset must be 0 or more, not -1\n"
    );
    let exported = reset(&db, &group, &topic, &["--to-offset", "2", "--export", "-"]).ok();
    assert_eq!(
        exported.stdout,
        format!("topic,partition,offset\n{topic},0,2\n{topic},1,2\n")
    );
    assert_eq!(
        exported.stderr,
        "Wrote the plan for 2 partition(s) to standard output\n"
    );
    assert!(!db.dir.path().join("-").exists());
    assert_eq!(broker().committed(&group, &topic, 2), at(&[1, 1]));
}

/// A full disk on stdout: `--export -` fails rather than say it wrote the plan, and
/// `--execute --format json` still applies the reset, reads it back and cleans up, then
/// fails naming what was done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_stdout_fails_the_export_and_after_a_reset_says_it_was_applied() {
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = a_group_at_offset_1_of_two_partitions().await;
    let to_full = |rest: &[&str]| {
        let mut args = vec!["offsets", "reset", "--group", &group, "--topic", &topic];
        args.extend_from_slice(rest);
        let mut command = db.command(&args);
        command.env("KAFKA_BROKERS", &broker().address).stdout(
            std::fs::File::options()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        );
        Run::from(command.output().unwrap())
    };
    let no_room = "could not write to standard output: No space left on device (os error 28)";
    let export = to_full(&["--to-offset", "2", "--export", "-"]).code(1);
    assert_eq!(export.stderr, format!("error: {no_room}\n"));
    let reset = to_full(&["--to-offset", "2", "--execute", "--format", "json"]).code(1);
    assert_eq!(
        reset.stderr.lines().last().unwrap(),
        format!("error: the reset was applied, and its offsets read back as planned: {no_room}")
    );
    assert_eq!(broker().committed(&group, &topic, 2), at(&[2, 2]));
    // A table, written line by line, says the same.
    let reset = to_full(&["--to-offset", "3", "--execute"]).code(1);
    assert_eq!(
        reset.stderr.lines().last().unwrap(),
        format!("error: the reset was applied, and its offsets read back as planned: {no_room}")
    );
    assert_eq!(broker().committed(&group, &topic, 2), at(&[3, 3]));
}
