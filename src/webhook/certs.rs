//! Self-managed webhook certificates: a CA and a serving certificate kept in a Secret, the CA
//! injected as `caBundle` into the CRD's conversion webhook and the ValidatingWebhookConfiguration,
//! the serving certificate rotated 30 days before it expires, the CA a year before. During a CA
//! rotation the bundle carries both CAs, so no request fails while the API server catches up.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use time::{Duration, OffsetDateTime};

const CA_NAME: &str = "llama-stack-operator-webhook-ca";
const CA_LIFETIME: Duration = Duration::days(3650);
const SERVING_LIFETIME: Duration = Duration::days(365);
const SERVING_RENEW_BEFORE: Duration = Duration::days(30);
const CA_RENEW_BEFORE: Duration = Duration::days(365);
const SERVING_NOT_AFTER: &str = "llamastack.io/serving-not-after";
const CA_NOT_AFTER: &str = "llamastack.io/ca-not-after";

/// Certificate errors.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// Generation failed.
    #[error("cannot generate a webhook certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// The API server refused a read or write.
    #[error("cannot {action}: {source}")]
    Api {
        /// What was attempted.
        action: String,
        /// Cause.
        source: kube::Error,
    },
    /// Writing the serving files failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}

impl CertError {
    /// Whether the API server refused a write because the object was written meanwhile (409:
    /// created by another replica, or replaced since it was read).
    fn is_conflict(&self) -> bool {
        matches!(self, Self::Api { source: kube::Error::Api(status), .. } if status.code == 409)
    }
}

/// How many writes in a row may lose a race to another replica before a reconcile gives up.
const MAX_CONFLICTS: usize = 3;

/// The material kept in the Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertBundle {
    /// Current CA certificate.
    pub ca_pem: String,
    /// Current CA key.
    pub ca_key_pem: String,
    /// Serving certificate.
    pub cert_pem: String,
    /// Serving key.
    pub key_pem: String,
    /// CAs the API server must trust (current, plus the previous one during a CA rotation).
    pub ca_bundle_pem: String,
    /// Serving certificate expiry (unix seconds).
    pub serving_not_after: i64,
    /// CA expiry (unix seconds).
    pub ca_not_after: i64,
}

/// What to do with the existing material.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Nothing: still valid long enough.
    Keep,
    /// New serving certificate from the same CA.
    RotateServing,
    /// New CA and serving certificate; trust both CAs meanwhile.
    RotateCa,
    /// No usable material: create everything.
    Create,
}

/// Decides what to do at `now`.
pub fn plan(existing: Option<&CertBundle>, now: OffsetDateTime) -> Plan {
    let Some(b) = existing else {
        return Plan::Create;
    };
    let at =
        |secs: i64| OffsetDateTime::from_unix_timestamp(secs).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    if at(b.ca_not_after) - CA_RENEW_BEFORE <= now {
        Plan::RotateCa
    } else if at(b.serving_not_after) - SERVING_RENEW_BEFORE <= now {
        Plan::RotateServing
    } else {
        Plan::Keep
    }
}

fn ca_params(now: OffsetDateTime) -> Result<CertificateParams, rcgen::Error> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(DnType::CommonName, CA_NAME);
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.not_before = now - Duration::hours(1);
    params.not_after = now + CA_LIFETIME;
    Ok(params)
}

fn serving(
    ca_key_pem: &str,
    dns_names: &[String],
    now: OffsetDateTime,
) -> Result<(String, String, i64), rcgen::Error> {
    // The issuer needs the CA's subject and key; the subject is fixed, so no parsing is needed.
    let issuer = Issuer::new(ca_params(now)?, KeyPair::from_pem(ca_key_pem)?);
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(dns_names.to_vec())?;
    params.distinguished_name.push(
        DnType::CommonName,
        dns_names.first().map_or("webhook", String::as_str),
    );
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = now - Duration::hours(1);
    params.not_after = now + SERVING_LIFETIME;
    let cert = params.signed_by(&key, &issuer)?;
    Ok((
        cert.pem(),
        key.serialize_pem(),
        params.not_after.unix_timestamp(),
    ))
}

