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
use crate::store::{CreateMode, DatabaseUrl, Store};

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
    let url = DatabaseUrl::parse(&options.database_url)?;
    output.debug(format!("connecting to {} ({})", url.endpoint, url.redacted));
    Store::connect(&url, options.connect_timeout, create).await
}
