use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;

use super::*;
use crate::actions::ActionError;

const ME: &str = "windlass-cli";

fn v(text: &str) -> semver::Version {
    semver::Version::parse(text).unwrap()
}

fn entry(package: &str, versions: &[&str], reason: Option<&str>) -> DelistedPackage {
    DelistedPackage {
        package: package.into(),
        versions: versions.iter().map(|s| s.to_string()).collect(),
        reason: reason.map(String::from),
    }
}

fn managed(manager: &str, operation: &str, packages: &[&str]) -> ManagedFieldsEntry {
    let keys: serde_json::Map<String, Value> = packages
        .iter()
        .map(|p| {
            (
                format!("k:{{\"package\":\"{p}\"}}"),
                json!({".": {}, "f:package": {}}),
            )
        })
        .collect();
    ManagedFieldsEntry {
        manager: Some(manager.into()),
        operation: Some(operation.into()),
        fields_v1: Some(FieldsV1(json!({"f:spec": {"f:delisted": keys}}))),
        ..Default::default()
    }
}

/// A Catalog named `vendor` with these entries and owners.
fn catalog(delisted: Vec<DelistedPackage>, owners: Vec<ManagedFieldsEntry>) -> Catalog {
    let mut catalog: Catalog = serde_json::from_value(json!({
        "apiVersion": "windlass.dev/v1alpha1", "kind": "Catalog",
        "metadata": {"name": "vendor", "resourceVersion": "42"},
        "spec": {"source": {"type": "BuiltIn"}},
    }))
    .unwrap();
    catalog.spec.delisted = delisted;
    catalog.metadata.managed_fields = Some(owners);
    catalog
}

fn delist_edit(reason: Option<&str>) -> Edit {
    Edit::Delist {
        reason: reason.map(String::from),
    }
}

#[test]
fn targets_name_a_package_and_maybe_a_version() {
    assert_eq!(
        parse_target(" acme-db @v1.0.1").unwrap(),
        Target {
            package: "acme-db".into(),
            version: Some(v("1.0.1"))
        }
    );
    assert_eq!(
        parse_target("acme-db@1.0.1").unwrap().text(),
        "acme-db@1.0.1"
    );
    assert_eq!(parse_target("acme-db").unwrap().text(), "acme-db");
    assert_eq!(
        parse_target("@1.0.0").unwrap_err(),
        DelistError::NotATarget {
            text: "@1.0.0".into()
        }
    );
    let bad = parse_target("acme-db@one").unwrap_err();
    assert!(
        matches!(&bad, DelistError::NotAVersion { version, .. } if version == "one"),
        "{bad}"
    );
}

#[test]
fn a_version_must_be_one_the_catalog_has() {
    let one = parse_target("acme-db@1.0.1").unwrap();
    assert!(check_version("vendor", &one, &["1.0.0", "v1.0.1"], &[]).is_ok());
    assert!(check_version("vendor", &one, &["1.0.0"], &["1.0.1"]).is_ok());
    assert!(check_version("vendor", &parse_target("acme-db").unwrap(), &[], &[]).is_ok());
    assert_eq!(
        check_version("vendor", &one, &["1.0.0", "1.1.0"], &["0.9.0"])
            .unwrap_err()
            .to_string(),
        "Catalog vendor does not serve version 1.0.1 of package acme-db (it has 1.0.0, 1.1.0)"
    );
}

#[test]
fn a_plan_applies_every_owned_entry_with_the_targets_changed() {
    // The manager owns old-db and acme-db; gitops-db is a GitOps tool's and is never sent.
    let vendor = catalog(
        vec![
            entry("acme-db", &["1.0.0"], Some("CVE")),
            entry("old-db", &[], None),
            entry("gitops-db", &[], None),
        ],
        vec![
            managed(ME, "Apply", &["acme-db", "old-db"]),
            managed("argocd-controller", "Apply", &["gitops-db"]),
        ],
    );
    let target = parse_target("acme-db@1.0.1").unwrap();
    let Plan::Apply {
        document,
        entry: written,
        others,
    } = plan(&vendor, &target, &delist_edit(None), ME, false).unwrap()
    else {
        panic!("a change")
    };
    assert_eq!(
        written,
        Some(entry("acme-db", &["1.0.0", "1.0.1"], Some("CVE")))
    );
    assert!(others.is_empty());
    assert_eq!(document["metadata"], json!({"name": "vendor"}));
    assert_eq!(
        document["spec"]["delisted"],
        json!([
            {"package": "old-db"},
            {"package": "acme-db", "versions": ["1.0.0", "1.0.1"], "reason": "CVE"},
        ])
    );

    // Relisting the last owned entry's only version sends the rest; relisting everything
    // the manager owns sends no spec.
    let relist_all = plan(
        &vendor,
        &parse_target("acme-db").unwrap(),
        &Edit::Relist,
        ME,
        false,
    )
    .unwrap();
    assert!(
        matches!(&relist_all, Plan::Apply { document, entry: None, .. } if document["spec"]["delisted"] == json!([{"package": "old-db"}])),
        "{relist_all:?}"
    );
    let alone = catalog(
        vec![entry("acme-db", &["1.0.0"], None)],
        vec![managed(ME, "Apply", &["acme-db"])],
    );
    let Plan::Apply { document, .. } = plan(
        &alone,
        &parse_target("acme-db@1.0.0").unwrap(),
        &Edit::Relist,
        ME,
        false,
    )
    .unwrap() else {
        panic!("a change")
    };
    assert!(document.get("spec").is_none(), "{document}");
}

