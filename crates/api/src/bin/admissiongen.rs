//! The admission policies windlass ships, written once: the rules below become the plain YAML in
//! `config/admission` and the Helm chart's template, which `make admission` writes and
//! `make verify` checks.
//!
//! They are a second wall behind the controllers' own checks: the API server refuses, before
//! anything is stored, the writes no code path of windlass should accept. Only the manager's
//! ServiceAccount (named, never a wildcard) creates or changes the objects only windlass
//! writes, and a Blueprint a Subscription did not write is refused unless a cluster admin
//! allowed hand-written ones in its namespace. `system:masters` (the API server's own
//! break-glass group, which no RBAC binding can grant) is exempt so an admin can always repair.
//!
//! Usage: `admissiongen [--check] CONFIG_ADMISSION_DIR CHART_TEMPLATES_DIR`. With `--check`
//! nothing is written; it fails when a file differs from what it would write.

use std::path::PathBuf;

#[path = "common/generated.rs"]
mod generated;

use windlass_api::names::{labels, operands_secret, plan_secret, revision_secret, seal};

/// How the generated text names things: literally (`config/admission`, release `windlass` in
/// `windlass-system`) or through the chart's templates.
#[derive(Clone, Copy)]
enum Target {
    Plain,
    Chart,
}

impl Target {
    /// The name of the policy (and its binding) ending in `suffix`.
    fn name(self, suffix: &str) -> String {
        match self {
            Target::Plain => format!("windlass-{suffix}"),
            Target::Chart => format!("{{{{ include \"windlass.fullname\" . }}}}-{suffix}"),
        }
    }

    /// The manager's user name, as the API server sees its ServiceAccount.
    fn manager(self) -> &'static str {
        match self {
            Target::Plain => "system:serviceaccount:windlass-system:windlass",
            Target::Chart => {
                "system:serviceaccount:{{ .Release.Namespace }}:{{ include \"windlass.serviceAccountName\" . }}"
            }
        }
    }

    fn labels(self) -> &'static str {
        match self {
            Target::Plain => {
                "  labels:\n    app.kubernetes.io/name: windlass\n    app.kubernetes.io/component: admission\n    app.kubernetes.io/part-of: windlass\n"
            }
            Target::Chart => "  labels:\n    {{- include \"windlass.labels\" . | nindent 4 }}\n",
        }
    }
}

/// One refusal: the CEL expression that must hold, and what the API server says when it does not.
struct Validation {
    expression: String,
    message: String,
}

fn validation(expression: impl Into<String>, message: impl Into<String>) -> Validation {
    Validation {
        expression: expression.into(),
        message: message.into(),
    }
}

/// The resources one policy matches: `(apiGroups, resources, operations)`.
type ResourceRule = (
    &'static [&'static str],
    Vec<String>,
    &'static [&'static str],
);

/// One ValidatingAdmissionPolicy and its binding.
struct Policy {
    suffix: &'static str,
    why: &'static [&'static str],
    rules: Vec<ResourceRule>,
    /// More conditions (CEL) an admission request must meet to be checked at all.
    conditions: Vec<(&'static str, String)>,
    /// Named CEL expressions the validations use (`variables.<name>`).
    variables: Vec<(&'static str, String)>,
    validations: Vec<Validation>,
}

const CREATE_UPDATE: &[&str] = &["CREATE", "UPDATE"];
const UPDATE: &[&str] = &["UPDATE"];
const WINDLASS: &[&str] = &[windlass_api::GROUP];
const CORE: &[&str] = &[""];

/// The kinds only the manager creates and changes (their status aside, which
/// [`status_resources`] covers for every kind).
const MANAGER_WRITTEN: [&str; 3] = ["clusterserviceversions", "installscopes", "packages"];

/// The fields of a Blueprint's spec a person may change on one a Subscription wrote: approval
/// (`windlass approve`, the hub), findings accepted by name, and a rollback (`windlass
/// rollback`) to a revision of its history, forced or not. Everything else is the
/// Subscription's.
const BLUEPRINT_PERSON_FIELDS: [&str; 5] = [
    "approved",
    "approvedPlan",
    "acceptedFindings",
    "force",
    "clusterServiceVersionName",
];

/// The Secret types only the manager writes: the revisions, plans and operand snapshots of
/// Blueprints, and its sealing key.
fn manager_secret_types() -> String {
    cel_list(&[
        revision_secret::TYPE,
        plan_secret::TYPE,
        operands_secret::TYPE,
        seal::KEY_SECRET_TYPE,
    ])
}

fn cel_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| format!("'{item}'")).collect();
    format!("[{}]", quoted.join(", "))
}

