//! What admission applies to a LlamaStackDistribution or an `OGXServer`, offline and in the API
//! server's order: the version must be served; strict decoding refuses unknown fields; the
//! CRD's structural schema (after dropping disallowed nulls and filling in defaults) and its CEL
//! rules; then the validating webhook's own checks (for an `OGXServer`: its distribution name
//! and what the model cannot carry). The schemas and the rules come
//! from the CRDs the operator generates, the webhook checks are the webhook's functions: nothing
//! here is a second copy of a rule. Only what needs the cluster (referenced Secrets and
//! ConfigMaps) is left out. Pure.

pub(crate) mod cause;
pub(crate) mod checks;
pub(crate) mod documents;
mod metadata;
mod quantity;
pub(crate) mod rules;
pub(crate) mod schema;

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use llama_stack_resolver::Catalog;
use serde::Serialize;
use serde_json::Value;

use crate::api::{DEFAULT_CONVERSION_SERVICE, crd};
use cause::{Cause, CauseType};

/// The API group of the LlamaStackDistribution.
const GROUP: &str = "llamastack.io";
/// Its kind.
const KIND: &str = "LlamaStackDistribution";
/// The API group of the `OGXServer`.
const OGX_GROUP: &str = "ogx.io";
/// Its kind.
const OGX_KIND: &str = "OGXServer";
/// The field the API server names when schema errors kept it from evaluating the CEL rules.
pub const RULES_NOT_CHECKED_FIELD: &str = "<nil>";

/// Which check refused an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Stage {
    /// Decoding: an unserved version, or fields the schema does not declare (HTTP 400).
    Decode,
    /// The CRD's schema and CEL rules (HTTP 422).
    Schema,
    /// The validating webhook (HTTP 422, from the webhook).
    Admission,
}

/// What admission would say of one object.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "camelCase")]
pub enum Verdict {
    /// Admitted.
    Valid {
        /// Warnings the client would print.
        warnings: Vec<String>,
    },
    /// Refused.
    Invalid {
        /// The check that refused it.
        stage: Stage,
        /// Every refused field.
        causes: Vec<Cause>,
        /// Warnings the client would print.
        warnings: Vec<String>,
    },
    /// Neither a LlamaStackDistribution nor an `OGXServer`: not this validator's to judge.
    Skipped {
        /// Its apiVersion and kind.
        what: String,
    },
}

impl Verdict {
    /// Whether the object would be refused.
    pub fn refused(&self) -> bool {
        matches!(self, Self::Invalid { .. })
    }

    fn invalid(stage: Stage, causes: Vec<Cause>) -> Self {
        Self::Invalid {
            stage,
            causes,
            warnings: Vec::new(),
        }
    }
}

/// Why the validator could not be built (a bug in the API types).
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The CRD could not be generated.
    #[error("cannot generate the CRD")]
    Crd(#[from] kube::core::crd::MergeError),
    /// A version of the CRD has no schema.
    #[error("version {0} of the CRD has no schema")]
    NoSchema(String),
}

/// The checks of every served version, built once from the operator's CRD.
pub struct Validator {
    schemas: BTreeMap<String, JSONSchemaProps>,
    rules: rules::Rules,
    catalog: Catalog,
}

impl Validator {
    /// The checks for the operator's own CRD; `catalog` decides which distribution names the
    /// webhook knows (the embedded one, with the operator ConfigMap's image-overrides).
    pub fn new(catalog: Catalog) -> Result<Self, SetupError> {
        let ogx_crd = <crate::api::ogx::OGXServer as kube::CustomResourceExt>::crd();
        let mut schemas = BTreeMap::new();
        for crd in [crd(&DEFAULT_CONVERSION_SERVICE)?, ogx_crd] {
            let group = crd.spec.group.clone();
            for version in crd.spec.versions.into_iter().filter(|v| v.served) {
                let schema = version
                    .schema
                    .and_then(|s| s.open_api_v3_schema)
                    .ok_or_else(|| SetupError::NoSchema(version.name.clone()))?;
                schemas.insert(format!("{group}/{}", version.name), schema);
            }
        }
        Ok(Self {
            schemas,
            rules: rules::Rules::default(),
            catalog,
        })
    }

