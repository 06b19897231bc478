//! Bad input, secrets in URLs, completions: what the command line promises.

mod common;

use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;

fn inboxctl(args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    inboxctl_in(dir.path(), args)
}

/// inboxctl run in `dir`, with no DATABASE_URL: the default `sqlite://inbox.db` is there.
fn inboxctl_in(dir: &std::path::Path, args: &[&str]) -> Run {
    Run::from(
        assert_cmd::Command::cargo_bin("inboxctl")
            .unwrap()
            .env_remove("DATABASE_URL")
            .current_dir(dir)
            .args(args)
            .output()
            .unwrap(),
    )
}

/// librdkafka's own log lines (each failed connection attempt) reach stderr with -vv, and
/// with -X debug=…; otherwise only the command's own error does. Its passwords stay hidden.
#[test]
fn very_verbose_shows_the_kafka_clients_own_log_lines() {
    // Time enough for the client's first connection attempts on a loaded machine.
    let unreachable = [
        "offsets",
        "show",
        "--brokers",
        "127.0.0.1:1",
        "--kafka-timeout",
        "3s",
    ];
    let quiet = inboxctl(&unreachable).code(1);
    assert!(!quiet.stderr.contains("librdkafka:"), "{}", quiet.stderr);
    assert_eq!(quiet.stderr.lines().count(), 1, "{}", quiet.stderr);
    let loud = inboxctl(&[&["-vv"][..], &unreachable].concat()).code(1);
    assert!(
        loud.stderr
            .lines()
            .any(|line| line.starts_with("librdkafka: FAIL ") && line.contains("127.0.0.1:1")),
        "{}",
        loud.stderr
    );
    let debug = inboxctl(
        &[
            &unreachable[..],
            &[
                "-X",
                "debug=broker,conf",
                "-X",
                "sasl.username=u",
                "-X",
                "sasl.password=hunter2pw",
            ],
        ]
        .concat(),
    )
    .code(1);
    assert!(debug.stderr.contains("librdkafka: "), "{}", debug.stderr);
    assert!(!debug.stderr.contains("hunter2pw"), "{}", debug.stderr);
}

