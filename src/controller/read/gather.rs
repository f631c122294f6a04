//! The gather step: every read the decision of a reconcile needs, done first, into one
//! [`Observed`] value, so that [`crate::core::decide`] is a pure function of the stack and what was
//! read. Nothing here decides what to do; a read that fails is an [`Error`] (an API hiccup is
//! retried with backoff and never fails the stack), while what was read and found wanting (a
//! missing Secret, a malformed pull secret) is recorded as found for the decision to judge.
//!
//! What to read is the core's to say ([`reads`]), asked twice: first which image is resolved
//! (the pin policy's choice: [`reads::image`]), then, once the Deployment and the referenced
//! Secrets are read, the derived Secret's name (it carries their hash) and whether the
//! ReplicaSets are read ([`reads::later`]). Reads the decision may not use are made only where cheap and rare (the derived Secret's
//! metadata when the spec has a connection string, the ReplicaSets while a rejected revision may
//! need restoring).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Secret, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use llama_stack_resolver::add_pull_secret;
use llama_stack_resolver::{CredentialSource, Keyring};
use llama_stack_resolver::{Resolution, ResolveError, Resolver};

use super::by_name::{self, Named};
use super::observe;
use super::take_over;
use crate::api::object_refs::RefKind;
use crate::api::ogx::OGXServer;
use crate::controller::context::Context;
use crate::controller::error::{ApiError, Error, Gathering, api_err};
use crate::controller::memory::default_accounts::DEFAULT_ACCOUNT;
use crate::controller::memory::owned_index::Known;
use crate::core::adoption;
use crate::core::migration;
use crate::core::migration::step::JobSeen;
use crate::core::observed::{Observed, Reach};
use crate::core::reads;
use crate::core::stack::Stack;
use crate::core::take_over::seen::other_writers;

/// Reads everything the decision needs, in the order the decision uses it. First the
/// Deployment, then what the stack's annotations ask to take over
/// ([`take_over::survey`], reads only): it names the volume the stack mounts, kept in
/// `stack.adoption` for the reads and the objects after it.
pub(in crate::controller) async fn gather(
    stack: &mut Stack<'_>,
    ctx: &Context,
) -> Result<Observed, Error> {
    let deployment = deployment(stack, ctx)
        .await
        .map_err(Error::gather(Gathering::Workload))?;
    let take_over = take_over::survey(stack, ctx, deployment.as_ref())
        .await
        .map_err(Error::gather(Gathering::TakeOver))?;
    stack.adoption = take_over.adopted.clone();
    let stack: &Stack<'_> = stack;
    let resolver = ctx.resolver();
    let (reference, kept) = reads::image(stack, &resolver, jiff::Timestamp::now());
    let (keyring, pull_secrets) = pull_keyring(stack, ctx)
        .await
        .map_err(Error::gather(Gathering::Plan))?;
    let kept_image = kept.as_ref().map(|k| k.image);
    let (pull_secret_unusable, resolution) = match keyring {
        Err(why) => (Some(why), None),
        Ok(keyring) => (
            None,
            Some(resolve(stack, &resolver, kept_image, &keyring).await),
        ),
    };
    let user_config = user_config(stack, ctx)
        .await
        .map_err(Error::gather(Gathering::Plan))?;
    let secrets = referenced_secrets(stack, ctx)
        .await
        .map_err(Error::gather(Gathering::References))?;
    let later = reads::later(stack, deployment.as_ref(), &secrets);
    let derived_secret = derived_secret(stack, ctx, later.derived_secret.as_deref())
        .await
        .map_err(Error::gather(Gathering::References))?;
    let ca_bundles = ca_bundles(stack, ctx).await?;
    let client_certificate = client_certificate(stack, ctx)
        .await
        .map_err(Error::gather(Gathering::References))?;
    let claim = claim(stack, ctx).await?;
    let claim_taker_gone = taker_gone(stack, ctx, claim.as_ref())
        .await
        .map_err(Error::gather(Gathering::Workload))?;
    let replica_sets = match later.replica_sets {
        true => Some(
            observe::revisions(stack, ctx)
                .await
                .map_err(Error::gather(Gathering::Workload))?,
        ),
        false => None,
    };
    let migration_job = migration_job(stack, ctx)
        .await
        .map_err(Error::gather(Gathering::Workload))?;
    Ok(Observed {
        migration_job,
        reach: Reach::Cluster,
        deployment,
        pull_secrets,
        pull_secret_unusable,
        reference,
        kept_pin_from: kept.map(|k| k.from.to_owned()),
        resolution,
        user_config,
        secrets,
        derived_secret,
        ca_bundles,
        client_certificate,
        claim,
        claim_taker_gone,
        replica_sets,
        take_over,
    })
}

