//! `inboxctl completions <shell>`: the scripts under `completions/` are this output.

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, Format};
use crate::exit::ExitStatus;
use crate::output::Output;

pub fn run(args: CompletionsArgs, output: Output) -> anyhow::Result<ExitStatus> {
    // A script is a script: a format asked for would be silently ignored.
    if output.format != Format::Table {
        return Err(crate::error::usage(
            "--format does not apply to completions, which prints a shell script",
        ));
    }
    output.print_verbatim(&script(args.shell))?;
    Ok(ExitStatus::Success)
}

pub fn script(shell: clap_complete::Shell) -> String {
    let mut command = Cli::command();
    let mut buffer = Vec::new();
    clap_complete::generate(shell, &mut command, "inboxctl", &mut buffer);
    String::from_utf8_lossy(&buffer).into_owned()
}
