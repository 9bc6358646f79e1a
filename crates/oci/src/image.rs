//! Runnable images: files with their modes in one layer, and an OCI image config that says how
//! to run them (entrypoint, command, user, environment, labels). The manager image is one.
//!
//! Bundle and catalog images ([`super::push_image`]) only carry data, so every file there is
//! `0644` and the config has labels alone; a runnable image needs an executable file and a run
//! configuration, hence this second, additive entry point. The layer is reproducible: entries
//! are sorted, owned by root, dated 1970, so the same files always give the same digests.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::{self, OciImageManifest};

use super::{OciError, RegistryOptions, client, map_error, parse_reference, sha256};

/// One entry of the image's filesystem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A regular file at an absolute path (`/windlass`), with its permission bits.
    File {
        path: String,
        mode: u32,
        bytes: Vec<u8>,
    },
    /// A directory that must exist even when empty (`/tmp`, mode `0o1777`).
    Dir { path: String, mode: u32 },
}

impl Entry {
    fn path(&self) -> &str {
        match self {
            Entry::File { path, .. } | Entry::Dir { path, .. } => path,
        }
    }
}

/// How a runtime starts the image: the `config` object of an OCI image config, plus the
/// platform it runs on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunConfig {
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    /// `uid:gid` (or a name the image's `/etc/passwd` knows); empty for root.
    pub user: String,
    /// `NAME=value` pairs.
    pub env: Vec<String>,
    pub labels: BTreeMap<String, String>,
    /// `linux`
    pub os: String,
    /// `amd64`, `arm64`, ...
    pub architecture: String,
    /// What the image history says made the layer.
    pub created_by: String,
}

/// A packed layer: the gzip-compressed tar and the two digests an image refers to it by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    pub gzip: Vec<u8>,
    /// `sha256:` of the compressed bytes: the manifest's layer digest.
    pub digest: String,
    /// `sha256:` of the uncompressed tar: the config's `rootfs.diff_ids` entry.
    pub diff_id: String,
}

/// What [`push_runnable`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushedImage {
    pub reference: String,
    /// The image manifest digest.
    pub digest: String,
    pub config_digest: String,
    pub layer_digest: String,
    pub layer_diff_id: String,
    /// Compressed layer size in bytes.
    pub layer_size: u64,
    /// Layer plus config plus manifest: what the image costs in a registry.
    pub total_size: u64,
}

/// `/etc/ssl/certs/x` -> `etc/ssl/certs/x`; refuses relative paths and `..`.
fn archive_path(path: &str) -> std::io::Result<String> {
    let invalid = |why: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("image path `{path}`: {why}"),
        )
    };
    let Some(relative) = path.strip_prefix('/') else {
        return Err(invalid("must be absolute"));
    };
    let parts: Vec<&str> = relative.split('/').filter(|p| !p.is_empty()).collect();
    if parts.is_empty() {
        return Err(invalid("names the root"));
    }
    if parts.iter().any(|p| *p == "." || *p == "..") {
        return Err(invalid("`.` and `..` are not allowed"));
    }
    Ok(parts.join("/"))
}

fn header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header.set_size(size);
    header
}

