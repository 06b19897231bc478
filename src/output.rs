//! Everything printed goes through here: tables, JSON, CSV, notes on stderr, progress bars,
//! and the scrubbing of passwords out of any text that could contain a database URL.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::Context;
use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::cli::{Format, GlobalOpts};
use crate::exit::ExitStatus;

/// Passwords seen in URLs and settings this process was given. Any text printed is scrubbed
/// of them where they stand as a password (see [`redact_secrets`]), so a driver error that
/// quotes a connection string cannot leak one.
static SECRETS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Whether a setting of this name holds a secret: a URL query parameter (`password`,
/// libpq's `sslpassword`, `pass`, `pwd`) or a librdkafka property (`sasl.password`,
/// `sasl.oauthbearer.client.secret`).
pub fn names_a_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.contains("password") || key.contains("secret") || key == "pass" || key == "pwd"
}

pub fn register_secret(secret: &str) {
    if secret.is_empty() {
        return;
    }
    let mut secrets = SECRETS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for form in [secret.to_string(), percent_decode(secret)] {
        if !secrets.contains(&form) {
            secrets.push(form);
        }
    }
}

/// Replaces each registered password by `***` where it stands as one: between `:` and `@`
/// (a URL's user info) or after a label such as `password=`, `password: ` or `secret="`.
/// Only there: a short password such as `1` or `postgres` is also part of addresses, counts
/// and names, which must print as they are.
pub fn redact_secrets(text: &str) -> String {
    let secrets = SECRETS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut text = text.to_string();
    for secret in secrets.iter() {
        text = redact_secret(&text, secret);
    }
    text
}

fn redact_secret(text: &str, secret: &str) -> String {
    let mut redacted = String::with_capacity(text.len());
    let mut copied = 0;
    for (at, _) in text.match_indices(secret) {
        let end = at + secret.len();
        if at >= copied && stands_as_password(&text[..at], &text[end..]) {
            redacted.push_str(&text[copied..at]);
            redacted.push_str("***");
            copied = end;
        }
    }
    redacted.push_str(&text[copied..]);
    redacted
}

/// Whether text found between `before` and `after` is in a password's place.
fn stands_as_password(before: &str, after: &str) -> bool {
    if before.ends_with(':') && after.starts_with('@') {
        return true;
    }
    let label = before.trim_end_matches(['=', ':', ' ', '"', '\'']);
    if label.len() == before.len() {
        return false;
    }
    let label = label.to_ascii_lowercase();
    ["password", "passwd", "pwd", "secret"]
        .iter()
        .any(|word| label.ends_with(word))
}

fn percent_decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={text}").as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_else(|| text.to_string())
}

/// The first failed write to stdout other than to a closed pipe, for the exit code: a command
/// whose result was lost did not succeed, whatever it did.
static STDOUT_ERROR: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Why stdout could not be written, if it could not (see [`Output::print`]).
fn stdout_error() -> Option<&'static str> {
    STDOUT_ERROR.get().map(String::as_str)
}

/// An error where a write to stdout failed (see [`stdout_error`]).
pub fn stdout_written() -> anyhow::Result<()> {
    match stdout_error() {
        Some(error) => anyhow::bail!("could not write to standard output: {error}"),
        None => Ok(()),
    }
}

/// `eprintln!` that does not panic when stderr cannot be written (full, or a closed pipe):
/// the line is lost, and the command goes on to finish what it changes, and to its exit
/// code.
#[macro_export]
macro_rules! stderr_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Writes `bytes` to stdout. A failure other than a closed pipe (`inboxctl inspect | head`,
/// the reader's choice) is an error, and is kept for [`stdout_error`].
fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            let _ = STDOUT_ERROR.set(error.to_string());
            Err(error).context("could not write to standard output")
        }
        _ => Ok(()),
    }
}

/// How a command should talk to the person or script that ran it.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub format: Format,
    pub verbose: u8,
    pub quiet: bool,
}

impl Output {
    pub fn new(global: &GlobalOpts) -> Self {
        Output {
            format: global.format,
            verbose: global.verbose,
            quiet: global.quiet,
        }
    }

    /// A note for a person on stderr; silenced by `-q`.
    pub fn note(&self, message: impl AsRef<str>) {
        if !self.quiet {
            crate::stderr_line!("{}", redact_secrets(message.as_ref()));
        }
    }

    /// A note on stderr shown even with `-q`: one a script needs, such as where the way back
    /// from a change was written.
    pub fn note_even_quiet(&self, message: impl AsRef<str>) {
        crate::stderr_line!("{}", redact_secrets(message.as_ref()));
    }

