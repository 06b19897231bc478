//! One module per command group; [`run`] is the one dispatch.

pub mod compare;
pub mod completions;
pub mod inspect;
pub mod migrate;
pub mod offsets;
pub mod prune;
pub mod replay;

use std::time::Duration;

use libc::{SIGINT, SIGTERM};

use crate::cli::{Cli, Command, DatabaseOpts, Format};
use crate::exit::ExitStatus;
use crate::output::Output;
use crate::store::{BatchError, CreateMode, DatabaseUrl, QueryCanceller, Store, POOL_CONNECTIONS};

pub async fn run(cli: Cli) -> anyhow::Result<ExitStatus> {
    let output = Output::new(&cli.global);
    crate::kafka::show_client_logs(output.verbose >= 2 && !output.quiet);
    if output.format == Format::Csv {
        let without_csv = match &cli.command {
            Command::Prune(_) => Some("prune"),
            Command::Compare(_) => Some("compare"),
            Command::Replay(_) => Some("replay"),
            Command::Migrate(args) => match args.command {
                crate::cli::MigrateCommand::Status { .. } => None,
                _ => Some("migrate run/revert"),
            },
            _ => None,
        };
        if let Some(command) = without_csv {
            return Err(crate::error::usage(format!(
                "--format csv is not available for {command}; use table or json"
            )));
        }
    }
    match cli.command {
        Command::Migrate(args) => migrate::run(args, output).await,
        Command::Inspect(args) => inspect::run(args, output).await,
        Command::Prune(args) => prune::run(args, output).await,
        Command::Offsets(args) => offsets::run(args, output).await,
        Command::Compare(args) => compare::run(args, output).await,
        Command::Replay(args) => replay::run(args, output).await,
        Command::Completions(args) => completions::run(args, output),
    }
}

/// Parse the URL and connect, saying where to on `-v` (with the password hidden).
pub(crate) async fn connect(
    options: &DatabaseOpts,
    create: CreateMode,
    output: &Output,
) -> anyhow::Result<Store> {
    connect_pooled(options, create, output, POOL_CONNECTIONS, false).await
}

/// [`connect`] for a command that runs one query at a time and never holds a connection
/// while it asks for another: one connection serves it all.
pub(crate) async fn connect_sequential(
    options: &DatabaseOpts,
    create: CreateMode,
    output: &Output,
) -> anyhow::Result<Store> {
    connect_pooled(options, create, output, 1, false).await
}

pub(crate) async fn connect_pooled(
    options: &DatabaseOpts,
    create: CreateMode,
    output: &Output,
    max_connections: u32,
    serial_plans: bool,
) -> anyhow::Result<Store> {
    let url = DatabaseUrl::parse(&options.database_url)?;
    if !url.ignored_parameters.is_empty() {
        let ignored = &url.ignored_parameters;
        let (noun, verb) = match ignored.len() {
            1 => ("parameter", "is"),
            _ => ("parameters", "are"),
        };
        let names: Vec<String> = ignored.iter().map(|key| format!("'{key}'")).collect();
        let timeout = match ignored.iter().any(|key| key == "connect_timeout") {
            true => "; --connect-timeout sets how long to wait for the server",
            false => "",
        };
        output.warn(format!(
            "the database URL's {noun} {} {verb} not read by inboxctl's PostgreSQL driver: \
             ignored{timeout}",
            names.join(", ")
        ));
    }
    output.debug(format!("connecting to {} ({})", url.endpoint, url.redacted));
    Store::connect_with(
        &url,
        options.connect_timeout,
        create,
        max_connections,
        serial_plans,
    )
    .await
}

/// Attempts of one transaction that hit a deadlock or a busy database.
const TRANSIENT_RETRIES: u32 = 20;

/// How long a lost or refused connection waits before it is tried again.
const CONNECTION_PAUSE: Duration = Duration::from_secs(1);