/// Applies a plan: the new bundle (or the existing one for `Keep`).
pub fn renew(
    existing: Option<&CertBundle>,
    plan: Plan,
    dns_names: &[String],
    now: OffsetDateTime,
) -> Result<Option<CertBundle>, rcgen::Error> {
    match (plan, existing) {
        (Plan::Keep, _) => Ok(None),
        (Plan::RotateServing, Some(b)) => {
            let (cert_pem, key_pem, serving_not_after) = serving(&b.ca_key_pem, dns_names, now)?;
            Ok(Some(CertBundle {
                cert_pem,
                key_pem,
                serving_not_after,
                ..b.clone()
            }))
        }
        (Plan::RotateCa | Plan::Create | Plan::RotateServing, previous) => {
            let ca_key = KeyPair::generate()?;
            let params = ca_params(now)?;
            let ca_pem = params.self_signed(&ca_key)?.pem();
            let ca_key_pem = ca_key.serialize_pem();
            let (cert_pem, key_pem, serving_not_after) = serving(&ca_key_pem, dns_names, now)?;
            let still_trusted = previous
                .filter(|p| p.ca_not_after > now.unix_timestamp() && plan == Plan::RotateCa);
            let ca_bundle_pem = match still_trusted {
                Some(p) => format!("{ca_pem}{}", p.ca_pem),
                None => ca_pem.clone(),
            };
            Ok(Some(CertBundle {
                ca_pem,
                ca_key_pem,
                cert_pem,
                key_pem,
                ca_bundle_pem,
                serving_not_after,
                ca_not_after: params.not_after.unix_timestamp(),
            }))
        }
    }
}

fn from_secret(secret: &Secret) -> Option<CertBundle> {
    let data = secret.data.as_ref()?;
    let text = |k: &str| {
        data.get(k)
            .and_then(|v| String::from_utf8(v.0.clone()).ok())
    };
    let ann = |k: &str| {
        secret
            .metadata
            .annotations
            .as_ref()?
            .get(k)?
            .parse::<i64>()
            .ok()
    };
    Some(CertBundle {
        ca_pem: text("ca.crt")?,
        ca_key_pem: text("ca.key")?,
        cert_pem: text("tls.crt")?,
        key_pem: text("tls.key")?,
        ca_bundle_pem: text("ca-bundle.crt")?,
        serving_not_after: ann(SERVING_NOT_AFTER)?,
        ca_not_after: ann(CA_NOT_AFTER)?,
    })
}

fn to_secret(
    name: &str,
    namespace: &str,
    b: &CertBundle,
    resource_version: Option<String>,
) -> Secret {
    let data: BTreeMap<String, ByteString> = [
        ("ca.crt", &b.ca_pem),
        ("ca.key", &b.ca_key_pem),
        ("tls.crt", &b.cert_pem),
        ("tls.key", &b.key_pem),
        ("ca-bundle.crt", &b.ca_bundle_pem),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), ByteString(v.clone().into_bytes())))
    .collect();
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            resource_version,
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/managed-by".to_owned(),
                "llama-stack-operator".to_owned(),
            )])),
            annotations: Some(BTreeMap::from([
                (
                    SERVING_NOT_AFTER.to_owned(),
                    b.serving_not_after.to_string(),
                ),
                (CA_NOT_AFTER.to_owned(), b.ca_not_after.to_string()),
            ])),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/tls".to_owned()),
        data: Some(data),
        ..Secret::default()
    }
}

/// Where the certificates live and whom they serve.
#[derive(Clone)]
pub struct CertManager {
    /// API client.
    pub client: kube::Client,
    /// Namespace of the Secret (the operator's).
    pub namespace: String,
    /// Secret name.
    pub secret_name: String,
    /// DNS names of the webhook Service (`svc`, `svc.ns`, `svc.ns.svc`, …).
    pub dns_names: Vec<String>,
    /// CRD whose conversion webhook gets the caBundle.
    pub crd_name: String,
    /// ValidatingWebhookConfiguration that gets the caBundle.
    pub webhook_configuration: String,
    /// Where the serving certificate and key are written for the server.
    pub cert_file: PathBuf,
    /// Key file.
    pub key_file: PathBuf,
}

impl CertManager {
    /// Ensures valid material, writes the serving files and injects the CA bundle. Returns the
    /// plan that was carried out. `now` decides what is due; certificates are always issued
    /// from the real clock.
    ///
    /// Replicas starting together race for the Secret and the injections: a write refused as a
    /// conflict (another replica wrote first) is followed by a new read, which finds that
    /// replica's material valid and serves it (`Keep`), so every replica ends on one bundle.
    pub async fn reconcile(&self, now: OffsetDateTime) -> Result<Plan, CertError> {
        let mut conflicts = 0;
        loop {
            match self.reconcile_once(now).await {
                Err(error) if error.is_conflict() && conflicts < MAX_CONFLICTS => {
                    conflicts += 1;
                    tracing::debug!(%error, "webhook certificates: another replica wrote first; reading again");
                }
                done => return done,
            }
        }
    }

