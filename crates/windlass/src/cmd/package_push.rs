//! `windlass package push NAME.tgz --dst-repo HOST[/PREFIX]` (violet's `--dest-repo`): every
//! image of a package archive into a site's registry, digests unchanged.
//!
//! The archive is read once, as a stream, on a thread of its own: each config and layer goes
//! to the registry as it is read (one request per blob; a blob the registry has already is
//! skipped, one another repository of the package needs is mounted there). Manifests are
//! pushed only after the whole archive has been read and every digest checked, children
//! before the indexes that list them, so a truncated or tampered archive leaves no image and
//! no tag behind, only blobs nothing refers to.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, anyhow};
use tokio::sync::mpsc;
use windlass_api::{
    Catalog, ImageMirrorSet, ImageMirrorSetSpec,
    catalog::{CatalogSource, CatalogSourceType},
    mirror::{ImageMirror, MirrorSourcePolicy},
};
use windlass_oci::RegistryClient;
use windlass_package::archive::{ArchiveError, BlobInfo, BlobSink, ReadPackage, read_archive};
use windlass_package::layout::ImageSet;
use windlass_package::manifest::ArtifactType;
use windlass_package::push::{Destination, destinations, mirror_rules};

use super::package::{ArchiveLimitArgs, PackageRegistryArgs, runtime};

/// Bytes handed to the upload at a time.
const CHUNK: usize = 1 << 20;
/// Chunks in flight between the reading thread and the upload.
const CHUNKS_IN_FLIGHT: usize = 4;

#[derive(clap::Args)]
pub struct PushArgs {
    /// A package archive made by `windlass package build`.
    pub archive: PathBuf,
    /// The registry (and optional path prefix) to push to: HOST[:PORT][/PREFIX]. Each image
    /// keeps its repository path below it.
    #[arg(long, visible_alias = "dest-repo")]
    pub dst_repo: String,
    /// Push nothing: check the archive, check that the registry serves every image of it
    /// already (by digest), and print what installs from there (violet's flag).
    #[arg(long)]
    pub skip_push: bool,
    /// The printed Catalog's name (violet's flag; default: the package's name).
    #[arg(long)]
    pub target_catalog_source: Option<String>,
    /// Accepted for violet's scripts: a push always replaces the tags it writes.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub platform: PlatformArgs,
    #[command(flatten)]
    pub registry: PackageRegistryArgs,
    #[command(flatten)]
    pub limits: ArchiveLimitArgs,
}

/// violet's flags for registering a package with an ACP platform, which windlass has no
/// counterpart of: named so that a script using them is told what to do instead.
#[derive(clap::Args)]
pub struct PlatformArgs {
    #[arg(long, hide = true)]
    pub platform_address: Option<String>,
    #[arg(long, hide = true)]
    pub platform_username: Option<String>,
    #[arg(long, hide = true)]
    pub platform_password: Option<String>,
    #[arg(long, hide = true)]
    pub platform_token: Option<String>,
    #[arg(long, hide = true)]
    pub clusters: Option<String>,
    #[arg(long, hide = true)]
    pub client_id: Option<String>,
    #[arg(long, hide = true)]
    pub skip_crs: bool,
    #[arg(long, hide = true)]
    pub target_chartrepo: Option<String>,
}

impl PlatformArgs {
    /// The first platform flag given, if any.
    fn given(&self) -> Option<&'static str> {
        [
            ("--platform-address", self.platform_address.is_some()),
            ("--platform-username", self.platform_username.is_some()),
            ("--platform-password", self.platform_password.is_some()),
            ("--platform-token", self.platform_token.is_some()),
            ("--clusters", self.clusters.is_some()),
            ("--client-id", self.client_id.is_some()),
            ("--skip-crs", self.skip_crs),
            ("--target-chartrepo", self.target_chartrepo.is_some()),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    }
}

/// One blob for the upload, its bytes following on `chunks`.
struct Upload {
    blob: BlobInfo,
    /// The repositories that need it, the first one uploaded to.
    repositories: Vec<String>,
    chunks: mpsc::Receiver<Result<bytes::Bytes, String>>,
}