/// Runs `attempt` until it passes or fails for good: a deadlock or a busy database up to
/// TRANSIENT_RETRIES times, a lost or refused connection up to `connection_attempts` times
/// (`-v` says each), anything else once. Only for an attempt that is one transaction, which
/// the server rolled back whole when it failed.
pub(crate) async fn retried<T>(
    output: &Output,
    connection_attempts: u32,
    mut attempt: impl AsyncFnMut() -> Result<T, BatchError>,
) -> Result<T, BatchError> {
    let (mut transient, mut lost) = (0, 0);
    loop {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(failure) if failure.transient && transient + 1 < TRANSIENT_RETRIES => {
                transient += 1;
                output.debug(format!(
                    "the transaction was rolled back ({}); trying again ({} of \
                     {TRANSIENT_RETRIES})",
                    crate::error_chain(&failure.error),
                    transient + 1
                ));
                tokio::time::sleep(Duration::from_millis(10 * u64::from(transient))).await;
            }
            Err(failure) if failure.connection_lost && lost + 1 < connection_attempts => {
                lost += 1;
                output.debug(format!(
                    "the connection to the database was lost or refused ({}); trying again in \
                     {} ({} of {connection_attempts})",
                    crate::error_chain(&failure.error),
                    humantime::format_duration(CONNECTION_PAUSE),
                    lost + 1
                ));
                tokio::time::sleep(CONNECTION_PAUSE).await;
            }
            Err(failure) => return Err(failure),
        }
    }
}

/// What asked a command that works in batches to stop: Ctrl-C (SIGINT) on a terminal, or
/// SIGTERM, which `kill`, systemd and Kubernetes send. Either lets the batch in flight finish.
#[derive(Clone, Default)]
pub(crate) struct StopRequest {
    signal: std::sync::Arc<std::sync::atomic::AtomicI32>,
    /// What the command has done so far, for a stop at once to report.
    done: std::sync::Arc<std::sync::Mutex<Done>>,
    /// Whether the command's result is printed, by the command or by a stop at once: one of
    /// them prints it, whole, and the other then prints none.
    reported: std::sync::Arc<std::sync::Mutex<bool>>,
    /// Whether the result is JSON, which a stop at once then prints.
    json: bool,
    /// Set by a stop at once, before it cancels the batch in flight.
    at_once: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Whether a batch's statement is running, which a stop at once cancels.
    in_flight: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// What a stop at once cancels on the server: the batch in flight.
    canceller: std::sync::Arc<std::sync::Mutex<Option<QueryCanceller>>>,
    /// Wakes a command waiting for its next batch when the first signal comes.
    asked: std::sync::Arc<tokio::sync::Notify>,
    /// Whether the command is waiting for its next batch, with none in flight: a first
    /// signal then stops it at once, and says so.
    waiting: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// What a command has done so far: words for the warning of a stop at once, and the same
/// as fields of its JSON result (`rows_deleted`, `messages`, …), which that stop prints in
/// place of the result the command did not get to.
#[derive(Default)]
struct Done {
    text: String,
    fields: serde_json::Map<String, serde_json::Value>,
}

/// How long a stop at once waits for the server to take the cancel of the batch in flight.
const CANCEL_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// The process group of the handler a command started, 0 for none. The handler runs in a
/// group of its own, which Ctrl-C on the terminal does not reach, so a stop at once ends it.
static HANDLER_GROUP: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Sends `signal` to process group `group`: whether any of it was there (signal 0 only asks).
pub(crate) fn signal_group(group: u32, signal: i32) -> bool {
    // SAFETY: kill(2) takes no pointers; a group already gone is ESRCH.
    unsafe { libc::kill(-(group as i32), signal) == 0 }
}

/// Records the handler that leads process group `pid`, to be ended with a stop at once.
pub(crate) fn end_with_a_stop_at_once(pid: u32) {
    HANDLER_GROUP.store(pid as i32, std::sync::atomic::Ordering::SeqCst);
}

impl StopRequest {
    pub(crate) fn requested(&self) -> bool {
        self.signal() != 0
    }

