//! The read step: a stack as a front door hands it over ([`Model`]: its metadata, its spec and
//! its recorded status, in the model) checked once and read into [`Stack`], the typed view every
//! later step of a reconcile takes (gather, decide, apply, observe, report). The defaults of the
//! spec are applied here, once, so no step re-derives them from the raw spec, and what earlier
//! reconciles recorded in the status is read here too ([`Recorded`]).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use llama_stack_resolver::Distribution;
use llama_stack_resolver::server_line::{Evidence, ServerLine, ServerRelease, ServerVersion};

use super::adoption::Adopted;
use super::door::Door;
use super::subject::Subject;
use crate::api::common::{AllowedFromSpec, CaBundleConfig, ExternalProviderRef, PvcStorageSpec};
use crate::api::object_refs::{self, Reference};
use crate::api::polymorphic::BoolOrObject;
use crate::api::v1alpha2::{
    ClientIdentity, ExposeOptions, LlamaStackDistribution, LlamaStackDistributionSpec,
    LlamaStackDistributionStatus, PolicyRules, PraxisGateway, ResolvedDistributionStatus,
    RollbackStatus, TlsSpec, WorkloadOverrides, WorkloadSpec,
};
use crate::naming::{REPIN_ANNOTATION, owned_by_selector};

/// The server's port when `networking.port` is not set: llama-stack's own default.
pub const DEFAULT_PORT: i32 = 8321;

/// What an absent `spec.workload` means.
static NO_WORKLOAD: LazyLock<WorkloadSpec> = LazyLock::new(WorkloadSpec::default);
/// What an absent `spec.workload.overrides` means.
static NO_OVERRIDES: LazyLock<WorkloadOverrides> = LazyLock::new(WorkloadOverrides::default);

/// Why a resource cannot be read into a [`Stack`].
#[derive(Debug, thiserror::Error)]
pub enum Invalid {
    /// The object has no name (the API server never stores such an object).
    #[error("a stack without a name")]
    Unnamed,
    /// `spec.distribution` sets neither a name nor an image (admission refuses this; an object
    /// stored before the CRD's rules, or with them off, can still carry it).
    #[error("spec.distribution: set name or image")]
    NoDistribution,
}

/// A stack as a front door hands it to the core, whatever API it came through: who it is (its
/// metadata), what it asks for (its spec, in the model every API maps into) and what earlier
/// reconciles recorded (its status, in the model). The LLSD door hands its resource's own parts
/// ([`Model::of`]); the `OGXServer` door its metadata, with the spec and status it maps.
#[derive(Clone, Copy, Debug)]
pub struct Model<'a> {
    /// `metadata`: name, namespace, uid, generation, annotations.
    pub meta: &'a ObjectMeta,
    /// The spec in the model.
    pub spec: &'a LlamaStackDistributionSpec,
    /// The status earlier reconciles wrote, in the model; none before the first.
    pub status: Option<&'a LlamaStackDistributionStatus>,
}

impl<'a> Model<'a> {
    /// A LlamaStackDistribution's own parts: the model is its own shape.
    pub fn of(resource: &'a LlamaStackDistribution) -> Self {
        Self {
            meta: &resource.metadata,
            spec: &resource.spec,
            status: resource.status.as_ref(),
        }
    }
}

