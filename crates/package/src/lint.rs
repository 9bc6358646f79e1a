//! Checks of a package manifest, and of the manifest against its bundle. Every finding names
//! the field (`spec.bundle must not be empty`), so a person can fix it without reading code.

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;
use windlass_mirror::ImageReference;

use crate::images::{ImageUse, bundle_images};
use crate::manifest::{API_VERSION, ArtifactType, KIND, MANIFEST_FILE, PackageManifest};

/// Largest icon carried in a package (the hub shows it small; OLM's own limit is lower).
pub const MAX_ICON_BYTES: u64 = 1024 * 1024;
/// Icon files by extension, with the media type the hub serves them as.
pub const ICON_TYPES: [(&str, &str); 5] = [
    ("svg", "image/svg+xml"),
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
];
/// The CPU architectures images are published for, as image indexes name them.
pub const ARCHITECTURES: [&str; 8] = [
    "amd64", "arm64", "ppc64le", "s390x", "386", "arm", "riscv64", "mips64le",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Error,
    Warning,
}

/// One problem, naming the field it is about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub level: Level,
    /// `spec.relatedImages[2].image`
    pub field: String,
    /// A sentence that starts with the field.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.level {
            Level::Error => "error",
            Level::Warning => "warning",
        };
        write!(f, "{level}: {MANIFEST_FILE}: {}", self.message)
    }
}

/// Every finding of one lint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.level == Level::Error)
    }

    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.level == Level::Error)
    }

    pub(crate) fn error(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.findings.push(Finding {
            level: Level::Error,
            field: field.into(),
            message: message.into(),
        });
    }

    pub(crate) fn warning(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.findings.push(Finding {
            level: Level::Warning,
            field: field.into(),
            message: message.into(),
        });
    }
}

/// The icon file as found beside the manifest: its size, or `None` when it does not exist.
pub type IconSize = Option<u64>;

/// Checks the manifest on its own, naming each field as the manifest's format spells it.
/// `icon_size` is what the package folder holds under the icon's name (the caller reads the
/// folder).
pub fn lint_manifest(manifest: &PackageManifest, icon_size: IconSize) -> Report {
    let mut report = Report::default();
    match &manifest.violet {
        Some(file) => crate::violet::lint(file, &mut report),
        None => lint_windlass_header(manifest, &mut report),
    }
    let fields = manifest.fields();
    let name = &manifest.metadata.name;
    if name.is_empty() {
        report.error("metadata.name", "metadata.name must not be empty");
    } else if !is_package_name(name) {
        report.error(
            "metadata.name",
            format!(
                "metadata.name `{name}` must be lowercase letters, digits, `-` and `.`, start and end with a letter or digit, at most 253 characters"
            ),
        );
    }
    let spec = &manifest.spec;
    let (artifact, kind) = manifest.artifact();
    check_version(&mut report, &spec.version, kind);
    let artifact_field = match kind {
        ArtifactType::Bundle => fields.bundle,
        ArtifactType::Chart => fields.chart,
    };
    if !spec.bundle.is_empty() && !spec.chart.is_empty() {
        report.error(
            fields.bundle,
            format!(
                "{} and {} are both set: a package carries one bundle or one chart",
                fields.bundle, fields.chart
            ),
        );
    } else if artifact.is_empty() {
        report.error(
            artifact_field,
            format!("{artifact_field} must not be empty"),
        );
    } else {
        check_image(&mut report, artifact_field, artifact);
    }
    if spec.display_name.trim().is_empty() {
        let field = fields.display_name;
        report.warning(
            field,
            format!("{field} is empty: the hub shows the package name instead"),
        );
    }
    check_icon(&mut report, fields.icon, &spec.icon, icon_size);
    let mut keywords = BTreeSet::new();
    for (i, keyword) in spec.keywords.iter().enumerate() {
        let field = format!("{}[{i}]", fields.keywords);
        if keyword.trim().is_empty() {
            report.error(&field, format!("{field} must not be empty"));
        } else if !keywords.insert(keyword.as_str()) {
            report.warning(&field, format!("{field} `{keyword}` is listed twice"));
        }
    }
    for (i, link) in spec.links.iter().enumerate() {
        let field = format!("{}[{i}]", fields.links);
        if link.name.trim().is_empty() {
            report.error(
                format!("{field}.name"),
                format!("{field}.name must not be empty"),
            );
        }
        if !(link.url.starts_with("https://") || link.url.starts_with("http://"))
            || link.url.len() <= "https://".len()
        {
            report.error(
                format!("{field}.url"),
                format!("{field}.url `{}` must be an http(s) URL", link.url),
            );
        }
    }
    let mut images = BTreeSet::new();
    for (i, related) in spec.related_images.iter().enumerate() {
        let field = manifest.related_image_field(i);
        if related.image.is_empty() {
            report.error(&field, format!("{field} must not be empty"));
            continue;
        }
        check_image(&mut report, &field, &related.image);
        if related.image == artifact {
            report.warning(
                &field,
                format!(
                    "{field} is the {} image, which is always carried",
                    kind.as_str()
                ),
            );
        } else if !images.insert(related.image.as_str()) {
            report.warning(
                &field,
                format!("{field} `{}` is listed twice", related.image),
            );
        }
    }
    report
}