    fn signal(&self) -> i32 {
        self.signal.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// No batch is in flight until the command first waits for one: a first signal before
    /// then stops it at once, as one while it waits does.
    pub(crate) fn before_the_first_batch(&self) {
        self.waiting
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Waits for `next` (the next batch) unless a stop is requested first: a command waiting
    /// for a batch the brokers are slow to deliver has none in flight to finish. `None` when
    /// the stop came first.
    pub(crate) async fn unless_asked<T>(
        &self,
        next: impl std::future::Future<Output = T>,
    ) -> Option<T> {
        use std::sync::atomic::Ordering::SeqCst;
        self.waiting.store(true, SeqCst);
        let next = tokio::select! {
            biased;
            next = next => Some(next),
            () = self.asked() => None,
        };
        self.waiting.store(false, SeqCst);
        next
    }

    /// Returns once a stop is requested.
    async fn asked(&self) {
        loop {
            let asked = self.asked.notified();
            tokio::pin!(asked);
            // Registered before the look, so that a signal in between still wakes it.
            asked.as_mut().enable();
            if self.requested() {
                return;
            }
            asked.await;
        }
    }

    /// 130 after Ctrl-C, 143 after SIGTERM: 128 plus the signal, as a shell reports it.
    pub(crate) fn exit_status(&self) -> ExitStatus {
        match self.signal() {
            SIGTERM => ExitStatus::Terminated,
            _ => ExitStatus::Interrupted,
        }
    }

    /// Records what the command has done so far (after each batch), which a stop at once
    /// reports in place of the summary it cannot print: `text` in its warning, `fields`
    /// (a JSON object, named as in the command's JSON result) on stdout with `--format json`,
    /// and only then made.
    pub(crate) fn note_done(&self, text: String, fields: impl FnOnce() -> serde_json::Value) {
        let fields = match self.json {
            true => fields(),
            false => serde_json::Value::Null,
        };
        if let Ok(mut noted) = self.done.lock() {
            noted.text = text;
            noted.fields = match fields {
                serde_json::Value::Object(fields) => fields,
                _ => Default::default(),
            };
        }
    }

    /// Prints the command's result unless a stop at once has printed its own in its place
    /// (the process is then ending). A stop at once waits for a result being printed.
    pub(crate) fn print_result(
        &self,
        print: impl FnOnce() -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let mut reported = self.reported.lock().unwrap_or_else(|e| e.into_inner());
        if *reported {
            return Ok(());
        }
        *reported = true;
        print()
    }

    /// Records the session whose statement in flight a stop at once cancels.
    pub(crate) fn cancel_with_a_stop_at_once(&self, canceller: Option<QueryCanceller>) {
        if let Ok(mut noted) = self.canceller.lock() {
            *noted = canceller;
        }
    }

    /// Runs one batch's statement, which a stop at once cancels on the server while it runs.
    /// If the cancel is what made it fail, this waits for the stop to end the process with
    /// its own exit code, rather than report the cancel as the command's error.
    pub(crate) async fn run_batch<T>(
        &self,
        batch: impl std::future::Future<Output = anyhow::Result<T>>,
    ) -> anyhow::Result<T> {
        use std::sync::atomic::Ordering::SeqCst;
        self.in_flight.store(true, SeqCst);
        let result = batch.await;
        self.in_flight.store(false, SeqCst);
        if result.is_err() && self.at_once.load(SeqCst) {
            std::future::pending::<()>().await;
        }
        result
    }

    /// How the closing warning names the stop.
    pub(crate) fn describe(&self) -> &'static str {
        match self.signal() {
            SIGTERM => "stopped by SIGTERM",
            _ => "interrupted",
        }
    }
}

/// Ends the process at once on Ctrl-C or SIGTERM, with 130 or 143 as a shell reports a
/// process the signal ended, after noting `nothing_done` (as in "Nothing deleted.") when
/// given: what they do to a command without batches to stop between, or before its first
/// change. Once a confirmation question has caught either (to give the terminal back), the
/// process would no longer end by itself. The server rolls back what was under way when the
/// connection goes. With `--format json`, `result` (a JSON object) is printed on stdout
/// first, marked `interrupted`, so that a script reading the result gets one. Listens until
/// the returned task is aborted.
pub(crate) fn end_at_once_on_signals(
    output: Output,
    nothing_done: Option<&'static str>,
    result: Option<serde_json::Value>,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    use anyhow::Context;
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt()).context("could not listen for Ctrl-C")?;
    let mut terminate = signal(SignalKind::terminate()).context("could not listen for SIGTERM")?;
    Ok(tokio::spawn(async move {
        let status = tokio::select! {
            _ = interrupt.recv() => ExitStatus::Interrupted,
            _ = terminate.recv() => ExitStatus::Terminated,
        };
        if let Some(note) = nothing_done {
            output.note(note);
        }
        if let Some(serde_json::Value::Object(fields)) = result {
            print_stopped_at_once(output, fields, nothing_done.map(String::from));
        }
        std::process::exit(status as i32);
    }))
}

/// Ends the process at once on Ctrl-C or SIGTERM, as [`end_at_once_on_signals`] does, after
/// cancelling on the server the statement in flight on `session` (once one is there): a
/// migration's statement would otherwise go on without its client, waiting for or holding
/// its locks, which the application's statements queue behind (PostgreSQL notices the
/// client gone only when it next talks to it). Listens until [`CancelOnSignals::end`].
pub(crate) fn cancel_on_signals(
    session: crate::migrate::MigrationSession,
) -> anyhow::Result<CancelOnSignals> {
    use anyhow::Context;
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt()).context("could not listen for Ctrl-C")?;
    let mut terminate = signal(SignalKind::terminate()).context("could not listen for SIGTERM")?;
    let received = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let signalled = received.clone();
    let task = tokio::spawn(async move {
        let (status, name) = tokio::select! {
            _ = interrupt.recv() => (ExitStatus::Interrupted, "Ctrl-C"),
            _ = terminate.recv() => (ExitStatus::Terminated, "SIGTERM"),
        };
        // Before the cancel, whose error reaches the command as its statement's.
        signalled.store(true, std::sync::atomic::Ordering::SeqCst);
        let canceller = session.lock().ok().and_then(|slot| slot.clone());
        if let Some(canceller) = canceller {
            crate::stderr_line!("{name}: cancelling the statement in flight on the server");
            if let Some(failed) = cancel_within(&canceller).await {
                warn_not_cancelled("statement", &failed, canceller.without_the_cancel());
            }
        }
        std::process::exit(status as i32);
    });
    Ok(CancelOnSignals { task, received })
}

