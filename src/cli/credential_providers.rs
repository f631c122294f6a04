//! The flags of kubelet's credential provider plugins, shared by `run` and `resolve`: the same
//! files kubelet reads, so that the operator reaches the registries the nodes reach.

use std::path::PathBuf;
use std::sync::Arc;

use llama_stack_resolver::credential_provider::{ConfigError, CredentialProviders};

/// `--image-credential-provider-config` and `--image-credential-provider-bin-dir`.
#[derive(clap::Args, Debug, Default)]
pub struct CredentialProviderArgs {
    /// kubelet's CredentialProviderConfig (`kubelet.config.k8s.io/v1`): the plugins that give
    /// registry credentials for the images their `matchImages` match (ECR, GCR, ACR…), used after
    /// the Pod's pull secrets, as kubelet uses them.
    #[arg(
        long,
        value_name = "FILE",
        requires = "image_credential_provider_bin_dir"
    )]
    pub image_credential_provider_config: Option<PathBuf>,
    /// The directory of the plugins' executables; only executables there run.
    #[arg(
        long,
        value_name = "DIR",
        requires = "image_credential_provider_config"
    )]
    pub image_credential_provider_bin_dir: Option<PathBuf>,
}

impl CredentialProviderArgs {
    /// The plugins, when configured.
    pub fn load(&self) -> Result<Option<Arc<CredentialProviders>>, ConfigError> {
        match (
            &self.image_credential_provider_config,
            &self.image_credential_provider_bin_dir,
        ) {
            (Some(config), Some(bin_dir)) => {
                Ok(Some(Arc::new(CredentialProviders::load(config, bin_dir)?)))
            }
            _ => Ok(None),
        }
    }
}