    /// A warning on stderr; shown even with `-q`, because it changes what the result means.
    pub fn warn(&self, message: impl AsRef<str>) {
        crate::stderr_line!("warning: {}", redact_secrets(message.as_ref()));
    }

    /// Detail for `-v`.
    pub fn debug(&self, message: impl AsRef<str>) {
        if self.verbose > 0 && !self.quiet {
            crate::stderr_line!("{}", redact_secrets(message.as_ref()));
        }
    }

    /// Stdout, scrubbed. Every command's result goes through this. A write that fails for
    /// another reason than a closed pipe (a full disk) is kept for [`stdout_error`].
    pub fn print(&self, text: impl AsRef<str>) {
        let _ = self.print_checked(text.as_ref());
    }

    /// [`Output::print`], failing as well where the write did.
    fn print_checked(&self, text: &str) -> anyhow::Result<()> {
        write_stdout(format!("{}\n", redact_secrets(text)).as_bytes())
    }

    /// `text` on stdout as it is: no line added, nothing scrubbed (a script the command
    /// generated). Fails as [`Output::print_json`] does.
    pub fn print_verbatim(&self, text: &str) -> anyhow::Result<()> {
        write_stdout(text.as_bytes())
    }

    pub fn print_json<T: Serialize>(&self, value: &T) -> anyhow::Result<()> {
        self.print_checked(&serde_json::to_string_pretty(value)?)
    }

    /// CSV with a header row; `rows` are already strings in header order.
    pub fn print_csv(&self, header: &[&str], rows: &[Vec<String>]) -> anyhow::Result<()> {
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.write_record(header)?;
        for row in rows {
            writer.write_record(row)?;
        }
        let bytes = writer.into_inner().map_err(|error| error.into_error())?;
        self.print_checked(String::from_utf8(bytes)?.trim_end())
    }

    /// A progress bar on stderr when stderr is a terminal and `-q` is not given; hidden otherwise,
    /// so cron logs and pipes never fill with escape codes. With no total known, a counter.
    pub fn progress(&self, total: Option<u64>, unit: &str) -> ProgressBar {
        if self.quiet || !std::io::stderr().is_terminal() {
            return ProgressBar::hidden();
        }
        let (bar, template) = match total {
            Some(total) => (
                ProgressBar::new(total),
                format!("{{spinner}} [{{elapsed_precise}}] {{bar:40}} {{human_pos}}/{{human_len}} {unit} ({{rate}}, eta {{eta}})"),
            ),
            None => (
                ProgressBar::no_length(),
                format!("{{spinner}} [{{elapsed_precise}}] {{human_pos}} {unit} ({{rate}})"),
            ),
        };
        if let Ok(style) = ProgressStyle::with_template(&template) {
            // Whole units a second: indicatif's own `per_sec` shows three decimals of rows.
            bar.set_style(style.with_key(
                "rate",
                |state: &indicatif::ProgressState, out: &mut dyn std::fmt::Write| {
                    let _ = write!(out, "{}/s", indicatif::HumanCount(state.per_sec() as u64));
                },
            ));
        }
        // Drawn at once, at zero: the first batch or chunk may take a while to report.
        bar.tick();
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    }
}

/// A table for people. Its cells show control characters escaped (`\n`, `\t`, `\u{1b}`):
/// a consumer or event id holding a newline would otherwise draw as two rows, and an escape
/// sequence would reach the terminal.
pub struct TextTable(Table);

impl TextTable {
    pub fn add_row<S: AsRef<str>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Self {
        let cells: Vec<String> = cells
            .into_iter()
            .map(|cell| printable(cell.as_ref()))
            .collect();
        self.0.add_row(cells);
        self
    }
}

impl std::fmt::Display for TextTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// An event id as a message shows it: whole up to 64 characters, longer ones cut to their
/// first 32 with their length (a line of thousands says nothing more; the dead-letter file
/// keeps the whole id).
pub fn shown_id(id: &str) -> String {
    let length = id.chars().count();
    match length > 64 {
        true => format!(
            "{}… ({length} characters)",
            printable(&id.chars().take(32).collect::<String>())
        ),
        false => printable(id),
    }
}

/// `text` with its control characters written as Rust escapes, the rest as it is.
pub fn printable(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars()
        .map(|c| match c.is_control() {
            true => c.escape_default().to_string(),
            false => c.to_string(),
        })
        .collect()
}

