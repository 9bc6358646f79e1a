//! Checks of one bundle on its own: CSV fields, versions, names, images, dependencies,
//! provider metadata and owned CRDs.

use std::collections::BTreeSet;

use serde_json::Value;
use windlass_bundle::metadata::Dependency;
use windlass_bundle::{Bundle, LoadNote};

use super::{Level, Report};
use crate::provider::{Provider, ProviderType, annotations as provider_annotations};
use crate::range::VersionRange;

const INSTALL_MODES: [&str; 4] = [
    "OwnNamespace",
    "SingleNamespace",
    "MultiNamespace",
    "AllNamespaces",
];

/// Lints one loaded bundle.
pub fn lint_bundle(bundle: &Bundle) -> Report {
    let mut report = Report::default();
    let csv_file = bundle.path_of(&bundle.csv_file).display().to_string();
    notes(bundle, &mut report);
    required_fields(bundle, &csv_file, &mut report);
    versions(bundle, &csv_file, &mut report);
    images(bundle, &csv_file, &mut report);
    dependencies(bundle, &mut report);
    constraints(bundle, &mut report);
    provider(bundle, &csv_file, &mut report);
    owned_crds(bundle, &csv_file, &mut report);
    report.sort();
    report
}

fn notes(bundle: &Bundle, report: &mut Report) {
    for note in &bundle.notes {
        match note {
            LoadNote::DuplicateKey(e) => report.push(
                Level::Warning,
                "duplicate-key",
                format!(
                    "{}{}",
                    bundle.path_of(&e.file).display(),
                    e.line.map(|l| format!(":{l}")).unwrap_or_default()
                ),
                None,
                format!("{}; the last value is used", e.message),
            ),
            LoadNote::IgnoredFile(file) => report.push(
                Level::Info,
                "ignored-file",
                bundle.path_of(file).display().to_string(),
                None,
                "not YAML or JSON; not part of the bundle",
            ),
            LoadNote::MissingApiVersion {
                file,
                document,
                kind,
                api_version,
            } => report.push(
                Level::Warning,
                "manifest-api-version",
                bundle.path_of(file).display().to_string(),
                Some("apiVersion"),
                format!(
                    "document {document}: {kind} has no apiVersion; windlass applies it as {api_version}, the only version of {kind}"
                ),
            ),
        }
    }
}

