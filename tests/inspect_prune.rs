//! `inspect` and `prune` on a seeded inbox, each backend.

mod common;

use chrono::{DateTime, Duration, DurationRound, SecondsFormat, Utc};
use common::*;
use inboxctl::store::{CreateMode, DatabaseUrl, Store};
use sqlx::Row;

fn now_ms() -> DateTime<Utc> {
    Utc::now()
        .duration_trunc(Duration::milliseconds(1))
        .unwrap()
}

fn parse(value: &serde_json::Value) -> DateTime<Utc> {
    value.as_str().unwrap().parse().unwrap()
}

async fn inspect_reports_exact_numbers(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let now = now_ms();
    let ago = |minutes: i64| now - Duration::minutes(minutes);
    let mut rows = vec![
        row("billing", "e10", Some(("orders", 0, 10)), ago(30)),
        row("billing", "e11", Some(("orders", 0, 11)), ago(31)),
        row("billing", "e20", Some(("orders", 1, 20)), ago(5 * 60)),
        row("billing", "e21", Some(("orders", 1, 21)), ago(5 * 60)),
        row("billing", "e22", Some(("orders", 1, 22)), ago(5 * 60)),
        row("billing", "e5", Some(("orders", 0, 5)), ago(3 * 1440)),
        row("billing", "legacy", None, ago(60 * 1440)),
        row("shipping", "e10", Some(("orders", 0, 10)), ago(120)),
        row("shipping", "e11", Some(("orders", 0, 11)), ago(121)),
    ];
    for offset in 100..104 {
        rows.push(row(
            "billing",
            &format!("p{offset}"),
            Some(("payments", 0, offset)),
            ago(10 * 1440),
        ));
    }
    db.insert_rows(&rows).await;

    let json = db.run(&["inspect", "--format", "json"]).ok().json();
    assert_eq!(json["total_rows"], 13);
    assert_eq!(json["total_rows_estimated"], false);
    let billing = &json["consumers"][0];
    assert_eq!(billing["consumer"], "billing");
    assert_eq!(billing["rows"], 11);
    assert_eq!(parse(&billing["oldest"]), ago(60 * 1440));
    assert_eq!(parse(&billing["newest"]), ago(30));
    assert_eq!(
        billing["age"],
        serde_json::json!({"under_1h": 2, "1h_to_1d": 3, "1d_to_7d": 1, "7d_to_30d": 4, "30d_or_older": 1})
    );
    let shipping = &json["consumers"][1];
    assert_eq!(
        (shipping["consumer"].as_str(), shipping["rows"].as_i64()),
        (Some("shipping"), Some(2))
    );
    assert_eq!(parse(&shipping["oldest"]), ago(121));
    assert_eq!(
        json["age_histogram"],
        serde_json::json!({"under_1h": 2, "1h_to_1d": 5, "1d_to_7d": 1, "7d_to_30d": 4, "30d_or_older": 1})
    );
    type PartitionLine = (String, Option<i64>, i64, Option<i64>, Option<i64>);
    let partitions: Vec<PartitionLine> = json["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                format!(
                    "{}/{}",
                    p["consumer"].as_str().unwrap(),
                    p["topic"].as_str().unwrap_or("-")
                ),
                p["partition"].as_i64(),
                p["rows"].as_i64().unwrap(),
                p["min_offset"].as_i64(),
                p["max_offset"].as_i64(),
            )
        })
        .collect();
    assert_eq!(
        partitions,
        vec![
            ("billing/orders".into(), Some(0), 3, Some(5), Some(11)),
            ("billing/orders".into(), Some(1), 3, Some(20), Some(22)),
            ("billing/payments".into(), Some(0), 4, Some(100), Some(103)),
            ("billing/-".into(), None, 1, None, None),
            ("shipping/orders".into(), Some(0), 2, Some(10), Some(11)),
        ]
    );

    // The same numbers in the tables people read.
    let table = db.run(&["inspect"]).ok();
    assert!(
        table.stdout.lines().next().unwrap().ends_with(": 13 rows"),
        "{}",
        table.stdout
    );
    let cells = table.table_rows();
    assert_eq!(cells[0][0..2], ["billing", "11"]);
    assert_eq!(cells[0][4..9], ["2", "3", "1", "4", "1"]);
    assert_eq!(cells[1][0..2], ["shipping", "2"]);
    assert_eq!(cells[1][4..9], ["0", "2", "0", "0", "0"]);
    assert_eq!(cells[2], ["billing", "orders", "0", "3", "5", "11"]);
    assert_eq!(
        cells[5],
        ["billing", "(no coordinates)", "-", "1", "-", "-"]
    );
    assert_eq!(cells[6], ["shipping", "orders", "0", "2", "10", "11"]);
    assert_eq!(cells.len(), 7);

    // --consumer narrows everything to one consumer.
    let one = db
        .run(&["inspect", "--consumer", "shipping", "--format", "json"])
        .ok()
        .json();
    assert_eq!(one["total_rows"], 2);
    assert_eq!(one["consumers"].as_array().unwrap().len(), 1);
    assert_eq!(one["partitions"].as_array().unwrap().len(), 1);
    // A consumer with no rows (a typo, say) is not an empty inbox.
    let warning = "warning: consumer 'shiping' has no rows in the inbox; `inboxctl inspect` \
                   without --consumer lists the consumers it has";
    let none = db.run(&["inspect", "--consumer", "shiping"]).ok();
    assert!(
        !none.stdout.contains("The inbox is empty"),
        "{}",
        none.stdout
    );
    assert!(none.stdout.contains(": 0 rows"), "{}", none.stdout);
    assert!(none.stderr.contains(warning), "{}", none.stderr);
    let none = db
        .run(&["inspect", "--consumer", "shiping", "--format", "json"])
        .ok();
    assert_eq!(none.json()["total_rows"], 0);
    assert!(none.stderr.contains(warning), "{}", none.stderr);

    // CSV is the partition listing.
    let csv = db.run(&["inspect", "--format", "csv"]).ok();
    assert_eq!(
        csv.stdout.lines().take(2).collect::<Vec<_>>(),
        [
            "consumer,topic,partition,rows,min_offset,max_offset",
            "billing,orders,0,3,5,11"
        ]
    );
}

/// The header counts rows in words: "1 row", "0 rows"; so does prune's dry run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_counts_one_row_in_the_singular() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let endpoint = format!("SQLite file {}", db.dir.path().join("inbox.db").display());
    let empty = db.run(&["inspect"]).ok();
    assert_eq!(
        empty.stdout,
        format!("{endpoint}: 0 rows\nThe inbox is empty.\n")
    );
    db.insert_rows(&[row("billing", "e1", None, now_ms())])
        .await;
    let one = db.run(&["inspect"]).ok();
    assert_eq!(
        one.stdout.lines().next(),
        Some(format!("{endpoint}: 1 row").as_str())
    );
    db.insert_rows(&[row("billing", "e0", None, now_ms() - Duration::days(2))])
        .await;
    let dry = db.run(&["prune", "--older-than", "1d", "--dry-run"]).ok();
    assert!(
        dry.stdout
            .contains("Dry run: would delete 1 row processed before"),
        "{}",
        dry.stdout
    );
}

/// Rows dated ahead of the clock (an application writing local time east of UTC) show how
/// far ahead they are, count as under 1h old, and are warned of once per consumer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_shows_rows_dated_in_the_future() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    // Half a minute of room either way: the run takes less, and the ages stay whole hours.
    let now = now_ms();
    let (ahead, behind) = (
        now + Duration::hours(3) + Duration::seconds(30),
        now - Duration::hours(2) + Duration::seconds(30),
    );
    db.insert_rows(&[
        row("billing", "e1", Some(("orders", 0, 1)), behind),
        row("billing", "e2", Some(("orders", 0, 2)), ahead),
    ])
    .await;
    let minute = |at: DateTime<Utc>| at.format("%Y-%m-%d %H:%M").to_string();
    let table = db.run(&["inspect"]).ok();
    let (oldest, newest) = (minute(behind), minute(ahead));
    assert_eq!(
        table.stdout,
        format!(
            "SQLite file {}: 2 rows
┌──────────┬──────┬───────────────────────────────┬──────────────────────────┬──────┬───────┬───────┬────────┬────────┐
│ CONSUMER ┆ ROWS ┆ OLDEST (UTC)                  ┆ NEWEST (UTC)             ┆ < 1h ┆ 1h-1d ┆ 1d-7d ┆ 7d-30d ┆ >= 30d │
╞══════════╪══════╪═══════════════════════════════╪══════════════════════════╪══════╪═══════╪═══════╪════════╪════════╡
│ billing  ┆    2 ┆ {oldest} (1h 59m ago) ┆ {newest} (in 3h) ┆    1 ┆     1 ┆     0 ┆      0 ┆      0 │
└──────────┴──────┴───────────────────────────────┴──────────────────────────┴──────┴───────┴───────┴────────┴────────┘
┌──────────┬────────┬───────────┬──────┬────────────┬────────────┐
│ CONSUMER ┆ TOPIC  ┆ PARTITION ┆ ROWS ┆ MIN OFFSET ┆ MAX OFFSET │
╞══════════╪════════╪═══════════╪══════╪════════════╪════════════╡
│ billing  ┆ orders ┆         0 ┆    2 ┆          1 ┆          2 │
└──────────┴────────┴───────────┴──────┴────────────┴────────────┘
",
            db.dir.path().join("inbox.db").display()
        )
    );
    assert_eq!(
        table.stderr,
        "warning: 1 row(s) of consumer 'billing' are dated in the future (up to 3h ahead), \
         counted as under 1h old; does the application write local time rather than UTC?\n"
    );
    let lookup = db.run(&["inspect", "--event-id", "e2"]).ok();
    let cells = lookup.table_rows();
    assert_eq!(
        cells[0],
        [
            "billing".to_string(),
            "e2".into(),
            "orders".into(),
            "0".into(),
            "2".into(),
            ahead.format("%Y-%m-%d %H:%M:%S%.3f").to_string(),
            "in 3h".into()
        ]
    );
}

