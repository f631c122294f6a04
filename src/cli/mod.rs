//! Command-line interface of the `llama-stack-operator` binary.

mod convert;
pub(crate) mod crdgen;
mod credential_providers;
pub(crate) mod merge_config;
mod overrides;
mod own_image;
mod provider_steps;
pub(crate) mod render;
mod resolve;
mod run;
mod validate;

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
    /// Run the operator: the controller and the webhooks.
    Run(Box<run::Args>),
    /// Convert a LlamaStackDistribution manifest between v1alpha1 and v1alpha2.
    Convert(convert::Args),
    /// Print the LlamaStackDistribution CRD (both versions) as YAML.
    Crdgen(crdgen::Args),
    /// Resolve a distribution name or image to a digest-pinned image and its base config.
    Resolve(resolve::Args),
    /// Print what the operator generates for a LlamaStackDistribution (offline).
    Render(render::Args),
    /// Say what admission would say of LlamaStackDistribution manifests (offline): exit 0
    /// when all would be admitted, 1 when one would be refused, 2 when they cannot be read.
    Validate(validate::Args),
    /// Merge external providers into a config (runs in the Pod).
    MergeConfig(merge_config::Args),
    /// Copy this binary and the Python provider steps to a shared volume (runs in the Pod).
    InstallTools(provider_steps::ToolsArgs),
    /// Validate a provider image's metadata and stage its wheels (runs in the provider image).
    StageProvider(provider_steps::StageArgs),
}

impl Cli {
    /// Runs the chosen subcommand; an error is printed with its causes as one line on stderr.
    pub fn run(self) -> ExitCode {
        if let Command::Validate(args) = &self.command {
            return match validate::run(args) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(err) => {
                    eprintln!("error: {}", crate::error_chain(&err));
                    ExitCode::from(2)
                }
            };
        }
        let result: Result<(), Box<dyn std::error::Error>> = match self.command {
            Command::Run(args) => run::run(&args).map_err(Into::into),
            Command::Convert(args) => convert::run(&args).map_err(Into::into),
            Command::Crdgen(args) => crdgen::run(&args).map_err(Into::into),
            Command::Resolve(args) => resolve::run(args).map_err(Into::into),
            Command::Render(args) => render::run(&args).map_err(Into::into),
            // Handled above, for its own exit statuses.
            Command::Validate(_) => Ok(()),
            Command::MergeConfig(args) => merge_config::run(&args).map_err(Into::into),
            Command::InstallTools(args) => provider_steps::install_tools(&args).map_err(Into::into),
            Command::StageProvider(args) => {
                provider_steps::stage_provider(&args).map_err(Into::into)
            }
        };
        match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("error: {}", crate::error_chain(err.as_ref()));
                ExitCode::FAILURE
            }
        }
    }
}
