//! Pulling from registries that misbehave: down, 401, a layer whose bytes do not match its
//! digest, an unknown layer media type, an archive that escapes. A tiny HTTP server plays the
//! registry so every case is exact and needs no network.

use std::collections::BTreeMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use windlass_bundle::unpack::UnpackError;
use windlass_bundle::{FileTree, Limits};
use windlass_oci::{OciError, RegistryOptions, pull, pull_bundle};

/// A body the server streams without end and without a `Content-Length`.
const ENDLESS: &[u8] = b"\0endless";

/// Path -> (status, headers, body).
type Routes = BTreeMap<String, (u16, Vec<(String, String)>, Vec<u8>)>;

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Serves `routes` (path -> response); unknown paths get 404. Returns `127.0.0.1:PORT`.
async fn serve(routes: Routes) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let routes = Arc::new(routes);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let routes = routes.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf).into_owned();
                let mut parts = head.split_whitespace();
                let method = parts.next().unwrap_or_default().to_string();
                let path = parts.next().unwrap_or_default().to_string();
                let response = match routes.get(&path).or_else(|| routes.get("*")) {
                    Some((status, headers, body)) => Response {
                        status: *status,
                        headers: headers.clone(),
                        body: body.clone(),
                    },
                    None => Response {
                        status: 404,
                        headers: vec![],
                        body: br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"unknown"}]}"#
                            .to_vec(),
                    },
                };
                let endless = response.body == ENDLESS;
                let mut out = if endless {
                    // No length announced: the body ends when the connection does.
                    format!("HTTP/1.1 {} X\r\nConnection: close\r\n", response.status)
                } else {
                    format!(
                        "HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n",
                        response.status,
                        response.body.len()
                    )
                };
                for (k, v) in &response.headers {
                    out.push_str(&format!("{k}: {v}\r\n"));
                }
                out.push_str("\r\n");
                let _ = socket.write_all(out.as_bytes()).await;
                if endless {
                    // Until the client hangs up; a pull that never stops never ends the test.
                    let chunk = vec![b'x'; 64 << 10];
                    while socket.write_all(&chunk).await.is_ok() {}
                } else if method != "HEAD" {
                    let _ = socket.write_all(&response.body).await;
                }
                let _ = socket.shutdown().await;
            });
        }
    });
    addr
}

fn sha(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// A registry holding `demo:1` with one layer of `media_type`; the blob served is `served`
/// while the manifest promises `layer`.
fn image(layer: &[u8], served: &[u8], media_type: &str) -> Routes {
    let config = br#"{"architecture":"amd64","os":"linux","config":{"Labels":{"operators.operatorframework.io.bundle.package.v1":"demo"}},"rootfs":{"type":"layers","diff_ids":[]}}"#.to_vec();
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha(&config), "size": config.len()},
        "layers": [{"mediaType": media_type, "digest": sha(layer), "size": served.len()}]
    }))
    .unwrap();
    let manifest_headers = vec![
        (
            "Content-Type".to_string(),
            "application/vnd.oci.image.manifest.v1+json".to_string(),
        ),
        ("Docker-Content-Digest".to_string(), sha(&manifest)),
    ];
    let mut routes = BTreeMap::new();
    routes.insert("/v2/".to_string(), (200, vec![], b"{}".to_vec()));
    routes.insert(
        "/v2/demo/manifests/1".to_string(),
        (200, manifest_headers, manifest),
    );
    routes.insert(
        format!("/v2/demo/blobs/{}", sha(&config)),
        (200, vec![], config),
    );
    routes.insert(
        format!("/v2/demo/blobs/{}", sha(layer)),
        (200, vec![], served.to_vec()),
    );
    routes
}

fn options() -> RegistryOptions {
    RegistryOptions {
        plain_http: true,
        ..Default::default()
    }
}

const CSV: &str = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: demo.v1.0.0}\nspec: {version: 1.0.0}\n";

fn bundle_layer() -> Vec<u8> {
    let tree = FileTree {
        files: [("manifests/csv.yaml".to_string(), CSV.as_bytes().to_vec())].into(),
    };
    windlass_bundle::unpack::pack(&tree).unwrap()
}

#[tokio::test]
async fn a_good_image_pulls_and_its_labels_stand_in_for_missing_annotations() {
    let layer = bundle_layer();
    let addr = serve(image(
        &layer,
        &layer,
        "application/vnd.docker.image.rootfs.diff.tar.gzip",
    ))
    .await;
    let (bundle, pulled) = pull_bundle(&format!("{addr}/demo:1"), &options())
        .await
        .unwrap();
    assert_eq!(bundle.csv.name(), "demo.v1.0.0");
    assert_eq!(bundle.package(), Some("demo"));
    assert!(pulled.digest.starts_with("sha256:"));
}

#[tokio::test]
async fn a_layer_that_does_not_match_its_digest_is_refused() {
    let layer = bundle_layer();
    let mut tampered = layer.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 0xff;
    let addr = serve(image(
        &layer,
        &tampered,
        "application/vnd.oci.image.layer.v1.tar+gzip",
    ))
    .await;
    let error = pull(&format!("{addr}/demo:1"), &options())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, OciError::DigestMismatch { expected, .. } if *expected == sha(&layer)),
        "{error}"
    );
}

#[tokio::test]
async fn an_unknown_layer_media_type_is_refused_before_download() {
    let layer = bundle_layer();
    let addr = serve(image(&layer, &layer, "application/vnd.example.weird")).await;
    let error = pull(&format!("{addr}/demo:1"), &options())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, OciError::UnknownMediaType { media_type, .. } if media_type == "application/vnd.example.weird"),
        "{error}"
    );
}

