//! A real Kubernetes control plane (etcd + kube-apiserver) on loopback for integration tests.
//!
//! Binaries come from `scripts/build-control-plane.sh` (built from Go modules and cached outside
//! the clone), or from `$LLSO_CONTROL_PLANE_BIN`. A missing binary is an error, never a skip.
//! Every start gets fresh certificates, data directories and ports; dropping the value stops
//! both processes, and the processes also die with the test binary (PR_SET_PDEATHSIG).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// User name of the token [`ControlPlane::operator_client`] uses.
pub const OPERATOR_USER: &str = "llso-operator";

/// How long etcd plus kube-apiserver may take to become ready.
const START_TIMEOUT: Duration = Duration::from_secs(90);

pub use crate::process::Error;
use crate::process::{free_port, spawn_tied as spawn};
use crate::test_ca::TestCa;

/// Starts processes from one thread of its own. A test's child dies with the thread that started
/// it (PR_SET_PDEATHSIG), and a trial's thread ends long before the control plane it restarts a
/// component of; this thread ends when the control plane is dropped.
struct Respawner {
    requests: std::sync::Mutex<std::sync::mpsc::Sender<Respawn>>,
}

/// A program, its arguments, its log, and where to send the started child.
type Respawn = (
    PathBuf,
    Vec<std::ffi::OsString>,
    PathBuf,
    std::sync::mpsc::Sender<Result<Child, String>>,
);

impl Respawner {
    fn new() -> Self {
        let (requests, received) = std::sync::mpsc::channel::<Respawn>();
        std::thread::spawn(move || {
            for (program, args, log, reply) in received {
                let child =
                    spawn(Command::new(program).args(args), &log).map_err(|e| e.to_string());
                let _ = reply.send(child);
            }
        });
        Self {
            requests: std::sync::Mutex::new(requests),
        }
    }

    fn spawn(
        &self,
        program: PathBuf,
        args: Vec<std::ffi::OsString>,
        log: PathBuf,
    ) -> Result<Child, Error> {
        let (reply, child) = std::sync::mpsc::channel();
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send((program, args, log, reply))
            .map_err(|_| "the respawner thread is gone")?;
        Ok(child.recv().map_err(|_| "the respawner thread is gone")??)
    }
}

/// A running etcd + kube-apiserver pair.
pub struct ControlPlane {
    dir: TempDir,
    bin: PathBuf,
    children: std::sync::Mutex<Vec<(&'static str, Child)>>,
    /// How etcd and kube-apiserver were started, to start them again the same way.
    commands: Vec<(&'static str, PathBuf, Vec<std::ffi::OsString>)>,
    /// Starts them again from a thread that lives as long as this value (see [`Respawner`]).
    respawner: std::sync::OnceLock<Respawner>,
    /// `https://127.0.0.1:<port>`
    pub url: String,
    /// Path of a kubeconfig with cluster-admin rights.
    pub kubeconfig: PathBuf,
    /// How long the start took, from spawning etcd to a ready API server.
    pub start_time: Duration,
}

/// Directory holding `etcd`, `kube-apiserver` and `kubectl`.
pub fn control_plane_bin() -> Result<PathBuf, Error> {
    if let Ok(dir) = std::env::var("LLSO_CONTROL_PLANE_BIN") {
        return Ok(PathBuf::from(dir));
    }
    run_build_script("build-control-plane.sh", &[], &[])
}

/// Runs `scripts/<name>` with `args` and `env` on the host's network (build scripts fetch from
/// package registries), its stderr shown; returns the path it prints.
pub fn run_build_script(
    name: &str,
    args: &[String],
    env: &[(&str, &Path)],
) -> Result<PathBuf, Error> {
    let script = crate::workspace_root().join("scripts").join(name);
    crate::process::run_script(&script, args, env)
}

struct Pki {
    ca_pem: String,
    serving_cert_pem: String,
    serving_key_pem: String,
    service_account_key_pem: String,
    service_account_pub_pem: String,
}

fn make_pki() -> Result<Pki, Error> {
    let ca = TestCa::new("llso-test-ca")?;
    // The names and addresses a client in a Pod uses too (the `kubernetes` Service and the node's
    // address it leads to), so the same certificate serves both kinds of cluster.
    let serving = ca.server(
        &[
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
        ],
        &[
            [127, 0, 0, 1].into(),
            KUBERNETES_SERVICE_IP.into(),
            POD_REACHABLE_IP.into(),
        ],
        Some("kube-apiserver"),
    )?;
    let sa_key = rcgen::KeyPair::generate()?;
    Ok(Pki {
        ca_pem: ca.pem,
        serving_cert_pem: serving.cert,
        serving_key_pem: serving.key,
        service_account_key_pem: sa_key.serialize_pem(),
        service_account_pub_pem: sa_key.public_key_pem(),
    })
}

/// Who reaches the API server.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ApiAccess {
    /// Only processes of the test's network namespace, on loopback.
    Loopback,
    /// Pods of a real node too: the API server listens on every address of the (sealed)
    /// namespace and advertises the node's bridge address, which kube-proxy's rules for the
    /// `kubernetes` Service lead to.
    Pods,
}

/// The `kubernetes` Service's address (the first of `--service-cluster-ip-range`).
const KUBERNETES_SERVICE_IP: [u8; 4] = [10, 96, 0, 1];
/// The address Pods reach the API server at under [`ApiAccess::Pods`]: the real node's bridge
/// gateway (`support::node::NODE_IP`).
pub const POD_REACHABLE_IP: [u8; 4] = [10, 88, 0, 1];

/// [`POD_REACHABLE_IP`] as an address: where Pods reach the host's registries and API server.
pub fn pod_reachable_addr() -> std::net::IpAddr {
    std::net::IpAddr::from(POD_REACHABLE_IP)
}

impl ControlPlane {
    /// Starts etcd and kube-apiserver and waits until `/readyz` answers `ok`.
    ///
    /// Must be called from a thread that outlives the control plane (the harness's main thread),
    /// because the children are tied to it with PR_SET_PDEATHSIG.
    pub fn start() -> Result<Self, Error> {
        Self::start_with(ApiAccess::Loopback)
    }