async fn inspect_event_id_answers_did_we_process_it(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let at = now_ms() - Duration::hours(3);
    db.insert_rows(&[
        row("billing", "evt-42", Some(("orders", 2, 1234)), at),
        row("shipping", "evt-42", None, at),
        row("billing", "evt-43", Some(("orders", 2, 1235)), at),
    ])
    .await;

    let json = db
        .run(&["inspect", "--event-id", "evt-42", "--format", "json"])
        .ok()
        .json();
    assert_eq!(json["found"], true);
    let found = json["rows"].as_array().unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(
        (
            found[0]["consumer"].as_str(),
            found[0]["topic"].as_str(),
            found[0]["partition"].as_i64(),
            found[0]["offset"].as_i64()
        ),
        (Some("billing"), Some("orders"), Some(2), Some(1234))
    );
    assert_eq!(parse(&found[0]["processed_at"]), at);
    assert_eq!(
        (found[1]["consumer"].as_str(), found[1]["offset"].as_i64()),
        (Some("shipping"), None)
    );

    let table = db
        .run(&["inspect", "--event-id", "evt-42", "--consumer", "billing"])
        .ok();
    let cells = table.table_rows();
    assert_eq!(cells.len(), 1);
    assert_eq!(cells[0][0..5], ["billing", "evt-42", "orders", "2", "1234"]);

    let missing = db.run(&["inspect", "--event-id", "evt-404"]).ok();
    assert_eq!(
        missing.stdout.trim(),
        "Event 'evt-404' was not processed by any of 2 consumers."
    );
    // Not processed by a consumer that has rows; by one that has none, most likely a typo.
    let missing = db
        .run(&["inspect", "--event-id", "evt-43", "--consumer", "shipping"])
        .ok();
    assert_eq!(missing.stderr, "");
    let missing = db
        .run(&["inspect", "--event-id", "evt-42", "--consumer", "biling"])
        .ok();
    assert_eq!(
        missing.stdout,
        "Event 'evt-42' was not processed by consumer 'biling'.\n"
    );
    assert_eq!(
        missing.stderr,
        "warning: consumer 'biling' has no rows in the inbox; `inboxctl inspect` without \
         --consumer lists the consumers it has\n"
    );
    // A pasted id with a line break in it stays on one line, escaped.
    let missing = db.run(&["inspect", "--event-id", "evt\n404\t"]).ok();
    assert_eq!(
        missing.stdout,
        "Event 'evt\\n404\\t' was not processed by any of 2 consumers.\n"
    );
    let missing = db
        .run(&["inspect", "--event-id", "evt-404", "--format", "json"])
        .ok()
        .json();
    assert_eq!(missing["found"], false);
    assert_eq!(missing["rows"], serde_json::json!([]));

    // Many consumers, looked up many at a time: every one that has the id is found, in order.
    let mut rows: Vec<_> = (0..1100)
        .map(|n| row(&format!("c{n:04}"), "other", None, at))
        .collect();
    for consumer in ["c0000", "c0499", "c0500", "c1099"] {
        rows.push(row(consumer, "evt-many", None, at));
    }
    db.insert_rows(&rows).await;
    let many = db
        .run(&["inspect", "--event-id", "evt-many", "--format", "json"])
        .ok()
        .json();
    assert_eq!(many["consumers_searched"], 1102);
    let consumers: Vec<_> = many["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|found| found["consumer"].as_str().unwrap())
        .collect();
    assert_eq!(consumers, ["c0000", "c0499", "c0500", "c1099"]);
}

/// Consumer a: five old rows, three at the cutoff's edge, one new; consumer b: three old, one new.
async fn seed_for_prune(db: &mut TestDb) -> DateTime<Utc> {
    db.run(&["migrate", "run"]).ok();
    let now = now_ms();
    let cutoff = now - Duration::days(1);
    let mut rows = Vec::new();
    for hour in 1..=5 {
        rows.push(row(
            "a",
            &format!("a-old-{hour}"),
            Some(("t", 0, hour)),
            cutoff - Duration::hours(hour),
        ));
    }
    rows.push(row(
        "a",
        "a-edge-before",
        None,
        cutoff - Duration::milliseconds(1),
    ));
    rows.push(row("a", "a-edge-at", None, cutoff));
    rows.push(row(
        "a",
        "a-edge-after",
        None,
        cutoff + Duration::milliseconds(1),
    ));
    rows.push(row("a", "a-new", None, now));
    for day in 1..=3 {
        rows.push(row(
            "b",
            &format!("b-old-{day}"),
            None,
            cutoff - Duration::days(day),
        ));
    }
    rows.push(row("b", "b-new", None, now));
    db.insert_rows(&rows).await;
    cutoff
}

/// prune's JSON report: each consumer with the rows deleted of it.
fn deleted_by_consumer(json: &serde_json::Value) -> Vec<(String, i64)> {
    json["consumers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["consumer"].as_str().unwrap().to_string(),
                c["deleted"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn ids(names: &[&str]) -> Vec<String> {
    let mut ids: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    ids.sort();
    ids
}

async fn prune_deletes_exactly_the_rows_before_the_cutoff(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let cutoff = seed_for_prune(&mut db).await;
    let before = cutoff.to_rfc3339_opts(SecondsFormat::Millis, true);

    let json = db
        .run(&[
            "prune",
            "--before",
            &before,
            "--yes",
            "--batch-size",
            "2",
            "--format",
            "json",
        ])
        .ok()
        .json();
    // --yes: nothing waits for a count, so there is none; each consumer's rows deleted.
    assert_eq!(json["rows_matched"], serde_json::Value::Null);
    assert_eq!(json["rows_deleted"], 9);
    let deleted = deleted_by_consumer(&json);
    assert_eq!(deleted, [("a".to_string(), 6), ("b".to_string(), 3)]);
    // a: 6 rows in batches of 2 = 3; b: 3 rows = 2.
    assert_eq!(json["batches"], 5);
    assert_eq!(json["interrupted"], false);
    // The boundary: a row processed exactly at the cutoff is kept.
    assert_eq!(
        db.event_ids("a").await,
        ids(&["a-edge-at", "a-edge-after", "a-new"])
    );
    assert_eq!(db.event_ids("b").await, ids(&["b-new"]));

    let again = db.run(&["prune", "--before", &before, "--yes"]).ok();
    assert!(
        again.stdout.starts_with("Nothing to prune"),
        "{}",
        again.stdout
    );
}

async fn prune_older_than_a_duration(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    seed_for_prune(&mut db).await;
    // Cutoff now-60h: a's old rows (25h..29h ago) and b-old-1 (48h) are younger; b-old-2 and -3 older.
    let run = db.run(&["prune", "--older-than", "60h", "--yes"]).ok();
    // Uncounted (--yes), the table has the rows deleted; consumer a had none this old.
    let cells = run.table_rows();
    assert_eq!(cells, vec![vec!["b", "2"]]);
    assert!(
        run.stdout.contains("Deleted 2 rows in 1 batch in"),
        "{}",
        run.stdout
    );
    assert_eq!(db.event_ids("b").await, ids(&["b-old-1", "b-new"]));
    assert_eq!(db.count("processed_messages").await, 11);
}

/// A migrated inbox holding `count` rows of `consumer`, all processed `days` days ago.
async fn inbox_of_old_rows(backend: Backend, consumer: &str, count: u32, days: i64) -> TestDb {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let old = now_ms() - Duration::days(days);
    let rows: Vec<_> = (0..count)
        .map(|n| row(consumer, &format!("e{n:06}"), None, old))
        .collect();
    db.insert_rows(&rows).await;
    db
}

/// Without --batch-size a batch deletes 20,000 rows on PostgreSQL, 5,000 on SQLite and MySQL.
async fn prune_batches_by_the_backends_default_size(backend: Backend) {
    let mut db = inbox_of_old_rows(backend, "a", 25_000, 40).await;
    let json = db
        .run(&[
            "prune",
            "--older-than",
            "30d",
            "--yes",
            "--strategy",
            "index",
            "--format",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(json["rows_deleted"], 25_000);
    let batches = if backend == Backend::Postgres { 2 } else { 5 };
    assert_eq!(json["batches"], batches);
    assert_eq!(db.count("processed_messages").await, 0);
}

async fn prune_honours_consumer_and_max_rows(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let cutoff = seed_for_prune(&mut db).await;
    let before = cutoff.to_rfc3339_opts(SecondsFormat::Millis, true);

    // A consumer the inbox does not have (a typo) prunes nothing, and says so.
    let typo = db
        .run(&["prune", "--before", &before, "--consumer", "bb", "--yes"])
        .ok();
    assert!(
        typo.stderr.contains(
            "warning: the inbox has no rows of consumer 'bb' (`inboxctl inspect` lists the consumers it has)"
        ),
        "{}",
        typo.stderr
    );
    // Nor does one longer than the column holds (MariaDB types such a parameter as a BLOB).
    let long = "c".repeat(600);
    for dry_run in [true, false] {
        let mut args = vec!["prune", "--before", &before, "--consumer", &long, "--yes"];
        if dry_run {
            args.push("--dry-run");
        }
        let run = db.run(&args).ok();
        assert!(
            run.stderr
                .contains("warning: the inbox has no rows of consumer 'cccc"),
            "{}",
            run.stderr
        );
    }
    db.run(&["prune", "--before", &before, "--consumer", "b", "--yes"])
        .ok();
    assert_eq!(db.event_ids("b").await, ids(&["b-new"]));
    assert_eq!(db.event_ids("a").await.len(), 9);
    // inspect shows which consumer was pruned, and up to when; so does --estimate, which
    // reads the planner's statistics once the table has them (and counts before).
    if backend == Backend::Postgres {
        let counted = db.run(&["inspect", "--estimate"]).ok();
        assert_eq!(
            counted.stderr,
            "PostgreSQL has no row estimates for this table (none before the table's first \
             ANALYZE); counted exactly\n"
        );
    }
    match backend {
        Backend::Postgres => db.exec("ANALYZE processed_messages").await,
        Backend::Mysql => db.exec("ANALYZE TABLE processed_messages").await,
        Backend::Sqlite => {}
    }
    let line = format!(
        "Last prune of b: rows processed before {}\n",
        cutoff_time(&before).format("%Y-%m-%d %H:%M:%S%.3f UTC")
    );
    for estimate in [&[][..], &["--estimate"][..]] {
        let inspect =
            |format: &'static str| [&["inspect", "--format", format][..], estimate].concat();
        let inspected = db.run(&inspect("json")).ok().json();
        assert_eq!(
            inspected["total_rows_estimated"],
            !estimate.is_empty() && backend != Backend::Sqlite
        );
        let pruned: Vec<(&str, Option<chrono::DateTime<chrono::Utc>>)> = inspected["consumers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let at = c["pruned_before"].as_str().map(cutoff_time);
                (c["consumer"].as_str().unwrap(), at)
            })
            .collect();
        assert_eq!(pruned, [("a", None), ("b", Some(cutoff_time(&before)))]);
        let table = db.run(&inspect("table")).ok();
        assert!(table.stdout.contains(&line), "{line}{}", table.stdout);
        assert!(
            !table.stdout.contains("Last prune of a"),
            "{}",
            table.stdout
        );
    }

    // --max-rows takes the oldest first: a-old-5, -4, -3, -2; z's old row is not reached.
    db.insert_rows(&[row("z", "z-old", None, cutoff - Duration::days(1))])
        .await;
    let json = db
        .run(&[
            "prune",
            "--before",
            &before,
            "--max-rows",
            "4",
            "--batch-size",
            "3",
            "--yes",
            "--format",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(
        (json["rows_matched"].as_i64(), json["rows_planned"].as_i64()),
        (None, None)
    );
    assert_eq!(json["rows_deleted"], 4);
    assert_eq!(json["batches"], 2);
    assert_eq!(json["max_rows"], 4);
    assert_eq!(
        db.event_ids("a").await,
        ids(&[
            "a-old-1",
            "a-edge-before",
            "a-edge-at",
            "a-edge-after",
            "a-new"
        ])
    );
    // Recorded for a, whose rows went, and not for z, which --max-rows left alone (b's
    // record is its own prune's, above): a record of z would hide its lost messages.
    assert_eq!(recorded_prunes(&mut db).await, ["a", "b"]);
    // In a table, the cap is said: uncounted (no terminal), the rest is not known.
    let table = db
        .run(&["prune", "--before", &before, "--max-rows", "1", "--yes"])
        .ok();
    assert!(
        table
            .stdout
            .ends_with("--max-rows 1 reached: older rows may remain; the next run deletes them.\n"),
        "{}",
        table.stdout
    );
}

/// The consumers of the prunes recorded, one per record, in order.
async fn recorded_prunes(db: &mut TestDb) -> Vec<String> {
    let pool = db.pool().await;
    sqlx::query_scalar("SELECT consumer FROM inboxctl_prunes ORDER BY consumer, pruned_at")
        .fetch_all(&pool)
        .await
        .unwrap()
}

/// 1 when the SQLite inbox is declared WITHOUT ROWID.
const WITHOUT_ROWID: &str =
    "SELECT wr FROM pragma_table_list('processed_messages') WHERE schema = 'main'";

/// A SQLite inbox in the target layout, declared WITHOUT ROWID, not yet migrated.
async fn without_rowid_inbox() -> TestDb {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.exec(
        "CREATE TABLE processed_messages (consumer TEXT NOT NULL, event_id TEXT NOT NULL, topic TEXT, \
         \"partition\" INTEGER, \"offset\" INTEGER, \
         processed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')), \
         PRIMARY KEY (consumer, event_id)) WITHOUT ROWID",
    )
    .await;
    db
}

/// An inbox declared WITHOUT ROWID in the target layout, as a table with a composite key often
/// is: migrate run keeps it as it is, and prune deletes from it exactly the rows it deletes
/// from a rowid table, oldest first, in batches, up to --max-rows. Such a table has no rowid
/// to find a batch's rows by.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_deletes_from_a_without_rowid_inbox() {
    let mut db = without_rowid_inbox().await;
    let cutoff = seed_for_prune(&mut db).await;
    assert_eq!(
        db.scalar(WITHOUT_ROWID).await,
        1,
        "migrate run rebuilt the table"
    );
    let before = cutoff.to_rfc3339_opts(SecondsFormat::Millis, true);

    let dry = db
        .run(&[
            "prune",
            "--before",
            &before,
            "--dry-run",
            "--format",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(dry["rows_matched"], 9);

    // --max-rows takes the oldest first: a-old-5, -4, -3, in a batch of 2 and one of 1.
    let json = db
        .run(&[
            "prune",
            "--before",
            &before,
            "--max-rows",
            "3",
            "--batch-size",
            "2",
            "--yes",
            "--format",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(json["rows_deleted"], 3);
    assert_eq!(json["batches"], 2);
    assert_eq!(
        db.event_ids("a").await,
        ids(&[
            "a-old-1",
            "a-old-2",
            "a-edge-before",
            "a-edge-at",
            "a-edge-after",
            "a-new"
        ])
    );
    assert_eq!(db.event_ids("b").await.len(), 4);

    let json = db
        .run(&[
            "prune",
            "--before",
            &before,
            "--batch-size",
            "2",
            "--yes",
            "--format",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(json["rows_deleted"], 6);
    let deleted = deleted_by_consumer(&json);
    assert_eq!(deleted, [("a".to_string(), 3), ("b".to_string(), 3)]);
    // a: 3 rows in batches of 2 = 2; b: 3 rows = 2.
    assert_eq!(json["batches"], 4);
    assert_eq!(
        db.event_ids("a").await,
        ids(&["a-edge-at", "a-edge-after", "a-new"])
    );
    assert_eq!(db.event_ids("b").await, ids(&["b-new"]));
    // Each run recorded the consumers whose rows it deleted (a, then a and b); inspect reads
    // the table too.
    assert_eq!(recorded_prunes(&mut db).await, ["a", "a", "b"]);
    let inspected = db.run(&["inspect", "--format", "json"]).ok().json();
    assert_eq!(inspected["total_rows"], 4);

    let again = db.run(&["prune", "--before", &before, "--yes"]).ok();
    assert!(
        again.stdout.starts_with("Nothing to prune"),
        "{}",
        again.stdout
    );
}

async fn prune_dry_run_and_refusal_delete_nothing(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let cutoff = seed_for_prune(&mut db).await;
    let before = cutoff.to_rfc3339_opts(SecondsFormat::Millis, true);

    let dry = db.run(&["prune", "--before", &before, "--dry-run"]).ok();
    assert_eq!(dry.table_rows(), vec![vec!["a", "6"], vec!["b", "3"]]);
    assert!(
        dry.stdout
            .contains("Dry run: would delete 9 rows processed before"),
        "{}",
        dry.stdout
    );
    let json = db
        .run(&[
            "prune",
            "--before",
            &before,
            "--dry-run",
            "--max-rows",
            "5",
            "--format",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(
        (json["rows_matched"].as_i64(), json["rows_planned"].as_i64()),
        (Some(9), Some(5))
    );
    assert_eq!(json["rows_deleted"], 0);
    assert_eq!(db.count("processed_messages").await, 13);

    // No terminal to ask on and no --yes: refuse, delete nothing.
    let refused = db.run(&["prune", "--before", &before]).code(2);
    assert!(
        refused
            .stderr
            .contains("refusing to delete 9 rows without confirmation")
            && refused.stderr.contains("--yes"),
        "{}",
        refused.stderr
    );
    assert_eq!(db.count("processed_messages").await, 13);
}

/// On a terminal, prune asks first, naming how many rows would go: `n` deletes nothing, `y`
/// deletes them with a progress bar, and Ctrl-C or SIGTERM at the question deletes nothing,
/// exits 130 or 143 and leaves the terminal as it was: cursor shown, not in raw mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_on_a_terminal_asks_first() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    let old = now_ms() - Duration::days(30);
    let mut rows: Vec<_> = (0..5)
        .map(|n| row("c", &format!("old{n}"), None, old))
        .collect();
    rows.extend((0..3).map(|n| row("c", &format!("new{n}"), None, now_ms())));
    db.insert_rows(&rows).await;
    let prune = |db: &TestDb| {
        let mut command = db.command(&["prune", "--older-than", "1d", "--batch-size", "2"]);
        command.env("TERM", "xterm");
        terminal::Terminal::spawn(command)
    };
    let question = "Delete 5 rows of processed_messages processed before";
    let cursor_shown = |screen: &str| match screen.rfind("\x1b[?25l") {
        Some(hidden) => screen[hidden..].contains("\x1b[?25h"),
        None => true,
    };

    // No, Ctrl-C (a key on a raw terminal), SIGTERM, and yes with Ctrl-C in the same burst
    // of keys: each leaves every row.
    for (answer, exit_code) in [("n", 0), ("\x03", 130), ("TERM", 143), ("y\x03", 130)] {
        let mut asked = prune(&db);
        asked.expect(question);
        match answer {
            "TERM" => send_signal(answer, &asked.pid().to_string()),
            keys => asked.send(keys),
        }
        let (code, screen, cooked) = asked.wait();
        assert_eq!(code, exit_code, "{answer:?}: {screen}");
        assert!(screen.contains("Nothing deleted."), "{answer:?}: {screen}");
        assert!(cursor_shown(&screen) && cooked, "{answer:?}: {screen:?}");
        assert_eq!(db.count("processed_messages").await, 8, "{answer:?}");
    }

    let mut yes = prune(&db);
    yes.expect(question);
    yes.send("y");
    let (code, screen, cooked) = yes.wait();
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("/5 rows ("), "no progress bar: {screen:?}");
    assert!(screen.contains("Deleted 5 rows in 3 batches"), "{screen}");
    assert!(cursor_shown(&screen) && cooked, "{screen:?}");
    assert_eq!(db.count("processed_messages").await, 3);
}

/// Starts `prune --older-than 1d --yes --batch-size 3 --format json MORE` on a table of
/// `rows` old rows and sends it `signal` (`INT`, as Ctrl-C does, or `TERM`) once the first
/// batch is gone.
async fn prune_interrupted_once_under_way(
    db: &mut TestDb,
    rows: i64,
    more: &[&str],
    signal: &str,
) -> std::process::Child {
    let mut args = vec!["prune", "--older-than", "1d", "--yes", "--batch-size", "3"];
    args.extend(["--format", "json"]);
    args.extend(more);
    let child = db.spawn(&args);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while db.count("processed_messages").await == rows {
        assert!(
            std::time::Instant::now() < deadline,
            "prune never started deleting"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    send_signal(signal, &child.id().to_string());
    child
}

async fn prune_interrupted_reports_what_it_deleted(backend: Backend) {
    prune_stopped_by_a_signal_reports_what_it_deleted(backend, "INT", 130, "interrupted").await;
}

/// SIGTERM, as `kill`, systemd or Kubernetes send it to a prune run by a scheduler, stops
/// prune as Ctrl-C does, between two batches, and says so in the exit code (143).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_stopped_by_sigterm_finishes_its_batch() {
    prune_stopped_by_a_signal_reports_what_it_deleted(
        Backend::Sqlite,
        "TERM",
        143,
        "stopped by SIGTERM",
    )
    .await;
}

/// Sends prune `signal` once its first batch is gone: it stops after the batch in flight
/// with `code`, and says (`said`) exactly what it deleted.
async fn prune_stopped_by_a_signal_reports_what_it_deleted(
    backend: Backend,
    signal: &str,
    code: i32,
    said: &str,
) {
    let mut db = inbox_of_old_rows(backend, "c", 20_000, 30).await;

    let child = prune_interrupted_once_under_way(&mut db, 20_000, &[], signal).await;
    let run = Run::from(child.wait_with_output().unwrap()).code(code);
    let json = run.json();
    assert_eq!(json["interrupted"], true);
    let left = db.count("processed_messages").await;
    assert!(
        left > 0,
        "the run finished before the signal; nothing was tested"
    );
    // Batches are whole: what it says it deleted is exactly what is gone.
    assert_eq!(json["rows_deleted"].as_i64().unwrap(), 20_000 - left);
    assert!(
        run.stderr.contains(&format!(
            "{said}: deleted {} rows; re-run the same command to continue",
            20_000 - left
        )),
        "{}",
        run.stderr
    );
    // The JSON says it too, as a stop at once does.
    assert_eq!(
        json["warning"],
        format!(
            "{said}: deleted {} rows; re-run the same command to continue",
            20_000 - left
        )
    );

    // Re-running finishes the job.
    db.run(&["prune", "--older-than", "1d", "--yes"]).ok();
    assert_eq!(db.count("processed_messages").await, 0);
}

/// Locks every row of `consumer` in a transaction of its own, which holds the locks until it
/// is rolled back.
async fn lock_rows_of(db: &mut TestDb, consumer: &str) -> sqlx::Transaction<'static, sqlx::Any> {
    let pool = db.pool().await;
    let mut lock = pool.begin().await.unwrap();
    sqlx::raw_sql(&format!(
        "SELECT event_id FROM processed_messages WHERE consumer = '{consumer}' FOR UPDATE"
    ))
    .execute(&mut *lock)
    .await
    .unwrap();
    lock
}

/// prune of the rows older than a day, 10 at a time, without asking.
const PRUNE_OLD_ROWS_BY_TENS: &[&str] =
    &["prune", "--older-than", "1d", "--yes", "--batch-size", "10"];

/// A migrated inbox holding 100 rows of consumer `c`, e000000 to e000099, a second apart
/// (oldest first) and 30 days old.
async fn a_month_of_old_rows(db: &mut TestDb) {
    db.run(&["migrate", "run"]).ok();
    let old = now_ms() - Duration::days(30);
    let rows: Vec<_> = (0..100)
        .map(|n| row("c", &format!("e{n:06}"), None, old + Duration::seconds(n)))
        .collect();
    db.insert_rows(&rows).await;
}

/// Another session deletes the rows a batch selected while the batch waits for their locks:
/// PostgreSQL then skips them, and the batch deletes nothing although older rows remain.
/// prune selects again instead of taking the empty batch for the end of the consumer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_emptied_by_another_session_does_not_end_the_prune() {
    let mut db = TestDb::new(Backend::Postgres).await;
    a_month_of_old_rows(&mut db).await;
    // The application deletes the 10 oldest rows in a transaction still open.
    let pool = db.pool().await;
    let mut other = pool.begin().await.unwrap();
    sqlx::raw_sql(
        "DELETE FROM processed_messages WHERE event_id IN \
         (SELECT event_id FROM processed_messages ORDER BY processed_at LIMIT 10)",
    )
    .execute(&mut *other)
    .await
    .unwrap();
    let mut child = db.spawn(
        &[
            PRUNE_OLD_ROWS_BY_TENS,
            &["--strategy", "index", "--format", "json"],
        ]
        .concat(),
    );
    until_it_waits_for_a_lock(&mut db, &mut child).await;
    other.commit().await.unwrap();
    let run = Run::from(child.wait_with_output().unwrap()).ok();
    assert_eq!(run.stderr, "");
    let json = run.json();
    assert_eq!(json["rows_deleted"], 90);
    assert_eq!(db.count("processed_messages").await, 0);
    // The empty batch's record was rolled back with it; the next batch recorded once.
    assert_eq!(recorded_prunes(&mut db).await, ["c"]);
}

/// The application holds row e000005 and then asks for e000000, which prune's batch
/// already holds while it waits for e000005: a deadlock, whose victim is prune's batch (on
/// PostgreSQL the session that looks first, prune's; on MariaDB the transaction that changed
/// less). The batch is tried again once the application commits, and prune ends as if
/// nothing had happened: every old row deleted, the application's change kept, exit 0.
async fn a_batch_that_hits_a_deadlock_is_tried_again(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    a_month_of_old_rows(&mut db).await;
    let mut strategy = "index";
    match backend {
        Backend::Postgres => {
            // Pages in order, so that the batch takes e000000 before it meets e000005. Prune's
            // session looks for a deadlock after 2 s of waiting, the application's never.
            strategy = "blocks";
            db.set_database_default("deadlock_timeout", "2s").await;
        }
        _ => db.exec("CREATE TABLE ballast (n INT)").await,
    }
    let pool = db.pool().await;
    let mut application = pool.begin().await.unwrap();
    let before = match backend {
        Backend::Postgres => "SET LOCAL deadlock_timeout = '1h'",
        // Weight: InnoDB rolls back the transaction that changed fewer rows.
        _ => "INSERT INTO ballast SELECT a.seq * 100 + b.seq FROM seq_0_to_99 a, seq_0_to_99 b",
    };
    sqlx::raw_sql(before)
        .execute(&mut *application)
        .await
        .unwrap();
    let hold = |id: &str| {
        format!(
            "UPDATE processed_messages SET topic = 'held' WHERE consumer = 'c' AND event_id = '{id}'"
        )
    };
    sqlx::raw_sql(&hold("e000005"))
        .execute(&mut *application)
        .await
        .unwrap();
    let mut child = db.spawn(
        &[
            PRUNE_OLD_ROWS_BY_TENS,
            &["--strategy", strategy, "--format", "json", "-v"],
        ]
        .concat(),
    );
    until_it_waits_for_a_lock(&mut db, &mut child).await;
    sqlx::raw_sql(&hold("e000000"))
        .execute(&mut *application)
        .await
        .expect("the application's transaction is not the deadlock's victim");
    application.commit().await.unwrap();
    let run = Run::from(child.wait_with_output().unwrap()).ok();
    assert!(
        run.stderr.to_lowercase().contains("deadlock")
            && run.stderr.contains("trying again (2 of 20)"),
        "{}",
        run.stderr
    );
    assert_eq!(run.json()["rows_deleted"], 100);
    assert_eq!(db.count("processed_messages").await, 0);
}

/// Waits up to 60 s for `child` (prune) to wait for a row lock of the test's database.
async fn until_it_waits_for_a_lock(db: &mut TestDb, child: &mut std::process::Child) {
    until_it_waits(db, child, waits_for_a_lock).await;
}

/// Waits up to 60 s for `child` to wait for a lock on a whole table of the test's database
/// (PostgreSQL: any lock; MySQL: a table or metadata lock).
async fn until_it_waits_for_a_table_lock(db: &mut TestDb, child: &mut std::process::Child) {
    until_it_waits(db, child, async |db: &mut TestDb| {
        let waiting = match db.backend {
            Backend::Postgres => {
                "SELECT COUNT(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND wait_event_type = 'Lock'"
            }
            _ => {
                "SELECT COUNT(*) FROM information_schema.processlist \
                 WHERE db = DATABASE() AND state LIKE 'Waiting for table%'"
            }
        };
        db.scalar(waiting).await > 0
    })
    .await;
}

async fn until_it_waits(
    db: &mut TestDb,
    child: &mut std::process::Child,
    waits: impl AsyncFn(&mut TestDb) -> bool,
) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !waits(db).await {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the command ended ({status}) before it waited on the lock");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the command never waited on the lock"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Whether a session of the test's database waits for a row lock.
async fn waits_for_a_lock(db: &mut TestDb) -> bool {
    match db.backend {
        Backend::Postgres => {
            db.scalar(
                "SELECT COUNT(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND wait_event_type = 'Lock'",
            )
            .await
                > 0
        }
        // Not information_schema.innodb_trx: InnoDB refreshes it only when it was last read
        // over 0.1 s before, so polled faster it never changes.
        _ => {
            let pool = db.pool().await;
            let status: String = sqlx::query("SHOW ENGINE INNODB STATUS")
                .fetch_one(&pool)
                .await
                .unwrap()
                .get(2);
            let database = db.url.rsplit('/').next().unwrap();
            // The lock a transaction waits for is named on the lines after this.
            let table = format!(" of table `{database}`.`processed_messages` ");
            status
                .split("TRX HAS BEEN WAITING")
                .skip(1)
                .any(|waiting| waiting.lines().take(3).any(|line| line.contains(&table)))
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_that_hits_a_deadlock_is_tried_again_on_postgres() {
    a_batch_that_hits_a_deadlock_is_tried_again(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_that_hits_a_deadlock_is_tried_again_on_mysql() {
    a_batch_that_hits_a_deadlock_is_tried_again(Backend::Mysql).await;
}

/// Checks the JSON result of a prune stopped at once: its fields in order, the rows and
/// batches it had deleted, and its warning.
fn assert_stopped_at_once(result: &serde_json::Value, deleted: (u64, u64), warning: &str) {
    let fields: Vec<&String> = result.as_object().unwrap().keys().collect();
    assert_eq!(
        fields,
        [
            "database",
            "cutoff",
            "rows_deleted",
            "batches",
            "interrupted",
            "stopped_at_once",
            "warning"
        ],
        "{result}"
    );
    let expected = serde_json::json!([deleted.0, deleted.1, true, true, warning]);
    let fields = [
        "rows_deleted",
        "batches",
        "interrupted",
        "stopped_at_once",
        "warning",
    ];
    let found: Vec<&serde_json::Value> = fields.iter().map(|field| &result[*field]).collect();
    assert_eq!(serde_json::json!(found), expected, "{result}");
}

/// A migrated PostgreSQL inbox of 30-day-old rows: consumer a's 20 (a000000 to a000019),
/// then consumer b's 30 (b000000 to b000029).
async fn postgres_inbox_of_a_and_b() -> TestDb {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    let old = now_ms() - Duration::days(30);
    let mut rows: Vec<_> = (0..20)
        .map(|n| row("a", &format!("a{n:06}"), None, old))
        .collect();
    rows.extend((0..30).map(|n| row("b", &format!("b{n:06}"), None, old)));
    db.insert_rows(&rows).await;
    db
}

/// A batch that fails ends prune with exit 1, and the report still says what the batches
/// before it deleted: here consumer a's 20 rows go in two batches, then consumer b's batch
/// runs out of lock_timeout on rows another transaction holds.
#[tokio::test]
async fn a_prune_that_fails_midway_reports_what_it_deleted() {
    let mut db = postgres_inbox_of_a_and_b().await;
    db.set_database_default("lock_timeout", "300ms").await;
    let lock = lock_rows_of(&mut db, "b").await;

    let args = [
        PRUNE_OLD_ROWS_BY_TENS,
        &["--strategy", "index", "--format", "json"],
    ]
    .concat();
    let run = db.run(&args).code(1);
    assert!(
        run.stderr
            .starts_with("error: prune stopped after deleting 20 rows; re-run to continue: ")
            && run.stderr.contains("lock timeout"),
        "{}",
        run.stderr
    );
    let json = run.json();
    // The error is in the report too, for a script that reads only stdout.
    assert_eq!(
        format!("error: {}\n", json["error"].as_str().unwrap()),
        run.stderr
    );
    assert_eq!(json["rows_deleted"], 20, "{json}");
    assert_eq!(json["batches"], 2, "{json}");
    let deleted: Vec<_> = json["consumers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["consumer"].clone(), c["deleted"].clone()))
        .collect();
    assert_eq!(
        deleted,
        [
            (serde_json::json!("a"), serde_json::json!(20)),
            (serde_json::json!("b"), serde_json::json!(0))
        ],
        "{json}"
    );
    assert_eq!(db.event_ids("a").await, Vec::<String>::new());
    assert_eq!(db.event_ids("b").await.len(), 30);
    // b's failed batch took its record with it: b's rows are all there, and compare must
    // still call b's missing offsets lost.
    assert_eq!(recorded_prunes(&mut db).await, ["a"]);

    lock.rollback().await.unwrap();
    let again = db.run(&args).ok().json();
    assert_eq!(again["rows_deleted"], 30, "{again}");
    assert_eq!(again.get("error"), None, "{again}");
    assert_eq!(db.count("processed_messages").await, 0);
    assert_eq!(recorded_prunes(&mut db).await, ["a", "b"]);
}

/// A batch whose connection is lost (here ended by the server while the batch waits for a
/// lock) ends prune with exit 1; the error says that the batch in flight may have gone
/// too, since the server may have committed it and lost only the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_that_loses_its_connection_says_the_batch_in_flight_may_have_gone() {
    let mut db = postgres_inbox_of_a_and_b().await;
    let lock = lock_rows_of(&mut db, "b").await;
    let args = [PRUNE_OLD_ROWS_BY_TENS, &["--strategy", "index"]].concat();
    let mut child = db.spawn(&args);
    until_it_waits_for_a_lock(&mut db, &mut child).await;
    db.exec(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND wait_event_type = 'Lock'",
    )
    .await;
    let run = Run::from(child.wait_with_output().unwrap());
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.starts_with(
            "error: prune stopped after deleting 20 rows (and perhaps the batch in flight, whose \
             outcome was lost with the connection); re-run to continue: "
        ),
        "{}",
        run.stderr
    );
    lock.rollback().await.unwrap();
    assert_eq!(db.event_ids("b").await.len(), 30);
}

/// A batch that cannot finish (its rows locked by another transaction): the first Ctrl-C
/// waits for it, a second stops prune at once and says what it had deleted. The server
/// cancels the batch while the lock is still held, and the next run deletes the rest.
///
/// With `cancel_can_connect` false, prune runs as a role allowed one connection, so the
/// cancel cannot reach the server: prune warns, and PostgreSQL's own check that prune is
/// still there rolls the batch back.
async fn a_second_ctrl_c_stops_a_stuck_prune_at_once(
    backend: Backend,
    cancel_can_connect: bool,
    second: &str,
) {
    // Consumer a's 20 rows go first; consumer b's 30 are locked.
    let mut db = inbox_of_old_rows(backend, "a", 20, 30).await;
    let mut url = db.url.clone();
    let password = "pruners-s3cret";
    if !cancel_can_connect {
        let role = db
            .role(&format!("PASSWORD '{password}' CONNECTION LIMIT 1"))
            .await;
        db.exec(&format!(
            "GRANT ALL ON SCHEMA public TO {role}; \
             GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}"
        ))
        .await;
        url = url.replacen("postgres@", &format!("{role}:{password}@"), 1);
    }
    let old = now_ms() - Duration::days(30);
    let mut rows: Vec<_> = (0..30)
        .map(|n| row("b", &format!("b{n:06}"), None, old))
        .collect();
    // Two consumers between "a" and "b" whose 4 rows share the batch before the stuck
    // one: the stop counts it too.
    for consumer in ["ax", "ay"] {
        rows.push(row(consumer, "e1", None, old));
        rows.push(row(consumer, "e2", None, old));
    }
    db.insert_rows(&rows).await;
    let lock = lock_rows_of(&mut db, "b").await;
    let stderr_file = db.dir.path().join("prune.stderr");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("inboxctl"))
        .args(["prune", "--older-than", "1d", "--yes", "--batch-size", "10"])
        .args(["--strategy", "index", "--format", "json"])
        .env("DATABASE_URL", &url)
        .current_dir(db.dir.path())
        .stdout(std::process::Stdio::piped())
        // A file, read while prune runs: it says when the first Ctrl-C has been taken.
        .stderr(std::fs::File::create(&stderr_file).unwrap())
        .spawn()
        .unwrap();
    let stderr = || std::fs::read_to_string(&stderr_file).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    until_it_waits_for_a_lock(&mut db, &mut child).await;
    let pid = child.id().to_string();
    // Ctrl-C, then the second signal once the first was taken, until prune is gone.
    let first = "Ctrl-C: stopping after the batch in flight (Ctrl-C again stops at once)";
    send_signal("INT", &pid);
    while !stderr().contains(first) {
        assert!(std::time::Instant::now() < deadline, "prune ignored Ctrl-C");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    while child.try_wait().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "prune ignored {second}"
        );
        send_signal(second, &pid);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let output = child.wait_with_output().unwrap();
    let run = Run {
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: stderr(),
        code: output.status.code().unwrap_or(-1),
    };
    // The exit code is the first signal's.
    assert_eq!(run.code, 130, "{}", run.stderr);
    let again = match second {
        "INT" => "Ctrl-C again",
        _ => "SIGTERM after Ctrl-C",
    };
    for needle in [
        first.to_string(),
        format!("{again}: cancelling the batch in flight on the server"),
        format!(
            "warning: {again}: stopping now (24 rows deleted); a batch is done whole or not at \
             all, and running the same command again does the rest"
        ),
    ] {
        assert!(run.stderr.contains(&needle), "{needle}\n{}", run.stderr);
    }
    // A script reading the result gets one: what the batches before the stop deleted.
    assert_stopped_at_once(
        &run.json(),
        (24, 3),
        &format!(
            "{again}: stopping now (24 rows deleted); a batch is done whole or not at all, and \
             running the same command again does the rest"
        ),
    );
    let warned = run.stderr.contains(
        "warning: could not cancel the batch in flight on the server (could not connect: ",
    );
    assert_eq!(warned, !cancel_can_connect, "{}", run.stderr);
    if !cancel_can_connect {
        assert!(
            run.stderr.contains(
                "; PostgreSQL 14 and later roll it back within a second of the client's going; \
                 older versions apply it once the lock it waits on goes"
            ),
            "{}",
            run.stderr
        );
        // The driver's cause, once.
        assert_eq!(
            run.stderr.matches("too many connections for role").count(),
            1,
            "{}",
            run.stderr
        );
    }
    assert!(!run.stderr.contains(password) && !run.stdout.contains(password));
    // The stop cancels the batch on the server, which rolls it back while the lock is still
    // held: nothing is applied later. (Without the cancel, PostgreSQL 14 and later would
    // still see that prune is gone within a second; MySQL would apply the batch.)
    // Well within MySQL's lock wait timeout (50 s), which would roll the batch back too.
    let cancelled_by = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while waits_for_a_lock(&mut db).await {
        assert!(
            std::time::Instant::now() < cancelled_by,
            "prune's batch was left waiting"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    lock.rollback().await.unwrap();
    assert_eq!(db.count("processed_messages").await, 30);
    db.run(&["prune", "--older-than", "1d", "--yes"]).ok();
    assert_eq!(db.count("processed_messages").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_ctrl_c_stops_a_stuck_prune_at_once_on_postgres() {
    a_second_ctrl_c_stops_a_stuck_prune_at_once(Backend::Postgres, true, "INT").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_ctrl_c_stops_a_stuck_prune_at_once_on_mysql() {
    // SIGTERM after Ctrl-C: the exit code is still Ctrl-C's.
    a_second_ctrl_c_stops_a_stuck_prune_at_once(Backend::Mysql, true, "TERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_prune_is_rolled_back_when_its_cancel_cannot_connect() {
    a_second_ctrl_c_stops_a_stuck_prune_at_once(Backend::Postgres, false, "INT").await;
}

/// Ctrl-C during a long `--pause` stops prune then, not when the pause is over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_interrupted_during_a_pause_stops_at_once() {
    let mut db = inbox_of_old_rows(Backend::Sqlite, "c", 20, 30).await;

    // The first batch goes at once; then prune pauses for an hour.
    let mut child = prune_interrupted_once_under_way(&mut db, 20, &["--pause", "1h"], "INT").await;
    // Well inside the hour: the pause gave way to Ctrl-C.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("prune still paused a minute after Ctrl-C");
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let run = Run::from(child.wait_with_output().unwrap()).code(130);
    let json = run.json();
    assert_eq!(json["interrupted"], true);
    assert_eq!(json["rows_deleted"], 3);
    assert_eq!(json["batches"], 1);
    assert_eq!(db.count("processed_messages").await, 17);
}

async fn commands_on_a_missing_table_say_what_to_do(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.store().await; // creates the SQLite file, but no table
    for args in [
        vec!["inspect"],
        vec!["inspect", "--event-id", "x"],
        vec!["prune", "--older-than", "7d", "--yes"],
    ] {
        let run = db.run(&args).code(1);
        assert!(
            run.stderr
                .contains("table processed_messages does not exist")
                && run.stderr.contains("inboxctl migrate run"),
            "{args:?}: {}",
            run.stderr
        );
    }
    db.exec("CREATE TABLE processed_messages (event_id VARCHAR(255) PRIMARY KEY, consumer VARCHAR(255) NOT NULL, processed_at TIMESTAMP)").await;
    let classic = db.run(&["inspect"]).code(1);
    assert!(
        classic.stderr.contains("has the classic layout"),
        "{}",
        classic.stderr
    );
}

/// PostgreSQL's page-range strategy deletes exactly what the index strategy does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_by_blocks_deletes_exactly_the_rows_before_the_cutoff() {
    let mut db = TestDb::new(Backend::Postgres).await;
    let cutoff = seed_for_prune(&mut db).await;
    let before = cutoff.to_rfc3339_opts(SecondsFormat::Millis, true);

    let only_b = db
        .run(&[
            "prune",
            "--before",
            &before,
            "--consumer",
            "b",
            "--strategy",
            "blocks",
            "--yes",
            "-v",
            "--format",
            "json",
        ])
        .ok();
    let only_b = only_b.json();
    assert_eq!(only_b["strategy"], "blocks");
    assert_eq!(only_b["rows_deleted"], 3);
    assert_eq!(db.event_ids("b").await, ids(&["b-new"]));
    assert_eq!(db.event_ids("a").await.len(), 9);

    let all = db
        .run(&[
            "prune",
            "--before",
            &before,
            "--strategy",
            "blocks",
            "--batch-size",
            "2",
            "--pause",
            "1ms",
            "--yes",
            "-v",
            "--format",
            "json",
        ])
        .ok();
    let all = all.json();
    assert_eq!(all["rows_matched"], serde_json::Value::Null);
    assert_eq!(all["rows_deleted"], 6);
    assert_eq!(all["consumers"][0]["consumer"], "a");
    assert_eq!(all["consumers"][0]["deleted"], 6);
    // The boundary: a row processed exactly at the cutoff is kept.
    assert_eq!(
        db.event_ids("a").await,
        ids(&["a-edge-at", "a-edge-after", "a-new"])
    );
    assert_eq!(db.count("processed_messages").await, 4);
}

/// An analysed PostgreSQL inbox of four consumers (c0..c3) interleaved as they arrive:
/// `old` rows processed 40 days ago first, as an inbox fills, then `new` of a day ago.
async fn interleaved_inbox(old: u32, new: u32) -> TestDb {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(&format!(
        "INSERT INTO processed_messages (consumer, event_id, topic, \"partition\", \"offset\", processed_at) \
         SELECT 'c' || (i % 4), 'e' || i, 't', i % 3, i, \
                TIMESTAMPTZ '{}' - make_interval(days => CASE WHEN i <= {old} THEN 40 ELSE 1 END) \
         FROM generate_series(1, {}) AS i ORDER BY i",
        now_ms().to_rfc3339(),
        old + new
    ))
    .await;
    db.exec("ANALYZE processed_messages").await;
    db
}

/// A consumer new since the table was last analysed: PostgreSQL estimates it at one row and
/// then takes every index that starts with consumer for as good as another. prune (both
/// strategies), its dry run and inspect --estimate still read it through the (consumer,
/// processed_at) index alone, and only the entries older than the cutoff and one more;
/// inspect --event-id reads one entry of the primary key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_the_statistics_do_not_know_is_read_through_its_time_index() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    db.analyse_with_one_known_consumer().await;
    // 100 rows of 40 days ago, then 20,000 of the last hours: none of them analysed.
    db.exec(&format!(
        "INSERT INTO processed_messages (consumer, event_id, topic, \"partition\", \"offset\", processed_at) \
         SELECT 'fresh', 'f' || i, 't', 0, i, \
                TIMESTAMPTZ '{}' - CASE WHEN i <= 100 THEN INTERVAL '40 days' ELSE make_interval(secs => 20100 - i) END \
         FROM generate_series(1, 20100) AS i ORDER BY i",
        now_ms().to_rfc3339(),
    ))
    .await;
    let time_index = "processed_messages_consumer_processed_at_idx";
    let prune = |more: &[&'static str]| {
        let mut args = vec!["prune", "--older-than", "30d", "--consumer", "fresh"];
        args.extend_from_slice(more);
        args
    };
    // Each command, the one index it may read, and how many of its entries at most: those
    // older than the cutoff and the first newer one that ends the range, or the one event.
    for (args, allowed, most) in [
        (prune(&["--dry-run"]), time_index, 101),
        (
            vec!["inspect", "--estimate", "--consumer", "fresh"],
            time_index,
            101,
        ),
        (
            vec!["inspect", "--event-id", "f500", "--consumer", "fresh"],
            "processed_messages_pkey",
            1,
        ),
        (
            prune(&["--strategy", "index", "--max-rows", "50", "--yes"]),
            time_index,
            101,
        ),
        (prune(&["--strategy", "blocks", "--yes"]), time_index, 101),
    ] {
        let read = db.index_tuples_read_by(|db| db.run(&args).ok()).await;
        for (index, tuples) in &read {
            if index != allowed {
                assert_eq!(
                    *tuples, 0,
                    "{args:?} read {tuples} entries of {index}: {read:?}"
                );
            }
        }
        assert!(read[allowed] <= most, "{args:?}: {read:?}");
    }
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM processed_messages WHERE consumer = 'fresh'")
            .await,
        20_000
    );
}

/// On an analysed table where half the rows go, `auto` reads page ranges; each batch is one
/// bounded range, the ranges follow each other from the first page to the last, and a batch
/// deletes about --batch-size rows, the first one included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_auto_takes_page_ranges_for_a_large_share() {
    let mut db = interleaved_inbox(6000, 6000).await;

    let run = db
        .run(&[
            "prune",
            "--older-than",
            "30d",
            "--batch-size",
            "500",
            "--yes",
            "-v",
            "--format",
            "json",
        ])
        .ok();
    let json = run.json();
    assert_eq!(json["strategy"], "blocks");
    assert_eq!(json["rows_deleted"], 6000);
    // No count under --yes, and a page range's batch counts rows, not whose they were.
    let consumers = json["consumers"].as_array().unwrap();
    assert_eq!(consumers.len(), 4);
    for consumer in consumers {
        assert_eq!(consumer["matched"], serde_json::Value::Null, "{consumer}");
        assert_eq!(consumer["deleted"], serde_json::Value::Null, "{consumer}");
    }
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM processed_messages WHERE processed_at < now() - interval '30 days'")
            .await,
        0
    );
    assert_eq!(db.count("processed_messages").await, 6000);

    // "batch N: deleted K rows in pages A..B", one line per batch.
    let batches: Vec<(u64, u64, u64)> = run
        .stderr
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("batch ")?;
            let (_, rest) = rest.split_once(": deleted ")?;
            let (deleted, pages) = rest.split_once(" rows in pages ")?;
            let (from, to) = pages.split_once("..")?;
            Some((deleted.parse().ok()?, from.parse().ok()?, to.parse().ok()?))
        })
        .collect();
    assert_eq!(batches.len() as u64, json["batches"].as_u64().unwrap());
    assert!(batches.len() >= 10, "{batches:?}");
    assert_eq!(batches[0].1, 0);
    for pair in batches.windows(2) {
        assert_eq!(
            pair[0].2, pair[1].1,
            "ranges follow each other: {batches:?}"
        );
    }
    let pages = db
        .scalar(
            "SELECT pg_relation_size('processed_messages') / current_setting('block_size')::int",
        )
        .await as u64;
    assert_eq!(batches.last().unwrap().2, pages);
    assert_eq!(batches.iter().map(|b| b.0).sum::<u64>(), 6000);
    // The old rows fill the first pages, as in any inbox, and the first guess assumes so:
    // no batch, the first included, deletes more than half as much again as --batch-size.
    // (Not exactly --batch-size: the guess takes the table's average row, and the first
    // pages, with the shortest event ids, hold more rows than the average page.)
    for batch in &batches {
        assert!(
            batch.0 <= 750,
            "a batch deleted {} rows, --batch-size 500: {batches:?}",
            batch.0
        );
    }
    // After the first, the density is measured: a batch stays within a page's worth of rows.
    let rows_per_page = 12_000_u64.div_ceil(pages);
    for batch in &batches[1..] {
        assert!(
            batch.0 <= 500 + rows_per_page,
            "a batch deleted {} rows ({rows_per_page} rows a page): {batches:?}",
            batch.0
        );
    }
}

/// Four consumers' interleaved rows: a dry run counts each consumer's rows older than the
/// cutoff exactly; a page-range prune under --yes deletes them all without counting first and
/// reports the total, as its batches count rows, not whose they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_by_pages_counts_in_a_dry_run_and_deletes_every_consumers_rows() {
    let mut db = interleaved_inbox(200_000, 20_000).await;

    let dry = db
        .run(&[
            "prune",
            "--older-than",
            "30d",
            "--dry-run",
            "--format",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(dry["strategy"], "blocks");
    assert_eq!(dry["rows_matched"], 200_000);
    assert_eq!(dry["rows_planned"], 200_000);
    assert_eq!(dry["rows_deleted"], 0);
    let matched: Vec<(String, i64)> = dry["consumers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["consumer"].as_str().unwrap().to_string(),
                c["matched"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        matched,
        [
            ("c0", 50_000),
            ("c1", 50_000),
            ("c2", 50_000),
            ("c3", 50_000)
        ]
        .map(|(c, n)| (c.to_string(), n))
    );
    assert_eq!(db.count("processed_messages").await, 220_000);

    let run = db
        .run(&[
            "prune",
            "--older-than",
            "30d",
            "--batch-size",
            "1000",
            "--yes",
        ])
        .ok();
    // No consumer's share is known: no table, only the total.
    assert!(
        run.stdout.starts_with("Deleted 200000 rows in ")
            && run.stdout.contains(" page-range batches in "),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("CONSUMER"), "{}", run.stdout);
    assert_eq!(db.count("processed_messages").await, 20_000);

    // Again, the statistics still saying most of the table is old: nothing is, so no page
    // is read and no batch runs.
    let again = db
        .run(&["prune", "--older-than", "30d", "--yes", "--format", "json"])
        .ok()
        .json();
    assert_eq!(again["strategy"], "blocks");
    assert_eq!(again["rows_matched"], 0);
    assert_eq!(again["batches"], 0);
    assert_eq!(db.count("processed_messages").await, 20_000);
}

/// An inbox partitioned by the application has no pages of its own: page ranges are refused
/// there, and `auto` deletes through the index.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_inbox_is_pruned_through_the_index() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.exec(
        "CREATE TABLE processed_messages (consumer TEXT NOT NULL, event_id TEXT NOT NULL, \
         processed_at TIMESTAMPTZ NOT NULL DEFAULT now(), topic TEXT, \"partition\" INT, \
         \"offset\" BIGINT, PRIMARY KEY (consumer, event_id, processed_at)) \
         PARTITION BY RANGE (processed_at)",
    )
    .await;
    db.exec(
        "CREATE TABLE processed_old PARTITION OF processed_messages \
         FOR VALUES FROM (MINVALUE) TO (now() - interval '10 days')",
    )
    .await;
    db.exec(
        "CREATE TABLE processed_new PARTITION OF processed_messages \
         FOR VALUES FROM (now() - interval '10 days') TO (MAXVALUE)",
    )
    .await;
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) \
         SELECT 'c', 'e' || i, now() - make_interval(days => i) FROM generate_series(1, 40) AS i",
    )
    .await;
    db.exec("ANALYZE processed_messages").await;

    let refused = db
        .run(&[
            "prune",
            "--older-than",
            "30d",
            "--strategy",
            "blocks",
            "--yes",
        ])
        .code(2);
    assert!(
        refused.stderr.contains("in a plain table"),
        "{}",
        refused.stderr
    );
    assert_eq!(db.count("processed_messages").await, 40);
    let json = db
        .run(&["prune", "--older-than", "30d", "--yes", "--format", "json"])
        .ok()
        .json();
    assert_eq!(json["strategy"], "index");
    // Days 30 to 40: day 30's row was stamped a moment before prune took its cutoff.
    assert_eq!(json["rows_deleted"], 11);
    assert_eq!(db.count("processed_messages").await, 29);
}

/// SQLite sorts a number before every text, so a processed_at written as seconds since 1970
/// is never older than a cutoff: prune keeps such rows, and says how many, dry run or not.
/// So it does with an empty text, which sorts before every time too. Go's zero time (year
/// 1) is a time, and older than any cutoff.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_rows_dated_by_a_number_are_kept_and_counted() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) VALUES \
         ('a', 'epoch', 1764583200), ('a', 'epoch-real', 1764583200.5), ('a', 'empty', ''), \
         ('a', 'old', '2020-01-01 00:00:00.000'), ('a', 'zero', '0001-01-01 00:00:00'), \
         ('b', 'epoch', 1700000000), \
         ('c', 'old', '2020-01-01 00:00:00.000')",
    )
    .await;
    let warning = "warning: 4 row(s) of 2 consumers ('a': 3, 'b': 1) have a number in \
                   processed_at, or text before 0000-01-01 (an empty one, a zero date), not a \
                   time in the form YYYY-MM-DD HH:MM:SS.fff; SQLite sorts them before every \
                   time, so prune cannot date them and keeps them\n";
    let dry = db
        .run(&[
            "prune",
            "--older-than",
            "1d",
            "--dry-run",
            "--format",
            "json",
        ])
        .ok();
    assert_eq!(dry.stderr, warning);
    assert_eq!(dry.json()["rows_matched"], 3);
    let run = db
        .run(&["prune", "--older-than", "1d", "--yes", "--format", "json"])
        .ok();
    assert_eq!(run.stderr, warning);
    assert_eq!(run.json()["rows_deleted"], 3);
    assert_eq!(
        db.event_ids("a").await,
        ids(&["empty", "epoch", "epoch-real"])
    );
    assert_eq!(db.event_ids("b").await, ids(&["epoch"]));
    let one = db
        .run(&["prune", "--older-than", "1d", "--consumer", "b", "--yes"])
        .ok();
    assert!(
        one.stderr
            .starts_with("warning: 1 row(s) of consumer 'b' have a number"),
        "{}",
        one.stderr
    );
}

/// SQLite compares processed_at as text: a time written with no fraction (a classic table's
/// `CURRENT_TIMESTAMP`, kept as it is by adoption) or with another number of digits is still
/// judged as the time it is, at the cutoff's very second too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_times_of_any_fraction_are_judged_exactly_at_the_cutoff() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) VALUES \
         ('a', 'before', '2026-11-01 07:59:59'), ('a', 'before-ms', '2026-11-01 07:59:59.999'), \
         ('a', 'at', '2026-11-01 08:00:00'), ('a', 'at-ms', '2026-11-01 08:00:00.000'), \
         ('a', 'at-us', '2026-11-01 08:00:00.000000'), ('a', 'half', '2026-11-01 08:00:00.5'), \
         ('a', 'half-ms', '2026-11-01 08:00:00.500'), ('a', 'later', '2026-11-01 08:00:01')",
    )
    .await;
    let prune = |db: &TestDb, before: &str, dry_run: bool| {
        let mut args = vec!["prune", "--before", before, "--format", "json"];
        args.push(if dry_run { "--dry-run" } else { "--yes" });
        db.run(&args).ok().json()
    };
    assert_eq!(prune(&db, "2026-11-01 08:00", true)["rows_matched"], 2);
    assert_eq!(prune(&db, "2026-11-01 08:00", false)["rows_deleted"], 2);
    assert_eq!(
        db.event_ids("a").await,
        ids(&["at", "at-ms", "at-us", "half", "half-ms", "later"])
    );
    assert_eq!(
        prune(&db, "2026-11-01T08:00:00.5Z", false)["rows_deleted"],
        3
    );
    assert_eq!(db.event_ids("a").await, ids(&["half", "half-ms", "later"]));
}

/// A trigger that keeps the oldest rows from being deleted leaves every batch of the index
/// strategy empty: prune gives up after a few, says what may be the cause, and deletes
/// nothing it should not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_rows_a_trigger_keeps_are_named_as_a_possible_cause() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(
        "CREATE FUNCTION keep_vetoed() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN IF OLD.event_id LIKE 'vetoed%' THEN RETURN NULL; END IF; RETURN OLD; END $$; \
         CREATE TRIGGER keep_vetoed BEFORE DELETE ON processed_messages \
         FOR EACH ROW EXECUTE FUNCTION keep_vetoed(); \
         INSERT INTO processed_messages (consumer, event_id, processed_at) \
         SELECT 'c', 'vetoed-' || n, now() - interval '40 days' - n * interval '1 second' \
         FROM generate_series(1, 4) AS n",
    )
    .await;
    let run = db
        .run(&[
            "prune",
            "--older-than",
            "30d",
            "--yes",
            "--strategy",
            "index",
            "--batch-size",
            "3",
            "--format",
            "json",
        ])
        .ok();
    assert_eq!(
        run.stderr,
        "warning: 3 batches of consumer 'c' in a row deleted nothing although older rows \
         remain: another session changed or deleted them meanwhile (re-run prune), or a \
         trigger or rule on processed_messages keeps them from being deleted\n"
    );
    assert_eq!(run.json()["rows_deleted"], 0);
    assert_eq!(db.count("processed_messages").await, 4);
}

/// Another session (another prune, most often) deleting the rows each batch selected, batch
/// after batch, leaves those batches empty, but the oldest row left is another each time:
/// prune goes on and deletes the rest, rather than giving up with a warning of rows kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_batches_emptied_by_another_session_in_a_row_do_not_end_the_prune() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) \
         SELECT 'c', 'e' || lpad(n::text, 2, '0'), now() - interval '40 days' + n * interval '1 second' \
         FROM generate_series(1, 15) AS n",
    )
    .await;
    let pool = db.pool().await;
    // Each holder in turn locks the next three oldest rows, which prune's batch then waits
    // for, and deletes them once the batch waits.
    let lock_next = async |from: usize| {
        let mut holder = pool.begin().await.unwrap();
        let ids: Vec<String> = (from..from + 3).map(|n| format!("'e{n:02}'")).collect();
        sqlx::query(&format!(
            "SELECT 1 FROM processed_messages WHERE event_id IN ({}) FOR UPDATE",
            ids.join(", ")
        ))
        .execute(&mut *holder)
        .await
        .unwrap();
        (holder, ids.join(", "))
    };
    let mut held = lock_next(1).await;
    let mut prune = db.spawn(&[
        "prune",
        "--older-than",
        "30d",
        "--yes",
        "--strategy",
        "index",
        "--batch-size",
        "3",
        "--format",
        "json",
    ]);
    for round in 1..=3 {
        until_it_waits_for_a_lock(&mut db, &mut prune).await;
        let next = match round {
            3 => None,
            _ => Some(lock_next(1 + 3 * round).await),
        };
        let (mut holder, ids) = held;
        sqlx::query(&format!(
            "DELETE FROM processed_messages WHERE event_id IN ({ids})"
        ))
        .execute(&mut *holder)
        .await
        .unwrap();
        holder.commit().await.unwrap();
        match next {
            Some(next) => held = next,
            None => break,
        }
    }
    let output = prune.wait_with_output().unwrap();
    let run = Run::from(output).ok();
    assert_eq!(run.stderr, "");
    assert_eq!(run.json()["rows_deleted"], 6);
    assert_eq!(db.count("processed_messages").await, 0);
}

/// A value that no time stands for (PostgreSQL's `-infinity` and `infinity`, a year BC,
/// MariaDB's zero date, a number in SQLite) is shown as the store shows it, and looked up, in
/// every format; inspect reports on the other rows all the same.
async fn inspect_shows_values_that_are_no_time_as_stored(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let (oldest, newest) = match backend {
        Backend::Postgres => ("'-infinity'", "'infinity'"),
        Backend::Mysql => ("'0000-00-00 00:00:00'", "'2026-11-01 08:00:00'"),
        Backend::Sqlite => ("1764583200", "'2026-11-01 08:00:00.000'"),
    };
    db.exec(&format!(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) VALUES \
         ('c', 'oldest', {oldest}), ('c', 'newest', {newest}), \
         ('c', 'dated', '2026-10-01 08:00:00')"
    ))
    .await;
    let shown = |value: &str| match value {
        "'-infinity'" => "-infinity",
        "'infinity'" => "infinity",
        "'0000-00-00 00:00:00'" => "0000-00-00 00:00:00.000000",
        "1764583200" => "1764583200",
        _ => "2026-11-01T08:00:00Z",
    };
    let json = db.run(&["inspect", "--format", "json"]).ok().json();
    let consumer = &json["consumers"][0];
    assert_eq!(
        (&consumer["rows"], &consumer["oldest"], &consumer["newest"]),
        (&3.into(), &shown(oldest).into(), &shown(newest).into())
    );
    let table = db.run(&["inspect"]).ok().stdout;
    assert!(table.contains(&format!("┆ {} ", shown(oldest))), "{table}");

    let found = db
        .run(&["inspect", "--event-id", "oldest", "--format", "json"])
        .ok()
        .json();
    assert_eq!(found["rows"][0]["processed_at"], shown(oldest));
    let csv = db
        .run(&["inspect", "--event-id", "oldest", "--format", "csv"])
        .ok()
        .stdout;
    assert_eq!(
        csv,
        format!(
            "consumer,event_id,topic,partition,offset,processed_at\nc,oldest,,,,{}\n",
            shown(oldest)
        )
    );
    let table = db.run(&["inspect", "--event-id", "oldest"]).ok().stdout;
    let row = table.lines().find(|line| line.contains("oldest")).unwrap();
    let cells: Vec<&str> = row
        .trim_matches(|c| c == '│' || c == ' ')
        .split('┆')
        .map(str::trim)
        .collect();
    assert_eq!(cells[5..], [shown(oldest), "-"], "{table}");
    if backend == Backend::Postgres {
        // `infinity` is later than every time: dated in the future, estimated or counted.
        db.exec("ANALYZE processed_messages").await;
        for (args, warning) in [
            (
                &["inspect"][..],
                "1 row(s) of consumer 'c' are dated in the future (the newest at infinity), \
                 counted as under 1h old",
            ),
            (
                &["inspect", "--estimate"],
                "rows of consumer 'c' are dated in the future (the newest at infinity)",
            ),
        ] {
            let run = db.run(args).ok();
            assert_eq!(
                run.stderr,
                format!(
                    "warning: {warning}; does the application write local time rather than UTC?\n"
                ),
                "{args:?}"
            );
        }
        let bc = "0044-03-15 00:00:00+00 BC";
        db.exec(&format!(
            "INSERT INTO processed_messages (consumer, event_id, processed_at) VALUES ('b', 'bc', '{bc}')"
        ))
        .await;
        let json = db
            .run(&["inspect", "--event-id", "bc", "--format", "json"])
            .ok()
            .json();
        assert_eq!(json["rows"][0]["processed_at"], bc);
    }
}

each_backend!(inspect_shows_values_that_are_no_time_as_stored);

/// A time however early is older than any cutoff: Go's zero time (year 1), a year before
/// 1000, PostgreSQL's `-infinity`, MariaDB's zero date. The dry run counts them, and either
/// strategy deletes them.
async fn the_earliest_times_are_pruned(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let earliest = match backend {
        Backend::Postgres => "'-infinity'",
        Backend::Mysql => "'0000-00-00 00:00:00'",
        Backend::Sqlite => "'0001-01-01 00:00:00.000'",
    };
    let now = match backend {
        Backend::Sqlite => "strftime('%Y-%m-%d %H:%M:%f', 'now')",
        _ => "CURRENT_TIMESTAMP",
    };
    let strategies: &[&str] = match backend {
        Backend::Postgres => &["index", "blocks"],
        _ => &["index"],
    };
    for strategy in strategies {
        db.exec(&format!(
            "INSERT INTO processed_messages (consumer, event_id, processed_at) VALUES \
             ('a', 'earliest', {earliest}), ('a', 'go-zero', '0001-01-01 00:00:00'), \
             ('a', 'year-999', '0999-12-31 23:59:59'), ('a', 'old', '2020-01-01 00:00:00'), \
             ('a', 'new', {now})"
        ))
        .await;
        let prune = ["prune", "--older-than", "1d", "--format", "json"];
        let dry = db.run(&[&prune[..], &["--dry-run"]].concat()).ok().json();
        assert_eq!(dry["rows_matched"], 4, "{strategy}");
        let run = db
            .run(&[&prune[..], &["--yes", "--strategy", strategy]].concat())
            .ok()
            .json();
        assert_eq!(run["rows_deleted"], 4, "{strategy}");
        assert_eq!(db.event_ids("a").await, ids(&["new"]), "{strategy}");
        db.exec("DELETE FROM processed_messages").await;
    }
}

each_backend!(the_earliest_times_are_pruned);

/// A row exactly at an age bucket's edge (1h, 1d, 7d, 30d old) is in the older bucket: the
/// labels say `< 1h` and `>= 30d`. Asked of the store with a `now` of the test's choosing.
async fn a_row_exactly_at_an_age_edge_is_in_the_older_bucket(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let now: DateTime<Utc> = "2026-06-01T12:00:00Z".parse().unwrap();
    let edges = [
        Duration::hours(1),
        Duration::days(1),
        Duration::days(7),
        Duration::days(30),
    ];
    let rows: Vec<_> = edges
        .iter()
        .enumerate()
        .map(|(n, age)| row("c", &format!("e{n}"), None, now - *age))
        .collect();
    db.insert_rows(&rows).await;
    let url = DatabaseUrl::parse(&db.url).unwrap();
    let timeout = std::time::Duration::from_secs(10);
    let store = Store::connect_with(&url, timeout, CreateMode::MustExist, 1, false)
        .await
        .unwrap();
    let mut connection = store.acquire().await.unwrap();
    let stats = store
        .consumer_stats(&mut connection, None, now)
        .await
        .unwrap();
    assert_eq!(stats.len(), 1);
    // Rows newer than 1h, 1d, 7d, 30d ago: none, the 1h-old one, and so on.
    assert_eq!(stats[0].newer_than, [0, 1, 2, 3]);
    // A millisecond earlier, each row is younger than its edge.
    let stats = store
        .consumer_stats(&mut connection, None, now - Duration::milliseconds(1))
        .await
        .unwrap();
    assert_eq!(stats[0].newer_than, [1, 2, 3, 4]);
}

each_backend!(a_row_exactly_at_an_age_edge_is_in_the_older_bucket);

/// An application's `event_id uuid` column: prune and inspect work, but an id bound as text
/// cannot be compared with it, so a lookup says what to change instead of failing on the
/// server's `operator does not exist: uuid = text`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_uuid_event_ids_are_refused_where_ids_are_compared() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.uuid_inbox().await;
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) VALUES \
         ('c', '6f1c1d0e-8a39-4a53-9a4e-1b6f0d1e2a11', now() - interval '40 days'), \
         ('c', '0b7e2a44-2f0e-4c1f-8d6a-3e9b5c7d8f90', now())",
    )
    .await;
    let run = db
        .run(&[
            "inspect",
            "--event-id",
            "6f1c1d0e-8a39-4a53-9a4e-1b6f0d1e2a11",
        ])
        .code(1);
    assert_refuses_uuid_event_ids(&run);
    let json = db.run(&["inspect", "--format", "json"]).ok().json();
    assert_eq!(json["total_rows"], 2);
    let json = db
        .run(&["prune", "--older-than", "30d", "--yes", "--format", "json"])
        .ok()
        .json();
    assert_eq!(json["rows_deleted"], 1);
    assert_eq!(db.count("processed_messages").await, 1);
}

