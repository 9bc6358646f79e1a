//! `windlass package build DIR -o NAME.tgz` (violet's `package DIR`): the package folder, the
//! bundle image (or Helm chart) and every related image with all their platforms, into one
//! reproducible archive. Manifests are kept byte for byte and every blob is streamed from its
//! registry into the archive, checked against its digest on the way, so nothing larger than a
//! manifest is held in memory.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use windlass_oci::{RegistryClient, RegistryOptions, repository_of};
use windlass_package::archive::{ArchiveWriter, Contents};
use windlass_package::layout::{
    self, Descriptor, ImageSet, MAX_MANIFEST_BYTES, OCI_INDEX, OCI_MANIFEST, TopImage,
};
use windlass_package::sha256;

use super::package::{PackageRegistryArgs, lint_package, read_manifest, runtime};

/// Largest image config read to learn an image's platform.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

#[derive(clap::Args)]
pub struct BuildArgs {
    /// A package folder (holding manifest.yaml).
    pub dir: PathBuf,
    /// The archive to write; default `<name>-<version>.tgz` (`package`: `<name>.tgz`, as violet
    /// names it) in the current folder.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub registry: PackageRegistryArgs,
}

/// How an archive is named when --output does not say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputName {
    /// `<name>-<version>.tgz`, windlass's `build`.
    NameAndVersion,
    /// `<name>.tgz`, violet's `package`, which its `push NAME.tgz` expects.
    Name,
}

pub fn build(args: BuildArgs, naming: OutputName) -> anyhow::Result<ExitCode> {
    let (manifest, manifest_yaml) = read_manifest(&args.dir)?;
    let options = |reference: &str| args.registry.options(reference);
    let report = lint_package(&args.dir, &manifest, false, options)?;
    if report.has_errors() {
        eprintln!("not built: lint found errors");
        for finding in report.errors() {
            eprintln!("{finding}");
        }
        return Ok(ExitCode::from(1));
    }
    let icon = match manifest.spec.icon.as_str() {
        "" => None,
        name => Some((name.to_string(), std::fs::read(args.dir.join(name))?)),
    };
    let output = args.output.clone().unwrap_or_else(|| {
        let name = &manifest.metadata.name;
        PathBuf::from(match naming {
            OutputName::NameAndVersion => format!("{name}-{}.tgz", manifest.spec.version),
            OutputName::Name => format!("{name}.tgz"),
        })
    });
    let runtime = runtime()?;
    let mut clients = Clients::new(&args.registry);
    let images = runtime.block_on(fetch_manifests(&manifest, &mut clients))?;
    let contents = Contents {
        manifest_yaml,
        icon,
        images,
    };
    let written = runtime.block_on(write_archive(&contents, &mut clients, &output))?;
    println!(
        "built {} ({} images, {} manifests, {} blobs, {:.1} MB) {}",
        output.display(),
        contents.images.images.len(),
        contents.images.manifests.len(),
        contents.images.blobs.len(),
        written.bytes as f64 / 1e6,
        written.digest
    );
    Ok(ExitCode::SUCCESS)
}

/// One registry client per registry host, each with that registry's credentials.
struct Clients<'a> {
    args: &'a PackageRegistryArgs,
    by_host: BTreeMap<String, (RegistryClient, RegistryOptions)>,
}

impl<'a> Clients<'a> {
    fn new(args: &'a PackageRegistryArgs) -> Self {
        Clients {
            args,
            by_host: BTreeMap::new(),
        }
    }

    fn for_reference(&mut self, reference: &str) -> anyhow::Result<&RegistryClient> {
        let host = windlass_oci::registry_of(reference)
            .ok_or_else(|| anyhow!("`{reference}` is not an image reference"))?;
        if !self.by_host.contains_key(&host) {
            let options = self.args.options(reference)?;
            self.by_host
                .insert(host.clone(), (RegistryClient::new(&options), options));
        }
        Ok(&self.by_host[&host].0)
    }
}

/// The media type of a manifest the registry served: its own `mediaType`, or for an OCI
/// manifest that leaves it out, what its fields say it is.
fn media_type_of(bytes: &[u8], served: &str) -> String {
    if !served.is_empty() {
        return served.to_string();
    }
    let value: serde_json::Value = serde_json::from_slice(bytes).unwrap_or_default();
    if value.get("manifests").is_some() {
        OCI_INDEX.to_string()
    } else {
        OCI_MANIFEST.to_string()
    }
}

