//! The manager's RBAC, written once: the rules below become the plain YAML in `config/rbac` and
//! the Helm chart's templates, which `make rbac` writes and `make verify` checks.
//!
//! Usage: `rbacgen [--check] CONFIG_RBAC_DIR CHART_TEMPLATES_DIR`. With `--check` nothing is
//! written; it fails when a file differs from what it would write.

use std::path::PathBuf;

#[path = "common/generated.rs"]
mod generated;

/// One RBAC rule and why the manager needs it (written above the rule as a comment).
struct Rule {
    why: &'static [&'static str],
    api_groups: Vec<String>,
    resources: Vec<String>,
    verbs: &'static [&'static str],
    /// Names the rule is limited to: the list written in `config/rbac`, and the chart's template
    /// expression that renders the same list from its values.
    resource_names: Option<(Vec<String>, &'static str)>,
}

const READ: &[&str] = &["get", "list", "watch"];
const READ_WRITE: &[&str] = &[
    "get", "list", "watch", "create", "update", "patch", "delete",
];
const EVENTS: &[&str] = &["create", "patch"];
const IMPERSONATE: &[&str] = &["impersonate"];

fn rule(
    why: &'static [&'static str],
    api_groups: &[&str],
    resources: &[&str],
    verbs: &'static [&'static str],
) -> Rule {
    Rule {
        why,
        api_groups: api_groups.iter().map(|g| g.to_string()).collect(),
        resources: resources.iter().map(|r| r.to_string()).collect(),
        verbs,
        resource_names: None,
    }
}

/// The ServiceAccounts the manager impersonates, by name: each namespace's install account and
/// the release account of the manager's namespace. A Subscription or InstallPolicy naming
/// another account fails with the API server's refusal until an admin adds it here (the
/// chart's `impersonation.serviceAccountNames`).
const IMPERSONATED_ACCOUNTS: [&str; 2] = ["windlass-installer", "windlass-release"];

/// The plural of every windlass kind, with `suffix` (`""`, `"/status"`, `"/finalizers"`).
/// InstallPolicies, TrustPolicies and ImageMirrorSets are left out: cluster admins write them
/// and the manager only reads them.
fn windlass_resources(suffix: &str) -> Vec<String> {
    windlass_api::crds()
        .iter()
        .filter(|crd| !ADMIN_WRITTEN.contains(&crd.spec.names.kind.as_str()))
        .map(|crd| format!("{}{suffix}", crd.spec.names.plural))
        .collect()
}

/// The kinds only cluster admins write; the manager reads them (and writes the status of
/// those with [`ADMIN_WRITTEN_WITH_STATUS`]).
const ADMIN_WRITTEN: [&str; 5] = [
    "InstallPolicy",
    "TrustPolicy",
    "ImageMirrorSet",
    "Fleet",
    "Rollout",
];
/// Of those, the kinds whose status the manager writes.
const ADMIN_WRITTEN_WITH_STATUS: [&str; 2] = ["fleets", "rollouts"];