#[tokio::test]
async fn a_layer_escaping_the_root_is_refused_naming_the_entry() {
    // A hand-made tar whose only entry is `../evil`.
    let mut header = tar::Header::new_gnu();
    header.as_old_mut().name[..7].copy_from_slice(b"../evil");
    header.set_size(0);
    header.set_entry_type(tar::EntryType::Regular);
    header.set_cksum();
    let mut layer = header.as_bytes().to_vec();
    layer.extend_from_slice(&[0; 1024]);
    let addr = serve(image(
        &layer,
        &layer,
        "application/vnd.oci.image.layer.v1.tar",
    ))
    .await;
    let error = pull(&format!("{addr}/demo:1"), &options())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, OciError::Unpack { error: UnpackError::ParentDir { entry }, .. } if entry == "../evil"),
        "{error}"
    );
}

#[tokio::test]
async fn a_gzip_bomb_layer_stops_at_the_configured_cap() {
    let tree = FileTree {
        files: [("manifests/big.yaml".to_string(), vec![b' '; 8 << 20])].into(),
    };
    let layer = windlass_bundle::unpack::pack(&tree).unwrap();
    let addr = serve(image(
        &layer,
        &layer,
        "application/vnd.oci.image.layer.v1.tar+gzip",
    ))
    .await;
    let small = RegistryOptions {
        limits: Limits {
            max_total_bytes: 1 << 20,
            max_files: 100,
        },
        ..options()
    };
    let error = pull(&format!("{addr}/demo:1"), &small).await.unwrap_err();
    assert!(
        matches!(
            &error,
            OciError::Unpack {
                error: UnpackError::TooLarge { .. },
                ..
            }
        ),
        "{error}"
    );
}

/// A registry whose manifest declares a small layer and then sends without end.
fn understated(layer: &[u8]) -> Routes {
    let mut routes = image(layer, layer, "application/vnd.oci.image.layer.v1.tar+gzip");
    routes.insert(
        format!("/v2/demo/blobs/{}", sha(layer)),
        (200, vec![], ENDLESS.to_vec()),
    );
    routes
}

#[tokio::test]
async fn a_blob_larger_than_its_descriptor_says_is_cut_off_at_the_declared_size() {
    let layer = bundle_layer();
    let addr = serve(understated(&layer)).await;
    // The default limit is 256 MiB; the download must stop near the declared size instead.
    let pulled = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        pull(&format!("{addr}/demo:1"), &options()),
    )
    .await
    .expect("the pull stops on its own");
    let error = pulled.unwrap_err();
    assert!(
        matches!(&error, OciError::LargerThanDeclared { declared, digest, .. }
            if *declared == layer.len() as u64 && *digest == sha(&layer)),
        "{error}"
    );
    assert!(error.to_string().contains("declares"), "{error}");
}

#[tokio::test]
async fn a_blob_announcing_more_than_its_descriptor_is_refused_before_its_body() {
    let layer = bundle_layer();
    let mut routes = image(
        &layer,
        &layer,
        "application/vnd.oci.image.layer.v1.tar+gzip",
    );
    let mut padded = layer.clone();
    padded.extend_from_slice(&vec![0u8; 1 << 20]);
    routes.insert(
        format!("/v2/demo/blobs/{}", sha(&layer)),
        (200, vec![], padded),
    );
    let addr = serve(routes).await;
    let error = pull(&format!("{addr}/demo:1"), &options())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, OciError::LargerThanDeclared { .. }),
        "{error}"
    );
}

#[tokio::test]
async fn declared_sizes_over_the_limit_are_refused_before_any_blob_is_read() {
    let layer = bundle_layer();
    let addr = serve(understated(&layer)).await;
    let tiny = RegistryOptions {
        limits: Limits {
            max_total_bytes: 16,
            max_files: 100,
        },
        ..options()
    };
    let error = pull(&format!("{addr}/demo:1"), &tiny).await.unwrap_err();
    assert!(
        matches!(&error, OciError::TooLarge { limit: 16, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn a_registry_answering_401_is_reported_as_unauthorized() {
    let mut routes = BTreeMap::new();
    routes.insert(
        "*".to_string(),
        (
            401,
            vec![(
                "WWW-Authenticate".to_string(),
                "Basic realm=\"test\"".to_string(),
            )],
            b"{\"errors\":[{\"code\":\"UNAUTHORIZED\",\"message\":\"authentication required\"}]}"
                .to_vec(),
        ),
    );
    let addr = serve(routes).await;
    let error = pull(&format!("{addr}/demo:1"), &options())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, OciError::Unauthorized { registry, .. } if *registry == addr),
        "{error}"
    );
}

#[tokio::test]
async fn a_registry_that_is_down_is_reported_as_unreachable() {
    // Bind then drop: the port is free and nothing listens on it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let error = pull(&format!("127.0.0.1:{port}/demo:1"), &options())
        .await
        .unwrap_err();
    assert!(matches!(&error, OciError::Unreachable { .. }), "{error}");
}

#[tokio::test]
async fn a_missing_image_is_reported_as_not_found() {
    let layer = bundle_layer();
    let addr = serve(image(
        &layer,
        &layer,
        "application/vnd.oci.image.layer.v1.tar+gzip",
    ))
    .await;
    let error = pull(&format!("{addr}/demo:2"), &options())
        .await
        .unwrap_err();
    assert!(matches!(&error, OciError::NotFound { .. }), "{error}");
}
