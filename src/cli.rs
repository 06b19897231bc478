//! The command line: one struct per command, shared option groups flattened where needed.

use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::time::{parse_duration, parse_timestamp};

/// A count of rows: a whole number of at least 1.
fn parse_count(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".to_string()),
        Ok(count) => Ok(count),
        Err(_) => Err(format!("'{text}' is not a whole number of at least 1")),
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "inboxctl",
    version,
    about = "Operate the inbox (processed_messages) of Kafka consumers: migrate, inspect, prune",
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOpts,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalOpts {
    /// Output format: tables for people, JSON for scripts, CSV where rows are the point
    #[arg(long, global = true, value_enum, default_value_t = Format::Table)]
    pub format: Format,

    /// Print more detail on stderr (repeat for more)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Print nothing on stderr but errors (no progress bars, no notes)
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, upgrade or downgrade the processed_messages table
    Migrate(MigrateArgs),
    /// Show what the inbox holds: rows per consumer, ages, offset ranges; or look up one event
    Inspect(InspectArgs),
    /// Delete rows older than a retention, in small batches
    Prune(PruneArgs),
    /// Print a shell completion script
    Completions(CompletionsArgs),
}

#[derive(Debug, Clone, Args)]
pub struct DatabaseOpts {
    /// Database holding processed_messages: sqlite://FILE, postgres://…, mysql://… (mariadb://…)
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "sqlite://inbox.db",
        hide_env_values = true
    )]
    pub database_url: String,

    /// Give up connecting after this long (e.g. 5s, 1m)
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub connect_timeout: Duration,
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(subcommand)]
    pub command: MigrateCommand,
}

#[derive(Debug, Subcommand)]
pub enum MigrateCommand {
    /// Apply every pending migration (creates the database file for SQLite)
    Run {
        #[command(flatten)]
        database: DatabaseOpts,
        /// Print the SQL that would run and change nothing
        #[arg(long)]
        dry_run: bool,
    },
    /// List the migrations and whether each is applied
    Status {
        #[command(flatten)]
        database: DatabaseOpts,
    },
    /// Undo the last migration, or every migration above --to
    Revert {
        #[command(flatten)]
        database: DatabaseOpts,
        /// Revert down to this version (0 reverts everything and drops the table)
        #[arg(long, value_name = "VERSION")]
        to: Option<i64>,
        /// Print the SQL that would run and change nothing
        #[arg(long)]
        dry_run: bool,
        /// Do not ask before dropping a table that holds rows
        #[arg(long, short = 'y')]
        yes: bool,
    },
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub database: DatabaseOpts,

    /// Only this consumer
    #[arg(long, value_name = "CONSUMER")]
    pub consumer: Option<String>,

    /// Look up one event id: did we process it, when, from where?
    #[arg(long, value_name = "ID")]
    pub event_id: Option<String>,

    /// Take the total row count from the planner's statistics (PostgreSQL, MySQL) instead of counting
    #[arg(long, conflicts_with = "event_id")]
    pub estimate: bool,
}

#[derive(Debug, Args)]
pub struct PruneArgs {
    #[command(flatten)]
    pub database: DatabaseOpts,

    /// Delete rows processed longer ago than this (e.g. 7d, 36h, 2w)
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = parse_duration,
        allow_hyphen_values = true,
        required_unless_present = "before",
        conflicts_with = "before"
    )]
    pub older_than: Option<Duration>,

    /// Delete rows processed before this time (RFC 3339, or YYYY-MM-DD[ HH:MM:SS] in UTC)
    #[arg(long, value_name = "TIMESTAMP", value_parser = parse_timestamp)]
    pub before: Option<DateTime<Utc>>,

    /// Only this consumer's rows
    #[arg(long, value_name = "CONSUMER")]
    pub consumer: Option<String>,

    /// Rows deleted per transaction
    #[arg(long, value_name = "N", default_value_t = 5000, value_parser = parse_count)]
    pub batch_size: u64,

    /// Stop after deleting this many rows in all
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub max_rows: Option<u64>,

    /// Count what would be deleted and delete nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Do not ask for confirmation (required when not on a terminal, e.g. from cron)
    #[arg(long, short = 'y')]
    pub yes: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to generate the script for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}