/// SQLite keeps an id in a column declared INTEGER as a number: `inspect --event-id` finds
/// and shows it as the text it was looked up by.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_event_ids_stored_as_numbers_are_found() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    db.exec(
        "CREATE TABLE processed_messages (consumer TEXT NOT NULL, event_id INTEGER NOT NULL, \
         topic TEXT, \"partition\" INTEGER, \"offset\" BIGINT, processed_at TIMESTAMP NOT NULL \
         DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (consumer, event_id)) WITHOUT ROWID; \
         INSERT INTO processed_messages (consumer, event_id) VALUES ('c', 42)",
    )
    .await;
    db.run(&["migrate", "run"]).ok();
    let json = db
        .run(&["inspect", "--event-id", "42", "--format", "json"])
        .ok()
        .json();
    assert_eq!(json["rows"][0]["event_id"], "42", "{json}");
}

/// MySQL plans a single-table `DELETE … WHERE consumer = ? … ORDER BY processed_at LIMIT n`
/// through the primary key, reading every row of the consumer and sorting them, batch after
/// batch. prune's batch reads its keys through the (consumer, processed_at) index in a
/// derived table instead, and deletes them by key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_prune_batches_read_through_the_processed_at_index() {
    let mut db = TestDb::new(Backend::Mysql).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) \
         SELECT CONCAT('c', seq % 2), CONCAT('e', seq), \
                TIMESTAMP('2026-01-01') + INTERVAL seq SECOND FROM seq_1_to_20000; \
         ANALYZE TABLE processed_messages",
    )
    .await;
    let store = db.store().await;
    let form = store.dialect.delete_batch;
    let (prefix, suffix) = form.wrap;
    assert!(form.condition_again);
    // The condition as prune writes it (Store::push_prune_condition), twice.
    let condition = "consumer = ? AND processed_at >= ? AND processed_at < CAST(? AS DATETIME(6))";
    let sql =
        format!("EXPLAIN {prefix}{condition} ORDER BY processed_at LIMIT ?{suffix}{condition}");
    let plan: Vec<(Option<String>, Option<String>, Option<String>)> = sqlx::query(&sql)
        .bind("c0")
        .bind("1000-01-01 00:00:00")
        .bind("2026-01-01 02:00:00.000000")
        .bind(1000_i64)
        .bind("c0")
        .bind("1000-01-01 00:00:00")
        .bind("2026-01-01 02:00:00.000000")
        .fetch_all(store.pool())
        .await
        .unwrap()
        .iter()
        .map(|row| {
            use sqlx::Row;
            let text = |column: &str| -> Option<String> {
                row.try_get::<Option<String>, _>(column).unwrap()
            };
            (text("table"), text("type"), text("key"))
        })
        .collect();
    let of = |table: &str| {
        plan.iter()
            .find(|(name, _, _)| name.as_deref() == Some(table))
            .map(|(_, kind, key)| (kind.clone(), key.clone()))
    };
    assert_eq!(
        of("processed_messages").and_then(|(_, key)| key).as_deref(),
        Some("processed_messages_consumer_processed_at_idx"),
        "{plan:?}"
    );
    assert_eq!(
        of("pm"),
        Some((Some("eq_ref".to_string()), Some("PRIMARY".to_string()))),
        "{plan:?}"
    );
}

