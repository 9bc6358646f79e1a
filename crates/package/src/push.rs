//! Where a package's images go in a site's registry, and the mirror rules that send the
//! references bundles use there.
//!
//! `--dst-repo HOST[/PREFIX]` keeps each image's repository path and replaces its registry:
//! `quay.io/acme/db@sha256:...` goes to `HOST/PREFIX/acme/db@sha256:...`, tag and digest
//! unchanged. One rule per source repository then rewrites exactly the images the package
//! carries, and nothing else of that registry.

use std::collections::BTreeMap;

use windlass_mirror::{ImageReference, ReferenceError, RepositoryPrefix};

/// Why images cannot be pushed where asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DestinationError {
    #[error("--dst-repo {0}")]
    BadDestination(ReferenceError),
    #[error("image {image}: {error}")]
    BadImage {
        image: String,
        error: ReferenceError,
    },
    #[error(
        "{first} and {second} would both be pushed to {destination}: they differ only in their registry; push them with different --dst-repo prefixes"
    )]
    Collision {
        first: String,
        second: String,
        destination: String,
    },
}

/// One image and where it is pushed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Destination {
    /// As the package names it.
    pub source: ImageReference,
    /// Same path (below the prefix), tag and digest, in the site's registry.
    pub target: ImageReference,
}

/// Where each of `images` goes under `dst` (`HOST[/PREFIX]`). Two repositories that would
/// land in one place are refused before anything is pushed.
pub fn destinations(dst: &str, images: &[&str]) -> Result<Vec<Destination>, DestinationError> {
    let prefix = RepositoryPrefix::parse(dst).map_err(DestinationError::BadDestination)?;
    let mut out: Vec<Destination> = Vec::new();
    let mut by_target: BTreeMap<String, String> = BTreeMap::new();
    for image in images {
        let source = ImageReference::parse(image).map_err(|error| DestinationError::BadImage {
            image: image.to_string(),
            error,
        })?;
        let target_name = format!("{}/{}", prefix.as_str(), source.path);
        let target_prefix =
            RepositoryPrefix::parse(&target_name).map_err(|error| DestinationError::BadImage {
                image: image.to_string(),
                error,
            })?;
        let target = source.with_name(&target_prefix);
        if let Some(first) = by_target.get(&target_name)
            && *first != source.name()
        {
            return Err(DestinationError::Collision {
                first: first.clone(),
                second: source.name(),
                destination: target_name,
            });
        }
        by_target.insert(target_name, source.name());
        out.push(Destination { source, target });
    }
    Ok(out)
}

/// One mirror rule per source repository: `(source, mirror)`, sorted.
pub fn mirror_rules(destinations: &[Destination]) -> Vec<(String, String)> {
    let mut rules: Vec<(String, String)> = destinations
        .iter()
        .map(|d| (d.source.name(), d.target.name()))
        .collect();
    rules.sort();
    rules.dedup();
    rules
}

#[cfg(test)]
mod tests {
    use windlass_mirror::{MirrorRule, MirrorRules};

    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn images_keep_their_path_tag_and_digest_under_the_destination() {
        let images = [
            format!("quay.io/acme/db-bundle@{DIGEST}"),
            "quay.io/acme/db:1.1.0".to_string(),
            "nginx:1.27".to_string(),
        ];
        let refs: Vec<&str> = images.iter().map(String::as_str).collect();
        let placed = destinations("10.0.0.5:5000/airgap", &refs).unwrap();
        let targets: Vec<String> = placed.iter().map(|d| d.target.to_string()).collect();
        assert_eq!(
            targets,
            [
                format!("10.0.0.5:5000/airgap/acme/db-bundle@{DIGEST}"),
                "10.0.0.5:5000/airgap/acme/db:1.1.0".to_string(),
                "10.0.0.5:5000/airgap/library/nginx:1.27".to_string(),
            ]
        );
    }

    #[test]
    fn two_registries_with_one_path_are_refused() {
        let error = destinations("site.example", &["quay.io/acme/db:1", "ghcr.io/acme/db:1"])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(
                "quay.io/acme/db and ghcr.io/acme/db would both be pushed to site.example/acme/db"
            ),
            "{error}"
        );
        assert!(destinations("nope", &["quay.io/a:1"]).is_err());
    }

    proptest::proptest! {
        /// The printed rules send every image the package carries to where it was pushed.
        #[test]
        fn the_printed_rules_lead_to_the_pushed_images(
            paths in proptest::collection::btree_set("[a-z]{1,6}(/[a-z0-9]{1,6}){0,2}", 1..6),
            pinned in proptest::bool::ANY,
        ) {
            let images: Vec<String> = paths
                .iter()
                .map(|p| if pinned { format!("quay.io/{p}@{DIGEST}") } else { format!("quay.io/{p}:v1") })
                .collect();
            let refs: Vec<&str> = images.iter().map(String::as_str).collect();
            let placed = destinations("127.0.0.1:5001/site", &refs).unwrap();
            let (rules, problems) = MirrorRules::new(mirror_rules(&placed).into_iter().enumerate().map(
                |(index, (source, mirror))| MirrorRule {
                    set: "package".into(),
                    index,
                    source,
                    mirrors: vec![mirror],
                    never_contact_source: true,
                },
            ));
            proptest::prop_assert!(problems.is_empty(), "{:?}", problems);
            for destination in &placed {
                let rewritten = rules.rewrite(&destination.source.to_string()).unwrap();
                proptest::prop_assert_eq!(rewritten.mirror, destination.target.to_string());
            }
        }
    }
}
