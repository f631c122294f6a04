//! A real node for the test cluster: Debian's containerd and runc, the CNI bridge plugins, and
//! kubelet and kube-proxy built from Go modules at the control plane's version
//! (`scripts/build-control-plane.sh`). Pods run as real containers from real images.
//!
//! Like everything the tests start, the node lives in the test binary's own network namespace
//! (see `sealed`): Pods get addresses on a bridge in it, Services work through kube-proxy's
//! iptables rules in it, and nothing a Pod tries can leave the machine.
//!
//! The machine this was written for has cgroup v1 only, which kubelet 1.35 refuses unless told
//! (`failCgroupV1: false`); each node gets a cgroup root of its own so nodes never share cgroups.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::control_plane::ControlPlane;
use crate::process::{Error, free_port, spawn_tied as spawn};

/// The node's name in the cluster.
pub const NODE_NAME: &str = "node-0";
/// The node's address: the Pod bridge's gateway address (only loopback exists in the test's
/// namespace, kubelet refuses a loopback node IP, and the CNI bridge plugin refuses a bridge
/// holding any address but its gateway's).
pub const NODE_IP: &str = "10.88.0.1";
/// The Pod bridge.
const BRIDGE: &str = "llso0";
/// Pod addresses, on the bridge CNI makes.
pub const POD_SUBNET: &str = "10.88.0.0/24";
/// The Service range of the test control plane (`--service-cluster-ip-range`).
const SERVICE_RANGE: &str = "10.96.0.0/16";
/// The Pod sandbox image, imported into the node's containerd (never pulled); a container of it
/// does nothing until stopped.
pub const PAUSE_IMAGE: &str = "llso.test/pause:1";
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A registry the node's containerd trusts: its host and the PEM file of its CA.
pub struct TrustedRegistry {
    pub host: String,
    pub ca_file: PathBuf,
}

