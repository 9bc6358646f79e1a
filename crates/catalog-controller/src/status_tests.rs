use std::collections::BTreeMap;
use windlass_api::names::{conditions, reasons};

use windlass_catalog::{Catalog, Package};
use windlass_oci::RegistryOptions;

use super::*;

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).unwrap()
}

fn served(digest: &str, packages: usize) -> ServedCatalog {
    ServedCatalog {
        name: "cat".into(),
        priority: 0,
        digest: digest.into(),
        catalog: std::sync::Arc::new(Catalog {
            packages: (0..packages)
                .map(|i| (format!("p{i}"), Package::default()))
                .collect(),
        }),
        bundles: Default::default(),
        registry: RegistryOptions::default(),
        credentials: BTreeMap::new(),
        verification: None,
        listing: Default::default(),
        pulled_from: None,
    }
}

fn pull_failed(message: &str) -> Failure {
    Failure {
        reason: "PullFailed",
        message: message.into(),
        metric_label: "pull",
    }
}

fn observe<'a>(
    served: Option<&'a ServedCatalog>,
    failure: Option<&'a Failure>,
    seconds: i64,
) -> Observation<'a> {
    Observation {
        generation: Some(1),
        failure,
        served,
        without_image: &[],
        source: "image r/c:1",
        polled_at: at(seconds),
        delisting_problems: &[],
    }
}

fn serving_condition(status: &CatalogStatus) -> &Condition {
    windlass_api::condition::find(&status.conditions, conditions::catalog::SERVING).unwrap()
}

#[test]
fn the_first_good_read_says_serving_with_digest_and_packages() {
    let content = served("sha256:1", 3);
    let update = next(None, &observe(Some(&content), None, 10)).unwrap();
    let status = &update.status;
    assert_eq!(status.phase, Some(CatalogPhase::Serving));
    assert_eq!(status.resolved_digest.as_deref(), Some("sha256:1"));
    assert_eq!(status.packages, Some(3));
    assert_eq!(status.observed_generation, Some(1));
    assert_eq!(status.last_successful_poll_time, Some(Time(at(10))));
    let condition = serving_condition(status);
    assert_eq!(condition.status, ConditionStatus::True);
    assert_eq!(condition.reason, reasons::catalog::CONTENT_SERVED);
    assert_eq!(condition.observed_generation, Some(1));
    assert!(
        condition.message.contains("image r/c:1"),
        "{}",
        condition.message
    );
    assert!(matches!(
        update.transition,
        Some(Transition::Serving { .. })
    ));
}

#[test]
fn an_unchanged_poll_writes_nothing_not_even_a_timestamp() {
    let content = served("sha256:1", 3);
    let first = next(None, &observe(Some(&content), None, 10))
        .unwrap()
        .status;
    assert_eq!(
        next(Some(&first), &observe(Some(&content), None, 610)),
        None
    );
    assert_eq!(
        next(Some(&first), &observe(Some(&content), None, 1210)),
        None
    );
}

#[test]
fn new_content_moves_the_digest_and_the_poll_time_and_is_an_event() {
    let old = served("sha256:1", 3);
    let first = next(None, &observe(Some(&old), None, 10)).unwrap().status;
    let new = served("sha256:2", 4);
    let update = next(Some(&first), &observe(Some(&new), None, 610)).unwrap();
    assert_eq!(update.status.resolved_digest.as_deref(), Some("sha256:2"));
    assert_eq!(update.status.packages, Some(4));
    assert_eq!(update.status.last_successful_poll_time, Some(Time(at(610))));
    // Still True: the transition time stays where Serving began.
    assert_eq!(
        serving_condition(&update.status).last_transition_time,
        Some(Time(at(10)))
    );
    assert!(matches!(
        update.transition,
        Some(Transition::ContentChanged { .. })
    ));
}

