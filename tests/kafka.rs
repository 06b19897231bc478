//! The Kafka side against the nisshi broker: offsets show, compare, safe prune and bad input.
//! Each scenario is produced by a consumer loop doing what a real service does.

mod common;

use common::kafka::*;
use common::*;

fn events(prefix: &str, partitions: i32, per_partition: usize) -> Vec<(i32, String)> {
    let mut list = Vec::new();
    for n in 0..per_partition {
        for partition in 0..partitions {
            list.push((partition, format!("{prefix}-p{partition}-{n}")));
        }
    }
    list
}

/// `compare -g GROUP -t TOPIC --format json`, with `--scan` when `scan`: its JSON, once its
/// exit code is found to be `code`.
fn compare_json(
    db: &TestDb,
    broker: &Broker,
    group: &str,
    topic: &str,
    scan: bool,
    code: i32,
) -> serde_json::Value {
    let mut args = vec!["compare", "-g", group, "-t", topic, "--format", "json"];
    if scan {
        args.push("--scan");
    }
    inboxctl(db, broker, &args).code(code).json()
}

/// `compare -g GROUP -t TOPIC --scan --format json` with `INBOXCTL_SCAN_LOAD_LIMIT` set to
/// `load_limit` ("0": the inbox is asked chunk by chunk, not loaded): its JSON, once its exit
/// code is found to be `code`.
fn compare_scan_json(
    db: &TestDb,
    broker: &Broker,
    group: &str,
    topic: &str,
    load_limit: &str,
    code: i32,
) -> serde_json::Value {
    let mut command = db.cmd();
    command
        .env("KAFKA_BROKERS", &broker.address)
        .env("INBOXCTL_SCAN_LOAD_LIMIT", load_limit)
        .args([
            "compare", "-g", group, "-t", topic, "--scan", "--format", "json",
        ]);
    Run::from(command.output().unwrap()).code(code).json()
}

fn inboxctl(db: &TestDb, broker: &Broker, args: &[&str]) -> Run {
    let mut command = db.cmd();
    command.env("KAFKA_BROKERS", &broker.address).args(args);
    Run::from(command.output().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_show_equals_what_the_consumer_committed() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 3).await;
    broker.produce(&topic, &events("e", 3, 10)).await;
    // A real consumer of the group reads everything and commits part of each partition.
    run_service(
        broker,
        &group,
        &topic,
        30,
        |_| Step::ProcessThenCommit,
        |_| async {},
    )
    .await;
    broker.commit(&group, &topic, &[(0, 4), (1, 7), (2, 10)]);

    let json = inboxctl(
        &db,
        broker,
        &["offsets", "show", "--group", &group, "--format", "json"],
    )
    .ok()
    .json();
    assert_eq!(json["group"], group.as_str());
    let rows: Vec<(String, i64, i64, i64, i64, i64)> = json["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["topic"].as_str().unwrap().to_string(),
                p["partition"].as_i64().unwrap(),
                p["committed"].as_i64().unwrap(),
                p["log_start"].as_i64().unwrap(),
                p["log_end"].as_i64().unwrap(),
                p["lag"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (topic.clone(), 0, 4, 0, 10, 6),
            (topic.clone(), 1, 7, 0, 10, 3),
            (topic.clone(), 2, 10, 0, 10, 0),
        ]
    );
    assert_eq!(json["topics"][0]["lag"], 9);
    assert_eq!(json["state"], "Empty");

    let table = inboxctl(
        &db,
        broker,
        &["offsets", "show", "-g", &group, "-t", &topic],
    )
    .ok();
    assert_eq!(
        table.table_rows()[1],
        [topic.as_str(), "1", "7", "0", "10", "3"]
    );
    assert!(
        table.stdout.contains(&format!("Total lag of {topic}: 9")),
        "{}",
        table.stdout
    );
}

/// A committed offset past the log end (a topic deleted and created again) is explained, as
/// kafka-consumer-groups.sh users would otherwise read a lag of 0 as caught up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_show_explains_a_committed_offset_past_the_log_end() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 2).await;
    broker.produce(&topic, &events("e", 2, 3)).await;
    broker.commit(&group, &topic, &[(0, 8), (1, 2)]);
    let run = inboxctl(&db, broker, &["offsets", "show", "-g", &group]).ok();
    assert_eq!(
        run.stderr,
        format!(
            "warning: {topic}:0: the committed offset 8 is past the log end 3 (a topic deleted \
             and created again, or another cluster's?); the group's next start there goes where \
             its auto.offset.reset says\n"
        )
    );
}

/// A topic's total lag counts only partitions with a committed offset: it is unknown where
/// none has one, and says how many it leaves out where some have none, as
/// kafka-consumer-groups.sh shows LAG "-" for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_show_says_which_lag_it_cannot_count() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, other, group) = (unique("orders"), unique("payments"), unique("billing"));
    broker.create_topic(&topic, 3).await;
    broker.create_topic(&other, 2).await;
    broker.produce(&topic, &events("e", 3, 10)).await;
    broker.produce(&other, &events("p", 2, 4)).await;
    broker.commit(&group, &topic, &[(0, 3)]);
    let json = inboxctl(
        &db,
        broker,
        &[
            "offsets", "show", "-g", &group, "-t", &topic, "-t", &other, "--format", "json",
        ],
    )
    .ok()
    .json();
    assert_eq!(
        json["topics"],
        serde_json::json!([
            {"topic": topic, "lag": 7, "partitions_without_commit": 2},
            {"topic": other, "lag": null, "partitions_without_commit": 2},
        ])
    );
    let table = inboxctl(
        &db,
        broker,
        &["offsets", "show", "-g", &group, "-t", &topic, "-t", &other],
    )
    .ok();
    let totals: Vec<&str> = table
        .stdout
        .lines()
        .filter(|line| line.starts_with("Total lag"))
        .collect();
    assert_eq!(
        totals,
        [
            format!(
                "Total lag of {topic}: 7 (2 partitions without a committed offset not counted)"
            ),
            format!("Total lag of {other}: - (no partition has a committed offset)"),
        ]
    );
}

/// Produces 3 partitions × 8 events and runs the service with `decide`; returns what it saw.
async fn scenario<D: FnMut(&Seen) -> Step>(
    db: &mut TestDb,
    topic: &str,
    group: &str,
    extra: &[(i32, String)],
    coordinates: bool,
    decide: D,
) -> Vec<Seen> {
    let broker = broker();
    db.run(&["migrate", "run"]).ok();
    broker.create_topic(topic, 3).await;
    let mut all = events(topic, 3, 8);
    all.extend_from_slice(extra);
    broker.produce(topic, &all).await;
    let pool = db.pool().await;
    let backend = db.backend;
    let (consumer, topic_name) = (group.to_string(), topic.to_string());
    run_service(broker, group, topic, all.len(), decide, move |seen| {
        record(
            pool.clone(),
            backend,
            consumer.clone(),
            topic_name.clone(),
            seen,
            coordinates,
        )
    })
    .await
}

async fn compare_clean_run_exits_zero(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    scenario(&mut db, &topic, &group, &[], true, |_| {
        Step::ProcessThenCommit
    })
    .await;
    for scan in [false, true] {
        let mut args = vec![
            "compare", "--group", &group, "--topic", &topic, "--format", "json",
        ];
        if scan {
            args.push("--scan");
        }
        let json = inboxctl(&db, broker(), &args).code(0).json();
        assert_eq!(
            (
                json["lost_total"].as_i64(),
                json["pending_total"].as_i64(),
                json["orphans_total"].as_i64()
            ),
            (Some(0), Some(0), Some(0))
        );
        for p in json["partitions"].as_array().unwrap() {
            assert_eq!(
                (
                    p["committed"].as_i64(),
                    p["inbox_rows"].as_i64(),
                    p["max_inbox_offset"].as_i64()
                ),
                (Some(8), Some(8), Some(7))
            );
        }
    }
    let table = inboxctl(&db, broker(), &["compare", "-g", &group, "-t", &topic]).code(0);
    assert!(
        table.stdout.contains("OK: nothing lost"),
        "{}",
        table.stdout
    );
}

/// A PostgreSQL inbox whose event_id is a uuid: compare loads event ids as text, so it
/// says what to change before it reads anything, with or without --scan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_refuses_a_uuid_event_id_column_on_postgres() {
    let broker = broker();
    let mut db = TestDb::new(Backend::Postgres).await;
    db.uuid_inbox().await;
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 1).await;
    broker.commit(&group, &topic, &[(0, 0)]);
    for scan in [&[][..], &["--scan"]] {
        let mut args = vec!["compare", "-g", &group, "-t", &topic];
        args.extend_from_slice(scan);
        let run = inboxctl(&db, broker, &args).code(1);
        assert_refuses_uuid_event_ids(&run);
    }
}

/// compare reads a group's partitions through the coordinates index alone, even where
/// PostgreSQL's statistics do not know the group's consumer (one row, it estimates) and
/// another index starting with consumer was created after it: on a tie of costs, the index
/// created last wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_reads_a_consumer_the_statistics_do_not_know_through_its_coordinates() {
    let mut db = TestDb::new(Backend::Postgres).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    db.run(&["migrate", "run"]).ok();
    db.exec("DROP INDEX processed_messages_consumer_processed_at_idx")
        .await;
    db.exec("CREATE INDEX processed_messages_consumer_processed_at_idx ON processed_messages (consumer, processed_at)")
        .await;
    db.analyse_with_one_known_consumer().await;
    db.exec(&format!(
        "INSERT INTO processed_messages (consumer, event_id, topic, \"partition\", \"offset\") \
         SELECT '{group}', 'earlier-' || i, 'earlier', 0, i FROM generate_series(1, 20000) AS i"
    ))
    .await;
    scenario(&mut db, &topic, &group, &[], true, |_| {
        Step::ProcessThenCommit
    })
    .await;
    let read = db
        .index_tuples_read_by(|db| {
            inboxctl(db, broker(), &["compare", "-g", &group, "-t", &topic]).code(0)
        })
        .await;
    assert_eq!(read["processed_messages_pkey"], 0, "{read:?}");
    assert_eq!(
        read["processed_messages_consumer_processed_at_idx"], 0,
        "{read:?}"
    );
    // The 8 rows of each of the 3 partitions, each read by three queries at most; not the
    // 20,000 earlier rows.
    assert!(
        read["processed_messages_consumer_coordinates_idx"] <= 72,
        "{read:?}"
    );
}