/// containerd, kubelet and kube-proxy serving one Ready node; dropping it kills every container
/// and process of the node and unmounts what it mounted.
pub struct RealNode {
    dir: tempfile::TempDir,
    children: Vec<(&'static str, Child)>,
    cgroup_root: String,
}

impl RealNode {
    /// Starts a node registered with `plane`, its containerd trusting `registries`, and waits
    /// until it is Ready.
    pub fn start(plane: &ControlPlane, registries: &[TrustedRegistry]) -> Result<Self, Error> {
        for tool in ["containerd", "runc", "ctr", "iptables", "ip"] {
            which(tool)?;
        }
        for plugin in ["bridge", "host-local", "loopback", "portmap"] {
            let path = Path::new("/usr/lib/cni").join(plugin);
            if !path.is_file() {
                return Err(format!(
                    "CNI plugin {} is missing (apt containernetworking-plugins)",
                    path.display()
                )
                .into());
            }
        }
        reap_abandoned_nodes();
        let dir = tempfile::Builder::new().prefix("llso-node-").tempdir()?;
        let cgroup_root = format!("/llso-{}", std::process::id());
        let mut node = Self {
            dir,
            children: Vec::new(),
            cgroup_root,
        };
        create_cgroups(&node.cgroup_root)?;
        node.network()?;
        node.start_containerd(registries)?;
        node.import_pause(plane)?;
        node.start_kubelet(plane)?;
        node.start_kube_proxy(plane)?;
        node.wait_ready(plane)?;
        Ok(node)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The Pod bridge with its gateway address (made here so that the node has its address
    /// before the first Pod) and a route for the Service range, so that a connection to a ClusterIP
    /// is routed, then rewritten by kube-proxy's rules to a Pod on the bridge. (No dummy
    /// interface: kernels of this machine's kind lack the module.)
    fn network(&self) -> Result<(), Error> {
        for args in [
            vec!["link", "add", BRIDGE, "type", "bridge"],
            vec!["addr", "add", &format!("{NODE_IP}/24"), "dev", BRIDGE],
            vec!["link", "set", BRIDGE, "up"],
            vec!["route", "add", SERVICE_RANGE, "dev", BRIDGE],
        ] {
            run(Command::new("ip").args(&args))?;
        }
        // Pod-to-Service traffic that comes back to the same bridge must pass iptables.
        let _ = fs::write("/proc/sys/net/bridge/bridge-nf-call-iptables", "1");
        let _ = fs::write("/proc/sys/net/ipv4/ip_forward", "1");
        Ok(())
    }

    fn start_containerd(&mut self, registries: &[TrustedRegistry]) -> Result<(), Error> {
        let d = self.dir.path();
        fs::create_dir_all(d.join("cni"))?;
        fs::write(
            d.join("cni/10-llso.conflist"),
            cni_config(&d.join("cni-ipam")),
        )?;
        for registry in registries {
            let hosts = d.join("certs.d").join(&registry.host);
            fs::create_dir_all(&hosts)?;
            fs::write(
                hosts.join("hosts.toml"),
                format!(
                    "server = \"https://{host}\"\n\n[host.\"https://{host}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"{ca}\"\n",
                    host = registry.host,
                    ca = registry.ca_file.display()
                ),
            )?;
        }
        fs::create_dir_all(d.join("certs.d"))?;
        fs::write(d.join("containerd.toml"), containerd_config(d))?;
        let child = spawn(
            Command::new("containerd")
                .arg("--config")
                .arg(d.join("containerd.toml")),
            &d.join("containerd.log"),
        )?;
        self.children.push(("containerd", child));
        let deadline = Instant::now() + START_TIMEOUT;
        while !self
            .ctr(&["version"])
            .map(|o| o.status.success())
            .unwrap_or(false)
        {
            self.check_alive()?;
            if Instant::now() > deadline {
                return Err(self.failure("containerd did not answer"));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(())
    }

    fn ctr(&self, args: &[&str]) -> std::io::Result<std::process::Output> {
        Command::new("ctr")
            .arg("--address")
            .arg(self.path("containerd.sock"))
            .args(["--namespace", "k8s.io"])
            .args(args)
            .output()
    }

    /// Builds (or reuses) the pause image and imports it, so no sandbox is ever pulled.
    fn import_pause(&self, plane: &ControlPlane) -> Result<(), Error> {
        let layout = build_image(&[
            "pause".into(),
            plane.bin().join("pause").display().to_string(),
        ])?;
        let archive = self.path("pause.tar");
        run(Command::new("skopeo")
            .args(["copy", "--quiet"])
            .arg(format!("oci:{}:latest", layout.display()))
            .arg(format!(
                "docker-archive:{}:{PAUSE_IMAGE}",
                archive.display()
            )))?;
        let out = self.ctr(&["images", "import", &archive.display().to_string()])?;
        if !out.status.success() {
            return Err(format!(
                "ctr images import of the pause image failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        Ok(())
    }

    fn start_kubelet(&mut self, plane: &ControlPlane) -> Result<(), Error> {
        let d = self.dir.path().to_owned();
        let (port, healthz) = (free_port()?, free_port()?);
        fs::write(d.join("resolv.conf"), "")?;
        fs::write(
            d.join("kubelet.yaml"),
            kubelet_config(&d, &self.cgroup_root, port, healthz),
        )?;
        let child = spawn(
            Command::new(plane.bin().join("kubelet"))
                .arg(format!("--config={}", d.join("kubelet.yaml").display()))
                .arg(format!("--kubeconfig={}", plane.kubeconfig.display()))
                .arg(format!("--root-dir={}", d.join("kubelet").display()))
                .arg(format!("--cert-dir={}", d.join("kubelet-pki").display()))
                .arg(format!("--hostname-override={NODE_NAME}"))
                .arg(format!("--node-ip={NODE_IP}"))
                .arg("--v=2"),
            &d.join("kubelet.log"),
        )?;
        self.children.push(("kubelet", child));
        Ok(())
    }

    fn start_kube_proxy(&mut self, plane: &ControlPlane) -> Result<(), Error> {
        let d = self.dir.path().to_owned();
        fs::write(
            d.join("kube-proxy.yaml"),
            format!(
                "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclientConnection:\n  kubeconfig: {kubeconfig}\nmode: iptables\nhostnameOverride: {NODE_NAME}\nclusterCIDR: {POD_SUBNET}\nhealthzBindAddress: 127.0.0.1:{healthz}\nmetricsBindAddress: 127.0.0.1:{metrics}\nconntrack:\n  maxPerCore: 0\n  min: 0\n  tcpEstablishedTimeout: 0s\n  tcpCloseWaitTimeout: 0s\niptables:\n  masqueradeAll: true\n",
                kubeconfig = plane.kubeconfig.display(),
                healthz = free_port()?,
                metrics = free_port()?,
            ),
        )?;
        let child = spawn(
            Command::new(plane.bin().join("kube-proxy"))
                .arg(format!("--config={}", d.join("kube-proxy.yaml").display()))
                .arg("--v=2"),
            &d.join("kube-proxy.log"),
        )?;
        self.children.push(("kube-proxy", child));
        Ok(())
    }

    fn wait_ready(&mut self, plane: &ControlPlane) -> Result<(), Error> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            self.check_alive()?;
            let out = plane
                .kubectl()
                .args(["get", "node", NODE_NAME, "-o"])
                .arg("jsonpath={.status.conditions[?(@.type==\"Ready\")].status}")
                .stderr(Stdio::null())
                .output()?;
            if out.stdout == b"True" {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(self.failure(&format!(
                    "node {NODE_NAME} not Ready after {START_TIMEOUT:?}"
                )));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    fn check_alive(&mut self) -> Result<(), Error> {
        let mut exited = None;
        for (name, child) in &mut self.children {
            if let Some(status) = child.try_wait()? {
                exited = Some((*name, status));
            }
        }
        match exited {
            Some((name, status)) => Err(self.failure(&format!("{name} exited ({status})"))),
            None => Ok(()),
        }
    }

    /// `what`, with the last lines of every node component's log.
    pub fn failure(&self, what: &str) -> Error {
        let mut text = what.to_owned();
        for name in ["containerd", "kubelet", "kube-proxy"] {
            text.push_str(&format!(
                "\n--- {name} log (last lines):\n{}",
                self.log_tail(name)
            ));
        }
        text.into()
    }

    /// The last 40 lines of a component's log.
    pub fn log_tail(&self, component: &str) -> String {
        let log = fs::read_to_string(self.path(&format!("{component}.log"))).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// The ids of the containers of Pods in `namespace` that are running (a task in state
    /// RUNNING), sandboxes included.
    pub fn running_containers(&self, namespace: &str) -> Result<Vec<String>, Error> {
        let filter = format!("labels.\"io.kubernetes.pod.namespace\"=={namespace}");
        let listed = self.ctr(&["containers", "ls", "-q", &filter])?;
        let ours: Vec<String> = String::from_utf8_lossy(&listed.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        let tasks = self.ctr(&["tasks", "ls"])?;
        Ok(String::from_utf8_lossy(&tasks.stdout)
            .lines()
            .filter(|l| l.contains("RUNNING"))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|id| ours.iter().any(|o| o == id))
            .map(str::to_owned)
            .collect())
    }

    /// What the containers of Pod `namespace/pod` wrote, as kubelet keeps it (its
    /// `podLogsDir`): every container's log files, in name order. What `kubectl logs` reads
    /// through the kubelet, which this node's API server does not reach by the node's name.
    pub fn pod_logs(&self, namespace: &str, pod: &str) -> Result<String, Error> {
        let sorted = |dir: &Path| -> Result<Vec<PathBuf>, Error> {
            let mut paths: Vec<PathBuf> = fs::read_dir(dir)?.flatten().map(|e| e.path()).collect();
            paths.sort();
            Ok(paths)
        };
        let prefix = format!("{namespace}_{pod}_");
        let mut text = String::new();
        for pod_dir in sorted(&self.path("pod-logs"))? {
            let named = pod_dir
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix));
            if !named {
                continue;
            }
            for container in sorted(&pod_dir)? {
                for file in sorted(&container)? {
                    text.push_str(&fs::read_to_string(file).unwrap_or_default());
                }
            }
        }
        Ok(text)
    }

    /// Image references containerd holds, with their digests (`ctr images ls`).
    pub fn images(&self) -> Result<String, Error> {
        let out = self.ctr(&["images", "ls"])?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for RealNode {
    fn drop(&mut self) {
        // kubelet and kube-proxy first, so nothing restarts what is killed next.
        for (name, child) in self.children.iter_mut().rev() {
            if *name != "containerd" {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        // Every container process of the node lives under its cgroup root.
        kill_cgroup_tree(&format!("/sys/fs/cgroup/pids{}", self.cgroup_root));
        kill_shims(&self.path("containerd.sock"));
        for (_, child) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        unmount_under(self.dir.path());
        remove_cgroups(&self.cgroup_root);
    }
}

/// Whether `tool` is on the PATH; the error names what installs it.
pub fn which(tool: &str) -> Result<(), Error> {
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|p| p.join(tool).is_file()))
        .unwrap_or(false);
    if found {
        Ok(())
    } else {
        Err(format!(
            "{tool} is required for the real node (scripts/install-test-deps.sh installs it)"
        )
        .into())
    }
}

fn run(cmd: &mut Command) -> Result<(), Error> {
    let out = cmd.output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{:?} failed: {}",
            cmd,
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into())
    }
}

/// Builds (or reuses) an image with `scripts/build-test-images.sh`; returns its OCI layout.
/// The build may fetch from Debian's archive and PyPI, so it runs on the host's network.
pub fn build_image(args: &[String]) -> Result<PathBuf, Error> {
    crate::control_plane::run_build_script("build-test-images.sh", args, &[])
}

/// The operator's image built from the repository's `Dockerfile` by
/// `scripts/build-operator-image.sh`; returns its OCI layout (tag `latest`).
/// `LLSO_OPERATOR_IMAGE_LAYOUT` names one already built (scripts/test.sh builds it before the
/// suites). Otherwise the static binary is compiled here, in a target directory of its own: the
/// `cargo test` running this holds the lock of its own.
pub fn operator_image() -> Result<PathBuf, Error> {
    if let Some(layout) = std::env::var_os("LLSO_OPERATOR_IMAGE_LAYOUT") {
        let layout = PathBuf::from(layout);
        if !layout.join("index.json").is_file() {
            return Err(format!(
                "LLSO_OPERATOR_IMAGE_LAYOUT={} is not an OCI layout",
                layout.display()
            )
            .into());
        }
        return Ok(layout);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::workspace_root().join("target"))
        .join("operator-image");
    crate::control_plane::run_build_script(
        "build-operator-image.sh",
        &[],
        &[("CARGO_TARGET_DIR", &target)],
    )
}

fn cni_config(ipam_dir: &Path) -> String {
    serde_json::json!({
        "cniVersion": "1.0.0",
        "name": "llso",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": true,
                "ipMasq": false,
                "hairpinMode": true,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_SUBNET}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": ipam_dir,
                }
            },
            {"type": "portmap", "capabilities": {"portMappings": true}},
            {"type": "loopback"}
        ]
    })
    .to_string()
}

fn containerd_config(d: &Path) -> String {
    let cri = "plugins.\"io.containerd.grpc.v1.cri\"";
    format!(
        r#"version = 2
root = "{root}"
state = "{state}"

[grpc]
  address = "{sock}"

[ttrpc]
  address = "{sock}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{opt}"

[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  disable_apparmor = true
  disable_hugetlb_controller = true
  # The machine's own sandbox forbids lowering oom_score_adj below the caller's (kubelet asks
  # -998 for the Pod sandbox); clamp it as containerd does for rootless use.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = "{runc}"

[{cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "{cni}"

[{cri}.registry]
  config_path = "{certs}"
"#,
        root = d.join("containerd-root").display(),
        state = d.join("containerd-state").display(),
        sock = d.join("containerd.sock").display(),
        opt = d.join("containerd-opt").display(),
        cni = d.join("cni").display(),
        certs = d.join("certs.d").display(),
        runc = d.join("runc").display(),
    )
}

fn kubelet_config(d: &Path, cgroup_root: &str, port: u16, healthz: u16) -> String {
    format!(
        r#"apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: {cgroup_root}
failSwapOn: false
address: {NODE_IP}
port: {port}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {healthz}
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: unix://{sock}
podLogsDir: {logs}
resolvConf: {resolv}
clusterDomain: cluster.local
maxPods: 30
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  imagefs.available: "1%"
localStorageCapacityIsolation: false
syncFrequency: 10s
nodeStatusUpdateFrequency: 5s
"#,
        sock = d.join("containerd.sock").display(),
        logs = d.join("pod-logs").display(),
        resolv = d.join("resolv.conf").display(),
    )
}

/// Cleans up after test binaries that were killed before they could drop their node (their
/// cgroup root is named after their pid, which no longer runs): kills the containers left in
/// it, unmounts what such a node mounted, and removes its cgroups.
fn reap_abandoned_nodes() {
    let Ok(entries) = fs::read_dir("/sys/fs/cgroup/pids") else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("llso-")
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        kill_cgroup_tree(&entry.path().display().to_string());
        remove_cgroups(&format!("/{name}"));
    }
    let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let temp = std::env::temp_dir()
        .join("llso-node-")
        .display()
        .to_string();
    let mut dirs: Vec<PathBuf> = mounts
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| p.starts_with(&temp))
        .filter_map(|p| {
            let rest = &p[temp.len()..];
            let dir = rest.split('/').next()?;
            Some(PathBuf::from(format!("{temp}{dir}")))
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        // A live node's containerd holds its socket; an abandoned one's is gone with it.
        if std::os::unix::net::UnixStream::connect(dir.join("containerd.sock")).is_err() {
            unmount_under(&dir);
            let _ = fs::remove_dir_all(&dir);
        }
    }
}

/// SIGKILLs every process in the cgroup tree at `dir` (one controller's view of it).
fn kill_cgroup_tree(dir: &str) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.path().is_dir() {
            kill_cgroup_tree(&entry.path().display().to_string());
        }
    }
    for pid in fs::read_to_string(format!("{dir}/cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse::<libc::pid_t>().ok())
    {
        // SAFETY: plain kill(2).
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// SIGKILLs the containerd shims serving this node's containerd (they outlive containerd).
fn kill_shims(socket: &Path) {
    let needle = socket.display().to_string();
    for entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<libc::pid_t>() else {
            continue;
        };
        let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        if cmdline.contains("containerd-shim") && cmdline.contains(&needle) {
            // SAFETY: plain kill(2).
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// Lazily unmounts every mount point below `dir`, deepest first.
fn unmount_under(dir: &Path) {
    let prefix = dir.display().to_string();
    let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut points: Vec<&str> = mounts
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|p| p.starts_with(&prefix))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for point in points {
        if let Ok(c) = std::ffi::CString::new(point) {
            // SAFETY: umount2 with a valid C string.
            unsafe {
                libc::umount2(c.as_ptr(), libc::MNT_DETACH);
            }
        }
    }
}

/// Creates the node's cgroup root in every v1 controller kubelet checks (kubelet does not create
/// it); a new cpuset cgroup starts with no CPUs or memory nodes, so it gets its parent's.
fn create_cgroups(root: &str) -> Result<(), Error> {
    let name = root.trim_start_matches('/');
    for controller in [
        "cpu", "cpuacct", "cpuset", "memory", "pids", "systemd", "blkio", "devices", "freezer",
    ] {
        let base = Path::new("/sys/fs/cgroup").join(controller);
        if !base.is_dir() {
            continue;
        }
        let dir = base.join(name);
        fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create cgroup {}: {e}", dir.display()))?;
        if controller == "cpuset" {
            for file in ["cpuset.cpus", "cpuset.mems"] {
                fs::write(dir.join(file), fs::read_to_string(base.join(file))?.trim())?;
            }
        }
    }
    Ok(())
}

/// Removes the node's cgroups in every controller, deepest first (they are empty by now).
fn remove_cgroups(root: &str) {
    fn remove(dir: &Path) {
        if let Ok(entries) = fs::read_dir(dir) {
            for entry in entries.flatten() {
                if entry.path().is_dir() {
                    remove(&entry.path());
                }
            }
        }
        let _ = fs::remove_dir(dir);
    }
    for controller in fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
    {
        remove(&controller.path().join(root.trim_start_matches('/')));
    }
}

#[cfg(test)]
mod tests {
    /// The control plane advertises the node's address to Pods (`ApiAccess::Pods`): the two
    /// constants must name the same address.
    #[test]
    fn the_api_server_is_advertised_at_the_nodes_address() {
        let advertised = std::net::Ipv4Addr::from(crate::control_plane::POD_REACHABLE_IP);
        assert_eq!(super::NODE_IP.parse(), Ok(advertised));
    }
}
