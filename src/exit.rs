//! Exit codes, documented in the README. Scripts and cron jobs branch on these.

use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// The command did what was asked.
    Success = 0,
    /// Something went wrong: connection, SQL, I/O, a refused migration.
    Error = 1,
    /// The command line was wrong: a bad flag, value or URL scheme, or a missing `--yes`.
    Usage = 2,
    /// The command ran and found something an operator must look at (e.g. lost messages).
    Findings = 3,
    /// Ctrl-C stopped the command between two batches; what was done is reported.
    Interrupted = 130,
    /// SIGTERM stopped the command between two batches; what was done is reported.
    Terminated = 143,
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> Self {
        ExitCode::from(status as u8)
    }
}
