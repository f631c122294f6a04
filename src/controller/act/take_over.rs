//! The writes of taking over another stack's objects: those the core's
//! [`crate::core::take_over::decided`] kept, made first of the apply. The reads are the gather
//! step's (`controller::read::take_over`), the decisions the core's ([`crate::core::adoption`],
//! [`crate::core::take_over`]).

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::{Api, Patch};

use super::write::patch_by;
use crate::controller::context::Context;
use crate::controller::error::{ApiError, api_err};
use crate::controller::kinds::NamespacedKind;
use crate::core::stack::Stack;
use crate::core::take_over::{Kind, Write};
use crate::naming::ADOPTION_FIELD_MANAGER;

/// Makes the `writes` [`crate::core::take_over::decided`] kept, first of the apply.
pub(in crate::controller) async fn carry_out(
    stack: &Stack<'_>,
    ctx: &Context,
    writes: &[Write],
) -> Result<(), ApiError> {
    for write in writes {
        let api = (&ctx.client, stack.namespace());
        match write.kind {
            Kind::Deployment => patch::<Deployment>(api, write).await,
            Kind::Claim => patch::<PersistentVolumeClaim>(api, write).await,
            Kind::Service => patch::<Service>(api, write).await,
            Kind::Ingress => patch::<Ingress>(api, write).await,
        }?;
    }
    Ok(())
}

/// Makes `write` on an object of kind `K` in the namespace, as the adoption's field manager.
async fn patch<K: NamespacedKind>(
    (client, ns): (&kube::Client, &str),
    write: &Write,
) -> Result<(), ApiError> {
    let name = &write.name;
    Api::<K>::namespaced(client.clone(), ns)
        .patch(
            name,
            &patch_by(ADOPTION_FIELD_MANAGER),
            &Patch::Merge(&write.patch),
        )
        .await
        .map(drop)
        .map_err(api_err(format!("{:?} {name}: taking over", write.kind)))
}
