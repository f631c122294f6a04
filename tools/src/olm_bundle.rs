//! The OLM bundle (registry+v1) of the operator, made from what `deploy/base` renders: the CRD,
//! the ClusterServiceVersion (RBAC, the manager Deployment, the webhooks, install modes), the
//! metrics Service and reader ClusterRole, and the bundle annotations. Pure: YAML in, files out.

use base64::prelude::{BASE64_STANDARD, Engine as _};
use serde_json::{Value, json};

/// The bundle's package.
pub const PACKAGE: &str = "llama-stack-operator";
/// The CSV's `alm-examples`: one resource per served version, the storage version first.
const EXAMPLES: [&str; 3] = [
    include_str!("../../deploy/samples/v1alpha2_us1_minimal_inference.yaml"),
    include_str!("../../deploy/samples/v1alpha1_us7_existing_resource.yaml"),
    include_str!("../../deploy/ogx-samples/vllm.yaml"),
];
/// The icon OperatorHub shows.
const ICON_SVG: &str = include_str!("icon.svg");
/// Where OLM mounts the webhook serving certificate (and where the manager reads it by default).
const OLM_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";
/// The manager's webhook port.
const WEBHOOK_PORT: u16 = 9443;

/// What `deploy/base` holds, by kind.
pub struct Rendered {
    docs: Vec<Value>,
}

impl Rendered {
    /// The documents of `kubectl kustomize deploy/base`.
    pub fn parse(yaml: &str) -> Result<Self, String> {
        let docs: Vec<Value> =
            serde_saphyr::from_multiple(yaml).map_err(|e| format!("not YAML: {e}"))?;
        Ok(Self { docs })
    }

    fn of_kind(&self, kind: &str) -> impl Iterator<Item = &Value> {
        self.docs.iter().filter(move |d| d["kind"] == kind)
    }

    fn one(&self, kind: &str, name: &str) -> Result<&Value, String> {
        self.of_kind(kind)
            .find(|d| d["metadata"]["name"] == name)
            .ok_or_else(|| format!("deploy/base has no {kind} {name}"))
    }
}

/// The bundle's files: (path under the bundle directory, content).
pub fn bundle(rendered: &Rendered, version: &str) -> Result<Vec<(String, String)>, String> {
    let crd = rendered.one(
        "CustomResourceDefinition",
        "llamastackdistributions.llamastack.io",
    )?;
    let ogx_crd = rendered.one("CustomResourceDefinition", "ogxservers.ogx.io")?;
    let service = rendered.one("Service", "llama-stack-operator-metrics")?;
    let reader = rendered.one("ClusterRole", "llama-stack-operator-metrics-reader")?;
    let budget = rendered.one("PodDisruptionBudget", "llama-stack-operator")?;
    let csv = cluster_service_version(rendered, (crd, ogx_crd), version)?;
    let yaml = |v: &Value| serde_saphyr::to_string(v).map_err(|e| e.to_string());
    let mut files = vec![(
        format!("manifests/{PACKAGE}.clusterserviceversion.yaml"),
        yaml(&csv)?,
    )];
    for (path, doc) in [
        ("manifests/llamastack.io_llamastackdistributions.yaml", crd),
        ("manifests/ogx.io_ogxservers.yaml", ogx_crd),
        (
            "manifests/llama-stack-operator-metrics_v1_service.yaml",
            service,
        ),
        (
            "manifests/llama-stack-operator-metrics-reader_rbac.authorization.k8s.io_v1_clusterrole.yaml",
            reader,
        ),
        (
            "manifests/llama-stack-operator_policy_v1_poddisruptionbudget.yaml",
            budget,
        ),
    ] {
        files.push((path.to_owned(), yaml(&without_namespace(doc))?));
    }
    files.push((
        "metadata/annotations.yaml".into(),
        yaml(&json!({"annotations": annotations(version)}))?,
    ));
    Ok(files)
}

/// The channel this version ships in: `candidate-v<major>.<minor>`, the naming OLM recommends
/// (its validator warns on any other) for releases not yet called stable.
pub fn channel(version: &str) -> String {
    let minor: Vec<&str> = version.split('.').take(2).collect();
    format!("candidate-v{}", minor.join("."))
}

/// The bundle image's labels, the same as `metadata/annotations.yaml`.
pub fn annotations(version: &str) -> Value {
    json!({
        "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
        "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
        "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
        "operators.operatorframework.io.bundle.package.v1": PACKAGE,
        "operators.operatorframework.io.bundle.channels.v1": channel(version),
        "operators.operatorframework.io.bundle.channel.default.v1": channel(version),
    })
}

/// `doc` without its namespace: OLM installs a bundle's objects into the namespace it chooses.
fn without_namespace(doc: &Value) -> Value {
    let mut doc = doc.clone();
    if let Some(meta) = doc["metadata"].as_object_mut() {
        meta.remove("namespace");
    }
    doc
}

