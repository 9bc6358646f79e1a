//! What a person's actions write, decided without a cluster: the Subscription an install
//! creates, and the Blueprint edits behind approve, roll back and resume. The `windlass`
//! CLI (`rollback`, `resume`) and the hub share these, so a button does exactly what the
//! command does.

use serde_json::{Value, json};
use windlass_api::{Blueprint, names::annotations};
use windlass_catalog::range::VersionRange;

/// Why an action cannot be taken, for the person who asked. Each names the field or object.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    #[error("{field}: {message}")]
    InvalidField {
        field: &'static str,
        message: String,
    },
    #[error(
        "Blueprint {namespace}/{name} records no older version that Succeeded: there is nothing to roll back to"
    )]
    NothingToRollBackTo { namespace: String, name: String },
    #[error("{to} is not a revision of Blueprint {namespace}/{name} (see its status.history)")]
    NotARevision {
        namespace: String,
        name: String,
        to: String,
    },
    #[error("Blueprint {namespace}/{name} already targets {to}; see its RollbackAllowed condition")]
    AlreadyTargeted {
        namespace: String,
        name: String,
        to: String,
    },
}

/// The install form, as submitted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstallRequest {
    pub catalog: String,
    pub package: String,
    pub namespace: String,
    pub channel: String,
    pub version_range: String,
    pub approval: String,
    /// `own` (the default: the operator watches its own namespace) or `all` (every namespace,
    /// where the operator supports it and an InstallPolicy allows it).
    pub watch: String,
}

impl InstallRequest {
    /// From a form body (`application/x-www-form-urlencoded`).
    pub fn parse(body: &[u8]) -> InstallRequest {
        let mut out = InstallRequest::default();
        for (key, value) in form_urlencoded::parse(body) {
            let value = value.trim().to_string();
            match key.as_ref() {
                "catalog" => out.catalog = value,
                "package" => out.package = value,
                "namespace" => out.namespace = value,
                "channel" => out.channel = value,
                "versionRange" => out.version_range = value,
                "approval" => out.approval = value,
                "watch" => out.watch = value,
                _ => {}
            }
        }
        out
    }

    /// The Subscription to create (named after the package), or what is wrong with the form.
    pub fn subscription(&self) -> Result<Value, ActionError> {
        let invalid =
            |field: &'static str, message: String| ActionError::InvalidField { field, message };
        check_name("namespace", &self.namespace, 63)?;
        check_name("package", &self.package, 253)?;
        if !self.catalog.is_empty() {
            check_name("catalog", &self.catalog, 253)?;
        }
        let approval = match self.approval.as_str() {
            "" | "Automatic" => "Automatic",
            "Manual" => "Manual",
            other => {
                return Err(invalid(
                    "approval",
                    format!("{other:?} is neither Automatic nor Manual"),
                ));
            }
        };
        if !self.version_range.is_empty()
            && let Err(e) = VersionRange::parse(&self.version_range)
        {
            return Err(invalid(
                "versionRange",
                format!("{:?} is not a version range: {e}", self.version_range),
            ));
        }
        let own = match self.watch.as_str() {
            "" | "own" => true,
            "all" => false,
            other => {
                return Err(invalid(
                    "watch",
                    format!("{other:?} is neither own nor all"),
                ));
            }
        };
        let mut spec = json!({ "package": self.package, "approval": approval });
        if own {
            spec["targetNamespaces"] = json!([self.namespace]);
        }
        if !self.channel.is_empty() {
            spec["channel"] = json!(self.channel);
        }
        if !self.version_range.is_empty() {
            spec["versionRange"] = json!(self.version_range);
        }
        if !self.catalog.is_empty() {
            spec["catalog"] = json!(self.catalog);
        }
        Ok(json!({
            "apiVersion": "windlass.dev/v1alpha1",
            "kind": "Subscription",
            "metadata": { "name": self.package, "namespace": self.namespace },
            "spec": spec,
        }))
    }
}

/// A DNS-1123 name (a label when `max` is 63).
pub(crate) fn check_name(field: &'static str, value: &str, max: usize) -> Result<(), ActionError> {
    let ok = !value.is_empty()
        && value.len() <= max
        && value.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || (b == b'.' && max > 63)
        })
        && value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && value.ends_with(|c: char| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(ActionError::InvalidField {
            field,
            message: format!(
                "{value:?} is not a valid name (lower-case letters, digits and '-', at most {max} characters)"
            ),
        })
    }
}