/// Hands each blob the reader meets to the upload.
struct Forward {
    uploads: mpsc::Sender<Upload>,
    dst: String,
    /// Where each image goes, learnt from the archive's index (before any blob).
    placed: Option<Vec<Destination>>,
}

impl BlobSink for Forward {
    fn blob(
        &mut self,
        images: &ImageSet,
        blob: &BlobInfo,
        content: &mut dyn Read,
    ) -> Result<(), String> {
        if self.placed.is_none() {
            let references: Vec<&str> =
                images.images.iter().map(|i| i.reference.as_str()).collect();
            self.placed = Some(destinations(&self.dst, &references).map_err(|e| e.to_string())?);
        }
        let placed = self.placed.as_ref().expect("just set");
        let mut repositories: Vec<String> = Vec::new();
        for index in &blob.images {
            let repository = placed[*index].target.name();
            if !repositories.contains(&repository) {
                repositories.push(repository);
            }
        }
        let (chunks, receiver) = mpsc::channel(CHUNKS_IN_FLIGHT);
        let upload = Upload {
            blob: blob.clone(),
            repositories,
            chunks: receiver,
        };
        self.uploads
            .blocking_send(upload)
            .map_err(|_| "the push stopped".to_string())?;
        let mut buffer = vec![0u8; CHUNK];
        loop {
            let read = match content.read(&mut buffer) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) => {
                    // The upload stops on it; the reader, reading on, says what is wrong
                    // with the archive (cut short, corrupt).
                    let _ = chunks.blocking_send(Err(e.to_string()));
                    return Ok(());
                }
            };
            let chunk = bytes::Bytes::copy_from_slice(&buffer[..read]);
            if chunks.blocking_send(Ok(chunk)).is_err() {
                // The registry has it already (or the upload failed, which the push reports):
                // the reader checks the rest of the blob.
                return Ok(());
            }
        }
    }
}

pub fn push(args: PushArgs) -> anyhow::Result<ExitCode> {
    if let Some(flag) = args.platform.given() {
        anyhow::bail!(
            "{flag} registers the package with an ACP platform, which windlass does not do: it pushes the images to --dst-repo and prints the ImageMirrorSet and Catalog to apply to the cluster (kubectl apply -f -)"
        );
    }
    let probe = format!("{}/package", args.dst_repo.trim_end_matches('/'));
    let options = args.registry.options(&probe)?;
    if args.skip_push {
        return check_pushed(&args, &options);
    }
    let uploader = RegistryClient::for_streaming(&options);
    let file = std::fs::File::open(&args.archive)
        .with_context(|| format!("opening {}", args.archive.display()))?;
    let (uploads, mut incoming) = mpsc::channel::<Upload>(1);
    let limits = args.limits.limits();
    let dst = args.dst_repo.clone();
    let reader = std::thread::spawn(move || {
        let mut sink = Forward {
            uploads,
            dst,
            placed: None,
        };
        read_archive(
            std::io::BufReader::with_capacity(CHUNK, file),
            limits,
            &mut sink,
        )
    });
    let runtime = runtime()?;
    let uploaded = runtime.block_on(async {
        let mut counts = Counts::default();
        while let Some(upload) = incoming.recv().await {
            if let Err(error) = send_blob(&uploader, upload, &mut counts).await {
                // Dropping the receiver stops the reader at its next blob.
                drop(incoming);
                return Err(error);
            }
        }
        Ok(counts)
    });
    let read = reader
        .join()
        .map_err(|_| anyhow!("reading {} panicked", args.archive.display()))?;
    let (package, counts) = match (read, uploaded) {
        // The reader stopped because the upload did: the upload's error is the cause.
        (Err(ArchiveError::Sink { .. }), Err(error)) | (Ok(_), Err(error)) => {
            return Err(error.context(
                "pushing the package's blobs failed; nothing was tagged or pushed as an image",
            ));
        }
        (Err(error), _) => {
            return Err(anyhow!(error)).with_context(|| {
                format!(
                    "{} is refused; nothing was tagged or pushed as an image",
                    args.archive.display()
                )
            });
        }
        (Ok(package), Ok(counts)) => (package, counts),
    };
    let references: Vec<&str> = package
        .images
        .images
        .iter()
        .map(|i| i.reference.as_str())
        .collect();
    let placed = destinations(&args.dst_repo, &references)?;
    let client = RegistryClient::new(&options);
    runtime.block_on(push_manifests(&client, &package, &placed))?;
    print_result(&args, &package, &placed, &counts);
    Ok(ExitCode::SUCCESS)
}