#[test]
fn nothing_to_do_is_said_and_writes_nothing() {
    let vendor = catalog(
        vec![entry("acme-db", &[], Some("EOL"))],
        vec![managed(ME, "Apply", &["acme-db"])],
    );
    assert_eq!(
        plan(
            &vendor,
            &parse_target("acme-db").unwrap(),
            &delist_edit(None),
            ME,
            false
        )
        .unwrap(),
        Plan::Nothing("package acme-db is already delisted (all of it)".into())
    );
    assert_eq!(
        plan(
            &vendor,
            &parse_target("new-db").unwrap(),
            &Edit::Relist,
            ME,
            false
        )
        .unwrap(),
        Plan::Nothing("package new-db is not delisted".into())
    );
    assert_eq!(
        nothing_message("vendor", "package new-db is not delisted"),
        "Catalog vendor: package new-db is not delisted; nothing changed"
    );
    // A version of a package delisted whole cannot be relisted alone.
    assert_eq!(
        plan(
            &vendor,
            &parse_target("acme-db@1.0.0").unwrap(),
            &Edit::Relist,
            ME,
            false
        )
        .unwrap_err(),
        DelistError::WholePackageDelisted {
            package: "acme-db".into()
        }
    );
}

#[test]
fn an_entry_another_tool_manages_is_refused_naming_it_unless_forced() {
    let vendor = catalog(
        vec![entry("gitops-db", &["1.0.0"], None)],
        vec![managed("argocd-controller", "Apply", &["gitops-db"])],
    );
    let target = parse_target("gitops-db@1.0.1").unwrap();
    let refused = plan(&vendor, &target, &delist_edit(None), ME, false).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "spec.delisted[package=gitops-db] of Catalog vendor is managed by argocd-controller (Apply): change it there (in Git, for a GitOps tool)"
    );
    let Plan::Apply { others, entry, .. } =
        plan(&vendor, &target, &delist_edit(None), ME, true).unwrap()
    else {
        panic!("forced: a change")
    };
    assert_eq!(others, ["argocd-controller (Apply)"]);
    assert_eq!(
        entry,
        Some(self::entry("gitops-db", &["1.0.0", "1.0.1"], None))
    );
    // A new entry is the manager's own, whoever else delists other packages.
    assert!(matches!(
        plan(
            &vendor,
            &parse_target("acme-db").unwrap(),
            &delist_edit(Some("EOL")),
            ME,
            false
        ),
        Ok(Plan::Apply { .. })
    ));
}

#[test]
fn what_was_written_is_checked_and_a_co_owner_named() {
    let written = entry("acme-db", &["1.0.1"], None);
    let after = catalog(
        vec![written.clone()],
        vec![managed(ME, "Apply", &["acme-db"])],
    );
    assert!(check_written(&after, "acme-db", Some(&written), ME).is_ok());
    // The manager removed its entry, but kubectl-edit still holds it.
    let kept = catalog(
        vec![written.clone()],
        vec![managed("kubectl-edit", "Update", &["acme-db"])],
    );
    assert_eq!(
        check_written(&kept, "acme-db", None, ME)
            .unwrap_err()
            .to_string(),
        "Catalog vendor: spec.delisted[package=acme-db] is still {\"package\":\"acme-db\",\"versions\":[\"1.0.1\"]}, because kubectl-edit (Update) also manages it; change it there"
    );
}

#[test]
fn a_forced_removal_is_bound_to_the_version_read() {
    let vendor = catalog(
        vec![
            entry("acme-db", &[], None),
            entry("old-db", &["1.0.0"], None),
        ],
        vec![],
    );
    assert_eq!(
        removal_patch(&vendor, "acme-db").unwrap(),
        json!({"metadata": {"resourceVersion": "42"}, "spec": {"delisted": [{"package": "old-db", "versions": ["1.0.0"]}]}})
    );
    assert_eq!(removal_patch(&vendor, "new-db"), None);
}

#[test]
fn messages_say_what_changed_for_whom() {
    let one = parse_target("acme-db@1.0.1").unwrap();
    assert_eq!(
        done_message(
            "vendor",
            &one,
            &delist_edit(Some("CVE")),
            Some(&entry("acme-db", &["1.0.1"], Some("CVE")))
        ),
        "Catalog vendor: version 1.0.1 of package acme-db delisted (CVE). New Subscriptions cannot install it; installed operators keep running without upgrades (their Subscriptions say Delisted)."
    );
    assert_eq!(
        done_message("vendor", &one, &Edit::Relist, None),
        "Catalog vendor: version 1.0.1 of package acme-db listed again; Subscriptions can install it and upgrades resume."
    );
    assert!(
        conflict_message("vendor", "Apply failed with 1 conflict").ends_with("change it there")
    );
}

#[test]
fn the_form_becomes_a_catalog_and_target_or_names_the_bad_field() {
    let form = DelistRequest::parse(
        b"catalog=vendor&package=acme-db&version=v1.0.1&reason=CVE-1+data+loss",
    );
    assert_eq!(
        form.target().unwrap(),
        (
            "vendor".to_string(),
            Target {
                package: "acme-db".into(),
                version: Some(v("1.0.1"))
            }
        )
    );
    assert_eq!(form.reason().as_deref(), Some("CVE-1 data loss"));
    let whole = DelistRequest::parse(b"catalog=vendor&package=acme-db&version=&reason=");
    assert_eq!(whole.target().unwrap().1.version, None);
    assert_eq!(whole.reason(), None);
    for (body, field) in [
        ("catalog=&package=acme-db", "catalog"),
        ("catalog=vendor&package=Acme_DB", "package"),
        ("catalog=vendor&package=acme-db&version=latest", "version"),
    ] {
        let error = DelistRequest::parse(body.as_bytes()).target().unwrap_err();
        assert!(
            matches!(&error, ActionError::InvalidField { field: f, .. } if *f == field),
            "{body}: {error}"
        );
    }
}