async fn compare_crash_between_effect_and_commit_is_pending_redelivery(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    // Partition 1 crashes after the effect of offset 5: offsets 5, 6, 7 are processed but
    // never committed.
    scenario(&mut db, &topic, &group, &[], true, |seen| {
        if seen.partition == 1 && seen.offset >= 5 {
            Step::ProcessNoCommit
        } else {
            Step::ProcessThenCommit
        }
    })
    .await;
    for scan in [false, true] {
        let mut args = vec![
            "compare", "--group", &group, "--topic", &topic, "--format", "json",
        ];
        if scan {
            args.push("--scan");
        }
        let json = inboxctl(&db, broker(), &args).code(0).json();
        assert_eq!(json["lost_total"], 0);
        let p1 = &json["partitions"][1];
        assert_eq!(p1["committed"], 5);
        assert_eq!(
            p1["pending_redelivery"],
            serde_json::json!([5, 6, 7]),
            "scan: {scan}"
        );
        assert_eq!(
            json["partitions"][0]["pending_redelivery"],
            serde_json::json!([])
        );
    }
}

async fn compare_commit_before_effect_names_the_lost_events(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    let seen = scenario(&mut db, &topic, &group, &[], true, |seen| {
        if seen.partition == 2 && (seen.offset == 3 || seen.offset == 6) {
            Step::CommitNoProcess
        } else {
            Step::ProcessThenCommit
        }
    })
    .await;
    let lost_ids: Vec<&str> = seen
        .iter()
        .filter(|s| s.partition == 2 && (s.offset == 3 || s.offset == 6))
        .map(|s| s.event_id.as_str())
        .collect();

    let by_offset = compare_json(&db, broker(), &group, &topic, false, 3);
    assert_eq!(by_offset["lost_total"], 2);
    let named = |json: &serde_json::Value| -> Vec<(i64, String)> {
        json["partitions"][2]["lost"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["offset"].as_i64().unwrap(),
                    l["event_id"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    // Reading the offsets without a row names their events, as the scan does.
    assert_eq!(
        named(&by_offset),
        vec![(3, lost_ids[0].to_string()), (6, lost_ids[1].to_string())]
    );
    // The same when each offset without a row is read on its own, one after the other.
    let gap_by_gap = Run::from(
        db.cmd()
            .env("KAFKA_BROKERS", &broker().address)
            .env("INBOXCTL_SPAN_MERGE", "1")
            .args(["compare", "-g", &group, "-t", &topic, "--format", "json"])
            .output()
            .unwrap(),
    )
    .code(3)
    .json();
    assert_eq!(gap_by_gap["partitions"], by_offset["partitions"]);

    let scanned = compare_json(&db, broker(), &group, &topic, true, 3);
    assert_eq!(
        named(&scanned),
        vec![(3, lost_ids[0].to_string()), (6, lost_ids[1].to_string())]
    );
    assert_eq!(scanned["messages_scanned"], 24);
    // The same answer when the inbox is asked chunk by chunk instead of loaded.
    let chunked = compare_scan_json(&db, broker(), &group, &topic, "0", 3);
    assert_eq!(chunked["partitions"], scanned["partitions"]);

    let table = inboxctl(
        &db,
        broker(),
        &["compare", "-g", &group, "-t", &topic, "--scan"],
    )
    .code(3);
    assert!(
        table.stdout.contains(&format!(
            "Lost in partition 2 (committed, never processed): 3 ({}), 6 ({})",
            lost_ids[0], lost_ids[1]
        )),
        "{}",
        table.stdout
    );
    assert!(
        table.stdout.contains("FINDINGS: 2 lost, 0 orphaned"),
        "{}",
        table.stdout
    );
}

/// A message whose event id PostgreSQL cannot store (a NUL character) is lost when the group
/// committed past it: looked up chunk by chunk, it is not asked of the server, which would
/// refuse the whole chunk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_scan_takes_an_id_postgres_cannot_store_for_lost() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    let (topic, group) = (unique("orders"), unique("billing"));
    broker().create_topic(&topic, 1).await;
    let ids = ["a".to_string(), "n\0b".to_string(), "c".to_string()];
    let events: Vec<(i32, String)> = ids.iter().map(|id| (0, id.clone())).collect();
    broker().produce(&topic, &events).await;
    db.exec(&format!(
        "INSERT INTO processed_messages (consumer, event_id, topic, \"partition\", \"offset\") \
         VALUES ('{group}', 'a', '{topic}', 0, 0), ('{group}', 'c', '{topic}', 0, 2)"
    ))
    .await;
    broker().commit(&group, &topic, &[(0, 3)]);
    let json = compare_scan_json(&db, broker(), &group, &topic, "0", 3);
    assert_eq!(json["lost_total"], 1, "{json}");
    assert_eq!(json["partitions"][0]["lost"][0]["offset"], 1, "{json}");
    // In a table, the NUL is shown escaped, not written raw to the terminal.
    let table = inboxctl(
        &db,
        broker(),
        &["compare", "-g", &group, "-t", &topic, "--scan"],
    )
    .code(3);
    assert!(
        table
            .stdout
            .contains("Lost in partition 0 (committed, never processed): 1 (n\\u{0}b)\n"),
        "{}",
        table.stdout
    );
}

async fn compare_scan_finds_producer_duplicates(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    // The producer retried: the same event id again, later in partition 0 and in partition 1.
    let first = format!("{topic}-p0-2");
    let extra = vec![(0, first.clone()), (1, first.clone())];
    scenario(&mut db, &topic, &group, &extra, true, |_| {
        Step::ProcessThenCommit
    })
    .await;

    let json = compare_json(&db, broker(), &group, &topic, true, 0);
    assert_eq!(json["lost_total"], 0);
    assert_eq!(
        json["duplicates"],
        serde_json::json!([{"topic": topic, "event_id": first, "positions": [[0, 2], [0, 8], [1, 8]]}])
    );
    // 3 partitions of 8, and the two deliveries again.
    assert_eq!(json["messages_scanned"], 26);
    // Without --scan, the offsets the inbox absorbed have no row of their own; reading them
    // finds an event the inbox has: not lost.
    let by_offset = compare_json(&db, broker(), &group, &topic, false, 0);
    assert_eq!(by_offset["lost_total"], 0);
    // Nothing was scanned: duplicates and the count are unknown, not none.
    assert_eq!(by_offset.get("duplicates"), Some(&serde_json::Value::Null));
    assert_eq!(
        by_offset.get("messages_scanned"),
        Some(&serde_json::Value::Null)
    );
    // Which two deliveries of the event lack a row depends on which the service met first.
    let (found, empty): (i64, i64) = by_offset["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["found_by_event_id"].as_i64().unwrap(),
                p["empty_offsets"].as_i64().unwrap(),
            )
        })
        .fold((0, 0), |(f, e), (pf, pe)| (f + pf, e + pe));
    assert_eq!((found, empty), (2, 0), "{by_offset:#}");
}

