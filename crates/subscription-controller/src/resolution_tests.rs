use std::path::Path;

use super::*;

/// The sample catalog the manager serves as its built-in catalog.
fn sample() -> Catalog {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bundles");
    windlass_catalog::load_catalog(&root).expect("the sample catalog loads")
}

fn origins(catalog: &Catalog) -> BTreeMap<String, String> {
    catalog
        .packages
        .keys()
        .map(|p| (p.clone(), "builtin".to_string()))
        .collect()
}

fn spec(package: &str) -> SubscriptionSpec {
    SubscriptionSpec {
        package: package.into(),
        ..Default::default()
    }
}

fn installed(package: &str, version: &str) -> InstalledPackage {
    InstalledPackage {
        package: package.into(),
        version: Version::parse(version).unwrap(),
        csv_name: format!("{package}.v{version}"),
    }
}

fn run(
    spec: &SubscriptionSpec,
    installed: &[InstalledPackage],
    requesters: &[SubscriptionSpec],
) -> Result<Resolution, ResolutionFailure> {
    let catalog = sample();
    let origins = origins(&catalog);
    resolve(&ResolutionInput {
        subscription: spec,
        catalog: &catalog,
        origins: &origins,
        installed,
        requesters,
    })
}

/// `target <- dep, dep` in CSV names.
fn outline(resolution: &Resolution) -> String {
    let deps: Vec<&str> = resolution
        .dependencies
        .iter()
        .map(|d| d.cluster_service_version_name.as_str())
        .collect();
    format!(
        "{} <- [{}]",
        resolution.target.cluster_service_version_name,
        deps.join(", ")
    )
}

#[test]
fn targets_and_dependencies_follow_the_sample_catalog() {
    let stable = |package: &str| SubscriptionSpec {
        channel: Some("stable".into()),
        ..spec(package)
    };
    let with_policy = |mut s: SubscriptionSpec, policy: UpgradePolicy| {
        s.upgrade_policy = policy;
        s
    };
    let with_range = |mut s: SubscriptionSpec, range: &str| {
        s.version_range = Some(range.into());
        s
    };
    let starting = |mut s: SubscriptionSpec, csv: &str| {
        s.starting_csv = Some(csv.into());
        s
    };
    let cases: Vec<(&str, SubscriptionSpec, Vec<InstalledPackage>, &str)> = vec![
        (
            "nothing installed: the candidate head of acme-db first",
            spec("acme-monitor"),
            vec![],
            "acme-monitor.v0.2.0 <- [acme-db.v1.1.0]",
        ),
        (
            "acme-db 1.0.0 installed (no Subscription moves it): kept, so the older monitor",
            spec("acme-monitor"),
            vec![installed("acme-db", "1.0.0")],
            "acme-monitor.v0.1.0 <- [acme-db.v1.0.0]",
        ),
        (
            "olm on stable from 1.1.0: one edge to 1.1.1",
            stable("acme-db"),
            vec![installed("acme-db", "1.1.0")],
            "acme-db.v1.1.1 <- []",
        ),
        (
            "olm from 1.0.0: the skipRange jumps straight to 1.1.0, the entry closest to the head",
            stable("acme-db"),
            vec![installed("acme-db", "1.0.0")],
            "acme-db.v1.1.0 <- []",
        ),
        (
            "olm at the head: stays",
            stable("acme-db"),
            vec![installed("acme-db", "1.1.1")],
            "acme-db.v1.1.1 <- []",
        ),
        (
            "default channel candidate stops at 1.1.0",
            spec("acme-db"),
            vec![installed("acme-db", "1.0.1")],
            "acme-db.v1.1.0 <- []",
        ),
        (
            "semver goes to the highest version reachable",
            with_policy(stable("acme-db"), UpgradePolicy::Semver),
            vec![installed("acme-db", "1.0.0")],
            "acme-db.v1.1.1 <- []",
        ),
        (
            "a range holds an olm upgrade at the last version it allows",
            with_range(stable("acme-db"), "<1.1.0"),
            vec![installed("acme-db", "1.0.0")],
            "acme-db.v1.0.1 <- []",
        ),
        (
            "any moves down when the range asks for it",
            with_range(with_policy(stable("acme-db"), UpgradePolicy::Any), "1.0.1"),
            vec![installed("acme-db", "1.1.1")],
            "acme-db.v1.0.1 <- []",
        ),
        (
            "startingCSV decides the first install",
            starting(stable("acme-db"), "acme-db.v1.0.0"),
            vec![],
            "acme-db.v1.0.0 <- []",
        ),
        (
            "startingCSV is ignored once something is installed",
            starting(stable("acme-db"), "acme-db.v1.0.0"),
            vec![installed("acme-db", "1.1.0")],
            "acme-db.v1.1.1 <- []",
        ),
    ];
    for (story, spec, installed, want) in cases {
        let got = run(&spec, &installed, &[]).unwrap_or_else(|e| panic!("{story}: {e}"));
        assert_eq!(outline(&got), want, "{story}");
    }
}

