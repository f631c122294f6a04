//! What the bench makes: LlamaStackDistributions, or with `LLSO_SCALE_KIND=ogx` the OGX
//! operator's `OGXServer`s (issue 62, item 5). Both are the same stack through the other API:
//! the starter distribution, one model, the shared server's port. Through the OGXServer door the
//! operator also makes the NetworkPolicy the OGX operator makes, so the objects a stack costs
//! are counted from what `render` prints, never assumed.

use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use llama_stack_operator::api::ogx::OGXServer;
use llama_stack_operator::api::v1alpha2::LlamaStackDistribution;
use serde_json::{Value, json};

use super::{NAMESPACE, stack_name};

/// The resource the bench makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Made {
    /// `llamastack.io/v1alpha2` `LlamaStackDistribution` (the default, `LLSO_SCALE_KIND=llsd`).
    Stacks,
    /// `ogx.io/v1beta1` `OGXServer` (`LLSO_SCALE_KIND=ogx`).
    OgxServers,
}

impl Made {
    /// The resource `LLSO_SCALE_KIND` names; any other value stops the run.
    pub fn from_env() -> Self {
        match std::env::var("LLSO_SCALE_KIND").as_deref() {
            Err(_) | Ok("llsd") => Made::Stacks,
            Ok("ogx") => Made::OgxServers,
            Ok(other) => panic!("LLSO_SCALE_KIND: llsd or ogx, not {other:?}"),
        }
    }

    /// `apiVersion` and `kind`.
    pub fn type_meta(self) -> (&'static str, &'static str) {
        match self {
            Made::Stacks => ("llamastack.io/v1alpha2", "LlamaStackDistribution"),
            Made::OgxServers => ("ogx.io/v1beta1", "OGXServer"),
        }
    }

    /// The plural the bench's output names them by.
    pub fn plural(self) -> &'static str {
        match self {
            Made::Stacks => "stacks",
            Made::OgxServers => "OGXServers",
        }
    }

    fn resource(self) -> ApiResource {
        match self {
            Made::Stacks => ApiResource::erase::<LlamaStackDistribution>(&()),
            Made::OgxServers => ApiResource::erase::<OGXServer>(&()),
        }
    }

    /// The resource in the bench's namespace.
    pub fn api(self, client: &kube::Client) -> Api<DynamicObject> {
        Api::namespaced_with(client.clone(), NAMESPACE, &self.resource())
    }

    /// Stack `i`'s spec: the starter distribution, one model of its own, the shared server's
    /// port, in each API's words.
    fn spec(self, i: usize, port: u16) -> Value {
        let model = format!("model-{i}");
        match self {
            Made::Stacks => json!({"distribution": {"name": "starter"},
                "resources": {"models": [model]}, "networking": {"port": port}}),
            Made::OgxServers => json!({"distribution": {"name": "starter"},
                "resources": {"models": [{"name": model}]}, "network": {"port": port}}),
        }
    }

    /// Stack `i` as a manifest.
    pub fn manifest(self, i: usize, port: u16) -> Value {
        let (api_version, kind) = self.type_meta();
        json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": stack_name(i), "namespace": NAMESPACE}, "spec": self.spec(i, port)})
    }

    /// Creates stack `i`; returns its uid.
    pub async fn create(self, client: &kube::Client, i: usize, port: u16) -> String {
        let object: DynamicObject =
            serde_json::from_value(self.manifest(i, port)).expect("a manifest");
        let created = self
            .api(client)
            .create(&PostParams::default(), &object)
            .await
            .expect("create");
        created.metadata.uid.expect("a created object's uid")
    }

    /// The server version a status reports (the OGX operator names it `serverVersion`).
    pub fn server_version(self, status: &Value) -> Option<&str> {
        let field = match self {
            Made::Stacks => "llamaStackServerVersion",
            Made::OgxServers => "serverVersion",
        };
        status["version"][field].as_str()
    }
}