/// What the manager may do anywhere in the cluster (the ClusterRole).
fn cluster_rules() -> Vec<Rule> {
    let group = vec![windlass_api::GROUP.to_string()];
    vec![
        Rule {
            why: &[
                "windlass's own API: the controllers watch every kind, create the Blueprints and",
                "ClusterServiceVersions they own, and delete them on uninstall.",
            ],
            api_groups: group.clone(),
            resources: windlass_resources(""),
            verbs: READ_WRITE,
            resource_names: None,
        },
        Rule {
            why: &[
                "InstallPolicies say what each namespace may install, TrustPolicies which keys must have",
                "signed what, ImageMirrorSets where the site's registries serve copies of images; cluster",
                "admins write them. Read only.",
            ],
            api_groups: group.clone(),
            resources: vec![
                "installpolicies".to_string(),
                "trustpolicies".to_string(),
                "imagemirrorsets".to_string(),
            ],
            verbs: READ,
            resource_names: None,
        },
        Rule {
            why: &[
                "A hub's Fleets and Rollouts: cluster admins write them (a Rollout acts with the member",
                "clusters' credentials); the fleet controller reads them and writes their status.",
            ],
            api_groups: group.clone(),
            resources: ADMIN_WRITTEN_WITH_STATUS.iter().map(|r| r.to_string()).collect(),
            verbs: READ,
            resource_names: None,
        },
        Rule {
            why: &["The status of Fleets and Rollouts: members selected, waves, clusters done and failed."],
            api_groups: group.clone(),
            resources: ADMIN_WRITTEN_WITH_STATUS
                .iter()
                .map(|r| format!("{r}/status"))
                .collect(),
            verbs: &["get", "update", "patch"],
            resource_names: None,
        },
        Rule {
            why: &[
                "Status is a subresource: phases, conditions, plan and history are written there.",
            ],
            api_groups: group.clone(),
            resources: windlass_resources("/status"),
            verbs: &["get", "update", "patch"],
            resource_names: None,
        },
        Rule {
            why: &[
                "Finalizers clean up cluster-scoped objects, which ownerReferences cannot; setting an",
                "ownerReference with blockOwnerDeletion on a namespaced object also needs this.",
            ],
            api_groups: group,
            resources: windlass_resources("/finalizers"),
            verbs: &["update"],
            resource_names: None,
        },
        rule(
            &[
                "Bundles ship CRDs: the Blueprint applies them (after its safety checks), the CSV controller",
                "checks required CRDs are Established and patches conversion webhooks into them. Deleting",
                "happens only when an uninstall asks for it; the manager also waits on its own CRDs.",
            ],
            &["apiextensions.k8s.io"],
            &["customresourcedefinitions"],
            READ_WRITE,
        ),
        rule(
            &[
                "What an operator's install strategy and its bundle create, in whichever namespace the",
                "operator is installed to: ServiceAccounts, webhook Services, configuration, and the",
                "webhook serving certificates (Secrets). Revisions of each Blueprint are stored as Secrets,",
                "Catalog pull secrets are read from the manager's namespace, applied release payloads",
                "are kept there as Secrets for rollbacks, and the CA ConfigMap and bearer-token Secret a",
                "ClusterVersion's spec.prometheus names are read there.",
            ],
            &[""],
            &["serviceaccounts", "services", "configmaps", "secrets"],
            READ_WRITE,
        ),
        rule(
            &[
                "The operators' Deployments (created, rolled in place on upgrade, deleted on uninstall).",
            ],
            &["apps"],
            &["deployments"],
            READ_WRITE,
        ),
        rule(
            &[
                "Health: a CSV's failure message names the failing pod and its container state, found",
                "through the Deployment's ReplicaSets. Read only.",
            ],
            &["apps"],
            &["replicasets"],
            READ,
        ),
        rule(
            &["The failing pods themselves, for the same message. Read only."],
            &[""],
            &["pods"],
            READ,
        ),
        rule(
            &[
                "Target namespaces are checked to exist and listed for AllNamespaces installs. Read only.",
            ],
            &[""],
            &["namespaces"],
            READ,
        ),
        rule(
            &[
                "Other kinds OLM allows in a bundle's manifests; applied by the Blueprint before the CSV.",
            ],
            &["policy"],
            &["poddisruptionbudgets"],
            READ_WRITE,
        ),
        rule(
            &["Another kind OLM allows in a bundle's manifests."],
            &["scheduling.k8s.io"],
            &["priorityclasses"],
            READ_WRITE,
        ),
        rule(
            &["Other kinds OLM allows in a bundle's manifests: monitoring."],
            &["monitoring.coreos.com"],
            &["prometheusrules", "servicemonitors"],
            READ_WRITE,
        ),
        rule(
            &["Another kind OLM allows in a bundle's manifests."],
            &["autoscaling.k8s.io"],
            &["verticalpodautoscalers"],
            READ_WRITE,
        ),
        rule(
            &["Other kinds OLM allows in a bundle's manifests: console additions."],
            &["console.openshift.io"],
            &[
                "consoleyamlsamples",
                "consolequickstarts",
                "consoleclidownloads",
                "consolelinks",
            ],
            READ_WRITE,
        ),
        rule(
            &[
                "Operators' `permissions` become Roles/RoleBindings and `clusterPermissions` become",
                "ClusterRoles/ClusterRoleBindings.",
                "",
                "Kubernetes refuses to let anyone create a Role granting permissions it does not hold itself,",
                "or bind a role it could not create, unless it has `escalate` and `bind`. An operator's",
                "permissions are arbitrary (any group, any resource, any verb), so windlass cannot hold them",
                "all in advance without being cluster-admin: it holds `escalate` and `bind` instead.",
                "",
                "What this means for a cluster admin: whoever can make windlass install a bundle can grant",
                "that bundle's operator any permission in the cluster. Treat create/update on",
                "windlass.dev Subscriptions, Blueprints and Catalogs like cluster-admin, exactly as with",
                "OLM's Subscriptions and CatalogSources, and only add Catalogs you trust.",
            ],
            &["rbac.authorization.k8s.io"],
            &["roles", "clusterroles"],
            &[
                "get", "list", "watch", "create", "update", "patch", "delete", "escalate", "bind",
            ],
        ),
        rule(
            &["Binding the operators' roles to their ServiceAccounts."],
            &["rbac.authorization.k8s.io"],
            &["rolebindings", "clusterrolebindings"],
            READ_WRITE,
        ),
        rule(
            &[
                "Operators' webhookdefinitions become webhook configurations carrying the generated CA.",
            ],
            &["admissionregistration.k8s.io"],
            &[
                "validatingwebhookconfigurations",
                "mutatingwebhookconfigurations",
            ],
            READ_WRITE,
        ),
        rule(
            &[
                "Installs in namespaces no InstallPolicy trusts are applied as the namespace's install",
                "ServiceAccount (impersonated), so the API server refuses whatever that account could",
                "not create or grant itself. Only ServiceAccounts: never users or groups.",
            ],
            &[""],
            &["serviceaccounts"],
            IMPERSONATE,
        )
        .named(
            IMPERSONATED_ACCOUNTS.iter().map(|n| n.to_string()).collect(),
            "{{ include \"windlass.impersonatedAccounts\" . }}",
        ),
        rule(
            &[
                "Events on each phase change and plan step, recorded in the namespace of the object.",
            ],
            &["", "events.k8s.io"],
            &["events"],
            EVENTS,
        ),
    ]
}