    /// The served versions of `group`: `llamastack.io/v1alpha1` and so on.
    pub fn versions<'a>(&'a self, group: &'a str) -> impl Iterator<Item = &'a str> {
        self.schemas
            .keys()
            .map(String::as_str)
            .filter(move |v| v.split_once('/').is_some_and(|(g, _)| g == group))
    }

    /// What admission would say of `object`; on success also the object as the API server
    /// would store it in its own version (nulls dropped, defaults filled in).
    pub fn validate(&self, object: &Value) -> (Verdict, Option<Value>) {
        let schema = match self.decode(object) {
            Ok(schema) => schema,
            Err(verdict) => return (verdict, None),
        };
        let mut stored = object.clone();
        schema::prune_nulls_and_default(schema, &mut stored);
        let causes = self.schema_causes(schema, &stored);
        if !causes.is_empty() {
            return (Verdict::invalid(Stage::Schema, causes), None);
        }
        let webhook = checks::check(&stored, &self.catalog);
        let causes: Vec<Cause> = webhook
            .errors
            .iter()
            .map(|e| Cause::new(CauseType::Invalid, &e.path, e.message.clone()))
            .collect();
        if causes.is_empty() {
            let verdict = Verdict::Valid {
                warnings: webhook.warnings,
            };
            (verdict, Some(stored))
        } else {
            let verdict = Verdict::Invalid {
                stage: Stage::Admission,
                causes,
                warnings: webhook.warnings,
            };
            (verdict, None)
        }
    }

    /// Decoding: the schema of `object`'s version, or why there is nothing more to check (not
    /// this resource, an unserved version, fields the schema does not declare).
    fn decode(&self, object: &Value) -> Result<&JSONSchemaProps, Verdict> {
        let field = |name: &str| object.get(name).and_then(Value::as_str).unwrap_or_default();
        let (api_version, kind) = (field("apiVersion"), field("kind"));
        let group = api_version
            .split_once('/')
            .map(|(g, _)| g)
            .unwrap_or_default();
        if !matches!((group, kind), (GROUP, KIND) | (OGX_GROUP, OGX_KIND)) {
            let what = format!("{api_version} {kind}").trim().to_owned();
            return Err(Verdict::Skipped { what });
        }
        let Some(schema) = self.schemas.get(api_version) else {
            let served: Vec<&str> = self.versions(group).collect();
            let cause = Cause::new(
                CauseType::NotSupported,
                "apiVersion",
                format!(
                    "no matches for kind \"{kind}\" in version \"{api_version}\"; served: {}",
                    served.join(", ")
                ),
            );
            return Err(Verdict::invalid(Stage::Decode, vec![cause]));
        };
        let unknown = schema::unknown_fields(schema, object);
        if unknown.is_empty() {
            return Ok(schema);
        }
        let causes = unknown
            .into_iter()
            .map(|field| {
                let message = "unknown field (not declared in the schema)".to_owned();
                Cause::new(CauseType::Unknown, &field, message)
            })
            .collect();
        Err(Verdict::invalid(Stage::Decode, causes))
    }

    /// The metadata (name, labels, annotations), the structural schema and then the CEL rules of
    /// `stored` (already defaulted). As in the API server, the rules are not evaluated after a
    /// blocking error, the metadata's included; a cause at [`RULES_NOT_CHECKED_FIELD`] says so.
    fn schema_causes(&self, schema: &JSONSchemaProps, stored: &Value) -> Vec<Cause> {
        let mut causes = metadata::causes(stored);
        let spec_schema = schema.properties.as_ref().and_then(|p| p.get("spec"));
        let spec = stored.get("spec");
        match (spec_schema, spec) {
            (Some(spec_schema), Some(spec)) => {
                schema::check(spec_schema, spec, "spec", &mut causes)
            }
            (Some(_), None) if schema.required.iter().flatten().any(|r| r == "spec") => causes
                .push(Cause::new(
                    CauseType::Required,
                    "spec",
                    "Required value".to_owned(),
                )),
            _ => {}
        }
        if causes.iter().any(|c| c.kind.blocks_rules()) {
            causes.push(Cause::new(
                CauseType::Invalid,
                RULES_NOT_CHECKED_FIELD,
                "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".to_owned(),
            ));
        } else if let (Some(spec_schema), Some(spec)) = (spec_schema, spec) {
            self.rules.check(spec_schema, spec, "spec", &mut causes);
        }
        causes
    }
}

#[cfg(test)]
mod tests;