/// What [`cancel_on_signals`] returns: the task that listens, and whether it heard a signal.
pub(crate) struct CancelOnSignals {
    task: tokio::task::JoinHandle<()>,
    received: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl CancelOnSignals {
    /// Stops listening, once the command's statements are done (`failed` when they ended
    /// in an error). When a signal came meanwhile, that error may be the statement it
    /// cancelled: the signal's cancel is let finish and ends the process with the signal's
    /// code, rather than the command reporting the cancelled statement as its error (exit
    /// code 1). Work that ended well is reported, unless the signal's task ends the process
    /// first. A signal as the work ends may cancel its last statement (the lock's release)
    /// and end it with the signal's code and no report: `migrate status` then says what was
    /// applied, as after any stop.
    pub(crate) async fn end(self, failed: bool) {
        if failed && self.received.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = self.task.await;
            return;
        }
        self.task.abort();
    }
}

/// What a first Ctrl-C or SIGTERM does, and what a second one leaves behind.
pub(crate) enum OnStop {
    /// The command stops after the batch in flight. Each batch is one transaction, so the
    /// server applies it whole or not at all whatever becomes of the client, and the next
    /// run does what is left.
    AfterTheBatch,
    /// The command finishes a step that must not be left half done (`finishing`, as in
    /// "finishing the reset first, …"), then exits with the signal's code. A second signal
    /// stops at once with what `if_stopped_now` says at that moment: where the step had got
    /// to, and how to finish it by hand.
    FinishFirst {
        finishing: String,
        if_stopped_now: Box<dyn Fn() -> String + Send + Sync>,
    },
}

