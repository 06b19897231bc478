//! inboxctl: operate the inbox (`processed_messages`) of Kafka consumers.
//!
//! The binary is a thin wrapper around [`main`]; tests reach everything else through this
//! library.

pub mod cli;
pub mod commands;
pub mod error;
pub mod event_id;
pub mod exit;
pub mod handler;
pub mod kafka;
pub mod migrate;
pub mod output;
pub mod store;
pub mod time;

use std::process::ExitCode;

use crate::exit::ExitStatus;

/// The settings inboxctl takes from a `.env` file (in this folder or the nearest parent
/// that has one) where the environment does not set them. Only these: a `.env` is usually
/// the application's, and its other settings are not meant for inboxctl.
const DOT_ENV_SETTINGS: [&str; 2] = ["DATABASE_URL", "KAFKA_BROKERS"];

/// Reads [`DOT_ENV_SETTINGS`] from `.env`. A missing file is normal. A line that cannot be
/// read (a value with a space and no quotes) ends the reading, which is said on stderr,
/// naming the line and its key but not its value, which may be a secret: the settings
/// after it would otherwise be lost without a word, and the command would run on the
/// defaults.
fn read_dot_env() {
    let Some(path) = std::env::current_dir().ok().and_then(|dir| {
        dir.ancestors()
            .map(|folder| folder.join(".env"))
            .find(|path| path.is_file())
    }) else {
        return;
    };
    let Ok(lines) = dotenvy::from_path_iter(&path) else {
        return;
    };
    for line in lines {
        match line {
            Ok((key, value)) => {
                if DOT_ENV_SETTINGS.contains(&key.as_str()) && std::env::var_os(&key).is_none() {
                    std::env::set_var(key, value);
                }
            }
            Err(dotenvy::Error::LineParse(rest, _)) => {
                let file = std::fs::read_to_string(&path).unwrap_or_default();
                let (number, key) = unreadable_line(&file, &rest);
                let number = number.map_or_else(String::new, |n| format!(":{n}"));
                let what = match key {
                    Some(key) => format!("the line setting {key}"),
                    None => "a line".to_string(),
                };
                crate::stderr_line!(
                    "warning: {}{number}: {what} cannot be read (expected KEY=VALUE, a value \
                     with spaces in quotes); {} are not read from it or the lines after it",
                    path.display(),
                    DOT_ENV_SETTINGS.join(" and ")
                );
                return;
            }
            Err(error) => {
                crate::stderr_line!("warning: could not read {}: {error}", path.display());
                return;
            }
        }
    }
}

/// Where the `.env` line dotenvy could not read is in `file`, counted from 1, and the key it
/// sets; `rest` is what its error holds, the line from where reading failed on. Neither
/// shows the line's value, which may be a secret: a line without `=` has no key to name
/// (`DB_PASSWORD hunter2`), and a comment that quotes the line is not it.
fn unreadable_line<'f>(file: &'f str, rest: &str) -> (Option<usize>, Option<&'f str>) {
    let rest = rest.trim();
    let Some((index, found)) = file.lines().enumerate().find(|(_, candidate)| {
        !rest.is_empty()
            && !candidate.trim_start().starts_with('#')
            && candidate.trim_end().ends_with(rest)
    }) else {
        return (None, None);
    };
    let key = found.split_once('=').map(|(key, _)| {
        let key = key.trim();
        key.strip_prefix("export ").unwrap_or(key).trim()
    });
    let is_a_name = |key: &&str| {
        !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    };
    (Some(index + 1), key.filter(is_a_name))
}

/// Parse the command line, run the command, print any error once with its context chain.
pub fn main() -> ExitCode {
    read_dot_env();
    let cli = match cli::parse() {
        Ok(cli) => cli,
        Err(error) => return clap_exit(&error),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            crate::stderr_line!("error: cannot start the async runtime: {error}");
            return ExitStatus::Error.into();
        }
    };
    let result = runtime.block_on(commands::run(cli));
    if result.is_err() {
        // The error ends the command. A broker call still running on a blocking thread (a
        // broker that does not answer, asked at the same time as a database that refused)
        // would otherwise hold the exit until its own timeout.
        runtime.shutdown_background();
    }
    match result {
        Ok(status) => match output::stdout_written() {
            // The result, or part of it, never reached stdout.
            Err(error) => {
                crate::stderr_line!("error: {error}");
                ExitStatus::Error.into()
            }
            Ok(()) => status.into(),
        },
        Err(error) => {
            let status = if error::is_usage(&error) {
                ExitStatus::Usage
            } else {
                ExitStatus::Error
            };
            // The server's own words may name another statement than the one refused.
            let read_only = match store::sqlx_causes(&error).any(store::is_read_only) {
                true => {
                    "; the server takes no writes in this session (a standby, or a database \
                         or role set to default_transaction_read_only, or a server started \
                         read-only): point --database-url at the primary"
                }
                false => "",
            };
            crate::stderr_line!("error: {}{read_only}", shown_error(&error));
            status.into()
        }
    }
}

