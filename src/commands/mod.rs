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

/// A flag that Ctrl-C sets, for commands that stop between two batches instead of dying in
/// the middle of one; abort the task when done.
pub(crate) fn stop_on_ctrl_c() -> (
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    tokio::task::JoinHandle<()>,
) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let signal = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    });
    (stop, signal)
}
