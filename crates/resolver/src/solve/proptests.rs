//! Small random catalogs: every plan is checked against the rules, and every failure against a
//! brute-force enumeration of all installations (the proof that the search is complete).
//!
//! Bundles also carry `olm.constraint`s built from a small tree type of the test's own; the
//! brute force judges them with the tree's own meaning (CEL rules included, each paired with
//! what it says in plain Rust), not with the catalog's evaluator.

use std::collections::BTreeMap;

use proptest::prelude::*;
use windlass_catalog::{Catalog, Property};

use super::*;
use crate::synthetic::{CatalogBuilder, GROUP};

const PACKAGES: [&str; 4] = ["a", "b", "c", "d"];
const APIS: [&str; 3] = ["X", "Y", "Z"];
const RANGES: [&str; 4] = [">=1.1.0", "<1.1.0", "1.0.0 || 1.2.0", "*"];

/// What a rule says about a bundle, in plain Rust.
type Meaning = fn(&windlass_catalog::Bundle) -> bool;

/// CEL rules the generator uses, with what each means.
const RULES: [(&str, Meaning); 4] = [
    (
        "properties.exists(p, p.type == 'olm.package' && semver_compare(p.value.version, '1.1.0') >= 0)",
        |b| b.version >= Version::new(1, 1, 0),
    ),
    (
        "properties.exists(p, p.type == 'olm.gvk' && p.value.kind == 'Y')",
        |b| b.provided_gvks().any(|g| g.kind == "Y"),
    ),
    (
        "properties.exists(p, p.type == 'olm.package' && p.value.packageName in ['a', 'c'])",
        |b| b.package == "a" || b.package == "c",
    ),
    (
        "!properties.exists(p, p.type == 'olm.package.required')",
        |b| b.required_packages().next().is_none(),
    ),
];

/// A constraint as the generator writes it.
#[derive(Clone, Debug)]
enum PredGen {
    Package(usize, usize),
    Api(usize),
    Rule(usize),
    All(Vec<PredGen>),
    Any(Vec<PredGen>),
    Not(Vec<PredGen>),
}

impl PredGen {
    fn to_json(&self) -> serde_json::Value {
        let list = |members: &[PredGen]| serde_json::json!({"constraints": members.iter().map(PredGen::to_json).collect::<Vec<_>>()});
        match self {
            PredGen::Package(p, r) => {
                serde_json::json!({"package": {"packageName": PACKAGES[*p], "versionRange": RANGES[*r]}})
            }
            PredGen::Api(a) => {
                serde_json::json!({"gvk": {"group": GROUP, "version": "v1", "kind": APIS[*a]}})
            }
            PredGen::Rule(i) => serde_json::json!({"cel": {"rule": RULES[*i].0}}),
            PredGen::All(m) => serde_json::json!({"all": list(m)}),
            PredGen::Any(m) => serde_json::json!({"any": list(m)}),
            PredGen::Not(m) => serde_json::json!({"not": list(m)}),
        }
    }

    /// The meaning, written independently of the catalog's evaluator.
    fn holds(&self, b: &windlass_catalog::Bundle) -> bool {
        match self {
            PredGen::Package(p, r) => {
                b.package == PACKAGES[*p]
                    && VersionRange::parse(RANGES[*r]).unwrap().matches(&b.version)
            }
            PredGen::Api(a) => b.provided_gvks().any(|g| g.kind == APIS[*a]),
            PredGen::Rule(i) => (RULES[*i].1)(b),
            PredGen::All(m) => m.iter().all(|g| g.holds(b)),
            PredGen::Any(m) => m.iter().any(|g| g.holds(b)),
            PredGen::Not(m) => !m.iter().any(|g| g.holds(b)),
        }
    }
}

fn pred_gen() -> impl Strategy<Value = PredGen> {
    let leaf = prop_oneof![
        (0..PACKAGES.len(), 0..RANGES.len()).prop_map(|(p, r)| PredGen::Package(p, r)),
        (0..APIS.len()).prop_map(PredGen::Api),
        (0..RULES.len()).prop_map(PredGen::Rule),
    ];
    leaf.prop_recursive(2, 6, 2, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..3).prop_map(PredGen::All),
            prop::collection::vec(inner.clone(), 1..3).prop_map(PredGen::Any),
            prop::collection::vec(inner, 1..3).prop_map(PredGen::Not),
        ]
    })
}

/// An unusable constraint: the bundle carrying it can never be chosen.
const UNUSABLE: &str = "not a range";

