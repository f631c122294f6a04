//! Shared fixtures: CRD installation, namespaces, object creation and error inspection.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, PostParams};

use libtest_mimic::Failed;
use serde_json::{Value, json};

use crate::support::control_plane::{Error, install_crd};

/// Group of a test-only CRD holding exactly the committed v1alpha1 schema as its only version.
///
/// The real CRD stores v1alpha2 and converts through the operator's webhook (exercised in
/// `tests/webhooks/`); this copy lets the API server enforce the v1alpha1 schema and its CEL
/// rules on their own, without the webhook's admission checks in the way.
pub const V1ALPHA1_COMPAT_GROUP: &str = "v1alpha1-compat.llamastack.test";

pub fn repo_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

pub use crate::support::control_plane::{committed_crd, committed_ogx_crd};

/// The committed CRD reduced to its v1alpha1 version, stored as itself, under the compat group.
pub fn v1alpha1_compat_crd() -> Result<CustomResourceDefinition, Error> {
    let mut crd = committed_crd()?;
    crd.spec.group = V1ALPHA1_COMPAT_GROUP.to_owned();
    crd.metadata.name = Some(format!(
        "{}.{}",
        crd.spec.names.plural, V1ALPHA1_COMPAT_GROUP
    ));
    crd.spec.names.short_names = None;
    crd.spec.conversion = None;
    crd.spec.versions.retain(|v| v.name == "v1alpha1");
    for v in &mut crd.spec.versions {
        v.storage = true;
    }
    Ok(crd)
}

pub async fn install_crds(client: &kube::Client) -> Result<(), Error> {
    for crd in [
        committed_crd()?,
        v1alpha1_compat_crd()?,
        committed_ogx_crd()?,
    ] {
        install_crd(client, &crd).await?;
    }
    Ok(())
}

/// A fresh namespace for one test.
pub async fn namespace(client: &kube::Client, prefix: &str) -> Result<String, Failed> {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let sanitized: String = prefix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    let name = format!(
        "{}-{}",
        sanitized.trim_matches('-'),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    );
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    Ok(name)
}

pub use crate::support::kube_objects::llsd_api;

/// Creates an object given as JSON (apiVersion, kind, metadata.name, spec) in `ns`.
pub async fn create(client: &kube::Client, ns: &str, object: &Value) -> Result<Value, kube::Error> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let obj: DynamicObject =
        serde_json::from_value(object.clone()).map_err(kube::Error::SerdeError)?;
    let created = llsd_api(client, ns, api_version)
        .create(&PostParams::default(), &obj)
        .await?;
    serde_json::to_value(created).map_err(kube::Error::SerdeError)
}

/// Asserts that `result` is a 422 whose causes include `field` with a message containing `needle`.
pub fn expect_invalid(
    result: Result<Value, kube::Error>,
    field: &str,
    needle: &str,
) -> Result<(), Failed> {
    let status = match result {
        Ok(obj) => return Err(format!("the API server accepted an invalid object: {obj}").into()),
        Err(kube::Error::Api(status)) => status,
        Err(other) => return Err(format!("expected a 422 from the API server, got {other}").into()),
    };
    if status.code != 422 {
        return Err(format!("expected HTTP 422, got {}: {}", status.code, status.message).into());
    }
    let causes = status
        .details
        .as_ref()
        .map(|d| d.causes.as_slice())
        .unwrap_or_default();
    if causes
        .iter()
        .any(|c| c.field == field && c.message.contains(needle))
    {
        return Ok(());
    }
    Err(format!(
        "no cause with field {field:?} and a message containing {needle:?}; causes: {causes:#?}"
    )
    .into())
}

/// A sample manifest from `deploy/samples/`.
pub struct Sample {
    pub path: PathBuf,
    pub object: Value,
}

/// Every sample; a sample that does not parse fails the listing loudly.
pub fn samples() -> Vec<Sample> {
    let dir = repo_path("deploy/samples");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        // The samples' kustomization lists them; it is not one.
        .filter(|p| p.file_name().is_some_and(|n| n != "kustomization.yaml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let object: Value = serde_saphyr::from_str(&text)
                .unwrap_or_else(|e| panic!("{} is not valid YAML: {e}", path.display()));
            Sample { path, object }
        })
        .collect()
}

/// Rewrites a v1alpha1 object to the compat group.
pub fn to_compat_group(object: &Value) -> Value {
    let mut object = object.clone();
    object["apiVersion"] = json!(format!("{V1ALPHA1_COMPAT_GROUP}/v1alpha1"));
    object
}