/// One stack as the reconcile reads it: who it is, what it runs, and what it
/// refers to, with the spec's defaults applied.
#[derive(Clone, Debug)]
pub struct Stack<'a> {
    /// Who is reconciled (its name, namespace, uid and generation): the owner of every owned
    /// object, what Events name.
    pub subject: Subject,
    /// The label selector of every object of the stack the operator manages, through either
    /// door ([`owned_by_selector`]): what the look, the prune and a hand-over list.
    pub owned_by: String,
    /// The spec as written, for the config generator alone: its input is the v1alpha2 spec, the
    /// hub every API maps into (admission's dry-run generation reads the same). Every other step
    /// reads the fields of this view.
    pub generator_input: &'a LlamaStackDistributionSpec,
    /// The user's ConfigMap the config comes from, if the spec names one.
    pub user_config_map: Option<UserConfigMap<'a>>,
    /// The ids of the inline providers (`spec.providers`), with the API section of each.
    pub inline_provider_ids: Vec<(&'static str, String)>,
    /// Whether `storage.sql.connectionString` names a Secret, whose URL the server reads split
    /// into parts (the `<name>-derived` Secret).
    pub splits_connection_string: bool,
    /// `metadata.annotations` (what an `OGXServer` asks to take over is read from them).
    pub annotations: Option<&'a BTreeMap<String, String>>,
    /// What the resolver is asked for.
    pub distribution: Distribution,
    /// `spec.distribution.imageConfig`: which of the image's configs to start from (else the
    /// one it runs).
    pub image_config: Option<&'a str>,
    /// External providers in CRD order, with the API section of each.
    pub external_providers: Vec<(&'static str, &'a ExternalProviderRef)>,
    /// `spec.workload`, empty when absent.
    pub workload: &'a WorkloadSpec,
    /// `spec.workload.overrides`, empty when absent.
    pub overrides: &'a WorkloadOverrides,
    /// `spec.workload.storage`: the data PVC, when asked for.
    pub storage: Option<&'a PvcStorageSpec>,
    /// How the server is reached.
    pub networking: Networking<'a>,
    /// The Secrets and ConfigMaps the spec names, with the field naming each.
    pub references: Vec<Reference>,
    /// The release `spec.distribution.serverVersion` declares for an image whose labels do not
    /// say.
    pub declared_server: Option<ServerRelease>,
    /// The [`REPIN_ANNOTATION`] the user set, if any.
    pub repin_request: Option<&'a str>,
    /// What earlier reconciles recorded in the status, which decisions build on.
    pub recorded: Recorded<'a>,
    /// The API the stack came through.
    pub door: Door,
    /// What was taken over from a stack of another name (an `OGXServer`'s `ogx.io/adopt-*`
    /// annotations), once the reconcile has done so; empty until then.
    pub adoption: Adopted,
}

/// What earlier reconciles recorded in a stack's status, which later decisions build on: the
/// image applied (the pin policy keeps it) and the rollback memory. The rest of the status is
/// only ever written.
#[derive(Clone, Copy, Debug, Default)]
pub struct Recorded<'a> {
    /// The whole status as stored: where the status step starts from.
    pub status: Option<&'a LlamaStackDistributionStatus>,
    /// The distribution as resolved and applied.
    pub resolved: Option<&'a ResolvedDistributionStatus>,
    /// The last Ready revision, and the one rejected.
    pub rollback: Option<&'a RollbackStatus>,
    /// The conditions last reported.
    pub conditions: &'a [Condition],
    /// Whether the status has been written at all (by this operator or any other: a stored
    /// object has none until a controller writes it).
    pub written: bool,
}

/// The user's ConfigMap a stack's config comes from (the schema allows one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserConfigMap<'a> {
    /// What the ConfigMap holds.
    pub role: ConfigRole,
    /// Its name, in the stack's namespace.
    pub name: &'a str,
    /// The key named, if one is (else `config.yaml`, `run.yaml` or the only key).
    pub key: Option<&'a str>,
}

/// What the user's ConfigMap holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigRole {
    /// `overrideConfig` (v1alpha1 `userConfig`): the whole config, run as is.
    Whole,
    /// `baseConfig`: the base a config is generated on, instead of the image's.
    Base,
}

impl ConfigRole {
    /// The field of the spec that names the ConfigMap.
    pub fn field(self) -> &'static str {
        match self {
            Self::Whole => "overrideConfig",
            Self::Base => "baseConfig",
        }
    }
}

impl<'a> Recorded<'a> {
    /// What `status` recorded.
    fn of(status: Option<&'a LlamaStackDistributionStatus>) -> Self {
        Self {
            status,
            resolved: status.and_then(|s| s.resolved_distribution.as_ref()),
            rollback: status.and_then(|s| s.rollback.as_ref()),
            conditions: status
                .and_then(|s| s.conditions.as_deref())
                .unwrap_or_default(),
            written: status.is_some(),
        }
    }

    /// The image the stack was last applied with.
    pub fn image(&self) -> Option<&'a str> {
        self.resolved.and_then(|r| r.image.as_deref())
    }
}

