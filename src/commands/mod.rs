//! One module per command group; [`run`] is the one dispatch.

pub mod compare;
pub mod completions;
pub mod inspect;
pub mod migrate;
pub mod offsets;
pub mod prune;
pub mod replay;

use crate::cli::{Cli, Command, DatabaseOpts, Format};
use crate::exit::ExitStatus;
use crate::output::Output;
use crate::store::{CreateMode, DatabaseUrl, Store, POOL_CONNECTIONS};

pub async fn run(cli: Cli) -> anyhow::Result<ExitStatus> {
    let output = Output::new(&cli.global);
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

/// What asked a command that works in batches to stop: Ctrl-C (SIGINT) on a terminal, or
/// SIGTERM, which `kill`, systemd and Kubernetes send. Either lets the batch in flight finish.
#[derive(Clone, Default)]
pub(crate) struct StopRequest(std::sync::Arc<std::sync::atomic::AtomicI32>);

const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;

impl StopRequest {
    pub(crate) fn requested(&self) -> bool {
        self.signal() != 0
    }

    fn signal(&self) -> i32 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// 130 after Ctrl-C, 143 after SIGTERM: 128 plus the signal, as a shell reports it.
    pub(crate) fn exit_status(&self) -> ExitStatus {
        match self.signal() {
            SIGTERM => ExitStatus::Terminated,
            _ => ExitStatus::Interrupted,
        }
    }

    /// How the closing warning names the stop.
    pub(crate) fn describe(&self) -> &'static str {
        match self.signal() {
            SIGTERM => "stopped by SIGTERM",
            _ => "interrupted",
        }
    }
}

/// Listens for Ctrl-C and SIGTERM until the returned task is aborted.
pub(crate) fn stop_on_signals() -> anyhow::Result<(StopRequest, tokio::task::JoinHandle<()>)> {
    use anyhow::Context;
    use tokio::signal::unix::{signal, SignalKind};
    let stop = StopRequest::default();
    let flag = stop.0.clone();
    let mut terminate = signal(SignalKind::terminate()).context("could not listen for SIGTERM")?;
    let task = tokio::spawn(async move {
        let received = tokio::select! {
            result = tokio::signal::ctrl_c() => result.is_ok().then_some(SIGINT),
            result = terminate.recv() => result.map(|()| SIGTERM),
        };
        if let Some(number) = received {
            flag.store(number, std::sync::atomic::Ordering::SeqCst);
        }
    });
    Ok((stop, task))
}
