//! Error kinds that change the exit code. Everything else is an `anyhow::Error` (exit 1).

use std::fmt;

/// A mistake on the command line that clap cannot see: an unsupported URL scheme, a
/// destructive command without `--yes` and without a terminal to ask on. Exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Shorthand for returning a usage error from a function that returns `anyhow::Result`.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}

pub fn is_usage(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.is::<UsageError>())
}