/// A row's physical address (ctid) is unique only within one partition: a batch takes its
/// own rows and none of another partition's, whose rows sit at the same addresses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_inbox_loses_no_row_of_another_partition() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.exec(
        "CREATE TABLE processed_messages (consumer TEXT NOT NULL, event_id TEXT NOT NULL, \
         topic TEXT, \"partition\" INT, \"offset\" BIGINT, \
         processed_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (consumer, event_id)) \
         PARTITION BY LIST (consumer)",
    )
    .await;
    db.exec("CREATE TABLE processed_a PARTITION OF processed_messages FOR VALUES IN ('a')")
        .await;
    db.exec("CREATE TABLE processed_b PARTITION OF processed_messages FOR VALUES IN ('b')")
        .await;
    db.exec("CREATE INDEX ON processed_messages (consumer, processed_at)")
        .await;
    // a: 10 rows 60 to 69 days old. b: 10 rows minutes old at the same addresses, then 5
    // rows 40 days old.
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) \
         SELECT 'a', 'a' || i, now() - make_interval(days => 59 + i) FROM generate_series(1, 10) AS i",
    )
    .await;
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) \
         SELECT 'b', 'young' || i, now() - make_interval(mins => i) FROM generate_series(1, 10) AS i",
    )
    .await;
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) \
         SELECT 'b', 'old' || i, now() - make_interval(days => 40) FROM generate_series(1, 5) AS i",
    )
    .await;
    let young: Vec<String> = ids(&[
        "young1", "young2", "young3", "young4", "young5", "young6", "young7", "young8", "young9",
        "young10",
    ]);

    let json = db
        .run(&[
            "prune",
            "--older-than",
            "30d",
            "--consumer",
            "a",
            "--batch-size",
            "3",
            "--yes",
            "--format",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(
        (json["rows_deleted"].as_u64(), json["batches"].as_u64()),
        (Some(10), Some(4))
    );
    assert_eq!(db.event_ids("a").await, Vec::<String>::new());
    let mut expected = ids(&["old1", "old2", "old3", "old4", "old5"]);
    expected.extend(young.iter().cloned());
    expected.sort();
    assert_eq!(db.event_ids("b").await, expected);

    let json = db
        .run(&[
            "prune",
            "--older-than",
            "30d",
            "--max-rows",
            "3",
            "--yes",
            "--format",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(json["rows_deleted"], 3);
    let json = db
        .run(&["prune", "--older-than", "30d", "--yes", "--format", "json"])
        .ok()
        .json();
    assert_eq!(json["rows_deleted"], 2);
    assert_eq!(db.event_ids("b").await, young);
}

/// Partitioning by inheritance: the inbox is a plain table with others inheriting from it,
/// and its DELETE reaches theirs, whose rows sit at the same physical addresses as its own.
/// prune deletes there by key and time too, and `auto` takes no page ranges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbox_partitioned_by_inheritance_loses_no_row_of_a_child() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(
        "CREATE TABLE processed_old () INHERITS (processed_messages); \
         INSERT INTO processed_messages (consumer, event_id, processed_at) \
         SELECT 'b', 'young' || i, now() - make_interval(mins => i) FROM generate_series(1, 10) AS i; \
         INSERT INTO processed_old (consumer, event_id, processed_at) \
         SELECT 'a', 'old' || i, now() - make_interval(days => 40 + i) FROM generate_series(1, 10) AS i",
    )
    .await;
    let json = db
        .run(&[
            "prune",
            "--older-than",
            "30d",
            "--batch-size",
            "3",
            "--yes",
            "--format",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(json["strategy"], "index");
    assert_eq!(json["rows_deleted"], 10);
    assert_eq!(db.event_ids("a").await, Vec::<String>::new());
    assert_eq!(db.event_ids("b").await.len(), 10);
}

/// Page ranges exist on PostgreSQL only, and cannot stop at a row count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_blocks_is_refused_where_it_cannot_work() {
    let cases: [(Backend, &[&str], &str); 3] = [
        (Backend::Sqlite, &[], "--strategy blocks needs PostgreSQL"),
        (Backend::Mysql, &[], "--strategy blocks needs PostgreSQL"),
        (
            Backend::Postgres,
            &["--max-rows", "2"],
            "cannot stop at --max-rows",
        ),
    ];
    for (backend, extra, expected) in cases {
        let mut db = TestDb::new(backend).await;
        seed_for_prune(&mut db).await;
        let mut args = vec![
            "prune",
            "--older-than",
            "1d",
            "--strategy",
            "blocks",
            "--yes",
        ];
        args.extend_from_slice(extra);
        let run = db.run(&args).code(2);
        assert!(run.stderr.contains(expected), "{backend:?}: {}", run.stderr);
        assert_eq!(db.count("processed_messages").await, 13);
    }
    let mut db = TestDb::new(Backend::Postgres).await;
    seed_for_prune(&mut db).await;
    // auto falls back to the index for --max-rows, even on an analysed table.
    db.exec("ANALYZE processed_messages").await;
    let json = db
        .run(&[
            "prune",
            "--older-than",
            "1d",
            "--max-rows",
            "2",
            "--yes",
            "--format",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(json["strategy"], "index");
    assert_eq!(json["rows_deleted"], 2);
}

/// `inspect --estimate` reads the planner's statistics and the ends of each consumer's index
/// range, never the rows. After ANALYZE of a small table PostgreSQL's statistics are exact;
/// MariaDB's come from a look into the index and are near. SQLite has none and counts.
async fn inspect_estimate_reads_the_statistics(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let now = now_ms();
    let mut rows = Vec::new();
    for (consumer, count) in [("billing", 60i64), ("mailer", 30), ("shipping", 10)] {
        for n in 0..count {
            let at = now - Duration::minutes(count - n);
            rows.push(row(consumer, &format!("e{n}"), Some(("orders", 0, n)), at));
        }
    }
    db.insert_rows(&rows).await;
    match backend {
        Backend::Postgres => db.exec("ANALYZE processed_messages").await,
        Backend::Mysql => db.exec("ANALYZE TABLE processed_messages").await,
        Backend::Sqlite => {}
    }

    let json = db
        .run(&["inspect", "--estimate", "--format", "json"])
        .ok()
        .json();
    let consumers: Vec<(String, i64, DateTime<Utc>, DateTime<Utc>)> = json["consumers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["consumer"].as_str().unwrap().to_string(),
                c["rows"].as_i64().unwrap(),
                parse(&c["oldest"]),
                parse(&c["newest"]),
            )
        })
        .collect();
    let names: Vec<&str> = consumers.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(names, ["billing", "mailer", "shipping"]);
    for (consumer, count) in [
        (&consumers[0], 60),
        (&consumers[1], 30),
        (&consumers[2], 10),
    ] {
        assert_eq!(consumer.2, now - Duration::minutes(count), "{consumer:?}");
        assert_eq!(consumer.3, now - Duration::minutes(1), "{consumer:?}");
    }
    let counts: Vec<i64> = consumers.iter().map(|c| c.1).collect();
    match backend {
        Backend::Postgres => {
            assert_eq!(json["total_rows_estimated"], true);
            assert_eq!(json["total_rows"], 100);
            assert_eq!(counts, [60, 30, 10]);
            assert_eq!(json["partitions"], serde_json::Value::Null);
        }
        Backend::Mysql => {
            assert_eq!(json["total_rows_estimated"], true);
            for (estimate, exact) in counts.iter().zip([60, 30, 10]) {
                assert!(
                    (exact / 2..=exact * 2).contains(estimate),
                    "estimate {estimate} for {exact} rows"
                );
            }
        }
        Backend::Sqlite => {
            assert_eq!(json["total_rows_estimated"], false);
            assert_eq!(json["total_rows"], 100);
            assert_eq!(counts, [60, 30, 10]);
        }
    }

    let table = db.run(&["inspect", "--estimate"]).ok();
    if backend == Backend::Postgres {
        assert!(
            table
                .stdout
                .lines()
                .next()
                .unwrap()
                .ends_with(": about 100 rows (planner estimate)"),
            "{}",
            table.stdout
        );
        assert_eq!(
            table.table_rows()[0][..2],
            ["billing".to_string(), "60".to_string()]
        );
    }
    // Where the counts come from, as each backend keeps them: InnoDB needs no ANALYZE.
    let source = match backend {
        Backend::Postgres => {
            Some("Row counts are the planner's estimates as of the table's last ANALYZE; ")
        }
        Backend::Mysql => Some(
            "Row counts are InnoDB's estimates, which the server updates as the table changes; ",
        ),
        Backend::Sqlite => None,
    };
    if let Some(source) = source {
        assert_eq!(
            table.stdout.lines().last(),
            Some(
                format!("{source}run without --estimate for exact counts, ages and offset ranges.")
                    .as_str()
            ),
        );
    }
    let csv = db
        .run(&["inspect", "--estimate", "--format", "csv"])
        .code(2);
    assert!(
        csv.stderr
            .contains("--format csv lists the partitions' rows"),
        "{}",
        csv.stderr
    );
}

/// compare's count of a partition's inbox rows: exactly the rows of that consumer, topic and
/// partition whose offset is at least the one asked from; rows without an offset, with a
/// negative one, or of another partition, topic or consumer are not among them.
async fn partition_summary_counts_exactly_the_rows_from_an_offset(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let now = now_ms();
    let mut rows = Vec::new();
    for offset in 0..40 {
        rows.push(row(
            "c",
            &format!("p3-{offset}"),
            Some(("t", 3, offset)),
            now,
        ));
    }
    rows.push(row("c", "p3-null", Some(("t", 3, 0)), now));
    rows.push(row("c", "p3-negative", Some(("t", 3, 0)), now));
    rows.push(row("c", "p2", Some(("t", 2, 100)), now));
    rows.push(row("c", "other-topic", Some(("u", 3, 100)), now));
    rows.push(row("d", "other-consumer", Some(("t", 3, 100)), now));
    rows.push(row("c", "classic", None, now));
    db.insert_rows(&rows).await;
    let offset = db.store().await.dialect.quote("offset");
    db.exec(&format!(
        "UPDATE processed_messages SET {offset} = NULL WHERE event_id = 'p3-null'"
    ))
    .await;
    db.exec(&format!(
        "UPDATE processed_messages SET {offset} = -7 WHERE event_id = 'p3-negative'"
    ))
    .await;
    let store = db.store().await;
    for (from, expected) in [(0, (40, Some(39))), (25, (15, Some(39))), (40, (0, None))] {
        assert_eq!(
            store.offset_range_summary("c", "t", 3, from).await.unwrap(),
            expected,
            "from offset {from}"
        );
    }
    assert_eq!(
        store.offset_range_summary("c", "t", 9, 0).await.unwrap(),
        (0, None)
    );
}

/// compare's count of the offsets a partition's rows account for: each offset once, however
/// many rows share it, within `[from, to)`; and the rows in partitions a topic lacks.
async fn distinct_offsets_count_each_offset_once(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let now = now_ms();
    let mut rows = Vec::new();
    for offset in [0, 1, 2, 4, 5, 6, 7, 8, 9] {
        rows.push(row(
            "c",
            &format!("p0-{offset}"),
            Some(("t", 0, offset)),
            now,
        ));
    }
    rows.push(row("c", "p0-4-again", Some(("t", 0, 4)), now));
    rows.push(row("c", "p0-4-third", Some(("t", 0, 4)), now));
    rows.push(row("c", "p0-12", Some(("t", 0, 12)), now));
    rows.push(row("c", "p1", Some(("t", 1, 3)), now));
    rows.push(row("c", "p5-2", Some(("t", 5, 2)), now));
    rows.push(row("c", "p5-2-again", Some(("t", 5, 2)), now));
    rows.push(row("c", "p3-0", Some(("t", 3, 0)), now));
    rows.push(row("c", "p-negative", Some(("t", 0, 0)), now));
    rows.push(row("c", "other-topic", Some(("u", 7, 3)), now));
    rows.push(row("d", "other-consumer", Some(("t", 7, 3)), now));
    db.insert_rows(&rows).await;
    let partition = db.store().await.dialect.quote("partition");
    db.exec(&format!(
        "UPDATE processed_messages SET {partition} = -1 WHERE event_id = 'p-negative'"
    ))
    .await;
    let store = db.store().await;
    for ((from, to), expected) in [((0, 10), 9), ((3, 5), 1), ((4, 5), 1), ((0, 100), 10)] {
        assert_eq!(
            store.distinct_offsets("c", "t", 0, from, to).await.unwrap(),
            expected,
            "[{from}, {to})"
        );
    }
    assert_eq!(store.distinct_offsets("c", "t", 9, 0, 10).await.unwrap(), 0);
    // The offsets themselves, each once.
    assert_eq!(
        store
            .offsets_in_range("c", "t", 0, 2, Some(10))
            .await
            .unwrap(),
        vec![2, 4, 5, 6, 7, 8, 9]
    );
    assert_eq!(
        store.offsets_in_range("c", "t", 0, 9, None).await.unwrap(),
        vec![9, 12]
    );
    // A topic of partitions 0 to 2 has no partition -1, 3 or 5.
    assert_eq!(
        store.rows_outside_partitions("c", "t", 2).await.unwrap(),
        vec![(-1, 0), (3, 0), (5, 2), (5, 2)]
    );
    assert_eq!(
        store.rows_outside_partitions("c", "t", 5).await.unwrap(),
        vec![(-1, 0)]
    );
}

/// compare's list of the topics a consumer has rows of: each once, case and all, without
/// the rows that have no coordinates and without other consumers' topics; and whether a
/// consumer has any row.
async fn consumer_topics_names_each_topic_once(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let now = now_ms();
    let mut rows = Vec::new();
    for (n, topic) in ["orders", "orders", "Orders", "audit", "orders-eu", "orders"]
        .iter()
        .enumerate()
    {
        rows.push(row("c", &format!("e{n}"), Some((*topic, n as i32, 1)), now));
    }
    rows.push(row("c", "no-coordinates", None, now));
    rows.push(row("uncoordinated", "x", None, now));
    // More topics than MySQL's 1,000 steps of a recursion.
    for n in 0..1001 {
        rows.push(row(
            "wide",
            &format!("w{n}"),
            Some((&format!("w{n:04}"), 0, 1)),
            now,
        ));
    }
    rows.push(row("cc", "prefix-consumer", Some(("payments", 0, 1)), now));
    rows.push(row("d", "other-consumer", Some(("zz", 0, 1)), now));
    db.insert_rows(&rows).await;
    let store = db.store().await;
    let mut topics = store.consumer_topics("c").await.unwrap();
    // The database's collation orders them; compare sorts them itself.
    topics.sort();
    assert_eq!(topics, ["Orders", "audit", "orders", "orders-eu"]);
    assert_eq!(store.consumer_topics("d").await.unwrap(), ["zz"]);
    assert!(store.consumer_topics("C").await.unwrap().is_empty());
    assert!(store.consumer_topics("nobody").await.unwrap().is_empty());
    // Whether a consumer has rows at all, those without coordinates included.
    assert!(store
        .consumer_topics("uncoordinated")
        .await
        .unwrap()
        .is_empty());
    let mut wide = store.consumer_topics("wide").await.unwrap();
    wide.sort();
    let expected: Vec<String> = (0..1001).map(|n| format!("w{n:04}")).collect();
    assert_eq!(wide, expected);
    assert!(store.consumer_has_rows("c").await.unwrap());
    assert!(store.consumer_has_rows("uncoordinated").await.unwrap());
    assert!(!store.consumer_has_rows("ccc").await.unwrap());
    assert!(!store.consumer_has_rows("C").await.unwrap());
}

/// An inbox keyed (consumer, event_id, processed_at), as a table partitioned by time must
/// be, may hold one event id twice. Each batch deletes exactly the rows it selected, oldest
/// first: not the later row of the same id (newer than the cutoff, or not yet due), which
/// would also move the next batch's start past rows not yet deleted. PostgreSQL: a table
/// partitioned by time; MySQL: a plain table; SQLite: WITHOUT ROWID.
async fn prune_deletes_each_row_once_where_a_key_repeats(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let columns = |time: &str| {
        format!(
            "consumer VARCHAR(100) NOT NULL, event_id VARCHAR(100) NOT NULL, topic VARCHAR(100), \
             {} INT, {} BIGINT, processed_at {time} NOT NULL, \
             PRIMARY KEY (consumer, event_id, processed_at)",
            backend.dialect().quote("partition"),
            backend.dialect().quote("offset"),
        )
    };
    match backend {
        Backend::Postgres => {
            db.exec(&format!(
                "CREATE TABLE processed_messages ({}) PARTITION BY RANGE (processed_at); \
                 CREATE TABLE processed_2025 PARTITION OF processed_messages \
                 FOR VALUES FROM (MINVALUE) TO ('2026-01-01'); \
                 CREATE TABLE processed_later PARTITION OF processed_messages \
                 FOR VALUES FROM ('2026-01-01') TO (MAXVALUE)",
                columns("TIMESTAMPTZ")
            ))
            .await
        }
        Backend::Mysql => {
            db.exec(&format!(
                "CREATE TABLE processed_messages ({})",
                columns("DATETIME(6)")
            ))
            .await
        }
        Backend::Sqlite => {
            db.exec(&format!(
                "CREATE TABLE processed_messages ({}) WITHOUT ROWID",
                columns("TEXT")
            ))
            .await
        }
    }
    db.exec("CREATE INDEX processed_messages_consumer_processed_at_idx ON processed_messages (consumer, processed_at)")
        .await;
    // e1 to e10 on the first ten days of June 2025; e1 again on the 9th at noon, and again
    // in 2100.
    let mut rows: Vec<String> = (1..=10)
        .map(|day| format!("('c', 'e{day}', '2025-06-{day:02} 00:00:00.000')"))
        .collect();
    rows.push("('c', 'e1', '2025-06-09 12:00:00.000')".to_string());
    rows.push("('c', 'e1', '2100-01-01 00:00:00.000')".to_string());
    db.exec(&format!(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) VALUES {}",
        rows.join(", ")
    ))
    .await;
    let prune = [
        "prune",
        "--before",
        "2025-07-01",
        "--batch-size",
        "2",
        "--yes",
        "--format",
        "json",
    ];
    let json = db
        .run(&[&prune[..], &["--max-rows", "3"]].concat())
        .ok()
        .json();
    assert_eq!(json["rows_deleted"], 3);
    assert_eq!(db.count("processed_messages").await, 9);
    // The oldest three went: e1, e2 and e3 of June 1 to 3.
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM processed_messages WHERE event_id IN ('e2', 'e3')")
            .await,
        0
    );
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM processed_messages WHERE event_id = 'e1'")
            .await,
        2
    );
    let json = db.run(&prune).ok().json();
    assert_eq!(json["rows_deleted"], 8);
    assert_eq!(db.count("processed_messages").await, 1);
    assert_eq!(db.event_ids("c").await, ["e1"]);
}