async fn compare_scan_on_rows_without_coordinates(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    // A consumer that records no coordinates: one event lost, two processed but not committed.
    let seen = scenario(&mut db, &topic, &group, &[], false, |seen| {
        match (seen.partition, seen.offset) {
            (0, 4) => Step::CommitNoProcess,
            (1, 6) | (1, 7) => Step::ProcessNoCommit,
            _ => Step::ProcessThenCommit,
        }
    })
    .await;
    let lost_id = seen
        .iter()
        .find(|s| s.partition == 0 && s.offset == 4)
        .unwrap()
        .event_id
        .clone();
    let json = compare_json(&db, broker(), &group, &topic, true, 3);
    assert_eq!(json["lost_total"], 1);
    assert_eq!(
        json["partitions"][0]["lost"][0]["event_id"],
        lost_id.as_str()
    );
    assert_eq!(
        json["partitions"][1]["pending_redelivery"],
        serde_json::json!([6, 7])
    );
    assert_eq!(
        json["partitions"][0]["inbox_rows"], 0,
        "rows have no coordinates"
    );
    // By offset, none of the committed 8 + 6 + 8 offsets has a row there; reading them finds
    // the events of 21 in the inbox all the same, and the one lost.
    let by_offset = compare_json(&db, broker(), &group, &topic, false, 3);
    assert_eq!(
        by_offset["partitions"][0]["lost"],
        serde_json::json!([{"partition": 0, "offset": 4, "event_id": lost_id}])
    );
    let found: Vec<i64> = (0..3)
        .map(|p| {
            by_offset["partitions"][p]["found_by_event_id"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(
        (by_offset["lost_total"].as_i64(), found),
        (Some(1), vec![7, 6, 8])
    );

    // --event-id-from decides what an event's id is. The inbox holds the ids of the JSON
    // field: read from there, the findings are those above; taken as coordinates, no
    // committed message is in the inbox; from a header no message has, none has an id.
    let scan_by = |source: &str| {
        inboxctl(
            &db,
            broker(),
            &[
                "compare",
                "-g",
                &group,
                "-t",
                &topic,
                "--scan",
                "--event-id-from",
                source,
                "--format",
                "json",
            ],
        )
    };
    let by_json = scan_by("json:/event_id").code(3).json();
    assert_eq!(
        (
            &by_json["lost_total"],
            &by_json["partitions"][1]["pending_redelivery"]
        ),
        (&serde_json::json!(1), &serde_json::json!([6, 7]))
    );
    let by_coordinates = scan_by("coordinates").code(3).json();
    assert_eq!(by_coordinates["lost_total"], 22);
    assert_eq!(
        by_coordinates["partitions"][1]["pending_redelivery"],
        serde_json::json!([])
    );
    // Without ids nothing can be called lost; the run says why it found nothing.
    let by_header = scan_by("header:no-such-header").ok();
    assert_eq!(
        by_header.stderr.trim(),
        "warning: none of the 24 messages scanned carries an event id where --event-id-from \
         (header:no-such-header) looks, so none could be checked against the inbox"
    );
    let by_header = by_header.json();
    let without_id: Vec<&serde_json::Value> = (0..3)
        .map(|p| &by_header["partitions"][p]["missing_event_id"])
        .collect();
    assert_eq!(
        without_id,
        [
            &serde_json::json!(8),
            &serde_json::json!(8),
            &serde_json::json!(8)
        ]
    );
}

async fn compare_finds_orphans_after_the_topic_is_recreated(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    scenario(&mut db, &topic, &group, &[], true, |_| {
        Step::ProcessThenCommit
    })
    .await;
    // The topic is deleted and created again, empty: the inbox now points past its end.
    let admin: rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext> =
        broker().config().create().unwrap();
    let deleted = admin
        .delete_topics(&[&topic], &rdkafka::admin::AdminOptions::new())
        .await
        .unwrap();
    deleted[0].as_ref().expect("delete topic");
    broker().create_topic(&topic, 3).await;
    broker()
        .produce(&topic, &[(0, "fresh-0".to_string())])
        .await;

    let json = compare_json(&db, broker(), &group, &topic, false, 3);
    assert_eq!(json["partitions"][0]["log_end"], 1);
    assert_eq!(
        json["partitions"][0]["orphans"],
        serde_json::json!([1, 2, 3, 4, 5, 6, 7])
    );
    assert_eq!(
        json["partitions"][1]["orphans"],
        serde_json::json!([0, 1, 2, 3, 4, 5, 6, 7])
    );
    assert_eq!(json["orphans_total"], 7 + 8 + 8);
}

/// Kafka leaves offsets that hold no message for a consumer: the marker ending each
/// transaction in each partition it wrote to, the events of an aborted transaction, and the
/// records compaction removed. They have no inbox row, yet nothing was lost there. nisshi
/// 0.8.1 refuses transactional producers, so compaction makes the gaps here; a consumer
/// cannot tell them from markers (the offset delivers nothing). Without `--scan`, compare
/// reads the offsets without a row and finds no message at the gaps; the one event
/// committed before its effect stays lost.
async fn compare_by_offset_skips_offsets_without_a_message(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let (topic, group) = (unique("customers"), unique("billing"));
    let broker = sweeping_broker();
    db.run(&["migrate", "run"]).ok();
    broker
        .create_topic_with(&topic, 1, &[("cleanup.policy", "compact")])
        .await;
    // Keyed by customer, each update an event of its own: compaction keeps the last update
    // of each customer, so offsets 1, 2 and 3 go. (nisshi moves the log start up to the
    // first record left, where Kafka keeps it: the gaps are kept in the middle here.)
    let updates = [
        ("c0", "u0"),
        ("c1", "u1"),
        ("c2", "u2"),
        ("c1", "u3"),
        ("c2", "u4"),
        ("c1", "u5"),
        ("c3", "u6"),
    ];
    let producer: rdkafka::producer::FutureProducer = broker.config().create().unwrap();
    for (key, update) in updates {
        let event_id = format!("{topic}-{update}");
        let body = serde_json::json!({"event_id": event_id}).to_string();
        producer
            .send(
                rdkafka::producer::FutureRecord::to(&topic)
                    .partition(0)
                    .key(key)
                    .payload(&body)
                    .headers(rdkafka::message::OwnedHeaders::new().insert(
                        rdkafka::message::Header {
                            key: "event_id",
                            value: Some(event_id.as_bytes()),
                        },
                    )),
                std::time::Duration::from_secs(30),
            )
            .await
            .expect("produce");
    }
    let remaining = wait_for_compaction(&broker, &topic, 4).await;
    assert_eq!(remaining, vec![0, 4, 5, 6]);
    let lost_id = format!("{topic}-u5");
    let pool = db.pool().await;
    let backend = db.backend;
    run_service(
        &broker,
        &group,
        &topic,
        4,
        |seen| match seen.event_id == lost_id {
            true => Step::CommitNoProcess,
            false => Step::ProcessThenCommit,
        },
        recording(pool, backend, &group, &topic),
    )
    .await;

    for scan in [false, true] {
        let json = compare_json(&db, &broker, &group, &topic, scan, 3);
        let p0 = &json["partitions"][0];
        assert_eq!(
            (p0["committed"].as_i64(), p0["log_end"].as_i64()),
            (Some(7), Some(7))
        );
        assert_eq!(
            (&json["lost_total"], &p0["lost"]),
            (
                &serde_json::json!(1),
                &serde_json::json!([{"partition": 0, "offset": 5, "event_id": lost_id}])
            ),
            "scan: {scan}"
        );
        // Counted by offset only: the scan never looks at offsets.
        assert_eq!(
            p0["empty_offsets"],
            if scan { 0 } else { 3 },
            "scan: {scan} {json:#}"
        );
    }
    let table = inboxctl(&db, &broker, &["compare", "-g", &group, "-t", &topic]).code(3);
    for line in [
        format!("Lost in partition 0 (committed, never processed): 5 ({lost_id})"),
        "Not lost in partition 0, offsets without an inbox row: 3 hold no message (transaction markers, aborted or compacted records)".to_string(),
        "FINDINGS: 1 lost, 0 orphaned".to_string(),
    ] {
        assert!(table.stdout.contains(&line), "{line}\n{}", table.stdout);
    }
}

/// Reads the topic's partition 0 until it holds `count` messages, and returns their offsets.
async fn wait_for_compaction(broker: &Broker, topic: &str, count: usize) -> Vec<i64> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::Message;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let reader: BaseConsumer = broker.config().set("group.id", "probe").create().unwrap();
        let (_, end) = reader
            .fetch_watermarks(topic, 0, std::time::Duration::from_secs(10))
            .unwrap();
        let mut assignment = rdkafka::TopicPartitionList::new();
        assignment
            .add_partition_offset(topic, 0, rdkafka::Offset::Beginning)
            .unwrap();
        reader.assign(&assignment).unwrap();
        let mut offsets = Vec::new();
        while offsets.last().is_none_or(|o| o + 1 < end) {
            match reader.poll(std::time::Duration::from_secs(5)) {
                Some(Ok(message)) => offsets.push(message.offset()),
                _ => break,
            }
        }
        if offsets.len() == count {
            return offsets;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "compaction left {offsets:?} after 60s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// An inbox row of `group` at `partition`:`offset` of `topic`, beside what the service wrote.
async fn extra_row(db: &mut TestDb, group: &str, topic: &str, event_id: &str, at: (i32, i64)) {
    let seen = Seen {
        event_id: event_id.to_string(),
        partition: at.0,
        offset: at.1,
    };
    record(
        db.pool().await,
        db.backend,
        group.to_string(),
        topic.to_string(),
        seen,
        true,
    )
    .await;
}

/// Two rows at one offset (a recreated topic reused it, or the event id's extraction
/// changed) stand for one offset: they must not make up for an offset that has no row, nor
/// repeat an offset among the pending or the orphans.
async fn compare_counts_offsets_not_rows(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    // Partition 0: offset 3 committed, never processed. Partition 1: 6 and 7 processed, not
    // committed.
    scenario(&mut db, &topic, &group, &[], true, |seen| {
        match (seen.partition, seen.offset) {
            (0, 3) => Step::CommitNoProcess,
            (1, 6) | (1, 7) => Step::ProcessNoCommit,
            _ => Step::ProcessThenCommit,
        }
    })
    .await;
    // A second row at partition 0's offset 4, beside the missing 3: the offsets up to the
    // committed 8 have as many rows as offsets, one of them is lost all the same.
    extra_row(&mut db, &group, &topic, "again-0-4", (0, 4)).await;
    let lost_only = compare_json(&db, broker(), &group, &topic, false, 3);
    assert_eq!(
        (
            &lost_only["lost_total"],
            &lost_only["orphans_total"],
            &lost_only["partitions"][0]["lost"]
        ),
        (
            &serde_json::json!(1),
            &serde_json::json!(0),
            &serde_json::json!([{"partition": 0, "offset": 3, "event_id": format!("{topic}-p0-3")}])
        )
    );
    // A second row at partition 1's offset 7, pending; two rows at offset 12 of partition
    // 2, past its end (8).
    for (event_id, at) in [
        ("again-1-7", (1, 7)),
        ("past-2-12", (2, 12)),
        ("past-again-2-12", (2, 12)),
    ] {
        extra_row(&mut db, &group, &topic, event_id, at).await;
    }

    for scan in [false, true] {
        let json = compare_json(&db, broker(), &group, &topic, scan, 3);
        let p = &json["partitions"];
        let lost: Vec<i64> = p[0]["lost"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["offset"].as_i64().unwrap())
            .collect();
        assert_eq!(lost, vec![3], "scan: {scan}");
        assert_eq!(
            (&p[0]["lost_count"], &json["lost_total"]),
            (&serde_json::json!(1), &serde_json::json!(1)),
            "scan: {scan}"
        );
        // INBOX ROWS counts rows: 7 of the service and the second one at offset 4.
        assert_eq!(p[0]["inbox_rows"], 8, "scan: {scan}");
        assert_eq!(p[1]["committed"], 6);
        assert_eq!(
            (&p[1]["pending_redelivery"], &json["pending_total"]),
            (&serde_json::json!([6, 7]), &serde_json::json!(2)),
            "scan: {scan}"
        );
        assert_eq!(
            (&p[2]["orphans"], &json["orphans_total"]),
            (&serde_json::json!([12]), &serde_json::json!(1)),
            "scan: {scan}"
        );
        for partition in 1..3 {
            assert_eq!(p[partition]["lost_count"], 0, "scan: {scan}");
        }
    }

    let table = inboxctl(&db, broker(), &["compare", "-g", &group, "-t", &topic]).code(3);
    let rows = table.table_rows();
    // PARTITION … INBOX ROWS, MAX INBOX OFFSET, PENDING, LOST, ORPHANS
    assert_eq!(rows[0], ["0", "8", "0", "8", "8", "7", "0", "1", "0"]);
    assert_eq!(rows[1], ["1", "6", "0", "8", "9", "7", "2", "0", "0"]);
    assert_eq!(rows[2], ["2", "8", "0", "8", "10", "12", "0", "0", "1"]);
    for line in [
        &format!("Lost in partition 0 (committed, never processed): 3 ({topic}-p0-3)\n"),
        "Pending redelivery in partition 1 (processed, not committed): offsets 6, 7\n",
        "Orphans in partition 2 (inbox rows at or past the log end 8): offsets 12\n",
        "FINDINGS: 1 lost, 1 orphaned; 2 pending redelivery",
    ] {
        assert!(table.stdout.contains(line), "{line}\n{}", table.stdout);
    }
}

/// Rows in partitions the topic does not have (from another cluster, or a topic recreated
/// with fewer partitions) point past any log end: orphans.
async fn compare_finds_orphans_in_partitions_the_topic_lacks(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    scenario(&mut db, &topic, &group, &[], true, |_| {
        Step::ProcessThenCommit
    })
    .await;
    for (event_id, at) in [
        ("p7-3", (7, 3)),
        ("p7-3-again", (7, 3)),
        ("p7-5", (7, 5)),
        ("p-minus-1", (-1, 0)),
    ] {
        extra_row(&mut db, &group, &topic, event_id, at).await;
    }
    // Another consumer's and another topic's rows there are not this comparison's.
    let other_topic = unique("other");
    extra_row(&mut db, "someone-else", &topic, "x", (9, 1)).await;
    extra_row(&mut db, &group, &other_topic, "y", (9, 1)).await;

    for scan in [false, true] {
        let json = compare_json(&db, broker(), &group, &topic, scan, 3);
        let found: Vec<(i64, bool, i64, serde_json::Value)> = json["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["partition"].as_i64().unwrap(),
                    p["in_topic"].as_bool().unwrap(),
                    p["inbox_rows"].as_i64().unwrap(),
                    p["orphans"].clone(),
                )
            })
            .collect();
        let none = serde_json::json!([]);
        assert_eq!(
            found,
            vec![
                (-1, false, 1, serde_json::json!([0])),
                (0, true, 8, none.clone()),
                (1, true, 8, none.clone()),
                (2, true, 8, none.clone()),
                (7, false, 3, serde_json::json!([3, 5])),
            ],
            "scan: {scan}"
        );
        assert_eq!(
            (&json["orphans_total"], &json["lost_total"]),
            (&serde_json::json!(3), &serde_json::json!(0)),
            "scan: {scan}"
        );
    }
    let table = inboxctl(&db, broker(), &["compare", "-g", &group, "-t", &topic]).code(3);
    assert_eq!(
        table.table_rows()[4],
        ["7", "-", "0", "0", "3", "5", "0", "0", "2"]
    );
    for line in [
        "Orphans in partition 7 (the topic has no such partition): offsets 3, 5\n",
        "Orphans in partition -1 (the topic has no such partition): offsets 0\n",
        "FINDINGS: 0 lost, 3 orphaned",
    ] {
        assert!(table.stdout.contains(line), "{line}\n{}", table.stdout);
    }
}

/// Without --topic, compare takes every topic the group has committed offsets for, each in
/// a section of its own, and sums the findings; --topic narrows it to those named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_takes_every_topic_the_group_committed_on() {
    let broker = broker();
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let group = unique("billing");
    // Names in the order compare reports them.
    let (orders, payments, audit) = (unique("a-orders"), unique("b-payments"), unique("c-audit"));
    for (topic, partitions) in [(&orders, 2), (&payments, 1), (&audit, 1)] {
        broker.create_topic(topic, partitions).await;
        broker.produce(topic, &events(topic, partitions, 4)).await;
    }
    // orders: everything committed, offset 2 of partition 1 never processed. payments:
    // committed up to 2, offset 2 processed all the same (pending). audit: processed, never
    // committed by the group, so not one of its topics.
    let mut rows = vec![];
    for n in 0..4 {
        rows.push((&orders, 0, n));
        if n != 2 {
            rows.push((&orders, 1, n));
        }
        if n <= 2 {
            rows.push((&payments, 0, n));
        }
        rows.push((&audit, 0, n));
    }
    for (topic, partition, offset) in rows {
        let event_id = format!("{topic}-p{partition}-{offset}");
        extra_row(&mut db, &group, topic, &event_id, (partition, offset)).await;
    }
    broker.commit(&group, &orders, &[(0, 4), (1, 4)]);
    broker.commit(&group, &payments, &[(0, 2)]);

    let summary = |json: &serde_json::Value| {
        let partitions: Vec<(String, i64, i64, serde_json::Value, serde_json::Value)> = json
            ["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["topic"].as_str().unwrap().to_string(),
                    p["partition"].as_i64().unwrap(),
                    p["inbox_rows"].as_i64().unwrap(),
                    p["lost"].clone(),
                    p["pending_redelivery"].clone(),
                )
            })
            .collect();
        (
            json["topics"].clone(),
            partitions,
            json["lost_total"].clone(),
            json["pending_total"].clone(),
        )
    };
    let lost =
        serde_json::json!([{"partition": 1, "offset": 2, "event_id": format!("{orders}-p1-2")}]);
    let none = serde_json::json!([]);
    let both = (
        serde_json::json!([orders, payments]),
        vec![
            (orders.clone(), 0, 4, none.clone(), none.clone()),
            (orders.clone(), 1, 3, lost.clone(), none.clone()),
            (payments.clone(), 0, 3, none.clone(), serde_json::json!([2])),
        ],
        serde_json::json!(1),
        serde_json::json!(1),
    );
    for scan in [false, true] {
        let mut args = vec!["compare", "-g", &group, "--format", "json"];
        if scan {
            args.push("--scan");
        }
        let json = inboxctl(&db, broker, &args).code(3).json();
        assert_eq!(summary(&json), both, "scan: {scan}");
        // Without --scan nothing was scanned, and no duplicate looked for: null, not 0 and [].
        let (scanned, duplicates) = match scan {
            true => (serde_json::json!(12), serde_json::json!([])),
            false => (serde_json::Value::Null, serde_json::Value::Null),
        };
        assert_eq!(json.get("messages_scanned"), Some(&scanned), "scan: {scan}");
        assert_eq!(json.get("duplicates"), Some(&duplicates), "scan: {scan}");
        // The inbox's topic where the group never committed is named, not compared.
        assert_eq!(json["uncompared_topics"], serde_json::json!([audit]));
        let named = inboxctl(
            &db,
            broker,
            &[
                &args[..],
                &["-t", &payments, "-t", &orders, "-t", &payments],
            ]
            .concat(),
        )
        .code(3)
        .json();
        assert_eq!(summary(&named), both, "scan: {scan}");
        // Topics named are what was asked for: no others are looked for.
        assert_eq!(named["uncompared_topics"], serde_json::json!([]));
    }
    let payments_only = compare_json(&db, broker, &group, &payments, false, 0);
    assert_eq!(
        summary(&payments_only),
        (
            serde_json::json!([payments]),
            vec![(payments.clone(), 0, 3, none.clone(), serde_json::json!([2]))],
            serde_json::json!(0),
            serde_json::json!(1),
        )
    );

    // An inbox consumer without rows there: everything committed is lost, and the warning
    // asks whether the consumer's name is right.
    let nobody = inboxctl(
        &db,
        broker,
        &[
            "compare",
            "-g",
            &group,
            "-t",
            &payments,
            "--consumer",
            "nobody",
        ],
    )
    .code(3);
    assert!(
        nobody.stdout.contains("FINDINGS: 2 lost, 0 orphaned"),
        "{}",
        nobody.stdout
    );
    assert_eq!(
        nobody.stderr,
        "warning: inbox consumer 'nobody' has no rows; if the application records its rows under another name, give it with --consumer (`inboxctl inspect` lists the consumers)\n"
    );
    // A topic named where the group committed nothing: all its rows are pending.
    let audit_only = compare_json(&db, broker, &group, &audit, false, 0);
    assert_eq!(
        summary(&audit_only),
        (
            serde_json::json!([audit]),
            vec![(
                audit.clone(),
                0,
                4,
                none.clone(),
                serde_json::json!([0, 1, 2, 3])
            )],
            serde_json::json!(0),
            serde_json::json!(4),
        )
    );
    // A group the coordinator knows that never committed has no topic to compare.
    let idle = unique("idle");
    run_service(
        broker,
        &idle,
        &audit,
        4,
        |_| Step::ProcessNoCommit,
        |_| async {},
    )
    .await;
    let refused = inboxctl(&db, broker, &["compare", "-g", &idle]).code(1);
    assert_eq!(
        refused.stderr,
        format!(
            "error: consumer group '{idle}' has no committed offsets on {}: there is nothing to compare; name the topic with --topic\n",
            broker.address
        )
    );
    // The same, for an inbox consumer with rows: its topics are named.
    let refused = inboxctl(&db, broker, &["compare", "-g", &idle, "--consumer", &group]).code(1);
    assert_eq!(
        refused.stderr,
        format!(
            "error: consumer group '{idle}' has no committed offsets on {}: there is nothing to compare; name the topic with --topic (the inbox of consumer '{group}' holds rows of topics '{orders}', '{payments}', '{audit}')\n",
            broker.address
        )
    );

    // The table: one section per topic, in order, and one verdict for all.
    let table = inboxctl(&db, broker, &["compare", "-g", &group, "--scan"]).code(3);
    let at = |line: &str| {
        table
            .stdout
            .find(line)
            .unwrap_or_else(|| panic!("{line}\n{}", table.stdout))
    };
    let sections = [
        at(&format!("Group '{group}' (Empty) against inbox consumer '{group}' on topic '{orders}', 8 messages scanned\n")),
        at(&format!("Lost in partition 1 (committed, never processed): 2 ({orders}-p1-2)\n\nGroup")),
        at(&format!("Group '{group}' (Empty) against inbox consumer '{group}' on topic '{payments}', 4 messages scanned\n")),
        at("Pending redelivery in partition 0 (processed, not committed): offsets 2\n"),
        at("FINDINGS: 1 lost, 0 orphaned; 1 pending redelivery; 0 duplicate event id(s)\n"),
    ];
    assert!(sections.is_sorted(), "{sections:?}\n{}", table.stdout);
    assert_eq!(
        table.stdout.matches("Group '").count(),
        2,
        "{}",
        table.stdout
    );
    // The consumer's ids are read once, for both topics, and the findings are the same.
    let verbose = inboxctl(&db, broker, &["-v", "compare", "-g", &group, "--scan"]).code(3);
    assert_eq!(verbose.stdout, table.stdout);
    assert_eq!(
        verbose.stderr.matches(" inbox ids in ").count(),
        1,
        "{}",
        verbose.stderr
    );
    assert_eq!(
        table.stderr,
        format!(
            "warning: the inbox of consumer '{group}' holds rows of topic '{audit}', where group '{group}' has no committed offsets, so they were not compared (the group never committed there, or its offsets expired); name them with --topic to compare them\n"
        )
    );
}