/// Packs `entries` into one reproducible `tar+gzip` layer. Parent directories that are not
/// listed are added with mode `0755`; two entries with one path are an error.
pub fn layer(entries: &[Entry]) -> std::io::Result<Layer> {
    let mut by_path = BTreeMap::new();
    for entry in entries {
        let key = archive_path(entry.path())?;
        if by_path.insert(key.clone(), entry).is_some() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("image path `/{key}` is listed twice"),
            ));
        }
    }
    let mut parents = BTreeSet::new();
    for key in by_path.keys() {
        let mut prefix = String::new();
        let parts: Vec<&str> = key.split('/').collect();
        for part in &parts[..parts.len() - 1] {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            if !by_path.contains_key(&prefix) {
                parents.insert(prefix.clone());
            }
        }
    }
    // Sorted by path, so a directory always comes before what it holds.
    let mut ordered: BTreeMap<String, Option<&Entry>> =
        parents.into_iter().map(|p| (p, None)).collect();
    ordered.extend(by_path.into_iter().map(|(k, e)| (k, Some(e))));

    let mut builder = tar::Builder::new(Vec::new());
    for (key, entry) in &ordered {
        match entry {
            None => {
                let mut h = header(tar::EntryType::Directory, 0o755, 0);
                builder.append_data(&mut h, format!("{key}/"), std::io::empty())?;
            }
            Some(Entry::Dir { mode, .. }) => {
                let mut h = header(tar::EntryType::Directory, *mode, 0);
                builder.append_data(&mut h, format!("{key}/"), std::io::empty())?;
            }
            Some(Entry::File { mode, bytes, .. }) => {
                let mut h = header(tar::EntryType::Regular, *mode, bytes.len() as u64);
                builder.append_data(&mut h, key, bytes.as_slice())?;
            }
        }
    }
    let tar = builder.into_inner()?;
    let diff_id = sha256(&tar);
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&tar)?;
    let gzip = encoder.finish()?;
    Ok(Layer {
        digest: sha256(&gzip),
        diff_id,
        gzip,
    })
}

/// The OCI image config for one layer.
pub fn config(run: &RunConfig, diff_id: &str) -> serde_json::Value {
    let mut config = serde_json::Map::new();
    if !run.user.is_empty() {
        config.insert("User".into(), run.user.clone().into());
    }
    if !run.env.is_empty() {
        config.insert("Env".into(), run.env.clone().into());
    }
    if !run.entrypoint.is_empty() {
        config.insert("Entrypoint".into(), run.entrypoint.clone().into());
    }
    if !run.cmd.is_empty() {
        config.insert("Cmd".into(), run.cmd.clone().into());
    }
    if !run.labels.is_empty() {
        config.insert("Labels".into(), serde_json::json!(run.labels));
    }
    serde_json::json!({
        "architecture": run.architecture,
        "os": run.os,
        "config": config,
        "rootfs": { "type": "layers", "diff_ids": [diff_id] },
        "history": [{ "created_by": run.created_by }],
    })
}

/// Reads a layer back into `(path, entry type, mode, size)` rows, for checks and listings.
pub fn list_layer(gzip: &[u8]) -> std::io::Result<Vec<(String, tar::EntryType, u32, u64)>> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(gzip));
    let mut rows = Vec::new();
    for entry in archive.entries()? {
        let mut entry = entry?;
        let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let header = entry.header();
        let row = (path, header.entry_type(), header.mode()?, header.size()?);
        // Read the content through, so a truncated archive is an error here.
        std::io::copy(&mut entry, &mut std::io::sink())?;
        rows.push(row);
    }
    Ok(rows)
}