/// Where a rollback goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rollback {
    /// The Blueprint's name.
    pub blueprint: String,
    /// The version it last recorded (the newest revision), for messages.
    pub from: String,
    /// The CSV it is sent back to.
    pub to: String,
}

/// The rollback of `blueprint`: to `to` (one of its recorded revisions) or to the version that
/// Succeeded before the current one.
pub fn rollback_target(blueprint: &Blueprint, to: Option<&str>) -> Result<Rollback, ActionError> {
    let namespace = blueprint.metadata.namespace.clone().unwrap_or_default();
    let name = blueprint.metadata.name.clone().unwrap_or_default();
    let current = blueprint.spec.cluster_service_version_name.clone();
    let history = blueprint
        .status
        .as_ref()
        .map(|s| s.history.as_slice())
        .unwrap_or_default();
    let to = match to {
        Some(to) => {
            if !history.iter().any(|r| r.cluster_service_version_name == to) {
                return Err(ActionError::NotARevision {
                    namespace,
                    name,
                    to: to.to_string(),
                });
            }
            to.to_string()
        }
        None => blueprint
            .spec
            .old_cluster_service_version_name
            .clone()
            .ok_or_else(|| ActionError::NothingToRollBackTo {
                namespace: namespace.clone(),
                name: name.clone(),
            })?,
    };
    if to == current {
        return Err(ActionError::AlreadyTargeted {
            namespace,
            name,
            to,
        });
    }
    let from = history
        .first()
        .map(|r| r.cluster_service_version_name.clone())
        .unwrap_or(current);
    Ok(Rollback {
        blueprint: name,
        from,
        to,
    })
}

/// The server-side apply that sets a Blueprint's target: the rollback. A person's field
/// manager then owns the target, so the Subscription stops moving it until a resume.
pub fn rollback_patch(to: &str, force: bool) -> Value {
    let mut spec = json!({ "clusterServiceVersionName": to });
    if force {
        spec["force"] = json!(true);
    }
    json!({ "apiVersion": "windlass.dev/v1alpha1", "kind": "Blueprint", "spec": spec })
}

/// The merge patch that hands a Blueprint's target back to its Subscription.
pub fn resume_patch() -> Value {
    json!({ "metadata": { "annotations": { annotations::RESUME: "true" } } })
}

/// The merge patch that approves a Blueprint's pending plan: the plan the person was shown
/// (its digest), so a plan that changed since is not approved by it; a bare approval when no
/// plan was shown.
pub fn approve_patch(plan: Option<&str>) -> Result<Value, ActionError> {
    match plan.filter(|p| !p.is_empty()) {
        None => Ok(json!({ "spec": { "approved": true } })),
        Some(digest) if is_plan_digest(digest) => Ok(json!({ "spec": { "approvedPlan": digest } })),
        Some(other) => Err(ActionError::InvalidField {
            field: "plan",
            message: format!("{other:?} is not a plan digest (sha256: and 64 hex digits)"),
        }),
    }
}