/// `spec.networking`, with its defaults.
#[derive(Clone, Debug)]
pub struct Networking<'a> {
    /// The server port (default [`DEFAULT_PORT`]).
    pub port: i32,
    /// The serving certificate's Secret, when the server terminates TLS itself.
    pub tls_secret: Option<&'a str>,
    /// Whether TLS is enabled (with or without a Secret named).
    pub tls: bool,
    /// `expose`: `None` when not exposed (or behind a gateway), else its options (empty strings
    /// as unset).
    pub expose: Option<ExposeOptions>,
    /// `expose` asked for, and not honoured: a server behind a gateway is reached only through it.
    pub expose_ignored: bool,
    /// The gateway the server is behind (Praxis), whose Pods alone reach it from outside the
    /// operator's namespace.
    pub gateway: Option<&'a PraxisGateway>,
    /// `allowedFrom`: `None` (and no `policy`) makes no NetworkPolicy.
    pub allowed_from: Option<&'a AllowedFromSpec>,
    /// `policy`: rules of the user's own, beside the default one.
    pub policy: Option<&'a PolicyRules>,
    /// `tls.caBundle`, then `tls.additionalCaBundles`: the ConfigMaps of CA certificates the
    /// server trusts, with the field naming each.
    pub ca_bundles: Vec<(String, &'a CaBundleConfig)>,
    /// `tls.clientIdentity`: the certificate the server presents to providers.
    pub client_identity: Option<&'a ClientIdentity>,
}

impl<'a> Stack<'a> {
    /// Reads `resource` into the view, or says why it cannot be.
    pub fn read(resource: &'a LlamaStackDistribution) -> Result<Self, Invalid> {
        Self::read_through(Model::of(resource), Door::LlamaStackDistribution)
    }

    /// Reads `model`, a stack that came through `door`, into the view.
    pub fn read_through(model: Model<'a>, door: Door) -> Result<Self, Invalid> {
        let Model { meta, spec, status } = model;
        let name = meta.name.as_deref().ok_or(Invalid::Unnamed)?;
        let distribution = match (&spec.distribution.name, &spec.distribution.image) {
            (Some(name), _) => Distribution::Name(name.clone()),
            (None, Some(image)) => Distribution::Image(image.clone()),
            (None, None) => return Err(Invalid::NoDistribution),
        };
        let workload = spec.workload.as_deref().unwrap_or(&NO_WORKLOAD);
        Ok(Self {
            subject: Subject::of(meta, door),
            owned_by: owned_by_selector(name),
            generator_input: spec,
            user_config_map: user_config_map(spec),
            inline_provider_ids: crate::external::ids::inline_ids(spec),
            splits_connection_string: (spec.storage.as_ref())
                .and_then(|s| s.sql.as_ref())
                .is_some_and(|sql| sql.connection_string.is_some()),
            annotations: meta.annotations.as_ref(),
            distribution,
            image_config: spec.distribution.image_config.as_deref(),
            external_providers: spec
                .external_providers
                .as_ref()
                .map(|e| e.ordered())
                .unwrap_or_default(),
            workload,
            overrides: workload.overrides.as_ref().unwrap_or(&NO_OVERRIDES),
            storage: workload.storage.as_ref(),
            networking: Networking::of(spec),
            references: object_refs::of(spec),
            declared_server: spec
                .distribution
                .server_version
                .as_deref()
                .and_then(declared_release),
            repin_request: meta
                .annotations
                .as_ref()
                .and_then(|a| a.get(REPIN_ANNOTATION))
                .map(String::as_str),
            recorded: Recorded::of(status),
            door,
            adoption: Adopted::default(),
        })
    }

    /// `metadata.name`; every owned object is named after it.
    pub fn name(&self) -> &str {
        &self.subject.name
    }

    /// `metadata.namespace`; every owned object lives there. Empty only for a manifest not yet
    /// placed in a namespace (`render`); a stored object always has one.
    pub fn namespace(&self) -> &str {
        &self.subject.namespace
    }

    /// `metadata.generation`: the revision of the spec (the rollback memory is kept per
    /// generation).
    pub fn generation(&self) -> Option<i64> {
        self.subject.generation
    }

    /// The data volume's name: the one taken over, else `<name>-pvc`.
    pub fn claim_name(&self) -> String {
        self.adoption
            .claim
            .clone()
            .unwrap_or_else(|| crate::naming::pvc_name(self.name()))
    }

