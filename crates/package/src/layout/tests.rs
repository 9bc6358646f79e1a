use super::*;
use crate::sha256;

/// Test images built in memory: configs, layers, manifests and indexes with real digests.
pub(crate) mod fixtures {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::super::*;
    use crate::sha256;

    /// A blob and its descriptor.
    pub fn blob(media_type: &str, bytes: &[u8]) -> (Descriptor, Vec<u8>) {
        (
            Descriptor {
                media_type: media_type.into(),
                digest: sha256(bytes),
                size: bytes.len() as u64,
                ..Default::default()
            },
            bytes.to_vec(),
        )
    }

    /// One image of a set: its reference, its top manifest, and the single-platform images
    /// that make it up.
    type Top<'a> = (&'a str, (Descriptor, Vec<u8>), Vec<&'a Image>);

    /// An image for one architecture: its manifest descriptor and bytes, and its blobs.
    pub struct Image {
        pub manifest: (Descriptor, Vec<u8>),
        pub blobs: Vec<(Descriptor, Vec<u8>)>,
    }

    pub fn image(name: &str, arch: &str, layers: &[&[u8]]) -> Image {
        let config = blob(
            "application/vnd.oci.image.config.v1+json",
            json!({"architecture": arch, "os": "linux", "config": {"Labels": {"name": name}}})
                .to_string()
                .as_bytes(),
        );
        let layers: Vec<(Descriptor, Vec<u8>)> = layers
            .iter()
            .map(|l| blob("application/vnd.oci.image.layer.v1.tar+gzip", l))
            .collect();
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": config.0,
            "layers": layers.iter().map(|l| l.0.clone()).collect::<Vec<_>>(),
        });
        let mut blobs = vec![config];
        blobs.extend(layers);
        Image {
            manifest: blob(OCI_MANIFEST, manifest.to_string().as_bytes()),
            blobs,
        }
    }

    /// An index of `images`, one per architecture as each config says.
    pub fn index(images: &[(&Image, &str)]) -> (Descriptor, Vec<u8>) {
        let manifests: Vec<Descriptor> = images
            .iter()
            .map(|(image, arch)| Descriptor {
                platform: Some(Platform {
                    architecture: arch.to_string(),
                    os: "linux".into(),
                    variant: None,
                }),
                ..image.manifest.0.clone()
            })
            .collect();
        let index = json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests});
        blob(OCI_INDEX, index.to_string().as_bytes())
    }

    /// A set of: a bundle image, an operator image for amd64 and arm64 (an index) sharing a
    /// layer with the bundle, and a single-architecture operand. Returns the set, every blob's
    /// bytes by digest, and the configs by digest.
    pub fn set() -> (ImageSet, BTreeMap<String, Vec<u8>>) {
        let shared: &[u8] = b"a layer two images share";
        let bundle = image("bundle", "amd64", &[b"bundle manifests", shared]);
        let op_amd = image("op", "amd64", &[b"operator amd64", shared]);
        let op_arm = image("op", "arm64", &[b"operator arm64"]);
        let op_index = index(&[(&op_amd, "amd64"), (&op_arm, "arm64")]);
        let operand = image("db", "amd64", &[b"database"]);
        let mut set = ImageSet::default();
        let mut bytes = BTreeMap::new();
        let tops: [Top<'_>; 3] = [
            (
                "quay.io/acme/bundle:1.0.0",
                bundle.manifest.clone(),
                vec![&bundle],
            ),
            (
                "quay.io/acme/op@DIGEST",
                op_index.clone(),
                vec![&op_amd, &op_arm],
            ),
            (
                "quay.io/acme/db:1",
                operand.manifest.clone(),
                vec![&operand],
            ),
        ];
        for (i, (reference, top, parts)) in tops.into_iter().enumerate() {
            let reference = reference.replace("DIGEST", &top.0.digest);
            set.images.push(TopImage {
                reference,
                descriptor: top.0.clone(),
            });
            let mut queue = vec![top];
            while let Some((descriptor, manifest)) = queue.pop() {
                let children = set.add_manifest(i, &descriptor, manifest).unwrap();
                for child in children {
                    let part = parts
                        .iter()
                        .find(|p| p.manifest.0.digest == child.digest)
                        .unwrap();
                    queue.push((child, part.manifest.1.clone()));
                }
            }
            for part in parts {
                for (descriptor, blob) in &part.blobs {
                    bytes.insert(descriptor.digest.clone(), blob.clone());
                }
            }
        }
        (set, bytes)
    }
}