each_backend!(
    prune_deletes_each_row_once_where_a_key_repeats,
    consumer_topics_names_each_topic_once,
    distinct_offsets_count_each_offset_once,
    partition_summary_counts_exactly_the_rows_from_an_offset,
    inspect_reports_exact_numbers,
    inspect_estimate_reads_the_statistics,
    inspect_event_id_answers_did_we_process_it,
    prune_deletes_exactly_the_rows_before_the_cutoff,
    prune_older_than_a_duration,
    prune_batches_by_the_backends_default_size,
    prune_honours_consumer_and_max_rows,
    prune_dry_run_and_refusal_delete_nothing,
    prune_interrupted_reports_what_it_deleted,
    commands_on_a_missing_table_say_what_to_do,
);

/// `inboxctl prune --before BEFORE FLAGS` on a terminal (a pseudo-terminal `script` gives
/// it), with `answer` typed in: the exit code and what the terminal showed.
fn prune_on_a_terminal(db: &TestDb, before: &str, flags: &str, answer: &str) -> (i32, String) {
    let binary = assert_cmd::cargo::cargo_bin("inboxctl");
    let command_line = format!("'{}' prune --before '{before}' {flags}", binary.display());
    let mut child = std::process::Command::new("script")
        .args(["-qec", &command_line, "/dev/null"])
        .env("DATABASE_URL", &db.url)
        .current_dir(db.dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("script (util-linux) runs");
    use std::io::Write;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(answer.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    drop(stdin);
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// On a terminal prune asks before it deletes and draws a progress bar; the answer decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_prune_asks_and_the_answer_decides() {
    let mut db = TestDb::new(Backend::Sqlite).await;
    let cutoff = seed_for_prune(&mut db).await;
    let before = cutoff.to_rfc3339_opts(SecondsFormat::Millis, true);
    let rows_before = db.count("processed_messages").await;

    let (code, screen) = prune_on_a_terminal(&db, &before, "", "n\n");
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains("Delete 9 rows of processed_messages processed before"),
        "{screen}"
    );
    assert!(screen.contains("Nothing deleted."), "{screen}");
    assert_eq!(db.count("processed_messages").await, rows_before);

    let (code, screen) = prune_on_a_terminal(&db, &before, "", "y\n");
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("0/9 rows"), "no progress bar: {screen}");
    assert!(screen.contains("Deleted 9 rows in"), "{screen}");
    assert_eq!(db.count("processed_messages").await, rows_before - 9);

    // --yes asks nothing and counts nothing: the bar counts up without a total (SQLite has
    // no planner's estimate to give one).
    let older = cutoff - Duration::hours(1);
    db.insert_rows(&[
        row("a", "a-late-1", None, older),
        row("b", "b-late-1", None, older),
    ])
    .await;
    let (code, screen) = prune_on_a_terminal(&db, &before, "--yes", "");
    assert_eq!(code, 0, "{screen}");
    assert!(!screen.contains("Delete 2 rows"), "asked: {screen}");
    assert!(screen.contains(" 0 rows ("), "no counter: {screen}");
    assert!(
        !screen.contains("/2 rows"),
        "a total it cannot know: {screen}"
    );
    assert!(screen.contains("Deleted 2 rows in"), "{screen}");
    assert_eq!(db.count("processed_messages").await, rows_before - 9);
}