    async fn reconcile_once(&self, now: OffsetDateTime) -> Result<Plan, CertError> {
        let api_err = |action: String| move |source| CertError::Api { action, source };
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        let current = secrets
            .get_opt(&self.secret_name)
            .await
            .map_err(api_err(format!(
                "read Secret {}/{}",
                self.namespace, self.secret_name
            )))?;
        let existing = current.as_ref().and_then(from_secret);
        let plan = plan(existing.as_ref(), now);
        let bundle = match renew(
            existing.as_ref(),
            plan,
            &self.dns_names,
            OffsetDateTime::now_utc(),
        )? {
            Some(new) => {
                let rv = current
                    .as_ref()
                    .and_then(|s| s.metadata.resource_version.clone());
                let secret = to_secret(&self.secret_name, &self.namespace, &new, rv.clone());
                let action = format!("write Secret {}/{}", self.namespace, self.secret_name);
                if rv.is_some() {
                    secrets
                        .replace(&self.secret_name, &PostParams::default(), &secret)
                        .await
                        .map_err(api_err(action))?;
                } else {
                    secrets
                        .create(&PostParams::default(), &secret)
                        .await
                        .map_err(api_err(action))?;
                }
                new
            }
            // `Keep` is only planned for existing material.
            None => existing.ok_or(CertError::Generate(rcgen::Error::CouldNotParseCertificate))?,
        };
        for (path, content) in [
            (&self.cert_file, &bundle.cert_pem),
            (&self.key_file, &bundle.key_pem),
        ] {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|source| CertError::Io {
                    path: dir.to_owned(),
                    source,
                })?;
            }
            if std::fs::read_to_string(path).ok().as_deref() != Some(content.as_str()) {
                std::fs::write(path, content).map_err(|source| CertError::Io {
                    path: path.clone(),
                    source,
                })?;
            }
        }
        self.inject(bundle.ca_bundle_pem.as_bytes()).await?;
        Ok(plan)
    }

    async fn inject(&self, ca_bundle: &[u8]) -> Result<(), CertError> {
        let wanted = Some(ByteString(ca_bundle.to_vec()));
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        let action = format!("inject the CA bundle into CRD {}", self.crd_name);
        if let Some(mut crd) =
            crds.get_opt(&self.crd_name)
                .await
                .map_err(|source| CertError::Api {
                    action: action.clone(),
                    source,
                })?
        {
            let config = crd
                .spec
                .conversion
                .as_mut()
                .and_then(|c| c.webhook.as_mut())
                .and_then(|w| w.client_config.as_mut());
            if let Some(config) = config
                && config.ca_bundle != wanted
            {
                config.ca_bundle = wanted.clone();
                crds.replace(&self.crd_name, &PostParams::default(), &crd)
                    .await
                    .map_err(|source| CertError::Api { action, source })?;
            }
        }
        let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(self.client.clone());
        let action = format!(
            "inject the CA bundle into ValidatingWebhookConfiguration {}",
            self.webhook_configuration
        );
        if let Some(mut vwc) =
            vwcs.get_opt(&self.webhook_configuration)
                .await
                .map_err(|source| CertError::Api {
                    action: action.clone(),
                    source,
                })?
        {
            let mut changed = false;
            for webhook in vwc.webhooks.iter_mut().flatten() {
                if webhook.client_config.ca_bundle != wanted {
                    webhook.client_config.ca_bundle = wanted.clone();
                    changed = true;
                }
            }
            if changed {
                vwcs.replace(&self.webhook_configuration, &PostParams::default(), &vwc)
                    .await
                    .map_err(|source| CertError::Api { action, source })?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_follow_the_expiry_dates() {
        let now = OffsetDateTime::now_utc();
        assert_eq!(plan(None, now), Plan::Create);
        let b = renew(None, Plan::Create, &["svc.ns.svc".into()], now)
            .unwrap()
            .unwrap();
        assert_eq!(plan(Some(&b), now), Plan::Keep);
        assert_eq!(
            plan(Some(&b), now + SERVING_LIFETIME - Duration::days(29)),
            Plan::RotateServing
        );
        assert_eq!(
            plan(Some(&b), now + CA_LIFETIME - Duration::days(364)),
            Plan::RotateCa
        );
        let rotated = renew(Some(&b), Plan::RotateServing, &["svc.ns.svc".into()], now)
            .unwrap()
            .unwrap();
        assert_eq!(rotated.ca_pem, b.ca_pem, "a serving rotation keeps the CA");
        assert_ne!(rotated.cert_pem, b.cert_pem);
        let new_ca = renew(Some(&b), Plan::RotateCa, &["svc.ns.svc".into()], now)
            .unwrap()
            .unwrap();
        assert_ne!(new_ca.ca_pem, b.ca_pem);
        assert_eq!(
            new_ca.ca_bundle_pem,
            format!("{}{}", new_ca.ca_pem, b.ca_pem),
            "both CAs are trusted during a CA rotation"
        );
    }
}