/// Inbox rows of a topic the brokers do not have (deleted, or of another cluster) are told
/// apart from those of a topic the group never committed on: `--topic` cannot compare them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_tells_topics_missing_from_the_brokers_apart() {
    let broker = broker();
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let group = unique("billing");
    let (orders, audit, gone) = (unique("a-orders"), unique("b-audit"), unique("c-gone"));
    for topic in [&orders, &audit] {
        broker.create_topic(topic, 1).await;
        broker.produce(topic, &events(topic, 1, 2)).await;
    }
    for topic in [&orders, &audit, &gone] {
        for offset in 0..2 {
            let event_id = format!("{topic}-p0-{offset}");
            extra_row(&mut db, &group, topic, &event_id, (0, offset)).await;
        }
    }
    broker.commit(&group, &orders, &[(0, 2)]);

    let run = inboxctl(&db, broker, &["compare", "-g", &group, "--format", "json"]).ok();
    let json = run.json();
    assert_eq!(
        (&json["uncompared_topics"], &json["missing_topics"]),
        (&serde_json::json!([audit]), &serde_json::json!([gone]))
    );
    assert_eq!(
        run.stderr,
        format!(
            "warning: the inbox of consumer '{group}' holds rows of topic '{audit}', where group '{group}' has no committed offsets, so they were not compared (the group never committed there, or its offsets expired); name them with --topic to compare them\n\
             warning: the inbox of consumer '{group}' holds rows of topic '{gone}', which does not exist on {}: rows left from a deleted topic or another cluster\n",
            broker.address
        )
    );
}