/// `<plural>/status` of every windlass kind.
fn status_resources() -> Vec<String> {
    windlass_api::crds()
        .iter()
        .filter(|crd| {
            crd.spec
                .versions
                .iter()
                .any(|v| v.subresources.as_ref().is_some_and(|s| s.status.is_some()))
        })
        .map(|crd| format!("{}/status", crd.spec.names.plural))
        .collect()
}

/// The top-level fields of the Blueprint spec, from its schema.
fn blueprint_spec_fields() -> Vec<String> {
    let crd = windlass_api::crds()
        .into_iter()
        .find(|crd| crd.spec.names.kind == "Blueprint")
        .expect("the Blueprint CRD");
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .expect("the Blueprint schema");
    let spec = schema
        .properties
        .as_ref()
        .and_then(|p| p.get("spec"))
        .and_then(|s| s.properties.as_ref())
        .expect("the Blueprint spec's properties");
    spec.keys().cloned().collect()
}

/// `field` of `spec` is the same in the object and the old object (present in both and equal,
/// or absent from both).
fn unchanged(field: &str) -> String {
    format!(
        "has(object.spec.{field}) == has(oldObject.spec.{field}) &&\n(!has(object.spec.{field}) || object.spec.{field} == oldObject.spec.{field})"
    )
}

/// Every `windlass.dev/` label and annotation (the seal, the revision's CRDs, ...) is the same
/// in the object and the old object: none added, removed or changed.
fn windlass_metadata_kept() -> String {
    let prefix = windlass_api::GROUP;
    ["labels", "annotations"]
        .iter()
        .map(|field| {
            format!(
                "(!has(object.metadata.{field}) || object.metadata.{field}.all(k, !k.startsWith('{prefix}/') ||\n\
   (has(oldObject.metadata.{field}) && k in oldObject.metadata.{field} && oldObject.metadata.{field}[k] == object.metadata.{field}[k]))) &&\n\
(!has(oldObject.metadata.{field}) || oldObject.metadata.{field}.all(k, !k.startsWith('{prefix}/') ||\n\
   (has(object.metadata.{field}) && k in object.metadata.{field})))"
            )
        })
        .collect::<Vec<_>>()
        .join(" &&\n")
}