fn is_plan_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use windlass_api::blueprint::{BlueprintStatus, RevisionOutcome, RevisionRecord};

    fn blueprint(target: &str, old: Option<&str>, history: &[&str]) -> Blueprint {
        let mut b: Blueprint = serde_json::from_value(json!({
            "apiVersion": "windlass.dev/v1alpha1", "kind": "Blueprint",
            "metadata": {"name": "db", "namespace": "team-a"},
            "spec": {"package": "db", "clusterServiceVersionName": target},
        }))
        .unwrap();
        b.spec.old_cluster_service_version_name = old.map(str::to_string);
        b.status = Some(BlueprintStatus {
            history: history
                .iter()
                .enumerate()
                .map(|(i, csv)| RevisionRecord {
                    revision: (history.len() - i) as i64,
                    version: String::new(),
                    cluster_service_version_name: csv.to_string(),
                    digest: None,
                    started_time: None,
                    completion_time: None,
                    outcome: RevisionOutcome::Completed,
                    reason: String::new(),
                    forced: false,
                    verified_by: vec![],
                    restored_from: None,
                    image_rewrites: vec![],
                    plan: None,
                    approved_plan: None,
                    accepted_findings: Vec::new(),
                })
                .collect(),
            ..Default::default()
        });
        b
    }

    #[test]
    fn rollbacks_go_to_the_old_version_or_a_recorded_one() {
        let b = blueprint("db.v2", Some("db.v1"), &["db.v2", "db.v1", "db.v0"]);
        assert_eq!(
            rollback_target(&b, None).unwrap(),
            Rollback {
                blueprint: "db".into(),
                from: "db.v2".into(),
                to: "db.v1".into()
            }
        );
        assert_eq!(rollback_target(&b, Some("db.v0")).unwrap().to, "db.v0");
        assert!(matches!(
            rollback_target(&b, Some("db.v9")),
            Err(ActionError::NotARevision { .. })
        ));
        assert!(matches!(
            rollback_target(&blueprint("db.v1", None, &["db.v1"]), None),
            Err(ActionError::NothingToRollBackTo { .. })
        ));
        let done = rollback_target(&blueprint("db.v1", Some("db.v1"), &["db.v2"]), None);
        assert_eq!(
            done.unwrap_err().to_string(),
            "Blueprint team-a/db already targets db.v1; see its RollbackAllowed condition"
        );
    }

    #[test]
    fn patches_are_what_the_cli_writes() {
        assert_eq!(
            rollback_patch("db.v1", false)["spec"],
            json!({"clusterServiceVersionName": "db.v1"})
        );
        assert_eq!(rollback_patch("db.v1", true)["spec"]["force"], true);
        assert_eq!(
            resume_patch()["metadata"]["annotations"][annotations::RESUME],
            "true"
        );
        assert_eq!(
            approve_patch(None).unwrap(),
            json!({"spec": {"approved": true}})
        );
        let digest = format!("sha256:{}", "ab".repeat(32));
        assert_eq!(
            approve_patch(Some(&digest)).unwrap(),
            json!({"spec": {"approvedPlan": digest}})
        );
        for bad in [
            "sha256:xyz",
            "md5:00",
            &format!("sha256:{}", "AB".repeat(32)),
        ] {
            assert!(
                matches!(
                    approve_patch(Some(bad)),
                    Err(ActionError::InvalidField { field: "plan", .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_install_form_becomes_a_subscription_or_names_the_bad_field() {
        let form = InstallRequest::parse(
            b"catalog=builtin&package=acme-db&namespace=team-a&channel=stable&versionRange=%3E%3D1.0.0+%3C1.1.0&approval=Manual",
        );
        let sub = form.subscription().unwrap();
        assert_eq!(
            sub["metadata"],
            json!({"name": "acme-db", "namespace": "team-a"})
        );
        assert_eq!(
            sub["spec"],
            json!({"package": "acme-db", "approval": "Manual", "channel": "stable", "versionRange": ">=1.0.0 <1.1.0", "catalog": "builtin", "targetNamespaces": ["team-a"]})
        );
        let bad = [
            ("package=acme-db&namespace=Team_A", "namespace"),
            ("package=&namespace=a", "package"),
            ("package=acme-db&namespace=a&approval=Sometimes", "approval"),
            (
                "package=acme-db&namespace=a&versionRange=%3E%3Dbanana",
                "versionRange",
            ),
            ("package=acme-db&namespace=a&catalog=..", "catalog"),
            ("package=acme-db&namespace=a&watch=some", "watch"),
        ];
        for (body, field) in bad {
            let error = InstallRequest::parse(body.as_bytes())
                .subscription()
                .unwrap_err();
            assert!(
                matches!(&error, ActionError::InvalidField { field: f, .. } if *f == field),
                "{body}: {error}"
            );
        }
        let minimal = InstallRequest::parse(b"package=p&namespace=n")
            .subscription()
            .unwrap();
        assert_eq!(
            minimal["spec"],
            json!({"package": "p", "approval": "Automatic", "targetNamespaces": ["n"]})
        );
        let everywhere = InstallRequest::parse(b"package=p&namespace=n&watch=all")
            .subscription()
            .unwrap();
        assert_eq!(
            everywhere["spec"],
            json!({"package": "p", "approval": "Automatic"})
        );
    }
}
