use std::process::ExitCode;

use clap::Parser;
use llama_stack_operator::cli::Cli;

fn main() -> ExitCode {
    Cli::parse().run()
}