fn policies() -> Vec<Policy> {
    let manager_written: Vec<String> = MANAGER_WRITTEN.iter().map(|r| r.to_string()).collect();
    let hand_written_allowed = format!(
        "namespaceObject != null && has(namespaceObject.metadata) && has(namespaceObject.metadata.labels) && '{label}' in namespaceObject.metadata.labels &&\nnamespaceObject.metadata.labels['{label}'] == '{allowed}'",
        label = labels::HAND_WRITTEN_BLUEPRINTS,
        allowed = labels::HAND_WRITTEN_BLUEPRINTS_ALLOWED,
    );
    let mut blueprint_updates: Vec<Validation> = blueprint_spec_fields()
        .into_iter()
        .filter(|field| !BLUEPRINT_PERSON_FIELDS.contains(&field.as_str()))
        .map(|field| {
            validation(
                format!("request.operation != 'UPDATE' ||\n{}", unchanged(&field)),
                format!(
                    "spec.{field} of a Blueprint is written by its Subscription; change the Subscription instead"
                ),
            )
        })
        .collect();
    blueprint_updates.insert(
        0,
        validation(
            "request.operation != 'CREATE'",
            format!(
                "Blueprints are written by the Subscription controller; create a Subscription, or ask a cluster admin to label the namespace {}={}",
                labels::HAND_WRITTEN_BLUEPRINTS,
                labels::HAND_WRITTEN_BLUEPRINTS_ALLOWED
            ),
        ),
    );
    blueprint_updates.push(validation(
        "request.operation != 'UPDATE' || !has(object.spec.clusterServiceVersionName) ||\n\
(has(oldObject.spec.clusterServiceVersionName) && object.spec.clusterServiceVersionName == oldObject.spec.clusterServiceVersionName) ||\n\
(has(oldObject.status) && has(oldObject.status.history) &&\n\
 oldObject.status.history.exists(r, r.clusterServiceVersionName == object.spec.clusterServiceVersionName))",
        "spec.clusterServiceVersionName may only be set back to a revision in status.history (a rollback); upgrades come from the Subscription",
    ));
    vec![
        Policy {
            suffix: "manager-written",
            why: &[
                "ClusterServiceVersions, InstallScopes and Package views are written by the manager",
                "alone (a CSV's spec becomes RBAC and Deployments), and so is the status of every",
                "windlass kind: anyone else may only change their metadata.",
            ],
            rules: vec![
                (WINDLASS, manager_written, CREATE_UPDATE),
                (WINDLASS, status_resources(), UPDATE),
            ],
            conditions: vec![],
            // The API server leaves `subResource` out of requests for the object itself.
            variables: vec![(
                "ofStatus",
                "has(request.subResource) && request.subResource == 'status'".to_string(),
            )],
            validations: vec![
                validation(
                    "!variables.ofStatus",
                    "the status of windlass objects is written by the windlass manager only",
                ),
                validation(
                    "variables.ofStatus || request.operation != 'CREATE'",
                    "ClusterServiceVersions, InstallScopes and Package views are created by the windlass manager only; install through a Subscription",
                ),
                validation(
                    "variables.ofStatus || request.operation != 'UPDATE' ||\n\
((has(object.spec) == has(oldObject.spec)) && (!has(object.spec) || object.spec == oldObject.spec))",
                    "the spec of ClusterServiceVersions, InstallScopes and Package views is written by the windlass manager only",
                ),
                validation(
                    format!(
                        "variables.ofStatus || request.operation != 'UPDATE' ||\n{}",
                        windlass_metadata_kept()
                    ),
                    "the windlass.dev/ labels and annotations (the seal, ...) of ClusterServiceVersions, InstallScopes and Package views are written by the windlass manager only",
                ),
            ],
        },
        Policy {
            suffix: "manager-secrets",
            why: &[
                "Blueprint revisions and plans (what a rollback applies) and the manager's sealing",
                "key are Secrets of windlass's own types: only the manager creates them or changes",
                "their type, data or seal.",
            ],
            rules: vec![(CORE, vec!["secrets".to_string()], CREATE_UPDATE)],
            conditions: vec![(
                "of-a-manager-type",
                format!(
                    "(has(object.type) && object.type in {types}) ||\n\
(request.operation == 'UPDATE' && has(oldObject.type) && oldObject.type in {types})",
                    types = manager_secret_types()
                ),
            )],
            variables: vec![],
            validations: vec![
                validation(
                    "request.operation != 'CREATE'",
                    "Secrets of windlass's revision, plan and seal-key types are created by the windlass manager only",
                ),
                validation(
                    format!(
                        "request.operation != 'UPDATE' ||\n\
(object.type == oldObject.type && has(object.data) == has(oldObject.data) &&\n\
 (!has(object.data) || object.data == oldObject.data) &&\n{})",
                        windlass_metadata_kept()
                    ),
                    "the type, data and windlass.dev/ labels and annotations (the seal, ...) of windlass's revision, plan and seal-key Secrets are written by the windlass manager only",
                ),
            ],
        },
        Policy {
            suffix: "blueprints",
            why: &[
                "A Blueprint is the plan its Subscription wrote: people approve it and roll it back to a",
                "revision of its history, nothing else. Where a cluster admin labelled the namespace",
                "windlass.dev/hand-written-blueprints=allowed, Blueprints may be written by hand (the",
                "Blueprint controller still decides as a Subscription would).",
            ],
            rules: vec![(WINDLASS, vec!["blueprints".to_string()], CREATE_UPDATE)],
            conditions: vec![],
            // Not a match condition: those do not see the namespace.
            variables: vec![("handWrittenAllowed", hand_written_allowed)],
            validations: blueprint_updates
                .into_iter()
                .map(|v| Validation {
                    expression: format!("variables.handWrittenAllowed ||\n{}", v.expression),
                    message: v.message,
                })
                .collect(),
        },
    ]
}

