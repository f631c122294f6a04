use std::process::ExitCode;

use clap::Parser;
use llama_stack_operator::cli::Cli;

#[cfg(feature = "heap-profile")]
mod heap_profile;

#[cfg(feature = "heap-profile")]
#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn main() -> ExitCode {
    #[cfg(feature = "heap-profile")]
    heap_profile::start();
    Cli::parse().run()
}