#[test]
fn unknown_scheme_is_a_usage_error_listing_the_supported_ones() {
    let run = inboxctl(&[
        "inspect",
        "--database-url",
        "redis://user:topsecret@127.0.0.1:6379",
    ])
    .code(2);
    assert!(
        run.stderr.contains("the scheme must be one of sqlite://, postgres:// (postgresql://), mysql:// (mariadb://)"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("topsecret"), "{}", run.stderr);
}

#[test]
fn a_bad_url_parameter_is_a_usage_error_said_once() {
    // A value the driver refuses, with the URL it was in, its password hidden.
    for (url, shown) in [
        (
            "postgres://postgres:topsecret@127.0.0.1:5432/test?statement-cache-capacity=lots",
            "postgres://postgres:***@127.0.0.1:5432/test?statement-cache-capacity=lots",
        ),
        (
            "mysql://root@127.0.0.1:3306/test?statement-cache-capacity=lots",
            "mysql://root@127.0.0.1:3306/test?statement-cache-capacity=lots",
        ),
    ] {
        let run = inboxctl(&["inspect", "--database-url", url]).code(2);
        assert_eq!(
            run.stderr,
            format!("error: invalid database URL '{shown}': invalid digit found in string\n")
        );
    }
}

/// A SQLite file not opened in time is no server down: the hint says what may hold it.
#[test]
fn a_sqlite_file_not_opened_in_time_is_said_to_be_held() {
    let dir = tempfile::tempdir().unwrap();
    inboxctl_in(dir.path(), &["migrate", "run", "-q"]).code(0);
    let late = inboxctl_in(dir.path(), &["inspect", "--connect-timeout", "1ns"]).code(1);
    assert!(
        late.stderr
            .starts_with("error: could not connect to SQLite file ")
            && late.stderr.contains(
                " within 1ns (is another process holding it locked? see --connect-timeout)"
            ),
        "{}",
        late.stderr
    );
}

#[test]
fn unreachable_servers_are_named_by_host_and_port() {
    for url in [
        "postgres://app:topsecret@127.0.0.1:1/inbox",
        "mysql://app:topsecret@127.0.0.1:1/inbox",
    ] {
        let run = inboxctl(&["inspect", "--database-url", url]).code(1);
        assert!(
            run.stderr.contains("could not connect to"),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("127.0.0.1:1"), "{}", run.stderr);
        assert!(run.stderr.contains("Connection refused"), "{}", run.stderr);
        assert!(!run.stderr.contains("topsecret"), "{}", run.stderr);
    }
    let run = inboxctl(&["inspect", "--database-url", "postgres://app@127.0.0.1:1"]).code(1);
    assert!(
        run.stderr.starts_with(
            "error: could not connect to PostgreSQL server 127.0.0.1:1 (database 'app' by default, user 'app')"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn a_server_that_never_answers_fails_within_the_connect_timeout() {
    // Accepts the TCP connection (the kernel does) and then says nothing.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    for scheme in ["postgres", "mysql"] {
        let url = format!("{scheme}://app:topsecret@127.0.0.1:{port}/inbox");
        let started = std::time::Instant::now();
        let run = inboxctl(&["inspect", "--connect-timeout", "1s", "--database-url", &url]).code(1);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "took {:?}",
            started.elapsed()
        );
        assert!(
            run.stderr.contains(&format!("127.0.0.1:{port}")),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("within 1s"), "{}", run.stderr);
        assert!(!run.stderr.contains("topsecret"), "{}", run.stderr);
    }
}

/// A full disk on stdout loses the command's result, which its exit code says (1, with the
/// error on stderr); on stderr it loses only the messages, never with a panic (101). A closed
/// pipe on stdout (`| head`) is the reader's choice, and no error.
#[test]
fn a_full_stdout_or_stderr_is_an_error_or_ignored_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let full = || {
        std::fs::File::options()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let run = |args: &[&str], stdout: std::process::Stdio, stderr: std::process::Stdio| {
        let output = std::process::Command::new(assert_cmd::cargo::cargo_bin("inboxctl"))
            .env_remove("DATABASE_URL")
            .current_dir(dir.path())
            .args(args)
            .stdout(stdout)
            .stderr(stderr)
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let no_room =
        "error: could not write to standard output: No space left on device (os error 28)\n";
    let piped = std::process::Stdio::piped;
    // Through the tool's own table and JSON printing, the completion script's, and clap's
    // help and version.
    assert_eq!(
        run(&["migrate", "run"], full().into(), piped()),
        (Some(1), no_room.to_string())
    );
    for args in [
        &["migrate", "status", "--format", "json"][..],
        &["completions", "bash"],
        &["--help"],
        &["-h"],
        &["migrate", "--help"],
        &["--version"],
    ] {
        assert_eq!(
            run(args, full().into(), piped()),
            (Some(1), no_room.to_string()),
            "{args:?}"
        );
    }
    // The migrations went in all the same. With stderr full, errors keep their codes.
    let status = inboxctl_in(dir.path(), &["migrate", "status"]).ok();
    assert!(status.stdout.contains(" 2 "), "{}", status.stdout);
    assert_eq!(
        run(&["prune"], piped(), full().into()),
        (Some(2), String::new())
    );
    let missing = [
        "prune",
        "--older-than",
        "1d",
        "--database-url",
        "sqlite://none.db",
    ];
    assert_eq!(
        run(&missing, piped(), full().into()),
        (Some(1), String::new())
    );
    // A usage error still goes to stderr, with its own exit code.
    let usage = run(&["--no-such-flag"], full().into(), piped());
    assert_eq!(usage.0, Some(2));
    assert!(
        usage
            .1
            .starts_with("error: unexpected argument '--no-such-flag'"),
        "{}",
        usage.1
    );
    // A reader that goes after one line.
    for args in [&["completions", "bash"][..], &["--help"]] {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("inboxctl"))
            .env_remove("DATABASE_URL")
            .current_dir(dir.path())
            .args(args)
            .stdout(piped())
            .stderr(piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let closed = child.wait_with_output().unwrap();
        assert_eq!(closed.status.code(), Some(0), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&closed.stderr), "", "{args:?}");
    }
}

/// Ctrl-C while prune connects (to a server that never answers) ends it at once, saying that
/// nothing was deleted, as it does anywhere before its first batch.
#[test]
fn ctrl_c_while_prune_connects_deletes_nothing_and_says_so() {
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("inboxctl"))
        .env_remove("DATABASE_URL")
        .current_dir(dir.path())
        .args([
            "prune",
            "--older-than",
            "30d",
            "--yes",
            "--connect-timeout",
            "60s",
        ])
        .arg("--database-url")
        .arg(format!("postgres://app@127.0.0.1:{port}/inbox"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Accepted: prune is connecting, and waits for the server's first word.
    let (_connection, _) = silent.accept().unwrap();
    send_signal("INT", &child.id().to_string());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    assert_eq!(wait_until(&mut child, deadline), Some(130));
    let run = Run::from(child.wait_with_output().unwrap());
    assert_eq!(run.stderr, "Nothing deleted.\n");
    assert_eq!(run.stdout, "");
}

/// A TCP forwarder to `target` that counts the connections it accepts: its port and the count.
fn counting_forwarder(target: SocketAddr) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            counter.fetch_add(1, Ordering::SeqCst);
            let Ok(server) = TcpStream::connect(target) else {
                continue;
            };
            let pipe = |mut from: TcpStream, mut to: TcpStream| {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(Shutdown::Write);
                });
            };
            pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
            pipe(server, client);
        }
    });
    (port, accepted)
}

/// Every connection a server accepts is a process (PostgreSQL) or a thread (MySQL) it starts:
/// a command that works on one connection opens one, and no probe beside it. The probe that
/// names a refused server comes only when the first connection is slow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_opens_one_connection_to_the_server() {
    for backend in [Backend::Postgres, Backend::Mysql] {
        let db = TestDb::new(backend).await;
        db.run(&["migrate", "run"]).ok();
        let mut url = url::Url::parse(&db.url).unwrap();
        let server = SocketAddr::from(([127, 0, 0, 1], url.port().unwrap()));
        let (port, accepted) = counting_forwarder(server);
        url.set_port(Some(port)).unwrap();
        let run = Run::from(
            db.cmd()
                .env("DATABASE_URL", url.as_str())
                .args(["prune", "--older-than", "30d", "--dry-run"])
                .output()
                .unwrap(),
        )
        .ok();
        assert!(run.stdout.contains("0 rows"), "{}", run.stdout);
        // The command's last connection carried its queries, so the forwarder accepted it
        // and every one made before it.
        assert_eq!(accepted.load(Ordering::SeqCst), 1, "{backend}");
    }
}

#[test]
fn a_libpq_connection_string_is_refused_with_its_password_hidden() {
    let run = inboxctl(&[
        "inspect",
        "--database-url",
        "host=127.0.0.1 user=postgres password=topsecret dbname=x",
    ])
    .code(2);
    assert_eq!(
        run.stderr,
        "error: unsupported database URL 'host=127.0.0.1 user=postgres password=*** dbname=x': the scheme must be one of sqlite://, postgres:// (postgresql://), mysql:// (mariadb://)\n"
    );
}