/// On PostgreSQL, an uncounted prune's progress bar takes its total from the planner's
/// estimate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_prune_yes_shows_the_planners_estimate() {
    let mut db = TestDb::new(Backend::Postgres).await;
    let cutoff = seed_for_prune(&mut db).await;
    db.exec("ANALYZE processed_messages").await;
    let before = cutoff.to_rfc3339_opts(SecondsFormat::Millis, true);
    let (code, screen) = prune_on_a_terminal(&db, &before, "--yes", "");
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("Deleted 9 rows in"), "{screen}");
    // "0/N rows": a total, the estimate, drawn before the first batch.
    let total = screen
        .split(" rows (")
        .next()
        .and_then(|head| head.rsplit_once("0/"))
        .map(|(_, total)| total.to_string());
    assert!(
        total
            .as_deref()
            .is_some_and(|t| t.parse::<u64>().is_ok_and(|n| n > 0)),
        "no total from the estimate: {screen}"
    );
}

/// compare --scan loads a PostgreSQL inbox as one newline-joined text per 50,000 ids of the
/// primary key, each chunk starting after the last id of the one before. 120,006 ids (two
/// chunks and a partial one, with a second consumer's rows in between) come back exactly
/// once each: ids holding newlines (whose chunk is read again as an array) and the empty id
/// among them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbox_ids_load_in_key_chunks_exactly_once() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id) \
         SELECT c, 'evt-' || n || CASE WHEN n % 7 = 0 THEN ' ü' ELSE '' END \
         FROM generate_series(1, 120003) AS n, (VALUES ('billing'), ('shipping')) AS c(c)",
    )
    .await;
    db.exec(
        "INSERT INTO processed_messages (consumer, event_id) \
         VALUES ('billing', E'evt-6\\nsplit'), ('billing', E'evt-6\\r\\n'), ('billing', '')",
    )
    .await;
    let (client, connection) = inboxctl::store::pg_pipeline::connect_client(&db.url)
        .await
        .unwrap();
    let client = std::sync::Arc::new(client);
    let mut seen: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    inboxctl::store::pg_pipeline::for_each_event_id(&client, "billing", |id| {
        *seen.entry(id.to_string()).or_default() += 1;
    })
    .await
    .unwrap();
    assert_eq!(seen.len(), 120_006);
    assert!(seen.values().all(|&times| times == 1));
    assert_eq!(seen.get("evt-7 ü"), Some(&1));
    assert_eq!(seen.get("evt-6\nsplit"), Some(&1));
    assert_eq!(seen.get("evt-6\r\n"), Some(&1));
    assert_eq!(seen.get(""), Some(&1));
    assert_eq!(seen.get("evt-120003"), Some(&1));
    let mut none = 0;
    inboxctl::store::pg_pipeline::for_each_event_id(&client, "nobody", |_| none += 1)
        .await
        .unwrap();
    assert_eq!(none, 0);
    inboxctl::store::pg_pipeline::end_session(client, connection).await;
}

/// prune's batches commit without waiting for the WAL flush, on a connection of their own
/// that is closed afterwards: the setting never reaches a connection the pool hands out
/// later, and the store's other statements (the record of the prune among them) commit as
/// the server says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_batches_alone_commit_without_waiting_for_the_flush() {
    use inboxctl::store::{CreateMode, DatabaseUrl, Store};
    let db = TestDb::new(Backend::Postgres).await;
    let url = DatabaseUrl::parse(&db.url).unwrap();
    let timeout = std::time::Duration::from_secs(10);
    let store = Store::connect_with(&url, timeout, CreateMode::MustExist, 1, false)
        .await
        .unwrap();
    async fn setting(connection: &mut sqlx::AnyConnection) -> String {
        sqlx::query_scalar("SHOW synchronous_commit")
            .fetch_one(connection)
            .await
            .unwrap()
    }
    async fn pid(connection: &mut sqlx::AnyConnection) -> i32 {
        sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(connection)
            .await
            .unwrap()
    }
    let (before, first_pid) = {
        let mut pooled = store.acquire().await.unwrap();
        (setting(&mut pooled).await, pid(&mut pooled).await)
    };
    assert_eq!(before, "on", "the test server should commit synchronously");
    let batch_pid = {
        let (mut batches, _) = store.bulk_delete_connection().await.unwrap();
        assert_eq!(setting(&mut batches).await, "off");
        pid(&mut batches).await
    };
    assert_eq!(
        batch_pid, first_pid,
        "the batches take the pooled connection"
    );
    let mut after = store.acquire().await.unwrap();
    assert_ne!(
        pid(&mut after).await,
        batch_pid,
        "the batches' connection is closed, not pooled"
    );
    assert_eq!(setting(&mut after).await, "on");
    drop(after);
    store.close().await;
}

/// A store asked for serial plans (compare --scan's) runs PostgreSQL's queries without
/// parallel workers on every pooled connection; one not asked keeps the server's setting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serial_plans_turn_parallel_workers_off_on_every_connection() {
    use inboxctl::store::{CreateMode, DatabaseUrl, Store};
    let db = TestDb::new(Backend::Postgres).await;
    let url = DatabaseUrl::parse(&db.url).unwrap();
    let timeout = std::time::Duration::from_secs(10);
    let workers = |store: Store| async move {
        // Two connections held at once, so the second is a new one.
        let mut first = store.acquire().await.unwrap();
        let mut second = store.acquire().await.unwrap();
        let mut settings = Vec::new();
        for connection in [&mut first, &mut second] {
            let value: String = sqlx::query_scalar("SHOW max_parallel_workers_per_gather")
                .fetch_one(&mut **connection)
                .await
                .unwrap();
            settings.push(value);
        }
        settings
    };
    let serial = Store::connect_with(&url, timeout, CreateMode::MustExist, 2, true)
        .await
        .unwrap();
    assert_eq!(workers(serial).await, ["0", "0"]);
    let default = Store::connect_with(&url, timeout, CreateMode::MustExist, 2, false)
        .await
        .unwrap();
    let server: String = {
        use sqlx::Connection;
        let mut admin = sqlx::PgConnection::connect(&db.url).await.unwrap();
        sqlx::query_scalar("SHOW max_parallel_workers_per_gather")
            .fetch_one(&mut admin)
            .await
            .unwrap()
    };
    assert_ne!(server, "0", "the test server should allow parallel workers");
    assert_eq!(workers(default).await, [server.clone(), server]);
}

/// prune records its cutoff with its first delete, for compare. When the record cannot be
/// written (here a table of that name with other columns), nothing is deleted: compare
/// would otherwise take the offsets of the deleted rows for lost messages.
async fn prune_deletes_nothing_it_cannot_record(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    let cutoff = seed_for_prune(&mut db).await;
    let before = cutoff.to_rfc3339_opts(SecondsFormat::Millis, true);
    db.exec("CREATE TABLE inboxctl_prunes (id INTEGER NOT NULL)")
        .await;
    let rows = db.count("processed_messages").await;
    let run = db.run(&["prune", "--before", &before, "--yes"]).code(1);
    assert!(
        run.stderr.contains(
            "prune stopped after deleting 0 rows; re-run to continue once the cause is \
             fixed: this batch deleted nothing: could not record the prune in inboxctl_prunes"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(db.count("processed_messages").await, rows);
    assert_eq!(db.count("inboxctl_prunes").await, 0);
}

each_backend!(prune_deletes_nothing_it_cannot_record);

/// A pruning user that may not create tables prunes once the record's table was made for
/// it: prune makes the table only when it is missing (PostgreSQL checks the right to create
/// even for CREATE TABLE IF NOT EXISTS of a table that exists).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_records_into_a_table_made_for_a_user_who_may_not_create() {
    let mut db = TestDb::new(Backend::Postgres).await;
    let cutoff = seed_for_prune(&mut db).await;
    let run = prune_as_a_role_that_may(&mut db, "SELECT, DELETE", cutoff).await;
    let json = run.ok().json();
    assert_eq!(json["rows_deleted"], 9);
    assert_eq!(db.count("inboxctl_prunes").await, 2);
}

/// A missing right fails every re-run alike: the error does not promise that a re-run
/// alone continues, as it does after a lock wait that timed out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_without_the_right_to_delete_says_the_cause_must_be_fixed() {
    let mut db = TestDb::new(Backend::Postgres).await;
    let cutoff = seed_for_prune(&mut db).await;
    let rows = db.count("processed_messages").await;
    let run = prune_as_a_role_that_may(&mut db, "SELECT", cutoff)
        .await
        .code(1);
    assert!(
        run.stderr.starts_with(
            "error: prune stopped after deleting 0 rows; re-run to continue once the cause is \
             fixed: could not delete a batch of consumer 'a': "
        ) && run
            .stderr
            .contains("permission denied for table processed_messages"),
        "{}",
        run.stderr
    );
    assert_eq!(db.count("processed_messages").await, rows);
    assert_eq!(db.count("inboxctl_prunes").await, 0);
}

/// `prune --before CUTOFF --yes --format json` as a role of its own that may do `rights` on
/// the inbox and record its prune, but not create tables.
async fn prune_as_a_role_that_may(db: &mut TestDb, rights: &str, cutoff: DateTime<Utc>) -> Run {
    let before = cutoff.to_rfc3339_opts(SecondsFormat::Millis, true);
    let role = db.role("").await;
    for sql in [
        "CREATE TABLE inboxctl_prunes (consumer TEXT NOT NULL, cutoff VARCHAR(40) NOT NULL, pruned_at VARCHAR(40) NOT NULL)".to_string(),
        "REVOKE CREATE ON SCHEMA public FROM PUBLIC".to_string(),
        format!("GRANT {rights} ON processed_messages TO {role}"),
        format!("GRANT SELECT, INSERT ON inboxctl_prunes TO {role}"),
    ] {
        db.exec(&sql).await;
    }
    let url = db.url.replacen("postgres@", &format!("{role}@"), 1);
    Run::from(
        db.cmd()
            .env("DATABASE_URL", &url)
            .args(["prune", "--before", &before, "--yes", "--format", "json"])
            .output()
            .unwrap(),
    )
}

