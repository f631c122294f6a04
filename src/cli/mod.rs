//! Command-line interface of the `llama-stack-operator` binary.

pub mod crdgen;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Deploys and runs llama-stack servers from LlamaStackDistribution resources.
#[derive(Parser, Debug)]
#[command(name = "llama-stack-operator", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the LlamaStackDistribution CRD (both versions) as YAML.
    Crdgen(crdgen::Args),
}

impl Cli {
    /// Runs the chosen subcommand; errors are printed as one line on stderr.
    pub fn run(self) -> ExitCode {
        let result = match self.command {
            Command::Crdgen(args) => crdgen::run(&args),
        };
        match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("error: {err}");
                ExitCode::FAILURE
            }
        }
    }
}