#[derive(Clone, Debug)]
struct BundleGen {
    owns: Vec<usize>,
    needs_api: Vec<usize>,
    needs: Vec<(usize, usize)>,
    /// `None`: an unusable constraint.
    constraints: Vec<Option<PredGen>>,
}

#[derive(Clone, Debug)]
struct Case {
    /// Per package, its versions 1.0.0, 1.1.0, ... in one replaces chain.
    packages: Vec<Vec<BundleGen>>,
    subs: Vec<(usize, Option<usize>)>,
    /// Installed packages without subscription, by version index.
    pins: Vec<(usize, usize)>,
}

fn bundle_gen() -> impl Strategy<Value = BundleGen> {
    (
        prop::collection::vec(0..APIS.len(), 0..2),
        prop::collection::vec(0..APIS.len(), 0..2),
        prop::collection::vec((0..PACKAGES.len(), 0..RANGES.len()), 0..2),
        prop::collection::vec(prop::option::weighted(0.9, pred_gen()), 0..2),
    )
        .prop_map(|(owns, needs_api, needs, constraints)| BundleGen {
            owns,
            needs_api,
            needs,
            constraints,
        })
}

/// Each bundle's generated constraints, by bundle name.
type Constraints = BTreeMap<String, Vec<Option<PredGen>>>;

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(prop::collection::vec(bundle_gen(), 1..4), PACKAGES.len()),
        prop::collection::vec((0..PACKAGES.len(), prop::option::of(0..RANGES.len())), 1..3),
        prop::collection::vec((0..PACKAGES.len(), 0..3usize), 0..2),
    )
        .prop_map(|(packages, subs, pins)| Case {
            packages,
            subs,
            pins,
        })
}

fn build(case: &Case) -> (Catalog, Request, Constraints) {
    let mut b = CatalogBuilder::new();
    let mut constraints = Constraints::new();
    for (p, versions) in case.packages.iter().enumerate() {
        for (v, g) in versions.iter().enumerate() {
            let mut spec = b.bundle(PACKAGES[p], &format!("1.{v}.0"));
            if v > 0 {
                spec = spec.replaces(&format!("1.{}.0", v - 1));
            }
            for o in &g.owns {
                spec = spec.owns(APIS[*o]);
            }
            for n in &g.needs_api {
                spec = spec.needs_api(APIS[*n]);
            }
            for (dp, r) in &g.needs {
                if *dp != p {
                    spec = spec.needs(PACKAGES[*dp], RANGES[*r]);
                }
            }
            for c in &g.constraints {
                spec = spec.constraint(match c {
                    Some(pred) => pred.to_json(),
                    None => serde_json::json!({"package": {"packageName": "a", "versionRange": UNUSABLE}}),
                });
            }
            constraints.insert(
                crate::synthetic::bundle_name(PACKAGES[p], &format!("1.{v}.0")),
                g.constraints.clone(),
            );
        }
    }
    let subscribed: Vec<usize> = case.subs.iter().map(|s| s.0).collect();
    let mut installed = Vec::new();
    for (p, v) in &case.pins {
        let v = v % case.packages[*p].len();
        if !subscribed.contains(p)
            && !installed
                .iter()
                .any(|i: &Installed| i.package == PACKAGES[*p])
        {
            installed.push(Installed {
                package: PACKAGES[*p].into(),
                version: Version::new(1, v as u64, 0),
                bundle: None,
            });
        }
    }
    let mut subscriptions: Vec<Subscription> = Vec::new();
    for (p, r) in &case.subs {
        if subscriptions.iter().any(|s| s.package == PACKAGES[*p]) {
            continue;
        }
        subscriptions.push(Subscription {
            package: PACKAGES[*p].into(),
            channel: None,
            range: r.map(|r| VersionRange::parse(RANGES[r]).unwrap()),
            policy: Policy::Olm,
        });
    }
    (
        b.build(),
        Request {
            installed,
            subscriptions,
        },
        constraints,
    )
}

