//! Reading an image through the site's mirrors: each place an ImageMirrorSet sends the
//! reference to is tried in turn, then the reference itself unless a rule forbids it.

use std::future::Future;

use windlass_mirror::MirrorRules;
use windlass_oci::OciError;

/// Where an image was read from when a mirror rule sent the read elsewhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mirrored {
    /// The reference read (the mirror's name for the image).
    pub reference: String,
    /// The ImageMirrorSet whose rule sent it there.
    pub mirror_set: String,
}

/// Calls `attempt` with each place `reference` may be read from, in order; the first success
/// wins, with the mirror it came from (`None`: the reference itself). When every place fails,
/// the error names each; with no rule covering the reference it is that one read's error.
pub async fn first_reachable<T, F, Fut>(
    rules: &MirrorRules,
    reference: &str,
    mut attempt: F,
) -> Result<(T, Option<Mirrored>), OciError>
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<T, OciError>>,
{
    let candidates = rules.candidates(reference);
    let mut errors: Vec<(String, OciError)> = Vec::new();
    for candidate in &candidates {
        match attempt(candidate.reference.clone()).await {
            Ok(value) => {
                let mirrored = candidate.mirror_set.clone().map(|mirror_set| Mirrored {
                    reference: candidate.reference.clone(),
                    mirror_set,
                });
                if !errors.is_empty() {
                    tracing::info!(
                        image = reference,
                        from = %candidate.reference,
                        skipped = errors.len(),
                        "read from a later mirror"
                    );
                }
                return Ok((value, mirrored));
            }
            Err(error) => errors.push((candidate.reference.clone(), error)),
        }
    }
    if candidates.len() == 1
        && candidates[0].mirror_set.is_none()
        && let Some((_, error)) = errors.pop()
    {
        return Err(error);
    }
    Err(OciError::Mirrors {
        reference: reference.to_string(),
        attempts: errors
            .into_iter()
            .map(|(place, error)| {
                let error = error.to_string();
                // Most errors start with the reference they are about; say it once.
                let shown = error
                    .strip_prefix(&format!("{place}: "))
                    .unwrap_or(&error)
                    .to_string();
                format!("{place}: {shown}")
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use windlass_mirror::MirrorRule;

    use super::*;

    fn rules(never_source: bool) -> MirrorRules {
        MirrorRules::new([MirrorRule {
            set: "site".into(),
            index: 0,
            source: "quay.io/acme".into(),
            mirrors: vec!["m1.site/acme".into(), "m2.site/acme".into()],
            never_contact_source: never_source,
        }])
        .0
    }

    fn not_found(reference: &str) -> OciError {
        OciError::NotFound {
            reference: reference.into(),
        }
    }

    #[tokio::test]
    async fn the_first_place_that_answers_wins_and_is_named() {
        let mut tried = Vec::new();
        let (value, from) = first_reachable(&rules(false), "quay.io/acme/db:1", |place| {
            tried.push(place.clone());
            async move {
                if place.starts_with("m2.site") {
                    Ok(place)
                } else {
                    Err(not_found(&place))
                }
            }
        })
        .await
        .unwrap();
        assert_eq!(value, "m2.site/acme/db:1");
        assert_eq!(tried, ["m1.site/acme/db:1", "m2.site/acme/db:1"]);
        assert_eq!(from.unwrap().mirror_set, "site");
    }

    #[tokio::test]
    async fn when_nothing_answers_each_place_is_named() {
        let error = first_reachable(&rules(true), "quay.io/acme/db:1", |place| async move {
            Err::<(), _>(not_found(&place))
        })
        .await
        .unwrap_err()
        .to_string();
        assert_eq!(
            error,
            "quay.io/acme/db:1: no mirror could serve it: m1.site/acme/db:1: not found in the registry; m2.site/acme/db:1: not found in the registry"
        );
        // No rule: the read's own error, as without mirrors.
        let error = first_reachable(&rules(true), "ghcr.io/x:1", |place| async move {
            Err::<(), _>(not_found(&place))
        })
        .await
        .unwrap_err();
        assert!(matches!(error, OciError::NotFound { .. }));
        let (_, from) = first_reachable(&rules(false), "ghcr.io/x:1", |_| async { Ok(()) })
            .await
            .unwrap();
        assert_eq!(from, None);
    }
}
