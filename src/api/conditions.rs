//! The condition types and reasons a LlamaStackDistribution's status carries, as types. They are
//! part of the API: users alert on them and `docs/troubleshooting.md` documents each one, so they
//! are spelt once, here.

/// Declares a field-less enum whose variants are written in the status exactly as named.
macro_rules! status_words {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The word written in the status.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => stringify!($variant)),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

status_words! {
    /// `status.conditions[].type`.
    ConditionType {
        /// The config was generated (or the user's `overrideConfig` read) from the resolved image.
        ConfigGenerated,
        /// Every referenced Secret and key exists.
        SecretsResolved,
        /// The Deployment carries the current image and config.
        DeploymentUpdated,
        /// Enough replicas of the current revision are available.
        Available,
        /// Every desired replica is updated and ready.
        DeploymentReady,
        /// At least one replica passes the server's health probe.
        HealthCheck,
        /// The Service in front of the server exists.
        ServiceReady,
        /// The data volume is bound (only with `workload.storage`).
        StorageReady,
        /// Every external provider was installed and validated in the newest Pod.
        ExternalProvidersReady,
        /// The running server answered `/v1/version` and `/v1/providers` through its Service
        /// (read when the stack is Ready, at a bounded rate).
        ServerResponding,
        /// Summary: the stack serves its current spec (phase `Ready`). What `kubectl wait
        /// --for=condition=Ready` and kstatus (Flux, Argo CD, kpt) read.
        Ready,
        /// Summary, present only while True: the operator is converging the stack on its spec
        /// (phases `Pending` and `Initializing`); kstatus reads it as in progress.
        Reconciling,
        /// Summary, present only while True: the stack cannot progress until a person acts
        /// (phase `Failed`); kstatus reads it as failed.
        Stalled,
        /// `OGXServer` only, with `ogx.io/adopt-storage`: the named stack's volume is mounted.
        StorageAdopted,
        /// `OGXServer` only, with `ogx.io/adopt-networking`: the named stack's Service and
        /// Ingress are the server's.
        NetworkingAdopted,
        /// `OGXServer` only: True while an adoption annotation cannot name a stack (nothing is
        /// taken).
        AdoptionConfigInvalid,
        /// Behind Praxis only (`praxisMode`): a Ready Praxis Pod matches the gateway's selector,
        /// so the server, reached only through Praxis, has a way in. Informational: the phase
        /// does not depend on it.
        PraxisReachable,
        /// Behind Praxis only: the server's own TLS Secret (`network.tls.secretName`) is named
        /// and exists, as the OGX operator expects of a server Praxis fronts. Informational.
        TLSConfigured,
        /// With a Praxis migration: its preflight passed (a PostgreSQL source, the target's
        /// Secret, not the same database).
        MigrationPreflightReady,
        /// With a Praxis migration: its Job completed (False once it failed).
        MigrationJobSucceeded,
        /// With a Praxis migration: the data was moved and checked (the dry run, then the run).
        MigrationValidated,
        /// With a Praxis migration: the cut-over to Praxis may proceed.
        PraxisCutoverReady,
    }
}