/// A YAML block scalar of `text`, each line indented by `indent` spaces.
fn block(text: &str, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let mut out = String::from("|-\n");
    for line in text.lines() {
        out.push_str(&pad);
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

fn render_policy(policy: &Policy, target: Target) -> String {
    let name = target.name(policy.suffix);
    let labels = target.labels();
    let mut out = String::new();
    for line in policy.why {
        out.push_str(&format!("# {line}\n"));
    }
    out.push_str(&format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata:\n  name: {name}\n{labels}spec:\n  failurePolicy: Fail\n  matchConstraints:\n    resourceRules:\n"
    ));
    for (groups, resources, operations) in &policy.rules {
        out.push_str(&format!(
            "    - apiGroups: {}\n      apiVersions: [\"*\"]\n      operations: {}\n      resources: {}\n",
            yaml_list(groups.iter().copied()),
            yaml_list(operations.iter().copied()),
            yaml_list(resources.iter().map(String::as_str)),
        ));
    }
    out.push_str("  matchConditions:\n");
    let exempt = format!(
        "request.userInfo.username != '{}' &&\n!('system:masters' in request.userInfo.groups)",
        target.manager()
    );
    let conditions =
        std::iter::once(("not-the-manager", exempt)).chain(policy.conditions.iter().cloned());
    for (condition, expression) in conditions {
        out.push_str(&format!(
            "  - name: {condition}\n    expression: {}",
            block(&expression, 6)
        ));
    }
    if !policy.variables.is_empty() {
        out.push_str("  variables:\n");
        for (variable, expression) in &policy.variables {
            out.push_str(&format!(
                "  - name: {variable}\n    expression: {}",
                block(expression, 6)
            ));
        }
    }
    out.push_str("  validations:\n");
    for check in &policy.validations {
        out.push_str(&format!(
            "  - expression: {}    message: {}\n    reason: Forbidden\n",
            block(&check.expression, 6),
            quoted(&check.message)
        ));
    }
    out.push_str(&format!(
        "---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata:\n  name: {name}\n{labels}spec:\n  policyName: {name}\n  validationActions: [Deny]\n  matchResources:\n    namespaceSelector:\n      matchExpressions:\n      - key: {}\n        operator: NotIn\n        values: [{}]\n",
        labels::ADMISSION_POLICIES,
        labels::ADMISSION_POLICIES_DISABLED
    ));
    out
}

fn yaml_list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let quoted: Vec<String> = items.map(quoted).collect();
    format!("[{}]", quoted.join(", "))
}

fn render(target: Target) -> String {
    policies()
        .iter()
        .map(|policy| render_policy(policy, target))
        .collect::<Vec<_>>()
        .join("---\n")
}

const GENERATED: &str = "# Generated by `make admission` from crates/api/src/bin/admissiongen.rs; edit the policies there.\n";