/// Pushes `entries` as a one-layer runnable OCI image (OCI manifest, OCI config with `run`).
pub async fn push_runnable(
    entries: &[Entry],
    run: &RunConfig,
    reference: &str,
    options: &RegistryOptions,
) -> Result<PushedImage, OciError> {
    let parsed = parse_reference(reference)?;
    let packed = layer(entries).map_err(|e| OciError::Registry {
        reference: reference.into(),
        message: format!("cannot pack the layer: {e}"),
    })?;
    let config_bytes =
        serde_json::to_vec(&config(run, &packed.diff_id)).expect("a JSON value serialises");
    let config_digest = sha256(&config_bytes);
    let config_size = config_bytes.len() as u64;
    let layer_size = packed.gzip.len() as u64;
    let config = Config::new(
        config_bytes,
        manifest::IMAGE_CONFIG_MEDIA_TYPE.to_string(),
        None,
    );
    let layers = vec![ImageLayer::new(
        packed.gzip,
        manifest::IMAGE_LAYER_GZIP_MEDIA_TYPE.to_string(),
        None,
    )];
    let mut image_manifest = OciImageManifest::build(&layers, &config, None);
    image_manifest.media_type = Some(manifest::OCI_IMAGE_MEDIA_TYPE.to_string());
    let manifest_bytes = serde_json::to_vec(&image_manifest).expect("a manifest serialises");
    let client = client(options);
    let auth = options.auth.to_registry_auth();
    client
        .push(&parsed, &layers, config, &auth, Some(image_manifest))
        .await
        .map_err(|e| map_error(&parsed, e))?;
    // Ask the registry for the digest it serves; fall back to hashing what was sent.
    let digest = client
        .fetch_manifest_digest(&parsed, &auth)
        .await
        .unwrap_or_else(|_| sha256(&manifest_bytes));
    Ok(PushedImage {
        reference: reference.to_string(),
        digest,
        config_digest,
        layer_digest: packed.digest,
        layer_diff_id: packed.diff_id,
        layer_size,
        total_size: layer_size + config_size + manifest_bytes.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn file(path: &str, mode: u32, bytes: &[u8]) -> Entry {
        Entry::File {
            path: path.into(),
            mode,
            bytes: bytes.to_vec(),
        }
    }

    #[test]
    fn the_layer_keeps_modes_adds_parents_and_is_reproducible() {
        let entries = [
            file("/windlass", 0o755, b"\x7fELF..."),
            file("/etc/ssl/certs/ca-certificates.crt", 0o644, b"-----BEGIN"),
            Entry::Dir {
                path: "/tmp".into(),
                mode: 0o1777,
            },
        ];
        let packed = layer(&entries).unwrap();
        let rows = list_layer(&packed.gzip).unwrap();
        let listing: Vec<(&str, u32)> = rows.iter().map(|r| (r.0.as_str(), r.2)).collect();
        assert_eq!(
            listing,
            [
                ("etc/", 0o755),
                ("etc/ssl/", 0o755),
                ("etc/ssl/certs/", 0o755),
                ("etc/ssl/certs/ca-certificates.crt", 0o644),
                ("tmp/", 0o1777),
                ("windlass", 0o755),
            ]
        );
        assert_eq!(rows[5].1, tar::EntryType::Regular);
        assert_eq!(rows[5].3, 7);
        assert_eq!(packed.digest, sha256(&packed.gzip));
        let mut tar = Vec::new();
        flate2::read::GzDecoder::new(packed.gzip.as_slice())
            .read_to_end(&mut tar)
            .unwrap();
        assert_eq!(packed.diff_id, sha256(&tar));
        // Same files, same digests; a changed mode changes them.
        assert_eq!(layer(&entries).unwrap(), packed);
        let mut changed = entries.clone();
        changed[0] = file("/windlass", 0o644, b"\x7fELF...");
        assert_ne!(layer(&changed).unwrap().diff_id, packed.diff_id);
    }

    #[test]
    fn bad_paths_and_duplicates_are_refused() {
        assert!(layer(&[file("windlass", 0o755, b"")]).is_err());
        assert!(layer(&[file("/etc/../windlass", 0o755, b"")]).is_err());
        assert!(layer(&[file("/", 0o755, b"")]).is_err());
        assert!(layer(&[file("/a", 0o755, b""), file("//a", 0o644, b"")]).is_err());
    }

    #[test]
    fn the_config_says_how_to_run_the_image() {
        let run = RunConfig {
            entrypoint: vec!["/windlass".into()],
            cmd: vec!["manager".into()],
            user: "65532:65532".into(),
            env: vec![],
            labels: [("org.opencontainers.image.title".into(), "windlass".into())].into(),
            os: "linux".into(),
            architecture: "amd64".into(),
            created_by: "test".into(),
        };
        let config = config(&run, "sha256:abc");
        assert_eq!(config["os"], "linux");
        assert_eq!(config["architecture"], "amd64");
        assert_eq!(
            config["config"]["Entrypoint"],
            serde_json::json!(["/windlass"])
        );
        assert_eq!(config["config"]["Cmd"], serde_json::json!(["manager"]));
        assert_eq!(config["config"]["User"], "65532:65532");
        assert!(config["config"].get("Env").is_none());
        assert_eq!(
            config["config"]["Labels"]["org.opencontainers.image.title"],
            "windlass"
        );
        assert_eq!(config["rootfs"]["diff_ids"][0], "sha256:abc");
    }
}