#[test]
fn an_empty_database_url_is_named_as_empty() {
    let run = Run::from(
        assert_cmd::Command::cargo_bin("inboxctl")
            .unwrap()
            .env("DATABASE_URL", "")
            .arg("inspect")
            .output()
            .unwrap(),
    )
    .code(2);
    assert!(
        run.stderr
            .starts_with("error: the database URL is empty: set --database-url or DATABASE_URL"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_certificate_file_that_is_not_there_is_named() {
    for (url, key) in [
        (
            "postgres://app@127.0.0.1:1/x?sslmode=verify-full&sslrootcert=/no/such/ca.pem",
            "sslrootcert",
        ),
        ("mysql://app@127.0.0.1:1/x?ssl-ca=/no/such/ca.pem", "ssl-ca"),
    ] {
        let run = inboxctl(&["inspect", "--database-url", url]).code(2);
        assert_eq!(
            run.stderr,
            format!("error: the file '/no/such/ca.pem' given as {key} in the database URL does not exist\n")
        );
    }
}

#[test]
fn a_sqlite_url_works_whatever_the_case_of_its_scheme() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("SQLite://{}/inbox.db", dir.path().display());
    inboxctl(&["migrate", "run", "-q", "--database-url", &url]).code(0);
    assert!(dir.path().join("inbox.db").exists());
    let run = inboxctl(&["inspect", "--database-url", &url]).code(0);
    assert!(run.stdout.contains("0 rows"), "{}", run.stdout);
}

/// The driver percent-decodes a SQLite path: every command opens, and every message names,
/// the file it decodes to, and a path a URL cannot carry as it is (a space) works too.
#[test]
fn a_sqlite_path_is_the_same_file_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let migrated = inboxctl_in(
        dir.path(),
        &[
            "-v",
            "migrate",
            "run",
            "--database-url",
            "sqlite://a%20b%3F.db",
        ],
    )
    .code(0);
    assert!(
        migrated.stderr.contains("SQLite file a b?.db"),
        "{}",
        migrated.stderr
    );
    assert_eq!(files_in(dir.path()), ["a b?.db"]);
    for url in ["sqlite://a%20b%3F.db", "sqlite:a%20b%3F.db"] {
        let run = inboxctl_in(dir.path(), &["inspect", "--database-url", url]).code(0);
        assert!(run.stdout.contains("0 rows"), "{url}: {}", run.stdout);
    }
    inboxctl_in(
        dir.path(),
        &[
            "migrate",
            "run",
            "-q",
            "--database-url",
            "sqlite://c d/e%25f.db",
        ],
    )
    .code(1);
    std::fs::create_dir(dir.path().join("c d")).unwrap();
    inboxctl_in(
        dir.path(),
        &[
            "migrate",
            "run",
            "-q",
            "--database-url",
            "sqlite://c d/e%25f.db",
        ],
    )
    .code(0);
    assert!(dir.path().join("c d/e%f.db").exists());
    let run = inboxctl_in(
        dir.path(),
        &["inspect", "--database-url", "sqlite://c%20d/e%25f.db"],
    )
    .code(0);
    assert!(run.stdout.contains("0 rows"), "{}", run.stdout);
    let missing = inboxctl_in(
        dir.path(),
        &["inspect", "--database-url", "sqlite://no%20such.db"],
    )
    .code(1);
    assert!(
        missing
            .stderr
            .contains("error: the SQLite database file 'no such.db' does not exist"),
        "{}",
        missing.stderr
    );
    // `x/..` is for the file system to resolve, not the URL: the file above, not one in sub.
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let absolute = format!("sqlite://{}/sub/../a%20b%3F.db", dir.path().display());
    for url in [
        "sqlite:sub/../a%20b%3F.db",
        "sqlite://sub/../a b%3F.db",
        absolute.as_str(),
    ] {
        inboxctl_in(dir.path(), &["migrate", "run", "-q", "--database-url", url]).code(0);
        let run = inboxctl_in(dir.path(), &["inspect", "--database-url", url]).code(0);
        assert!(run.stdout.contains("0 rows"), "{url}: {}", run.stdout);
    }
    assert!(files_in(&dir.path().join("sub")).is_empty());
    // Past a symbolic link, `..` is the link target's parent, as the file system has it.
    std::fs::create_dir_all(dir.path().join("deep/inner")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("deep/inner"), dir.path().join("link")).unwrap();
    let linked = format!("sqlite://{}/link/../s.db", dir.path().display());
    inboxctl_in(
        dir.path(),
        &["migrate", "run", "-q", "--database-url", &linked],
    )
    .code(0);
    assert_eq!(files_in(&dir.path().join("deep")), ["inner", "s.db"]);
    inboxctl_in(dir.path(), &["inspect", "--database-url", &linked]).code(0);
    let nul = inboxctl_in(
        dir.path(),
        &["inspect", "--database-url", "sqlite://a%00.db"],
    )
    .code(2);
    assert_eq!(
        nul.stderr,
        "error: database URL 'sqlite://a%00.db' names a SQLite file with a NUL character \
         (%00), which no file name holds\n"
    );
    // A folder where the file should be.
    for args in [
        ["migrate", "run", "--database-url", "sqlite://c%20d"],
        ["inspect", "-q", "--database-url", "sqlite://c d/"],
    ] {
        let folder = inboxctl_in(dir.path(), &args).code(1);
        assert!(
            folder.stderr.contains(
                "' is a folder; expected a file, e.g. sqlite://c d/inbox.db (check \
                 --database-url / DATABASE_URL)"
            ),
            "{args:?}: {}",
            folder.stderr
        );
    }
    let bad = inboxctl_in(
        dir.path(),
        &["inspect", "--database-url", "sqlite://a%FF.db"],
    )
    .code(2);
    assert!(
        bad.stderr.contains("not UTF-8 once percent-decoded"),
        "{}",
        bad.stderr
    );
}

/// libpq's own parameters in an application's PostgreSQL URL, and other drivers' (Prisma's
/// `schema`), which the driver does not read, are named as ignored, once, before the
/// connection is tried.
#[test]
fn other_drivers_parameters_of_a_postgres_url_are_named_as_ignored() {
    let run = inboxctl(&[
        "inspect",
        "--database-url",
        "postgres://u:Se%cret9@127.0.0.1:1/x?connect_timeout=5&sslmode=require&target_session_attrs=any&schema=public",
        "--connect-timeout",
        "1s",
    ])
    .code(1);
    let mut lines = run.stderr.lines();
    assert_eq!(
        lines.next(),
        Some(
            "warning: the database URL's parameters 'connect_timeout', 'target_session_attrs', \
             'schema' are not read by inboxctl's PostgreSQL driver: ignored; \
             --connect-timeout sets how long to wait for the server"
        ),
        "{}",
        run.stderr
    );
    assert!(
        lines
            .next()
            .is_some_and(|line| line.starts_with("error: could not connect")),
        "{}",
        run.stderr
    );
    assert_eq!(lines.next(), None, "{}", run.stderr);
    assert!(!run.stderr.contains("Se%cret9"), "{}", run.stderr);
}

/// A broker address with credentials is refused without showing them, from the flag as
/// from the environment, whatever else is wrong in the list.
#[test]
fn a_broker_address_with_a_password_is_refused_without_showing_it() {
    let dir = tempfile::tempdir().unwrap();
    let lists = [
        "app:Se%cret9@broker:9092",
        "bad:x,app:Se%cret9@broker:9092",
        "SASL_SSL://app:a,b://Se%cret9@broker:9092",
    ];
    for (list, from_env) in lists.iter().flat_map(|list| [(list, false), (list, true)]) {
        let mut command = assert_cmd::Command::cargo_bin("inboxctl").unwrap();
        command.current_dir(dir.path()).args(["offsets", "show"]);
        match from_env {
            true => command.env("KAFKA_BROKERS", list),
            false => command.args(["--brokers", list]),
        };
        let run = Run::from(command.output().unwrap()).code(2);
        assert_eq!(
            run.stderr,
            "error: a broker address in --brokers (KAFKA_BROKERS) must not hold a user or password \
             ('@'); give them with -X sasl.username=… -X sasl.password=…\n"
        );
        assert!(!run.stderr.contains("Se%cret9"), "{}", run.stderr);
        assert!(!run.stdout.contains("Se%cret9"), "{}", run.stdout);
    }
    // -X bootstrap.servers, which overrides --brokers, and an -X property mistyped without
    // its '=', whose clap message would have shown it whole.
    let refusals = [
        (
            "bootstrap.servers=app:Se%cret9@broker:9092",
            "error: a broker address in -X bootstrap.servers must not hold a user or password ('@'); \
             give them with -X sasl.username=… -X sasl.password=…\n",
        ),
        // A mistyped key is not known to hold a secret: its value is not shown.
        (
            "sasl.pasword=Se%cret9",
            "error: invalid Kafka client configuration -X sasl.pasword: No such configuration \
             property: \"sasl.pasword\"\n",
        ),
        (
            "sasl.password:Se%cret9",
            "error: an -X property has no '=' (it is not shown: it may hold a secret); expected \
             KEY=VALUE, e.g. -X security.protocol=SASL_SSL\n",
        ),
    ];
    for (property, expected) in refusals {
        let run = inboxctl(&["offsets", "show", "--group", "g", "-X", property]).code(2);
        assert_eq!(run.stderr, expected);
        assert!(!run.stdout.contains("Se%cret9"), "{}", run.stdout);
    }
}

#[test]
fn an_in_memory_sqlite_database_is_refused() {
    for url in ["sqlite::memory:", "sqlite://file.db?mode=memory"] {
        let run = inboxctl(&["migrate", "run", "--database-url", url]).code(2);
        assert_eq!(
            run.stderr,
            format!("error: database URL '{url}' names an in-memory SQLite database, which is gone when the command exits; expected a file, e.g. sqlite://inbox.db\n")
        );
    }
}

#[test]
fn a_broker_error_names_the_brokers_that_were_asked() {
    // -X bootstrap.servers overrides --brokers, and the error says which were tried.
    let run = inboxctl(&[
        "offsets",
        "show",
        "--brokers",
        "127.0.0.1:1",
        "-X",
        "bootstrap.servers=127.0.0.1:2",
        "--kafka-timeout",
        "1s",
    ])
    .code(1);
    assert!(
        run.stderr
            .contains("could not reach the Kafka brokers 127.0.0.1:2 within 1s"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_missing_sqlite_file_is_not_created_by_reading_commands() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/nope.db", dir.path().display());
    let run = inboxctl(&["inspect", "--database-url", &url]).code(1);
    assert!(
        run.stderr.contains("nope.db' does not exist"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("`inboxctl migrate run` creates it"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("nope.db").exists());
    // migrate run makes the file, not a missing folder.
    let url = format!("sqlite://{}/no-such-folder/inbox.db", dir.path().display());
    let run = inboxctl(&["migrate", "run", "--database-url", &url]).code(1);
    assert_eq!(
        run.stderr,
        format!(
            "error: the folder '{0}/no-such-folder' of the SQLite database file '{0}/no-such-folder/inbox.db' does not exist; create it first (check --database-url / DATABASE_URL)\n",
            dir.path().display()
        )
    );
    assert!(!dir.path().join("no-such-folder").exists());
    // A reading command says the same, not that migrate run would make the file.
    let run = inboxctl(&["inspect", "--database-url", &url]).code(1);
    assert!(
        run.stderr.starts_with(&format!(
            "error: the folder '{}/no-such-folder' of the SQLite database file",
            dir.path().display()
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn bad_values_are_usage_errors_that_say_what_was_expected() {
    let cases: [(&[&str], &str); 55] = [
        (
            &["offsets", "show", "--brokers", "localhost:abc"],
            "invalid value 'localhost:abc' for '--brokers <BROKERS>': 'localhost:abc' has the port 'abc'; expected a number from 1 to 65535",
        ),
        (
            &["migrate", "run", "--lock-timeout", "25d"],
            "invalid value '25d' for '--lock-timeout <DURATION>': '25d' is longer than PostgreSQL takes as a lock timeout; expected at most 2147483647ms (24d 20h 31m 23s), or 0 to wait without limit",
        ),
        (
            &["replay", "-t", "t", "--from", "earliest", "--consumer", "c", "--dry-run", "--event-id-from", "json:/a/~2"],
            "'/a/~2' is not a JSON pointer: a '~' is written ~0, a '/' in a name ~1",
        ),
        (
            &["inspect", "--database-url", "postgres://app:ab#cd@127.0.0.1:1/db"],
            "a user name or password holding # ? / or @ must write it percent-encoded",
        ),
        (
            &["prune", "--older-than", "0d", "--yes"],
            "invalid value '0d' for '--older-than <DURATION>': every row would be deleted",
        ),
        // The cutoff is to the millisecond: less is none.
        (
            &["prune", "--older-than", "999us", "--yes"],
            "invalid value '999us' for '--older-than <DURATION>': every row would be deleted",
        ),
        // Negative numbers as separate words are values, not flags clap does not know.
        (
            &["prune", "--older-than", "1d", "--batch-size", "-1"],
            "invalid value '-1' for '--batch-size <N>': '-1' is not a whole number of at least 1",
        ),
        (
            &["prune", "--older-than", "1d", "--max-rows", "-5"],
            "invalid value '-5' for '--max-rows <N>': '-5' is not a whole number of at least 1",
        ),
        (
            &["migrate", "revert", "--to", "-1"],
            "invalid value '-1' for '--to <VERSION>'",
        ),
        (
            &["replay", "-t", "t", "-p", "-1", "--from", "earliest", "--consumer", "c", "--dry-run"],
            "invalid value '-1' for '--partition <P>'",
        ),
        (
            &["replay", "-t", "t", "--partition=-1", "--from", "earliest", "--consumer", "c", "--dry-run"],
            "invalid value '-1' for '--partition <P>'",
        ),
        (
            &["prune", "--older-than", "1d", "--batch-size", "99999999999999999999999"],
            "invalid value '99999999999999999999999' for '--batch-size <N>': \
             '99999999999999999999999' is too large",
        ),
        (
            &["migrate", "revert", "--to=-1"],
            "invalid value '-1' for '--to <VERSION>'",
        ),
        (
            &["inspect", "--event-id", ""],
            "invalid value '' for '--event-id <ID>': the event id is empty",
        ),
        (
            &["prune", "--older-than", "7"],
            "invalid value '7' for '--older-than <DURATION>': '7' has no unit",
        ),
        (
            &["prune", "--older-than", "7x"],
            "invalid value '7x' for '--older-than <DURATION>'",
        ),
        (
            &["prune", "--older-than", "-1d"],
            "invalid value '-1d' for '--older-than <DURATION>'",
        ),
        (
            &["prune", "--older-than", "1d", "--batch-size", "0"],
            "invalid value '0' for '--batch-size <N>': must be at least 1",
        ),
        (
            &["prune", "--older-than", "1d", "--max-rows", "lots"],
            "'lots' is not a whole number of at least 1",
        ),
        (&["prune", "--before", "last tuesday"], "expected RFC 3339"),
        (
            &["prune", "--before", "2026-11-01T08:00:00.0005Z"],
            "error: --before 2026-11-01 08:00:00.000500000 UTC is finer than a millisecond; expected a cutoff to the millisecond, the precision SQLite stores and every output shows",
        ),
        (
            &["prune", "--older-than", "1d", "--pause", "soon"],
            "invalid value 'soon' for '--pause <DURATION>'",
        ),
        (
            &["prune", "--older-than", "1d", "--strategy", "fast"],
            "invalid value 'fast' for '--strategy <STRATEGY>'",
        ),
        (&["prune"], "--older-than <DURATION>"),
        (
            &["prune", "--older-than", "1d", "--batch-size", "18446744073709551615"],
            "invalid value '18446744073709551615' for '--batch-size <N>': 18446744073709551615 is more than 10000000 (each batch is one transaction)",
        ),
        (
            &["prune", "--older-than", "1000000d"],
            "error: --older-than reaches back before the year 1000; expected a retention such as 7d or 2w",
        ),
        (
            &["prune", "--before", "2099-01-01"],
            "error: --before 2099-01-01 00:00:00.000 UTC is in the future: every row would be deleted, and with them the deduplication of any redelivery; expected a time in the past",
        ),
        (
            &["compare", "-g", "g", "-t", "t", "--pruned-before", "2099-01-01"],
            "error: --pruned-before 2099-01-01 00:00:00.000 UTC is in the future",
        ),
        (
            &["offsets", "show", "-g", "g", "-t", "orders:1"],
            "invalid value 'orders:1' for '--topic <TOPIC>': 'orders:1' is not a Kafka topic name: ':' is not allowed (letters, digits, '.', '_' and '-' are); partitions are chosen with TOPIC:P,P only by offsets reset",
        ),
        (
            &["compare", "-g", "g", "-t", "ord ers"],
            "'ord ers' is not a Kafka topic name: ' ' is not allowed",
        ),
        (
            &["offsets", "reset", "-g", "g", "-t", "orders/x:1", "--to-earliest"],
            "'orders/x' is not a Kafka topic name: '/' is not allowed",
        ),
        (
            &["offsets", "show", "-X", "security.protocol"],
            "error: -X security.protocol has no value; expected KEY=VALUE, e.g. -X security.protocol=VALUE",
        ),
        (
            &["offsets", "show", "--brokers", " "],
            "names no broker; expected host:port[,host:port…]",
        ),
        (
            &["offsets", "show", "--brokers", " , "],
            "names no broker; expected host:port[,host:port…]",
        ),
        (&["compare", "-g", "g", "-t", ".."], "'..' is not a Kafka topic name"),
        (
            &["replay", "-t", "t", "--from", "earliest", "--consumer", "c", "--exec", "h", "--handler-timeout", "0s"],
            "invalid value '0s' for '--handler-timeout <DURATION>': the handler must be given some time: expected e.g. 30s or 2m",
        ),
        (
            &["replay", "-t", "t", "--from", "earliest", "--consumer", "c"],
            "error: replay needs a handler: --sql FILE or --exec CMD (or --dry-run to see what would run)",
        ),
        (
            &["replay", "-t", "t", "--from", "earliest", "--consumer", "c", "--sql", "h.sql", "--handler-timeout", "30s"],
            "error: --handler-timeout applies to an exec handler (--exec) only",
        ),
        (
            &["completions", "bash", "--format", "csv"],
            "error: --format does not apply to completions, which prints a shell script",
        ),
        (
            &["inspect", "--database-url", "postgres://u:Se%cret9@127.0.0.1:1/x?sslmdoe=require"],
            "error: the database URL's parameter 'sslmdoe' is no TLS setting a PostgreSQL URL takes, and one is never ignored; expected sslmode (disable, allow, prefer, require, verify-ca, verify-full), sslrootcert, sslcert or sslkey\n",
        ),
        (
            &["inspect", "--database-url", "postgresql://127.0.0.1:1/x?sslmode=requried"],
            "error: the database URL's sslmode 'requried' is not a TLS mode of a PostgreSQL URL; expected one of disable, allow, prefer, require, verify-ca, verify-full\n",
        ),
        (
            &["inspect", "--database-url", "mysql://127.0.0.1:1/x?ssl-mode=require"],
            "error: the database URL's ssl-mode 'require' is not a TLS mode of a MySQL URL; expected one of disabled, preferred, required, verify_ca, verify_identity\n",
        ),
        (
            &["offsets", "show", "--kafka-timeout", "9999999999w"],
            "invalid value '9999999999w' for '--kafka-timeout <DURATION>': '9999999999w' is longer than a day; expected a duration such as 5s, 1m or 2h",
        ),
        (
            &["prune", "--older-than", "7d", "--pause", "2d"],
            "'2d' is longer than a day",
        ),
        (
            &["offsets", "reset", "-g", "g", "-t", "t", "--to-offset", "abc"],
            "invalid value 'abc' for '--to-offset <OFFSET>': 'abc' is not a whole number\n",
        ),
        (
            &["offsets", "reset", "-g", "g", "-t", "t", "--shift-by", "99999999999999999999"],
            "'99999999999999999999' is too large",
        ),
        (
            &["compare", "-g", "g", "-t", "t", "--show", "-1"],
            "invalid value '-1' for '--show <N>': must be 0 or more, not -1\n",
        ),
        (
            &["migrate", "revert", "--to", "x"],
            "invalid value 'x' for '--to <VERSION>': 'x' is not a whole number\n",
        ),
        // Options that would do nothing without another.
        (
            &["replay", "-t", "t", "--from", "earliest", "--consumer", "c", "--dry-run", "--handler-timeout", "30s"],
            "error: --handler-timeout applies to an exec handler (--exec) only\n",
        ),
        (
            &["replay", "-t", "t", "--from", "earliest", "--consumer", "c", "--exec", "h", "--param", "a=json:/a"],
            "error: --param a: --param binds a placeholder of a SQL handler (--sql); an exec handler gets each message whole, as a JSON line",
        ),
        (
            &["prune", "--older-than", "7d", "--brokers", "127.0.0.1:1"],
            "error: --brokers is for --group GROUP, whose committed offsets keep the rows it could still have redelivered; without --group prune asks no broker\n\nUsage: inboxctl prune ",
        ),
        (
            &["prune", "--older-than", "7d", "--dry-run", "-X", "a=b"],
            "error: -X is for --group GROUP,",
        ),
        (
            &["prune", "--older-than", "7d", "--kafka-timeout", "5s"],
            "error: --kafka-timeout is for --group GROUP,",
        ),
        (
            &["offsets", "reset", "-g", "g", "-t", "t", "--to-earliest", "--consumer", "c"],
            "error: --consumer names the inbox consumer of --to-inbox; without --to-inbox the inbox is not read\n\nUsage: inboxctl offsets reset ",
        ),
        (
            &["offsets", "reset", "-g", "g", "-t", "t", "--to-earliest", "--undo-file", "u.csv"],
            "error: --undo-file is where --execute writes the undo plan; without --execute nothing is applied and no undo plan is written\n",
        ),
    ];
    for (args, expected) in cases {
        let run = inboxctl(args).code(2);
        assert!(run.stderr.contains(expected), "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
    // The brokers of a cron line's environment are no option given in vain.
    let dir = tempfile::tempdir().unwrap();
    let with_brokers_set = |args: &[&str]| {
        Run::from(
            assert_cmd::Command::cargo_bin("inboxctl")
                .unwrap()
                .env_remove("DATABASE_URL")
                .env("KAFKA_BROKERS", "127.0.0.1:1")
                .current_dir(dir.path())
                .args(args)
                .output()
                .unwrap(),
        )
    };
    with_brokers_set(&["migrate", "run", "-q"]).code(0);
    let pruned = with_brokers_set(&["prune", "--older-than", "7d", "--dry-run"]).code(0);
    assert!(
        pruned.stdout.contains("would delete 0 rows"),
        "{}",
        pruned.stdout
    );
    let neither = inboxctl(&["prune"]).code(2);
    assert!(
        neither
            .stderr
            .contains("<--older-than <DURATION>|--before <TIMESTAMP>>"),
        "{}",
        neither.stderr
    );
    for args in [
        vec!["prune", "--older-than", "7d", "--format", "csv"],
        vec!["compare", "-g", "g", "-t", "t", "--format", "csv"],
        vec!["migrate", "run", "--format", "csv"],
    ] {
        let run = inboxctl(&args).code(2);
        assert!(
            run.stderr.contains("--format csv is not available for"),
            "{args:?}: {}",
            run.stderr
        );
    }
    let duration = inboxctl(&["prune", "--older-than", "7x"]);
    assert!(
        duration
            .stderr
            .contains("expected a duration such as 90s, 15m, 12h, 7d or 2w"),
        "{}",
        duration.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_never_appear_in_any_output() {
    // The local PostgreSQL trusts every login, so a password in the URL is accepted and ignored:
    // the whole success path runs with one in the URL.
    let db = TestDb::new(Backend::Postgres).await;
    let mut url = url::Url::parse(&db.url).unwrap();
    url.set_password(Some("pa55-w0rd%21")).unwrap();
    let url = url.to_string();
    let mut outputs = Vec::new();
    for args in [
        vec!["migrate", "run", "-v"],
        vec!["migrate", "run", "--format", "json"],
        vec!["migrate", "status"],
        vec!["migrate", "status", "--format", "json"],
        vec!["inspect", "-v"],
        vec!["inspect", "--format", "json"],
        vec!["inspect", "--event-id", "x", "--format", "json"],
        vec!["prune", "--older-than", "1d", "--yes", "--format", "json"],
        vec!["prune", "--older-than", "1d", "--dry-run", "-v"],
        vec!["migrate", "revert", "--dry-run"],
    ] {
        let run = db
            .cmd()
            .env("DATABASE_URL", &url)
            .args(&args)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        outputs.push(run);
    }
    // And the failures: a database that does not exist, a MySQL login that is refused.
    let mut missing = url::Url::parse(&url).unwrap();
    missing.set_path("/no_such_database_here");
    outputs.push(
        db.cmd()
            .env("DATABASE_URL", missing.as_str())
            .arg("inspect")
            .output()
            .unwrap(),
    );
    outputs.push(
        db.cmd()
            .env(
                "DATABASE_URL",
                "mysql://root:pa55-w0rd%21@127.0.0.1:3306/test",
            )
            .arg("inspect")
            .output()
            .unwrap(),
    );
    let json = String::from_utf8_lossy(&outputs[1].stdout).into_owned();
    assert!(
        json.contains("\"database\": \"postgres://postgres:***@127.0.0.1:5432/"),
        "{json}"
    );
    for output in &outputs {
        for stream in [&output.stdout, &output.stderr] {
            let text = String::from_utf8_lossy(stream);
            assert!(!text.contains("pa55-w0rd"), "password leaked:\n{text}");
        }
    }
    assert!(String::from_utf8_lossy(&outputs[11].stderr).contains("Access denied"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_is_hidden_where_it_stands_and_nowhere_else() {
    let db = TestDb::new(Backend::Postgres).await;
    let migrated = db.cmd().args(["migrate", "run"]).output().unwrap();
    assert!(migrated.status.success());
    // A password that is also the port: the port still prints, the password does not.
    let mut url = url::Url::parse(&db.url).unwrap();
    url.set_password(Some("5432")).unwrap();
    let run = db
        .cmd()
        .env("DATABASE_URL", url.as_str())
        .args(["inspect", "--format", "json"])
        .output()
        .unwrap();
    assert!(run.status.success());
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let database = report["database"].as_str().unwrap();
    assert!(
        database.starts_with("postgres://postgres:***@127.0.0.1:5432/"),
        "{database}"
    );
    assert_eq!(report["total_rows"], 0);

    // A password given as a query parameter.
    let mut url = url::Url::parse(&db.url).unwrap();
    url.query_pairs_mut().append_pair("password", "pa55-w0rd!");
    let run = db
        .cmd()
        .env("DATABASE_URL", url.as_str())
        .args(["-v", "inspect", "--format", "json"])
        .output()
        .unwrap();
    assert!(run.status.success());
    let (stdout, stderr) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert!(stdout.contains("?password=***\""), "{stdout}");
    assert!(stderr.contains("?password=***)"), "{stderr}");
    for text in [stdout, stderr] {
        assert!(!text.contains("pa55-w0rd"), "password leaked:\n{text}");
    }
}

const COMPLETIONS: [(&str, &str); 5] = [
    ("bash", "inboxctl.bash"),
    ("zsh", "_inboxctl"),
    ("fish", "inboxctl.fish"),
    ("elvish", "inboxctl.elv"),
    ("powershell", "_inboxctl.ps1"),
];

/// The files under completions/ are generated by `inboxctl completions`. Regenerate them with
/// `scripts/completions.sh` when the command line changes.
#[test]
fn completion_files_match_the_command_line() {
    for (shell, file) in COMPLETIONS {
        let generated = inboxctl(&["completions", shell]).ok().stdout;
        assert!(generated.contains("inboxctl"), "{shell}");
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("completions")
            .join(file);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "completions/{file} is out of date with the command line; run scripts/completions.sh"
        );
    }
}

#[test]
fn every_command_has_help() {
    for args in [
        vec!["--help"],
        vec!["migrate", "--help"],
        vec!["migrate", "run", "--help"],
        vec!["migrate", "status", "--help"],
        vec!["migrate", "revert", "--help"],
        vec!["inspect", "--help"],
        vec!["prune", "--help"],
        vec!["completions", "--help"],
    ] {
        let run = inboxctl(&args).ok();
        assert!(run.stdout.contains("Usage: inboxctl"), "{args:?}");
    }
    let version = inboxctl(&["--version"]).ok();
    assert_eq!(
        version.stdout.trim(),
        format!("inboxctl {}", env!("CARGO_PKG_VERSION"))
    );
}

/// DATABASE_URL and KAFKA_BROKERS may come from a `.env` file in the working directory; the
/// environment and the command line still win over it.
#[test]
fn settings_come_from_a_dot_env_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".env"),
        "DATABASE_URL=sqlite://from-dotenv.db\n",
    )
    .unwrap();
    let run = |envs: &[(&str, &str)], args: &[&str]| {
        let mut command = assert_cmd::Command::cargo_bin("inboxctl").unwrap();
        command
            .env_remove("DATABASE_URL")
            .current_dir(dir.path())
            .envs(envs.iter().copied())
            .args(args);
        Run::from(command.output().unwrap())
    };
    let migrated = run(&[], &["migrate", "run"]).ok();
    assert!(
        migrated.stdout.contains("Applied 2/"),
        "{}",
        migrated.stdout
    );
    assert!(dir.path().join("from-dotenv.db").exists());
    let inspected = run(&[], &["inspect"]).ok();
    assert!(
        inspected
            .stdout
            .starts_with("SQLite file from-dotenv.db: 0 rows"),
        "{}",
        inspected.stdout
    );
    // The environment wins over .env.
    let from_env = run(&[("DATABASE_URL", "sqlite://other.db")], &["inspect"]).code(1);
    assert!(
        from_env.stderr.contains("'other.db' does not exist"),
        "{}",
        from_env.stderr
    );
    // A line dotenvy cannot read ends the reading: said, with the line and its key but not
    // its value, rather than the command quietly running on the defaults.
    std::fs::write(
        dir.path().join(".env"),
        "# the application's\nAPP_NAME=my secret service\nDATABASE_URL=sqlite://from-dotenv.db\n",
    )
    .unwrap();
    let unread = run(&[], &["inspect"]).code(1);
    let warning = unread.stderr.lines().next().unwrap();
    assert!(
        warning.starts_with("warning: ")
            && warning.ends_with(
                ".env:2: the line setting APP_NAME cannot be read (expected KEY=VALUE, a value \
                 with spaces in quotes); DATABASE_URL and KAFKA_BROKERS are not read from it or \
                 the lines after it"
            ),
        "{}",
        unread.stderr
    );
    assert!(!unread.stderr.contains("secret"), "{}", unread.stderr);
    assert!(
        unread.stderr.contains("'inbox.db' does not exist"),
        "{}",
        unread.stderr
    );
    // A line without `=` names no key: the whole line may be a password.
    std::fs::write(
        dir.path().join(".env"),
        "DATABASE_URL=sqlite://from-dotenv.db\nDB_PASSWORD hunter2pw\n",
    )
    .unwrap();
    let no_key = run(&[], &["inspect"]).code(0);
    let warning = no_key.stderr.lines().next().unwrap();
    assert!(
        warning.ends_with(".env:2: a line cannot be read (expected KEY=VALUE, a value with spaces in quotes); DATABASE_URL and KAFKA_BROKERS are not read from it or the lines after it"),
        "{}",
        no_key.stderr
    );
    assert!(!no_key.stderr.contains("hunter2pw"), "{}", no_key.stderr);
}

/// -q keeps notes off stderr, never errors.
#[test]
fn quiet_keeps_notes_off_stderr_never_errors() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/q.db", dir.path().display());
    let run = |args: &[&str]| {
        let mut command = assert_cmd::Command::cargo_bin("inboxctl").unwrap();
        command
            .env("DATABASE_URL", &url)
            .current_dir(dir.path())
            .args(args);
        Run::from(command.output().unwrap())
    };
    run(&["migrate", "run"]).ok();
    // SQLite keeps no statistics: --estimate notes that it counts instead.
    let noted = run(&["inspect", "--estimate"]).ok();
    assert_eq!(
        noted.stderr,
        "SQLite has no row estimates for this table (SQLite keeps none); counted exactly\n"
    );
    let quiet = run(&["-q", "inspect", "--estimate"]).ok();
    assert_eq!(quiet.stderr, "");
    assert_eq!(quiet.stdout, noted.stdout);
    let error = run(&["-q", "prune", "--older-than", "7x"]).code(2);
    assert!(error.stderr.contains("7x"), "{}", error.stderr);
}