/// A group the coordinator does not know is an error with `--topic` too (a mistyped group
/// must not pass for one that committed nothing), and the error names the consumer's topics
/// in the inbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_of_an_unknown_group_names_the_inbox_topics() {
    let broker = broker();
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let (group, unknown) = (unique("billing"), unique("no-such-group"));
    let (orders, payments) = (unique("a-orders"), unique("b-payments"));
    broker.create_topic(&orders, 1).await;
    for topic in [&orders, &payments] {
        extra_row(&mut db, &group, topic, &format!("{topic}-0"), (0, 0)).await;
    }
    let unknown_group = format!(
        "error: consumer group '{unknown}' does not exist on {} (no committed offsets, unknown to the coordinator); `inboxctl offsets show` lists the groups there are",
        broker.address
    );
    let with_consumer = ["compare", "-g", &unknown, "--consumer", &group];
    for named in [&[][..], &["-t", &orders][..]] {
        let args: Vec<&str> = with_consumer.iter().chain(named).copied().collect();
        let refused = inboxctl(&db, broker, &args).code(1);
        assert_eq!(
            refused.stderr,
            format!(
                "{unknown_group} (the inbox of consumer '{group}' holds rows of topics '{orders}', '{payments}')\n"
            ),
            "{args:?}"
        );
    }
    // A consumer without rows: nothing to add.
    let refused = inboxctl(&db, broker, &["compare", "-g", &unknown, "-t", &orders]).code(1);
    assert_eq!(refused.stderr, format!("{unknown_group}\n"));
}

/// After a prune, each topic is checked from its own first offset that the prune could not
/// have reached: here `old`'s first four messages are ten days old, `new`'s are all recent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_checks_each_topic_from_where_the_prune_left_it() {
    let broker = broker();
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let group = unique("billing");
    let (old, new) = (unique("a-old"), unique("b-new"));
    let ids = |topic: &str, offsets: std::ops::Range<i64>| -> Vec<(i32, String)> {
        offsets.map(|n| (0, format!("{topic}-p0-{n}"))).collect()
    };
    let ten_days_ago = chrono::Utc::now() - chrono::Duration::days(10);
    broker.create_topic(&old, 1).await;
    broker
        .produce_at(
            &old,
            &ids(&old, 0..4),
            Some(ten_days_ago.timestamp_millis()),
        )
        .await;
    broker.produce(&old, &ids(&old, 4..6)).await;
    broker.create_topic(&new, 1).await;
    broker.produce(&new, &ids(&new, 0..6)).await;
    // The rows of old's 0-3 were pruned (7 days' retention); new's 2 was never processed.
    for (topic, offset) in [
        (&old, 4),
        (&old, 5),
        (&new, 0),
        (&new, 1),
        (&new, 3),
        (&new, 4),
        (&new, 5),
    ] {
        let event_id = format!("{topic}-p0-{offset}");
        extra_row(&mut db, &group, topic, &event_id, (0, offset)).await;
    }
    broker.commit(&group, &old, &[(0, 6)]);
    broker.commit(&group, &new, &[(0, 6)]);

    for scan in [false, true] {
        let mut args = vec![
            "compare",
            "-g",
            &group,
            "--pruned-before",
            "-7d",
            "--format",
            "json",
        ];
        if scan {
            args.push("--scan");
        }
        let json = inboxctl(&db, broker, &args).code(3).json();
        let found: Vec<(String, i64, i64, Vec<i64>)> = json["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let lost = p["lost"].as_array().unwrap();
                (
                    p["topic"].as_str().unwrap().to_string(),
                    p["checked_from"].as_i64().unwrap(),
                    p["not_checked"].as_i64().unwrap(),
                    lost.iter().map(|l| l["offset"].as_i64().unwrap()).collect(),
                )
            })
            .collect();
        assert_eq!(
            found,
            vec![(old.clone(), 4, 4, vec![]), (new.clone(), 0, 0, vec![2])],
            "scan: {scan}"
        );
    }
    // A group committed below where the prune left off: the offsets not checked are those
    // below the committed one, and the table says so.
    let behind = unique("behind");
    broker.commit(&behind, &old, &[(0, 2)]);
    let table = inboxctl(
        &db,
        broker,
        &[
            "compare",
            "-g",
            &behind,
            "--consumer",
            &group,
            "-t",
            &old,
            "--pruned-before",
            "-7d",
        ],
    )
    .ok();
    assert!(
        table.stdout.contains(
            "Not checked in partition 0: 2 offset(s) without an inbox row below 2, from before the last prune"
        ),
        "{}",
        table.stdout
    );
}

/// Rows pruned from the inbox leave their offsets without a row, like lost messages. prune
/// records its cutoff, and compare then checks each partition only from the first offset
/// whose row could not have been pruned: here the first message produced after the cutoff
/// (and the first row left). Below it nothing is called lost; above it, loss is still found.
async fn compare_after_a_prune_checks_only_what_the_prune_left(backend: Backend) {
    pruned_inbox_case(backend, true).await;
}

/// An application's own DELETE leaves no record: compare reports the deleted rows' offsets
/// lost, until `--pruned-before` tells it the cutoff; then it checks as after a recorded one.
async fn compare_after_an_unrecorded_prune_is_given_the_cutoff(backend: Backend) {
    pruned_inbox_case(backend, false).await;
}

/// Offsets 0-4 produced and processed ten days ago, 5-9 now; 2 and 7 committed before their
/// effects; then the rows older than 7 days pruned, by `inboxctl prune` when `recorded`,
/// else by a plain DELETE.
async fn pruned_inbox_case(backend: Backend, recorded: bool) {
    let mut db = TestDb::new(backend).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    let broker = broker();
    db.run(&["migrate", "run"]).ok();
    broker.create_topic(&topic, 1).await;
    // Offsets 0-4 produced (and processed) ten days ago, 5-9 now.
    let ten_days_ago = chrono::Utc::now() - chrono::Duration::days(10);
    let old: Vec<(i32, String)> = (0..5).map(|n| (0, format!("{topic}-old-{n}"))).collect();
    let new: Vec<(i32, String)> = (5..10).map(|n| (0, format!("{topic}-new-{n}"))).collect();
    broker
        .produce_at(&topic, &old, Some(ten_days_ago.timestamp_millis()))
        .await;
    broker.produce(&topic, &new).await;
    let pool = db.pool().await;
    // Offsets 2 and 7 are committed before their effects.
    run_service(
        broker,
        &group,
        &topic,
        10,
        |seen| match seen.offset {
            2 | 7 => Step::CommitNoProcess,
            _ => Step::ProcessThenCommit,
        },
        recording(pool, backend, &group, &topic),
    )
    .await;
    {
        let store = db.store().await;
        let mut sql = store.sql();
        sql.push("UPDATE processed_messages SET processed_at = ")
            .timestamp_param()
            .push(&format!(" WHERE {} < 5", store.dialect.quote("offset")));
        sqlx::query(&sql.build())
            .bind(store.timestamp_param(ten_days_ago))
            .execute(store.pool())
            .await
            .unwrap();
    }
    let lost_offsets = |json: &serde_json::Value| -> Vec<i64> {
        json["partitions"][0]["lost"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["offset"].as_i64().unwrap())
            .collect()
    };
    let before = compare_json(&db, broker, &group, &topic, false, 3);
    assert_eq!(lost_offsets(&before), vec![2, 7]);
    assert_eq!(before["pruned_before"], serde_json::Value::Null);

    let cutoff = if recorded {
        let pruned = inboxctl(
            &db,
            broker,
            &["prune", "--older-than", "7d", "--yes", "--format", "json"],
        )
        .ok()
        .json();
        assert_eq!(pruned["rows_deleted"], 4);
        assert_eq!(db.count("inboxctl_prunes").await, 1);
        pruned["cutoff"].clone()
    } else {
        let store = db.store().await;
        let mut sql = store.sql();
        sql.push("DELETE FROM processed_messages WHERE processed_at < ")
            .timestamp_param();
        let cutoff = chrono::Utc::now() - chrono::Duration::days(7);
        let deleted = sqlx::query(&sql.build())
            .bind(store.timestamp_param(cutoff))
            .execute(store.pool())
            .await
            .unwrap();
        assert_eq!(deleted.rows_affected(), 4);
        // Nothing recorded: the deleted rows' offsets look lost.
        let unaware = compare_json(&db, broker, &group, &topic, false, 3);
        assert_eq!(lost_offsets(&unaware), vec![0, 1, 2, 3, 4, 7]);
        let cutoff = cutoff.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        serde_json::Value::String(cutoff)
    };
    let cutoff_text = cutoff.as_str().unwrap().to_string();

    for scan in [false, true] {
        let mut args = vec!["compare", "-g", &group, "-t", &topic, "--format", "json"];
        if !recorded {
            args.extend(["--pruned-before", &cutoff_text]);
        }
        if scan {
            args.push("--scan");
        }
        let json = inboxctl(&db, broker, &args).code(3).json();
        let p0 = &json["partitions"][0];
        assert_eq!(lost_offsets(&json), vec![7], "scan: {scan}");
        assert_eq!(
            (p0["checked_from"].as_i64(), p0["not_checked"].as_i64()),
            (Some(5), Some(5)),
            "scan: {scan}"
        );
        // As times: JSON leaves out a fraction of .000.
        let at = |v: &serde_json::Value| {
            chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap()
        };
        assert_eq!(at(&json["pruned_before"]), at(&cutoff), "scan: {scan}");
    }
    let mut args = vec!["compare", "-g", &group, "-t", &topic];
    if !recorded {
        // As a duration ago: a little less than the rows' ten days.
        args.extend(["--pruned-before", "-7d"]);
    }
    let table = inboxctl(&db, broker, &args).code(3);
    for line in [
        format!("Lost in partition 0 (committed, never processed): 7 ({topic}-new-7)"),
        "Not checked in partition 0: 5 offset(s) without an inbox row below 5, from before the last prune (of rows processed before ".to_string(),
        "FINDINGS: 1 lost, 0 orphaned".to_string(),
    ] {
        assert!(table.stdout.contains(&line), "{line}\n{}", table.stdout);
    }
}

