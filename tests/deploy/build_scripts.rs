//! The build scripts' shared parts, run for real in bash with stand-ins for the system tools
//! they drive (a fake `apt-get` that behaves as dpkg's lock does).

use std::path::Path;
use std::process::Command;

/// An `apt-get` that refuses to run beside another one, as dpkg's lock makes the real one do
/// ("Could not get lock /var/lib/dpkg/lock-frontend"), and logs when each run starts and ends.
const FAKE_APT_GET: &str = r#"#!/usr/bin/env bash
dir=$(dirname "$0")
if ! mkdir "$dir/dpkg-lock" 2>/dev/null; then
  echo "E: Could not get lock $dir/dpkg-lock. It is held by another process" >&2
  exit 100
fi
echo "start $*" >>"$dir/log"
sleep 0.3
echo "end" >>"$dir/log"
rmdir "$dir/dpkg-lock"
"#;

fn executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// .ci/run builds the operator's image beside scripts/test.sh, and on a fresh machine both install
/// packages: three installs started at once all succeed, one after another.
#[test]
fn package_installs_started_at_once_take_turns() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    executable(&bin.join("apt-get"), FAKE_APT_GET);
    executable(&bin.join("sudo"), "#!/bin/sh\nexec \"$@\"\n");
    let helper = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/lib/apt-install.sh");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let installs: Vec<_> = ["musl-tools", "buildah", "qemu-user-static"]
        .iter()
        .map(|package| {
            Command::new("bash")
                .arg("-c")
                .arg(format!(
                    "set -euo pipefail; source '{}'; apt_install {package}",
                    helper.display()
                ))
                .env("PATH", &path)
                .env("TMPDIR", dir.path())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut install in installs {
        let status = install.wait().unwrap();
        assert!(
            status.success(),
            "an install failed beside another: {status}"
        );
    }
    let log = std::fs::read_to_string(bin.join("log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    // update then install for each of the three, never two at once.
    assert_eq!(lines.len(), 12, "{log}");
    for pair in lines.chunks(2) {
        assert!(
            pair[0].starts_with("start ") && pair[1] == "end",
            "runs overlapped:\n{log}"
        );
    }
    for package in ["musl-tools", "buildah", "qemu-user-static"] {
        assert!(
            log.contains(&format!("install -y -qq --no-install-recommends {package}")),
            "{log}"
        );
    }
}