#[test]
fn installs_this_catalog_does_not_know_stay_out_of_the_answer() {
    // Installed from another catalog: nothing to say about it here.
    let other = [installed("other-operator", "3.0.0")];
    let got = run(&spec("acme-monitor"), &other, &[]).unwrap();
    assert_eq!(outline(&got), "acme-monitor.v0.2.0 <- [acme-db.v1.1.0]");
    assert!(got.notes.is_empty(), "{:?}", got.notes);
    // A version of this package the catalog no longer lists, with no edge out of it.
    let delisted = [installed("acme-db", "0.9.0")];
    let err = run(&spec("acme-db"), &delisted, &[]).unwrap_err();
    assert!(err.message.contains("installed 0.9.0"), "{err}");
}

#[test]
fn resolved_bundles_name_their_catalog_and_version() {
    let got = run(&spec("acme-monitor"), &[], &[]).unwrap();
    assert_eq!(got.channel, "stable");
    assert_eq!(got.action, Action::Install);
    assert_eq!(
        got.dependencies,
        vec![ResolvedBundle {
            package: "acme-db".into(),
            cluster_service_version_name: "acme-db.v1.1.0".into(),
            version: "1.1.0".into(),
            catalog: Some("builtin".into()),
            image: None,
            digest: None,
        }]
    );
    assert_eq!(got.target.version, "0.2.0");
    let text = summary(&got);
    assert_eq!(
        text,
        "acme-monitor.v0.2.0 0.2.0 from channel stable of catalog builtin; needs acme-db.v1.1.0"
    );
}

#[test]
fn an_upgrade_its_users_reject_waits_with_the_reason() {
    // acme-monitor 0.1.0 is installed and accepts acme-db <2.0.0 only; a catalog whose acme-db
    // head is 2.0.0 must not move acme-db there while acme-monitor depends on it.
    let mut catalog = sample();
    let db = catalog.packages.get_mut("acme-db").unwrap();
    let mut two = db.bundles["acme-db.v1.1.0"].clone();
    two.name = "acme-db.v2.0.0".into();
    two.version = Version::new(2, 0, 0);
    for property in &mut two.properties {
        if let windlass_catalog::Property::Package { version, .. } = property {
            *version = "2.0.0".into();
        }
    }
    db.bundles.insert(two.name.clone(), two);
    let candidate = db.channels.get_mut("candidate").unwrap();
    candidate.entries.push(windlass_catalog::ChannelEntry {
        name: "acme-db.v2.0.0".into(),
        replaces: Some("acme-db.v1.1.0".into()),
        ..Default::default()
    });
    let origins = origins(&catalog);
    let db = spec("acme-db");
    let resolve_with = |installed: &[InstalledPackage], requesters: &[SubscriptionSpec]| {
        resolve(&ResolutionInput {
            subscription: &db,
            catalog: &catalog,
            origins: &origins,
            installed,
            requesters,
        })
        .unwrap()
    };
    let db_only = [installed("acme-db", "1.1.0")];
    let both = [
        installed("acme-db", "1.1.0"),
        installed("acme-monitor", "0.2.0"),
    ];
    // Nobody needs acme-db: it follows its channel.
    assert_eq!(
        outline(&resolve_with(&db_only, &[])),
        "acme-db.v2.0.0 <- []"
    );
    // acme-monitor runs, or is about to be installed and requested acme-db: acme-db stays and
    // says why.
    let requester = [spec("acme-monitor")];
    for (story, installed, requesters) in [
        ("installed user", &both[..], &[][..]),
        ("requester not installed yet", &db_only[..], &requester[..]),
    ] {
        let held = resolve_with(installed, requesters);
        assert_eq!(outline(&held), "acme-db.v1.1.0 <- []", "{story}");
        assert_eq!(held.action, Action::Keep, "{story}");
        assert!(
            held.notes[0].starts_with("the upgrade to acme-db.v2.0.0 has to wait: "),
            "{story}: {:?}",
            held.notes
        );
        assert!(
            held.notes[0].contains("acme-monitor.v0.2.0"),
            "{story}: {:?}",
            held.notes
        );
    }
}