    /// [`ControlPlane::start`] with the API server reachable as `access` says. (Over 80 lines:
    /// certificates, etcd, then kube-apiserver with its flags, one after the other, read as the
    /// start-up script it is; each flag carries why it is set.)
    pub fn start_with(access: ApiAccess) -> Result<Self, Error> {
        let bin = control_plane_bin()?;
        for name in ["etcd", "kube-apiserver", "kubectl"] {
            if !bin.join(name).is_file() {
                return Err(format!("{} is missing from {}", name, bin.display()).into());
            }
        }
        let dir = tempfile::Builder::new().prefix("llso-cp-").tempdir()?;
        let d = dir.path();
        let pki = make_pki()?;
        fs::write(d.join("ca.crt"), &pki.ca_pem)?;
        fs::write(d.join("apiserver.crt"), &pki.serving_cert_pem)?;
        fs::write(d.join("apiserver.key"), &pki.serving_key_pem)?;
        fs::write(d.join("sa.key"), &pki.service_account_key_pem)?;
        fs::write(d.join("sa.pub"), &pki.service_account_pub_pem)?;
        let token = format!("llso-admin-{}", std::process::id());
        fs::write(
            d.join("tokens.csv"),
            format!(
                "{token},admin,admin-uid,system:masters\n{token}-operator,{OPERATOR_USER},operator-uid,system:masters\n"
            ),
        )?;
        // Every write is recorded, and the reads of the operator's user (not its watches): tests
        // and benchmarks count the operator's. Status writes keep their body, so a test can show
        // what an unexpected one changed.
        fs::write(
            d.join("audit-policy.yaml"),
            format!(
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: None\n  verbs: [watch]\n- level: Metadata\n  users: [{OPERATOR_USER}]\n  verbs: [get, list]\n- level: None\n  verbs: [get, list]\n- level: Request\n  resources: [{{group: llamastack.io, resources: [llamastackdistributions/status]}}]\n- level: Metadata\n"
            ),
        )?;

        let started = Instant::now();
        let (etcd_port, peer_port, api_port) = (free_port()?, free_port()?, free_port()?);
        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let mut children = Vec::new();
        let mut commands = Vec::new();
        let mut recorded = |name: &'static str, cmd: &mut Command| {
            let args = cmd.get_args().map(ToOwned::to_owned).collect();
            commands.push((name, PathBuf::from(cmd.get_program()), args));
            spawn(cmd, &d.join(format!("{name}.log")))
        };
        children.push((
            "etcd",
            recorded(
                "etcd",
                Command::new(bin.join("etcd"))
                    .arg("--name=llso")
                    .arg(format!("--data-dir={}", d.join("etcd").display()))
                    .arg(format!("--listen-client-urls={etcd_url}"))
                    .arg(format!("--advertise-client-urls={etcd_url}"))
                    .arg(format!("--listen-peer-urls={peer_url}"))
                    .arg(format!("--initial-advertise-peer-urls={peer_url}"))
                    .arg(format!("--initial-cluster=llso={peer_url}"))
                    .arg("--unsafe-no-fsync")
                    .arg("--log-level=warn"),
            )?,
        ));
        let url = format!("https://127.0.0.1:{api_port}");
        children.push((
            "kube-apiserver",
            recorded(
                "kube-apiserver",
                Command::new(bin.join("kube-apiserver"))
                    .arg(format!("--etcd-servers={etcd_url}"))
                    .args(match access {
                        ApiAccess::Loopback => [
                            "--bind-address=127.0.0.1".to_owned(),
                            "--advertise-address=127.0.0.1".to_owned(),
                        ],
                        ApiAccess::Pods => [
                            "--bind-address=0.0.0.0".to_owned(),
                            format!(
                                "--advertise-address={}",
                                std::net::Ipv4Addr::from(POD_REACHABLE_IP)
                            ),
                        ],
                    })
                    .arg(format!("--secure-port={api_port}"))
                    .arg(format!("--cert-dir={}", d.join("certs").display()))
                    .arg(format!(
                        "--tls-cert-file={}",
                        d.join("apiserver.crt").display()
                    ))
                    .arg(format!(
                        "--tls-private-key-file={}",
                        d.join("apiserver.key").display()
                    ))
                    .arg(format!(
                        "--token-auth-file={}",
                        d.join("tokens.csv").display()
                    ))
                    .arg("--authorization-mode=RBAC")
                    // As OpenShift's API server: changing an object's owner references needs
                    // `delete` on it, and `blockOwnerDeletion` needs `update` on the owner's
                    // finalizers. Without it a missing grant passes here and fails there.
                    .arg("--enable-admission-plugins=OwnerReferencesPermissionEnforcement")
                    .arg("--service-account-issuer=https://kubernetes.default.svc")
                    .arg(format!(
                        "--service-account-key-file={}",
                        d.join("sa.pub").display()
                    ))
                    .arg(format!(
                        "--service-account-signing-key-file={}",
                        d.join("sa.key").display()
                    ))
                    .arg("--service-cluster-ip-range=10.96.0.0/16")
                    .arg("--allow-privileged=true")
                    .arg("--enable-priority-and-fairness=false")
                    .arg(format!(
                        "--audit-policy-file={}",
                        d.join("audit-policy.yaml").display()
                    ))
                    .arg(format!(
                        "--audit-log-path={}",
                        d.join("audit.log").display()
                    ))
                    .arg("--audit-log-mode=blocking")
                    // Never rotated: the suites and the scale bench count writes in this one
                    // file (the default rotates at 100 MB, which 3000 stacks pass).
                    .arg("--audit-log-maxsize=1000000")
                    .arg("--v=1"),
            )?,
        ));