status_words! {
    /// `status.conditions[].reason`, and the reasons of the operator's Events.
    Reason {
        /// `ConfigGenerated` True.
        ConfigGenerationSucceeded,
        /// `ConfigGenerated` True: nothing was generated; the server runs the config its image
        /// carries, with the image's own entrypoint (an image without config labels, and a
        /// resource that asks for nothing to generate).
        ImageOwnConfig,
        /// The spec and the base config do not make a config.
        ConfigGenerationFailed,
        /// The user's config is written for the other server line than the image runs (the
        /// message names both, and the APIs that say so); nothing is rolled out.
        ConfigServerMismatch,
        /// The image a name resolves to changed (an operator upgrade) and its base config does
        /// not take the spec; the running Deployment is kept.
        UpgradeConfigFailure,
        /// The base config's `version` is not one this operator understands.
        UnsupportedConfigVersion,
        /// An image without config labels and without `overrideConfig`.
        BaseConfigRequired,
        /// The distribution name or image reference is not valid.
        InvalidDistribution,
        /// An `OGXServer` field this operator does not serve yet (the message names it); nothing
        /// is deployed or changed until it is removed.
        FieldNotServed,
        /// A LlamaStackDistribution whose stack an `OGXServer` of the same name now serves: the
        /// operator leaves it alone; delete it once the OGXServer is Ready.
        MovedToOGXServer,
        /// A LlamaStackDistribution whose volume, or Service and Ingress, an `OGXServer` of another
        /// name takes over (`ogx.io/adopt-*`): the operator leaves it alone; delete it once the
        /// OGXServer is Ready.
        AdoptedByOGXServer,
        /// `StorageAdopted` True.
        StorageAdopted,
        /// `NetworkingAdopted` True.
        NetworkingAdopted,
        /// `AdoptionConfigInvalid` True: an adoption annotation's value is not a stack's name.
        AdoptionConfigInvalid,
        /// `AdoptionConfigInvalid` False: it was True, and the annotations are fixed.
        AnnotationsValid,
        /// `PraxisReachable` True: Ready Praxis Pods match the selector.
        PraxisPodsReady,
        /// `PraxisReachable` False: no Ready Praxis Pod matches the selector, or they could not
        /// be listed.
        NoReadyPraxisPods,
        /// `PraxisReachable` False: the selector cannot be used to list Pods.
        PraxisSelectorInvalid,
        /// `TLSConfigured` True: the TLS Secret exists.
        TLSSecretFound,
        /// `TLSConfigured` False: the TLS Secret named does not exist.
        TLSSecretMissing,
        /// `TLSConfigured` False: no TLS Secret is named.
        TLSSecretNotSet,
        /// `MigrationPreflightReady` True.
        MigrationPreflightPassed,
        /// `MigrationPreflightReady` False: no Job is made until the spec or the Secrets change.
        MigrationPreflightFailed,
        /// The migration's Job was made (or an earlier one is going), and has not finished.
        MigrationJobPending,
        /// The migration's Job runs.
        MigrationJobRunning,
        /// `MigrationJobSucceeded` True.
        MigrationJobSucceeded,
        /// `MigrationJobSucceeded` False: the Job failed (it is kept, with its Pods' logs).
        MigrationJobFailed,
        /// `MigrationValidated` True.
        MigrationValidated,
        /// `MigrationValidated` False: not yet.
        MigrationValidationPending,
        /// `MigrationValidated` False: the Job failed.
        MigrationValidationFailed,
        /// `PraxisCutoverReady` True.
        PraxisCutoverReady,
        /// `PraxisCutoverReady` False.
        PraxisCutoverNotReady,
        /// A Job of the migration's name is not the server's: nothing is made or deleted.
        MigrationJobNotOwned,
        /// `StorageAdopted` or `NetworkingAdopted` False: the named stack has no such object.
        AdoptionSourceNotFound,
        /// `StorageAdopted` or `NetworkingAdopted` False: the object is controlled by something
        /// else (or was taken by another server), so it is not taken.
        AdoptionRefused,
        /// `StorageAdopted` False: the old stack's Pods are stopping; the volume is taken when
        /// they are gone.
        WaitingForLegacyPods,
        /// `StorageAdopted` False: `ogx.io/adopt-storage` without `workload.storage`.
        NoStorageToAdoptInto,
        /// `NetworkingAdopted` False: the annotation was removed and the taken Service and Ingress
        /// were handed back (the Service selects the old stack's Pods again). `StorageAdopted`
        /// False: a volume taken is no longer asked for, and goes back to its stack.
        AdoptionAnnotationRemoved,
        /// `StorageAdopted` or `NetworkingAdopted` False: the server cannot run yet (its other
        /// conditions say why), so nothing is taken and the old stack keeps serving.
        AdoptionDeferred,
        /// `NetworkingAdopted` False: the Service and Ingress are taken once the server has an
        /// available replica; until then they keep serving the old stack.
        WaitingForServer,
        /// The registry could not be reached or refused the credentials.
        RegistryError,
        /// The image's base config cannot be read or used.
        InvalidBaseConfig,
        /// The operator's signature policy (`image-signatures`) requires a signature of the
        /// image by a trusted key and none verifies; the message names the digest, the policy
        /// and the keys tried. A running stack keeps its image and config.
        SignatureVerificationFailed,
        /// `spec.externalProviders` cannot be deployed as written.
        ExternalProviderInvalid,
        /// The CA bundle ConfigMap is missing or holds no usable certificate.
        CABundleInvalid,
        /// `networking.tls.clientIdentity`'s certificate is missing or not a PEM certificate.
        ClientCertificateInvalid,
        /// A referenced Secret or key does not exist.
        SecretNotFound,
        /// `SecretsResolved` True.
        AllSecretsFound,
        /// `DeploymentUpdated` True.
        DeploymentUpdateSucceeded,
        /// The API server refused a write of an owned object (a policy engine, a quota, a name
        /// too long, missing RBAC); the message is the API server's.
        ApplyFailed,
        /// `Available` True.
        MinimumReplicasAvailable,
        /// `Available` False.
        ReplicasUnavailable,
        /// `DeploymentReady` True.
        DeploymentReady,
        /// No Deployment yet.
        DeploymentPending,
        /// A rollout or scaling is in progress.
        DeploymentScaling,
        /// `workload.replicas` is 0: the stack is stopped on purpose (phase Ready, nothing serves).
        ScaledToZero,
        /// The server container of a new Pod keeps exiting (CrashLoopBackOff): the server
        /// rejects its config or cannot start; Pods of the previous revision, if any, keep
        /// serving.
        ServerCrashLooping,
        /// An init container of a new Pod keeps exiting (CrashLoopBackOff), so its server never
        /// starts: an external provider's install step, the config merge or the preflight fails,
        /// or the operator's image is broken; Pods of the previous revision, if any, keep
        /// serving.
        InitContainerCrashLooping,
        /// `DeploymentUpdated` False: the newest revision could not start while nothing else
        /// served, so the Deployment was returned to the last revision that was Ready
        /// (`workload.rollback: Automatic`); `status.rollback.rejected` names what was rejected.
        RolledBack,
        /// `DeploymentUpdated` False: a rollback was due but the ReplicaSet of the last Ready
        /// revision is gone, so the new revision keeps crash-looping.
        RollbackNotPossible,
        /// A Pod's image cannot be pulled (ErrImagePull, ImagePullBackOff, InvalidImageName).
        ImagePullFailed,
        /// kubelet cannot create a container (CreateContainerConfigError, CreateContainerError),
        /// e.g. a referenced Secret or ConfigMap key is missing.
        ContainerCreateFailed,
        /// The Deployment reports ProgressDeadlineExceeded: the rollout made no progress.
        RolloutStalled,
        /// A new Pod cannot be scheduled (no node has room, or none matches); the rollout waits,
        /// e.g. for a cluster autoscaler, so the phase does not fail.
        PodUnschedulable,
        /// `HealthCheck` True.
        HealthCheckPassed,
        /// `HealthCheck` False.
        HealthCheckFailed,
        /// `ServiceReady` True.
        ServiceReady,
        /// `StorageReady` True.
        StorageReady,
        /// The data volume is not bound yet.
        StorageNotBound,
        /// An external provider's install or validation step failed.
        ExternalProviderFailed,
        /// `ExternalProvidersReady` True.
        ExternalProvidersReady,
        /// The newest Pod is still installing external providers.
        ExternalProvidersInstalling,
        /// `ServerResponding` True: `status.version` and `status.distributionConfig.providers`
        /// are what the server said.
        ServerResponded,
        /// `ServerResponding` False: the server did not answer through its Service in time, or
        /// not with the expected documents; the last answer stays in the status.
        ServerNotResponding,
        /// Event: the Deployment was created.
        Created,
        /// Event: a new revision of the Deployment was applied.
        RolloutStarted,
        /// Event: the stack became Ready; `Ready` True.
        Ready,
        /// `Ready` False and `Reconciling` True when no detailed condition says more (a status
        /// of an older generation).
        Progressing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_the_variant_names_and_unique() {
        assert_eq!(ConditionType::HealthCheck.as_str(), "HealthCheck");
        assert_eq!(Reason::CABundleInvalid.to_string(), "CABundleInvalid");
        let mut words: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), Reason::ALL.len());
    }

    /// The status's schema lists the condition types (the CRD and the API reference carry it):
    /// a new type must be added there too.
    #[test]
    fn the_crd_lists_every_condition_type() {
        use kube::CustomResourceExt;
        let crd = serde_json::to_value(crate::api::v1alpha2::LlamaStackDistribution::crd())
            .unwrap_or_default();
        let description = crd
            .pointer("/spec/versions/0/schema/openAPIV3Schema/properties/status/properties/conditions/description")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned();
        for condition in ConditionType::ALL {
            assert!(
                description.contains(condition.as_str()),
                "{condition} missing from the conditions' description: {description:?}"
            );
        }
    }

    /// Users look reasons up in the troubleshooting guide: each one must be there.
    #[test]
    fn every_type_and_reason_is_documented() {
        let guide = include_str!("../../docs/troubleshooting.md");
        let words = ConditionType::ALL
            .iter()
            .map(|t| t.as_str())
            .chain(Reason::ALL.iter().map(|r| r.as_str()));
        for word in words {
            assert!(
                guide.contains(&format!("`{word}`")),
                "docs/troubleshooting.md does not document `{word}`"
            );
        }
    }
}
