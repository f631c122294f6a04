//! The in-Pod external-provider steps: `install-tools` (operator image) and `stage-provider`
//! (provider image). Failures are printed and written to the termination message.

use std::path::PathBuf;

use llama_stack_resolver::server_line::ServerLine;
use serde_json::{Map, Value};

use crate::external::report::{ProviderReport, bounded};
use crate::external::stage::{StageOptions, stage};
use crate::external::{
    INSTALL_SCRIPT, PREFLIGHT_SCRIPT, PROVIDER_ROOT, PROVIDERS_DIR, REPORT_MODULE, TERMINATION_LOG,
};

/// Options of `install-tools`.
#[derive(clap::Args, Debug)]
pub struct ToolsArgs {
    /// Directory (a shared volume) to put this binary and the Python steps in.
    #[arg(long, value_name = "DIR")]
    to: PathBuf,
}

/// Options of `stage-provider`.
#[derive(clap::Args, Debug)]
pub struct StageArgs {
    /// `providerId` from the CRD.
    #[arg(long)]
    provider_id: String,
    /// The CRD section the provider is listed under (`safety`, `vectorIo`, ...).
    #[arg(long)]
    api: String,
    /// The provider image (for messages).
    #[arg(long)]
    image: String,
    /// Position in CRD order.
    #[arg(long, default_value = "0")]
    order: u32,
    /// `config` from the CRD, as JSON.
    #[arg(long, value_name = "JSON")]
    config_json: Option<String>,
    /// This init container's name.
    #[arg(long)]
    init_container: String,
    /// Root of the provider files in the image.
    #[arg(long, default_value = PROVIDER_ROOT)]
    source: PathBuf,
    /// The shared volume.
    #[arg(long, default_value = PROVIDERS_DIR)]
    dest: PathBuf,
    /// Where Kubernetes reads the termination message.
    #[arg(long, default_value = TERMINATION_LOG)]
    termination_log: PathBuf,
    /// The line of the server that will load the provider: `ogx` or `llama-stack` (the default,
    /// so Pods written before OGX keep their arguments).
    #[arg(long, default_value = "llama-stack", value_parser = parse_line)]
    server_line: ServerLine,
}

fn parse_line(text: &str) -> Result<ServerLine, String> {
    ServerLine::parse(text)
        .ok_or_else(|| format!("{text:?} is not a server line (ogx, llama-stack)"))
}

/// Errors of the provider steps.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// A provider check failed (the report is also the termination message).
    #[error("{0}")]
    Provider(#[from] Box<ProviderReport>),
    /// I/O.
    #[error("{0}")]
    Io(String),
}

pub(super) fn install_tools(args: &ToolsArgs) -> Result<(), StepError> {
    use std::os::unix::fs::PermissionsExt;
    let io = |what: &str, e: std::io::Error| StepError::Io(format!("{what}: {e}"));
    std::fs::create_dir_all(&args.to).map_err(|e| io("cannot create the tools directory", e))?;
    let me = std::env::current_exe().map_err(|e| io("cannot locate this binary", e))?;
    let bin = args.to.join("llama-stack-operator");
    std::fs::copy(&me, &bin).map_err(|e| io("cannot copy this binary", e))?;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| io("cannot make the binary executable", e))?;
    for (name, text) in [
        ("install_providers.py", INSTALL_SCRIPT),
        ("preflight.py", PREFLIGHT_SCRIPT),
        ("llso_report.py", REPORT_MODULE),
    ] {
        std::fs::write(args.to.join(name), text)
            .map_err(|e| io(&format!("cannot write {name}"), e))?;
    }
    eprintln!("tools installed in {}", args.to.display());
    Ok(())
}

pub(super) fn stage_provider(args: &StageArgs) -> Result<(), StepError> {
    let config = match &args.config_json {
        None => None,
        Some(text) => Some(
            serde_json::from_str::<Map<String, Value>>(text)
                .map_err(|e| StepError::Io(format!("--config-json is not a JSON object: {e}")))?,
        ),
    };
    let options = StageOptions {
        provider_id: args.provider_id.clone(),
        section: args.api.clone(),
        image: args.image.clone(),
        order: args.order,
        config,
        source: args.source.clone(),
        dest: args.dest.clone(),
        init_container: args.init_container.clone(),
        server_line: args.server_line,
    };
    match stage(&options) {
        Ok(staged) => {
            eprintln!(
                "{}: staged {} ({}, api {}) and {} wheel(s)",
                args.provider_id,
                staged.package.spec.package_name,
                staged.package.spec.provider_type,
                staged.package.spec.api,
                staged.wheels.len()
            );
            Ok(())
        }
        Err(report) => {
            // Best effort: outside a Pod there is no termination log.
            let _ = std::fs::write(&args.termination_log, bounded(&report.to_string()));
            Err(report.into())
        }
    }
}
