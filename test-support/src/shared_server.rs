//! One real llama-stack server answering for every stack of the bench. kwok's Pods run nothing,
//! so without it every stack's server would stay silent and each would earn a
//! `ServerNotResponding` Warning that a healthy cluster never shows. The bench makes the Service
//! range local in its own network namespace, so a stack's `ClusterIP:port` reaches this server
//! (which listens on every address) and the operator reads a real `/v1/version` and
//! `/v1/providers` for each stack, as it would in a cluster.

use std::process::Command;

use llama_stack_operator::stack_config::env::EnvSource;
use llama_stack_operator::stack_config::{ProviderTable, generate_from_yaml};
use serde_json::json;

use crate::llama_stack::{self, Server};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The test cluster's Service range (kube-apiserver's `--service-cluster-ip-range`).
const SERVICE_RANGE: &str = "10.96.0.0/16";

/// The running server (stopped on drop) and the port every stack must name.
pub struct SharedServer {
    _server: Server,
    pub port: u16,
    _dir: tempfile::TempDir,
}

/// Starts the server on a config generated from the starter distribution (one vLLM provider
/// whose endpoint is closed, so nothing is called), and routes the Service range to loopback.
pub fn start() -> Result<SharedServer, Error> {
    let dir = tempfile::Builder::new().prefix("llso-scale-").tempdir()?;
    let spec = serde_json::from_value(json!({
        "distribution": {"name": "starter"},
        "providers": {"inference": {"provider": "vllm", "endpoint": "http://127.0.0.1:9/v1"}},
        "disabled": ["eval", "scoring", "postTraining"],
    }))?;
    let base = crate::llama_stack::STARTER_CONFIG;
    let generated = generate_from_yaml(&spec, base, ProviderTable::embedded())?;
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, &generated.yaml)?;
    let vars: Vec<(String, String)> = generated
        .env
        .iter()
        .filter_map(|e| match &e.source {
            EnvSource::Value(v) => Some((e.name.clone(), v.clone())),
            _ => None,
        })
        .collect();
    let venv = llama_stack::venv(&[])?;
    let deps = llama_stack::list_deps(&venv, &config)?;
    let venv = llama_stack::venv(&deps)?;
    let server = Server::start(&venv, &config, &vars, dir.path())?;
    let port = server
        .url
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .ok_or("the server URL has no port")?;
    let status = Command::new("ip")
        .args(["route", "replace", "local", SERVICE_RANGE, "dev", "lo"])
        .status()?;
    if !status.success() {
        return Err(format!("ip route replace local {SERVICE_RANGE} dev lo: {status}").into());
    }
    Ok(SharedServer {
        _server: server,
        port,
        _dir: dir,
    })
}
