//! `main` of an integration test binary whose trials share one expensive environment (real
//! processes): start it once on the main thread (the processes are tied to that thread), run the
//! trials with libtest-mimic, optionally run one last check alone, and tear the environment down.
//! A failed start fails the binary: suites never skip.

use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

use libtest_mimic::{Arguments, Failed, Trial};

/// One trial over the shared environment.
pub type TestFn<E> = Box<dyn Fn(&E) -> Result<(), Failed> + Send + Sync>;

/// A named plain test function.
pub type NamedTest<E> = (&'static str, fn(&E) -> Result<(), Failed>);

/// Named trials from a table of plain functions.
pub fn table<E: 'static>(tests: &[NamedTest<E>]) -> Vec<(String, TestFn<E>)> {
    tests
        .iter()
        .map(|(name, test)| ((*name).to_owned(), Box::new(*test) as TestFn<E>))
        .collect()
}

/// A check that runs alone after every trial (e.g. one that stops part of the environment).
pub type LastCheck<E> = NamedTest<E>;

/// Runs the suite; `what` names the environment in the start-up error.
pub fn run_suite<E: Send + Sync + 'static>(
    tests: Vec<(String, TestFn<E>)>,
    what: &str,
    start: impl FnOnce() -> Result<E, String>,
    last: Option<LastCheck<E>>,
) -> ExitCode {
    let args = Arguments::from_args();
    let env: Arc<OnceLock<E>> = Arc::new(OnceLock::new());
    let trials: Vec<Trial> = tests
        .into_iter()
        .map(|(name, test)| {
            let env = env.clone();
            Trial::test(name, move || {
                test(env.get().ok_or("the test environment did not start")?)
            })
        })
        .collect();
    let selected = trials
        .iter()
        .any(|t| args.filter.as_deref().is_none_or(|f| t.name().contains(f)));
    if args.list || !selected {
        return libtest_mimic::run(&args, trials).exit_code();
    }
    match start() {
        Ok(e) => {
            let _ = env.set(e);
        }
        Err(err) => {
            eprintln!("error: cannot start {what}: {err}");
            return ExitCode::FAILURE;
        }
    }
    let conclusion = libtest_mimic::run(&args, trials);
    let last_ok = match (last, env.get()) {
        (Some((name, check)), Some(e)) => match check(e) {
            Ok(()) => {
                eprintln!("test {name} ... ok");
                true
            }
            Err(failure) => {
                eprintln!(
                    "test {name} ... FAILED: {}",
                    failure.message().unwrap_or_default()
                );
                false
            }
        },
        _ => true,
    };
    drop(Arc::try_unwrap(env).ok().and_then(OnceLock::into_inner));
    if conclusion.has_failed() || !last_ok {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