/// What only windlass's format has: its apiVersion and kind, and `spec.architectures` by name.
fn lint_windlass_header(manifest: &PackageManifest, report: &mut Report) {
    if manifest.api_version != API_VERSION {
        report.error(
            "apiVersion",
            format!(
                "apiVersion must be {API_VERSION}, not `{}`",
                manifest.api_version
            ),
        );
    }
    if manifest.kind != KIND {
        report.error(
            "kind",
            format!("kind must be {KIND}, not `{}`", manifest.kind),
        );
    }
    let architectures = &manifest.spec.architectures;
    if architectures.is_empty() {
        report.error(
            "spec.architectures",
            format!(
                "spec.architectures must list at least one architecture ({})",
                ARCHITECTURES.join(", ")
            ),
        );
    }
    let mut seen = BTreeSet::new();
    for (i, arch) in architectures.iter().enumerate() {
        let field = format!("spec.architectures[{i}]");
        if !ARCHITECTURES.contains(&arch.as_str()) {
            report.error(
                &field,
                format!(
                    "{field} `{arch}` is not an architecture images are published for ({})",
                    ARCHITECTURES.join(", ")
                ),
            );
        } else if !seen.insert(arch.as_str()) {
            report.error(&field, format!("{field} `{arch}` is listed twice"));
        }
    }
}

/// Operator versions are semver; Helm charts are versioned `v1.2.3` as often as `1.2.3`.
fn check_version(report: &mut Report, version: &str, kind: ArtifactType) {
    if version.is_empty() {
        report.error("spec.version", "spec.version must not be empty");
        return;
    }
    let bare = match kind {
        ArtifactType::Chart => version.strip_prefix('v').unwrap_or(version),
        ArtifactType::Bundle => version,
    };
    if let Err(e) = semver::Version::parse(bare) {
        report.error(
            "spec.version",
            format!("spec.version `{version}` is not semver: {e}"),
        );
    }
}

/// Checks that the manifest carries every image the bundle's CSV names (relatedImages, the
/// images its Deployments run and their `RELATED_IMAGE_*` values): an image left out would
/// be missing at the air-gapped site.
pub fn lint_against_bundle(
    manifest: &PackageManifest,
    csv: &windlass_bundle::csv::ClusterServiceVersion,
) -> Report {
    let mut report = Report::default();
    let listed: BTreeSet<&str> = manifest.images().into_iter().collect();
    let field = manifest.fields().related_images;
    for ImageUse { image, used_by } in bundle_images(csv) {
        if !listed.contains(image.as_str()) {
            report.error(
                field,
                format!(
                    "{field} does not list {image}, which {used_by}; the package would not carry it"
                ),
            );
        }
    }
    if let Some(version) = csv.spec.version.as_deref()
        && !manifest.spec.version.is_empty()
        && version != manifest.spec.version
    {
        report.error(
            "spec.version",
            format!(
                "spec.version {} differs from the bundle's CSV {}, which is version {version}",
                manifest.spec.version,
                csv.name()
            ),
        );
    }
    report
}

fn check_image(report: &mut Report, field: &str, image: &str) {
    match ImageReference::parse(image) {
        Err(e) => report.error(field, format!("{field}: {e}")),
        Ok(parsed) if parsed.digest.is_none() => report.warning(
            field,
            format!(
                "{field} `{image}` is not pinned by digest: the archive holds what the tag points at when it is built, and the cluster pulls the tag"
            ),
        ),
        Ok(_) => {}
    }
}