/// A table in the one style every command uses; numeric columns are right-aligned.
pub fn table(header: &[&str], right_aligned: &[usize]) -> TextTable {
    let mut table = Table::new();
    // Fit a terminal's width; never wrap cells when piped, so lines stay whole for grep.
    let arrangement = if std::io::stdout().is_terminal() {
        ContentArrangement::Dynamic
    } else {
        ContentArrangement::Disabled
    };
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(arrangement);
    // Some pseudo-terminals report a width of 0: fitting into that would squeeze every
    // column to one character.
    if table.width().is_some_and(|width| width < 40) {
        table.set_content_arrangement(ContentArrangement::Disabled);
    }
    table.set_header(header.iter().map(Cell::new));
    for &index in right_aligned {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    TextTable(table)
}

/// The text shown for a missing value in tables and CSV.
pub fn or_dash<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "-".to_string(), |value| value.to_string())
}

/// A count with its noun: `1 row`, `2 rows`.
pub fn counted(count: u64, one: &str, many: &str) -> String {
    match count {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

/// The first `limit` of `names` for a message, comma-separated, and how many more there are
/// (`a, b, and 3 more`): a long list is given whole in JSON.
pub fn first_of(names: Vec<String>, limit: usize) -> String {
    let more = names.len().saturating_sub(limit);
    let mut shown: Vec<String> = names.into_iter().take(limit).collect();
    if more > 0 {
        shown.push(format!("and {more} more"));
    }
    shown.join(", ")
}

/// Whether a person is there to answer a question.
pub fn can_prompt() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// What the operator answered.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    Yes,
    No,
    /// Ctrl-C or SIGTERM instead of an answer: the command does nothing and exits with this.
    Stopped(ExitStatus),
}

impl Answer {
    /// Anything but yes: the status the command, having done nothing, exits with.
    pub fn declined(self) -> Option<ExitStatus> {
        match self {
            Answer::Yes => None,
            Answer::No => Some(ExitStatus::Success),
            Answer::Stopped(status) => Some(status),
        }
    }
}

/// Asks `question` on the terminal; anything but yes is no. Without a terminal to ask on,
/// the usage error `refusal` instead: the operator must say yes some other way.
pub async fn confirm(question: String, refusal: String) -> anyhow::Result<Answer> {
    use tokio::signal::unix::{signal, SignalKind};
    if !can_prompt() {
        return Err(crate::error::usage(refusal));
    }
    // Caught, so that the terminal is given back as it was before the command ends.
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let terminal = TerminalMode::save();
    // A thread of its own, not the runtime's blocking pool: the runtime would wait at exit
    // for a read that a signal left waiting for a key.
    let (answered, answer) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let answer = dialoguer::Confirm::new()
            .with_prompt(question)
            .default(false)
            .interact();
        let answer = match answer {
            Ok(true) if interrupt_typed_ahead() => {
                Err(dialoguer::Error::IO(std::io::ErrorKind::Interrupted.into()))
            }
            answer => answer,
        };
        let _ = answered.send(answer);
    });
    let answer = tokio::select! {
        answer = answer => answer.context("could not read the answer")?,
        _ = interrupt.recv() => return Ok(stopped(terminal, ExitStatus::Interrupted)),
        _ = terminate.recv() => return Ok(stopped(terminal, ExitStatus::Terminated)),
    };
    match answer {
        Ok(true) => Ok(Answer::Yes),
        Ok(false) => Ok(Answer::No),
        // While dialoguer waits for a key the terminal is raw: Ctrl-C comes as a key, not as
        // a signal, and dialoguer gives it back as an interrupted read.
        Err(dialoguer::Error::IO(error)) if error.kind() == std::io::ErrorKind::Interrupted => {
            Ok(stopped(terminal, ExitStatus::Interrupted))
        }
        Err(error) => {
            terminal.restore();
            Err(error).context("could not read the answer")
        }
    }
}