/// Whether choosing `chosen` (package -> bundle) obeys every rule of the request.
fn valid(
    request: &Request,
    constraints: &Constraints,
    chosen: &BTreeMap<String, &windlass_catalog::Bundle>,
) -> bool {
    for s in &request.subscriptions {
        match chosen.get(&s.package) {
            Some(b) if s.range.as_ref().is_none_or(|r| r.matches(&b.version)) => {}
            _ => return false,
        }
    }
    for i in &request.installed {
        match chosen.get(&i.package) {
            Some(b) if b.version == i.version => {}
            _ => return false,
        }
    }
    let mut owners: BTreeMap<&windlass_catalog::model::Gvk, &str> = BTreeMap::new();
    for b in chosen.values() {
        for g in b.provided_gvks() {
            if owners.insert(g, &b.package).is_some_and(|o| o != b.package) {
                return false;
            }
        }
    }
    for b in chosen.values() {
        for p in &b.properties {
            let ok = match p {
                Property::PackageRequired {
                    package_name,
                    version_range,
                } => {
                    let r = VersionRange::parse(version_range).unwrap();
                    chosen
                        .get(package_name.as_str())
                        .is_some_and(|d| r.matches(&d.version))
                }
                Property::GvkRequired(g) => owners.contains_key(g),
                _ => true,
            };
            if !ok {
                return false;
            }
        }
        // A constraint needs some chosen bundle (this one too) that satisfies it.
        for c in constraints.get(&b.name).into_iter().flatten() {
            match c {
                Some(pred) if chosen.values().any(|d| pred.holds(d)) => {}
                _ => return false,
            }
        }
    }
    true
}

/// Every installation: each package absent or at one of its versions.
fn brute_force(catalog: &Catalog, request: &Request, constraints: &Constraints) -> bool {
    let packages: Vec<&windlass_catalog::Package> = catalog.packages.values().collect();
    let mut choice = vec![0usize; packages.len()];
    loop {
        let chosen: BTreeMap<String, &windlass_catalog::Bundle> = packages
            .iter()
            .zip(&choice)
            .filter(|(_, c)| **c > 0)
            .filter_map(|(p, c)| p.bundles.values().nth(*c - 1).map(|b| (p.name.clone(), b)))
            .collect();
        if valid(request, constraints, &chosen) {
            return true;
        }
        // next combination (odometer)
        let mut i = 0;
        loop {
            if i == packages.len() {
                return false;
            }
            choice[i] += 1;
            if choice[i] <= packages[i].bundles.len() {
                break;
            }
            choice[i] = 0;
            i += 1;
        }
    }
}

fn reaches(plan: &Plan, from: &str, to: &str) -> bool {
    let mut seen = vec![from.to_string()];
    let mut i = 0;
    while i < seen.len() {
        if seen[i] == to {
            return true;
        }
        if let Some(step) = plan.steps.iter().find(|s| s.bundle == seen[i]) {
            for d in &step.depends_on {
                if !seen.contains(d) {
                    seen.push(d.clone());
                }
            }
        }
        i += 1;
    }
    false
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn plans_obey_the_rules_and_failures_have_no_solution(case in case()) {
        let (catalog, request, constraints) = build(&case);
        match resolve(&catalog, &request) {
            Ok(plan) => {
                let mut chosen = BTreeMap::new();
                for s in &plan.steps {
                    let b = &catalog.packages[&s.package].bundles[&s.bundle];
                    prop_assert!(chosen.insert(s.package.clone(), b).is_none(), "two versions of {}", s.package);
                }
                prop_assert!(valid(&request, &constraints, &chosen), "plan breaks a rule: {:#?}", plan);
                // dependency order: everything a step depends on comes earlier, unless the two
                // sit on a dependency cycle
                for (i, s) in plan.steps.iter().enumerate() {
                    for d in &s.depends_on {
                        let j = plan.steps.iter().position(|t| &t.bundle == d).unwrap();
                        prop_assert!(j < i || reaches(&plan, d, &s.bundle), "{} before its dependency {}", s.bundle, d);
                    }
                }
            }
            Err(why) => {
                prop_assert!(!brute_force(&catalog, &request, &constraints), "solver gave up but a solution exists: {}", why);
                prop_assert!(!why.message.is_empty());
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// The catalog's evaluator (CEL included) gives every generated constraint the meaning the
    /// generator gives it, on every bundle of the catalog.
    #[test]
    fn constraints_mean_what_they_say(case in case()) {
        let (catalog, _, constraints) = build(&case);
        let bundles: Vec<&windlass_catalog::Bundle> =
            catalog.packages.values().flat_map(|p| p.bundles.values()).collect();
        for pred in constraints.values().flatten().flatten() {
            let parsed = windlass_catalog::Constraint::parse(&pred.to_json()).unwrap();
            for b in &bundles {
                let candidate = windlass_catalog::constraint::Candidate::new(b);
                prop_assert_eq!(parsed.matches(&candidate), pred.holds(b), "{} on {}", parsed, b.name);
            }
        }
    }
}
