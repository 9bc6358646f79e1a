use std::sync::Arc;

use super::*;
use crate::synthetic;

fn index(packages: usize) -> HubIndex {
    HubIndex::new(vec![Arc::new(synthetic::content(
        "synthetic",
        synthetic::catalog(packages, 3),
    ))])
}

fn names(hits: &[&PackageSummary]) -> Vec<String> {
    hits.iter().map(|p| p.name.clone()).collect()
}

#[test]
fn summaries_carry_what_the_list_shows() {
    let index = index(4);
    let all = index.search(&Query::default());
    assert_eq!(all.len(), 4);
    let first = all.iter().find(|p| p.name == "synthetic-0").unwrap();
    assert_eq!(first.display_name, "Synthetic Operator 0");
    assert_eq!(first.short_description, "Runs database and backup for you.");
    assert_eq!(first.provider.name.as_deref(), Some("Acme Corp"));
    assert_eq!(first.provider.provider_type, "certified");
    assert_eq!(first.keywords, ["database", "backup"]);
    assert_eq!(first.latest_version.as_deref(), Some("1.2.0"));
    assert!(first.has_icon);
}

#[test]
fn searches_filter_by_words_provider_type_keyword_and_catalog() {
    let index = index(24);
    let cases: Vec<(Query, usize)> = vec![
        (Query::default(), 24),
        // database is the first keyword of 0 and 12 and the second of 15, 16 and 17.
        (Query::parse("q=DATABASE"), 5),
        (Query::parse("q=database+backup"), 1),
        (Query::parse("q=nothing-like-it"), 0),
        (Query::parse("providerType=community"), 6),
        (Query::parse("providerType=Community&q=synthetic"), 6),
        // monitoring: the first keyword of 1 and 13, the second of 18, 19 and 20.
        (Query::parse("keyword=Monitoring"), 5),
        (Query::parse("catalog=synthetic&q=operator+12"), 1),
        (Query::parse("catalog=other"), 0),
    ];
    for (query, expected) in cases {
        let hits = index.search(&query);
        assert_eq!(hits.len(), expected, "{query:?}: {:?}", names(&hits));
    }
}

#[test]
fn an_exact_name_comes_first_then_names_starting_with_the_query() {
    let index = index(12);
    let hits = index.search(&Query::parse("q=synthetic-1"));
    assert_eq!(
        names(&hits),
        ["synthetic-1", "synthetic-10", "synthetic-11"],
        "exact, then prefix matches"
    );
}

#[test]
fn a_package_is_taken_from_the_highest_priority_catalog_unless_one_is_named() {
    let mut low = synthetic::content("low", synthetic::catalog(2, 2));
    low.priority = -5;
    let high = synthetic::content("high", synthetic::catalog(1, 1));
    let index = HubIndex::new(vec![Arc::new(low), Arc::new(high)]);
    assert_eq!(index.catalogs()[0].name, "high");
    let (from, _) = index.package("synthetic-0", None).unwrap();
    assert_eq!(from.name, "high");
    let (from, package) = index.package("synthetic-0", Some("low")).unwrap();
    assert_eq!((from.name.as_str(), package.bundles.len()), ("low", 2));
    assert!(index.package("synthetic-1", Some("high")).is_none());
    // Both offers are listed.
    assert_eq!(index.search(&Query::parse("q=synthetic-0")).len(), 2);
}

#[test]
fn keywords_are_counted_for_the_filter() {
    let index = index(12);
    let keywords = index.keywords(3);
    assert_eq!(keywords.len(), 3);
    assert!(keywords.windows(2).all(|w| w[0].1 >= w[1].1));
}

#[test]
fn a_package_without_metadata_shows_its_name_and_package_description() {
    let mut catalog = synthetic::catalog(1, 1);
    let package = catalog.packages.get_mut("synthetic-0").unwrap();
    for bundle in package.bundles.values_mut() {
        bundle.properties.truncate(1);
    }
    package.description = Some("First paragraph\nof text.\n\nSecond.".into());
    let index = HubIndex::new(vec![Arc::new(synthetic::content("plain", catalog))]);
    let hit = index.search(&Query::default())[0].clone();
    assert_eq!(hit.display_name, "synthetic-0");
    assert_eq!(hit.short_description, "First paragraph of text.");
    assert_eq!(hit.provider.provider_type, "custom");
}

/// Content named `name` with `packages` packages of three versions, delisting as given.
fn delisting(name: &str, priority: i32, delisted: &[(&str, &[&str], &str)]) -> Arc<CatalogContent> {
    let owned: Vec<(String, Vec<String>, String)> = delisted
        .iter()
        .map(|(p, v, r)| {
            (
                p.to_string(),
                v.iter().map(|s| s.to_string()).collect(),
                r.to_string(),
            )
        })
        .collect();
    let (delisting, problems) = Delisting::from_entries(
        owned
            .iter()
            .map(|(p, v, r)| (p.as_str(), v.as_slice(), r.as_str())),
    );
    assert!(problems.is_empty(), "{problems:?}");
    let mut content = synthetic::content(name, synthetic::catalog(3, 3));
    content.priority = priority;
    content.delisting = delisting;
    Arc::new(content)
}

#[test]
fn a_package_delisted_whole_is_left_out_unless_asked_for() {
    let index = HubIndex::new(vec![delisting("vendor", 0, &[("synthetic-1", &[], "EOL")])]);
    let listed = index.search(&Query::default());
    assert_eq!(names(&listed), ["synthetic-0", "synthetic-2"]);
    let all = index.search(&Query::parse("delisted=include"));
    assert_eq!(names(&all), ["synthetic-0", "synthetic-1", "synthetic-2"]);
    let one = all.iter().find(|p| p.name == "synthetic-1").unwrap();
    assert!(one.delisted);
    let json = serde_json::to_value(one).unwrap();
    assert_eq!(json["delisted"], true);
    assert!(
        serde_json::to_value(listed[0])
            .unwrap()
            .get("delisted")
            .is_none()
    );
}

#[test]
fn delisted_versions_are_not_what_a_package_is_presented_by() {
    let index = HubIndex::new(vec![delisting(
        "vendor",
        0,
        &[("synthetic-0", &["1.2.0"], "")],
    )]);
    let hits = index.search(&Query::parse("q=synthetic-0"));
    assert_eq!(hits[0].latest_version.as_deref(), Some("1.1.0"));
    assert!(!hits[0].delisted);
}

#[test]
fn without_a_catalog_the_package_comes_from_one_that_lists_it() {
    let index = HubIndex::new(vec![
        delisting("high", 10, &[("synthetic-0", &[], "")]),
        delisting("low", 0, &[]),
    ]);
    assert_eq!(index.offering("synthetic-0"), ["high", "low"]);
    assert_eq!(index.package("synthetic-0", None).unwrap().0.name, "low");
    assert_eq!(index.package("synthetic-1", None).unwrap().0.name, "high");
    assert_eq!(
        index.package("synthetic-0", Some("high")).unwrap().0.name,
        "high"
    );
    // Delisted everywhere: still found, from the highest priority.
    let everywhere = HubIndex::new(vec![delisting("high", 10, &[("synthetic-0", &[], "")])]);
    assert_eq!(
        everywhere.package("synthetic-0", None).unwrap().0.name,
        "high"
    );
    assert!(everywhere.offering("nope").is_empty());
}