fn cluster_service_version(
    rendered: &Rendered,
    (crd, ogx_crd): (&Value, &Value),
    version: &str,
) -> Result<Value, String> {
    let deployment = rendered.one("Deployment", "llama-stack-operator")?;
    let owned_crds = [owned(crd)?, owned(ogx_crd)?].concat();
    let image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .ok_or("the manager has no image")?;
    Ok(json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": format!("{PACKAGE}.v{version}"),
            "annotations": {
                "alm-examples": alm_examples()?,
                "capabilities": "Basic Install",
                "categories": "AI/Machine Learning",
                "containerImage": image,
                "operators.operatorframework.io/suggested-namespace": "llama-stack-operator-system",
                "repository": "https://github.com/llamastack/llama-stack-operator",
            }
        },
        "spec": {
            "displayName": "Llama Stack Operator",
            "description": "Deploys and runs llama-stack servers from LlamaStackDistribution resources. In v1alpha2 the operator generates the server's config.yaml from a few lines (providers, models, shields, tools, storage, networking); distribution names resolve to digest-pinned images whose base configs are read from the image labels; external providers install from their own images; a change rolls out once, and a bad change never takes a running stack down.",
            "version": version,
            "minKubeVersion": "1.33.0",
            "maturity": "alpha",
            "icon": [{"base64data": BASE64_STANDARD.encode(ICON_SVG), "mediatype": "image/svg+xml"}],
            "provider": {"name": "llama-stack-operator contributors"},
            "links": [{"name": "Source", "url": "https://github.com/llamastack/llama-stack-operator"}],
            "keywords": ["llama-stack", "llm", "inference", "ai"],
            "maintainers": [{"name": "llama-stack-operator contributors", "email": "llama-stack-operator@example.invalid"}],
            "installModes": install_modes(),
            "customresourcedefinitions": {"owned": owned_crds},
            "install": {"strategy": "deployment", "spec": {
                "clusterPermissions": [{"serviceAccountName": "llama-stack-operator", "rules": cluster_rules(rendered)?}],
                "permissions": [{"serviceAccountName": "llama-stack-operator", "rules": namespace_rules(rendered)?}],
                "deployments": [{
                    "name": "llama-stack-operator",
                    "label": deployment["metadata"]["labels"].clone(),
                    "spec": manager_spec(deployment)?,
                }],
            }},
            "webhookdefinitions": webhooks(rendered, crd)?,
        }
    }))
}

/// AllNamespaces only. The CRD's conversion webhook converts objects of every namespace, so OLM
/// refuses a bundle with `conversionCRDs` that offers a namespaced mode (its validator says "only
/// AllNamespaces InstallModeType is supported when conversionCRDs is present"). The manager still
/// reads WATCH_NAMESPACES from OLM's target namespaces, which are empty (all) in this mode.
fn install_modes() -> Vec<Value> {
    [
        "OwnNamespace",
        "SingleNamespace",
        "MultiNamespace",
        "AllNamespaces",
    ]
    .iter()
    .map(|t| json!({"type": t, "supported": *t == "AllNamespaces"}))
    .collect()
}

/// `alm-examples`: the example resources as a JSON array in a string, as OLM reads it.
fn alm_examples() -> Result<String, String> {
    let examples = EXAMPLES
        .iter()
        .map(|yaml| {
            serde_saphyr::from_str(yaml).map_err(|e| format!("an example is not YAML: {e}"))
        })
        .collect::<Result<Vec<Value>, String>>()?;
    serde_json::to_string_pretty(&examples).map_err(|e| e.to_string())
}

/// One owned entry per served version, newest (storage) first.
fn owned(crd: &Value) -> Result<Vec<Value>, String> {
    let versions = crd["spec"]["versions"]
        .as_array()
        .ok_or("the CRD has no versions")?;
    let kind = crd["spec"]["names"]["kind"].clone();
    let mut versions: Vec<&Value> = versions.iter().collect();
    versions.sort_by_key(|v| v["storage"] != true);
    Ok(versions
        .into_iter()
        .map(|v| {
            let name = v["name"].as_str().unwrap_or_default();
            let (display, description) = match (kind.as_str(), name) {
                (Some("OGXServer"), _) => ("OGX Server", "The OGX operator's API (ogx.io/v1beta1), served from the same core: an OGX server whose config the operator generates from typed providers, models and storage"),
                (_, "v1alpha2") => ("Llama Stack Distribution", "A llama-stack server whose config.yaml the operator generates from providers, models, shields, tools, storage and networking"),
                _ => ("Llama Stack Distribution", "The upstream operator's resource (a full config or the distribution's defaults), converted losslessly to v1alpha2"),
            };
            json!({"name": crd["metadata"]["name"], "version": name, "kind": kind,
                   "displayName": display, "description": description})
        })
        .collect())
}

