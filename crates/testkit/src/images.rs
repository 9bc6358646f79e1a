//! Container images made for a test with windlass's own OCI code: one runnable image per
//! architecture and an OCI index over them, as multi-architecture images are published.

use oci_client::manifest::OCI_IMAGE_INDEX_MEDIA_TYPE;
use windlass_oci::{
    RegistryClient, RegistryOptions,
    image::{Entry, RunConfig, push_runnable},
    repository_of,
};

/// A pushed multi-architecture image.
#[derive(Clone, Debug)]
pub struct PushedIndex {
    /// `repository:tag`
    pub reference: String,
    /// The index's digest.
    pub digest: String,
    /// Each architecture's image manifest digest, in the order asked for.
    pub platforms: Vec<(String, String)>,
}

impl PushedIndex {
    /// `repository@digest`
    pub fn pinned(&self) -> String {
        format!(
            "{}@{}",
            repository_of(&self.reference).expect("a pushed reference"),
            self.digest
        )
    }
}

/// Pushes `reference` (`repository:tag`) as an OCI index of one image per architecture in
/// `architectures`. Each image holds `/payload` of `payload_bytes` bytes that differ per
/// architecture and per `seed` (so images do not share layers unless asked) and a small
/// `/etc/os-release`.
pub async fn push_multi_arch(
    reference: &str,
    architectures: &[&str],
    payload_bytes: usize,
    seed: u64,
    options: &RegistryOptions,
) -> PushedIndex {
    let repository = repository_of(reference).expect("a repository reference");
    let tag = reference
        .rsplit_once(':')
        .map(|(_, t)| t)
        .unwrap_or("latest");
    let mut entries = Vec::new();
    for (i, arch) in architectures.iter().enumerate() {
        let run = RunConfig {
            entrypoint: vec!["/payload".into()],
            os: "linux".into(),
            architecture: arch.to_string(),
            created_by: "windlass test image".into(),
            ..Default::default()
        };
        let files = [
            Entry::File {
                path: "/payload".into(),
                mode: 0o755,
                bytes: payload(payload_bytes, seed.wrapping_mul(31).wrapping_add(i as u64)),
            },
            Entry::File {
                path: "/etc/os-release".into(),
                mode: 0o644,
                bytes: format!("ID=windlass-test\nARCH={arch}\n").into_bytes(),
            },
        ];
        let arch_ref = format!("{repository}:{tag}-{arch}");
        let pushed = push_runnable(&files, &run, &arch_ref, options)
            .await
            .unwrap_or_else(|e| panic!("pushing {arch_ref}: {e}"));
        let client = RegistryClient::new(options);
        let manifest = client
            .manifest(&format!("{repository}@{}", pushed.digest), 4 << 20)
            .await
            .unwrap()
            .expect("the image just pushed");
        entries.push((
            arch.to_string(),
            pushed.digest,
            manifest.bytes.len(),
            manifest.media_type,
        ));
    }
    let index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_IMAGE_INDEX_MEDIA_TYPE,
        "manifests": entries.iter().map(|(arch, digest, size, media_type)| serde_json::json!({
            "mediaType": media_type,
            "digest": digest,
            "size": size,
            "platform": {"architecture": arch, "os": "linux"},
        })).collect::<Vec<_>>(),
    });
    let bytes = serde_json::to_vec(&index).unwrap();
    let digest = RegistryClient::new(options)
        .push_manifest(&repository, Some(tag), &bytes, OCI_IMAGE_INDEX_MEDIA_TYPE)
        .await
        .unwrap_or_else(|e| panic!("pushing the index {reference}: {e}"));
    PushedIndex {
        reference: reference.to_string(),
        digest,
        platforms: entries.into_iter().map(|(a, d, _, _)| (a, d)).collect(),
    }
}

/// `len` bytes that do not compress (a small xorshift stream from `seed`), as real binaries
/// and compressed layers are.
pub fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(len);
    out
}