        let kubeconfig = d.join("kubeconfig");
        fs::write(
            &kubeconfig,
            kubeconfig_yaml(&url, &d.join("ca.crt"), &token),
        )?;
        let mut plane = ControlPlane {
            dir,
            bin,
            children: std::sync::Mutex::new(children),
            commands,
            respawner: std::sync::OnceLock::new(),
            url,
            kubeconfig,
            start_time: Duration::ZERO,
        };
        plane.wait_until_ready()?;
        plane.start_time = started.elapsed();
        Ok(plane)
    }

    fn children_mut(&self) -> std::sync::MutexGuard<'_, Vec<(&'static str, Child)>> {
        self.children.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stops `component` (etcd or kube-apiserver) as an upgrade would: SIGTERM, then SIGKILL
    /// after 10 s. Its data is kept.
    pub fn stop(&self, component: &str) -> Result<(), Error> {
        let mut children = self.children_mut();
        let (_, child) = children
            .iter_mut()
            .find(|(name, _)| *name == component)
            .ok_or_else(|| format!("no running {component}"))?;
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        children.retain(|(name, _)| *name != component);
        Ok(())
    }

    /// Starts `component` again with the flags and data it had; for kube-apiserver, waits until
    /// it is ready.
    pub fn start_again(&self, component: &'static str) -> Result<(), Error> {
        let (_, program, args) = self
            .commands
            .iter()
            .find(|(name, _, _)| *name == component)
            .ok_or_else(|| format!("{component} cannot be restarted"))?;
        let log = self.dir.path().join(format!("{component}-again.log"));
        let respawner = self.respawner.get_or_init(Respawner::new);
        let child = respawner.spawn(program.clone(), args.clone(), log)?;
        self.children_mut().push((component, child));
        if component == "kube-apiserver" {
            self.wait_until_ready()?;
        }
        Ok(())
    }

    /// The process id of a running component (etcd, kube-apiserver, kwok, ...), if it runs.
    pub fn pid(&self, component: &str) -> Option<u32> {
        self.children_mut()
            .iter()
            .find(|(name, _)| *name == component)
            .map(|(_, child)| child.id())
    }

    /// Sends `signal` to a running component (SIGSTOP freezes it: connections are accepted by the
    /// kernel and never answered; SIGCONT resumes it).
    pub fn signal(&self, component: &str, signal: i32) -> Result<(), Error> {
        let children = self.children_mut();
        let (_, child) = children
            .iter()
            .find(|(name, _)| *name == component)
            .ok_or_else(|| format!("no running {component}"))?;
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(child.id() as libc::pid_t, signal);
        }
        Ok(())
    }

    /// Like [`ControlPlane::start`], plus kube-controller-manager (Deployments make Pods, owner
    /// references garbage-collect, HPAs run), kube-scheduler, and kwok playing the kubelet of one
    /// fake node, so Pods get scheduled and become Ready without a container runtime.
    pub fn start_cluster() -> Result<Self, Error> {
        let mut plane = Self::start_with_controllers()?;
        if !plane.bin.join("kwok").is_file() {
            return Err(format!("kwok is missing from {}", plane.bin.display()).into());
        }
        let d = plane.dir.path().to_owned();
        let kubeconfig = plane.kubeconfig.display().to_string();
        let stages = d.join("kwok-stages.yaml");
        crate::kwok_stages::write(&plane.bin.join("kwok-stages.yaml"), &stages)?;
        let kwok = spawn(
            Command::new(plane.bin.join("kwok"))
                .arg(format!("--kubeconfig={kubeconfig}"))
                .arg("--manage-all-nodes=false")
                .arg("--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake")
                // A heartbeat Lease per node, renewed by kwok, keeps the node Ready for as long as
                // the cluster runs (without it the node turns NotReady after the grace period).
                .arg("--node-lease-duration-seconds=40")
                .arg("--cidr=10.244.0.0/16")
                .arg(format!("--config={}", stages.display()))
                .env("HOME", &d),
            &d.join("kwok.log"),
        )?;
        plane.children_mut().push(("kwok", kwok));
        plane.add_fake_node("kwok-node-0")?;
        Ok(plane)
    }

    /// Like [`ControlPlane::start`], plus kube-controller-manager (Deployments make Pods, owner
    /// references garbage-collect, HPAs run) and kube-scheduler; no node.
    pub fn start_with_controllers() -> Result<Self, Error> {
        Self::start_with_controllers_for(ApiAccess::Loopback)
    }

    /// [`ControlPlane::start_with_controllers`] with the API server reachable as `access` says.
    pub fn start_with_controllers_for(access: ApiAccess) -> Result<Self, Error> {
        let plane = Self::start_with(access)?;
        for name in ["kube-controller-manager", "kube-scheduler"] {
            if !plane.bin.join(name).is_file() {
                return Err(format!("{} is missing from {}", name, plane.bin.display()).into());
            }
        }
        let d = plane.dir.path().to_owned();
        let kubeconfig = plane.kubeconfig.display().to_string();
        let (kcm_port, scheduler_port) = (free_port()?, free_port()?);
        let kcm = spawn(
            Command::new(plane.bin.join("kube-controller-manager"))
                .arg(format!("--kubeconfig={kubeconfig}"))
                .arg(format!("--authentication-kubeconfig={kubeconfig}"))
                .arg(format!("--authorization-kubeconfig={kubeconfig}"))
                .arg("--leader-elect=false")
                // The default 20 requests/s throttles Deployment status for hundreds of objects.
                .arg("--kube-api-qps=500")
                .arg("--kube-api-burst=1000")
                .arg("--concurrent-deployment-syncs=20")
                .arg("--concurrent-replicaset-syncs=20")
                .arg("--bind-address=127.0.0.1")
                .arg(format!("--secure-port={kcm_port}"))
                .arg(format!("--cert-dir={}", d.join("kcm-certs").display()))
                .arg(format!(
                    "--service-account-private-key-file={}",
                    d.join("sa.key").display()
                ))
                .arg(format!("--root-ca-file={}", d.join("ca.crt").display()))
                .arg("--use-service-account-credentials=false")
                .arg("--v=1"),
            &d.join("kube-controller-manager.log"),
        )?;
        plane.children_mut().push(("kube-controller-manager", kcm));
        let scheduler = spawn(
            Command::new(plane.bin.join("kube-scheduler"))
                .arg(format!("--kubeconfig={kubeconfig}"))
                .arg(format!("--authentication-kubeconfig={kubeconfig}"))
                .arg(format!("--authorization-kubeconfig={kubeconfig}"))
                .arg("--leader-elect=false")
                .arg("--bind-address=127.0.0.1")
                .arg(format!("--secure-port={scheduler_port}"))
                .arg(format!(
                    "--cert-dir={}",
                    d.join("scheduler-certs").display()
                ))
                .arg("--v=1"),
            &d.join("kube-scheduler.log"),
        )?;
        plane.children_mut().push(("kube-scheduler", scheduler));
        // Pods that are never scheduled would only show as stacks that never get Ready.
        plane.wait_until_healthy("kube-controller-manager", kcm_port)?;
        plane.wait_until_healthy("kube-scheduler", scheduler_port)?;
        Ok(plane)
    }

    /// Waits until kube-controller-manager or kube-scheduler, serving on `port`, answers
    /// `/healthz` with `ok`.
    fn wait_until_healthy(&self, component: &str, port: u16) -> Result<(), Error> {
        self.wait_until_ok(component, Some(port), "/healthz")
    }

    /// Registers a node kwok keeps Ready, with room for many Pods.
    fn add_fake_node(&mut self, name: &str) -> Result<(), Error> {
        let node = format!(
            r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{name}","annotations":{{"kwok.x-k8s.io/node":"fake","node.alpha.kubernetes.io/ttl":"0"}},"labels":{{"kubernetes.io/hostname":"{name}","kubernetes.io/os":"linux","kubernetes.io/arch":"amd64","type":"kwok"}}}},"status":{{"allocatable":{{"cpu":"4000","memory":"16Ti","pods":"5000"}},"capacity":{{"cpu":"4000","memory":"16Ti","pods":"5000"}}}}}}"#
        );
        let path = self.dir.path().join(format!("{name}.json"));
        fs::write(&path, node)?;
        let out = self.kubectl().args(["create", "-f"]).arg(&path).output()?;
        if !out.status.success() {
            return Err(format!(
                "cannot create node {name}: {}",
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let out = self
                .kubectl()
                .args(["get", "node", name, "-o"])
                .arg("jsonpath={.status.conditions[?(@.type==\"Ready\")].status}")
                .output()?;
            if out.stdout == b"True" {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "node {name} not Ready after {START_TIMEOUT:?}; kwok log:\n{}",
                    self.log_tail("kwok")
                )
                .into());
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn wait_until_ready(&self) -> Result<(), Error> {
        self.wait_until_ok("kube-apiserver", None, "/readyz")
    }

    /// Waits until `component` answers `path` with `ok`: the API server itself, or the component
    /// serving on `port` (its serving certificate is self-signed). An error with the log of
    /// whichever child exits meanwhile, or of `component` when time runs out.
    fn wait_until_ok(&self, component: &str, port: Option<u16>, path: &str) -> Result<(), Error> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let mut exited = None;
            for (name, child) in self.children_mut().iter_mut() {
                if let Some(status) = child.try_wait()? {
                    exited = Some((*name, status));
                }
            }
            if let Some((name, status)) = exited {
                return Err(format!(
                    "{name} exited during start-up ({status}); last log lines:\n{}",
                    self.log_tail(name)
                )
                .into());
            }
            let mut kubectl = self.kubectl();
            if let Some(port) = port {
                kubectl.arg(format!("--server=https://127.0.0.1:{port}"));
                kubectl.arg("--insecure-skip-tls-verify");
            }
            let out = kubectl
                .args(["get", "--raw", path])
                .stderr(Stdio::null())
                .output()?;
            if out.status.success() && out.stdout.starts_with(b"ok") {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{component} did not answer {path} with ok within {START_TIMEOUT:?}; last log lines:\n{}",
                    self.log_tail(component)
                )
                .into());
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The last lines of a component's log, for error messages.
    pub fn log_tail(&self, component: &str) -> String {
        let mut text = String::new();
        if let Ok(mut f) = fs::File::open(self.dir.path().join(format!("{component}.log"))) {
            let _ = f.read_to_string(&mut text);
        }
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// `kubectl` bound to this control plane.
    pub fn kubectl(&self) -> Command {
        let mut cmd = Command::new(self.bin.join("kubectl"));
        cmd.env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", self.dir.path().join("kubectl-cache"))
            .env_remove("KUBERNETES_SERVICE_HOST");
        cmd
    }

    /// A kube client with cluster-admin rights.
    pub async fn client(&self) -> Result<kube::Client, Error> {
        let kubeconfig = kube::config::Kubeconfig::read_from(&self.kubeconfig)?;
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
        Ok(kube::Client::try_from(config)?)
    }

    /// A cluster-admin client authenticated as [`OPERATOR_USER`], so the audit log tells the
    /// operator's writes from the test's.
    pub async fn operator_client(&self) -> Result<kube::Client, Error> {
        let mut kubeconfig = kube::config::Kubeconfig::read_from(&self.kubeconfig)?;
        for user in &mut kubeconfig.auth_infos {
            if let Some(auth) = user.auth_info.as_mut()
                && let Some(token) = auth.token.as_ref()
            {
                use secrecy::ExposeSecret;
                auth.token = Some(format!("{}-operator", token.expose_secret()).into());
            }
        }
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
        Ok(kube::Client::try_from(config)?)
    }

    /// A kubeconfig file authenticating with `token` (e.g. a ServiceAccount's), named `name`.
    pub fn kubeconfig_with_token(&self, name: &str, token: &str) -> Result<PathBuf, Error> {
        let path = self.dir.path().join(format!("{name}.kubeconfig"));
        fs::write(
            &path,
            kubeconfig_yaml(&self.url, &self.dir.path().join("ca.crt"), token),
        )?;
        Ok(path)
    }

    /// A kubeconfig file authenticating as [`OPERATOR_USER`] (cluster-admin), for operator
    /// processes whose writes the audit log should tell apart.
    pub fn operator_kubeconfig(&self) -> Result<PathBuf, Error> {
        let admin = fs::read_to_string(self.dir.path().join("tokens.csv"))?;
        let token = admin
            .lines()
            .find(|l| l.contains(OPERATOR_USER))
            .and_then(|l| l.split(',').next())
            .ok_or("no operator token")?
            .to_owned();
        self.kubeconfig_with_token("operator", &token)
    }

    /// The directory holding the control plane's (and the test node's) binaries.
    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// The directory holding this control plane's files (logs, kubeconfigs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Writes (create, update, patch, delete) `user` made so far, as audit events.
    pub fn audit_writes(&self, user: &str) -> Result<Vec<serde_json::Value>, Error> {
        Ok(self
            .audit_events(user)?
            .into_iter()
            .filter(|e| !matches!(e["verb"].as_str(), Some("get" | "list" | "watch")))
            .collect())
    }

    /// Reads (get, list) [`OPERATOR_USER`] made so far, as audit events (the audit policy logs
    /// the reads of that user alone).
    pub fn audit_reads(&self) -> Result<Vec<serde_json::Value>, Error> {
        Ok(self
            .audit_events(OPERATOR_USER)?
            .into_iter()
            .filter(|e| matches!(e["verb"].as_str(), Some("get" | "list")))
            .collect())
    }

    /// Every request of `user` the audit log has, as audit events.
    fn audit_events(&self, user: &str) -> Result<Vec<serde_json::Value>, Error> {
        let text = fs::read_to_string(self.dir.path().join("audit.log")).unwrap_or_default();
        let mut writes = Vec::new();
        // Most lines are other users' (at 10,000 stacks the log holds 100,000 writes): skip
        // them before parsing.
        let quoted = serde_json::to_string(user)?;
        for line in text.lines().filter(|l| l.contains(&quoted)) {
            let event: serde_json::Value = serde_json::from_str(line)?;
            if event["user"]["username"] == user && event["stage"] == "ResponseComplete" {
                writes.push(event);
            }
        }
        Ok(writes)
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        // kube-apiserver first, so it does not log a storm of etcd errors.
        let mut children = self.children_mut();
        for (_, child) in children.iter_mut().rev() {
            // SAFETY: plain kill(2) on our own child's pid.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
        }
        for (_, child) in children.iter_mut().rev() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn kubeconfig_yaml(url: &str, ca: &Path, token: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: llso\n  cluster:\n    server: {url}\n    certificate-authority: {ca}\nusers:\n- name: admin\n  user:\n    token: {token}\ncontexts:\n- name: llso\n  context:\n    cluster: llso\n    user: admin\n    namespace: default\ncurrent-context: llso\n",
        ca = ca.display()
    )
}

/// Creates a CRD and waits until the API server reports it Established.
pub async fn install_crd(
    client: &kube::Client,
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> Result<(), Error> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Api, PostParams};
    use kube::runtime::wait::{await_condition, conditions};

    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd.metadata.name.clone().unwrap_or_default();
    api.create(&PostParams::default(), crd)
        .await
        .map_err(|e| format!("cannot create CRD {name}: {e}"))?;
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(api, &name, conditions::is_crd_established()),
    )
    .await
    .map_err(|_| format!("CRD {name} not Established after 30s"))??;
    Ok(())
}

/// The CRD committed in `crds/` (kept equal to `crdgen`'s output by a unit test).
pub fn committed_crd() -> Result<
    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    Error,
> {
    let path = crate::workspace_root().join("crds/llamastackdistributions.llamastack.io.yaml");
    let text =
        fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(serde_saphyr::from_str(&text)?)
}

/// The committed `OGXServer` CRD (kept equal to `crdgen --ogx-server` by a unit test).
pub fn committed_ogx_crd() -> Result<
    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    Error,
> {
    let path = crate::workspace_root().join("crds/ogxservers.ogx.io.yaml");
    let text =
        fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(serde_saphyr::from_str(&text)?)
}

/// A started control plane with the committed CRDs installed (LlamaStackDistribution and
/// OGXServer, as every install has them), plus a runtime and an admin client
/// to drive it. Keep the returned `ControlPlane` alive for the length of the test.
pub fn start_with_crd() -> Result<(ControlPlane, tokio::runtime::Runtime, kube::Client), Error> {
    with_crd(ControlPlane::start()?)
}

/// [`start_with_crd`] on a cluster whose Pods run (see [`ControlPlane::start_cluster`]).
pub fn start_cluster_with_crd()
-> Result<(ControlPlane, tokio::runtime::Runtime, kube::Client), Error> {
    with_crd(ControlPlane::start_cluster()?)
}

/// [`start_with_crd`] with kube-controller-manager and kube-scheduler, for a real node to join.
pub fn start_controllers_with_crd()
-> Result<(ControlPlane, tokio::runtime::Runtime, kube::Client), Error> {
    with_crd(ControlPlane::start_with_controllers()?)
}

fn with_crd(
    plane: ControlPlane,
) -> Result<(ControlPlane, tokio::runtime::Runtime, kube::Client), Error> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let client = rt.block_on(async {
        let client = plane.client().await?;
        install_crd(&client, &committed_crd()?).await?;
        install_crd(&client, &committed_ogx_crd()?).await?;
        Ok::<_, Error>(client)
    })?;
    Ok((plane, rt, client))
}