fn check_icon(report: &mut Report, field: &str, icon: &str, size: IconSize) {
    if icon.is_empty() {
        return;
    }
    if icon_media_type(icon).is_none() {
        report.error(
            field,
            format!(
                "{field} `{icon}` must be a file name ending in {}",
                ICON_TYPES
                    .iter()
                    .map(|(ext, _)| format!(".{ext}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
        return;
    }
    match size {
        None => report.error(
            field,
            format!("{field} `{icon}` does not exist beside {MANIFEST_FILE}"),
        ),
        Some(bytes) if bytes > MAX_ICON_BYTES => report.error(
            field,
            format!("{field} `{icon}` is {bytes} bytes, more than {MAX_ICON_BYTES}"),
        ),
        Some(0) => report.error(field, format!("{field} `{icon}` is empty")),
        Some(_) => {}
    }
}

/// The icon's media type, when `icon` is a plain file name with a known extension.
pub fn icon_media_type(icon: &str) -> Option<&'static str> {
    if icon.contains('/') || icon.contains('\\') || icon.starts_with('.') || icon.len() > 64 {
        return None;
    }
    let (_, ext) = icon.rsplit_once('.')?;
    let ext = ext.to_ascii_lowercase();
    ICON_TYPES
        .iter()
        .find(|(known, _)| *known == ext)
        .map(|(_, media_type)| *media_type)
}

/// Package names as catalogs and Kubernetes labels accept them.
fn is_package_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    name.len() <= 253
        && bytes.first().is_some_and(edge)
        && bytes.last().is_some_and(edge)
        && bytes.iter().all(|b| edge(b) || *b == b'-' || *b == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{Link, RelatedImage};

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn good() -> PackageManifest {
        let mut manifest = PackageManifest {
            api_version: API_VERSION.into(),
            kind: KIND.into(),
            ..Default::default()
        };
        manifest.metadata.name = "acme-db".into();
        manifest.spec.version = "1.1.0".into();
        manifest.spec.bundle = format!("quay.io/acme/db-bundle@{DIGEST}");
        manifest.spec.display_name = "Acme DB".into();
        manifest.spec.architectures = vec!["amd64".into()];
        manifest.spec.related_images = vec![RelatedImage {
            name: "operator".into(),
            image: format!("quay.io/acme/db-operator@{DIGEST}"),
        }];
        manifest
    }

    fn messages(report: &Report) -> Vec<String> {
        report.findings.iter().map(|f| f.message.clone()).collect()
    }

    #[test]
    fn a_complete_manifest_is_clean() {
        let report = lint_manifest(&good(), None);
        assert_eq!(report.findings, []);
    }

    #[test]
    fn every_problem_names_its_field() {
        type Edit = fn(&mut PackageManifest);
        let cases: Vec<(Edit, &str, Level)> = vec![
            (
                |m| m.spec.bundle.clear(),
                "spec.bundle must not be empty",
                Level::Error,
            ),
            (
                |m| m.metadata.name.clear(),
                "metadata.name must not be empty",
                Level::Error,
            ),
            (
                |m| m.metadata.name = "Acme_DB".into(),
                "metadata.name `Acme_DB` must be lowercase",
                Level::Error,
            ),
            (
                |m| m.spec.version.clear(),
                "spec.version must not be empty",
                Level::Error,
            ),
            (
                |m| m.spec.version = "1.1".into(),
                "spec.version `1.1` is not semver",
                Level::Error,
            ),
            (
                |m| m.kind = "Package".into(),
                "kind must be OperatorPackage",
                Level::Error,
            ),
            (
                |m| m.api_version = "v1".into(),
                "apiVersion must be packages.windlass.dev/v1alpha1",
                Level::Error,
            ),
            (
                |m| m.spec.bundle = "quay.io/Acme/b:1".into(),
                "spec.bundle: `quay.io/Acme/b:1` is not an image reference",
                Level::Error,
            ),
            (
                |m| m.spec.bundle = "quay.io/acme/b:1".into(),
                "spec.bundle `quay.io/acme/b:1` is not pinned by digest",
                Level::Warning,
            ),
            (
                |m| m.spec.chart = "quay.io/acme/chart:1".into(),
                "spec.bundle and spec.chart are both set",
                Level::Error,
            ),
            (
                |m| m.spec.version = "v1.1.0".into(),
                "spec.version `v1.1.0` is not semver",
                Level::Error,
            ),
            (
                |m| m.spec.display_name.clear(),
                "spec.displayName is empty",
                Level::Warning,
            ),
            (
                |m| m.spec.architectures.clear(),
                "spec.architectures must list at least one",
                Level::Error,
            ),
            (
                |m| m.spec.architectures = vec!["x86_64".into()],
                "spec.architectures[0] `x86_64` is not an architecture",
                Level::Error,
            ),
            (
                |m| m.spec.architectures = vec!["amd64".into(), "amd64".into()],
                "spec.architectures[1] `amd64` is listed twice",
                Level::Error,
            ),
            (
                |m| m.spec.related_images[0].image.clear(),
                "spec.relatedImages[0].image must not be empty",
                Level::Error,
            ),
            (
                |m| m.spec.related_images[0].image = m.spec.bundle.clone(),
                "spec.relatedImages[0].image is the bundle image",
                Level::Warning,
            ),
            (
                |m| m.spec.related_images.push(m.spec.related_images[0].clone()),
                "spec.relatedImages[1].image `quay.io/acme/db-operator@",
                Level::Warning,
            ),
            (
                |m| m.spec.keywords = vec![" ".into()],
                "spec.keywords[0] must not be empty",
                Level::Error,
            ),
            (
                |m| {
                    m.spec.links = vec![Link {
                        name: String::new(),
                        url: "ftp://x".into(),
                    }]
                },
                "spec.links[0].name must not be empty",
                Level::Error,
            ),
            (
                |m| {
                    m.spec.links = vec![Link {
                        name: "x".into(),
                        url: "ftp://x".into(),
                    }]
                },
                "spec.links[0].url `ftp://x` must be an http(s) URL",
                Level::Error,
            ),
            (
                |m| m.spec.icon = "../icon.svg".into(),
                "spec.icon `../icon.svg` must be a file name",
                Level::Error,
            ),
            (
                |m| m.spec.icon = "icon.svg".into(),
                "spec.icon `icon.svg` does not exist",
                Level::Error,
            ),
        ];
        for (edit, expected, level) in cases {
            let mut manifest = good();
            edit(&mut manifest);
            let report = lint_manifest(&manifest, None);
            let found = report
                .findings
                .iter()
                .find(|f| f.message.starts_with(expected));
            assert!(found.is_some(), "{expected}: {:#?}", messages(&report));
            assert_eq!(found.unwrap().level, level, "{expected}");
            assert!(
                found.unwrap().message.starts_with(&found.unwrap().field),
                "the message starts with its field: {:?}",
                found.unwrap()
            );
        }
    }

    #[test]
    fn the_icon_must_exist_and_be_small() {
        let mut manifest = good();
        manifest.spec.icon = "icon.svg".into();
        assert_eq!(lint_manifest(&manifest, Some(120)).findings, []);
        let big = lint_manifest(&manifest, Some(MAX_ICON_BYTES + 1));
        assert!(
            messages(&big)[0].contains("more than"),
            "{:?}",
            messages(&big)
        );
        assert_eq!(icon_media_type("Logo.PNG"), Some("image/png"));
        assert_eq!(icon_media_type("dir/logo.png"), None);
    }

    #[test]
    fn the_manifest_must_carry_every_image_the_bundle_runs() {
        let csv: windlass_bundle::csv::ClusterServiceVersion = serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": "acme-db.v1.2.0"},
            "spec": {
                "version": "1.2.0",
                "install": {"strategy": "deployment", "spec": {"deployments": [{
                    "name": "acme-db-operator",
                    "spec": {"template": {"spec": {"containers": [{
                        "name": "manager",
                        "image": format!("quay.io/acme/db-operator@{DIGEST}"),
                        "env": [{"name": "RELATED_IMAGE_DB", "value": format!("quay.io/acme/db@{DIGEST}")}],
                    }]}}},
                }]}},
            },
        }))
        .unwrap();
        let report = lint_against_bundle(&good(), &csv);
        let found = messages(&report);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].contains(&format!("does not list quay.io/acme/db@{DIGEST}, which Deployment acme-db-operator container manager names in RELATED_IMAGE_DB")), "{found:#?}");
        assert!(
            found[1].contains("spec.version 1.1.0 differs from the bundle's CSV acme-db.v1.2.0"),
            "{found:#?}"
        );
    }
}
