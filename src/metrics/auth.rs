//! Who may read `/metrics`: the bearer of a token the API server authenticates (TokenReview) and
//! authorizes for `get` on the non-resource URL `/metrics` (SubjectAccessReview), the checks
//! kube-rbac-proxy and controller-runtime's metrics filter make. A Prometheus bound to the
//! `llama-stack-operator-metrics-reader` ClusterRole scrapes; anyone else in the cluster network
//! gets 401 or 403. `/healthz` and `/readyz` stay open for the kubelet's probes.
//!
//! Decisions are remembered for a minute by the SHA-256 of the token (never the token), so a
//! scrape every 15 s costs the API server two reviews a minute per scraper at most. An API
//! server that cannot be asked is answered 503 and nothing is remembered.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use sha2::{Digest, Sha256};

/// The path reviewed in the SubjectAccessReview.
pub const METRICS_PATH: &str = "/metrics";
/// How long a decision is remembered.
const REMEMBER: Duration = Duration::from_secs(60);
/// Tokens remembered at most; the memory is emptied when it is full.
const MAX_REMEMBERED: usize = 1024;

/// The answer to one scrape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScrapeVerdict {
    /// Authenticated and allowed.
    Allowed,
    /// No bearer token, or one the API server does not accept (401).
    Unauthenticated(String),
    /// Authenticated, not allowed to `get /metrics` (403).
    Forbidden(String),
    /// The API server could not be asked (503); not remembered.
    Unavailable(String),
}

/// The bearer token of an `Authorization` header value, if it carries one.
pub fn bearer_token(header: Option<&str>) -> Option<&str> {
    let value = header?.trim();
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The TokenReview that asks who holds `token`.
fn token_review(token: &str) -> TokenReview {
    TokenReview {
        spec: TokenReviewSpec {
            token: Some(token.to_owned()),
            ..TokenReviewSpec::default()
        },
        ..TokenReview::default()
    }
}

/// The SubjectAccessReview that asks whether the reviewed user may `get /metrics`.
fn access_review(review: &TokenReview) -> Result<SubjectAccessReview, ScrapeVerdict> {
    let status = review.status.clone().unwrap_or_default();
    if status.authenticated != Some(true) {
        let why = status
            .error
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| "the token is not valid".to_owned());
        return Err(ScrapeVerdict::Unauthenticated(why));
    }
    let user = status.user.unwrap_or_default();
    Ok(SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username,
            groups: user.groups,
            uid: user.uid,
            extra: user.extra,
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(METRICS_PATH.to_owned()),
                verb: Some("get".to_owned()),
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    })
}

/// The decision a SubjectAccessReview's answer makes.
fn access_decision(review: &SubjectAccessReview) -> ScrapeVerdict {
    let user = review.spec.user.clone().unwrap_or_default();
    match &review.status {
        Some(status) if status.allowed => ScrapeVerdict::Allowed,
        Some(status) => ScrapeVerdict::Forbidden(format!(
            "{user} may not get {METRICS_PATH}{}",
            status
                .reason
                .as_deref()
                .filter(|r| !r.is_empty())
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        )),
        None => {
            ScrapeVerdict::Unavailable("the API server answered no access review status".into())
        }
    }
}

/// Reviews scrapers' tokens with the API server.
pub struct MetricsAuth {
    client: kube::Client,
    remembered: Mutex<HashMap<[u8; 32], (Instant, ScrapeVerdict)>>,
}

impl MetricsAuth {
    /// Reviews with `client` (the operator's own credentials, which need `system:auth-delegator`).
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            remembered: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the bearer of this `Authorization` header may read the metrics.
    pub async fn check(&self, authorization: Option<&str>) -> ScrapeVerdict {
        let Some(token) = bearer_token(authorization) else {
            return ScrapeVerdict::Unauthenticated("no bearer token".to_owned());
        };
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(decision) = self.remembered(&key) {
            return decision;
        }
        let decision = self.review(token).await;
        if !matches!(decision, ScrapeVerdict::Unavailable(_)) {
            self.remember(key, decision.clone());
        }
        decision
    }

