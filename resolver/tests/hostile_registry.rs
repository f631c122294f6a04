//! A registry that lies: oversized, truncated and digest-mismatched bodies, and layers of the
//! wrong media type, served by a small HTTP/1.1 server on loopback. A well-behaved registry
//! cannot produce these, so this server does.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test, bench or example: a failed unwrap is a failed run"
)]

use std::collections::HashMap;
use std::sync::Arc;

use llama_stack_resolver::Keyring;
use llama_stack_resolver::Limits;
use llama_stack_resolver::{Catalog, Distribution, Resolver, ResolverOptions};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

// Loopback only, in a network namespace of its own like every suite.
llama_stack_test_support::seal_network!();

fn digest(bytes: &[u8]) -> String {
    format!(
        "sha256:{}",
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    )
}

/// What the server answers for a path: (declared Content-Length, body actually sent).
type Routes = HashMap<String, (usize, Vec<u8>)>;

async fn serve(routes: Routes) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let routes = Arc::new(routes);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let routes = routes.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = socket.read(&mut buf).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]);
                let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (status, (length, body)) = match routes.get(&path) {
                    Some(r) => ("200 OK", r.clone()),
                    None => ("404 Not Found", (0, Vec::new())),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {length}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&body).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    addr
}

fn whole(body: Vec<u8>) -> (usize, Vec<u8>) {
    (body.len(), body)
}

fn resolver(host: &str, limits: Limits) -> Resolver {
    let mut options = ResolverOptions::new(Catalog::embedded().expect("catalog"));
    options.insecure_registries = vec![host.to_owned()];
    options.limits = limits;
    Resolver::new(options).expect("resolver")
}

async fn error_of(host: &str, reference: &str, limits: Limits) -> String {
    match resolver(host, limits)
        .resolve(
            &Distribution::Image(format!("{host}/{reference}")),
            &Keyring::default(),
        )
        .await
    {
        Ok(r) => panic!("a hostile registry was trusted: {}", r.image),
        Err(e) => e.to_string(),
    }
}

/// A valid image (config with a layer label) whose pieces the caller can corrupt.
fn image(layer_media_type: &str, config_body: Option<Vec<u8>>) -> (Routes, String) {
    let layer = b"not really a layer".to_vec();
    let config = serde_json::json!({"config": {"Labels": {
        "io.llamastack.config.layer": digest(&layer), "io.llamastack.config.path": "/app/config.yaml"}},
        "rootfs": {"diff_ids": []}});
    let config = serde_json::to_vec(&config).expect("json");
    let manifest = serde_json::json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest(&config), "size": config.len()},
        "layers": [{"mediaType": layer_media_type, "digest": digest(&layer), "size": layer.len()}]});
    let manifest = serde_json::to_vec(&manifest).expect("json");
    let manifest_digest = digest(&manifest);
    let mut routes = Routes::new();
    routes.insert("/v2/x/app/manifests/v1".into(), whole(manifest.clone()));
    routes.insert(
        format!("/v2/x/app/manifests/{manifest_digest}"),
        whole(manifest),
    );
    routes.insert(
        format!("/v2/x/app/blobs/{}", digest(&config)),
        whole(config_body.unwrap_or(config)),
    );
    routes.insert(format!("/v2/x/app/blobs/{}", digest(&layer)), whole(layer));
    (routes, manifest_digest)
}

#[tokio::test]
async fn oversized_manifest_is_refused() {
    let mut routes = Routes::new();
    routes.insert("/v2/x/app/manifests/v1".into(), whole(vec![b' '; 5000]));
    let host = serve(routes).await;
    let err = error_of(
        &host,
        "x/app:v1",
        Limits {
            max_manifest_bytes: 4096,
            ..Limits::default()
        },
    )
    .await;
    assert!(
        err.contains("sent more than 4096 bytes for manifest x/app:v1; refusing it"),
        "{err}"
    );
}