#[test]
fn a_failed_poll_reports_the_error_and_keeps_the_last_good_content() {
    let content = served("sha256:1", 3);
    let good = next(None, &observe(Some(&content), None, 10))
        .unwrap()
        .status;
    let failure = pull_failed("pulling 127.0.0.1:1/c:1: registry 127.0.0.1:1 cannot be reached");
    let update = next(Some(&good), &observe(Some(&content), Some(&failure), 610)).unwrap();
    let status = &update.status;
    assert_eq!(status.phase, Some(CatalogPhase::Unreachable));
    assert_eq!(status.resolved_digest.as_deref(), Some("sha256:1"));
    assert_eq!(status.packages, Some(3));
    assert_eq!(status.last_successful_poll_time, Some(Time(at(10))));
    assert_eq!(status.last_poll_time, Some(Time(at(610))));
    let condition = serving_condition(status);
    assert_eq!(condition.status, ConditionStatus::False);
    assert_eq!(condition.reason, "PullFailed");
    assert!(condition.message.contains("127.0.0.1:1/c:1"));
    assert!(
        condition.message.contains("still serving"),
        "{}",
        condition.message
    );
    assert!(matches!(
        update.transition,
        Some(Transition::Unreachable {
            reason: "PullFailed",
            ..
        })
    ));

    // The same failure again: nothing to write, no second event.
    assert_eq!(
        next(Some(status), &observe(Some(&content), Some(&failure), 1210)),
        None
    );
    // Recovering is a transition back to Serving.
    let recovered = next(Some(status), &observe(Some(&content), None, 1810)).unwrap();
    assert_eq!(recovered.status.phase, Some(CatalogPhase::Serving));
    assert_eq!(
        recovered.status.last_successful_poll_time,
        Some(Time(at(1810)))
    );
    assert!(matches!(
        recovered.transition,
        Some(Transition::Serving { .. })
    ));
}

#[test]
fn a_first_read_that_fails_serves_nothing() {
    let failure = Failure {
        reason: "InvalidContent",
        message: "r/c:1 is not a usable catalog: no packages".into(),
        metric_label: "invalid_content",
    };
    let update = next(None, &observe(None, Some(&failure), 10)).unwrap();
    assert_eq!(update.status.phase, Some(CatalogPhase::Unreachable));
    assert_eq!(update.status.resolved_digest, None);
    assert_eq!(update.status.packages, None);
    assert_eq!(update.status.last_successful_poll_time, None);
    assert!(
        serving_condition(&update.status)
            .message
            .contains("nothing is served")
    );
}

#[test]
fn a_new_generation_is_recorded_even_when_the_content_is_the_same() {
    let content = served("sha256:1", 3);
    let first = next(None, &observe(Some(&content), None, 10))
        .unwrap()
        .status;
    let mut observation = observe(Some(&content), None, 20);
    observation.generation = Some(2);
    let update = next(Some(&first), &observation).unwrap();
    assert_eq!(update.status.observed_generation, Some(2));
    assert_eq!(
        serving_condition(&update.status).observed_generation,
        Some(2)
    );
    assert_eq!(
        update.transition, None,
        "no event: nothing a person must see"
    );
}

#[test]
fn bundles_without_images_are_named() {
    let content = served("sha256:1", 1);
    let missing = vec!["a.v1".to_string()];
    let mut observation = observe(Some(&content), None, 10);
    observation.without_image = &missing;
    let update = next(None, &observation).unwrap();
    assert!(
        serving_condition(&update.status)
            .message
            .contains("no image and cannot be installed: a.v1")
    );
}

#[test]
fn content_read_from_a_mirror_says_which() {
    let mut content = served("sha256:1", 1);
    content.pulled_from = Some(windlass_catalog_store::Mirrored {
        reference: "registry.site/acme/catalog:v1".into(),
        mirror_set: "site".into(),
    });
    let update = next(None, &observe(Some(&content), None, 10)).unwrap();
    let message = &serving_condition(&update.status).message;
    assert!(
        message
            .contains("read from the mirror registry.site/acme/catalog:v1 (ImageMirrorSet site)"),
        "{message}"
    );
}