async fn safe_prune_keeps_what_may_be_redelivered(backend: Backend) {
    safe_prune_case(backend, "auto").await;
}

/// The same through PostgreSQL's page ranges: the protected partitions hold there too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn safe_prune_by_blocks_keeps_what_may_be_redelivered() {
    safe_prune_case(Backend::Postgres, "blocks").await;
}

async fn safe_prune_case(backend: Backend, strategy: &str) {
    let mut db = TestDb::new(backend).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    // Partition 0 committed through offset 4 only; 5..7 processed, not committed.
    scenario(&mut db, &topic, &group, &[], true, |seen| {
        if seen.partition == 0 && seen.offset >= 5 {
            Step::ProcessNoCommit
        } else {
            Step::ProcessThenCommit
        }
    })
    .await;
    // Another consumer's row: the group's offsets say nothing about it, so --group alone
    // prunes the group's own consumer only.
    db.exec("INSERT INTO processed_messages (consumer, event_id) VALUES ('other', 'x')")
        .await;
    // A group the brokers do not know (a typo) is an error, not a prune that keeps
    // everything back, and nothing is deleted or recorded.
    let unknown = unique("no-such-group");
    let refused = inboxctl(
        &db,
        broker(),
        &[
            "prune",
            "--older-than",
            "1ms",
            "--group",
            &unknown,
            "--consumer",
            &group,
            "--yes",
        ],
    )
    .code(1);
    assert_eq!(
        refused.stderr,
        format!(
            "error: consumer group '{unknown}' does not exist on {} (no committed offsets, unknown to the coordinator), so prune cannot tell what it may redeliver; check --group (`inboxctl offsets show` lists the groups there are)\n",
            broker().address
        )
    );
    // The same typo without --consumer names no inbox consumer either: still an error.
    let alone = inboxctl(
        &db,
        broker(),
        &["prune", "--older-than", "1ms", "--group", &unknown, "--yes"],
    )
    .code(1);
    assert_eq!(alone.stderr, refused.stderr);
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM processed_messages").await,
        25
    );
    assert!(!db.table_exists("inboxctl_prunes").await);
    // Everything is older than the cutoff: "--older-than 1ms".
    let run = inboxctl(
        &db,
        broker(),
        &[
            "prune",
            "--older-than",
            "1ms",
            "--group",
            &group,
            "--strategy",
            strategy,
            "--yes",
            "-v",
            "--format",
            "json",
        ],
    )
    .ok();
    let json = run.json();
    if strategy == "blocks" {
        assert_eq!(json["strategy"], "blocks");
    }
    assert_eq!(json["rows_matched"], 21);
    assert_eq!(json["rows_kept_for_redelivery"], 3);
    assert_eq!(json["consumers"][0]["kept_for_redelivery"], 3);
    assert_eq!(json["rows_deleted"], 21);
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM processed_messages WHERE consumer = 'other'")
            .await,
        1
    );
    let left = coordinates_left(&mut db, "consumer <> 'other'").await;
    assert_eq!(left, vec![(0, 5), (0, 6), (0, 7)]);
    // Again: the older rows left are all kept, and the summary says so.
    let again = inboxctl(
        &db,
        broker(),
        &["prune", "--older-than", "1ms", "--group", &group, "--yes"],
    )
    .ok();
    let lines: Vec<&str> = again.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", again.stdout);
    assert!(
        lines[0].starts_with("Nothing to prune: every row processed before ")
            && lines[0].ends_with(" is kept."),
        "{}",
        again.stdout
    );
    assert_eq!(
        lines[1],
        "Kept 3 older rows at or above the group's committed offsets: they may still be redelivered."
    );
}

/// A consumer of many partitions: the guard finds each row's partition among 600 (one
/// condition a partition was past SQLite's limit at about 450, and slow elsewhere). Rows
/// below their partition's committed offset go; the rest stay, all of a partition without
/// one, and on SQLite a partition number no Kafka partition has.
async fn safe_prune_of_a_consumer_of_many_partitions(backend: Backend) {
    const PARTITIONS: i32 = 600;
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let (topic, group) = (unique("wide"), unique("billing"));
    let broker = broker();
    broker.create_topic(&topic, PARTITIONS).await;
    // Committed at 2, but every seventh partition has no committed offset.
    let uncommitted = |partition: i64| partition % 7 == 0;
    let committed: Vec<(i32, i64)> = (0..PARTITIONS)
        .filter(|p| !uncommitted(i64::from(*p)))
        .map(|p| (p, 2))
        .collect();
    broker.commit(&group, &topic, &committed);
    let old = chrono::Utc::now() - chrono::Duration::days(10);
    let mut rows = Vec::new();
    for partition in 0..PARTITIONS {
        for offset in 0..4 {
            let id = format!("e-{partition}-{offset}");
            rows.push(row(&group, &id, Some((&topic, partition, offset)), old));
        }
    }
    rows.push(row(&group, "beyond", Some((&topic, 0, 0)), old));
    db.insert_rows(&rows).await;
    let mut expected: Vec<(i64, i64)> = (0..i64::from(PARTITIONS))
        .flat_map(|p| (if uncommitted(p) { 0 } else { 2 }..4).map(move |o| (p, o)))
        .collect();
    let beyond = match backend {
        Backend::Sqlite => {
            expected.push((3_000_000_000, 0));
            "3000000000"
        }
        // The column is an integer of 32 bits: the row is one of partition 0's.
        _ => {
            expected.insert(0, (0, 0));
            "0"
        }
    };
    db.exec(&format!(
        "UPDATE processed_messages SET {} = {beyond} WHERE event_id = 'beyond'",
        backend.dialect().quote("partition")
    ))
    .await;
    let run = inboxctl(
        &db,
        broker,
        &[
            "prune",
            "--older-than",
            "1d",
            "--group",
            &group,
            "--yes",
            "--format",
            "json",
        ],
    )
    .ok()
    .json();
    let deleted = 2 * committed.len() as i64;
    assert_eq!(run["rows_deleted"], deleted);
    assert_eq!(run["rows_kept_for_redelivery"], expected.len() as i64);
    assert_eq!(coordinates_left(&mut db, "1 = 1").await, expected);
}

/// An application's table in the inbox's layout whose `topic` ignores case (MariaDB's
/// default collation), and two topics whose names differ only in case: the column takes
/// them for one, and prune --group would judge one's rows by the other's committed offsets.
/// It refuses and deletes nothing; with an exact collation it keeps what each may redeliver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn safe_prune_refuses_topics_a_case_blind_column_takes_for_one_on_mysql() {
    let mut db = TestDb::new(Backend::Mysql).await;
    db.exec(
        "CREATE TABLE processed_messages (\
         consumer VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, \
         event_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, \
         topic VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL, \
         `partition` INT NULL, `offset` BIGINT NULL, \
         processed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), \
         PRIMARY KEY (consumer, event_id), KEY (consumer, processed_at), \
         KEY (consumer, topic, `partition`, `offset`))",
    )
    .await;
    db.run(&["migrate", "run"]).ok();
    let broker = broker();
    let group = unique("billing");
    let upper = unique("Orders");
    let lower = upper.to_lowercase();
    for topic in [&upper, &lower] {
        broker.create_topic(topic, 1).await;
    }
    // Orders committed at 1, orders at 100: Orders' rows at 1 and 50 may be redelivered.
    broker.commit(&group, &upper, &[(0, 1)]);
    broker.commit(&group, &lower, &[(0, 100)]);
    let old = chrono::Utc::now() - chrono::Duration::days(10);
    db.insert_rows(&[
        row(&group, "upper-0", Some((&upper, 0, 0)), old),
        row(&group, "upper-1", Some((&upper, 0, 1)), old),
        row(&group, "upper-50", Some((&upper, 0, 50)), old),
        row(&group, "lower-5", Some((&lower, 0, 5)), old),
    ])
    .await;
    let prune = |db: &TestDb| {
        inboxctl(
            db,
            broker,
            &["prune", "--older-than", "1d", "--group", &group, "--yes"],
        )
    };
    let refused = prune(&db).code(1);
    assert_eq!(
        refused.stderr,
        format!(
            "error: the inbox's topic column compares by utf8mb4_general_ci, which takes topics \
             of consumer '{group}' whose names differ only in case for one, so prune cannot \
             tell apart their committed offsets; nothing was deleted; give the column an exact \
             collation (ALTER TABLE processed_messages MODIFY topic VARCHAR(255) CHARACTER SET \
             utf8mb4 COLLATE utf8mb4_bin)\n"
        )
    );
    assert_eq!(db.count("processed_messages").await, 4);
    db.exec(
        "ALTER TABLE processed_messages \
         MODIFY topic VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL",
    )
    .await;
    prune(&db).ok();
    let mut left: Vec<String> = sqlx::query_scalar("SELECT event_id FROM processed_messages")
        .fetch_all(&db.pool().await)
        .await
        .unwrap();
    left.sort();
    assert_eq!(left, ["upper-1", "upper-50"]);
}

/// The partition and offset of each inbox row that `filter` (SQL) selects, in that order.
async fn coordinates_left(db: &mut TestDb, filter: &str) -> Vec<(i64, i64)> {
    let dialect = db.backend.dialect();
    let pool = db.pool().await;
    sqlx::query_as(&format!(
        "SELECT {p}, {o} FROM processed_messages WHERE {filter} ORDER BY {p}, {o}",
        p = (dialect.bigint)(&dialect.quote("partition")),
        o = (dialect.bigint)(&dialect.quote("offset"))
    ))
    .fetch_all(&pool)
    .await
    .unwrap()
}

