//! The real cosign for signing fixtures, in both forms it writes: simple signing at
//! `sha256-<hex>.sig` (cosign 2's default, and cosign 3's with `--new-bundle-format=false`) and a
//! sigstore bundle as an OCI referrer (cosign 3's default). One build, cosign 3.1, from Go modules
//! by `scripts/build-cosign.sh`, cached; two key pairs (`trusted`, `other`) with empty passwords;
//! no transparency log or timestamp authority, so that signing stays on the machine.

use std::path::PathBuf;
use std::process::Command;

use base64::Engine;

use crate::process::run_script;

/// The cosign release the tests sign with.
pub const COSIGN: &str = "v3.1.3";

/// cosign, the key pairs and cosign's registry settings.
pub struct Cosign {
    cosign: PathBuf,
    /// Holds `trusted/` and `other/` (cosign.key, cosign.pub), `docker/config.json`, `ca.pem`.
    pub dir: tempfile::TempDir,
}

fn build(version: &str) -> Result<PathBuf, String> {
    let script = crate::workspace_root().join("scripts/build-cosign.sh");
    run_script(&script, &[version.to_owned()], &[]).map_err(|e| e.to_string())
}

fn io(e: std::io::Error) -> String {
    e.to_string()
}

impl Cosign {
    /// Builds (or finds) cosign and makes the key pairs; `registry` with `user:password`
    /// is where signatures are pushed, over TLS trusting `ca_pem`.
    pub fn start(
        registry: &str,
        user: &str,
        password: &str,
        ca_pem: &[u8],
    ) -> Result<Self, String> {
        let dir = tempfile::Builder::new()
            .prefix("llso-cosign-")
            .tempdir()
            .map_err(io)?;
        let cosign = Self {
            cosign: build(COSIGN)?,
            dir,
        };
        for name in ["trusted", "other"] {
            let keys = cosign.dir.path().join(name);
            std::fs::create_dir_all(&keys).map_err(io)?;
            let out = Command::new(&cosign.cosign)
                .arg("generate-key-pair")
                .current_dir(&keys)
                .env("COSIGN_PASSWORD", "")
                .output()
                .map_err(io)?;
            if !out.status.success() {
                return Err(format!(
                    "cosign generate-key-pair: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
        let docker = cosign.dir.path().join("docker");
        std::fs::create_dir_all(&docker).map_err(io)?;
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        let config = serde_json::json!({"auths": {registry: {"auth": auth}}});
        std::fs::write(docker.join("config.json"), config.to_string()).map_err(io)?;
        std::fs::write(cosign.dir.path().join("ca.pem"), ca_pem).map_err(io)?;
        // No Rekor, no timestamp authority: a signing config with no service in it.
        std::fs::write(
            cosign.dir.path().join("signing-config.json"),
            r#"{"mediaType":"application/vnd.dev.sigstore.signingconfig.v0.2+json"}"#,
        )
        .map_err(io)?;
        Ok(cosign)
    }

    /// The public key file of a pair (`trusted` or `other`).
    pub fn public_key(&self, pair: &str) -> PathBuf {
        self.dir.path().join(pair).join("cosign.pub")
    }

    /// `cosign sign` of `image` (by digest) with a key pair: a sigstore `bundle` (cosign 3's
    /// default), or simple signing (what cosign 2 writes by default). `signatures_in`: cosign's
    /// `COSIGN_REPOSITORY`; `plain_http`: the registry is reached over HTTP.
    pub fn sign(
        &self,
        bundle: bool,
        pair: &str,
        image: &str,
        signatures_in: Option<&str>,
        plain_http: bool,
    ) -> Result<(), String> {
        let key_file = self.dir.path().join(pair).join("cosign.key");
        let mut command = Command::new(&self.cosign);
        command
            .args(["sign", "--yes", "--key"])
            .arg(&key_file)
            .env("COSIGN_PASSWORD", "")
            .env("DOCKER_CONFIG", self.dir.path().join("docker"))
            .env("SSL_CERT_FILE", self.dir.path().join("ca.pem"))
            .env_remove("COSIGN_REPOSITORY");
        if bundle {
            command
                .arg("--signing-config")
                .arg(self.dir.path().join("signing-config.json"));
        } else {
            command.args([
                "--new-bundle-format=false",
                "--use-signing-config=false",
                "--tlog-upload=false",
            ]);
        }
        if plain_http {
            command.arg("--allow-http-registry");
        }
        if let Some(repository) = signatures_in {
            command.env("COSIGN_REPOSITORY", repository);
        }
        let out = command.arg(image).output().map_err(io)?;
        if !out.status.success() {
            return Err(format!(
                "cosign sign {image}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }
}
