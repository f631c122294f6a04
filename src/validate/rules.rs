//! The CRD's `x-kubernetes-validations` rules, evaluated as CEL over the object, as the API
//! server evaluates them: at each node of the schema that holds rules and is present in the
//! object, with `self` bound to that node's value. The rules come from the CRD itself, so a
//! rule added to the API is checked here without a line of this file changing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrBool, ValidationRule,
};
use serde_json::Value;

use super::cause::{Cause, CauseType};

/// Compiled rules, kept by their text (a CRD has a few dozen).
#[derive(Default)]
pub struct Rules {
    compiled: Mutex<HashMap<String, Arc<cel::Program>>>,
}

/// A rule that cannot be evaluated offline (it does not compile, or uses what this evaluator
/// lacks): the object is refused with it rather than passed unchecked.
fn unevaluable(path: &str, rule: &str, detail: &str) -> Cause {
    Cause::new(
        CauseType::Invalid,
        path,
        format!("rule {rule:?} could not be evaluated offline: {detail}"),
    )
}

impl Rules {
    fn program(&self, rule: &str) -> Result<Arc<cel::Program>, String> {
        let mut compiled = self
            .compiled
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(program) = compiled.get(rule) {
            return Ok(program.clone());
        }
        let program = Arc::new(cel::Program::compile(rule).map_err(|e| e.to_string())?);
        compiled.insert(rule.to_owned(), program.clone());
        Ok(program)
    }

    /// Every rule of `schema` and below it that `value` breaks, at `path`.
    pub fn check(&self, schema: &JSONSchemaProps, value: &Value, path: &str, out: &mut Vec<Cause>) {
        for rule in schema.x_kubernetes_validations.iter().flatten() {
            if let Some(cause) = self.evaluate(rule, value, path) {
                out.push(cause);
            }
        }
        match value {
            Value::Object(fields) => {
                for (key, child) in fields {
                    // A property is a child of the path, a map's key is indexed (`labels[app]`).
                    let declared = schema.properties.as_ref().and_then(|p| p.get(key));
                    let (child_schema, child_path) = match (declared, &schema.additional_properties)
                    {
                        (Some(s), _) if path.is_empty() => (s, key.clone()),
                        (Some(s), _) => (s, format!("{path}.{key}")),
                        (None, Some(JSONSchemaPropsOrBool::Schema(s))) => {
                            (&**s, format!("{path}[{key}]"))
                        }
                        (None, _) => continue,
                    };
                    self.check(child_schema, child, &child_path, out);
                }
            }
            Value::Array(list) => {
                if let Some(item_schema) = super::schema::items(schema) {
                    for (i, item) in list.iter().enumerate() {
                        self.check(item_schema, item, &format!("{path}[{i}]"), out);
                    }
                }
            }
            _ => {}
        }
    }

    fn evaluate(&self, rule: &ValidationRule, value: &Value, path: &str) -> Option<Cause> {
        let outcome = self.program(&rule.rule).and_then(|program| {
            let mut context = cel::Context::default();
            super::quantity::add_to(&mut context);
            context.add_variable_from_value("self", cel_value(value));
            program.execute(&context).map_err(|e| e.to_string())
        });
        let field = match rule.field_path.as_deref() {
            Some(field_path) if !field_path.is_empty() => {
                format!("{path}{}", normalize_field_path(field_path))
            }
            _ => path.to_owned(),
        };
        match outcome {
            Ok(cel::Value::Bool(true)) => None,
            Ok(cel::Value::Bool(false)) => Some(Cause::new(
                CauseType::from_reason(rule.reason.as_deref()),
                &field,
                refusal_text(value, &self.message(rule, value)),
            )),
            Ok(other) => Some(unevaluable(
                &field,
                &rule.rule,
                &format!("gave {other:?}, not a bool"),
            )),
            Err(detail) => Some(unevaluable(&field, &rule.rule, &detail)),
        }
    }

    /// The rule's message: `messageExpression` when it evaluates to a string, else `message`,
    /// else the API server's default naming the rule.
    fn message(&self, rule: &ValidationRule, value: &Value) -> String {
        let from_expression = rule.message_expression.as_deref().and_then(|expression| {
            let program = self.program(expression).ok()?;
            let mut context = cel::Context::default();
            super::quantity::add_to(&mut context);
            context.add_variable_from_value("self", cel_value(value));
            match program.execute(&context).ok()? {
                cel::Value::String(text) => Some(text.to_string()),
                _ => None,
            }
        });
        from_expression
            .or_else(|| rule.message.clone())
            .unwrap_or_else(|| format!("failed rule: {}", rule.rule))
    }
}