#[test]
fn a_new_catalog_is_pending_until_its_first_read_ends() {
    let pending = pending(None, Some(1), "image r/c:1", at(5)).unwrap();
    assert_eq!(pending.phase, Some(CatalogPhase::Pending));
    let condition = serving_condition(&pending);
    assert_eq!(condition.status, ConditionStatus::Unknown);
    assert_eq!(condition.message, "reading image r/c:1");
    // Once anything was said, a read never goes back to Pending.
    assert_eq!(super::pending(Some(&pending), Some(2), "x", at(6)), None);

    let content = served("sha256:1", 2);
    let update = next(Some(&pending), &observe(Some(&content), None, 10)).unwrap();
    assert_eq!(update.status.phase, Some(CatalogPhase::Serving));
    let condition = serving_condition(&update.status);
    assert_eq!(condition.status, ConditionStatus::True);
    assert_eq!(condition.last_transition_time, Some(Time(at(10))));
    assert!(matches!(
        update.transition,
        Some(Transition::Serving { .. })
    ));
}

fn verified_by(keys: &[&str]) -> windlass_catalog_store::Verification {
    windlass_catalog_store::Verification {
        verified: true,
        covered: true,
        verified_by: keys.iter().map(|k| k.to_string()).collect(),
        summary: format!("signed by {}", keys.join(", ")),
    }
}

fn verified_condition(status: &CatalogStatus) -> Option<&Condition> {
    windlass_api::condition::find(&status.conditions, conditions::catalog::VERIFIED)
}

#[test]
fn verified_content_shows_its_keys_and_an_unchanged_verified_poll_writes_nothing() {
    let mut content = served("sha256:1", 2);
    content.verification = Some(verified_by(&["platform/a", "platform/b"]));
    let first = next(None, &observe(Some(&content), None, 10))
        .unwrap()
        .status;
    assert_eq!(first.verified, Some(true));
    assert_eq!(first.verified_by, ["platform/a", "platform/b"]);
    let condition = verified_condition(&first).expect("a Verified condition");
    assert_eq!(condition.status, ConditionStatus::True);
    assert_eq!(condition.reason, reasons::catalog::VERIFIED);
    assert!(
        condition.message.contains("sha256:1") && condition.message.contains("platform/b"),
        "{}",
        condition.message
    );
    assert!(next(Some(&first), &observe(Some(&content), None, 20)).is_none());
}

#[test]
fn content_no_rule_covers_is_served_saying_it_is_unverified() {
    let mut content = served("sha256:1", 1);
    content.verification = Some(windlass_catalog_store::Verification {
        verified: false,
        covered: false,
        verified_by: vec![],
        summary: "no rule of the trust policy covers Catalog images in r/c".into(),
    });
    let status = next(None, &observe(Some(&content), None, 10))
        .unwrap()
        .status;
    assert_eq!(status.phase, Some(CatalogPhase::Serving));
    assert_eq!(status.verified, Some(false));
    let condition = verified_condition(&status).unwrap();
    assert_eq!(condition.status, ConditionStatus::False);
    assert_eq!(condition.reason, reasons::catalog::NOT_COVERED);
    // Content that is not an image carries no verification and no condition.
    let builtin = served("sha256:2", 1);
    let status = next(Some(&status), &observe(Some(&builtin), None, 20))
        .unwrap()
        .status;
    assert_eq!(status.verified, None);
    assert!(verified_condition(&status).is_none());
}

#[test]
fn a_refused_image_is_phase_refused_naming_what_is_missing_and_what_stays_served() {
    let refused = Failure {
        reason: reasons::catalog::VERIFICATION_FAILED,
        message: "r/c:1 (sha256:2) is refused by the trust policy: rule catalogs: needs keys \
                  platform/a and platform/b; found a valid signature by platform/a only"
            .into(),
        metric_label: "untrusted",
    };
    let update = next(None, &observe(None, Some(&refused), 10)).unwrap();
    assert_eq!(update.status.phase, Some(CatalogPhase::Refused));
    let condition = serving_condition(&update.status);
    assert_eq!(condition.status, ConditionStatus::False);
    assert_eq!(condition.reason, reasons::catalog::VERIFICATION_FAILED);
    assert!(
        condition.message.contains("platform/a only")
            && condition.message.contains("nothing is served"),
        "{}",
        condition.message
    );
    assert!(matches!(
        update.transition,
        Some(Transition::Unreachable {
            reason: reasons::catalog::VERIFICATION_FAILED,
            ..
        })
    ));
    // Refused again: nothing new to say.
    assert!(next(Some(&update.status), &observe(None, Some(&refused), 20)).is_none());
}