#[test]
fn a_dependency_resolved_with_its_requester_agrees_with_the_requester() {
    // The acme-db Subscription created for acme-monitor: nothing installed yet.
    let as_requester = run(&spec("acme-monitor"), &[], &[]).unwrap();
    let as_dependency = run(&spec("acme-db"), &[], &[spec("acme-monitor")]).unwrap();
    assert_eq!(as_dependency.target, as_requester.dependencies[0]);
    assert!(as_dependency.dependencies.is_empty());
}

#[test]
fn failures_read_like_what_to_fix() {
    let cases: Vec<(SubscriptionSpec, &str, &str)> = vec![
        (
            spec("acme-nothing"),
            reasons::PACKAGE_NOT_FOUND,
            "no catalog offers package acme-nothing (searched catalogs: builtin)",
        ),
        (
            SubscriptionSpec {
                catalog: Some("builtin".into()),
                ..spec("acme-nothing")
            },
            reasons::PACKAGE_NOT_FOUND,
            "no catalog offers package acme-nothing (catalog builtin does not offer it)",
        ),
        (
            SubscriptionSpec {
                channel: Some("fast".into()),
                ..spec("acme-db")
            },
            reasons::CHANNEL_NOT_FOUND,
            "package acme-db has no channel fast (channels: candidate, stable; default candidate)",
        ),
        (
            SubscriptionSpec {
                version_range: Some(">=banana".into()),
                ..spec("acme-db")
            },
            reasons::INVALID_VERSION_RANGE,
            "spec.versionRange \">=banana\" is not a version range",
        ),
        (
            SubscriptionSpec {
                starting_csv: Some("acme-db.v1.1.1".into()),
                ..spec("acme-db")
            },
            reasons::STARTING_CSV_NOT_FOUND,
            "spec.startingCSV acme-db.v1.1.1: it is not in channel candidate of package acme-db",
        ),
        (
            SubscriptionSpec {
                version_range: Some(">=3.0.0".into()),
                ..spec("acme-db")
            },
            "SubscriptionUnsatisfiable",
            "cannot resolve subscription to acme-db (versions >=3.0.0)",
        ),
        (
            SubscriptionSpec {
                version_range: Some(">=0.2.0".into()),
                ..spec("acme-monitor")
            },
            "SubscriptionUnsatisfiable",
            "acme-monitor.v0.2.0 (acme-monitor 0.2.0) needs package acme-db >=1.1.0 <2.0.0",
        ),
    ];
    for (spec, reason, want) in cases {
        let installed = if spec.package == "acme-monitor" {
            vec![installed("acme-db", "1.0.0")]
        } else {
            vec![]
        };
        let err = run(&spec, &installed, &[]).unwrap_err();
        assert_eq!(err.reason, reason, "{err}");
        assert!(err.message.contains(want), "{err}\nshould contain: {want}");
    }
}

#[test]
fn only_not_found_failures_may_be_catalogs_still_loading() {
    for (reason, loading) in [
        (reasons::PACKAGE_NOT_FOUND, true),
        (reasons::NO_CATALOG, true),
        (reasons::CATALOG_NOT_SERVED, true),
        (reasons::CHANNEL_NOT_FOUND, false),
        ("SubscriptionUnsatisfiable", false),
    ] {
        assert_eq!(
            ResolutionFailure::new(reason, "x").may_be_catalogs_loading(),
            loading,
            "{reason}"
        );
    }
}

#[test]
fn the_same_input_gives_the_same_answer() {
    let installed = [installed("acme-db", "1.0.0")];
    let first = run(&spec("acme-monitor"), &installed, &[]).unwrap();
    for _ in 0..3 {
        assert_eq!(run(&spec("acme-monitor"), &installed, &[]).unwrap(), first);
    }
}

#[test]
fn olm_walks_the_channel_one_resolution_per_succeeded_step() {
    // Each step is installed (Succeeded) before the next resolution, as the controller does.
    let sub = SubscriptionSpec {
        channel: Some("stable".into()),
        ..spec("acme-db")
    };
    let mut at = installed("acme-db", "1.0.0");
    let mut walked = Vec::new();
    loop {
        let next = run(&sub, std::slice::from_ref(&at), &[]).unwrap();
        if next.action == Action::Keep {
            break;
        }
        walked.push(next.target.cluster_service_version_name.clone());
        at = installed("acme-db", &next.target.version);
        assert!(walked.len() < 5, "{walked:?}");
    }
    // 1.0.0 -> 1.1.0 over 1.0.1 (1.1.0's skipRange covers 1.0.0), then 1.1.1, the head.
    assert_eq!(walked, ["acme-db.v1.1.0", "acme-db.v1.1.1"]);
}