/// What clap's own exit does (help or the version on stdout with 0, a usage error on stderr
/// with 2), except that help or a version that cannot be written is an error, exit 1, as any
/// other result is; a closed pipe (`| head`) is not.
fn clap_exit(error: &clap::Error) -> ExitCode {
    use std::io::Write;
    let printed = error.print().and_then(|()| std::io::stdout().flush());
    match printed {
        Err(failure) if !error.use_stderr() && failure.kind() != std::io::ErrorKind::BrokenPipe => {
            crate::stderr_line!("error: could not write to standard output: {failure}");
            ExitStatus::Error.into()
        }
        _ => ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2)),
    }
}

/// An error as inboxctl shows it, on stderr or in a JSON report: its chain on one line, with
/// any password hidden.
pub fn shown_error(error: &anyhow::Error) -> String {
    output::redact_secrets(&error_chain(error))
}

/// The error and its causes on one line, each cause once: drivers often repeat their source's
/// text in their own message, and the operator should read it once. PostgreSQL's DETAIL and
/// HINT lines join the line too: a log or a cron mail keeps one error per line.
pub fn error_chain(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let message = with_details(cause).trim_end().replace('\n', " ");
        if text.contains(&message) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&message);
    }
    text
}

/// The error's own text, with PostgreSQL's DETAIL and HINT when the generic driver has them
/// apart (the handler's own connections put them in the text).
fn with_details(cause: &(dyn std::error::Error + 'static)) -> String {
    use sqlx::postgres::PgDatabaseError;
    let mut message = cause.to_string();
    let postgres = match cause.downcast_ref::<sqlx::Error>() {
        Some(sqlx::Error::Database(database)) => database.try_downcast_ref::<PgDatabaseError>(),
        _ => cause.downcast_ref::<PgDatabaseError>(),
    };
    if let Some(postgres) = postgres {
        if let Some(detail) = postgres.detail() {
            message.push_str(&format!("\nDETAIL: {detail}"));
        }
        if let Some(hint) = postgres.hint() {
            message.push_str(&format!("\nHINT: {hint}"));
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line and key of an unreadable `.env` line, never more of it: a line without `=`
    /// names no key, and a comment that holds the same text is not the line.
    #[test]
    fn an_unreadable_dot_env_line_is_named_by_number_and_key() {
        let file = "# e.g. APP_NAME=my app\nDATABASE_URL=sqlite://a.db\nAPP_NAME=my app\n\
                    DB_PASSWORD hunter2\nexport TOKEN='open\n";
        assert_eq!(
            unreadable_line(file, "APP_NAME=my app"),
            (Some(3), Some("APP_NAME"))
        );
        assert_eq!(
            unreadable_line(file, "DB_PASSWORD hunter2"),
            (Some(4), None)
        );
        assert_eq!(
            unreadable_line(file, "export TOKEN='open"),
            (Some(5), Some("TOKEN"))
        );
        assert_eq!(unreadable_line(file, "my app"), (Some(3), Some("APP_NAME")));
        assert_eq!(unreadable_line(file, " hunter2"), (Some(4), None));
        assert_eq!(unreadable_line(file, "not in the file"), (None, None));
        assert_eq!(unreadable_line("a b=c d\n", "a b=c d"), (Some(1), None));
    }

    /// One line, each cause once: a driver's multi-line message (PostgreSQL's DETAIL) joins it.
    #[test]
    fn an_error_chain_is_one_line_with_each_cause_once() {
        let cause = anyhow::anyhow!("db error: ERROR: violates check\nDETAIL: Failing row (1)\n");
        let error = cause.context("handler statement failed on 0:3");
        assert_eq!(
            error_chain(&error),
            "handler statement failed on 0:3: db error: ERROR: violates check DETAIL: Failing row (1)"
        );
        let repeated = anyhow::anyhow!("timed out").context("connect: timed out");
        assert_eq!(error_chain(&repeated), "connect: timed out");
    }
}