/// The Job of the Praxis migration's name, for a server that asks for the migration or whose
/// status recorded one (turned off, its Job may still run).
async fn migration_job(stack: &Stack<'_>, ctx: &Context) -> Result<Option<JobSeen>, ApiError> {
    let wanted = stack.networking.gateway.and_then(|g| g.migration.as_ref());
    let recorded = stack.recorded.status.and_then(|s| s.migration.as_ref());
    if wanted.is_none() && recorded.is_none() {
        return Ok(None);
    }
    let (ns, name) = (stack.namespace(), migration::job_name(stack.name()));
    let job = Api::<Job>::namespaced(ctx.client.clone(), ns)
        .get_opt(&name)
        .await
        .map_err(api_err(format!("read Job {ns}/{name}")))?;
    Ok(job.map(|job| JobSeen::of(&job, stack.uid())))
}

/// The user's ConfigMap: the whole config (overrideConfig), or the base (baseConfig); the schema
/// allows one of them.
async fn user_config(stack: &Stack<'_>, ctx: &Context) -> Result<Option<ConfigMap>, ApiError> {
    let Some(named) = stack.user_config_map else {
        return Ok(None);
    };
    let (ns, name, field) = (stack.namespace(), named.name, named.role.field());
    let action = format!("read ConfigMap {ns}/{name} ({field})");
    config_map(ctx, stack, ns, name, action).await
}

/// The ConfigMap of the client certificate the server presents, when one is named.
async fn client_certificate(
    stack: &Stack<'_>,
    ctx: &Context,
) -> Result<Option<ConfigMap>, ApiError> {
    let Some(identity) = stack.networking.client_identity else {
        return Ok(None);
    };
    let (ns, name) = (stack.namespace(), &identity.certificate.name);
    config_map(ctx, stack, ns, name, format!("read ConfigMap {ns}/{name}")).await
}

/// The Deployment of the same name, if any. Not read for a stack no operator has written a
/// status for while the Deployments' watches see none of that name: none of its own can exist
/// (see `write::Indexed::untouched`), and a stranger's of that name is found by the apply's
/// write, as after a read.
async fn deployment(stack: &Stack<'_>, ctx: &Context) -> Result<Option<Deployment>, ApiError> {
    let ns = stack.namespace();
    let name = stack.name();
    let unseen = matches!(
        ctx.owned.lookup("Deployment", ns, name, stack.generation()),
        Known::Absent { .. }
    );
    if unseen && !stack.recorded.written {
        return Ok(None);
    }
    Api::<Deployment>::namespaced(ctx.client.clone(), ns)
        .get_opt(name)
        .await
        .map_err(api_err(format!("read Deployment {ns}/{name}")))
}

/// The distribution's image and base config: the pinned image while the pin is `kept`, else the
/// one the resolver chooses now.
async fn resolve(
    stack: &Stack<'_>,
    resolver: &Resolver,
    kept: Option<&str>,
    keyring: &Keyring,
) -> Result<Resolution, Arc<ResolveError>> {
    let (distribution, image_config) = (&stack.distribution, stack.image_config);
    match kept {
        Some(image) => {
            resolver
                .resolve_pinned(distribution, image_config, image, keyring)
                .await
        }
        None => {
            resolver
                .resolve_choosing(distribution, image_config, keyring)
                .await
        }
    }
}

/// The ConfigMaps `networking.tls` names as CA bundles, in its order (`None`: not found).
async fn ca_bundles(stack: &Stack<'_>, ctx: &Context) -> Result<Vec<Option<ConfigMap>>, Error> {
    let mut bundles = Vec::with_capacity(stack.networking.ca_bundles.len());
    for (_, config) in &stack.networking.ca_bundles {
        let ns = config
            .config_map_namespace
            .as_deref()
            .unwrap_or(stack.namespace());
        let name = &config.config_map_name;
        let read = config_map(ctx, stack, ns, name, format!("read ConfigMap {ns}/{name}"))
            .await
            .map_err(Error::gather(Gathering::References))?;
        bundles.push(read);
    }
    Ok(bundles)
}

/// The data volume's claim, with `workload.storage`.
async fn claim(stack: &Stack<'_>, ctx: &Context) -> Result<Option<PersistentVolumeClaim>, Error> {
    let Some(_) = stack.storage else {
        return Ok(None);
    };
    let (ns, name) = (stack.namespace(), stack.claim_name());
    Api::<PersistentVolumeClaim>::namespaced(ctx.client.clone(), ns)
        .get_opt(&name)
        .await
        .map_err(api_err(format!("read PersistentVolumeClaim {ns}/{name}")))
        .map_err(Error::gather(Gathering::Workload))
}

