//! Starts hookscope: parses the command line and runs the command.

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    hookscope::cli::main_with_args(hookscope::cli::Cli::parse())
}
