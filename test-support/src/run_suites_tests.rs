//! The suite runner (`scripts/lib/run-suites.py`): suites run two at once, two suites of one group
//! (the real servers; the control-plane restarts) never, every suite runs although one fails, the
//! summary and exit status say which, and each suite starts once the stage of the preparation it
//! needs is ready. `cargo` is a stand-in that lists the suites (by the names the runner's tables
//! use), records when each runs, and fails one.

use std::process::Command;

use crate::workspace_root;

/// A `cargo` that answers `metadata`, lists suites for `test --no-run`, and runs a suite for
/// `test --workspace ... --test NAME` (or `--lib`): one second long, recorded in
/// `$STANDIN_CARGO_LOG` as `NAME START END MARK` (MARK: `$LLSO_PREPARED_MARK`, or `-`), failing
/// for the suite `broken` and for any suite not run over the whole workspace.
const STANDIN_CARGO: &str = r#"#!/bin/sh
set -e
if [ "$1" = metadata ]; then
  echo '{"packages":[{"id":"path+file:///w#pkg@0.1.0","name":"pkg"}]}'
  exit 0
fi
case " $* " in
  *" --no-run "*)
    echo 'Compiling noise'
    for kind_name in lib:pkg test:faults test:broken test:quick test:other test:node test:newcomer test:llama_stack_server bench:dashboard; do
      kind=${kind_name%%:*}; name=${kind_name#*:}
      echo "{\"reason\":\"compiler-artifact\",\"package_id\":\"path+file:///w#pkg@0.1.0\",\"target\":{\"kind\":[\"$kind\"],\"name\":\"$name\"},\"profile\":{\"test\":true},\"executable\":\"/w/$name\"}"
    done
    # The plain binary integration tests use is not a suite.
    echo '{"reason":"compiler-artifact","package_id":"path+file:///w#pkg@0.1.0","target":{"kind":["bin"],"name":"tool"},"profile":{"test":false},"executable":"/w/tool"}'
    exit 0 ;;
esac
# A suite chosen by package would rebuild its dependencies with other features.
case " $* " in *" --workspace "*) ;; *) echo "not --workspace: $*"; exit 2 ;; esac
case " $* " in *" -p "*) echo "one package: $*"; exit 2 ;; esac
name=pkg; prev=
for a; do case "$prev" in --test | --bench) name=$a ;; esac; prev=$a; done
start=$(date +%s.%N)
echo "running $name"
sleep 1
echo "$name $start $(date +%s.%N) ${LLSO_PREPARED_MARK:--}" >>"$STANDIN_CARGO_LOG"
if [ "$name" = broken ]; then
  echo "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.00s"
  exit 101
fi
echo "test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.00s"
"#;

struct Run {
    stdout: String,
    stderr: String,
    success: bool,
    /// (suite, start, end) in seconds.
    spans: Vec<(String, f64, f64)>,
    /// Each suite's `LLSO_PREPARED_MARK`, `-` when it had none.
    marks: Vec<(String, String)>,
    /// When each stage's ready file was written (seconds, as the spans).
    ready_at: Vec<(String, f64)>,
}

fn run_suites(lanes: &str) -> Run {
    run_suites_preparing(lanes, &[])
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Runs the runner over the stand-in; with `stages`, as `scripts/test.sh` does while it prepares:
/// each stage's ready file (with `LLSO_PREPARED_MARK=<stage>`) is written that long after the
/// start (in the order given).
fn run_suites_preparing(lanes: &str, stages: &[(&str, std::time::Duration)]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let cargo = bin.join("cargo");
    std::fs::write(&cargo, STANDIN_CARGO).unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&cargo)
        .status()
        .unwrap();
    let log = dir.path().join("cargo.log");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new(workspace_root().join("scripts/lib/run-suites.py"));
    command
        .args(["--lanes", lanes, "--log-dir"])
        .arg(dir.path().join("logs"));
    for (stage, _) in stages {
        command
            .arg("--ready")
            .arg(format!("{stage}={}", dir.path().join(stage).display()));
    }
    let started = std::time::Instant::now();
    let child = command
        .args(["--workspace", "--all-targets"])
        .env("PATH", path)
        .env("STANDIN_CARGO_LOG", &log)
        .env_remove("LLSO_PREPARED_MARK")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ready_at = stages
        .iter()
        .map(|(stage, after)| {
            std::thread::sleep(after.saturating_sub(started.elapsed()));
            let partial = dir.path().join(format!("{stage}.partial"));
            std::fs::write(
                &partial,
                format!("# what the preparation found\nLLSO_PREPARED_MARK={stage}\n"),
            )
            .unwrap();
            // Taken before the rename: a suite may start the moment the file appears.
            let at = now();
            std::fs::rename(&partial, dir.path().join(stage)).unwrap();
            ((*stage).to_owned(), at)
        })
        .collect();
    let output = child.wait_with_output().unwrap();
    let words: Vec<Vec<String>> = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(|line| line.split(' ').map(str::to_owned).collect())
        .collect();
    Run {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        success: output.status.success(),
        spans: (words.iter())
            .map(|w| (w[0].clone(), w[1].parse().unwrap(), w[2].parse().unwrap()))
            .collect(),
        marks: words.iter().map(|w| (w[0].clone(), w[3].clone())).collect(),
        ready_at,
    }
}

fn overlap(a: &(String, f64, f64), b: &(String, f64, f64)) -> bool {
    a.1 < b.2 && b.1 < a.2
}