/// Listens for Ctrl-C and SIGTERM until the returned task is aborted. The first asks the
/// command to stop as `on_stop` says; a second ends the process at once, for a step that
/// does not finish (a batch waiting on a lock, a broker that does not answer). With
/// `--format json`, that stop prints on stdout a JSON object of what was done (see
/// [`StopRequest::note_done`]), so that a script reading the result gets one.
pub(crate) fn stop_on_signals(
    on_stop: OnStop,
    output: Output,
) -> anyhow::Result<(StopRequest, tokio::task::JoinHandle<()>)> {
    use anyhow::Context;
    use tokio::signal::unix::{signal, SignalKind};
    let stop = StopRequest {
        json: output.format == Format::Json,
        ..Default::default()
    };
    let mut interrupt = signal(SignalKind::interrupt()).context("could not listen for Ctrl-C")?;
    let mut terminate = signal(SignalKind::terminate()).context("could not listen for SIGTERM")?;
    let received = stop.clone();
    let task = tokio::spawn(async move {
        loop {
            let number = tokio::select! {
                result = interrupt.recv() => result.map(|()| SIGINT),
                result = terminate.recv() => result.map(|()| SIGTERM),
            };
            let Some(number) = number else { return };
            let signal_name = |number| {
                if number == SIGTERM {
                    "SIGTERM"
                } else {
                    "Ctrl-C"
                }
            };
            let name = signal_name(number);
            if !received.requested() {
                received
                    .signal
                    .store(number, std::sync::atomic::Ordering::SeqCst);
                // Read before the command is woken: once woken, it is no longer waiting.
                let waiting = received.waiting.load(std::sync::atomic::Ordering::SeqCst);
                received.asked.notify_waiters();
                match &on_stop {
                    OnStop::AfterTheBatch if waiting => {
                        crate::stderr_line!("{name}: stopping (no batch was in flight)")
                    }
                    OnStop::AfterTheBatch => crate::stderr_line!(
                        "{name}: stopping after the batch in flight ({name} again stops at once)"
                    ),
                    OnStop::FinishFirst { finishing, .. } => {
                        crate::stderr_line!("{name}: {finishing} ({name} again stops at once)")
                    }
                }
                continue;
            }
            // "Ctrl-C again", or "SIGTERM after Ctrl-C": the exit code stays the first's.
            let again = match received.signal() {
                first if first == number => format!("{name} again"),
                first => format!("{name} after {}", signal_name(first)),
            };
            // The batch in flight is cancelled before the count is read: one that commits
            // meanwhile is counted. No batch starts after the first signal, so one is in
            // flight now or none is.
            received
                .at_once
                .store(true, std::sync::atomic::Ordering::SeqCst);
            let canceller = received
                .canceller
                .lock()
                .ok()
                .and_then(|c| c.clone())
                .filter(|_| received.in_flight.load(std::sync::atomic::Ordering::SeqCst));
            let cancel_failed = match canceller {
                None => None,
                Some(canceller) => {
                    crate::stderr_line!("{again}: cancelling the batch in flight on the server");
                    let failed = tokio::select! {
                        failed = cancel_within(&canceller) => failed,
                        _ = interrupt.recv() => Some("Ctrl-C a third time".to_string()),
                        _ = terminate.recv() => Some("SIGTERM a third time".to_string()),
                    };
                    failed.map(|failed| (failed, canceller.without_the_cancel()))
                }
            };
            let (done, result) = received
                .done
                .lock()
                .map(|done| (done.text.clone(), done.fields.clone()))
                .unwrap_or_default();
            let done = match done.is_empty() {
                true => "nothing was done yet".to_string(),
                false => done,
            };
            let warning = match &on_stop {
                OnStop::AfterTheBatch => format!(
                    "{again}: stopping now ({done}); a batch is done whole or not at all, and \
                     running the same command again does the rest"
                ),
                OnStop::FinishFirst { if_stopped_now, .. } => {
                    format!("{again}: stopping now; {}", if_stopped_now())
                }
            };
            crate::stderr_line!("warning: {warning}");
            if let Some((failed, without_the_cancel)) = cancel_failed {
                warn_not_cancelled("batch", &failed, without_the_cancel);
            }
            let group = HANDLER_GROUP.load(std::sync::atomic::Ordering::SeqCst);
            if group > 0 {
                signal_group(group as u32, SIGTERM);
            }
            if output.format == Format::Json {
                let _ = received.print_result(|| {
                    print_stopped_at_once(output, result, Some(warning));
                    Ok(())
                });
            }
            // The exit code is the first signal's, as the first stop would have given.
            std::process::exit(received.exit_status() as i32);
        }
    });
    Ok((stop, task))
}

