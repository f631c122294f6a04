//! The build scripts' cache (`scripts/lib/cache-lock.sh`): two callers building one tool into an
//! empty cache at the same moment both succeed, agree on the result, and only one of them builds.
//! `go` is a stand-in that logs each build and writes its output slowly, in two steps, so that an
//! unlocked second build overlaps the first.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::workspace_root;

/// A `go` that understands the three forms the scripts use (`install PKG@VERSION` into
/// `$GOBIN`, `build -o OUT .`, and `get`/`mod tidy`, which do nothing here), creates the output's
/// directory as go does, appends one line
/// to `$STANDIN_GO_LOG` per binary it writes, and takes a second to write it.
const STANDIN_GO: &str = r#"#!/bin/sh
set -e
case "$1" in
  install) for last; do :; done; pkg=${last%@*}; out="$GOBIN/${pkg##*/}" ;;
  build) out=; prev=; for a; do [ "$prev" = -o ] && out=$a; prev=$a; done ;;
  *) exit 0 ;;
esac
mkdir -p "$(dirname "$out")"
echo "$out" >>"$STANDIN_GO_LOG"
printf '#!/bin/sh\n' >"$out"
sleep 1
printf 'echo built by the stand-in\n' >>"$out"
chmod +x "$out"
"#;

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        let go = dir.path().join("bin/go");
        std::fs::write(&go, STANDIN_GO).unwrap();
        std::process::Command::new("chmod")
            .arg("+x")
            .arg(&go)
            .status()
            .unwrap();
        Sandbox { dir }
    }

    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    fn builds(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("go.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn command(&self, script: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(workspace_root().join("scripts").join(script));
        let path = format!(
            "{}:{}",
            self.dir.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        cmd.args(args)
            .env("PATH", path)
            .env("STANDIN_GO_LOG", self.dir.path().join("go.log"))
            .env("LLSO_GO_TOOLS_CACHE_DIR", self.cache())
            .env_remove("LLSO_CACHE_DIR");
        cmd
    }

    /// Starts the script twice at once and returns both outputs.
    fn twice_at_once(&self, script: &str, args: &[&str], env: &[(&str, &str)]) -> [Output; 2] {
        let spawn = || {
            let mut cmd = self.command(script, args);
            cmd.envs(env.iter().copied())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            cmd.spawn().unwrap()
        };
        let (first, second) = (spawn(), spawn());
        [
            first.wait_with_output().unwrap(),
            second.wait_with_output().unwrap(),
        ]
    }
}

fn printed_path(out: &Output, script: &str) -> PathBuf {
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout.clone()).unwrap().trim())
}

/// Both runs succeed and print the same binary, which is whole, inside the cache, and was built
/// once; no staging directory is left beside the entry.
fn assert_one_build(sandbox: &Sandbox, script: &str, outs: &[Output; 2]) {
    let (a, b) = (
        printed_path(&outs[0], script),
        printed_path(&outs[1], script),
    );
    assert_eq!(a, b, "{script}: the two runs disagree on the result");
    assert!(
        a.starts_with(sandbox.cache()),
        "{script}: {a:?} is outside the cache"
    );
    let ran = Command::new(&a).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout).trim(),
        "built by the stand-in",
        "{script}: the cached binary is not the whole build"
    );
    let builds = sandbox.builds();
    assert_eq!(
        builds.len(),
        1,
        "{script}: built {} times: {builds:?}",
        builds.len()
    );
    let entry_dir = a.parent().unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(entry_dir.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".staging."))
        .collect();
    assert!(
        leftovers.is_empty(),
        "{script}: staging left behind: {leftovers:?}"
    );
}

#[test]
fn two_go_installs_of_one_tool_at_once_build_it_once() {
    let sandbox = Sandbox::new();
    let outs = sandbox.twice_at_once(
        "go-install.sh",
        &["tool", "example.com/tool/cmd/tool", "v1.2.3"],
        &[],
    );
    assert_one_build(&sandbox, "go-install.sh", &outs);
    // A third run finds the entry and builds nothing.
    let again = sandbox
        .command(
            "go-install.sh",
            &["tool", "example.com/tool/cmd/tool", "v1.2.3"],
        )
        .output()
        .unwrap();
    assert_eq!(
        printed_path(&again, "go-install.sh"),
        printed_path(&outs[0], "go-install.sh")
    );
    assert_eq!(sandbox.builds().len(), 1);
}

#[test]
fn two_builds_of_one_go_test_tool_at_once_build_it_once() {
    let sandbox = Sandbox::new();
    let outs = sandbox.twice_at_once(
        "build-go-tool.sh",
        &[
            "kstatus-compute",
            "tests/kstatus/main.go",
            "example.com/lib",
            "v0.1.0",
            "lib",
        ],
        &[],
    );
    assert_one_build(&sandbox, "build-go-tool.sh", &outs);
}

#[test]
fn two_prometheus_builds_at_once_build_it_once() {
    let sandbox = Sandbox::new();
    let outs = sandbox.twice_at_once(
        "build-prometheus.sh",
        &[],
        &[("PROMETHEUS_VERSION", "v0.0.1")],
    );
    assert_one_build(&sandbox, "build-prometheus.sh", &outs);
}

/// A build that fails leaves no entry and no staging behind, and the next run builds afresh.
#[test]
fn a_failed_build_publishes_nothing() {
    let sandbox = Sandbox::new();
    let failing = sandbox.dir.path().join("failing");
    std::fs::create_dir(&failing).unwrap();
    std::fs::write(failing.join("go"), "#!/bin/sh\necho broken >&2\nexit 3\n").unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(failing.join("go"))
        .status()
        .unwrap();
    let args = ["tool", "example.com/tool/cmd/tool", "v9"];
    let mut broken = sandbox.command("go-install.sh", &args);
    let path = format!(
        "{}:{}",
        failing.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = broken.env("PATH", path).output().unwrap();
    assert!(!out.status.success(), "a failing go must fail the script");
    assert!(!sandbox.cache().join("tool/v9/tool").exists());
    let out = sandbox.command("go-install.sh", &args).output().unwrap();
    assert_eq!(
        printed_path(&out, "go-install.sh"),
        sandbox.cache().join("tool/v9/tool")
    );
    assert!(Path::new(&sandbox.cache().join("tool/v9/tool")).is_file());
}