#[tokio::test]
async fn truncated_body_is_an_error() {
    let mut routes = Routes::new();
    routes.insert(
        "/v2/x/app/manifests/v1".into(),
        (1000, b"{\"schemaVersion\":".to_vec()),
    );
    let host = serve(routes).await;
    let err = error_of(&host, "x/app:v1", Limits::default()).await;
    assert!(
        err.contains(&format!(
            "cannot reach registry {host} for manifest x/app:v1"
        )),
        "{err}"
    );
}

#[tokio::test]
async fn manifest_not_matching_its_digest_is_refused() {
    let (mut routes, _) = image("application/vnd.oci.image.layer.v1.tar+gzip", None);
    let claimed = format!("sha256:{}", "e".repeat(64));
    let other = routes["/v2/x/app/manifests/v1"].clone();
    routes.insert(format!("/v2/x/app/manifests/{claimed}"), other);
    let host = serve(routes).await;
    let err = error_of(&host, &format!("x/app@{claimed}"), Limits::default()).await;
    assert!(
        err.contains(&format!("whose content does not match digest {claimed}")),
        "{err}"
    );
}

#[tokio::test]
async fn config_blob_not_matching_its_digest_is_refused() {
    let (routes, _) = image(
        "application/vnd.oci.image.layer.v1.tar+gzip",
        Some(b"{\"config\":{}}".to_vec()),
    );
    let host = serve(routes).await;
    let err = error_of(&host, "x/app:v1", Limits::default()).await;
    assert!(
        err.contains("sent blob sha256:") && err.contains("whose content does not match digest"),
        "{err}"
    );
}

#[tokio::test]
async fn layer_of_an_unknown_media_type_is_refused() {
    let (routes, _) = image("application/octet-stream", None);
    let host = serve(routes).await;
    let err = error_of(&host, "x/app:v1", Limits::default()).await;
    assert!(
        err.contains("has media type \"application/octet-stream\", which is not a tar layer"),
        "{err}"
    );
}

#[tokio::test]
async fn corrupt_layer_is_an_error_not_a_panic() {
    let (routes, _) = image("application/vnd.oci.image.layer.v1.tar+gzip", None);
    let host = serve(routes).await;
    let err = error_of(&host, "x/app:v1", Limits::default()).await;
    assert!(
        err.contains("the layer is not a valid gzip tar stream"),
        "{err}"
    );
}

/// A gzip tar layer holding `/app/config.yaml`.
fn config_layer(yaml: &str) -> Vec<u8> {
    use std::io::Write;
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(yaml.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    builder
        .append_data(&mut header, "app/config.yaml", yaml.as_bytes())
        .expect("tar");
    let tar = builder.into_inner().expect("tar");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).expect("gzip");
    gz.finish().expect("gzip")
}

/// An image whose config label names the layer `listed` (with `diff_ids` in its config), the
/// registry serving `served` for that layer's digest.
fn image_serving(listed: &[u8], served: Vec<u8>, diff_ids: Vec<String>) -> Routes {
    let config = serde_json::json!({"config": {"Labels": {
        "io.llamastack.config.layer": digest(listed), "io.llamastack.config.path": "/app/config.yaml"}},
        "rootfs": {"type": "layers", "diff_ids": diff_ids}});
    let config = serde_json::to_vec(&config).expect("json");
    let manifest = serde_json::json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest(&config), "size": config.len()},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest(listed), "size": listed.len()}]});
    let manifest = serde_json::to_vec(&manifest).expect("json");
    let mut routes = Routes::new();
    routes.insert("/v2/x/app/manifests/v1".into(), whole(manifest.clone()));
    routes.insert(
        format!("/v2/x/app/manifests/{}", digest(&manifest)),
        whole(manifest),
    );
    routes.insert(
        format!("/v2/x/app/blobs/{}", digest(&config)),
        whole(config),
    );
    routes.insert(format!("/v2/x/app/blobs/{}", digest(listed)), whole(served));
    routes
}