    async fn review(&self, token: &str) -> ScrapeVerdict {
        let reviews: Api<TokenReview> = Api::all(self.client.clone());
        let reviewed = match reviews
            .create(&PostParams::default(), &token_review(token))
            .await
        {
            Ok(reviewed) => reviewed,
            Err(e) => return ScrapeVerdict::Unavailable(format!("cannot review the token: {e}")),
        };
        let question = match access_review(&reviewed) {
            Ok(question) => question,
            Err(decision) => return decision,
        };
        let access: Api<SubjectAccessReview> = Api::all(self.client.clone());
        match access.create(&PostParams::default(), &question).await {
            Ok(answer) => access_decision(&answer),
            Err(e) => {
                ScrapeVerdict::Unavailable(format!("cannot review access to {METRICS_PATH}: {e}"))
            }
        }
    }

    fn remembered(&self, key: &[u8; 32]) -> Option<ScrapeVerdict> {
        let memory = self.remembered.lock().unwrap_or_else(|p| p.into_inner());
        memory
            .get(key)
            .filter(|(at, _)| at.elapsed() < REMEMBER)
            .map(|(_, decision)| decision.clone())
    }

    fn remember(&self, key: [u8; 32], decision: ScrapeVerdict) {
        let mut memory = self.remembered.lock().unwrap_or_else(|p| p.into_inner());
        if memory.len() >= MAX_REMEMBERED {
            memory.clear();
        }
        memory.insert(key, (Instant::now(), decision));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::authentication::v1::{TokenReviewStatus, UserInfo};
    use k8s_openapi::api::authorization::v1::SubjectAccessReviewStatus;

    #[test]
    fn only_a_bearer_token_is_taken() {
        assert_eq!(bearer_token(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(Some("bearer  abc ")), Some("abc"));
        assert_eq!(bearer_token(Some("Basic dXNlcjpwYXNz")), None);
        assert_eq!(bearer_token(Some("Bearer ")), None);
        assert_eq!(bearer_token(Some("Bearer")), None);
        assert_eq!(bearer_token(None), None);
    }

    fn reviewed(authenticated: bool, error: Option<&str>) -> TokenReview {
        TokenReview {
            status: Some(TokenReviewStatus {
                authenticated: Some(authenticated),
                error: error.map(str::to_owned),
                user: Some(UserInfo {
                    username: Some("system:serviceaccount:monitoring:prometheus".into()),
                    groups: Some(vec!["system:serviceaccounts".into()]),
                    uid: Some("u-1".into()),
                    extra: None,
                }),
                ..TokenReviewStatus::default()
            }),
            ..token_review("t")
        }
    }

    #[test]
    fn the_access_question_is_about_the_reviewed_user_and_get_metrics() {
        let question = access_review(&reviewed(true, None)).unwrap();
        assert_eq!(
            question.spec.user.as_deref(),
            Some("system:serviceaccount:monitoring:prometheus")
        );
        assert_eq!(
            question.spec.groups,
            Some(vec!["system:serviceaccounts".to_owned()])
        );
        let attributes = question.spec.non_resource_attributes.unwrap();
        assert_eq!(
            (attributes.path.as_deref(), attributes.verb.as_deref()),
            (Some("/metrics"), Some("get"))
        );
        assert!(question.spec.resource_attributes.is_none());
    }

    #[test]
    fn an_unauthenticated_token_is_refused_with_the_api_servers_reason() {
        assert_eq!(
            access_review(&reviewed(false, Some("token expired"))).unwrap_err(),
            ScrapeVerdict::Unauthenticated("token expired".into())
        );
        assert_eq!(
            access_review(&reviewed(false, None)).unwrap_err(),
            ScrapeVerdict::Unauthenticated("the token is not valid".into())
        );
        assert!(matches!(
            access_review(&token_review("t")).unwrap_err(),
            ScrapeVerdict::Unauthenticated(_)
        ));
    }

    #[test]
    fn the_access_answer_decides() {
        let mut answer = access_review(&reviewed(true, None)).unwrap();
        answer.status = Some(SubjectAccessReviewStatus {
            allowed: true,
            ..SubjectAccessReviewStatus::default()
        });
        assert_eq!(access_decision(&answer), ScrapeVerdict::Allowed);
        answer.status = Some(SubjectAccessReviewStatus {
            allowed: false,
            reason: Some("no RBAC policy matched".into()),
            ..SubjectAccessReviewStatus::default()
        });
        assert_eq!(
            access_decision(&answer),
            ScrapeVerdict::Forbidden(
                "system:serviceaccount:monitoring:prometheus may not get /metrics: no RBAC policy matched"
                    .into()
            )
        );
        answer.status = None;
        assert!(matches!(
            access_decision(&answer),
            ScrapeVerdict::Unavailable(_)
        ));
    }
}