fn required_fields(bundle: &Bundle, file: &str, report: &mut Report) {
    let csv = &bundle.csv;
    let mut missing = |field: &str, why: &str| {
        report.push(
            Level::Error,
            "csv-required-field",
            file,
            Some(field),
            why.to_string(),
        )
    };
    if csv.api_version != "operators.coreos.com/v1alpha1" {
        missing(
            "apiVersion",
            &format!(
                "must be operators.coreos.com/v1alpha1, found {:?}",
                csv.api_version
            ),
        );
    }
    if csv.metadata.name.trim().is_empty() {
        missing("metadata.name", "is missing");
    }
    if csv.spec.version.is_none() {
        missing("spec.version", "is missing");
    }
    match &csv.spec.install {
        None => missing(
            "spec.install",
            "is missing: nothing says how to run the operator",
        ),
        Some(install) => {
            if install.strategy != "deployment" {
                missing(
                    "spec.install.strategy",
                    &format!("must be `deployment`, found {:?}", install.strategy),
                );
            }
            match &install.spec {
                None => missing("spec.install.spec", "is missing"),
                Some(spec) if spec.deployments.is_empty() => {
                    missing("spec.install.spec.deployments", "lists no deployment")
                }
                Some(spec) => {
                    for (i, d) in spec.deployments.iter().enumerate() {
                        if d.name.trim().is_empty() {
                            missing(
                                &format!("spec.install.spec.deployments[{i}].name"),
                                "is missing",
                            );
                        }
                        if !d.spec.is_object() {
                            missing(
                                &format!("spec.install.spec.deployments[{i}].spec"),
                                "must be a Deployment spec mapping",
                            );
                        }
                    }
                    for (list, name) in [
                        (&spec.permissions, "permissions"),
                        (&spec.cluster_permissions, "clusterPermissions"),
                    ] {
                        for (i, p) in list.iter().enumerate() {
                            if p.service_account_name.trim().is_empty() {
                                // Kubernetes decoding is case-sensitive: a key spelled differently is dropped.
                                let why = match p
                                    .extra
                                    .keys()
                                    .find(|k| k.eq_ignore_ascii_case("serviceAccountName"))
                                {
                                    Some(k) => format!(
                                        "is missing (written as `{k}`; field names are case-sensitive)"
                                    ),
                                    None => "is missing".to_string(),
                                };
                                missing(
                                    &format!("spec.install.spec.{name}[{i}].serviceAccountName"),
                                    &why,
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    if csv.spec.install_modes.is_empty() {
        missing(
            "spec.installModes",
            "is missing: no namespace the operator can watch is declared",
        );
    }
    for (i, mode) in csv.spec.install_modes.iter().enumerate() {
        if !INSTALL_MODES.contains(&mode.type_.as_str()) {
            missing(
                &format!("spec.installModes[{i}].type"),
                &format!(
                    "{:?} is not one of {}",
                    mode.type_,
                    INSTALL_MODES.join(", ")
                ),
            );
        }
    }
    if !csv.spec.install_modes.is_empty() && !csv.spec.install_modes.iter().any(|m| m.supported) {
        report.push(
            Level::Error,
            "csv-required-field",
            file,
            Some("spec.installModes"),
            "no install mode is supported",
        );
    }
    for (field, value) in [
        ("spec.displayName", &csv.spec.display_name),
        ("spec.description", &csv.spec.description),
    ] {
        if value.as_deref().is_none_or(|v| v.trim().is_empty()) {
            report.push(
                Level::Warning,
                "csv-recommended-field",
                file,
                Some(field),
                "is missing: catalogs show it to users",
            );
        }
    }
}

fn versions(bundle: &Bundle, file: &str, report: &mut Report) {
    let csv = &bundle.csv;
    let version = match csv.version() {
        Ok(v) => Some(v),
        Err(e) => {
            if csv.spec.version.is_some() {
                report.push(
                    Level::Error,
                    "version-semver",
                    file,
                    Some(&e.field),
                    e.message,
                );
            }
            None
        }
    };
    if let Some(v) = &version {
        let name = csv.name();
        let plain = v.to_string();
        if !(name.ends_with(&format!(".v{plain}")) || name.ends_with(&format!(".{plain}"))) {
            report.push(
                Level::Warning,
                "csv-name",
                file,
                Some("metadata.name"),
                format!("{name:?} does not follow `<package>.v{plain}`"),
            );
        }
    }
    if csv.spec.replaces.as_deref() == Some(csv.name()) {
        report.push(
            Level::Error,
            "replaces-self",
            file,
            Some("spec.replaces"),
            "a bundle cannot replace itself",
        );
    }
    if csv.spec.skips.iter().any(|s| s == csv.name()) {
        report.push(
            Level::Error,
            "replaces-self",
            file,
            Some("spec.skips"),
            "a bundle cannot skip itself",
        );
    }
    if let Some(range) = csv.skip_range()
        && let Err(e) = VersionRange::parse(range)
    {
        report.push(
            Level::Error,
            "skip-range",
            file,
            Some("metadata.annotations[olm.skipRange]"),
            format!("{range:?} is not a version range: {e}"),
        );
    }
    if let Some(min) = &csv.spec.min_kube_version {
        let trimmed = min.trim().trim_start_matches('v');
        if !trimmed.is_empty() && semver::Version::parse(trimmed).is_err() {
            report.push(
                Level::Error,
                "version-semver",
                file,
                Some("spec.minKubeVersion"),
                format!("{min:?} is not a semantic version"),
            );
        }
    }
}

fn images(bundle: &Bundle, file: &str, report: &mut Report) {
    let related: BTreeSet<&str> = bundle
        .csv
        .spec
        .related_images
        .iter()
        .map(|r| r.image.as_str())
        .collect();
    for (i, related_image) in bundle.csv.spec.related_images.iter().enumerate() {
        if related_image.image.trim().is_empty() {
            report.push(
                Level::Error,
                "related-images",
                file,
                Some(&format!("spec.relatedImages[{i}].image")),
                "is empty",
            );
        }
    }
    for (i, deployment) in bundle.csv.deployments().iter().enumerate() {
        for image in deployment.images() {
            if !related.contains(image) {
                report.push(
                    Level::Warning,
                    "related-images",
                    file,
                    Some(&format!("spec.install.spec.deployments[{i}]")),
                    format!("image {image} of deployment {} is not listed in spec.relatedImages (mirroring tools will miss it)", deployment.name),
                );
            }
        }
    }
}

/// Constraints that cannot be read or compiled, in `dependencies.yaml` or `properties.yaml`.
fn constraints(bundle: &Bundle, report: &mut Report) {
    for unusable in crate::constraint::unusable_in_bundle(bundle) {
        report.push(
            Level::Error,
            "constraint",
            bundle.path_of(unusable.file).display().to_string(),
            Some(&unusable.field),
            format!(
                "unusable olm.constraint: {}; resolution never chooses this bundle",
                unusable.error.problem
            ),
        );
    }
}

fn dependencies(bundle: &Bundle, report: &mut Report) {
    let file = bundle
        .path_of("metadata/dependencies.yaml")
        .display()
        .to_string();
    for (i, dependency) in bundle.dependencies.iter().enumerate() {
        let field = format!("dependencies[{i}]");
        match dependency {
            Dependency::Package {
                package_name,
                version,
            } => {
                if package_name.trim().is_empty() {
                    report.push(
                        Level::Error,
                        "dependency",
                        &file,
                        Some(&field),
                        "olm.package dependency has no packageName",
                    );
                }
                if let Err(e) = VersionRange::parse(version) {
                    report.push(
                        Level::Error,
                        "dependency",
                        &file,
                        Some(&field),
                        format!("version range {version:?} of {package_name} does not parse: {e}"),
                    );
                }
            }
            Dependency::Gvk {
                group,
                version,
                kind,
            } => {
                if version.is_empty() || kind.is_empty() {
                    report.push(
                        Level::Error,
                        "dependency",
                        &file,
                        Some(&field),
                        format!("olm.gvk dependency {group}/{version}/{kind} is incomplete"),
                    );
                }
            }
            Dependency::Other { type_, value } => {
                if type_ == crate::constraint::CONSTRAINT_TYPE
                    && crate::constraint::Constraint::parse(value).is_ok()
                    && !value.get("failureMessage").is_some_and(Value::is_string)
                {
                    report.push(
                        Level::Warning,
                        "dependency",
                        &file,
                        Some(&field),
                        "olm.constraint has no failureMessage: users will not learn why it failed",
                    );
                }
            }
        }
    }
}

/// How a catalog UI will present the bundle's provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderDisplay {
    pub name: Option<String>,
    /// One of custom | community | certified | platform (anything else is shown as custom).
    pub provider_type: String,
    pub url: Option<String>,
}

/// The provider as shown: the `provider`/`provider-type`/`provider-url` annotations, falling
/// back to `spec.provider`. An i18n JSON name (`{"en": ..., "zh": ...}`) shows its English text.
pub fn provider_display(bundle: &Bundle) -> ProviderDisplay {
    let shown = Provider::from_csv(&bundle.csv);
    ProviderDisplay {
        name: shown.name,
        provider_type: shown.type_.to_string(),
        url: shown.url,
    }
}

fn provider(bundle: &Bundle, file: &str, report: &mut Report) {
    let shown = provider_display(bundle);
    if let Some(raw) = bundle
        .csv
        .metadata
        .annotations
        .get(provider_annotations::PROVIDER_TYPE)
        && ProviderType::parse(raw).is_none()
    {
        report.push(
            Level::Warning,
            "provider",
            file,
            Some("metadata.annotations[provider-type]"),
            format!(
                "{raw:?} is not one of {}; it will be shown as custom",
                ProviderType::ALL.map(ProviderType::as_str).join(", ")
            ),
        );
    }
    if shown.name.is_none() {
        report.push(
            Level::Warning,
            "provider",
            file,
            Some("spec.provider.name"),
            "no provider name (annotation `provider` or spec.provider.name)",
        );
    }
    report.push(
        Level::Info,
        "provider",
        file,
        None,
        format!(
            "shown as provider {:?}, type {}, url {}",
            shown.name.as_deref().unwrap_or("(none)"),
            shown.provider_type,
            shown.url.as_deref().unwrap_or("(none)")
        ),
    );
}

/// Versions a CRD object declares and whether each has a schema (v1 and v1beta1 shapes).
fn crd_versions(crd: &Value) -> Vec<(String, bool)> {
    let spec = &crd["spec"];
    let shared_schema = spec["validation"]["openAPIV3Schema"].is_object();
    let mut out: Vec<(String, bool)> = spec["versions"]
        .as_array()
        .map(|vs| {
            vs.iter()
                .filter_map(|v| {
                    Some((
                        v["name"].as_str()?.to_string(),
                        shared_schema || v["schema"]["openAPIV3Schema"].is_object(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    if let Some(v) = spec["version"].as_str()
        && !out.iter().any(|(n, _)| n == v)
    {
        out.push((v.to_string(), shared_schema));
    }
    out
}

fn owned_crds(bundle: &Bundle, file: &str, report: &mut Report) {
    for (i, owned) in bundle.csv.owned_crds().iter().enumerate() {
        let field = format!("spec.customresourcedefinitions.owned[{i}]");
        let Some(manifest) = bundle
            .objects_of_kind("CustomResourceDefinition")
            .find(|m| m.name() == owned.name)
        else {
            report.push(
                Level::Error,
                "owned-crd",
                file,
                Some(&field),
                format!(
                    "owned CRD {} has no CustomResourceDefinition file in the bundle",
                    owned.name
                ),
            );
            continue;
        };
        let crd_file = bundle.path_of(&manifest.file).display().to_string();
        let versions = crd_versions(&manifest.object);
        match versions.iter().find(|(name, _)| name == &owned.version) {
            None => report.push(
                Level::Error,
                "owned-crd",
                file,
                Some(&field),
                format!("owned CRD {} version {} is not a version of {crd_file} ({})", owned.name, owned.version, versions.iter().map(|v| v.0.as_str()).collect::<Vec<_>>().join(", ")),
            ),
            Some((_, false)) => report.push(
                Level::Warning,
                "crd-schema",
                crd_file,
                Some("spec.versions[].schema.openAPIV3Schema"),
                format!("version {} of {} has no schema: the API server cannot validate or prune its objects", owned.version, owned.name),
            ),
            Some(_) => {}
        }
    }
}

#[cfg(test)]
#[path = "bundle/tests.rs"]
mod tests;