/// What the manager may do with OpenShift's API, only with `--release-api=openshift`.
fn openshift_rules() -> Vec<Rule> {
    vec![
        rule(
            &[
                "With --release-api=openshift the ClusterVersion controller reads OpenShift's",
                "ClusterVersion (cluster admins and `oc adm upgrade` write its spec).",
            ],
            &["config.openshift.io"],
            &["clusterversions"],
            READ,
        ),
        rule(
            &["And writes its status, in OpenShift's shape."],
            &["config.openshift.io"],
            &["clusterversions/status"],
            &["get", "update", "patch"],
        ),
        rule(
            &[
                "ClusterOperators' Available, Degraded, Progressing and Upgradeable make the release's",
                "verdict. Read only: operators write their own.",
            ],
            &["config.openshift.io"],
            &["clusteroperators"],
            READ,
        ),
    ]
}

/// What a hub's fleet controller may do in a member cluster: no more than it writes there.
fn fleet_member_rules() -> Vec<Rule> {
    vec![
        rule(
            &[
                "The Subscription a Rollout rolls out: read, and created or changed by server-side apply",
                "(in whichever namespace the Rollout names; bind it with a RoleBinding per namespace",
                "instead of the ClusterRoleBinding to narrow that).",
            ],
            &[windlass_api::GROUP],
            &["subscriptions"],
            &["get", "create", "patch"],
        ),
        rule(
            &[
                "The Subscription's Blueprint: read for its phase and plan, patched to approve the plan a",
                "person approved in the hub (spec.approvedPlan) or to roll back to a stored revision.",
            ],
            &[windlass_api::GROUP],
            &["blueprints"],
            &["get", "patch"],
        ),
        rule(
            &["A release Rollout: the ClusterVersion's desired update, read and patched."],
            &[windlass_api::GROUP],
            &["clusterversions"],
            &["get", "patch"],
        ),
    ]
}

/// Why the fleet member role exists.
const FLEET_MEMBER_WHY: &str = "\
# For member clusters of a fleet, not the hub: apply this in each member, then make a token for
# the windlass-fleet ServiceAccount and register it in the hub (`windlass fleet register`; see
# the README). It is all a hub can do in the member: no Secrets, no workloads, no RBAC.
";

/// Why the OpenShift role exists.
const OPENSHIFT_WHY: &str = "\
# Only for a manager run with --release-api=openshift (the chart's release.api: openshift):
# OpenShift's ClusterVersion and ClusterOperators.
";