/// A registry that serves other bytes for the labelled layer (a doctored mirror): the config
/// read from them is refused, though they are a valid layer holding the file. The image's config
/// lists no diff_id, so only the compressed digest can tell.
#[tokio::test]
async fn a_layer_not_matching_its_digest_is_refused() {
    let listed = config_layer(
        "version: 2\ndistro_name: signed\napis: [inference]\nproviders:\n  inference: []\n",
    );
    let doctored = config_layer(
        "version: 2\ndistro_name: doctored\napis: [inference]\nproviders:\n  inference: []\n",
    );
    let host = serve(image_serving(&listed, doctored, Vec::new())).await;
    let err = error_of(&host, "x/app:v1", Limits::default()).await;
    let layer = digest(&listed);
    assert!(
        err.contains(&format!(
            "sent layer {layer} of x/app whose content does not match digest {layer}"
        )),
        "{err}"
    );
}

/// The layer the registry serves matches the manifest, but not the diff_id the image's config
/// lists for it: refused too.
#[tokio::test]
async fn a_layer_not_matching_its_diff_id_is_refused() {
    let listed = config_layer(
        "version: 2\ndistro_name: built\napis: [inference]\nproviders:\n  inference: []\n",
    );
    let other_tar_digest = format!("sha256:{}", "d".repeat(64));
    let host = serve(image_serving(
        &listed,
        listed.clone(),
        vec![other_tar_digest.clone()],
    ))
    .await;
    let err = error_of(&host, "x/app:v1", Limits::default()).await;
    assert!(
        err.contains(&format!(
            "the uncompressed layer does not match its diff_id {other_tar_digest}"
        )),
        "{err}"
    );
}

/// A registry that accepts connections and never answers (a firewall that drops packets, a
/// hung proxy) costs each request that waits on it the whole timeout. Once a distribution's
/// registry has failed, a request made while another asks it again gets the fallback (here the
/// embedded config) at once, without a request of its own, instead of waiting with that one.
#[tokio::test]
async fn while_one_request_asks_a_failed_registry_again_the_others_keep_the_fallback() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let (accepted, mut connections) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        // Each connection is held, unanswered, until the test drops it.
        while let Ok((socket, _)) = listener.accept().await {
            let _ = accepted.send(socket);
        }
    });
    let overrides = [(
        "starter".to_owned(),
        format!("{host}/ogxai/distribution-starter:1.3.0"),
    )]
    .into();
    let mut options = ResolverOptions::new(Catalog::embedded().unwrap().with_overrides(&overrides));
    options.insecure_registries = vec![host.clone()];
    options.failure_ttl = std::time::Duration::from_millis(1);
    options.timeout = std::time::Duration::from_secs(20);
    let resolver = Arc::new(Resolver::new(options).unwrap());
    let starter = Distribution::Name("starter".to_owned());
    let ask = |resolver: &Arc<Resolver>| {
        let (resolver, starter) = (resolver.clone(), starter.clone());
        tokio::spawn(async move { resolver.resolve(&starter, &Keyring::default()).await })
    };

    // The first request finds the registry failing (the connection closed unanswered).
    let first = ask(&resolver);
    drop(connections.recv().await.unwrap());
    let first = first.await.unwrap().expect("the embedded fallback");
    assert!(first.stale.is_some() && !first.pinned, "{first:?}");

    // Its failure forgotten, the next request asks the registry again, and hangs there.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let retry = ask(&resolver);
    let held = connections.recv().await.unwrap();
    let meanwhile = resolver
        .resolve(&starter, &Keyring::default())
        .await
        .expect("the fallback");
    assert!(
        meanwhile.stale.is_some() && !meanwhile.pinned,
        "{meanwhile:?}"
    );
    assert!(!retry.is_finished(), "answered only once the retry was");
    assert!(connections.try_recv().is_err(), "a connection of its own");

    // The retry's answer (another failure) comes when the registry lets go.
    drop(held);
    let retried = retry.await.unwrap().expect("the embedded fallback");
    assert!(retried.stale.is_some());
}
