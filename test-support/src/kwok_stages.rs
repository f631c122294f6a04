//! kwok's stages for the test cluster: the ones kwok's module ships (nodes initialise and renew
//! their Leases, Pods become Ready, finish and go away), plus Pod failures a kubelet reports, so
//! the status the operator derives from them can be tested without a real node. A failure is
//! chosen by the stack's name (the Pods' `app.kubernetes.io/instance` label): the shipped
//! `pod-ready` stage is told to leave those Pods alone, and a failure stage takes them instead.

use std::path::Path;

/// A stack of this name gets a server container that crash-loops on its config.
pub const CRASH_LOOP: &str = "kwok-crash-loop";
/// A stack of this name gets a server container whose image cannot be pulled.
pub const IMAGE_PULL: &str = "kwok-image-pull";
/// A stack of this name gets a first init container that crash-loops (the server never starts).
pub const INIT_CRASH_LOOP: &str = "kwok-init-crash-loop";
/// What the crash-looping init container said when it last exited.
pub const INIT_CRASH_MESSAGE: &str = "exec: /usr/local/bin/llama-stack-operator: no such file";

/// What the crash-looping container said when it last exited.
pub const CRASH_MESSAGE: &str = "provider remote::nope is not known to llama-stack";

const INSTANCE_KEY: &str = r#".metadata.labels["app.kubernetes.io/instance"]"#;

/// The selector line after which the `pod-ready` stage's expressions are listed.
const POD_READY: &str = "  name: pod-ready\n";

/// Pending Pods of `instance` that have no address yet: each failure stage fires once.
fn selector(instance: &str) -> String {
    format!(
        "  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Pending']
    - key: '.status.podIP'
      operator: 'DoesNotExist'
    - key: '{INSTANCE_KEY}'
      operator: 'In'
      values: ['{instance}']
"
    )
}

/// The Pod's addresses, as kwok's own stages set them (the failure stages match only Pods
/// without one, so setting it ends the stage).
const ADDRESSES: &str = "      {{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid \"\" ) ( or .metadata.name \"\" ) ( or .metadata.namespace \"\" ) }}
      {{ with $podIPs }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
";

/// A stage named `name` that gives the Pods of stack `instance` not-Ready containers with
/// `container` (YAML lines of one container status, indented for the template), `phase`, and
/// `init` (YAML lines of the init container statuses, or nothing).
fn failure_stage(name: &str, instance: &str, init: &str, container: &str, phase: &str) -> String {
    format!(
        "apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: {name}
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
{selector}  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      conditions:
      - lastTransitionTime: {{{{ $now | Quote }}}}
        status: \"False\"
        type: Ready
        reason: ContainersNotReady
{init}      containerStatuses:
      {{{{ range .spec.containers }}}}
      - image: {{{{ .image | Quote }}}}
        name: {{{{ .name | Quote }}}}
        ready: false
{container}      {{{{ end }}}}
{ADDRESSES}      phase: {phase}
      startTime: {{{{ $now | Quote }}}}
",
        selector = selector(instance)
    )
}

fn crash_loop_stage() -> String {
    let container = format!(
        "        restartCount: 4
        state:
          waiting:
            reason: CrashLoopBackOff
            message: back-off 1m20s restarting failed container
        lastState:
          terminated:
            exitCode: 1
            reason: Error
            message: {CRASH_MESSAGE:?}
            startedAt: {{{{ $now | Quote }}}}
            finishedAt: {{{{ $now | Quote }}}}
"
    );
    failure_stage("llso-pod-crash-loop", CRASH_LOOP, "", &container, "Running")
}

fn image_pull_stage() -> String {
    let container = "        restartCount: 0
        state:
          waiting:
            reason: ImagePullBackOff
            message: 'Back-off pulling image {{ .image | Quote }}: 401 Unauthorized'
";
    failure_stage("llso-pod-image-pull", IMAGE_PULL, "", container, "Pending")
}

/// The first init container crash-loops, as kubelet reports it; the later ones and the server
/// wait for it.
fn init_crash_loop_stage() -> String {
    let init = format!(
        "      initContainerStatuses:
      {{{{ range $i, $c := .spec.initContainers }}}}
      - image: {{{{ $c.image | Quote }}}}
        name: {{{{ $c.name | Quote }}}}
        ready: false
        {{{{ if eq $i 0 }}}}
        restartCount: 3
        state:
          waiting:
            reason: CrashLoopBackOff
            message: back-off 40s restarting failed container
        lastState:
          terminated:
            exitCode: 127
            reason: Error
            message: {INIT_CRASH_MESSAGE:?}
            startedAt: {{{{ $now | Quote }}}}
            finishedAt: {{{{ $now | Quote }}}}
        {{{{ else }}}}
        restartCount: 0
        state:
          waiting:
            reason: PodInitializing
        {{{{ end }}}}
      {{{{ end }}}}
"
    );
    let container = "        restartCount: 0
        state:
          waiting:
            reason: PodInitializing
";
    failure_stage(
        "llso-pod-init-crash-loop",
        INIT_CRASH_LOOP,
        &init,
        container,
        "Pending",
    )
}

/// kwok's shipped stages (`shipped`) with the failure stages added.
pub fn with_failures(shipped: &str) -> Result<String, String> {
    let at = shipped
        .find(POD_READY)
        .ok_or("kwok's stages have no pod-ready stage")?;
    let expressions = shipped[at..]
        .find("    matchExpressions:\n")
        .map(|i| at + i + "    matchExpressions:\n".len())
        .ok_or("kwok's pod-ready stage has no matchExpressions")?;
    let excluded = format!(
        "    - key: '{INSTANCE_KEY}'\n      operator: 'NotIn'\n      values: ['{CRASH_LOOP}', '{IMAGE_PULL}', '{INIT_CRASH_LOOP}']\n"
    );
    let mut out = String::with_capacity(shipped.len() + 4096);
    out.push_str(&shipped[..expressions]);
    out.push_str(&excluded);
    out.push_str(&shipped[expressions..]);
    if !out.ends_with("---\n") {
        out.push_str("---\n");
    }
    out.push_str(&crash_loop_stage());
    out.push_str("---\n");
    out.push_str(&image_pull_stage());
    out.push_str("---\n");
    out.push_str(&init_crash_loop_stage());
    Ok(out)
}

/// Writes kwok's stages with the failure stages to `out`, from the shipped file `shipped`.
pub fn write(shipped: &Path, out: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(shipped)
        .map_err(|e| format!("cannot read {}: {e}", shipped.display()))?;
    std::fs::write(out, with_failures(&text)?)
        .map_err(|e| format!("cannot write {}: {e}", out.display()))
}
