//! The API reference (`docs/api-reference.md`), generated from the CRD's OpenAPI schema so it
//! can never disagree with what the API server enforces.

use std::fmt::Write;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};

/// Markdown reference of every version's spec and status fields.
pub fn markdown(crd: &CustomResourceDefinition) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# API reference\n\nGenerated from the CRD by `llama-stack-operator crdgen --reference`; a unit test keeps it in step \
         with the code. Rules marked *CEL* are enforced by the API server; the admission webhook adds the checks listed in \
         `docs/validation.md`.\n"
    );
    let _ = writeln!(
        out,
        "Group `{}`, kind `{}` (short name{} {}).\n",
        crd.spec.group,
        crd.spec.names.kind,
        if crd
            .spec
            .names
            .short_names
            .as_ref()
            .is_some_and(|s| s.len() > 1)
        {
            "s"
        } else {
            ""
        },
        crd.spec
            .names
            .short_names
            .iter()
            .flatten()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for version in &crd.spec.versions {
        let _ = writeln!(
            out,
            "## {}/{}{}\n",
            crd.spec.group,
            version.name,
            if version.storage {
                " (storage version)"
            } else {
                ""
            }
        );
        let Some(schema) = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
        else {
            continue;
        };
        for top in ["spec", "status"] {
            let Some(props) = schema.properties.as_ref().and_then(|p| p.get(top)) else {
                continue;
            };
            let _ = writeln!(out, "### `{top}`\n");
            rules(&mut out, top, props);
            let _ = writeln!(out, "| field | type | description |\n|---|---|---|");
            fields(&mut out, top, props);
            out.push('\n');
        }
    }
    out
}

fn type_of(schema: &JSONSchemaProps) -> String {
    if schema.x_kubernetes_int_or_string == Some(true) {
        return "int or string".to_owned();
    }
    if schema.x_kubernetes_preserve_unknown_fields == Some(true) && schema.type_.is_none() {
        return "any".to_owned();
    }
    match schema.type_.as_deref() {
        Some("array") => {
            let item = schema
                .items
                .as_ref()
                .and_then(|i| match i {
                    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrArray::Schema(s) => Some(type_of(s)),
                    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrArray::Schemas(_) => None,
                })
                .unwrap_or_else(|| "any".to_owned());
            format!("[]{item}")
        }
        Some(t) => t.to_owned(),
        None if schema.any_of.is_some() || schema.one_of.is_some() => {
            "one of several forms".to_owned()
        }
        None => "any".to_owned(),
    }
}

fn constraints(schema: &JSONSchemaProps) -> Vec<String> {
    let mut c = Vec::new();
    if let Some(values) = &schema.enum_ {
        let values: Vec<String> = values.iter().map(|v| format!("`{}`", v.0)).collect();
        c.push(format!("one of {}", values.join(", ")));
    }
    if let Some(d) = &schema.default {
        c.push(format!("default `{}`", d.0));
    }
    match (schema.minimum, schema.maximum) {
        (Some(min), Some(max)) => c.push(format!("{min}–{max}")),
        (Some(min), None) => c.push(format!("≥ {min}")),
        (None, Some(max)) => c.push(format!("≤ {max}")),
        (None, None) => {}
    }
    match (schema.min_length, schema.max_length) {
        (Some(min), Some(max)) => c.push(format!("length {min}–{max}")),
        (None, Some(max)) => c.push(format!("length ≤ {max}")),
        (Some(min), None) => c.push(format!("length ≥ {min}")),
        (None, None) => {}
    }
    if let Some(max) = schema.max_items {
        c.push(format!("at most {max} items"));
    }
    if let Some(p) = &schema.pattern {
        c.push(format!("pattern `{}`", p.replace('|', "\\|")));
    }
    c
}

fn cell(text: &str) -> String {
    text.replace('\n', " ").replace('|', "\\|")
}

fn rules(out: &mut String, path: &str, schema: &JSONSchemaProps) {
    for rule in schema.x_kubernetes_validations.iter().flatten() {
        let _ = writeln!(
            out,
            "- *CEL* on `{path}`: {}",
            cell(rule.message.as_deref().unwrap_or(&rule.rule))
        );
    }
}

fn fields(out: &mut String, path: &str, schema: &JSONSchemaProps) {
    let required = schema.required.clone().unwrap_or_default();
    let Some(props) = &schema.properties else {
        return;
    };
    for (name, child) in props {
        let child_path = format!("{path}.{name}");
        let mut description = child.description.clone().unwrap_or_default();
        let mut notes = constraints(child);
        if required.contains(name) {
            notes.insert(0, "required".to_owned());
        }
        for rule in child.x_kubernetes_validations.iter().flatten() {
            notes.push(format!(
                "CEL: {}",
                rule.message.as_deref().unwrap_or(&rule.rule)
            ));
        }
        if !notes.is_empty() {
            description = format!("{description} ({})", notes.join("; "));
        }
        let _ = writeln!(
            out,
            "| `{child_path}` | {} | {} |",
            type_of(child),
            cell(description.trim())
        );
        fields(out, &child_path, child);
        if let Some(k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrArray::Schema(item)) = &child.items {
            fields(out, &format!("{child_path}[]"), item);
        }
    }
}