/// What the manager may do only in its own namespace (the leader-election Role).
fn namespace_rules() -> Vec<Rule> {
    vec![
        rule(
            &["Leader election: one coordination Lease in the manager's own namespace."],
            &["coordination.k8s.io"],
            &["leases"],
            READ_WRITE,
        ),
        rule(
            &[
                "Events about the manager itself (leader changes) in its own namespace; the ClusterRole grants",
                "events too, this keeps the leader-election Role complete on its own.",
            ],
            &["", "events.k8s.io"],
            &["events"],
            EVENTS,
        ),
    ]
}

/// A YAML flow list of double-quoted strings: `["get", "list"]`.
fn flow_list<S: AsRef<str>>(items: &[S]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|item| serde_json::Value::from(item.as_ref()).to_string())
        .collect();
    format!("[{}]", quoted.join(", "))
}

impl Rule {
    fn named(mut self, names: Vec<String>, chart_expression: &'static str) -> Rule {
        self.resource_names = Some((names, chart_expression));
        self
    }
}

/// Where rules are rendered: the plain YAML or the chart's templates.
#[derive(Clone, Copy, PartialEq)]
enum Target {
    Plain,
    Chart,
}

fn render_rules(rules: &[Rule], target: Target) -> String {
    let mut out = String::from("rules:\n");
    for rule in rules {
        for line in rule.why {
            if line.is_empty() {
                out.push_str("#\n");
            } else {
                out.push_str(&format!("# {line}\n"));
            }
        }
        out.push_str(&format!("- apiGroups: {}\n", flow_list(&rule.api_groups)));
        out.push_str(&format!("  resources: {}\n", flow_list(&rule.resources)));
        out.push_str(&format!("  verbs: {}\n", flow_list(rule.verbs)));
        match (&rule.resource_names, target) {
            (None, _) => {}
            (Some((names, _)), Target::Plain) => {
                out.push_str(&format!("  resourceNames: {}\n", flow_list(names)))
            }
            (Some((_, expression)), Target::Chart) => {
                out.push_str(&format!("  resourceNames: {expression}\n"))
            }
        }
    }
    out
}

const GENERATED: &str =
    "# Generated by `make rbac` from crates/api/src/bin/rbacgen.rs; edit the rules there.\n";

// No `\` continuation here: it would eat the indentation.
const PLAIN_LABELS: &str = "  labels:
    app.kubernetes.io/name: windlass
    app.kubernetes.io/component: manager
    app.kubernetes.io/part-of: windlass
";