each_backend!(
    compare_clean_run_exits_zero,
    compare_crash_between_effect_and_commit_is_pending_redelivery,
    compare_commit_before_effect_names_the_lost_events,
    compare_scan_finds_producer_duplicates,
    compare_scan_on_rows_without_coordinates,
    compare_finds_orphans_after_the_topic_is_recreated,
    compare_counts_offsets_not_rows,
    compare_by_offset_skips_offsets_without_a_message,
    compare_finds_orphans_in_partitions_the_topic_lacks,
    compare_after_a_prune_checks_only_what_the_prune_left,
    compare_after_an_unrecorded_prune_is_given_the_cutoff,
    safe_prune_keeps_what_may_be_redelivered,
    safe_prune_of_a_consumer_of_many_partitions,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_errors_are_specific() {
    let broker = broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 2).await;
    broker.produce(&topic, &events("e", 2, 2)).await;
    broker.commit(&group, &topic, &[(0, 1)]);

    let malformed = inboxctl(
        &db,
        broker,
        &["offsets", "show", "-g", &group, "-X", "security.protocol"],
    )
    .code(2);
    assert!(
        malformed.stderr.contains("expected KEY=VALUE"),
        "{}",
        malformed.stderr
    );
    let unknown_property = inboxctl(
        &db,
        broker,
        &["offsets", "show", "-g", &group, "-X", "no.such.property=1"],
    )
    .code(2);
    assert!(
        unknown_property
            .stderr
            .contains("invalid Kafka client configuration"),
        "{}",
        unknown_property.stderr
    );

    let no_topic = inboxctl(
        &db,
        broker,
        &["offsets", "show", "-g", &group, "-t", "no-such-topic"],
    )
    .code(1);
    assert!(
        no_topic
            .stderr
            .contains("topic 'no-such-topic' does not exist"),
        "{}",
        no_topic.stderr
    );

    let no_group = inboxctl(&db, broker, &["offsets", "show", "-g", "no-such-group"]).code(1);
    assert!(
        no_group
            .stderr
            .contains("consumer group 'no-such-group' does not exist on "),
        "{}",
        no_group.stderr
    );
    assert!(
        no_group
            .stderr
            .contains("; `inboxctl offsets show` lists the groups there are"),
        "{}",
        no_group.stderr
    );

    let partition = format!("{topic}:0,5");
    let out_of_range = inboxctl(
        &db,
        broker,
        &[
            "offsets",
            "reset",
            "-g",
            &group,
            "-t",
            &partition,
            "--to-earliest",
        ],
    )
    .code(1);
    assert!(
        out_of_range.stderr.contains(&format!(
            "partition 5 of topic '{topic}' does not exist (it has partitions 0-1)"
        )),
        "{}",
        out_of_range.stderr
    );

    let started = std::time::Instant::now();
    let unreachable = Run::from(
        db.cmd()
            .args([
                "offsets",
                "show",
                "-g",
                &group,
                "--brokers",
                "127.0.0.1:1",
                "--kafka-timeout",
                "2s",
            ])
            .output()
            .unwrap(),
    )
    .code(1);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert!(
        unreachable
            .stderr
            .contains("could not reach the Kafka brokers 127.0.0.1:1 within 2s"),
        "{}",
        unreachable.stderr
    );
    assert!(!unreachable.stderr.contains("panicked"));
}

/// A listener that accepts connections and never says a word: every Kafka command gives up
/// after --kafka-timeout with the same message, where a client left to itself would wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_never_answers_fails_within_the_timeout() {
    let db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    std::fs::write(db.dir.path().join("handler.sql"), "SELECT 1").unwrap();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap().to_string();
    let commands: [&[&str]; 4] = [
        &["offsets", "show", "-g", "billing"],
        &[
            "offsets",
            "reset",
            "-g",
            "billing",
            "-t",
            "orders",
            "--to-earliest",
        ],
        &["compare", "-g", "billing", "-t", "orders"],
        &[
            "replay",
            "-t",
            "orders",
            "--from",
            "earliest",
            "--consumer",
            "billing",
            "--sql",
            "handler.sql",
        ],
    ];
    for args in commands {
        let started = std::time::Instant::now();
        let run = Run::from(
            db.cmd()
                .args(args)
                .args(["--brokers", &address, "--kafka-timeout", "1s"])
                .output()
                .unwrap(),
        )
        .code(1);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{args:?} took {:?}",
            started.elapsed()
        );
        assert!(
            run.stderr.contains(&format!(
                "could not reach the Kafka brokers {address} within 1s"
            )),
            "{args:?}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
}

/// A refused database ends compare at once, though the group's offsets are still being
/// asked of a broker that never answers: the error is printed and the process exits without
/// waiting out --kafka-timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_database_is_not_held_up_by_a_silent_broker() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap().to_string();
    let refused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = refused.local_addr().unwrap().port();
    drop(refused);
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let run = Run::from(
        std::process::Command::new(env!("CARGO_BIN_EXE_inboxctl"))
            .current_dir(dir.path())
            .env_remove("DATABASE_URL")
            .env_remove("KAFKA_BROKERS")
            .args(["compare", "-g", "billing", "-t", "orders", "--scan"])
            .args(["--brokers", &address, "--kafka-timeout", "60s"])
            .args([
                "--database-url",
                &format!("postgres://postgres@127.0.0.1:{closed_port}/test"),
            ])
            .output()
            .unwrap(),
    )
    .code(1);
    assert!(
        run.stderr.contains(&format!(
            "could not connect to PostgreSQL server 127.0.0.1:{closed_port}"
        )),
        "{}",
        run.stderr
    );
    // Well inside the 60 s the broker call may take: it was not waited for.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}

/// SSL through -X, as operators pass it: against a broker that speaks TLS only, the same
/// command fails without the properties and reads the group's offsets with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_brokers_are_reached_through_x_properties() {
    let broker = tls_broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 2).await;
    broker.produce(&topic, &events("e", 2, 3)).await;
    broker.commit(&group, &topic, &[(0, 2), (1, 3)]);
    let ca = broker.tls_ca.clone().unwrap();
    let ca_property = format!("ssl.ca.location={}", ca.display());

    let with_tls = inboxctl(
        &db,
        &broker,
        &[
            "offsets",
            "show",
            "-g",
            &group,
            "-X",
            "security.protocol=SSL",
            "-X",
            &ca_property,
            "--format",
            "json",
        ],
    )
    .ok()
    .json();
    let committed: Vec<i64> = with_tls["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["committed"].as_i64().unwrap())
        .collect();
    assert_eq!(committed, vec![2, 3]);
    assert_eq!(with_tls["partitions"][0]["log_end"], 3);

    let plaintext = inboxctl(
        &db,
        &broker,
        &["offsets", "show", "-g", &group, "--kafka-timeout", "2s"],
    )
    .code(1);
    assert!(
        plaintext
            .stderr
            .contains("could not reach the Kafka brokers"),
        "{}",
        plaintext.stderr
    );
    // The error, once.
    assert_eq!(plaintext.stderr.lines().count(), 1, "{}", plaintext.stderr);
}

/// SASL/SCRAM through -X against a broker that requires authentication; the password is
/// never printed, and a wrong one fails within the timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_brokers_are_reached_through_x_properties() {
    let broker = scram_broker();
    let db = TestDb::new(Backend::Sqlite).await;
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 1).await;
    broker.produce(&topic, &events("e", 1, 4)).await;
    broker.commit(&group, &topic, &[(0, 3)]);
    let sasl = |password: &str| {
        vec![
            "-X".to_string(),
            "security.protocol=SASL_PLAINTEXT".to_string(),
            "-X".to_string(),
            "sasl.mechanism=SCRAM-SHA-512".to_string(),
            "-X".to_string(),
            "sasl.username=alice".to_string(),
            "-X".to_string(),
            format!("sasl.password={password}"),
        ]
    };
    let mut args: Vec<String> = ["offsets", "show", "-g", &group, "--format", "json", "-v"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(sasl("alice-s3cret"));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = inboxctl(&db, &broker, &refs).ok();
    assert_eq!(run.json()["partitions"][0]["committed"], 3);
    assert!(!run.stdout.contains("alice-s3cret") && !run.stderr.contains("alice-s3cret"));

    let mut args: Vec<String> = ["offsets", "show", "-g", &group, "--kafka-timeout", "2s"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(sasl("not-her-password"));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let refused = inboxctl(&db, &broker, &refs).code(1);
    assert!(
        refused.stderr.contains("could not reach the Kafka brokers"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("credentials"), "{}", refused.stderr);
    assert!(
        !refused.stderr.contains("not-her-password"),
        "{}",
        refused.stderr
    );
    assert_eq!(refused.stderr.lines().count(), 1, "{}", refused.stderr);
}

/// Rows for every offset of `partition` in `0..end` except `missing`, processed now.
async fn rows_except(
    db: &mut TestDb,
    group: &str,
    topic: &str,
    delivered: &[Delivered],
    partition: i32,
    missing: impl Fn(i64) -> bool,
) {
    let now = chrono::Utc::now();
    let rows: Vec<Row_> = delivered
        .iter()
        .filter(|d| d.partition == partition && !missing(d.offset))
        .map(|d| row(group, &d.event_id, Some((topic, partition, d.offset)), now))
        .collect();
    db.insert_rows(&rows).await;
}

/// Without `--scan`, a message with no event id at an offset without a row is lost all the
/// same (the offset was committed, and nothing recorded it), and the report says why it is
/// not named: beside its offset, in `missing_event_id`, and in a warning when no message
/// read had an id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_by_offset_says_which_lost_messages_have_no_event_id() {
    let broker = broker();
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 1).await;
    let mut delivered = broker.produce(&topic, &[(0, format!("{topic}-0"))]).await;
    let producer: rdkafka::producer::FutureProducer = broker.config().create().unwrap();
    producer
        .send(
            rdkafka::producer::FutureRecord::<str, str>::to(&topic)
                .partition(0)
                .payload("not json"),
            std::time::Duration::from_secs(30),
        )
        .await
        .expect("produce");
    delivered.extend(broker.produce(&topic, &[(0, format!("{topic}-2"))]).await);
    rows_except(&mut db, &group, &topic, &delivered, 0, |_| false).await;
    broker.commit(&group, &topic, &[(0, 3)]);

    let json = compare_json(&db, broker, &group, &topic, false, 3);
    let p0 = &json["partitions"][0];
    assert_eq!(
        p0["lost"],
        serde_json::json!([{"partition": 0, "offset": 1, "event_id": null}])
    );
    assert_eq!(
        (
            p0["lost_count"].as_i64(),
            p0["missing_event_id"].as_i64(),
            p0["empty_offsets"].as_i64()
        ),
        (Some(1), Some(1), Some(0))
    );
    let table = inboxctl(&db, broker, &["compare", "-g", &group, "-t", &topic]).code(3);
    for line in [
        "Lost in partition 0 (committed, never processed): 1 (no event id)\n",
        "1 message(s) in partition 0 carry no event id\n",
        "FINDINGS: 1 lost, 0 orphaned",
    ] {
        assert!(table.stdout.contains(line), "{line}\n{}", table.stdout);
    }
    assert!(
        table.stderr.contains(
            "none of the 1 messages read at offsets without an inbox row carries an event id"
        ),
        "{}",
        table.stderr
    );
}

