//! Every validation rule the API server enforces, each with an object that violates it and the
//! field path and message the user must see.

use libtest_mimic::Failed;
use serde_json::{Value, json};

use crate::Ctx;
use crate::fixtures::{V1ALPHA1_COMPAT_GROUP, create, expect_invalid, namespace};

pub struct ValidationCase {
    pub name: &'static str,
    /// Full apiVersion the object is sent as.
    pub api_version: String,
    pub spec: Value,
    /// Field path of the expected cause, as the API server reports it.
    pub field: &'static str,
    /// Text the cause's message must contain.
    pub needle: &'static str,
}

fn v2(
    name: &'static str,
    spec: Value,
    field: &'static str,
    needle: &'static str,
) -> ValidationCase {
    ValidationCase {
        name,
        api_version: "llamastack.io/v1alpha2".to_owned(),
        spec,
        field,
        needle,
    }
}

fn v1(
    name: &'static str,
    spec: Value,
    field: &'static str,
    needle: &'static str,
) -> ValidationCase {
    ValidationCase {
        name,
        api_version: format!("{V1ALPHA1_COMPAT_GROUP}/v1alpha1"),
        spec,
        field,
        needle,
    }
}

fn starter() -> Value {
    json!({"name": "starter"})
}

pub fn validation_cases() -> Vec<ValidationCase> {
    let ext = |entry: Value| json!({"distribution": starter(), "externalProviders": {"inference": [entry]}});
    vec![
        // FR-070: overrideConfig is exclusive with each generated-config section.
        v2(
            "v1alpha2_override_config_with_providers",
            json!({"distribution": starter(), "overrideConfig": {"configMapName": "cm"}, "providers": {"inference": {"provider": "vllm"}}}),
            "spec",
            "overrideConfig cannot be combined with providers",
        ),
        v2(
            "v1alpha2_override_config_with_resources",
            json!({"distribution": starter(), "overrideConfig": {"configMapName": "cm"}, "resources": {"tools": ["websearch"]}}),
            "spec",
            "overrideConfig cannot be combined with resources",
        ),
        v2(
            "v1alpha2_override_config_with_storage",
            json!({"distribution": starter(), "overrideConfig": {"configMapName": "cm"}, "storage": {"kv": {"type": "sqlite"}}}),
            "spec",
            "overrideConfig cannot be combined with storage",
        ),
        v2(
            "v1alpha2_override_config_with_disabled",
            json!({"distribution": starter(), "overrideConfig": {"configMapName": "cm"}, "disabled": ["eval"]}),
            "spec",
            "overrideConfig cannot be combined with disabled",
        ),
        // FR-002: distribution name xor image, and one of them.
        v2(
            "v1alpha2_distribution_name_and_image",
            json!({"distribution": {"name": "starter", "image": "quay.io/x/y:1"}}),
            "spec.distribution",
            "set only one of name or image",
        ),
        v2(
            "v1alpha2_distribution_empty",
            json!({"distribution": {}}),
            "spec.distribution",
            "set name (a distribution such as starter) or image",
        ),
        v2(
            "v1alpha2_distribution_missing",
            json!({"workload": {"replicas": 1}}),
            "spec.distribution",
            "Required value",
        ),
        v2(
            "v1alpha2_distribution_name_empty_string",
            json!({"distribution": {"name": ""}}),
            "spec.distribution.name",
            "should be at least 1 chars long",
        ),
        // imageConfig names a file of the image's labels, never a path.
        v2(
            "v1alpha2_image_config_a_path",
            json!({"distribution": {"name": "starter", "imageConfig": "../run.yaml"}}),
            "spec.distribution.imageConfig",
            "should match",
        ),
        // Networking.
        v2(
            "v1alpha2_tls_enabled_without_secret",
            json!({"distribution": starter(), "networking": {"tls": {"enabled": true}}}),
            "spec.networking.tls.secretName",
            "secretName is required when enabled is true",
        ),
        v2(
            "v1alpha2_port_below_1024",
            json!({"distribution": starter(), "networking": {"port": 80}}),
            "spec.networking.port",
            "should be greater than or equal to 1024",
        ),
        v2(
            "v1alpha2_port_above_65535",
            json!({"distribution": starter(), "networking": {"port": 70000}}),
            "spec.networking.port",
            "should be less than or equal to 65535",
        ),
        v2(
            "v1alpha2_ca_bundle_key_pattern",
            json!({"distribution": starter(), "networking": {"tls": {"caBundle": {"configMapName": "ca", "configMapKeys": ["../etc/passwd"]}}}}),
            "spec.networking.tls.caBundle.configMapKeys[0]",
            "should match",
        ),
        // Storage (FR-050..FR-052).
        v2(
            "v1alpha2_redis_without_endpoint",
            json!({"distribution": starter(), "storage": {"kv": {"type": "redis"}}}),
            "spec.storage.kv.endpoint",
            "endpoint is required when type is redis",
        ),
        v2(
            "v1alpha2_postgres_without_connection_string",
            json!({"distribution": starter(), "storage": {"sql": {"type": "postgres"}}}),
            "spec.storage.sql.connectionString",
            "connectionString is required when type is postgres",
        ),
        v2(
            "v1alpha2_kv_type_enum",
            json!({"distribution": starter(), "storage": {"kv": {"type": "memcached"}}}),
            "spec.storage.kv.type",
            "Unsupported value: \"memcached\"",
        ),
        v2(
            "v1alpha2_sql_type_enum",
            json!({"distribution": starter(), "storage": {"sql": {"type": "mysql"}}}),
            "spec.storage.sql.type",
            "Unsupported value: \"mysql\"",
        ),
        v2(
            "v1alpha2_secret_ref_without_key",
            json!({"distribution": starter(), "storage": {"sql": {"type": "postgres", "connectionString": {"secretKeyRef": {"name": "pg"}}}}}),
            "spec.storage.sql.connectionString.secretKeyRef.key",
            "Required value",
        ),
        // Disabled APIs.
        v2(
            "v1alpha2_disabled_unknown_api",
            json!({"distribution": starter(), "disabled": ["eval", "agentz"]}),
            "spec.disabled[1]",
            "unknown API name \"agentz\"; use one of the camelCase API names",
        ),
        v2(
            "v1alpha2_disabled_snake_case_api",
            json!({"distribution": starter(), "disabled": ["vector_io"]}),
            "spec.disabled[0]",
            "unknown API name \"vector_io\"",
        ),
        v2(
            "v1alpha2_disabled_duplicate",
            json!({"distribution": starter(), "disabled": ["eval", "eval"]}),
            "spec.disabled[1]",
            "Duplicate value",
        ),
        v2(
            "v1alpha2_tools_duplicate",
            json!({"distribution": starter(), "resources": {"tools": ["websearch", "websearch"]}}),
            "spec.resources.tools[1]",
            "Duplicate value",
        ),
        // Workload.
        v2(
            "v1alpha2_autoscaling_max_below_min",
            json!({"distribution": starter(), "workload": {"autoscaling": {"minReplicas": 3, "maxReplicas": 2}}}),
            "spec.workload.autoscaling",
            "maxReplicas must be greater than or equal to minReplicas",
        ),
        v2(
            "v1alpha2_autoscaling_without_max",
            json!({"distribution": starter(), "workload": {"autoscaling": {"minReplicas": 1}}}),
            "spec.workload.autoscaling.maxReplicas",
            "Required value",
        ),
        v2(
            "v1alpha2_autoscaling_cpu_percent_range",
            json!({"distribution": starter(), "workload": {"autoscaling": {"maxReplicas": 2, "targetCPUUtilizationPercentage": 150}}}),
            "spec.workload.autoscaling.targetCPUUtilizationPercentage",
            "should be less than or equal to 100",
        ),
        v2(
            "v1alpha2_pdb_both",
            json!({"distribution": starter(), "workload": {"podDisruptionBudget": {"minAvailable": 1, "maxUnavailable": 1}}}),
            "spec.workload.podDisruptionBudget",
            "set exactly one of minAvailable or maxUnavailable",
        ),
        v2(
            "v1alpha2_pdb_neither",
            json!({"distribution": starter(), "workload": {"podDisruptionBudget": {}}}),
            "spec.workload.podDisruptionBudget",
            "set exactly one of minAvailable or maxUnavailable",
        ),
        v2(
            "v1alpha2_workers_zero",
            json!({"distribution": starter(), "workload": {"workers": 0}}),
            "spec.workload.workers",
            "should be greater than or equal to 1",
        ),
        v2(
            "v1alpha2_replicas_negative",
            json!({"distribution": starter(), "workload": {"replicas": -1}}),
            "spec.workload.replicas",
            "should be greater than or equal to 0",
        ),
        v2(
            "v1alpha2_override_config_without_name",
            json!({"distribution": starter(), "overrideConfig": {}}),
            "spec.overrideConfig.configMapName",
            "Required value",
        ),
        // External providers (spec 001).
        v2(
            "v1alpha2_external_provider_id_pattern",
            ext(json!({"providerId": "Bad_ID", "image": "quay.io/x/y:1"})),
            "spec.externalProviders.inference[0].providerId",
            "should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'",
        ),
        v2(
            "v1alpha2_external_provider_pull_policy_enum",
            ext(
                json!({"providerId": "acme", "image": "quay.io/x/y:1", "imagePullPolicy": "Sometimes"}),
            ),
            "spec.externalProviders.inference[0].imagePullPolicy",
            "Unsupported value: \"Sometimes\"",
        ),
        v2(
            "v1alpha2_external_provider_without_image",
            ext(json!({"providerId": "acme"})),
            "spec.externalProviders.inference[0].image",
            "Required value",
        ),
        v2(
            "v1alpha2_external_provider_duplicate_id",
            json!({"distribution": starter(), "externalProviders": {"inference": [
               {"providerId": "acme", "image": "quay.io/x/a:1"}, {"providerId": "acme", "image": "quay.io/x/b:1"}]}}),
            "spec.externalProviders.inference[1]",
            "Duplicate value",
        ),
        v2(
            "v1alpha2_external_provider_under_agents",
            json!({"distribution": starter(), "externalProviders": {"agents": [{"providerId": "acme", "image": "quay.io/x/y:1"}]}}),
            "spec.externalProviders.agents",
            "move this provider to externalProviders.responses",
        ),
        v2(
            "v1alpha2_external_provider_under_post_training",
            json!({"distribution": starter(), "externalProviders": {"postTraining": [{"providerId": "acme", "image": "quay.io/x/y:1"}]}}),
            "spec.externalProviders.postTraining",
            "postTraining API was removed in llama-stack 0.7",
        ),
        v2(
            "v1alpha2_external_provider_config_not_object",
            ext(json!({"providerId": "acme", "image": "quay.io/x/y:1", "config": "url=x"})),
            "spec.externalProviders.inference[0].config",
            "must be of type object",
        ),
        // v1alpha1, through the compat copy of its committed schema.
        v1(
            "v1alpha1_distribution_name_and_image",
            json!({"server": {"distribution": {"name": "starter", "image": "quay.io/x/y:1"}}}),
            "spec.server.distribution",
            "set only one of name or image",
        ),
        v1(
            "v1alpha1_distribution_empty",
            json!({"server": {"distribution": {}}}),
            "spec.server.distribution",
            "set name (a distribution such as starter) or image",
        ),
        v1(
            "v1alpha1_server_missing",
            json!({"replicas": 1}),
            "spec.server",
            "Required value",
        ),
        v1(
            "v1alpha1_workers_zero",
            json!({"server": {"distribution": starter(), "workers": 0}}),
            "spec.server.workers",
            "should be greater than or equal to 1",
        ),
        v1(
            "v1alpha1_pdb_both",
            json!({"server": {"distribution": starter(), "podDisruptionBudget": {"minAvailable": 1, "maxUnavailable": "50%"}}}),
            "spec.server.podDisruptionBudget",
            "set only one of minAvailable or maxUnavailable",
        ),
        v1(
            "v1alpha1_autoscaling_max_below_min",
            json!({"server": {"distribution": starter(), "autoscaling": {"minReplicas": 4, "maxReplicas": 2}}}),
            "spec.server.autoscaling",
            "maxReplicas must be greater than or equal to minReplicas",
        ),
        v1(
            "v1alpha1_user_config_without_name",
            json!({"server": {"distribution": starter(), "userConfig": {"configMapNamespace": "x"}}}),
            "spec.server.userConfig.configMapName",
            "Required value",
        ),
        v1(
            "v1alpha1_ca_bundle_too_many_keys",
            json!({"server": {"distribution": starter(), "tlsConfig": {"caBundle": {"configMapName": "ca",
               "configMapKeys": (0..51).map(|i| format!("k{i}")).collect::<Vec<_>>()}}}}),
            "spec.server.tlsConfig.caBundle.configMapKeys",
            "must have at most 50 items",
        ),
        v1(
            "v1alpha1_external_provider_id_pattern",
            json!({"server": {"distribution": starter(), "externalProviders": {"safety": [{"providerId": "-x", "image": "i"}]}}}),
            "spec.server.externalProviders.safety[0].providerId",
            "should match",
        ),
        v1(
            "v1alpha1_external_provider_under_agents",
            json!({"server": {"distribution": starter(), "externalProviders": {"agents": [{"providerId": "x", "image": "i"}]}}}),
            "spec.server.externalProviders.agents",
            "move this provider to externalProviders.responses",
        ),
        v1(
            "v1alpha1_replicas_type",
            json!({"server": {"distribution": starter()}, "replicas": "two"}),
            "spec.replicas",
            "must be of type integer",
        ),
    ]
}

pub async fn run_validation_case(ctx: &Ctx, case: &ValidationCase) -> Result<(), Failed> {
    let ns = namespace(&ctx.client, case.name).await?;
    let object = json!({
        "apiVersion": case.api_version,
        "kind": "LlamaStackDistribution",
        "metadata": {"name": "invalid"},
        "spec": case.spec,
    });
    expect_invalid(
        create(&ctx.client, &ns, &object).await,
        case.field,
        case.needle,
    )
}