/// The rules of every ClusterRole bound to the manager's ServiceAccount, system:auth-delegator's
/// (token and access reviews for /metrics) spelled out, since OLM binds only what it creates.
fn cluster_rules(rendered: &Rendered) -> Result<Vec<Value>, String> {
    let mut rules = Vec::new();
    for binding in rendered.of_kind("ClusterRoleBinding") {
        let role = binding["roleRef"]["name"].as_str().unwrap_or_default();
        if role == "system:auth-delegator" {
            rules.push(json!({"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]}));
            rules.push(json!({"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]}));
            continue;
        }
        let cluster_role = rendered.one("ClusterRole", role)?;
        rules.extend(
            cluster_role["rules"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        );
    }
    if rules.is_empty() {
        return Err("no ClusterRoleBinding for the manager in deploy/base".into());
    }
    Ok(rules)
}

/// The rules of the Roles bound in the operator's namespace (leader election).
fn namespace_rules(rendered: &Rendered) -> Result<Vec<Value>, String> {
    let mut rules = Vec::new();
    for binding in rendered.of_kind("RoleBinding") {
        let role = rendered.one(
            "Role",
            binding["roleRef"]["name"].as_str().unwrap_or_default(),
        )?;
        rules.extend(role["rules"].as_array().cloned().unwrap_or_default());
    }
    Ok(rules)
}

/// The manager as deploy/base runs it, with OLM's certificate volume instead of the emptyDir
/// and the target namespaces OLM annotates as WATCH_NAMESPACES.
fn manager_spec(deployment: &Value) -> Result<Value, String> {
    let mut spec = deployment["spec"].clone();
    let pod = &mut spec["template"]["spec"];
    pod["volumes"] = json!(
        pod["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| v["name"] != "serving-certs")
            .cloned()
            .collect::<Vec<_>>()
    );
    let container = pod["containers"]
        .get_mut(0)
        .ok_or("the manager Deployment has no container")?;
    container["volumeMounts"] = json!(
        container["volumeMounts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["mountPath"] != OLM_CERT_DIR)
            .cloned()
            .collect::<Vec<_>>()
    );
    let env = container["env"]
        .as_array_mut()
        .ok_or("the manager has no env")?;
    env.push(json!({"name": "WATCH_NAMESPACES",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['olm.targetNamespaces']"}}}));
    Ok(spec)
}

/// The validating webhook of deploy/base and the CRD's conversion webhook, served by the manager
/// on its webhook port with the certificate OLM issues. OLM's webhook definitions have no
/// `matchConditions`: under OLM, updates that leave the spec as it was still reach the webhook
/// (which admits them), and the two replicas and the budget keep one answering.
fn webhooks(rendered: &Rendered, crd: &Value) -> Result<Vec<Value>, String> {
    let config = rendered.one("ValidatingWebhookConfiguration", "llama-stack-operator")?;
    let mut definitions = Vec::new();
    for hook in config["webhooks"].as_array().ok_or("no webhooks")? {
        definitions.push(json!({
            "type": "ValidatingAdmissionWebhook",
            "generateName": hook["name"],
            "deploymentName": "llama-stack-operator",
            "containerPort": WEBHOOK_PORT,
            "targetPort": WEBHOOK_PORT,
            "webhookPath": hook["clientConfig"]["service"]["path"],
            "admissionReviewVersions": hook["admissionReviewVersions"],
            "sideEffects": hook["sideEffects"],
            "failurePolicy": hook["failurePolicy"],
            "timeoutSeconds": hook["timeoutSeconds"],
            "rules": hook["rules"],
        }));
    }
    let conversion = &crd["spec"]["conversion"]["webhook"];
    definitions.push(json!({
        "type": "ConversionWebhook",
        "generateName": "convert.llamastack.io",
        "deploymentName": "llama-stack-operator",
        "containerPort": WEBHOOK_PORT,
        "targetPort": WEBHOOK_PORT,
        "webhookPath": conversion["clientConfig"]["service"]["path"],
        "admissionReviewVersions": conversion["conversionReviewVersions"],
        "sideEffects": "None",
        "conversionCRDs": [crd["metadata"]["name"]],
    }));
    Ok(definitions)
}

/// Every file of the bundle directory, each YAML file with a header saying where it comes from,
/// and the bundle image's Dockerfile.
pub fn files(rendered_yaml: &str, version: &str) -> Result<Vec<(String, String)>, String> {
    let rendered = Rendered::parse(rendered_yaml)?;
    let header = "# Generated from deploy/base by scripts/build-bundle.sh; do not edit.\n";
    let mut files: Vec<(String, String)> = bundle(&rendered, version)?
        .into_iter()
        .map(|(path, yaml)| (path, format!("{header}{yaml}")))
        .collect();
    let mut dockerfile = format!(
        "{}FROM scratch\n",
        header.replace("# Generated", "# The bundle image. Generated")
    );
    if let Some(labels) = annotations(version).as_object() {
        for (key, value) in labels {
            dockerfile.push_str(&format!(
                "LABEL {key}={}\n",
                value.as_str().unwrap_or_default()
            ));
        }
    }
    dockerfile.push_str("COPY manifests /manifests/\nCOPY metadata /metadata/\n");
    files.push(("bundle.Dockerfile".into(), dockerfile));
    Ok(files)
}
