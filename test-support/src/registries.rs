//! Debian's `docker-registry` (distribution 2.8) on loopback in three set-ups: htpasswd + TLS,
//! token auth + TLS (with `token_server.py`), and plain HTTP (a "mirror"). Fresh certificates,
//! ports and storage per run; the processes die with the test binary.

use std::fs;
use std::net::{IpAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use tempfile::TempDir;

pub use crate::process::Error;
use crate::process::{free_port, spawn_tied as spawn};
use crate::test_ca::TestCa;

pub const USER: &str = "tester";
pub const PASSWORD: &str = "s3cret-pass";

/// One registry process.
pub struct Registry {
    /// `127.0.0.1:<port>`
    pub host: String,
    child: Child,
    log: PathBuf,
}

impl Registry {
    /// The host as a client reaching it at `ip` names it (`ip:<port>`), for registries started
    /// with [`Registries::start_also_at`].
    pub fn host_at(&self, ip: IpAddr) -> String {
        let port = self.host.rsplit(':').next().unwrap_or_default();
        format!("{ip}:{port}")
    }

    /// Stops the registry (to simulate an outage).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn log_tail(&self) -> String {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// One plain-HTTP registry on loopback (no TLS, no auth) with its storage and log under `dir`,
/// for a harness that needs no other (the scale bench's `OGXServer`s).
pub fn start_plain(dir: &Path, name: &str) -> Result<Registry, Error> {
    start_registry(dir, name, "127.0.0.1", "", "")
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// All registries of a test run.
pub struct Registries {
    pub dir: TempDir,
    /// htpasswd + TLS.
    pub basic: Registry,
    /// Token auth + TLS.
    pub token: Registry,
    /// Plain HTTP, no auth.
    pub plain: Registry,
    token_server: Child,
    /// Port of the token server.
    pub token_port: u16,
}

impl Drop for Registries {
    fn drop(&mut self) {
        let _ = self.token_server.kill();
        let _ = self.token_server.wait();
    }
}

fn wait_port(port: u16, what: &str, deadline: Instant) -> Result<(), Error> {
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err(format!("{what} did not listen on 127.0.0.1:{port}").into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

fn pki(dir: &Path, also_at: Option<IpAddr>) -> Result<(), Error> {
    let ca = TestCa::new("llso-registry-test-ca")?;
    let mut ips: Vec<IpAddr> = vec![[127, 0, 0, 1].into()];
    ips.extend(also_at);
    let server = ca.server(&["localhost"], &ips, None)?;
    fs::create_dir_all(dir.join("cadir"))?;
    fs::write(dir.join("cadir/ca.crt"), &ca.pem)?;
    fs::write(dir.join("ca.pem"), &ca.pem)?;
    fs::write(dir.join("server.crt"), server.cert)?;
    fs::write(dir.join("server.key"), server.key)?;
    Ok(())
}

fn start_registry(
    dir: &Path,
    name: &str,
    listen: &str,
    http: &str,
    auth: &str,
) -> Result<Registry, Error> {
    let port = free_port()?;
    let config = format!(
        "version: 0.1\nlog: {{level: warn}}\nstorage:\n  filesystem: {{rootdirectory: {root}}}\n  delete: {{enabled: true}}\nhttp:\n  addr: {listen}:{port}\n  secret: llso-test-only\n{http}{auth}",
        root = dir.join(format!("data-{name}")).display(),
    );
    let config_path = dir.join(format!("{name}.yml"));
    fs::write(&config_path, config)?;
    let log = dir.join(format!("{name}.log"));
    let child = spawn(
        Command::new("docker-registry")
            .arg("serve")
            .arg(&config_path),
        &log,
    )?;
    let registry = Registry {
        host: format!("127.0.0.1:{port}"),
        child,
        log,
    };
    wait_port(port, name, Instant::now() + Duration::from_secs(20))
        .map_err(|e| format!("{e}\n{}", registry.log_tail()))?;
    Ok(registry)
}

impl Registries {
    /// Starts the token server and the three registries.
    pub fn start() -> Result<Self, Error> {
        Self::start_also_at(None)
    }

    /// [`Registries::start`], the registries also answering at `also_at` when given: they listen
    /// on every address of the test's (sealed) namespace, and their certificate names it. For
    /// clients in Pods of a real node, which reach the host only at the node's address. (Over 80
    /// lines: the certificate, the htpasswd file, the token server and three registries, started
    /// in order as one script.)
    pub fn start_also_at(also_at: Option<IpAddr>) -> Result<Self, Error> {
        let dir = tempfile::Builder::new()
            .prefix("llso-registries-")
            .tempdir()?;
        let d = dir.path();
        pki(d, also_at)?;
        let listen = if also_at.is_some() {
            "0.0.0.0"
        } else {
            "127.0.0.1"
        };
        let tls = format!(
            "  tls: {{certificate: {}, key: {}}}\n",
            d.join("server.crt").display(),
            d.join("server.key").display()
        );
        let htpasswd = Command::new("htpasswd")
            .args(["-Bbn", USER, PASSWORD])
            .output()
            .map_err(|e| format!("cannot run htpasswd: {e} (apache2-utils)"))?;
        if !htpasswd.status.success() {
            return Err("htpasswd failed".into());
        }
        fs::write(d.join("htpasswd"), htpasswd.stdout)?;

        // Embedded, so any crate that includes this module finds it.
        let script = d.join("token_server.py");
        fs::write(&script, include_str!("token_server.py"))?;
        let port_file = d.join("token.port");
        let token_server = spawn(
            Command::new("python3")
                .arg(script)
                .args(["--user", USER, "--password", PASSWORD])
                .arg("--signer-cert")
                .arg(d.join("signer.crt"))
                .arg("--tls-cert")
                .arg(d.join("server.crt"))
                .arg("--tls-key")
                .arg(d.join("server.key"))
                .arg("--port-file")
                .arg(&port_file),
            &d.join("token-server.log"),
        )?;
        let deadline = Instant::now() + Duration::from_secs(30);
        let token_port: u16 = loop {
            if let Ok(text) = fs::read_to_string(&port_file) {
                break text.trim().parse()?;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "token server did not start: {}",
                    fs::read_to_string(d.join("token-server.log")).unwrap_or_default()
                )
                .into());
            }
            std::thread::sleep(Duration::from_millis(50));
        };

        let basic = start_registry(
            d,
            "basic",
            listen,
            &tls,
            &format!(
                "auth:\n  htpasswd: {{realm: llso-test, path: {}}}\n",
                d.join("htpasswd").display()
            ),
        )?;
        let token = start_registry(
            d,
            "token",
            listen,
            &tls,
            &format!(
                "auth:\n  token: {{realm: \"https://127.0.0.1:{token_port}/token\", service: llso-test-registry, issuer: llso-test-issuer, rootcertbundle: {}}}\n",
                d.join("signer.crt").display()
            ),
        )?;
        let plain = start_registry(d, "plain", listen, "", "")?;
        Ok(Self {
            dir,
            basic,
            token,
            plain,
            token_server,
            token_port,
        })
    }

    /// A further plain-HTTP registry the test owns (and may stop).
    pub fn start_extra_plain(&self, name: &str) -> Result<Registry, Error> {
        start_plain(self.dir.path(), name)
    }

    /// A further registry over TLS (the same certificate, so the same addresses) that anyone
    /// may pull from without credentials, as from a public repository: `listen_everywhere` as
    /// [`Registries::start_also_at`] was given an address.
    pub fn start_public(&self, name: &str, listen_everywhere: bool) -> Result<Registry, Error> {
        let d = self.dir.path();
        let tls = format!(
            "  tls: {{certificate: {}, key: {}}}\n",
            d.join("server.crt").display(),
            d.join("server.key").display()
        );
        let listen = if listen_everywhere {
            "0.0.0.0"
        } else {
            "127.0.0.1"
        };
        start_registry(d, name, listen, &tls, "")
    }

    /// PEM of the CA that signed the registries' and token server's certificates.
    pub fn ca_pem(&self) -> Vec<u8> {
        fs::read(self.dir.path().join("ca.pem")).unwrap_or_default()
    }

    /// Directory for skopeo's `--cert-dir`.
    pub fn cert_dir(&self) -> PathBuf {
        self.dir.path().join("cadir")
    }

    /// Token requests the token server answered (issued + denied).
    pub fn token_requests(&self) -> Result<u64, Error> {
        // The stats endpoint is plain JSON over TLS; skopeo-free, curl-free: use openssl? Keep
        // it simple and read it with python, which the token server needs anyway.
        let out = Command::new("python3")
            .arg("-c")
            .arg(format!(
                "import json,ssl,urllib.request;c=ssl.create_default_context(cafile='{}');print(json.load(urllib.request.urlopen('https://127.0.0.1:{}/stats',context=c))['requests'])",
                self.dir.path().join("ca.pem").display(),
                self.token_port
            ))
            .output()?;
        Ok(String::from_utf8(out.stdout)?.trim().parse()?)
    }
}
