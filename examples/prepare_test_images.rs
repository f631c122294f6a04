//! Builds (or finds cached) the images the real-node suites run, before any suite starts, so no
//! test builds one in its critical path: the distribution images (llama-stack 0.7.3 and OGX)
//! for the node suite's stacks (and OGX with `ogx migrate praxis` for its migration Job), OGX's whole starter image for the OGX operator's e2e suite, the
//! example providers' images and the Pod sandbox. `scripts/test.sh` runs it after compiling the
//! suites. Each build is `scripts/build-test-images.sh`, which is safe to run concurrently, so a
//! suite asking for the same image later finds it in the cache.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use std::process::ExitCode;

use llama_stack_test_support as support;

support::seal_network!();

fn prepare() -> Result<Vec<(&'static str, std::path::PathBuf)>, String> {
    // The largest image (mostly pip's downloads and the layer's compression) is built beside
    // the others.
    std::thread::scope(|scope| {
        let starter = scope.spawn(support::node_stack::ogx_starter_image);
        let mut images = prepare_the_rest()?;
        let starter = starter
            .join()
            .map_err(|_| "the OGX starter image's build panicked".to_owned())??;
        images.push(("ogx-starter", starter));
        Ok(images)
    })
}

fn prepare_the_rest() -> Result<Vec<(&'static str, std::path::PathBuf)>, String> {
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let distribution = support::node_stack::distribution_image(work.path())?;
    let (ogx_distribution, _) = support::node_stack::ogx_distribution_image(work.path())?;
    let ogx_praxis = support::node_stack::ogx_praxis_image(&ogx_distribution)?;
    let (provider, ogx_provider) = support::node_stack::provider_images()?;
    let plane_bin = support::control_plane::control_plane_bin().map_err(|e| e.to_string())?;
    let pause = support::node::build_image(&[
        "pause".to_owned(),
        plane_bin.join("pause").display().to_string(),
    ])
    .map_err(|e| e.to_string())?;
    Ok(vec![
        ("distribution", distribution),
        ("ogx-distribution", ogx_distribution),
        ("ogx-praxis", ogx_praxis),
        ("provider", provider),
        ("ogx-provider", ogx_provider),
        ("pause", pause),
    ])
}

fn main() -> ExitCode {
    match prepare() {
        Ok(images) => {
            for (name, layout) in images {
                println!("{name}: {}", layout.display());
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: preparing the test images: {err}");
            ExitCode::FAILURE
        }
    }
}