/// Whether the `OGXServer` that took the stack's claim no longer exists, nor its Deployment
/// (which would make Pods again until the garbage collector deletes it), and no Pod of another
/// may still write the claim (read only for a stack whose claim another took: rare): then the
/// stack takes it back (a LlamaStackDistribution whose server was deleted, or an `OGXServer` of
/// its name moved in place since). While the server's Pods stop, it waits, as a take does.
async fn taker_gone(
    stack: &Stack<'_>,
    ctx: &Context,
    claim: Option<&PersistentVolumeClaim>,
) -> Result<bool, ApiError> {
    let Some(taker) = claim.and_then(|c| adoption::taker(&c.metadata, stack.name())) else {
        return Ok(false);
    };
    let ns = stack.namespace();
    let server = Api::<OGXServer>::namespaced(ctx.client.clone(), ns)
        .get_metadata_opt(taker)
        .await
        .map_err(api_err(format!("read OGXServer {ns}/{taker}")))?;
    if server.is_some_and(|s| s.metadata.deletion_timestamp.is_none()) {
        return Ok(false);
    }
    let deployment = Api::<Deployment>::namespaced(ctx.client.clone(), ns)
        .get_metadata_opt(taker)
        .await
        .map_err(api_err(format!("read Deployment {ns}/{taker}")))?;
    if deployment.is_some() {
        return Ok(false);
    }
    let claim_name = stack.claim_name();
    let pods = take_over::pods_seen(ctx, ns, &claim_name).await?;
    Ok(other_writers(&pods, stack.name(), &claim_name) == 0)
}

/// The credentials kubelet would use for the server Pod, and their Secret names: the pod template
/// has no pull secrets, so those of its ServiceAccount: the user's
/// (`workload.overrides.serviceAccountName`), else the namespace's `default`, whose list the
/// managed `<cr>-sa` copies (the `default` one's list as its watch has it, when it has listed).
/// Missing Secrets are skipped, as kubelet does; a malformed one makes
/// the keyring unusable (`Err`: why), as the pull would fail.
async fn pull_keyring(
    stack: &Stack<'_>,
    ctx: &Context,
) -> Result<(Result<Keyring, String>, Vec<String>), ApiError> {
    let ns = stack.namespace();
    let (sa_name, listed) = match stack.user_service_account() {
        Some(name) => (name, None),
        None => (
            DEFAULT_ACCOUNT,
            ctx.default_accounts
                .pull_secrets(ns, stack.door.managed_by()),
        ),
    };
    let names = match listed {
        Some(names) => names,
        None => {
            let sa = Api::<ServiceAccount>::namespaced(ctx.client.clone(), ns)
                .get_opt(sa_name)
                .await
                .map_err(api_err(format!(
                    "read ServiceAccount {ns}/{sa_name} for its imagePullSecrets"
                )))?;
            sa.and_then(|sa| sa.image_pull_secrets)
                .unwrap_or_default()
                .into_iter()
                .map(|r| r.name)
                .collect()
        }
    };
    let mut keyring = Keyring::default();
    for name in &names {
        let named = Named {
            namespace: ns,
            name,
            door: stack.door.managed_by(),
        };
        let secret = by_name::read(&ctx.client, &ctx.secrets, named, || {
            format!("read pull secret {ns}/{name}")
        })
        .await?;
        let Some(secret) = secret else { continue };
        let data = secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        let source = CredentialSource {
            namespace: ns.to_owned(),
            name: name.clone(),
        };
        let kind = secret.type_.as_deref().unwrap_or_default();
        if let Err(e) = add_pull_secret(&mut keyring, source, kind, &data) {
            return Ok((Err(e.to_string()), names));
        }
    }
    Ok((Ok(keyring), names))
}

/// The ConfigMap `ns/name` the stack references, if it exists (`action` says what was read, for
/// an error).
async fn config_map(
    ctx: &Context,
    stack: &Stack<'_>,
    ns: &str,
    name: &str,
    action: String,
) -> Result<Option<ConfigMap>, ApiError> {
    let named = Named {
        namespace: ns,
        name,
        door: stack.door.managed_by(),
    };
    by_name::read(&ctx.client, &ctx.config_maps, named, || action).await
}

/// Every Secret the spec references, each read once.
async fn referenced_secrets(
    stack: &Stack<'_>,
    ctx: &Context,
) -> Result<BTreeMap<String, Option<Secret>>, ApiError> {
    let ns = stack.namespace();
    let mut fetched = BTreeMap::new();
    for r in stack
        .references
        .iter()
        .filter(|r| r.kind == RefKind::Secret)
    {
        if fetched.contains_key(&r.name) {
            continue;
        }
        let named = Named {
            namespace: ns,
            name: &r.name,
            door: stack.door.managed_by(),
        };
        let secret = by_name::read(&ctx.client, &ctx.secrets, named, || {
            format!("read Secret {ns}/{}", r.name)
        })
        .await?;
        fetched.insert(r.name.clone(), secret);
    }
    Ok(fetched)
}

/// The metadata of whatever holds the derived Secret's `name`, when the core asks for it: the
/// stack has a connection string to split and every referenced Secret was found (the name
/// carries their hash: [`reads::derived_secret`]).
async fn derived_secret(
    stack: &Stack<'_>,
    ctx: &Context,
    name: Option<&str>,
) -> Result<Option<ObjectMeta>, ApiError> {
    let Some(name) = name else {
        return Ok(None);
    };
    let ns = stack.namespace();
    let existing = Api::<Secret>::namespaced(ctx.client.clone(), ns)
        .get_metadata_opt(name)
        .await
        .map_err(api_err(format!("read Secret {ns}/{name}")))?;
    Ok(existing.map(|meta| meta.metadata))
}