/// Every manifest of every image the package names, checked against its digest; and the
/// images' platforms against the architectures the package lists.
async fn fetch_manifests(
    manifest: &windlass_package::PackageManifest,
    clients: &mut Clients<'_>,
) -> anyhow::Result<ImageSet> {
    let mut set = ImageSet::default();
    let mut configs: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut problems = Vec::new();
    for (index, reference) in manifest.images().into_iter().enumerate() {
        let repository = repository_of(reference)?;
        let client = clients.for_reference(reference)?;
        let raw = client
            .manifest(reference, MAX_MANIFEST_BYTES)
            .await?
            .ok_or_else(|| anyhow!("{reference}: not found in the registry"))?;
        let digest = sha256(&raw.bytes);
        let top = Descriptor {
            media_type: media_type_of(&raw.bytes, &raw.media_type),
            digest: digest.clone(),
            size: raw.size(),
            ..Default::default()
        };
        set.images.push(TopImage {
            reference: reference.to_string(),
            descriptor: top.clone(),
        });
        let mut queue = vec![(top, raw.bytes)];
        while let Some((descriptor, bytes)) = queue.pop() {
            let children = set
                .add_manifest(index, &descriptor, bytes)
                .with_context(|| format!("image {reference}"))?;
            for child in children {
                if set.manifests.contains_key(&child.digest) {
                    continue;
                }
                let fetched = client
                    .manifest_by_digest(
                        &repository,
                        &child.digest,
                        Some(child.size as i64),
                        MAX_MANIFEST_BYTES,
                    )
                    .await?
                    .ok_or_else(|| {
                        anyhow!("{repository}@{}: not found in the registry", child.digest)
                    })?;
                queue.push((child, fetched.bytes));
            }
        }
        if index == 0 {
            // A bundle image (or a chart) holds manifests, not programs: it runs on no platform.
            continue;
        }
        if !layout::is_index(&set.images[index].descriptor.media_type) {
            let config = layout::children(
                &digest,
                &set.images[index].descriptor.media_type,
                &set.manifests[&digest].bytes,
            )?
            .blobs
            .into_iter()
            .next()
            .ok_or_else(|| anyhow!("{reference}: the manifest names no config"))?;
            let bytes = client
                .blob(&repository, &config.digest, MAX_CONFIG_BYTES)
                .await
                .with_context(|| format!("reading the config of {reference}"))?;
            configs.insert(config.digest, bytes);
        }
        let offered = layout::platforms(&set, index, &configs);
        problems.extend(layout::missing_architectures(
            reference,
            &offered,
            &manifest.spec.architectures,
            manifest.fields().architectures,
        ));
    }
    if !problems.is_empty() {
        bail!(
            "the images do not offer every architecture the package lists:\n  {}",
            problems.join("\n  ")
        );
    }
    Ok(set)
}

/// What was written: the archive's size and digest.
struct Written {
    bytes: u64,
    digest: String,
}

/// Counts and hashes what passes to the file, so the archive's digest is known without
/// reading it again.
struct Tally<W: Write> {
    inner: W,
    bytes: u64,
    hasher: sha2::Sha256,
}

impl<W: Write> Write for Tally<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use sha2::Digest;
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes the archive beside `output` and moves it into place once complete, so a failure
/// leaves nothing that looks like a package.
async fn write_archive(
    contents: &Contents,
    clients: &mut Clients<'_>,
    output: &Path,
) -> anyhow::Result<Written> {
    let partial = output.with_file_name(format!(
        ".{}.partial",
        output
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    let result = write_to(contents, clients, &partial).await;
    match result {
        Ok(written) => {
            std::fs::rename(&partial, output)
                .with_context(|| format!("moving {} to {}", partial.display(), output.display()))?;
            Ok(written)
        }
        Err(error) => {
            let _ = std::fs::remove_file(&partial);
            Err(error)
        }
    }
}

async fn write_to(
    contents: &Contents,
    clients: &mut Clients<'_>,
    path: &Path,
) -> anyhow::Result<Written> {
    use sha2::Digest;
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let tally = Tally {
        inner: std::io::BufWriter::with_capacity(1 << 20, file),
        bytes: 0,
        hasher: sha2::Sha256::new(),
    };
    let mut writer = ArchiveWriter::start(tally, contents)?;
    while let Some((digest, _)) = writer.next_blob().cloned() {
        let blob = &contents.images.blobs[&digest];
        let image = blob
            .images
            .iter()
            .next()
            .map(|i| contents.images.images[*i].reference.as_str())
            .ok_or_else(|| anyhow!("blob {digest} belongs to no image"))?;
        let repository = repository_of(image)?;
        let client = clients.for_reference(image)?;
        let mut entry = writer.blob(&digest)?;
        let mut failure = None;
        client
            .read_blob(&repository, &digest, |chunk| {
                entry.write(chunk).map_err(|e| {
                    let message = e.to_string();
                    failure = Some(e);
                    message
                })
            })
            .await
            .with_context(|| format!("copying blob {digest} of {image}"))?;
        if let Some(error) = failure {
            return Err(error.into());
        }
        entry
            .finish()
            .with_context(|| format!("copying blob {digest} of {image}"))?;
    }
    let mut tally = writer.finish()?;
    tally.flush()?;
    tally
        .inner
        .into_inner()
        .map_err(|e| e.into_error())?
        .sync_all()?;
    Ok(Written {
        bytes: tally.bytes,
        digest: format!("sha256:{:x}", tally.hasher.finalize()),
    })
}