/// What the upload did.
#[derive(Default)]
struct Counts {
    uploaded: usize,
    uploaded_bytes: u64,
    present: usize,
    mounted: usize,
}

async fn send_blob(
    client: &RegistryClient,
    upload: Upload,
    counts: &mut Counts,
) -> anyhow::Result<()> {
    let Upload {
        blob,
        repositories,
        chunks,
    } = upload;
    let (first, others) = repositories
        .split_first()
        .ok_or_else(|| anyhow!("blob {} belongs to no image", blob.digest))?;
    if client.has_blob(first, &blob.digest).await? {
        counts.present += 1;
        drop(chunks);
    } else {
        let stream = futures::stream::unfold(chunks, |mut chunks| async move {
            chunks.recv().await.map(|chunk| (chunk, chunks))
        });
        client
            .push_blob_stream(first, &blob.digest, blob.size, stream)
            .await
            .with_context(|| format!("uploading blob {} to {first}", blob.digest))?;
        counts.uploaded += 1;
        counts.uploaded_bytes += blob.size;
    }
    for repository in others {
        if client.has_blob(repository, &blob.digest).await? {
            continue;
        }
        if !client.mount_blob(repository, first, &blob.digest).await? {
            return Err(anyhow!(
                "the registry would not mount blob {} from {first} into {repository}, which needs it too",
                blob.digest
            ));
        }
        counts.mounted += 1;
    }
    Ok(())
}

/// Every manifest of every image, children before the indexes listing them, by digest; then
/// the tag the package names each image by, if any; then a check that the registry serves
/// each image under the digest the package has.
async fn push_manifests(
    client: &RegistryClient,
    package: &ReadPackage,
    placed: &[Destination],
) -> anyhow::Result<()> {
    for (index, destination) in placed.iter().enumerate() {
        let repository = destination.target.name();
        for descriptor in package.images.manifests_of(index).iter().rev() {
            let stored = &package.images.manifests[&descriptor.digest];
            client
                .push_manifest(&repository, None, &stored.bytes, &stored.media_type)
                .await
                .with_context(|| {
                    format!("pushing manifest {} to {repository}", descriptor.digest)
                })?;
        }
        let top = &package.images.images[index].descriptor;
        if let Some(tag) = &destination.target.tag {
            let stored = &package.images.manifests[&top.digest];
            client
                .push_manifest(&repository, Some(tag), &stored.bytes, &stored.media_type)
                .await
                .with_context(|| format!("tagging {repository}:{tag}"))?;
        }
        let served = client
            .resolve_digest(&destination.target.to_string())
            .await?
            .ok_or_else(|| anyhow!("{} is not served after the push", destination.target))?;
        if served != top.digest {
            return Err(anyhow!(
                "{} is served as {served}, not {} as pushed",
                destination.target,
                top.digest
            ));
        }
    }
    Ok(())
}