/// A JSON value as CEL sees it: every integer an `int` (as the API server types a schema's
/// integers), so that arithmetic between them works.
fn cel_value(value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => cel::Value::Int(i),
            None => n
                .as_u64()
                .map(cel::Value::UInt)
                .unwrap_or_else(|| cel::Value::Float(n.as_f64().unwrap_or_default())),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(list) => cel::Value::List(Arc::new(list.iter().map(cel_value).collect())),
        Value::Object(fields) => {
            // A field set to null is not set for CEL: `has(self.name)` is false for `name: null`
            // (the API server admits `{name: null, image: ...}` against a rule refusing both).
            let map: HashMap<cel::objects::Key, cel::Value> = fields
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (cel::objects::Key::String(Arc::new(k.clone())), cel_value(v)))
                .collect();
            cel::Value::Map(cel::objects::Map { map: Arc::new(map) })
        }
    }
}

/// `fieldPath` as written in the CRD (`.minReplicas`, `['key']`) appended to a path.
fn normalize_field_path(field_path: &str) -> String {
    if field_path.starts_with('.') || field_path.starts_with('[') {
        field_path.to_owned()
    } else {
        format!(".{field_path}")
    }
}

/// The text of a rule's refusal as the API server (1.35) writes it: a scalar's value is shown,
/// an object's or list's is not.
fn refusal_text(value: &Value, message: &str) -> String {
    match value {
        Value::Object(_) | Value::Array(_) => format!("Invalid value: {message}"),
        scalar => format!("Invalid value: {scalar}: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        JSONSchemaProps, ValidationRule,
    };
    use serde_json::json;

    use super::Rules;

    fn schema(rules: &[(&str, Option<&str>)]) -> JSONSchemaProps {
        JSONSchemaProps {
            x_kubernetes_validations: Some(
                rules
                    .iter()
                    .map(|(rule, message_expression)| ValidationRule {
                        rule: (*rule).to_owned(),
                        message: Some(format!("broke {rule}")),
                        message_expression: message_expression.map(ToOwned::to_owned),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }
    }

    fn causes(schema: &JSONSchemaProps, value: serde_json::Value) -> Vec<String> {
        let mut out = Vec::new();
        Rules::default().check(schema, &value, "spec", &mut out);
        out.into_iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn the_constructs_the_crd_uses_evaluate_as_the_api_server_does() {
        let both = schema(&[("!(has(self.name) && has(self.image))", None)]);
        assert!(causes(&both, json!({"name": "starter"})).is_empty());
        assert_eq!(
            causes(&both, json!({"name": "a", "image": "b"})),
            ["spec: Invalid value: broke !(has(self.name) && has(self.image))"]
        );
        let bounds = schema(&[(
            "!has(self.minReplicas) || self.maxReplicas >= self.minReplicas",
            None,
        )]);
        assert!(causes(&bounds, json!({"maxReplicas": 3})).is_empty());
        assert_eq!(
            causes(&bounds, json!({"maxReplicas": 1, "minReplicas": 2})).len(),
            1
        );
        let listed = schema(&[(
            "self in ['inference', 'safety']",
            Some("'unknown API name \"' + self + '\"'"),
        )]);
        assert!(causes(&listed, json!("safety")).is_empty());
        assert_eq!(
            causes(&listed, json!("evals")),
            ["spec: Invalid value: \"evals\": unknown API name \"evals\""]
        );
        let typed = schema(&[("self.type != 'redis' || has(self.endpoint)", None)]);
        assert!(causes(&typed, json!({"type": "sqlite"})).is_empty());
        assert_eq!(causes(&typed, json!({"type": "redis"})).len(), 1);
    }

    #[test]
    fn a_rule_that_cannot_be_evaluated_refuses_rather_than_passes() {
        let broken = schema(&[("self.(", None)]);
        let found = causes(&broken, json!({}));
        assert_eq!(found.len(), 1);
        assert!(
            found[0].contains("could not be evaluated offline"),
            "{found:?}"
        );
    }
}