fn span<'a>(run: &'a Run, suite: &str) -> &'a (String, f64, f64) {
    (run.spans.iter().find(|s| s.0 == suite))
        .unwrap_or_else(|| panic!("{suite} did not run: {:?}", run.spans))
}

#[test]
fn suites_run_two_at_once_apart_from_those_of_one_group_and_all_despite_a_failure() {
    let run = run_suites("2");
    let mut ran: Vec<&str> = run.spans.iter().map(|s| s.0.as_str()).collect();
    ran.sort_unstable();
    assert_eq!(
        ran,
        [
            "broken",
            "dashboard",
            "faults",
            "llama_stack_server",
            "newcomer",
            "node",
            "other",
            "pkg",
            "quick"
        ],
        "{}",
        run.stdout
    );

    let real_servers = ["node", "newcomer", "llama_stack_server"];
    for (i, a) in real_servers.iter().enumerate() {
        for b in &real_servers[i + 1..] {
            assert!(
                !overlap(span(&run, a), span(&run, b)),
                "{a} and {b} (real servers) ran at once: {:?}",
                run.spans
            );
        }
    }
    assert!(
        !overlap(span(&run, "faults"), span(&run, "dashboard")),
        "two control-plane restarts at once: {:?}",
        run.spans
    );
    // The restarts no longer keep the machine to themselves.
    let faults = span(&run, "faults");
    assert!(
        (run.spans.iter()).any(|other| other.0 != "faults" && overlap(faults, other)),
        "faults ran alone: {:?}",
        run.spans
    );

    assert!(!run.success, "a failed suite must fail the run");
    let line = |suite: &str| {
        run.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(suite))
            .unwrap_or_else(|| panic!("no summary line for {suite}:\n{}", run.stdout))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        line("pkg tests/broken")[2..7],
        ["FAILED", "2", "passed", "1", "failed"]
    );
    assert_eq!(
        line("pkg tests/quick")[2..7],
        ["ok", "3", "passed", "0", "failed"]
    );
    assert_eq!(
        line("pkg benches/dashboard")[2..7],
        ["ok", "3", "passed", "0", "failed"]
    );
    assert_eq!(
        line("unit tests (every package)")[4..9],
        ["ok", "3", "passed", "0", "failed"]
    );
    assert!(run.stdout.contains("9 suites, 1 failed"), "{}", run.stdout);
}

#[test]
fn each_suites_output_is_printed_whole() {
    let run = run_suites("2");
    for suite in ["faults", "broken", "quick", "other"] {
        let header = format!("===== pkg tests/{suite} (exit");
        let block = run
            .stdout
            .split("\n===== ")
            .find(|b| format!("===== {b}").starts_with(&header))
            .unwrap_or_else(|| panic!("no block for {suite}:\n{}", run.stdout));
        assert!(block.contains(&format!("running {suite}\n")), "{block}");
        assert!(block.contains("test result:"), "{block}");
        let runs = block.lines().filter(|l| l.starts_with("running ")).count();
        assert_eq!(runs, 1, "{block}");
    }
}

#[test]
fn one_lane_runs_the_suites_one_after_another() {
    let run = run_suites("1");
    assert_eq!(run.spans.len(), 9, "{}", run.stdout);
    for (i, a) in run.spans.iter().enumerate() {
        for b in &run.spans[i + 1..] {
            assert!(!overlap(a, b), "{} and {} overlapped", a.0, b.0);
        }
    }
}

/// While the preparation runs, the suites that need nothing more (the unit tests and the faults
/// here) start at once; the real-server suite once the server venvs are ready, before the images;
/// the others once the images are; each runs with what its stage found.
#[test]
fn each_suite_starts_once_its_stage_is_prepared_with_what_it_found() {
    let run = run_suites_preparing(
        "2",
        &[
            ("venvs", std::time::Duration::from_secs(3)),
            ("servers", std::time::Duration::from_secs(3)),
            ("images", std::time::Duration::from_secs(8)),
        ],
    );
    let at = |stage: &str| run.ready_at.iter().find(|r| r.0 == stage).unwrap().1;
    let (servers_at, images_at) = (at("servers"), at("images"));
    assert_eq!(run.spans.len(), 9, "{}", run.stdout);
    for (suite, start, _) in &run.spans {
        let mark = &run.marks.iter().find(|m| &m.0 == suite).unwrap().1;
        match suite.as_str() {
            "pkg" | "faults" => {
                assert!(*start < servers_at, "{suite} waited: {:?}", run.spans);
                assert_eq!(mark, "-", "{suite} started before anything was found");
            }
            "llama_stack_server" => {
                assert!(
                    servers_at <= *start && *start < images_at,
                    "{suite} did not start between its stage ({servers_at}) and the images \
                     ({images_at}): {:?}",
                    run.spans
                );
                assert_eq!(mark, "servers", "{suite} ran without what its stage found");
            }
            _ => {
                assert!(
                    *start >= images_at,
                    "{suite} started before it was prepared: {:?}",
                    run.spans
                );
                assert_eq!(mark, "images", "{suite} ran without what was found");
            }
        }
    }
    assert!(run.stdout.contains("9 suites, 1 failed"), "{}", run.stdout);
}

/// A selected suite waiting for a stage that no `--ready` names would wait forever: refused.
#[test]
fn a_stage_no_ready_file_names_is_refused() {
    let run = run_suites_preparing("2", &[("images", std::time::Duration::ZERO)]);
    assert!(!run.success, "{}", run.stdout);
    assert!(
        run.stderr.contains("no --ready names the stage servers"),
        "{}",
        run.stderr
    );
    assert!(run.spans.is_empty(), "suites ran: {:?}", run.spans);
}