const CHART_LABELS: &str = "  labels:
    {{- include \"windlass.labels\" . | nindent 4 }}
";

/// `(file name, text)` for `config/rbac`: the objects the chart makes for release `windlass` in
/// namespace `windlass-system`.
fn plain_files() -> Vec<(&'static str, String)> {
    let cluster_role = format!(
        "{GENERATED}\
# The permissions of the windlass manager across the cluster, for installs without helm (the
# Helm chart's templates/clusterrole.yaml has the same rules); each rule says why it exists.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: windlass-manager
{PLAIN_LABELS}{}",
        render_rules(&cluster_rules(), Target::Plain)
    );
    let role = format!(
        "{GENERATED}\
# Permissions the manager needs only in its own namespace (windlass-system); the Helm chart's
# templates/role.yaml has the same rules.
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: windlass-leader-election
  namespace: windlass-system
{PLAIN_LABELS}{}",
        render_rules(&namespace_rules(), Target::Plain)
    );
    let custom_resources = format!(
        "{GENERATED}\
{CUSTOM_RESOURCES_WHY}apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: windlass-manager-custom-resources
{PLAIN_LABELS}{}---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: windlass-manager-custom-resources
{PLAIN_LABELS}roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: windlass-manager-custom-resources
subjects:
- kind: ServiceAccount
  name: windlass
  namespace: windlass-system
",
        aggregation_rule()
    );
    let view = format!(
        "{GENERATED}{VIEW_WHY}apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: windlass-view
{PLAIN_LABELS}{}{}",
        VIEW_AGGREGATION,
        render_rules(&view_rules(), Target::Plain)
    );
    let package_reader = format!(
        "{GENERATED}{}",
        package_reader("windlass-package-reader", PLAIN_LABELS)
    );
    let openshift = format!(
        "{GENERATED}{OPENSHIFT_WHY}apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: windlass-manager-openshift
{PLAIN_LABELS}{}---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: windlass-manager-openshift
{PLAIN_LABELS}roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: windlass-manager-openshift
subjects:
- kind: ServiceAccount
  name: windlass
  namespace: windlass-system
",
        render_rules(&openshift_rules(), Target::Plain)
    );
    let fleet_member = format!(
        "{GENERATED}{FLEET_MEMBER_WHY}apiVersion: v1
kind: ServiceAccount
metadata:
  name: windlass-fleet
  namespace: windlass-system
{PLAIN_LABELS}---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: windlass-fleet-member
{PLAIN_LABELS}{}---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: windlass-fleet-member
{PLAIN_LABELS}roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: windlass-fleet-member
subjects:
- kind: ServiceAccount
  name: windlass-fleet
  namespace: windlass-system
",
        render_rules(&fleet_member_rules(), Target::Plain)
    );
    vec![
        ("cluster_role.yaml", cluster_role),
        ("custom_resources_role.yaml", custom_resources),
        ("role.yaml", role),
        ("view_role.yaml", view),
        ("package_reader_role.yaml", package_reader),
        ("openshift_role.yaml", openshift),
        ("fleet_member.yaml", fleet_member),
    ]
}

/// Why everyone who may view a namespace may read its InstallScope.
const VIEW_WHY: &str = "\
# What a namespace's operators may do (its InstallScope) is readable by everyone who may view
# the namespace: Kubernetes aggregates this role into the built-in view, edit and admin roles.
# Package views are cluster-scoped, so this role shows them to those bound to it cluster-wide;
# the windlass-package-reader binding shows them to every signed-in user.
# Read only: windlass writes InstallScopes and Packages, and nothing reads them back to decide
# an install.
";

/// Why every signed-in user may read the Package views.
const PACKAGE_READER_WHY: &str = "\
# What the catalogs offer (`kubectl get packages.windlass.dev`) is the cluster's hub page: every
# signed-in user may read it, as tenants must to know what they can subscribe to. Package views
# are cluster-scoped, which a namespace's view/edit/admin binding does not reach. Read only:
# only the manager writes them.
";

/// The labels that aggregate the view role into Kubernetes' user-facing roles.
const VIEW_AGGREGATION: &str = "    rbac.authorization.k8s.io/aggregate-to-view: \"true\"
    rbac.authorization.k8s.io/aggregate-to-edit: \"true\"
    rbac.authorization.k8s.io/aggregate-to-admin: \"true\"
";

/// What the view role grants: reading InstallScopes and Package views.
fn view_rules() -> Vec<Rule> {
    vec![
        rule(
            &["A namespace's InstallScope: what operators installed there may do."],
            &[windlass_api::GROUP],
            &["installscopes"],
            READ,
        ),
        package_reader_rule(),
    ]
}

/// Reading the Package views: what the catalogs offer.
fn package_reader_rule() -> Rule {
    rule(
        &["Package views: what the catalogs offer, and whether it is listed."],
        &[windlass_api::GROUP],
        &["packages"],
        READ,
    )
}

/// The ClusterRole and ClusterRoleBinding that let every signed-in user read Package views,
/// named with `name`.
fn package_reader(name: &str, labels: &str) -> String {
    format!(
        "{PACKAGE_READER_WHY}apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {name}
{labels}{}---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {name}
{labels}roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {name}
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: Group
  name: system:authenticated
",
        render_rules(&[package_reader_rule()], Target::Plain)
    )
}

/// Why the manager reads custom resources, and how it is limited to those of its own CRDs.
const CUSTOM_RESOURCES_WHY: &str = "\
# CRD upgrade safety: before a bundle's CRD replaces a live one, every existing custom resource
# of each version served by both is validated against the new schema, so the manager must read
# the custom resources of the CRDs it upgrades, and only those. For each such CRD it writes a
# ClusterRole granting get and list on that one resource, labelled
# windlass.dev/aggregate-to-manager=true; Kubernetes aggregates those into this role, which
# has no rules of its own. Operand snapshots and rollbacks do the same for the CRDs an install
# owns, with get, list and patch (windlass-keep.<crd>): read before an upgrade, specs written
# back by its rollback.
";

/// The aggregation rule of the custom-resources role. It has no `rules`: Kubernetes writes them,
/// and an apply that named them would reset them on every install.
fn aggregation_rule() -> String {
    format!(
        "aggregationRule:
  clusterRoleSelectors:
  - matchLabels:
      {}: \"true\"
",
        windlass_api::names::labels::AGGREGATE_TO_MANAGER
    )
}

/// `(file name, text)` for the chart's `templates/`: the roles and their bindings.
fn chart_files() -> Vec<(&'static str, String)> {
    let cluster_role = format!(
        "{GENERATED}\
# The permissions of the windlass manager across the cluster (config/rbac/cluster_role.yaml
# has the same rules, for installs without helm).
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{{{ include \"windlass.fullname\" . }}}}-manager
{CHART_LABELS}{}---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{{{ include \"windlass.fullname\" . }}}}-manager
{CHART_LABELS}roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{{{ include \"windlass.fullname\" . }}}}-manager
subjects:
- kind: ServiceAccount
  name: {{{{ include \"windlass.serviceAccountName\" . }}}}
  namespace: {{{{ .Release.Namespace }}}}
",
        render_rules(&cluster_rules(), Target::Chart)
    );
    let role = format!(
        "{GENERATED}\
# Permissions the manager needs only in its own namespace (config/rbac/role.yaml has the same
# rules).
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{{{ include \"windlass.fullname\" . }}}}-leader-election
  namespace: {{{{ .Release.Namespace }}}}
{CHART_LABELS}{}---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{{{ include \"windlass.fullname\" . }}}}-leader-election
  namespace: {{{{ .Release.Namespace }}}}
{CHART_LABELS}roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{{{ include \"windlass.fullname\" . }}}}-leader-election
subjects:
- kind: ServiceAccount
  name: {{{{ include \"windlass.serviceAccountName\" . }}}}
  namespace: {{{{ .Release.Namespace }}}}
",
        render_rules(&namespace_rules(), Target::Chart)
    );
    let custom_resources = format!(
        "{GENERATED}\
{CUSTOM_RESOURCES_WHY}apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{{{ include \"windlass.fullname\" . }}}}-manager-custom-resources
{CHART_LABELS}{}---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{{{ include \"windlass.fullname\" . }}}}-manager-custom-resources
{CHART_LABELS}roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{{{ include \"windlass.fullname\" . }}}}-manager-custom-resources
subjects:
- kind: ServiceAccount
  name: {{{{ include \"windlass.serviceAccountName\" . }}}}
  namespace: {{{{ .Release.Namespace }}}}
",
        aggregation_rule()
    );
    let view = format!(
        "{GENERATED}{VIEW_WHY}apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{{{ include \"windlass.fullname\" . }}}}-view
{CHART_LABELS}{}{}",
        VIEW_AGGREGATION,
        render_rules(&view_rules(), Target::Chart)
    );
    let package_reader = format!(
        "{GENERATED}{{{{- if .Values.packageView.readableByAllUsers }}}}\n{}{{{{- end }}}}\n",
        package_reader(
            "{{ include \"windlass.fullname\" . }}-package-reader",
            CHART_LABELS
        )
    );
    let openshift = format!(
        "{GENERATED}{{{{- if eq .Values.release.api \"openshift\" }}}}\n{OPENSHIFT_WHY}apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{{{ include \"windlass.fullname\" . }}}}-manager-openshift
{CHART_LABELS}{}---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{{{ include \"windlass.fullname\" . }}}}-manager-openshift
{CHART_LABELS}roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{{{ include \"windlass.fullname\" . }}}}-manager-openshift
subjects:
- kind: ServiceAccount
  name: {{{{ include \"windlass.serviceAccountName\" . }}}}
  namespace: {{{{ .Release.Namespace }}}}
{{{{- end }}}}
",
        render_rules(&openshift_rules(), Target::Chart)
    );
    vec![
        ("clusterrole.yaml", cluster_role),
        ("clusterrole-custom-resources.yaml", custom_resources),
        ("role.yaml", role),
        ("clusterrole-view.yaml", view),
        ("clusterrole-package-reader.yaml", package_reader),
        ("clusterrole-openshift.yaml", openshift),
    ]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (check, plain_dir, chart_dir) =
        generated::args("rbacgen [--check] CONFIG_RBAC_DIR CHART_TEMPLATES_DIR")?;
    let outputs = vec![
        (PathBuf::from(&plain_dir), plain_files()),
        (PathBuf::from(&chart_dir), chart_files()),
    ];
    generated::write_or_check(
        outputs,
        check,
        "the rules in crates/api/src/bin/rbacgen.rs",
        "rbac",
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, Role};

    use super::*;

    fn policy_rules(rules: &[Rule]) -> Vec<PolicyRule> {
        rules
            .iter()
            .map(|rule| PolicyRule {
                api_groups: Some(rule.api_groups.clone()),
                resources: Some(rule.resources.clone()),
                verbs: rule.verbs.iter().map(|v| v.to_string()).collect(),
                resource_names: rule.resource_names.as_ref().map(|(names, _)| names.clone()),
                ..Default::default()
            })
            .collect()
    }

    #[test]
    fn every_rule_says_why() {
        for rule in cluster_rules().iter().chain(&namespace_rules()) {
            assert!(
                rule.why.first().is_some_and(|line| !line.is_empty()),
                "{:?} has no reason",
                rule.resources
            );
        }
    }

    #[test]
    fn every_windlass_kind_is_granted_with_its_status_and_finalizers() {
        let rules = cluster_rules();
        for crd in windlass_api::crds() {
            let plural = crd.spec.names.plural;
            if ADMIN_WRITTEN.contains(&crd.spec.names.kind.as_str()) {
                let read_only = rules
                    .iter()
                    .any(|r| r.resources.contains(&plural) && r.verbs == READ);
                assert!(read_only, "{plural} is granted read only");
                assert!(
                    !rules
                        .iter()
                        .any(|r| r.resources.contains(&plural) && r.verbs != READ),
                    "the manager never writes {plural}"
                );
                let status = format!("{plural}/status");
                assert_eq!(
                    rules.iter().any(|r| r.resources.contains(&status)),
                    ADMIN_WRITTEN_WITH_STATUS.contains(&plural.as_str()),
                    "{status}"
                );
                continue;
            }
            for resource in [
                plural.clone(),
                format!("{plural}/status"),
                format!("{plural}/finalizers"),
            ] {
                assert!(
                    rules.iter().any(|r| r.api_groups == [windlass_api::GROUP]
                        && r.resources.contains(&resource)),
                    "{resource} is not granted"
                );
            }
        }
    }

    #[test]
    fn the_plain_yaml_parses_back_to_the_rules() {
        let files = plain_files();
        let cluster_role: ClusterRole = serde_saphyr::from_str(&files[0].1).unwrap();
        assert_eq!(
            cluster_role.metadata.name.as_deref(),
            Some("windlass-manager")
        );
        assert_eq!(cluster_role.rules.unwrap(), policy_rules(&cluster_rules()));
        let role: Role = serde_saphyr::from_str(&files[2].1).unwrap();
        assert_eq!(role.metadata.namespace.as_deref(), Some("windlass-system"));
        assert_eq!(role.rules.unwrap(), policy_rules(&namespace_rules()));
    }

    #[test]
    fn custom_resources_are_read_only_through_the_aggregated_role() {
        // No rule names every resource: secrets and nodes are read only where a rule says so.
        for rule in cluster_rules() {
            assert!(
                !rule.resources.iter().any(|r| r == "*")
                    && !rule.api_groups.iter().any(|g| g == "*"),
                "a wildcard rule: {:?} {:?}",
                rule.api_groups,
                rule.resources
            );
        }
        let files = plain_files();
        let first = files[1].1.split("\n---\n").next().unwrap();
        let role: ClusterRole = serde_saphyr::from_str(first).unwrap();
        let selectors = role
            .aggregation_rule
            .unwrap()
            .cluster_role_selectors
            .unwrap();
        assert_eq!(
            selectors[0].match_labels.as_ref().unwrap()
                [windlass_api::names::labels::AGGREGATE_TO_MANAGER],
            "true"
        );
        assert_eq!(role.rules, None);
    }

    #[test]
    fn names_that_need_quoting_are_quoted() {
        assert_eq!(flow_list(&["", "*", "apps"]), r#"["", "*", "apps"]"#);
    }
}