/// MySQL: a user that may delete from the inbox but has no right on an `inboxctl_prunes`
/// that exists cannot see it, so prune tries to make it and is refused: the error says what
/// to grant, and nothing is deleted until it is.
#[tokio::test]
async fn mysql_a_record_of_prunes_the_user_cannot_see_says_what_to_grant() {
    let mut db = TestDb::new(Backend::Mysql).await;
    db.run(&["migrate", "run"]).ok();
    db.insert_rows(&[row("c", "old", None, now_ms() - Duration::days(40))])
        .await;
    db.exec(
        "CREATE TABLE inboxctl_prunes (consumer VARCHAR(255) CHARACTER SET utf8mb4 COLLATE \
         utf8mb4_bin NOT NULL, cutoff VARCHAR(40) NOT NULL, pruned_at VARCHAR(40) NOT NULL)",
    )
    .await;
    let user = db.role("").await;
    db.exec(&format!(
        "GRANT SELECT, DELETE ON processed_messages TO '{user}'@'%'"
    ))
    .await;
    let url = db.url.replacen("root@", &format!("{user}@"), 1);
    let prune = |db: &TestDb| {
        Run::from(
            db.cmd()
                .env("DATABASE_URL", &url)
                .args(["prune", "--older-than", "30d", "--yes"])
                .output()
                .unwrap(),
        )
    };
    let refused = prune(&db).code(1);
    assert!(
        refused.stderr.starts_with(
            "error: nothing was deleted: could not record the prune in inboxctl_prunes \
             (columns consumer TEXT, cutoff VARCHAR(40), pruned_at VARCHAR(40)); where it \
             exists, this user cannot see it: grant it INSERT on inboxctl_prunes (or CREATE, \
             to make it): "
        ),
        "{}",
        refused.stderr
    );
    assert_eq!(db.count("processed_messages").await, 1);
    db.exec(&format!("GRANT INSERT ON inboxctl_prunes TO '{user}'@'%'"))
        .await;
    prune(&db).ok();
    assert_eq!(db.count("processed_messages").await, 0);
    assert_eq!(db.count("inboxctl_prunes").await, 1);
}

/// What prune does to record a prune of `consumer`: the record's table made when missing,
/// then one record.
async fn record_prune(store: &Store, consumer: &str, cutoff: DateTime<Utc>) -> anyhow::Result<()> {
    store.prepare_prune_record().await?;
    let mut connection = store.acquire().await?;
    store
        .record_prune(&mut connection, &[consumer], cutoff)
        .await
}

/// The prunes recorded are told apart by consumer exactly as the inbox tells its consumers
/// apart: case-sensitively on every backend (MySQL's default collation is not).
async fn a_prune_is_recorded_for_its_own_consumer_only(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let cutoff = now_ms() - Duration::days(7);
    let store = db.store().await;
    record_prune(store, "BILLING", cutoff).await.unwrap();
    assert_eq!(store.last_prune_cutoff("billing").await.unwrap(), None);
    assert_eq!(
        store.last_prune_cutoff("BILLING").await.unwrap(),
        Some(cutoff)
    );
}

/// Two first prunes at once (two cron entries, two hosts on day one) both record theirs,
/// although each finds the record's table missing and makes it.
async fn two_first_prunes_at_once_both_record(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let url = DatabaseUrl::parse(&db.url).unwrap();
    let connect = || {
        Store::connect(
            &url,
            std::time::Duration::from_secs(10),
            CreateMode::MustExist,
        )
    };
    let (first, second) = (connect().await.unwrap(), connect().await.unwrap());
    let cutoff = now_ms() - Duration::days(7);
    for round in 0..20 {
        db.exec("DROP TABLE IF EXISTS inboxctl_prunes").await;
        let (a, b) = tokio::join!(
            record_prune(&first, "a", cutoff),
            record_prune(&second, "b", cutoff)
        );
        a.unwrap_or_else(|error| panic!("round {round}: {error:#}"));
        b.unwrap_or_else(|error| panic!("round {round}: {error:#}"));
        assert_eq!(db.count("inboxctl_prunes").await, 2);
    }
    first.close().await;
    second.close().await;
}

each_backend!(
    a_prune_is_recorded_for_its_own_consumer_only,
    two_first_prunes_at_once_both_record,
);

fn cutoff_time(text: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&chrono::Utc)
}

/// Every command ends its session as the protocol asks, after an error too. PostgreSQL
/// counts a session whose client went away without its Terminate message as abandoned (and
/// over TLS logs "could not receive data from client: Connection reset by peer"); a
/// connection still on its way back to the pool when the command closed it used to be
/// dropped that way in most runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_end_their_sessions_cleanly_on_postgres() {
    let db = TestDb::new(Backend::Postgres).await;
    let prune = ["prune", "--older-than", "1d", "--yes"];
    // Without the table, both fail after connecting: one session each.
    for _ in 0..3 {
        let run = db.run(&prune).code(1);
        assert!(run.stderr.contains("processed_messages"), "{}", run.stderr);
        db.run(&["inspect"]).code(1);
    }
    assert_eq!(db.ended_sessions().await, (6, 0));

    // migrate's sessions are the command's own business: counted from here on.
    db.run(&["migrate", "run"]).ok();
    let (before, _) = db.ended_sessions().await;
    // Rows to delete.
    db.exec_and_disconnect(
        "INSERT INTO processed_messages (consumer, event_id, processed_at) \
         SELECT 'billing', 'e' || i, now() - interval '3 days' FROM generate_series(1, 20) AS i",
    )
    .await;
    for _ in 0..3 {
        db.run(&["inspect"]).ok();
        db.run(&["inspect", "--event-id", "e1"]).ok();
        db.run(&["prune", "--older-than", "1d", "--dry-run"]).ok();
        db.run(&prune).ok();
    }
    assert_eq!(
        db.run(&["inspect", "--format", "json"]).ok().json()["total_rows"],
        0
    );
    let (ended, abandoned) = db.ended_sessions().await;
    assert_eq!((ended - before, abandoned), (1 + 4 * 3 + 1, 0));
}

/// `prune --group` keeps only rows with all three coordinates at or above the committed
/// offset (or in a partition without one). A row missing any coordinate cannot be placed in
/// the log, so it is pruned as a row without coordinates, and left out of the count of rows
/// kept.
async fn prune_group_prunes_rows_with_incomplete_coordinates(backend: Backend) {
    use common::kafka::{broker, unique};
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let (topic, group) = (unique("orders"), unique("billing"));
    broker().create_topic(&topic, 2).await;
    let events: Vec<(i32, String)> = (0..8).map(|n| (0, format!("e{n}"))).collect();
    broker().produce(&topic, &events).await;
    // Partition 0 committed at 5; partition 1 has no committed offset.
    broker().commit(&group, &topic, &[(0, 5)]);
    let old = now_ms() - Duration::days(2);
    let at =
        |event_id: &str, topic: Option<&str>, partition: Option<i32>, offset: Option<i64>| Row_ {
            consumer: group.clone(),
            event_id: event_id.to_string(),
            topic: topic.map(str::to_string),
            partition,
            offset,
            processed_at: old,
        };
    let t = Some(topic.as_str());
    db.insert_rows(&[
        at("none", None, None, None),
        at("topic-only", t, None, None),
        at("no-offset", t, Some(0), None),
        at("below", t, Some(0), Some(3)),
        at("at-committed", t, Some(0), Some(5)),
        at("above", t, Some(0), Some(7)),
        at("uncommitted-no-offset", t, Some(1), None),
        at("uncommitted", t, Some(1), Some(2)),
    ])
    .await;
    let mut command = db.cmd();
    command.env("KAFKA_BROKERS", &broker().address).args([
        "prune",
        "--older-than",
        "1d",
        "--group",
        &group,
        "--dry-run",
    ]);
    let dry = Run::from(command.output().unwrap()).ok();
    assert!(
        dry.stdout
            .contains("Kept 3 older rows at or above the group's committed offsets"),
        "{}",
        dry.stdout
    );
    let mut command = db.cmd();
    command.env("KAFKA_BROKERS", &broker().address).args([
        "prune",
        "--older-than",
        "1d",
        "--group",
        &group,
        "--yes",
        "--format",
        "json",
    ]);
    let json = Run::from(command.output().unwrap()).ok().json();
    assert_eq!(json["rows_kept_for_redelivery"], 3, "{json}");
    assert_eq!(json["rows_deleted"], 5, "{json}");
    assert_eq!(
        db.event_ids(&group).await,
        ids(&["above", "at-committed", "uncommitted"])
    );
}

each_backend!(prune_group_prunes_rows_with_incomplete_coordinates);

/// `prune --group` keeps the same rows in a WITHOUT ROWID inbox as in a rowid one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_group_keeps_rows_of_a_without_rowid_inbox() {
    use common::kafka::{broker, unique};
    let mut db = without_rowid_inbox().await;
    db.run(&["migrate", "run"]).ok();
    let (topic, group) = (unique("orders"), unique("billing"));
    broker().create_topic(&topic, 2).await;
    let events: Vec<(i32, String)> = (0..8).map(|n| (0, format!("e{n}"))).collect();
    broker().produce(&topic, &events).await;
    // Partition 0 committed at 5; partition 1 has no committed offset.
    broker().commit(&group, &topic, &[(0, 5)]);
    let old = now_ms() - Duration::days(2);
    let at = |event_id: &str, coordinates: Option<(&str, i32, i64)>| {
        row(&group, event_id, coordinates, old)
    };
    db.insert_rows(&[
        at("none", None),
        at("below", Some((&topic, 0, 3))),
        at("at-committed", Some((&topic, 0, 5))),
        at("above", Some((&topic, 0, 7))),
        at("uncommitted", Some((&topic, 1, 2))),
    ])
    .await;
    let mut command = db.cmd();
    command.env("KAFKA_BROKERS", &broker().address).args([
        "prune",
        "--older-than",
        "1d",
        "--group",
        &group,
        "--batch-size",
        "1",
        "--yes",
        "--format",
        "json",
    ]);
    let json = Run::from(command.output().unwrap()).ok().json();
    assert_eq!(json["rows_kept_for_redelivery"], 3, "{json}");
    assert_eq!(json["rows_deleted"], 2, "{json}");
    assert_eq!(
        db.event_ids(&group).await,
        ids(&["above", "at-committed", "uncommitted"])
    );
}

/// inspect's reads are one moment of the database on PostgreSQL and MySQL: a prune record
/// deleted while inspect waits to read the records (the test holds their table locked)
/// is still in its report, as the rows counted before are, rather than a report that mixes
/// two moments.
async fn inspect_reads_one_moment(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let now = now_ms();
    db.insert_rows(&[
        row("c", "old1", None, now - Duration::days(40)),
        row("c", "old2", None, now - Duration::days(40)),
        row("c", "new", None, now),
    ])
    .await;
    let pruned = db
        .run(&["prune", "--older-than", "30d", "--yes", "--format", "json"])
        .ok();
    let cutoff = pruned.json()["cutoff"].clone();
    let pool = db.pool().await;
    let mut holder = pool.acquire().await.unwrap();
    let lock = match backend {
        Backend::Postgres => "BEGIN; LOCK TABLE inboxctl_prunes IN ACCESS EXCLUSIVE MODE",
        _ => "LOCK TABLES inboxctl_prunes WRITE",
    };
    sqlx::raw_sql(lock).execute(&mut *holder).await.unwrap();
    let mut inspect = db.spawn(&["inspect", "--format", "json"]);
    until_it_waits_for_a_table_lock(&mut db, &mut inspect).await;
    let release = match backend {
        Backend::Postgres => "DELETE FROM inboxctl_prunes; COMMIT",
        _ => "DELETE FROM inboxctl_prunes; UNLOCK TABLES",
    };
    sqlx::raw_sql(release).execute(&mut *holder).await.unwrap();
    let run = Run::from(inspect.wait_with_output().unwrap()).ok();
    assert_eq!(run.stderr, "");
    let report = run.json();
    assert_eq!(report["total_rows"], 1);
    assert_eq!(report["consumers"][0]["pruned_before"], cutoff);
    // Afterwards the record is gone, as the next inspect says.
    let after = db.run(&["inspect", "--format", "json"]).ok();
    assert_eq!(
        after.json()["consumers"][0]["pruned_before"],
        serde_json::Value::Null
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_reads_one_moment_on_postgres() {
    inspect_reads_one_moment(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_reads_one_moment_on_mysql() {
    inspect_reads_one_moment(Backend::Mysql).await;
}

/// An inbox of many consumers: prune counts and probes them in one statement and records
/// each one's prune (page ranges all of them at once, in statements of many rows, and the
/// index those of each shared batch); with `--yes` alone (no count) it deletes
/// the old rows of every consumer that has any, and of none that has none.
async fn prune_of_many_consumers_deletes_and_records_each(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let now = now_ms();
    // 650 consumers with an old row (three statements of records: 300, 300, 50), and every
    // tenth of them a new row too; one more consumer with only a new row.
    let mut rows = Vec::new();
    for n in 0..650 {
        let consumer = format!("c{n:03}");
        rows.push(row(&consumer, "old", None, now - Duration::days(40)));
        if n % 10 == 0 {
            rows.push(row(&consumer, "new", None, now));
        }
    }
    rows.push(row("young", "new", None, now));
    db.insert_rows(&rows).await;
    let prune = ["prune", "--older-than", "30d", "--format", "json"];
    let dry = db.run(&[&prune[..], &["--dry-run"]].concat()).ok().json();
    assert_eq!(dry["rows_matched"], 650);
    assert_eq!(dry["consumers"].as_array().unwrap().len(), 650);
    // Page ranges record every consumer in their first batch; the index, each in its own.
    let strategy = match backend {
        Backend::Postgres => "blocks",
        _ => "index",
    };
    let run = db
        .run(&[&prune[..], &["--yes", "--strategy", strategy]].concat())
        .ok()
        .json();
    assert_eq!(run["rows_deleted"], 650);
    // Through the index, 500 consumers share the first batch, the other 150 the second.
    if strategy == "index" {
        assert_eq!(run["batches"], 2);
        let consumers = run["consumers"].as_array().unwrap();
        assert!(consumers.iter().all(|c| c["deleted"] == 1), "{run}");
    }
    assert_eq!(db.count("processed_messages").await, 66);
    assert_eq!(
        db.scalar("SELECT COUNT(DISTINCT consumer) FROM inboxctl_prunes")
            .await,
        650
    );
    assert_eq!(db.count("inboxctl_prunes").await, 650);
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM inboxctl_prunes WHERE consumer = 'young'")
            .await,
        0
    );
}

each_backend!(prune_of_many_consumers_deletes_and_records_each);

/// The batch lines of `-v`.
fn batch_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.starts_with("batch "))
        .collect()
}

/// Consumers with few old rows share batches (one transaction for several, where each had
/// its own): with --batch-size 10, consumers of three old rows go up to three to a batch,
/// one of twelve has batches of its own, and each one's rows are counted and its prune
/// recorded as before. --max-rows stops within a consumer, its oldest rows first, and the
/// next run takes the rest.
async fn consumers_with_few_old_rows_share_batches(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    let now = now_ms();
    let mut rows = Vec::new();
    for n in 0..10 {
        let consumer = format!("s{n}");
        for age in 1..=3 {
            let id = format!("old-{age}");
            rows.push(row(&consumer, &id, None, now - Duration::days(40 + age)));
        }
        rows.push(row(&consumer, "new", None, now));
    }
    for n in 0..12 {
        let id = format!("old-{n:02}");
        rows.push(row("big", &id, None, now - Duration::days(40 + n)));
    }
    rows.push(row("young", "new", None, now));
    db.insert_rows(&rows).await;
    let prune = [
        "prune",
        "--older-than",
        "30d",
        "--yes",
        "--strategy",
        "index",
        "--batch-size",
        "10",
        "--format",
        "json",
        "-v",
    ];
    let deleted = |report: &serde_json::Value| -> Vec<(String, u64)> {
        report["consumers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let name = c["consumer"].as_str().unwrap().to_string();
                (name, c["deleted"].as_u64().unwrap())
            })
            .collect()
    };
    let expected = |counts: &[u64]| -> Vec<(String, u64)> {
        let names = [
            "big", "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9",
        ];
        names
            .iter()
            .map(|n| n.to_string())
            .zip(counts.iter().copied())
            .collect()
    };

    let first = db.run(&[&prune[..], &["--max-rows", "20"]].concat()).ok();
    assert_eq!(
        batch_lines(&first.stderr),
        [
            "batch 1: deleted 10 rows of consumer 'big'",
            "batch 2: deleted 2 rows of consumer 'big'",
            "batch 3: deleted 6 rows of 2 consumers ('s0' to 's1')",
            "batch 4: deleted 2 rows of consumer 's2'",
        ],
        "{}",
        first.stderr
    );
    let report = first.json();
    assert_eq!(
        (report["rows_deleted"].clone(), report["batches"].clone()),
        (20.into(), 4.into())
    );
    assert_eq!(
        deleted(&report),
        expected(&[12, 3, 3, 2, 0, 0, 0, 0, 0, 0, 0])
    );
    assert_eq!(db.event_ids("s2").await, ids(&["new", "old-1"]));
    assert_eq!(
        db.event_ids("s3").await,
        ids(&["new", "old-1", "old-2", "old-3"])
    );
    assert_eq!(recorded_prunes(&mut db).await, ["big", "s0", "s1", "s2"]);

    let second = db.run(&prune).ok();
    assert_eq!(
        batch_lines(&second.stderr),
        [
            "batch 1: deleted 7 rows of 3 consumers ('s2' to 's4')",
            "batch 2: deleted 9 rows of 3 consumers ('s5' to 's7')",
            "batch 3: deleted 6 rows of 2 consumers ('s8' to 's9')",
        ],
        "{}",
        second.stderr
    );
    let report = second.json();
    assert_eq!(report["rows_deleted"], 22);
    let left = (2..10).map(|n| (format!("s{n}"), if n == 2 { 1 } else { 3 }));
    assert_eq!(deleted(&report), left.collect::<Vec<_>>());
    assert_eq!(db.count("processed_messages").await, 11);
    for n in 0..10 {
        assert_eq!(db.event_ids(&format!("s{n}")).await, ids(&["new"]));
    }
    assert_eq!(
        recorded_prunes(&mut db).await,
        ["big", "s0", "s1", "s2", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"]
    );
}

each_backend!(consumers_with_few_old_rows_share_batches);

/// One row of 40 days ago, `e1`, for each of `consumers`.
async fn one_old_row_each(db: &mut TestDb, consumers: &[&str]) {
    let old = now_ms() - Duration::days(40);
    let rows: Vec<_> = consumers
        .iter()
        .map(|consumer| row(consumer, "e1", None, old))
        .collect();
    db.insert_rows(&rows).await;
}

/// A shared batch that fails for one consumer's rows (a trigger that raises an error) is
/// undone whole: its consumers then go one by one, as they did before sharing, so the rows
/// before the one at fault go, and the error names that consumer.
async fn a_shared_batch_that_fails_goes_consumer_by_consumer(backend: Backend) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(match backend {
        Backend::Postgres => {
            "CREATE FUNCTION refuse_b() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN IF OLD.consumer = 'b' THEN RAISE EXCEPTION 'rows of b are kept'; END IF; \
             RETURN OLD; END $$; \
             CREATE TRIGGER refuse_b BEFORE DELETE ON processed_messages \
             FOR EACH ROW EXECUTE FUNCTION refuse_b()"
        }
        Backend::Sqlite => {
            "CREATE TRIGGER refuse_b BEFORE DELETE ON processed_messages \
             WHEN OLD.consumer = 'b' BEGIN SELECT RAISE(ABORT, 'rows of b are kept'); END"
        }
        Backend::Mysql => {
            "CREATE TRIGGER refuse_b BEFORE DELETE ON processed_messages FOR EACH ROW \
             BEGIN IF OLD.consumer = 'b' THEN \
             SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'rows of b are kept'; END IF; END"
        }
    })
    .await;
    one_old_row_each(&mut db, &["a", "b", "c"]).await;
    let run = db
        .run(&[
            "prune",
            "--older-than",
            "30d",
            "--yes",
            "--strategy",
            "index",
            "-v",
        ])
        .code(1);
    assert!(
        run.stderr
            .contains("the batch of consumers 'a' to 'c' failed (")
            && run.stderr.contains(
                "error: prune stopped after deleting 1 rows; re-run to continue once the cause \
                 is fixed: could not delete a batch of consumer 'b': "
            )
            && run.stderr.trim_end().ends_with("rows of b are kept"),
        "{}",
        run.stderr
    );
    assert_eq!(db.event_ids("a").await, Vec::<String>::new());
    assert_eq!(db.event_ids("b").await, ids(&["e1"]));
    assert_eq!(db.event_ids("c").await, ids(&["e1"]));
    assert_eq!(recorded_prunes(&mut db).await, ["a"]);
}