/// Whether the keys typed after the answer and not read yet hold the terminal's interrupt
/// key (Ctrl-C). Typed in the same burst as the answer, while the terminal was raw, it came
/// as a key, which no one would read once the terminal is given back: the operator's Ctrl-C
/// would be lost. Reads the keys, which nothing else would take either.
fn interrupt_typed_ahead() -> bool {
    let fd = libc::STDIN_FILENO;
    let mut mode = std::mem::MaybeUninit::<libc::termios>::uninit();
    // SAFETY: tcgetattr fills `mode` when it returns 0, and only then is it read.
    if unsafe { libc::tcgetattr(fd, mode.as_mut_ptr()) } != 0 {
        return false;
    }
    let usual = unsafe { mode.assume_init() };
    // Keys as they come, without waiting for one: a read returns what is there, or nothing.
    let mut at_once = usual;
    at_once.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG);
    at_once.c_cc[libc::VMIN] = 0;
    at_once.c_cc[libc::VTIME] = 0;
    // SAFETY: termios values set on the descriptor they were read from.
    if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &at_once) } != 0 {
        return false;
    }
    let interrupt = usual.c_cc[libc::VINTR];
    let mut typed = false;
    let mut keys = [0u8; 64];
    loop {
        // SAFETY: reads at most keys.len() bytes into keys.
        let read = unsafe { libc::read(fd, keys.as_mut_ptr().cast(), keys.len()) };
        if read <= 0 {
            break;
        }
        typed |= keys[..read as usize].contains(&interrupt);
    }
    unsafe { libc::tcsetattr(fd, libc::TCSANOW, &usual) };
    typed
}

/// The question left unanswered: the terminal given back and the line ended.
fn stopped(terminal: TerminalMode, status: ExitStatus) -> Answer {
    terminal.restore();
    crate::stderr_line!();
    Answer::Stopped(status)
}

/// The terminal as it was before a question. dialoguer hides the cursor and switches the
/// terminal to raw mode while it waits for a key, and undoes both only when it gets one.
struct TerminalMode(Option<libc::termios>);

impl TerminalMode {
    fn save() -> TerminalMode {
        let mut mode = std::mem::MaybeUninit::<libc::termios>::uninit();
        // SAFETY: tcgetattr fills `mode` when it returns 0, and only then is it read.
        let saved = unsafe { libc::tcgetattr(libc::STDIN_FILENO, mode.as_mut_ptr()) == 0 }
            .then(|| unsafe { mode.assume_init() });
        TerminalMode(saved)
    }

    fn restore(&self) {
        if let Some(mode) = &self.0 {
            // SAFETY: a termios that tcgetattr filled, set back on the same descriptor.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, mode) };
        }
        let _ = std::io::stderr().write_all(b"\x1b[?25h");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lists_name_the_first_and_count_the_rest() {
        let names = |n: usize| (1..=n).map(|i| format!("p{i}")).collect::<Vec<_>>();
        assert_eq!(first_of(names(1), 2), "p1");
        assert_eq!(first_of(names(2), 2), "p1, p2");
        assert_eq!(first_of(names(5), 2), "p1, p2, and 3 more");
    }

    #[test]
    fn secrets_are_scrubbed_in_plain_and_encoded_form() {
        register_secret("s3cr%40t");
        let text = "postgres://app:s3cr%40t@db:5432/x failed; password s3cr@t rejected";
        assert_eq!(
            redact_secrets(text),
            "postgres://app:***@db:5432/x failed; password *** rejected"
        );
    }

    #[test]
    fn long_event_ids_are_shown_cut_short_with_their_length() {
        assert_eq!(shown_id(&"a".repeat(64)), "a".repeat(64));
        assert_eq!(
            shown_id(&"é".repeat(65)),
            format!("{}… (65 characters)", "é".repeat(32))
        );
        assert_eq!(shown_id("tab\there"), "tab\\there");
    }

    #[test]
    fn table_cells_show_control_characters_escaped() {
        assert_eq!(printable("plain, ünïcode"), "plain, ünïcode");
        assert_eq!(
            printable("new\nline\tand \u{1b}[31m"),
            "new\\nline\\tand \\u{1b}[31m"
        );
        let mut table = table(&["CONSUMER", "ROWS"], &[1]);
        table.add_row(["a\nb", "1"]);
        assert_eq!(table.to_string().lines().count(), 5, "{table}");
        assert!(table.to_string().contains("a\\nb"), "{table}");
    }

    #[test]
    fn a_password_is_scrubbed_only_where_it_stands_as_one() {
        // Checked on one secret directly: the registered list is shared by every test.
        let text = "server 127.0.0.1:5432 has 1000 rows; user '1'; postgres://u:1@h/d?password=1 \
                    sasl.password=1 password: 1 secret=\"1\"";
        assert_eq!(
            redact_secret(text, "1"),
            "server 127.0.0.1:5432 has 1000 rows; user '1'; postgres://u:***@h/d?password=*** \
             sasl.password=*** password: *** secret=\"***\""
        );
        assert_eq!(
            redact_secret(r#"{"consumer": "c0", "total_rows": 1000}"#, "c0"),
            r#"{"consumer": "c0", "total_rows": 1000}"#
        );
    }
}
