//! `windlass adopt helm`: an operator a Helm release installed becomes the windlass
//! Subscription of the same operator's bundle, in place (see `adopt` for the steps). The
//! release is read from Helm's own record, its Secrets (`owner=helm`, `name=RELEASE`); the
//! objects its newest manifest names change hands.

use std::process::ExitCode;

use anyhow::{Context as _, bail};
use k8s_openapi::api::core::v1::Secret;
use kube::{
    Api, ResourceExt,
    api::{DynamicObject, GroupVersionKind, ListParams},
    discovery::{self, Scope},
};
use serde_json::json;
use windlass_adopt::helm::{self, HelmInstall, HelmRelease};

use super::adopt::{Common, finish};

#[derive(clap::Args)]
pub struct HelmArgs {
    /// The Helm release.
    pub release: String,
    #[arg(short, long, env = "WINDLASS_NAMESPACE", default_value = "default")]
    pub namespace: String,
    /// The windlass package that installs the same operator.
    #[arg(long)]
    pub package: String,
    /// The windlass Catalog that serves it.
    #[arg(long)]
    pub catalog: String,
    /// The CSV that matches what the release runs (default: `<package>.v<chart appVersion>`).
    #[arg(long)]
    pub csv: Option<String>,
    #[arg(long)]
    pub channel: Option<String>,
    /// The Subscription's approval once adopted. Manual by default: a person decides when
    /// windlass first changes what Helm ran.
    #[arg(long, default_value = "Manual", value_parser = ["Manual", "Automatic"])]
    pub approval: String,
    #[command(flatten)]
    pub common: Common,
}

pub(crate) async fn helm(args: HelmArgs) -> anyhow::Result<ExitCode> {
    let client = crate::manager::client(args.common.kubeconfig.as_ref()).await?;
    let ns = &args.namespace;
    let secrets = Api::<Secret>::namespaced(client.clone(), ns);
    let selector = format!("owner=helm,name={}", args.release);
    let found = secrets
        .list(&ListParams::default().labels(&selector))
        .await
        .with_context(|| format!("listing Helm's release Secrets ({selector}) in {ns}"))?;
    let mut history: Vec<HelmRelease> = Vec::new();
    for secret in &found.items {
        let name = secret.name_any();
        let Some(data) = secret.data.as_ref().and_then(|d| d.get("release")) else {
            eprintln!("warning: Secret {ns}/{name} has no data.release; left out of the history");
            continue;
        };
        match helm::decode_release(&name, &data.0) {
            Ok(release) => history.push(release),
            Err(error) => eprintln!("warning: {error}; left out of the history"),
        }
    }
    history.sort_by_key(|r| std::cmp::Reverse(r.version));
    let Some(release) = history.first().cloned() else {
        bail!(
            "no Helm release {} in namespace {ns}: no readable Secret labelled {selector}",
            args.release
        );
    };
    let newest_secret = format!("sh.helm.release.v1.{}.v{}", release.name, release.version);
    let keys = helm::manifest_objects(&newest_secret, &release)?;
    let mut live = Vec::new();
    let mut missing = Vec::new();
    for mut key in keys {
        let (group, version) = key
            .api_version
            .split_once('/')
            .unwrap_or(("", key.api_version.as_str()));
        let gvk = GroupVersionKind::gvk(group, version, &key.kind);
        let (resource, capabilities) =
            discovery::pinned_kind(&client, &gvk)
                .await
                .with_context(|| {
                    format!(
                        "the cluster does not serve {} {}",
                        key.api_version, key.kind
                    )
                })?;
        let api: Api<DynamicObject> = if capabilities.scope == Scope::Cluster {
            key.namespace = None;
            Api::all_with(client.clone(), &resource)
        } else {
            Api::namespaced_with(
                client.clone(),
                key.namespace.as_deref().unwrap_or(ns),
                &resource,
            )
        };
        match api
            .get_metadata_opt(&key.name)
            .await
            .with_context(|| format!("reading {key}"))?
        {
            Some(object) => live.push(json!({
                "apiVersion": resource.api_version,
                "kind": resource.kind,
                "metadata": serde_json::to_value(&object.metadata)?,
            })),
            None => missing.push(key),
        }
    }
    let csv = args.csv.clone().unwrap_or_else(|| {
        format!(
            "{}.v{}",
            args.package,
            release.chart.metadata.app_version.trim_start_matches('v')
        )
    });
    let install = HelmInstall {
        release,
        history,
        live,
        missing,
        package: args.package.clone(),
        csv,
        catalog: args.catalog.clone(),
        channel: args.channel.clone(),
        approval: args.approval.clone(),
    };
    let adoption = helm::plan(&install);
    finish(&client, std::slice::from_ref(&adoption), &args.common).await
}