/// Produces a message whose payload carries no event id to partition 0 of `topic`.
async fn produce_without_id(broker: &Broker, topic: &str) {
    let producer: rdkafka::producer::FutureProducer = broker.config().create().unwrap();
    producer
        .send(
            rdkafka::producer::FutureRecord::<str, str>::to(topic)
                .partition(0)
                .payload("not json"),
            std::time::Duration::from_secs(30),
        )
        .await
        .expect("produce");
}

/// With and without `--scan`, a committed message without an event id is decided by its
/// offset: the one with an inbox row there was processed, the one without is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_scan_decides_messages_without_an_event_id_by_their_offset() {
    let broker = broker();
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 1).await;
    // Offsets 0 and 3 carry ids; 1 and 2 do not, and only 1 has a row.
    let mut delivered = broker.produce(&topic, &[(0, format!("{topic}-0"))]).await;
    produce_without_id(broker, &topic).await;
    produce_without_id(broker, &topic).await;
    delivered.extend(broker.produce(&topic, &[(0, format!("{topic}-3"))]).await);
    rows_except(&mut db, &group, &topic, &delivered, 0, |_| false).await;
    let now = chrono::Utc::now();
    db.insert_rows(&[row(&group, "unnamed-1", Some((&topic, 0, 1)), now)])
        .await;
    broker.commit(&group, &topic, &[(0, 4)]);

    let table = |scan: bool| {
        let mut args = vec!["compare", "-g", &group, "-t", &topic];
        if scan {
            args.push("--scan");
        }
        inboxctl(&db, broker, &args).code(3)
    };
    let body = "\
┌───────────┬───────────┬───────────┬─────────┬────────────┬──────────────────┬─────────┬──────┬─────────┐
│ PARTITION ┆ COMMITTED ┆ LOG-START ┆ LOG-END ┆ INBOX ROWS ┆ MAX INBOX OFFSET ┆ PENDING ┆ LOST ┆ ORPHANS │
╞═══════════╪═══════════╪═══════════╪═════════╪════════════╪══════════════════╪═════════╪══════╪═════════╡
│         0 ┆         4 ┆         0 ┆       4 ┆          3 ┆                3 ┆       0 ┆    1 ┆       0 │
└───────────┴───────────┴───────────┴─────────┴────────────┴──────────────────┴─────────┴──────┴─────────┘
Lost in partition 0 (committed, never processed): 2 (no event id)
";
    let by_offset = table(false);
    assert_eq!(
        by_offset.stdout,
        format!(
            "Group '{group}' (Empty) against inbox consumer '{group}' on topic '{topic}'\n{body}\
             1 message(s) in partition 0 carry no event id\n\
             FINDINGS: 1 lost, 0 orphaned; 0 pending redelivery; duplicate event ids not looked for (--scan looks)\n"
        )
    );
    let scanned = table(true);
    assert_eq!(
        scanned.stdout,
        format!(
            "Group '{group}' (Empty) against inbox consumer '{group}' on topic '{topic}', 4 messages scanned\n{body}\
             2 message(s) in partition 0 carry no event id\n\
             FINDINGS: 1 lost, 0 orphaned; 0 pending redelivery; 0 duplicate event id(s)\n"
        )
    );
    assert_eq!(scanned.stderr, "");
    for scan in [false, true] {
        let json = compare_json(&db, broker, &group, &topic, scan, 3);
        assert_eq!(
            json["partitions"][0]["lost"],
            serde_json::json!([{"partition": 0, "offset": 2, "event_id": null}]),
            "scan: {scan}"
        );
    }
    // Where no message has an id, the offsets still decide; the warning says how.
    let source = "header:no-such-header";
    let args = [
        "compare",
        "-g",
        &group,
        "-t",
        &topic,
        "--scan",
        "--event-id-from",
        source,
    ];
    let no_ids = inboxctl(&db, broker, &args).code(3);
    assert!(
        no_ids
            .stdout
            .contains("Lost in partition 0 (committed, never processed): 2 (no event id)\n"),
        "{}",
        no_ids.stdout
    );
    assert_eq!(
        no_ids.stderr,
        format!(
            "warning: none of the 4 messages scanned carries an event id where --event-id-from \
             ({source}) looks, so none could be checked by event id; they were checked by their \
             offsets\n"
        )
    );
    // A consumer that records no coordinates leaves a message without an id undecided in
    // both modes, rather than lost in one of them: nothing could ever match it.
    let noted = unique("noted");
    db.insert_rows(&[
        row(&noted, &format!("{topic}-0"), None, now),
        row(&noted, &format!("{topic}-3"), None, now),
    ])
    .await;
    for scan in [false, true] {
        let mut args = vec![
            "compare",
            "-g",
            &group,
            "-t",
            &topic,
            "--consumer",
            &noted,
            "--format",
            "json",
        ];
        if scan {
            args.push("--scan");
        }
        let json = inboxctl(&db, broker, &args).code(0).json();
        let p = &json["partitions"][0];
        // Offsets that hold a message without an id are not offsets that hold none.
        assert_eq!(
            (
                &p["lost_count"],
                &p["missing_event_id"],
                &p["empty_offsets"]
            ),
            (
                &serde_json::json!(0),
                &serde_json::json!(2),
                &serde_json::json!(0)
            ),
            "scan: {scan}: {json}"
        );
    }
    // At or after the committed offset too: a row at a message's offset is pending there,
    // as without --scan.
    broker.commit(&group, &topic, &[(0, 1)]);
    for scan in [false, true] {
        let mut args = vec!["compare", "-g", &group, "-t", &topic, "--format", "json"];
        if scan {
            args.extend(["--scan", "--event-id-from", source]);
        }
        let json = inboxctl(&db, broker, &args).code(0).json();
        assert_eq!(
            json["partitions"][0]["pending_redelivery"],
            serde_json::json!([1, 3]),
            "scan: {scan}: {json}"
        );
    }
}

/// compare ends every session it opens as the protocol asks, with and without --scan (whose
/// load of the inbox's ids has a connection of its own on PostgreSQL), and after an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_ends_its_sessions_cleanly_on_postgres() {
    let db = TestDb::new(Backend::Postgres).await;
    let broker = broker();
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 3).await;
    let all = events(&topic, 3, 8);
    broker.produce(&topic, &all).await;
    // Without the table: an error after connecting.
    let run = inboxctl(
        &db,
        broker,
        &["compare", "-g", &group, "-t", &topic, "--scan"],
    )
    .code(1);
    assert!(run.stderr.contains("processed_messages"), "{}", run.stderr);
    assert_eq!(db.ended_sessions().await.1, 0);

    // The service's own pool, closed before counting: the harness's store would keep its
    // sessions open.
    db.run(&["migrate", "run"]).ok();
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&db.url).await.unwrap();
    let (consumer, topic_name) = (group.clone(), topic.clone());
    let service_pool = pool.clone();
    run_service(
        broker,
        &group,
        &topic,
        all.len(),
        |_| Step::ProcessThenCommit,
        move |seen| {
            record(
                service_pool.clone(),
                Backend::Postgres,
                consumer.clone(),
                topic_name.clone(),
                seen,
                true,
            )
        },
    )
    .await;
    pool.close().await;
    let (before, abandoned_before) = db.ended_sessions().await;
    for scan in [false, true, false, true] {
        let json = compare_json(&db, broker, &group, &topic, scan, 0);
        assert_eq!(json["lost_total"], 0);
    }
    let (after, abandoned_after) = db.ended_sessions().await;
    assert!(
        after >= before + 4,
        "{before} sessions before, {after} after"
    );
    assert_eq!(
        abandoned_after,
        abandoned_before,
        "of {} sessions",
        after - before
    );
}

/// MariaDB's key takes `x ` and `x` for one event id (README, Limits), and so does `--scan`,
/// whether it loads the inbox's ids or asks for them chunk by chunk: a message `pad` is not
/// lost when the inbox holds `pad `, and `dup` and `dup ` are one event delivered twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_scan_takes_ids_as_the_mysql_key_does() {
    let broker = broker();
    let mut db = TestDb::new(Backend::Mysql).await;
    db.run(&["migrate", "run"]).ok();
    let (topic, group) = (unique("orders"), unique("billing"));
    broker.create_topic(&topic, 1).await;
    let ids = ["pad", "dup", "dup ", "lost"];
    broker
        .produce(&topic, &ids.map(|id| (0, id.to_string())))
        .await;
    let now = chrono::Utc::now();
    db.insert_rows(&[
        row(&group, "pad ", None, now),
        row(&group, "dup", None, now),
    ])
    .await;
    broker.commit(&group, &topic, &[(0, 4)]);
    for load_limit in ["10000000", "0"] {
        let json = compare_scan_json(&db, broker, &group, &topic, load_limit, 3);
        assert_eq!(
            json["partitions"][0]["lost"],
            serde_json::json!([{"partition": 0, "offset": 3, "event_id": "lost"}]),
            "load limit {load_limit}: {json:#}"
        );
        assert_eq!(
            json["duplicates"],
            serde_json::json!([{"topic": topic, "event_id": "dup", "positions": [[0, 1], [0, 2]]}]),
            "load limit {load_limit}"
        );
    }
    // A collation without padding tells them apart, and so does compare.
    db.exec(
        "ALTER TABLE processed_messages MODIFY event_id VARCHAR(255) CHARACTER SET utf8mb4 \
         COLLATE utf8mb4_nopad_bin NOT NULL",
    )
    .await;
    for load_limit in ["10000000", "0"] {
        let json = compare_scan_json(&db, broker, &group, &topic, load_limit, 3);
        let lost: Vec<(i64, String)> = json["partitions"][0]["lost"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["offset"].as_i64().unwrap(),
                    l["event_id"].as_str().unwrap().into(),
                )
            })
            .collect();
        assert_eq!(
            lost,
            [(0, "pad".into()), (2, "dup ".into()), (3, "lost".into())],
            "no pad, load limit {load_limit}"
        );
        assert_eq!(
            json["duplicates"],
            serde_json::json!([]),
            "load limit {load_limit}"
        );
    }
}