fn held_back(package: &str, version: &str, finding: &str) -> windlass_catalog::listing::HeldBack {
    windlass_catalog::listing::HeldBack {
        package: package.into(),
        bundle: format!("{package}.v{version}"),
        version: Some(semver::Version::parse(version).unwrap()),
        source: format!("r/{package}:{version}"),
        findings: vec![finding.into()],
    }
}

fn content_valid(status: &CatalogStatus) -> &Condition {
    windlass_api::condition::find(&status.conditions, conditions::catalog::CONTENT_VALID).unwrap()
}

#[test]
fn held_back_versions_and_problems_are_listed_with_a_condition_and_an_event() {
    let clean = served("sha256:1", 2);
    let first = next(None, &observe(Some(&clean), None, 10)).unwrap().status;
    assert_eq!(content_valid(&first).status, ConditionStatus::True);
    assert_eq!(first.held_back_count, Some(0));
    assert_eq!(listing_notice(None, &first), None);

    let mut failing = served("sha256:2", 2);
    failing.listing.held_back = vec![held_back(
        "demo",
        "1.1.0",
        "error[csv-required-field] r/demo:1.1.0/manifests/csv.yaml (spec.install): is missing",
    )];
    let problems =
        vec!["spec.delisted[package=ghost]: the catalog offers no package ghost".to_string()];
    let mut observation = observe(Some(&failing), None, 20);
    observation.delisting_problems = &problems;
    let second = next(Some(&first), &observation).unwrap().status;
    assert_eq!(second.held_back_count, Some(1));
    assert_eq!(second.held_back[0].version.as_deref(), Some("1.1.0"));
    assert_eq!(second.problems, problems);
    let condition = content_valid(&second);
    assert_eq!(
        (condition.status, condition.reason.as_str()),
        (ConditionStatus::False, reasons::catalog::VERSIONS_HELD_BACK)
    );
    assert!(
        condition.message.starts_with(
            "1 version(s) fail lint and are not offered (demo 1.1.0); 1 other problem(s)"
        ),
        "{}",
        condition.message
    );
    let notice = listing_notice(Some(&first), &second).unwrap();
    assert!(notice.warning);
    assert!(
        notice
            .message
            .contains("demo 1.1.0 from r/demo:1.1.0: error[csv-required-field]"),
        "{}",
        notice.message
    );
    // The same again: no write, no Event.
    assert_eq!(
        next(
            Some(&second),
            &observe(Some(&failing), None, 30).with(&problems)
        ),
        None
    );
    assert_eq!(listing_notice(Some(&second), &second), None);

    // Fixed: everything offered again, said once.
    let third = next(Some(&second), &observe(Some(&clean), None, 40))
        .unwrap()
        .status;
    assert!(third.held_back.is_empty());
    assert_eq!(content_valid(&third).status, ConditionStatus::True);
    assert!(!listing_notice(Some(&second), &third).unwrap().warning);
}

#[test]
fn the_status_lists_a_bounded_number_of_held_back_versions() {
    let mut many = served("sha256:3", 1);
    many.listing.held_back = (0..200)
        .map(|i| held_back("p", &format!("1.0.{i}"), &"x".repeat(2000)))
        .collect();
    let status = next(None, &observe(Some(&many), None, 10)).unwrap().status;
    assert_eq!(status.held_back.len(), 50);
    assert_eq!(status.held_back_count, Some(200));
    assert!(status.held_back[0].findings[0].len() < 600);
    assert!(
        content_valid(&status).message.contains("and 195 more"),
        "{}",
        content_valid(&status).message
    );
}

impl<'a> Observation<'a> {
    fn with(mut self, problems: &'a [String]) -> Observation<'a> {
        self.delisting_problems = problems;
        self
    }
}