each_backend!(a_shared_batch_that_fails_goes_consumer_by_consumer);

/// A shared batch stopped by the session's time limit is not gone over consumer by
/// consumer: each batch would wait out the limit again, as a cancel by a DBA means stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_shared_batch_past_the_time_limit_stops_prune() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(
        "CREATE FUNCTION slow_delete() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN PERFORM pg_sleep(0.2); RETURN OLD; END $$; \
         CREATE TRIGGER slow_delete BEFORE DELETE ON processed_messages \
         FOR EACH ROW EXECUTE FUNCTION slow_delete()",
    )
    .await;
    one_old_row_each(&mut db, &["a", "b", "c"]).await;
    db.set_database_default("statement_timeout", "100").await;
    let run = db
        .run(&[
            "prune",
            "--older-than",
            "30d",
            "--yes",
            "--strategy",
            "index",
            "-v",
        ])
        .code(1);
    assert!(
        run.stderr.contains(
            "error: prune stopped after deleting 0 rows; re-run to continue once the cause is \
             fixed: could not delete a batch of consumers 'a', 'b', 'c': "
        ) && run
            .stderr
            .contains("canceling statement due to statement timeout")
            && !run.stderr.contains("on its own instead"),
        "{}",
        run.stderr
    );
    assert_eq!(db.count("processed_messages").await, 3);
}

/// A database that takes no writes (a standby, or one set read-only): PostgreSQL's message
/// names the SELECT that wraps the DELETE, so the error says what the refusal means.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_read_only_database_is_named_as_such() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    one_old_row_each(&mut db, &["a", "b"]).await;
    db.run(&["prune", "--older-than", "30d", "--dry-run"]).ok();
    db.set_database_default("default_transaction_read_only", "on")
        .await;
    let run = db
        .run(&[
            "prune",
            "--older-than",
            "30d",
            "--yes",
            "--strategy",
            "index",
        ])
        .code(1);
    assert!(
        run.stderr.contains("read-only transaction")
            && run.stderr.trim_end().ends_with(
                "; the server takes no writes in this session (a standby, or a database or role \
                 set to default_transaction_read_only, or a server started read-only): point \
                 --database-url at the primary"
            ),
        "{}",
        run.stderr
    );
    assert_eq!(db.count("processed_messages").await, 2);
}

/// MariaDB's collation takes `'a '` for `'a'`: the inbox lists one consumer, and a shared
/// batch counts and records the rows of both names as that consumer's, as its batch alone
/// would (and as inspect lists it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_names_told_apart_by_trailing_spaces_share_a_batch_as_one_consumer() {
    let mut db = TestDb::new(Backend::Mysql).await;
    db.run(&["migrate", "run"]).ok();
    let old = now_ms() - Duration::days(40);
    let mut rows = vec![row("b", "e1", None, old), row("b", "e2", None, old)];
    for (consumer, id) in [
        ("a", "e1"),
        ("a", "e2"),
        ("a ", "f1"),
        ("a ", "f2"),
        ("a ", "f3"),
    ] {
        rows.push(row(consumer, id, None, old));
    }
    db.insert_rows(&rows).await;
    let run = db
        .run(&[
            "prune",
            "--older-than",
            "30d",
            "--yes",
            "--strategy",
            "index",
            "--format",
            "json",
            "-v",
        ])
        .ok();
    let report = run.json();
    assert_eq!(report["rows_deleted"], 7);
    assert_eq!(report["batches"], 1, "{}", run.stderr);
    let counted: Vec<(String, u64)> = report["consumers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let name = c["consumer"].as_str().unwrap().trim_end().to_string();
            (name, c["deleted"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(counted, [("a".to_string(), 5), ("b".to_string(), 2)]);
    assert_eq!(db.count("processed_messages").await, 0);
    let recorded: Vec<String> = recorded_prunes(&mut db)
        .await
        .iter()
        .map(|name| name.trim_end().to_string())
        .collect();
    assert_eq!(recorded, ["a", "b"]);
}

/// A consumer of a shared batch of which it deleted fewer rows than prune had seen (a
/// trigger keeps one here) is gone over again on its own: its kept row is named as a
/// possible trigger's, and the rows of the others are deleted in the shared batch.
async fn rows_kept_from_a_shared_batch_are_tried_again(backend: Backend, trigger: &str) {
    let mut db = TestDb::new(backend).await;
    db.run(&["migrate", "run"]).ok();
    db.exec(trigger).await;
    let old = now_ms() - Duration::days(40);
    db.insert_rows(&[
        row("a", "old", None, old),
        row("b", "old", None, old),
        row("b", "vetoed", None, old - Duration::days(1)),
        row("c", "old", None, old),
    ])
    .await;
    let run = db
        .run(&[
            "prune",
            "--older-than",
            "30d",
            "--yes",
            "--strategy",
            "index",
            "--format",
            "json",
            "-v",
        ])
        .ok();
    assert_eq!(
        batch_lines(&run.stderr),
        ["batch 1: deleted 3 rows of 3 consumers ('a' to 'c')"]
    );
    assert!(
        run.stderr.contains(
            "warning: 3 batches of consumer 'b' in a row deleted nothing although older rows remain"
        ),
        "{}",
        run.stderr
    );
    let report = run.json();
    assert_eq!(report["rows_deleted"], 3);
    assert_eq!(report["consumers"][1]["deleted"], 1);
    assert_eq!(db.event_ids("b").await, ids(&["vetoed"]));
    assert_eq!(db.count("processed_messages").await, 1);
    assert_eq!(recorded_prunes(&mut db).await, ["a", "b", "c"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_kept_from_a_shared_batch_are_tried_again_on_sqlite() {
    rows_kept_from_a_shared_batch_are_tried_again(
        Backend::Sqlite,
        "CREATE TRIGGER keep_vetoed BEFORE DELETE ON processed_messages \
         WHEN OLD.event_id LIKE 'vetoed%' BEGIN SELECT RAISE(IGNORE); END",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_kept_from_a_shared_batch_are_tried_again_on_postgres() {
    rows_kept_from_a_shared_batch_are_tried_again(
        Backend::Postgres,
        "CREATE FUNCTION keep_vetoed() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN IF OLD.event_id LIKE 'vetoed%' THEN RETURN NULL; END IF; RETURN OLD; END $$; \
         CREATE TRIGGER keep_vetoed BEFORE DELETE ON processed_messages \
         FOR EACH ROW EXECUTE FUNCTION keep_vetoed()",
    )
    .await;
}

/// MySQL: a table made after inspect's snapshot began (the first prune making its record
/// table, here while inspect waits for the inbox) cannot be read in that snapshot ("Table
/// definition has changed, please retry transaction"): inspect reads again, in a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_inspect_reads_again_when_a_table_is_made_under_it() {
    let mut db = TestDb::new(Backend::Mysql).await;
    db.run(&["migrate", "run"]).ok();
    let now = now_ms();
    db.insert_rows(&[
        row("c", "old", None, now - Duration::days(40)),
        row("c", "new", None, now),
    ])
    .await;
    // The record table as prune makes it, then gone again.
    db.run(&["prune", "--older-than", "30d", "--yes"]).ok();
    let pool = db.pool().await;
    let ddl: String = sqlx::query("SHOW CREATE TABLE inboxctl_prunes")
        .fetch_one(&pool)
        .await
        .unwrap()
        .get(1);
    db.exec("DROP TABLE inboxctl_prunes").await;

    let mut holder = pool.acquire().await.unwrap();
    sqlx::raw_sql("LOCK TABLES processed_messages WRITE")
        .execute(&mut *holder)
        .await
        .unwrap();
    let mut inspect = db.spawn(&["inspect", "--format", "json"]);
    until_it_waits_for_a_table_lock(&mut db, &mut inspect).await;
    db.exec(&ddl).await;
    db.exec(
        "INSERT INTO inboxctl_prunes (consumer, cutoff, pruned_at) \
         VALUES ('c', '2026-11-06T00:00:00.000Z', '2026-12-06T00:00:00.000Z')",
    )
    .await;
    sqlx::raw_sql("UNLOCK TABLES")
        .execute(&mut *holder)
        .await
        .unwrap();
    let run = Run::from(inspect.wait_with_output().unwrap()).ok();
    assert_eq!(run.stderr, "");
    let report = run.json();
    assert_eq!(report["total_rows"], 1);
    assert_eq!(
        report["consumers"][0]["pruned_before"],
        "2026-11-06T00:00:00Z"
    );
}

/// Runs `sql` in a transaction of its own, which holds its locks until it is rolled back.
async fn in_a_transaction_left_open(
    db: &mut TestDb,
    sql: &str,
) -> sqlx::Transaction<'static, sqlx::Any> {
    let pool = db.pool().await;
    let mut transaction = pool.begin().await.unwrap();
    sqlx::raw_sql(sql).execute(&mut *transaction).await.unwrap();
    transaction
}

/// A migrated PostgreSQL inbox of one row, `old` of consumer `c`, processed 40 days ago.
async fn postgres_inbox_of_one_old_row() -> TestDb {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    db.insert_rows(&[row("c", "old", None, now_ms() - Duration::days(40))])
        .await;
    db
}

/// PostgreSQL: a count before a dry run or a confirmation, or a lookup before a prune under
/// --yes, that runs past the role's `statement_timeout` (here: waiting for a lock the test
/// holds) says how to get under it, and deletes nothing. For every consumer, it first tries
/// again one consumer at a time; here their listing waits too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_count_past_the_statement_timeout_says_what_to_do() {
    let mut db = postgres_inbox_of_one_old_row().await;
    let role = db.role("").await;
    db.exec(&format!(
        "GRANT SELECT, DELETE ON processed_messages TO {role}; \
         ALTER ROLE {role} SET statement_timeout = '200ms'"
    ))
    .await;
    let holder = in_a_transaction_left_open(
        &mut db,
        "LOCK TABLE processed_messages IN ACCESS EXCLUSIVE MODE",
    )
    .await;
    let url = db.url.replacen("postgres@", &format!("{role}@"), 1);
    let limit = "ran past the session's statement time limit";
    let listing = format!(
        "listing the inbox's consumers {limit}; name one with --consumer, or raise the limit \
         (nothing was deleted): could not list the inbox's consumers"
    );
    for (more, hint) in [
        (&["--dry-run"][..], listing.clone()),
        (&["--yes"], listing),
        (
            &["--dry-run", "--consumer", "c"],
            format!(
                "counting the old rows of consumer 'c' {limit}; raise the limit \
                 (nothing was deleted): could not count the rows to prune"
            ),
        ),
        (
            &["--yes", "--consumer", "c"],
            format!(
                "looking up the old rows of consumer 'c' {limit}; raise the limit \
                 (nothing was deleted): could not look up the rows to prune"
            ),
        ),
    ] {
        // The index strategy: page ranges would first read the table's size, which waits
        // for the lock too.
        let mut args = vec!["prune", "--older-than", "30d", "--strategy", "index"];
        args.extend_from_slice(more);
        let run = Run::from(
            db.cmd()
                .env("DATABASE_URL", &url)
                .args(&args)
                .output()
                .unwrap(),
        )
        .code(1);
        assert_eq!(
            run.stderr,
            format!(
                "error: {hint}: error returned from database: canceling statement due to \
                 statement timeout\n"
            ),
            "{args:?}"
        );
    }
    holder.rollback().await.unwrap();
    assert_eq!(db.count("processed_messages").await, 1);
}

/// PostgreSQL: a count of every consumer's old rows that runs past the role's
/// `statement_timeout` as one statement is made again one statement per consumer, each of
/// which fits. Here a row-level security policy makes each row named `b` cost 2 ms to read:
/// 300 of them in one statement take 600 ms, over the limit of 200 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_count_past_the_statement_timeout_is_made_consumer_by_consumer() {
    let mut db = TestDb::new(Backend::Postgres).await;
    db.run(&["migrate", "run"]).ok();
    let now = now_ms();
    // Each consumer's first row in either index is `a`, which the listing of consumers reads.
    let rows: Vec<_> = (0..300)
        .flat_map(|n| {
            let consumer = format!("c{n:03}");
            [
                row(&consumer, "a", None, now - Duration::days(50)),
                row(&consumer, "b", None, now - Duration::days(40)),
            ]
        })
        .collect();
    db.insert_rows(&rows).await;
    let role = db.role("").await;
    db.exec(&format!(
        "GRANT SELECT ON processed_messages TO {role}; \
         ALTER ROLE {role} SET statement_timeout = '200ms'; \
         CREATE FUNCTION slow_row() RETURNS boolean LANGUAGE plpgsql \
         AS $$ BEGIN PERFORM pg_sleep(0.002); RETURN true; END $$; \
         ALTER TABLE processed_messages ENABLE ROW LEVEL SECURITY; \
         CREATE POLICY slow_b ON processed_messages FOR SELECT \
         USING (event_id <> 'b' OR slow_row())"
    ))
    .await;
    let url = db.url.replacen("postgres@", &format!("{role}@"), 1);
    let run = Run::from(
        db.cmd()
            .env("DATABASE_URL", &url)
            .args([
                "prune",
                "--older-than",
                "30d",
                "--strategy",
                "index",
                "--dry-run",
                "--format",
                "json",
                "-v",
            ])
            .output()
            .unwrap(),
    )
    .ok();
    assert!(
        run.stderr.contains(
            "counting the old rows of every consumer in one statement ran past the session's \
             statement time limit; one statement per consumer instead"
        ),
        "{}",
        run.stderr
    );
    let json = run.json();
    assert_eq!(json["rows_matched"], 600);
    let consumers = json["consumers"].as_array().unwrap();
    assert_eq!(consumers.len(), 300);
    assert_eq!(consumers[0]["consumer"], "c000");
    assert_eq!(consumers[299]["consumer"], "c299");
    assert!(consumers.iter().all(|c| c["matched"] == 2), "{consumers:?}");
    assert_eq!(db.count("processed_messages").await, 600);
}

/// Nothing is written before prune's first batch, so until then Ctrl-C or SIGTERM end it at
/// once with "Nothing deleted." and 130 or 143: here while its count (a dry run) or its
/// lookup (--yes) waits for a lock the test holds, which it would otherwise wait out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_before_the_first_batch_ends_prune_at_once() {
    let mut db = postgres_inbox_of_one_old_row().await;
    let holder = in_a_transaction_left_open(
        &mut db,
        "LOCK TABLE processed_messages IN ACCESS EXCLUSIVE MODE",
    )
    .await;
    let waiting = "SELECT COUNT(*) FROM pg_stat_activity \
                   WHERE datname = current_database() AND wait_event_type = 'Lock'";
    for (more, signal, code) in [("--dry-run", "INT", 130), ("--yes", "TERM", 143)] {
        // The session of the run before still waits: the server has yet to see it gone.
        let before = db.scalar(waiting).await;
        // The index strategy: page ranges would first read the table's size, under the lock.
        let mut args = vec!["prune", "--older-than", "30d", "--strategy", "index", more];
        let json = more == "--yes";
        if json {
            args.extend(["--format", "json"]);
        }
        let mut child = db.spawn(&args);
        until_it_waits(&mut db, &mut child, async |db: &mut TestDb| {
            db.scalar(waiting).await > before
        })
        .await;
        send_signal(signal, &child.id().to_string());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        assert_eq!(wait_until(&mut child, deadline), Some(code), "{more}");
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(stderr, "Nothing deleted.\n", "{more}");
        let mut stdout = String::new();
        std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
        if json {
            // A script reading the result gets one.
            let result: serde_json::Value = serde_json::from_str(&stdout).expect(&stdout);
            assert_stopped_at_once(&result, (0, 0), "Nothing deleted.");
        } else {
            assert_eq!(stdout, "", "{more}");
        }
    }
    holder.rollback().await.unwrap();
    assert_eq!(db.count("processed_messages").await, 1);
}

/// Ctrl-C after yes to prune's question, while prune makes its record of prunes (here it
/// waits for another session creating the same table), still ends it: the question caught
/// the signals while it was asked, and they are not left caught with no one to act on them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_after_the_question_and_before_the_first_batch_deletes_nothing() {
    let mut db = postgres_inbox_of_one_old_row().await;
    let creating =
        in_a_transaction_left_open(&mut db, "CREATE TABLE inboxctl_prunes (consumer TEXT)").await;
    let mut command = db.command(&["prune", "--older-than", "30d", "--strategy", "index"]);
    command.env("TERM", "xterm");
    let mut asked = terminal::Terminal::spawn(command);
    asked.expect("Delete 1 row of processed_messages processed before");
    asked.send("y");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !waits_for_a_lock(&mut db).await {
        assert!(
            !asked.ended(),
            "prune ended before it waited: {}",
            asked.screen()
        );
        assert!(
            std::time::Instant::now() < deadline,
            "prune never waited for the table: {}",
            asked.screen()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // The terminal is back in its usual mode after the question: the key is a signal.
    asked.send("\x03");
    let (code, screen, _) = asked.wait();
    assert_eq!(code, 130, "{screen}");
    assert!(screen.ends_with("Nothing deleted.\r\n"), "{screen:?}");
    creating.rollback().await.unwrap();
    assert_eq!(db.count("processed_messages").await, 1);
}
