//! Runs a Deployment's Pod on this machine, the way a kubelet would but without containers: each
//! init container's command runs with its image's filesystem stood in by a local directory (or,
//! for the distribution image, by the llama-stack venv), volumes are temporary directories, and
//! `/dev/termination-log` is a file per container, read back as Kubernetes would. Paths in
//! commands and env values are rewritten: mount paths to their volume directories, other absolute
//! paths into the container's image directory.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::core::v1::{Container, PodSpec};
use tempfile::TempDir;

use crate::control_plane::Error;

/// What stands in for an image.
#[derive(Clone, Debug)]
pub enum Image {
    /// A directory holding the image's files (`<dir>/lls-provider/...`).
    Files(PathBuf),
    /// A Python venv with llama-stack (`python3` is its interpreter).
    Python(PathBuf),
}

/// The outcome of one init container.
#[derive(Clone, Debug)]
pub struct Step {
    /// Container name.
    pub name: String,
    /// Exit code.
    pub exit_code: i32,
    /// What it wrote to `/dev/termination-log`.
    pub termination_message: String,
    /// Its stdout and stderr.
    pub output: String,
}

/// One Pod's volumes and images.
pub struct PodRunner {
    root: TempDir,
    images: HashMap<String, Image>,
    config_maps: HashMap<String, BTreeMap<String, String>>,
}

impl PodRunner {
    /// A runner with image stand-ins by image reference and ConfigMap contents by name.
    pub fn new(
        images: HashMap<String, Image>,
        config_maps: HashMap<String, BTreeMap<String, String>>,
    ) -> Result<Self, Error> {
        Ok(Self {
            root: tempfile::Builder::new().prefix("llso-pod-").tempdir()?,
            images,
            config_maps,
        })
    }

    /// The directory standing in for volume `name`.
    pub fn volume(&self, name: &str) -> PathBuf {
        self.root.path().join("volumes").join(name)
    }

    fn prepare_volumes(&self, pod: &PodSpec) -> Result<(), Error> {
        for volume in pod.volumes.iter().flatten() {
            let dir = self.volume(&volume.name);
            if dir.exists() {
                continue;
            }
            fs::create_dir_all(&dir)?;
            if let Some(cm) = &volume.config_map {
                let data = self
                    .config_maps
                    .get(&cm.name)
                    .ok_or_else(|| format!("no ConfigMap {} given to the runner", cm.name))?;
                for (key, value) in data {
                    fs::write(dir.join(key), value)?;
                }
            }
        }
        Ok(())
    }

    fn image(&self, container: &Container) -> Result<&Image, Error> {
        let reference = container.image.as_deref().unwrap_or_default();
        self.images
            .get(reference)
            .ok_or_else(|| format!("no stand-in for image {reference}").into())
    }

    fn termination_log(&self, container: &str) -> PathBuf {
        self.root.path().join("termination").join(container)
    }

    /// Rewrites one path-like string as seen from `container`.
    pub fn map(&self, container: &Container, text: &str) -> String {
        if let Some((flag, value)) = text.split_once('=')
            && flag.starts_with("--")
        {
            return format!("{flag}={}", self.map(container, value));
        }
        if text.contains(':') && text.split(':').all(|p| p.starts_with('/')) {
            return text
                .split(':')
                .map(|p| self.map(container, p))
                .collect::<Vec<_>>()
                .join(":");
        }
        if text == "/dev/termination-log" {
            return self.termination_log(&container.name).display().to_string();
        }
        let mut best: Option<(&str, PathBuf)> = None;
        for mount in container.volume_mounts.iter().flatten() {
            let mp = mount.mount_path.as_str();
            let inside = text == mp || text.starts_with(&format!("{mp}/"));
            if inside && best.as_ref().is_none_or(|(b, _)| mp.len() > b.len()) {
                best = Some((mp, self.volume(&mount.name)));
            }
        }
        if let Some((mp, dir)) = best {
            return format!("{}{}", dir.display(), &text[mp.len()..]);
        }
        match self.image(container) {
            Ok(Image::Python(venv)) if text == "python3" => {
                venv.join("bin/python3").display().to_string()
            }
            Ok(Image::Files(dir)) if text.starts_with('/') => {
                let first = text
                    .trim_start_matches('/')
                    .split('/')
                    .next()
                    .unwrap_or_default();
                if dir.join(first).exists() {
                    dir.join(text.trim_start_matches('/')).display().to_string()
                } else {
                    text.to_owned()
                }
            }
            _ => text.to_owned(),
        }
    }

    /// The container's env with values rewritten.
    pub fn env(&self, container: &Container) -> Vec<(String, String)> {
        container
            .env
            .iter()
            .flatten()
            .filter_map(|e| {
                e.value
                    .as_ref()
                    .map(|v| (e.name.clone(), self.map(container, v)))
            })
            .collect()
    }

    /// Runs the init containers in order until one fails.
    pub fn run_init_containers(&self, pod: &PodSpec) -> Result<Vec<Step>, Error> {
        self.prepare_volumes(pod)?;
        fs::create_dir_all(self.root.path().join("termination"))?;
        let mut steps = Vec::new();
        for container in pod.init_containers.iter().flatten() {
            let command: Vec<String> = container
                .command
                .iter()
                .flatten()
                .chain(container.args.iter().flatten())
                .map(|c| self.map(container, c))
                .collect();
            let (program, args) = command
                .split_first()
                .ok_or("an init container without a command")?;
            let out = Command::new(program)
                .args(args)
                .env_remove("PYTHONPATH")
                .envs(self.env(container))
                .output()
                .map_err(|e| format!("{}: cannot run {program}: {e}", container.name))?;
            let step = Step {
                name: container.name.clone(),
                exit_code: out.status.code().unwrap_or(-1),
                termination_message: fs::read_to_string(self.termination_log(&container.name))
                    .unwrap_or_default(),
                output: format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
            };
            let failed = step.exit_code != 0;
            steps.push(step);
            if failed {
                break;
            }
        }
        Ok(steps)
    }

    /// The Pod status Kubernetes would report after `steps` (for the operator's status mapping).
    pub fn pod_status(steps: &[Step]) -> serde_json::Value {
        let statuses: Vec<serde_json::Value> = steps
            .iter()
            .map(|s| {
                serde_json::json!({"name": s.name, "image": "i", "imageID": "", "ready": s.exit_code == 0, "restartCount": 0,
                    "state": {"terminated": {"exitCode": s.exit_code, "message": s.termination_message}}})
            })
            .collect();
        serde_json::json!({"metadata": {"name": "pod"}, "status": {"initContainerStatuses": statuses}})
    }

    /// Disk used under `volume`, in bytes.
    pub fn disk_use(&self, volume: &str) -> u64 {
        fn walk(p: &Path) -> u64 {
            fs::read_dir(p)
                .map(|entries| {
                    entries
                        .flatten()
                        .map(|e| {
                            let path = e.path();
                            if path.is_dir() {
                                walk(&path)
                            } else {
                                e.metadata().map(|m| m.len()).unwrap_or(0)
                            }
                        })
                        .sum()
                })
                .unwrap_or(0)
        }
        walk(&self.volume(volume))
    }
}