/// Cancels the statement in flight through `canceller`; says why not when the server
/// refused or did not answer within [`CANCEL_WITHIN`].
async fn cancel_within(canceller: &QueryCanceller) -> Option<String> {
    match tokio::time::timeout(CANCEL_WITHIN, canceller.cancel()).await {
        Ok(Ok(())) => None,
        Ok(Err(error)) => Some(crate::error_chain(&error)),
        Err(_) => Some(format!(
            "no answer within {}",
            humantime::format_duration(CANCEL_WITHIN)
        )),
    }
}

/// The warning of a cancel that failed (see [`cancel_within`]): what is `in_flight` (the
/// batch, the statement), why, and what to do without it.
fn warn_not_cancelled(in_flight: &str, failed: &str, without_the_cancel: &str) {
    crate::stderr_line!(
        "{}",
        crate::output::redact_secrets(&format!(
            "warning: could not cancel the {in_flight} in flight on the server ({failed}); \
             {without_the_cancel}"
        ))
    );
}

/// What a stop at once prints with `--format json` in place of the command's result:
/// `fields` (what was done so far) marked `interrupted` and `stopped_at_once`, with the
/// warning. Nothing is left to tell of a stdout that cannot be written.
fn print_stopped_at_once(
    output: Output,
    mut fields: serde_json::Map<String, serde_json::Value>,
    warning: Option<String>,
) {
    if output.format != Format::Json {
        return;
    }
    fields.insert("interrupted".into(), true.into());
    fields.insert("stopped_at_once".into(), true.into());
    if let Some(warning) = warning {
        fields.insert("warning".into(), warning.into());
    }
    let _ = output.print_json(&fields);
}

/// `inboxctl WORDS…` as the operator pastes it into a POSIX shell: each word quoted where
/// the shell would split or expand it (a group named `ops team`, a path with `$`).
/// Refuses a consumer name the inbox's consumer column cannot hold (see [`Store::not_held`]):
/// no row can be of it, and the server refuses to compare it with the column. `given_as`
/// says where the name came from (`--consumer`).
pub async fn require_held_consumer(
    store: &Store,
    consumer: &str,
    given_as: &str,
) -> anyhow::Result<()> {
    if store.not_held("consumer", &[consumer]).await?.is_empty() {
        return Ok(());
    }
    Err(crate::error::usage(format!(
        "{given_as} {} has characters the inbox's consumer column ({}) cannot hold",
        crate::output::printable(consumer),
        store.narrow_character_set("consumer").unwrap_or_default()
    )))
}

pub fn inboxctl_command(words: &[&str]) -> String {
    let mut line = String::from("inboxctl");
    for word in words {
        line.push(' ');
        // Only a NUL cannot be quoted, and no argument or path can hold one.
        line.push_str(&shlex::try_quote(word).unwrap_or((*word).into()));
    }
    line
}
