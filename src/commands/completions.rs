//! `inboxctl completions <shell>`: the scripts under `completions/` are this output.

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs};
use crate::exit::ExitStatus;
use crate::output::Output;

pub fn run(args: CompletionsArgs, _output: Output) -> anyhow::Result<ExitStatus> {
    let script = script(args.shell);
    print!("{script}");
    Ok(ExitStatus::Success)
}

pub fn script(shell: clap_complete::Shell) -> String {
    let mut command = Cli::command();
    let mut buffer = Vec::new();
    clap_complete::generate(shell, &mut command, "inboxctl", &mut buffer);
    String::from_utf8_lossy(&buffer).into_owned()
}
