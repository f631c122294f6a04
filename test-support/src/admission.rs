//! What admission says of one object, in a form both sides of a differential test share: the
//! API server's verdict on a dry-run create, and the offline validator's
//! (`llama-stack-operator validate`). Used for LlamaStackDistributions (with the webhooks) and
//! for `OGXServer`s (their CRD alone).

use std::collections::BTreeSet;

use llama_stack_operator::validate::Verdict;
use serde_json::Value;

/// Admitted, or refused at these fields.
#[derive(Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Whether the object would be stored.
    pub admitted: bool,
    /// The fields it was refused at.
    pub fields: BTreeSet<String>,
}

impl Outcome {
    fn admitted() -> Self {
        Self {
            admitted: true,
            fields: BTreeSet::new(),
        }
    }

    /// The offline validator's verdict; `Err` when it did not judge the object (not its kind).
    pub fn of_verdict(verdict: Verdict) -> Result<Self, String> {
        match verdict {
            Verdict::Valid { .. } => Ok(Self::admitted()),
            Verdict::Invalid { causes, .. } => Ok(Self {
                admitted: false,
                fields: causes.into_iter().map(|c| c.field).collect(),
            }),
            Verdict::Skipped { what } => Err(format!("skipped ({what})")),
        }
    }
}

/// The API server's verdict on creating `object` in `collection` (`/apis/<group>/<version>/
/// namespaces/<ns>/<plural>`) as a dry run with strict field validation, what `kubectl apply
/// --dry-run=server` sends for a new object (admission webhooks are called as for a real create),
/// and the server's words. Unknown fields come back in the message of a 400 (no causes), an
/// unserved version as a 404, everything else as the causes of a 422.
pub async fn dry_run(
    client: &kube::Client,
    collection: &str,
    object: &Value,
) -> Result<(Outcome, String), crate::process::Error> {
    let request = http::Request::post(format!("{collection}?dryRun=All&fieldValidation=Strict"))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(object)?)?;
    let status = match client.request::<Value>(request).await {
        Ok(_) => return Ok((Outcome::admitted(), String::new())),
        Err(kube::Error::Api(status)) => status,
        Err(other) => return Err(format!("the API server did not answer: {other}").into()),
    };
    let fields = match status.code {
        404 => ["apiVersion".to_owned()].into(),
        400 => {
            let unknown = regex::Regex::new(r#"unknown field "([^"]+)""#)?;
            unknown
                .captures_iter(&status.message)
                .map(|c| c[1].to_owned())
                .collect()
        }
        _ => status
            .details
            .iter()
            .flat_map(|d| d.causes.iter())
            .map(|c| c.field.clone())
            .collect(),
    };
    let said = format!("{} {}", status.code, status.message);
    Ok((
        Outcome {
            admitted: false,
            fields,
        },
        said,
    ))
}