fn plain_files() -> Vec<(&'static str, String)> {
    vec![
        (
            "policies.yaml",
            format!(
                "{GENERATED}# What only the windlass manager (ServiceAccount windlass in windlass-system) may write,\n# refused by the API server for everyone else; the chart's templates/admission-policies.yaml\n# has the same policies.\n{}",
                render(Target::Plain)
            ),
        ),
        (
            "kustomization.yaml",
            format!(
                "{GENERATED}# `kubectl apply -k config/admission` installs the policies the Helm chart installs with\n# release name \"windlass\" in namespace windlass-system.\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- policies.yaml\n"
            ),
        ),
    ]
}

fn chart_files() -> Vec<(&'static str, String)> {
    vec![(
        "admission-policies.yaml",
        format!(
            "{GENERATED}{{{{- if .Values.admissionPolicies.enabled }}}}\n{}{{{{- end }}}}\n",
            render(Target::Chart)
        ),
    )]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (check, plain_dir, chart_dir) =
        generated::args("admissiongen [--check] CONFIG_ADMISSION_DIR CHART_TEMPLATES_DIR")?;
    std::fs::create_dir_all(&plain_dir).map_err(|e| format!("creating {plain_dir}: {e}"))?;
    let outputs = vec![
        (PathBuf::from(&plain_dir), plain_files()),
        (PathBuf::from(&chart_dir), chart_files()),
    ];
    generated::write_or_check(
        outputs,
        check,
        "the policies in crates/api/src/bin/admissiongen.rs",
        "admission",
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blueprint_fields_people_may_change_exist_in_its_schema() {
        let fields = blueprint_spec_fields();
        for field in BLUEPRINT_PERSON_FIELDS {
            assert!(fields.iter().any(|f| f == field), "spec.{field} is gone");
        }
        assert!(fields.iter().any(|f| f == "package"), "{fields:?}");
    }

    #[test]
    fn every_blueprint_field_but_a_persons_is_kept_by_a_validation() {
        let blueprints = policies()
            .into_iter()
            .find(|p| p.suffix == "blueprints")
            .unwrap();
        for field in blueprint_spec_fields() {
            let guarded = blueprints.validations.iter().any(|v| {
                v.expression
                    .contains(&format!("object.spec.{field} == oldObject"))
            });
            assert_eq!(
                guarded,
                !BLUEPRINT_PERSON_FIELDS.contains(&field.as_str())
                    || field == "clusterServiceVersionName",
                "spec.{field}"
            );
        }
    }

    #[test]
    fn the_status_of_every_windlass_kind_is_the_managers() {
        let status = status_resources();
        for crd in windlass_api::crds() {
            let plural = &crd.spec.names.plural;
            let has_status = crd.spec.versions[0]
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .and_then(|s| s.properties.as_ref())
                .is_some_and(|p| p.contains_key("status"));
            assert_eq!(
                status.contains(&format!("{plural}/status")),
                has_status,
                "{plural}/status"
            );
        }
        assert!(status.len() >= 7, "{status:?}");
    }

    #[test]
    fn the_policies_name_the_manager_and_never_a_wildcard() {
        for target in [Target::Plain, Target::Chart] {
            let text = render(target);
            assert!(text.contains(target.manager()));
            assert!(
                !text.contains("system:serviceaccounts"),
                "a group of accounts"
            );
            assert!(
                !text.contains("username.startsWith") && !text.contains("username.matches"),
                "a pattern of names"
            );
        }
    }

    #[test]
    fn the_plain_policies_are_valid_yaml_of_policies_and_bindings() {
        let text = render(Target::Plain);
        let mut kinds = Vec::new();
        for document in text.split("\n---\n") {
            let value: serde_json::Value = serde_saphyr::from_str(document).expect(document);
            kinds.push(value["kind"].as_str().unwrap().to_string());
            if value["kind"] == "ValidatingAdmissionPolicy" {
                assert!(
                    !value["spec"]["validations"].as_array().unwrap().is_empty(),
                    "{document}"
                );
            }
        }
        assert_eq!(kinds.len(), 6, "{kinds:?}");
    }
}
