//! A real PostgreSQL server for a test: Debian's `postgresql` package (installed by
//! `scripts/install-test-deps.sh`), a new cluster in the test's directory, run as the package's
//! `postgres` user (the server refuses root), listening on 127.0.0.1 and a socket of its own.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::process::{Error, free_port, spawn_tied, stop};

/// A running PostgreSQL server; stopped when dropped.
pub struct Postgres {
    child: Child,
    /// Its TCP port on 127.0.0.1.
    pub port: u16,
    socket_dir: PathBuf,
    bin: PathBuf,
    log: PathBuf,
}

impl Postgres {
    /// Makes a cluster under `dir` (local connections trusted, TCP ones by password) and starts
    /// it on 127.0.0.1; returns once it accepts connections.
    pub fn start(dir: &Path) -> Result<Self, Error> {
        Self::start_on(dir, "127.0.0.1", None)
    }

    /// As [`start`](Self::start), listening on `address` (an address of this network
    /// namespace, such as the real node's Pod bridge), and taking connections by password from
    /// the `clients` subnet as well as from loopback.
    pub fn start_on(dir: &Path, address: &str, clients: Option<&str>) -> Result<Self, Error> {
        let bin = bin_dir()?;
        let (uid, gid) = postgres_user()?;
        let root = dir.join("postgres");
        let data = root.join("data");
        let socket_dir = root.join("socket");
        for d in [&root, &socket_dir] {
            fs::create_dir_all(d)?;
            std::os::unix::fs::chown(d, Some(uid), Some(gid))?;
        }
        // The server's user walks down to its directories.
        fs::set_permissions(dir, fs::Permissions::from_mode(0o755))?;
        let init = Command::new(bin.join("initdb"))
            .args([
                "-D",
                &data.display().to_string(),
                "-U",
                "postgres",
                "-E",
                "UTF8",
            ])
            .args(["--auth-local=trust", "--auth-host=scram-sha-256"])
            .uid(uid)
            .gid(gid)
            .output()?;
        if !init.status.success() {
            return Err(format!(
                "initdb failed: {}{}",
                String::from_utf8_lossy(&init.stdout),
                String::from_utf8_lossy(&init.stderr)
            )
            .into());
        }
        if let Some(subnet) = clients {
            let hba = data.join("pg_hba.conf");
            let mut rules = fs::read_to_string(&hba)?;
            rules.push_str(&format!("host all all {subnet} scram-sha-256\n"));
            fs::write(&hba, rules)?;
        }
        let port = free_port()?;
        let log = root.join("postgres.log");
        let mut cmd = Command::new(bin.join("postgres"));
        cmd.args(["-D", &data.display().to_string()])
            .args(["-k", &socket_dir.display().to_string()])
            .args(["-p", &port.to_string()])
            .args(["-c", &format!("listen_addresses={address}")])
            .uid(uid)
            .gid(gid);
        let child = spawn_tied(&mut cmd, &log)?;
        let mut server = Postgres {
            child,
            port,
            socket_dir,
            bin,
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while server.sql("postgres", "SELECT 1").is_err() {
            if let Some(status) = server.child.try_wait()? {
                return Err(format!("postgres exited ({status}):\n{}", server.log_tail()).into());
            }
            if Instant::now() > deadline {
                return Err(format!("postgres not ready in 30 s:\n{}", server.log_tail()).into());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(server)
    }

    /// Runs `sql` in `database` as the superuser over the socket; the rows, one per line,
    /// columns separated by `|`.
    pub fn sql(&self, database: &str, sql: &str) -> Result<String, Error> {
        let out = Command::new(self.bin.join("psql"))
            .args(["-h", &self.socket_dir.display().to_string()])
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-d",
                database,
            ])
            .args(["-v", "ON_ERROR_STOP=1", "-Atc", sql])
            .output()?;
        if !out.status.success() {
            return Err(format!("psql: {}", String::from_utf8_lossy(&out.stderr)).into());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // SIGINT: PostgreSQL's fast shutdown.
        stop(&mut self.child, libc::SIGINT, Duration::from_secs(10));
    }
}

/// The newest `/usr/lib/postgresql/<version>/bin`.
fn bin_dir() -> Result<PathBuf, Error> {
    let mut found: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .map_err(|e| {
            format!("/usr/lib/postgresql: {e} (scripts/install-test-deps.sh installs postgresql)")
        })?
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, bin)| bin)
        .ok_or_else(|| "no /usr/lib/postgresql/<version>/bin/initdb".into())
}

/// The uid and gid of the package's `postgres` user.
fn postgres_user() -> Result<(u32, u32), Error> {
    let passwd = fs::read_to_string("/etc/passwd")?;
    passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(&"postgres") && fields.len() > 3)
                .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
                .flatten()
        })
        .ok_or_else(|| "no postgres user in /etc/passwd (the postgresql package makes it)".into())
}
