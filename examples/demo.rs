//! `scripts/demo.sh`: brings up a local control plane (etcd + kube-apiserver built from Go
//! modules), installs the CRD from `crds/`, applies the v1alpha2 samples from
//! `deploy/samples/`, runs the operator's controller on the embedded distribution configs, and
//! shows what it did: `kubectl get llsd`, the objects it created, and one generated config.
//! (The control plane has no scheduler or kubelet, so no Pod starts: stacks stay Initializing.)
//!
//! `--keep` leaves the control plane running until Ctrl-C and prints a KUBECONFIG to use.

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::process::{Command, ExitCode};

use support::control_plane::{ControlPlane, Error, committed_crd, install_crd};

fn run(cmd: &mut Command) -> Result<(), Error> {
    let status = cmd.status()?;
    if !status.success() {
        return Err(format!("{cmd:?} failed: {status}").into());
    }
    Ok(())
}

fn main() -> ExitCode {
    let keep = std::env::args().any(|a| a == "--keep");
    match demo(keep) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

fn demo(keep: bool) -> Result<(), Error> {
    println!("==> starting etcd + kube-apiserver on loopback");
    let plane = ControlPlane::start()?;
    println!("    ready at {} in {:.1?}", plane.url, plane.start_time);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let client = plane.client().await?;
        println!("==> installing crds/llamastackdistributions.llamastack.io.yaml");
        install_crd(&client, &committed_crd()?).await
    })?;

    run(plane.kubectl().args(["create", "namespace", "demo"]))?;
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/samples");
    let mut names: Vec<_> = std::fs::read_dir(&samples)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("v1alpha2_"))
        })
        .collect();
    names.sort();
    println!(
        "==> applying {} v1alpha2 samples (server-side apply, strict field validation)",
        names.len()
    );
    for path in &names {
        run(plane
            .kubectl()
            .args(["apply", "--server-side", "-n", "demo", "-f"])
            .arg(path))?;
    }
    println!(
        "    (v1alpha1 samples need the conversion webhook, which `llama-stack-operator run` serves in a cluster)"
    );
    run(plane.kubectl().args([
        "-n",
        "demo",
        "create",
        "secret",
        "generic",
        "vllm-credentials",
        "--from-literal=token=demo-token",
    ]))?;
    println!(
        "==> running the controller (no registry is reachable here: names resolve to their embedded configs)"
    );
    rt.block_on(async {
        let client = plane.client().await?;
        let mut options =
            llama_stack_resolver::ResolverOptions::new(llama_stack_resolver::Catalog::embedded()?);
        options.timeout = std::time::Duration::from_secs(2);
        let resolver = std::sync::Arc::new(llama_stack_resolver::Resolver::new(options)?);
        let ctx = std::sync::Arc::new(llama_stack_operator::controller::Context::new(
            client, resolver,
        ));
        let controller = tokio::spawn(llama_stack_operator::controller::run(ctx));
        tokio::time::sleep(std::time::Duration::from_secs(8)).await;
        controller.abort();
        Ok::<(), Error>(())
    })?;
    println!("==> kubectl get llsd -n demo -o wide");
    run(plane
        .kubectl()
        .args(["get", "llsd", "-n", "demo", "-o", "wide"]))?;
    println!(
        "==> what it created (kubectl get deployments,services,configmaps -l app.kubernetes.io/managed-by=llama-stack-operator)"
    );
    run(plane.kubectl().args([
        "get",
        "deployments,services,configmaps",
        "-n",
        "demo",
        "-l",
        "app.kubernetes.io/managed-by=llama-stack-operator",
    ]))?;
    println!("==> conditions of us2-multiple-providers (its Secrets do not exist):");
    run(plane.kubectl().args(["get", "llsd", "us2-multiple-providers", "-n", "demo", "-o",
        "jsonpath={range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{\"\\n\"}{end}"]))?;
    println!("==> the generated config of us1-minimal-inference (first 25 lines):");
    let out = plane
        .kubectl()
        .args([
            "get",
            "llsd",
            "us1-minimal-inference",
            "-n",
            "demo",
            "-o",
            "jsonpath={.status.configGeneration.configMapName}",
        ])
        .output()?;
    let cm = String::from_utf8_lossy(&out.stdout).into_owned();
    let out = plane
        .kubectl()
        .args([
            "get",
            "configmap",
            &cm,
            "-n",
            "demo",
            "-o",
            "jsonpath={.data.config\\.yaml}",
        ])
        .output()?;
    for line in String::from_utf8_lossy(&out.stdout).lines().take(25) {
        println!("    {line}");
    }
    println!("==> an invalid object is refused by the API server with the field and the fix");
    let bad = plane
        .kubectl()
        .args(["apply", "--server-side", "-n", "demo", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            if let Some(mut stdin) = child.stdin.take() {
                stdin.write_all(
                    b"apiVersion: llamastack.io/v1alpha2\nkind: LlamaStackDistribution\nmetadata: {name: broken}\nspec:\n  distribution: {name: starter}\n  overrideConfig: {configMapName: cm}\n  providers: {inference: {provider: vllm}}\n  storage: {kv: {type: redis}}\n",
                )?;
            }
            child.wait_with_output()
        })?;
    print!("{}", String::from_utf8_lossy(&bad.stderr));

    if keep {
        println!(
            "==> control plane left running; in another shell:\n    export KUBECONFIG={}\n    {}/kubectl get llsd -A\n    Ctrl-C here stops it.",
            plane.kubeconfig.display(),
            support::control_plane::control_plane_bin()?.display()
        );
        rt.block_on(tokio::signal::ctrl_c())?;
    }
    println!("==> stopping the control plane");
    drop(plane);
    Ok(())
}