/// `--skip-push`: the archive checked whole, and every image of it served by the registry under
/// its digest already.
fn check_pushed(
    args: &PushArgs,
    options: &windlass_oci::RegistryOptions,
) -> anyhow::Result<ExitCode> {
    let file = std::fs::File::open(&args.archive)
        .with_context(|| format!("opening {}", args.archive.display()))?;
    let package = read_archive(
        std::io::BufReader::with_capacity(CHUNK, file),
        args.limits.limits(),
        &mut windlass_package::archive::Discard,
    )
    .with_context(|| format!("{} is refused", args.archive.display()))?;
    let references: Vec<&str> = package
        .images
        .images
        .iter()
        .map(|i| i.reference.as_str())
        .collect();
    let placed = destinations(&args.dst_repo, &references)?;
    let client = RegistryClient::new(options);
    runtime()?.block_on(async {
        for (destination, image) in placed.iter().zip(&package.images.images) {
            let pinned = format!("{}@{}", destination.target.name(), image.descriptor.digest);
            if client.resolve_digest(&pinned).await?.is_none() {
                return Err(anyhow!(
                    "{pinned} is not in the registry: push without --skip-push"
                ));
            }
        }
        Ok(())
    })?;
    println!(
        "{} {} is in {} already: nothing pushed",
        package.manifest.metadata.name, package.manifest.spec.version, args.dst_repo
    );
    print_objects(args, &package, &placed);
    Ok(ExitCode::SUCCESS)
}

fn print_result(args: &PushArgs, package: &ReadPackage, placed: &[Destination], counts: &Counts) {
    println!(
        "pushed {} {} to {}: {} blobs uploaded ({:.1} MB), {} already there, {} mounted; {} manifests",
        package.manifest.metadata.name,
        package.manifest.spec.version,
        args.dst_repo,
        counts.uploaded,
        counts.uploaded_bytes as f64 / 1e6,
        counts.present,
        counts.mounted,
        package.images.manifests.len()
    );
    print_objects(args, package, placed);
}

/// Where each image went, and what installs from there: the mirror rules, and a Catalog for a
/// bundle (a chart is installed with helm).
fn print_objects(args: &PushArgs, package: &ReadPackage, placed: &[Destination]) {
    for (destination, image) in placed.iter().zip(&package.images.images) {
        println!(
            "  {} -> {}@{}",
            destination.source,
            destination.target.name(),
            image.descriptor.digest
        );
    }
    let name = &package.manifest.metadata.name;
    let catalog_name = args.target_catalog_source.as_ref().unwrap_or(name);
    let mirrors = ImageMirrorSet::new(
        name,
        ImageMirrorSetSpec {
            mirrors: mirror_rules(placed)
                .into_iter()
                .map(|(source, mirror)| ImageMirror {
                    source,
                    mirrors: vec![mirror],
                    mirror_source_policy: MirrorSourcePolicy::NeverContactSource,
                })
                .collect(),
        },
    );
    println!(
        "\n# The rule that sends the images' references to {}:",
        args.dst_repo
    );
    println!("{}", yaml(&mirrors));
    if package.manifest.artifact().1 == ArtifactType::Chart {
        println!(
            "# The chart, installed with helm (windlass Catalogs serve OLM bundles):\nhelm install {name} oci://{} --version {}{}",
            placed[0].target.name(),
            package.manifest.spec.version,
            if args.registry.plain_http() {
                " --plain-http"
            } else {
                ""
            }
        );
        return;
    }
    let bundle = &placed[0].source;
    let pinned = format!(
        "{}@{}",
        bundle.name(),
        package.images.images[0].descriptor.digest
    );
    let pull_secret = args.registry.has_credentials();
    let catalog = Catalog::new(
        catalog_name,
        windlass_api::CatalogSpec {
            source: CatalogSource {
                type_: CatalogSourceType::BundleImages,
                bundle_images: vec![pinned],
                plain_http: args.registry.plain_http(),
                pull_secret: pull_secret.then(|| format!("{catalog_name}-pull-secret")),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    println!(
        "# A Catalog serving the bundle by the name it was published under (the rule above sends it to {}){}:",
        args.dst_repo,
        if pull_secret {
            format!(
                "; the pull Secret is a kubernetes.io/dockerconfigjson Secret in the manager's namespace with credentials for {}",
                placed[0].target.domain
            )
        } else {
            String::new()
        }
    );
    println!("---\n{}", yaml(&catalog));
}

fn yaml<T: serde::Serialize>(value: &T) -> String {
    serde_saphyr::to_string(value).unwrap_or_default()
}