    /// The ServiceAccount the user names for the server Pods, if any.
    pub fn user_service_account(&self) -> Option<&'a str> {
        self.overrides.service_account_name.as_deref()
    }

    /// Whether external providers are installed into the server Pods.
    pub fn has_external_providers(&self) -> bool {
        !self.external_providers.is_empty()
    }

    /// The stored object's uid (empty for an object not yet stored).
    pub fn uid(&self) -> &str {
        &self.subject.uid
    }
}

/// `overrideConfig` or `baseConfig`, whichever the spec sets.
fn user_config_map(spec: &LlamaStackDistributionSpec) -> Option<UserConfigMap<'_>> {
    let whole = spec.override_config.as_ref().map(|o| UserConfigMap {
        role: ConfigRole::Whole,
        name: &o.config_map_name,
        key: o.key.as_deref(),
    });
    whole.or_else(|| {
        spec.base_config.as_ref().map(|b| UserConfigMap {
            role: ConfigRole::Base,
            name: &b.config_map_name,
            key: b.key.as_deref(),
        })
    })
}

/// The release a `serverVersion` names (the schema admits only versions this parses).
fn declared_release(text: &str) -> Option<ServerRelease> {
    let version = ServerVersion::parse(text)?;
    Some(ServerRelease {
        line: ServerLine::of_version(version),
        version: Some(version),
        evidence: Evidence::Spec,
        suffixed: ServerVersion::is_suffixed(text),
    })
}

impl<'a> Networking<'a> {
    fn of(spec: &'a LlamaStackDistributionSpec) -> Self {
        let networking = spec.networking.as_ref();
        let gateway = spec.gateway.as_ref().map(|g| &g.praxis);
        let tls = networking
            .and_then(|n| n.tls.as_ref())
            .filter(|t| t.enabled);
        Self {
            port: networking.map_or(DEFAULT_PORT, |n| n.port),
            tls_secret: tls.and_then(|t| t.secret_name.as_deref()),
            tls: tls.is_some(),
            expose: networking
                .and_then(|n| n.expose.as_ref())
                .and_then(expose_options)
                .filter(|_| gateway.is_none()),
            expose_ignored: gateway.is_some()
                && networking
                    .and_then(|n| n.expose.as_ref())
                    .and_then(expose_options)
                    .is_some(),
            gateway,
            allowed_from: networking.and_then(|n| n.allowed_from.as_deref()),
            policy: networking.and_then(|n| n.policy.as_deref()),
            ca_bundles: ca_bundles(networking.and_then(|n| n.tls.as_deref())),
            client_identity: networking
                .and_then(|n| n.tls.as_ref())
                .and_then(|t| t.client_identity.as_ref()),
        }
    }
}

/// `tls.caBundle` and `tls.additionalCaBundles` in order, with the field naming each.
fn ca_bundles(tls: Option<&TlsSpec>) -> Vec<(String, &CaBundleConfig)> {
    let Some(tls) = tls else {
        return Vec::new();
    };
    let first = tls
        .ca_bundle
        .iter()
        .map(|b| ("spec.networking.tls.caBundle".to_owned(), b));
    let more = tls.additional_ca_bundles.iter().flatten().enumerate();
    first
        .chain(more.map(|(i, b)| (format!("spec.networking.tls.additionalCaBundles[{i}]"), b)))
        .collect()
}

