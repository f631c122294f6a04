//! Integration tests against a real kube-apiserver + etcd: the CRD installs, the samples are
//! accepted, every schema and CEL rule rejects what it should with its message, defaults are
//! applied, and every polymorphic form survives a round trip unchanged.
//!
//! One control plane serves all tests (each in its own namespace); it is started before the
//! first test and stopped after the last, also when tests fail.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use llama_stack_test_support as support;

llama_stack_test_support::seal_network!();

mod cases;
mod fixtures;
mod ogx;
mod roundtrip;

use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

use libtest_mimic::{Arguments, Failed, Trial};
use support::control_plane::ControlPlane;

/// What every test gets.
pub struct Ctx {
    pub plane: ControlPlane,
    pub client: kube::Client,
    pub rt: tokio::runtime::Runtime,
}

type SharedCtx = Arc<OnceLock<Ctx>>;
type TestFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Failed>> + Send + 'a>>;
type AsyncTest = for<'a> fn(&'a Ctx) -> TestFuture<'a>;
type AsyncCaseTest<C> = for<'a> fn(&'a Ctx, &'a C) -> TestFuture<'a>;

fn trial(ctx: &SharedCtx, name: String, test: AsyncTest) -> Trial {
    let ctx = ctx.clone();
    Trial::test(name, move || {
        let ctx = ctx.get().ok_or("control plane not started")?;
        ctx.rt.block_on(test(ctx))
    })
}

/// A trial for one entry of a table of cases.
fn case_trial<C: Send + Sync + 'static>(
    ctx: &SharedCtx,
    name: String,
    case: C,
    test: AsyncCaseTest<C>,
) -> Trial {
    let ctx = ctx.clone();
    Trial::test(name, move || {
        let ctx = ctx.get().ok_or("control plane not started")?;
        ctx.rt.block_on(test(ctx, &case))
    })
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let shared: SharedCtx = Arc::new(OnceLock::new());

    let mut trials = Vec::new();
    for (name, test) in roundtrip::TESTS {
        trials.push(trial(&shared, (*name).to_owned(), *test));
    }
    for case in cases::validation_cases() {
        let name = format!("rejects::{}", case.name);
        trials.push(case_trial(&shared, name, case, |ctx, case| {
            Box::pin(cases::run_validation_case(ctx, case))
        }));
    }
    for sample in fixtures::samples() {
        let name = format!(
            "sample_is_accepted::{}",
            sample
                .path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
        );
        trials.push(case_trial(&shared, name, sample, |ctx, sample| {
            Box::pin(roundtrip::sample_is_accepted(ctx, sample))
        }));
    }
    for (name, sample) in ogx::samples() {
        trials.push(case_trial(
            &shared,
            format!("ogx_sample_is_accepted::{name}"),
            sample,
            |ctx, sample| Box::pin(ogx::sample_is_accepted(ctx, sample)),
        ));
    }
    trials.push(trial(
        &shared,
        "ogx_offline_validation_agrees_with_the_api_server".to_owned(),
        |ctx| Box::pin(ogx::offline_validation_agrees_with_the_api_server(ctx)),
    ));
    trials.push(trial(
        &shared,
        "ogx_the_ogx_operators_crd_is_refused_for_its_rule_cost".to_owned(),
        |ctx| Box::pin(ogx::the_ogx_operators_crd_is_refused_for_its_rule_cost(ctx)),
    ));
    for case in ogx::refused() {
        let name = format!("ogx_rejects::{}", case.name);
        trials.push(case_trial(&shared, name, case, |ctx, case| {
            Box::pin(ogx::is_refused(ctx, case))
        }));
    }
    for case in roundtrip::polymorphic_cases() {
        let name = format!("polymorphic_round_trip::{}", case.name);
        trials.push(case_trial(&shared, name, case, |ctx, case| {
            Box::pin(roundtrip::polymorphic_round_trip(ctx, case))
        }));
    }

    let selected = trials
        .iter()
        .any(|t| args.filter.as_deref().is_none_or(|f| t.name().contains(f)));
    if !args.list && selected {
        match start() {
            Ok(ctx) => {
                eprintln!(
                    "control plane ready at {} in {:.1?}",
                    ctx.plane.url, ctx.plane.start_time
                );
                let _ = shared.set(ctx);
            }
            Err(err) => {
                eprintln!("error: cannot start the test control plane: {err}");
                return ExitCode::FAILURE;
            }
        }
    }
    let conclusion = libtest_mimic::run(&args, trials);
    // Stop the control plane before exiting (statics are never dropped).
    drop(Arc::try_unwrap(shared).ok().and_then(OnceLock::into_inner));
    conclusion.exit_code()
}

fn start() -> Result<Ctx, support::control_plane::Error> {
    let plane = ControlPlane::start()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let client = rt.block_on(plane.client())?;
    rt.block_on(fixtures::install_crds(&client))?;
    Ok(Ctx { plane, client, rt })
}