#[test]
fn an_image_set_records_every_manifest_and_which_images_use_each_blob() {
    let (set, bytes) = fixtures::set();
    assert_eq!(set.images.len(), 3);
    // bundle manifest, op index + 2 manifests, operand manifest.
    assert_eq!(set.manifests.len(), 5);
    // Every config and layer once, however many images use it.
    assert_eq!(set.blobs.len(), bytes.len());
    let shared = sha256(b"a layer two images share");
    assert_eq!(
        set.blobs[&shared].images,
        BTreeSet::from([0, 1]),
        "the bundle and the operator use it"
    );
    let order: Vec<String> = set.manifest_order().into_iter().map(|d| d.digest).collect();
    assert_eq!(order.len(), 5);
    assert_eq!(order[0], set.images[0].descriptor.digest);
    assert_eq!(
        order[1], set.images[1].descriptor.digest,
        "an index comes before what it lists"
    );
    assert_eq!(order[4], set.images[2].descriptor.digest);
}

#[test]
fn manifests_are_checked_against_their_digest_size_and_type() {
    let image = fixtures::image("x", "amd64", &[b"layer"]);
    let (descriptor, bytes) = image.manifest.clone();
    let mut set = ImageSet::default();
    let mut wrong = descriptor.clone();
    wrong.digest = sha256(b"other");
    let error = set.add_manifest(0, &wrong, bytes.clone()).unwrap_err();
    assert!(
        error.to_string().contains("its content hashes to"),
        "{error}"
    );
    let mut short = descriptor.clone();
    short.size -= 1;
    let error = set.add_manifest(0, &short, bytes.clone()).unwrap_err();
    assert!(error.to_string().contains("but is listed as"), "{error}");
    let mut docker = descriptor.clone();
    docker.media_type = DOCKER_MANIFEST.into();
    let error = set.add_manifest(0, &docker, bytes.clone()).unwrap_err();
    assert!(error.to_string().contains("says mediaType"), "{error}");
    let mut other = descriptor.clone();
    other.media_type = "application/vnd.oci.image.layer.v1.tar".into();
    assert!(matches!(
        set.add_manifest(0, &other, bytes.clone()),
        Err(LayoutError::MediaType { .. })
    ));
    assert_eq!(set.add_manifest(0, &descriptor, bytes).unwrap(), []);
}

#[test]
fn index_json_lists_each_image_by_its_reference_and_reads_back() {
    let (set, _) = fixtures::set();
    let json = set.index_json();
    let read = read_index(&json).unwrap();
    assert_eq!(read.len(), 3);
    assert_eq!(read[0].reference, "quay.io/acme/bundle:1.0.0");
    assert_eq!(read[1].descriptor.digest, set.images[1].descriptor.digest);
    assert_eq!(read[1].descriptor.media_type, OCI_INDEX);
    assert!(
        read_index(br#"{"manifests": [{"mediaType": "x", "digest": "sha256:0", "size": 1}]}"#)
            .is_err()
    );
}

#[test]
fn platforms_come_from_the_index_or_the_config() {
    let (set, bytes) = fixtures::set();
    let configs: BTreeMap<String, Vec<u8>> = bytes;
    let offered = platforms(&set, 1, &configs);
    let shown: Vec<String> = offered.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["linux/amd64", "linux/arm64"]);
    let single = platforms(&set, 2, &configs);
    assert_eq!(single[0].architecture, "amd64");
    let wanted = ["amd64".to_string(), "arm64".to_string()];
    assert_eq!(
        missing_architectures("op", &offered, &wanted, "spec.architectures"),
        Vec::<String>::new()
    );
    let missing =
        missing_architectures("quay.io/acme/db:1", &single, &wanted, "spec.architectures");
    assert_eq!(
        missing,
        ["quay.io/acme/db:1 offers linux/amd64, not linux/arm64, which spec.architectures lists"]
    );
}