/// `expose: true`, or its options with empty strings as unset; `None` when not exposed.
fn expose_options(expose: &BoolOrObject<ExposeOptions>) -> Option<ExposeOptions> {
    let set = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
    match expose {
        BoolOrObject::Bool(exposed) => exposed.then(ExposeOptions::default),
        BoolOrObject::Object(o) if o.enabled == Some(false) => None,
        BoolOrObject::Object(o) => Some(ExposeOptions {
            enabled: o.enabled,
            hostname: set(&o.hostname),
            ingress_class_name: set(&o.ingress_class_name),
            tls_secret_name: set(&o.tls_secret_name),
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn resource(metadata: serde_json::Value, spec: serde_json::Value) -> LlamaStackDistribution {
        serde_json::from_value(json!({"apiVersion": "llamastack.io/v1alpha2",
            "kind": "LlamaStackDistribution", "metadata": metadata, "spec": spec}))
        .unwrap()
    }

    #[test]
    fn the_view_applies_the_specs_defaults() {
        let cr = resource(
            json!({"name": "s", "namespace": "ns", "uid": "u-1"}),
            json!({"distribution": {"name": "starter"}}),
        );
        let stack = Stack::read(&cr).unwrap();
        assert_eq!(
            (stack.name(), stack.namespace(), stack.uid()),
            ("s", "ns", "u-1")
        );
        assert_eq!(stack.distribution, Distribution::Name("starter".to_owned()));
        assert_eq!(stack.networking.port, DEFAULT_PORT);
        assert!(!stack.networking.tls && stack.networking.expose.is_none());
        assert!(stack.storage.is_none() && !stack.has_external_providers());
        assert_eq!(stack.subject.owner.unwrap().uid, "u-1");
    }

    /// What the later steps read instead of the spec: the user's ConfigMap and its role, the
    /// inline providers' ids, whether a connection string is split.
    #[test]
    fn the_view_names_what_the_steps_need_of_the_spec() {
        let read = |spec: serde_json::Value| {
            let cr = resource(json!({"name": "s", "namespace": "ns"}), spec);
            let stack = Stack::read(&cr).unwrap();
            (
                stack
                    .user_config_map
                    .map(|m| (m.role, m.name.to_owned(), m.key.map(str::to_owned))),
                stack.inline_provider_ids.clone(),
                stack.splits_connection_string,
            )
        };
        let (named, ids, splits) = read(json!({"distribution": {"name": "starter"}}));
        assert_eq!((named, ids.len(), splits), (None, 0, false));
        let (named, ..) = read(json!({"distribution": {"name": "starter"},
            "overrideConfig": {"configMapName": "whole", "key": "run.yaml"}}));
        assert_eq!(
            named,
            Some((
                ConfigRole::Whole,
                "whole".to_owned(),
                Some("run.yaml".to_owned())
            ))
        );
        let (named, ids, splits) = read(json!({"distribution": {"name": "starter"},
            "baseConfig": {"configMapName": "base"},
            "providers": {"inference": {"provider": "vllm", "id": "mine", "endpoint": "http://v:8000/v1"}},
            "storage": {"sql": {"type": "postgres",
                "connectionString": {"secretKeyRef": {"name": "pg", "key": "url"}}}}}));
        assert_eq!(named, Some((ConfigRole::Base, "base".to_owned(), None)));
        assert_eq!(ids, vec![("inference", "mine".to_owned())]);
        assert!(splits);
    }

    #[test]
    fn expose_reads_as_the_ingress_options_or_nothing() {
        let exposed = |expose: serde_json::Value| {
            let cr = resource(
                json!({"name": "s", "namespace": "ns"}),
                json!({"distribution": {"image": "reg/i:1"}, "networking": {"expose": expose}}),
            );
            Stack::read(&cr).unwrap().networking.expose
        };
        assert_eq!(exposed(json!(false)), None);
        assert_eq!(exposed(json!(true)), Some(ExposeOptions::default()));
        assert_eq!(exposed(json!({"enabled": false, "hostname": "h"})), None);
        let options = exposed(json!({"hostname": "h", "ingressClassName": ""})).unwrap();
        assert_eq!(options.hostname.as_deref(), Some("h"));
        assert_eq!(options.ingress_class_name, None, "an empty string is unset");
    }

    #[test]
    fn a_resource_without_a_distribution_or_a_name_is_refused() {
        let cr = resource(
            json!({"name": "s", "namespace": "ns"}),
            json!({"distribution": {}}),
        );
        assert!(matches!(Stack::read(&cr), Err(Invalid::NoDistribution)));
        let cr = resource(
            json!({"namespace": "ns"}),
            json!({"distribution": {"name": "starter"}}),
        );
        assert!(matches!(Stack::read(&cr), Err(Invalid::Unnamed)));
        let unplaced = resource(
            json!({"name": "s"}),
            json!({"distribution": {"name": "starter"}}),
        );
        assert_eq!(
            Stack::read(&unplaced).unwrap().namespace(),
            "",
            "a manifest for render"
        );
    }
}
