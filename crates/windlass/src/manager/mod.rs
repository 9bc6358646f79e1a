//! `windlass manager`: every controller in one process, with leader election, metrics, health
//! endpoints and graceful shutdown.

mod http;
mod leader;
mod metrics;
mod scope;

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::{Context as _, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client, Config,
    config::{KubeConfigOptions, Kubeconfig},
};
use tokio::sync::watch;
use tracing::{info, warn};

#[derive(clap::Args)]
pub struct ManagerArgs {
    /// Kubeconfig to use out of cluster; in cluster (and by default) the usual discovery applies.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The namespace the manager runs in (leader-election Lease, pull secrets).
    #[arg(long, env = "POD_NAMESPACE", default_value = "windlass-system")]
    pub namespace: String,
    /// Only one replica reconciles at a time; the others wait on a coordination Lease.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub leader_elect: bool,
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub metrics_bind_address: SocketAddr,
    #[arg(long, default_value = "127.0.0.1:8081")]
    pub health_probe_bind_address: SocketAddr,
    /// trace, debug, info, warn or error (or a tracing filter such as `windlass=debug,kube=info`).
    #[arg(long, default_value = "info")]
    pub log_level: String,
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
    /// Do not serve the sample catalog compiled into the manager.
    #[arg(long)]
    pub no_builtin_catalog: bool,
    /// The controllers to run, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = scope::Controller::ALL)]
    pub controllers: Vec<scope::Controller>,
    /// Watch and reconcile the objects of this namespace only (default: every namespace);
    /// checks that must see every namespace still do. Catalogs are cluster-scoped: leave
    /// `catalog` out of --controllers when another manager serves them.
    #[arg(long, env = "WATCH_NAMESPACE")]
    pub watch_namespace: Option<String>,
    /// The ServiceAccount (in --namespace) that release payloads are applied as; a cluster
    /// admin binds it to what a platform release may create.
    #[arg(long, default_value = windlass_clusterversion_controller::RELEASE_SERVICE_ACCOUNT)]
    pub release_service_account: String,
    /// The ClusterVersion API the release controller serves: `windlass` (the windlass.dev
    /// kind) or `openshift` (OpenShift's config.openshift.io/v1 ClusterVersion and
    /// ClusterOperator, whose CRDs must be installed: OpenShift's own, or `config/openshift`).
    #[arg(long, default_value = "windlass")]
    pub release_api: windlass_clusterversion_controller::ReleaseApi,
    /// How many bytes of pulled bundle content (parsed manifests) stay cached for installs
    /// and rollbacks; past it the least recently used bundle is dropped and pulled again when
    /// next needed.
    #[arg(long, default_value_t = windlass_catalog_store::DEFAULT_BUDGET_BYTES)]
    pub bundle_cache_bytes: usize,
}

/// With `--release-api=openshift`: OpenShift's CRDs, OpenShift's own or `config/openshift`'s.
const OPENSHIFT_CRDS: [&str; 2] = [
    "clusterversions.config.openshift.io",
    "clusteroperators.config.openshift.io",
];

/// The CRDs the controllers need Established before they start.
const CRDS: [&str; 12] = [
    "catalogs.windlass.dev",
    "packages.windlass.dev",
    "subscriptions.windlass.dev",
    "blueprints.windlass.dev",
    "clusterserviceversions.windlass.dev",
    "installpolicies.windlass.dev",
    "installscopes.windlass.dev",
    "clusterversions.windlass.dev",
    "trustpolicies.windlass.dev",
    "imagemirrorsets.windlass.dev",
    "fleets.windlass.dev",
    "rollouts.windlass.dev",
];

pub fn run(args: ManagerArgs) -> anyhow::Result<std::process::ExitCode> {
    init_logging(&args.log_level, &args.log_format)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run_async(args))?;
    Ok(std::process::ExitCode::SUCCESS)
}

fn init_logging(level: &str, format: &str) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .with_context(|| format!("--log-level {level:?}"))?;
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    if format == "json" {
        builder.json().init()
    } else {
        builder.init()
    }
    Ok(())
}

pub(crate) async fn client(kubeconfig: Option<&PathBuf>) -> anyhow::Result<Client> {
    Ok(Client::try_from(config(kubeconfig).await?)?)
}

/// The manager's connection settings: the kubeconfig or the in-cluster account, with the user
/// agent that names the manager in audit logs (kept when it impersonates an install identity).
pub(crate) async fn config(kubeconfig: Option<&PathBuf>) -> anyhow::Result<Config> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?
        }
        None => Config::infer()
            .await
            .context("no kubeconfig and not in a cluster")?,
    };
    let mut config = config;
    // Names the manager in audit logs, so its writes can be told from everyone else's.
    let agent = format!("windlass-manager/{}", env!("CARGO_PKG_VERSION"));
    config.headers.push((
        hyper::header::USER_AGENT,
        hyper::header::HeaderValue::from_str(&agent)?,
    ));
    Ok(config)
}

async fn run_async(args: ManagerArgs) -> anyhow::Result<()> {
    let config = config(args.kubeconfig.as_ref()).await?;
    let client = Client::try_from(config.clone())?;
    // Tenants' installs are applied as their install ServiceAccount, by impersonation.
    let identities = windlass_kit::Identities::new(config, client.clone());
    let scope = scope::scope(args.watch_namespace.as_deref());
    let version = client
        .apiserver_version()
        .await
        .context("the apiserver does not answer")?;
    info!(server = %version.git_version, namespace = %args.namespace, "windlass manager starting");
    if args.no_builtin_catalog {
        info!("built-in catalog disabled");
    }
    info!(controllers = ?args.controllers, %scope, "reconciling");
    let runs = |controller| args.controllers.contains(&controller);
    if runs(scope::Controller::Package) && !runs(scope::Controller::Catalog) {
        warn!(
            "the package controller shows what this process's catalog controller serves; without `catalog` in --controllers it does not run"
        );
    }

    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let state = Arc::new(http::State::default());
    let registry = metrics::Registry::new();
    tokio::spawn(http::serve(
        args.health_probe_bind_address,
        http::Endpoint::Health,
        state.clone(),
        registry.clone(),
        shutdown_rx.clone(),
    ));
    tokio::spawn(http::serve(
        args.metrics_bind_address,
        http::Endpoint::Metrics,
        state.clone(),
        registry.clone(),
        shutdown_rx.clone(),
    ));
    tokio::spawn(async move {
        wait_for_signal().await;
        info!("shutting down");
        let _ = shutdown_tx.send(true);
    });

    let mut leadership = None;
    if args.leader_elect {
        let lease = leader::Lease::new(client.clone(), &args.namespace, "windlass-manager");
        info!(identity = %lease.identity(), "waiting for leadership");
        match lease.acquire(shutdown_rx.clone()).await? {
            Some(held) => leadership = Some(held),
            None => return Ok(()),
        }
        info!("became leader");
    }

    for crd in CRDS {
        wait_established(&client, crd, shutdown_rx.clone()).await?;
    }
    if args.release_api == windlass_clusterversion_controller::ReleaseApi::OpenShift
        && runs(scope::Controller::ClusterVersion)
    {
        for crd in OPENSHIFT_CRDS {
            wait_established(&client, crd, shutdown_rx.clone()).await?;
        }
    }
    if runs(scope::Controller::Catalog) {
        windlass_catalog_controller::ensure_builtin(&client, !args.no_builtin_catalog)
            .await
            .context("creating the built-in Catalog")?;
    }
    // Revisions and CSVs are sealed under a key only the manager reads; every replica shares it.
    let seal_key = windlass_kit::seal_key::load_or_create(&client, &args.namespace)
        .await
        .with_context(|| format!("loading the sealing key in namespace {}", args.namespace))?;
    // Webhook serving certificates are signed by a CA only the manager reads.
    let webhook_ca = if runs(scope::Controller::ClusterServiceVersion) {
        Some(
            windlass_csv_controller::ca_store::load_or_create(&client, &args.namespace)
                .await
                .with_context(|| {
                    format!("loading the webhook CA in namespace {}", args.namespace)
                })?,
        )
    } else {
        None
    };
    state.set_ready(true);
    let store = windlass_catalog_store::CatalogStore::with_cache_budget(args.bundle_cache_bytes);
    if runs(scope::Controller::Catalog) || runs(scope::Controller::Blueprint) {
        watch_mirrors(&client, &store).await;
    }
    // One signature checker for every controller: verdicts are cached once per digest.
    let trust = Arc::new(windlass_kit::TrustGate::new(
        client.clone(),
        args.namespace.clone(),
    ));
    // Boxed: the controllers' futures together are too large to move on the stack.
    let controllers = Box::pin(async {
        tokio::join!(
            scope::only_if(
                runs(scope::Controller::Catalog),
                windlass_catalog_controller::run(
                    client.clone(),
                    store.clone(),
                    registry.controller("catalog"),
                    // Pull secrets live in the namespace the manager was told it runs in.
                    windlass_catalog_controller::Options::new(
                        args.namespace.clone(),
                        trust.clone()
                    ),
                    until_shutdown(shutdown_rx.clone()),
                ),
            ),
            scope::only_if(
                runs(scope::Controller::Subscription),
                windlass_subscription_controller::run(
                    client.clone(),
                    scope.clone(),
                    store.clone(),
                    registry.controller("subscription"),
                    until_shutdown(shutdown_rx.clone()),
                ),
            ),
            scope::only_if(
                runs(scope::Controller::Blueprint),
                windlass_blueprint_controller::run(
                    client.clone(),
                    identities.clone(),
                    scope.clone(),
                    store.clone(),
                    registry.controller("blueprint"),
                    windlass_blueprint_controller::Checks {
                        seal_key: seal_key.clone(),
                        trust: trust.clone(),
                    },
                    until_shutdown(shutdown_rx.clone()),
                ),
            ),
            async {
                if let Some(webhook_ca) = webhook_ca.clone() {
                    windlass_csv_controller::run(
                        client.clone(),
                        identities.clone(),
                        scope.clone(),
                        windlass_csv_controller::Keys {
                            seal_key: seal_key.clone(),
                            webhook_ca,
                        },
                        registry.controller("clusterserviceversion"),
                        until_shutdown(shutdown_rx.clone()),
                    )
                    .await;
                }
            },
            // The platform's release is cluster-wide: a manager confined to one namespace leaves it alone.
            scope::only_if(
                runs(scope::Controller::ClusterVersion) && args.watch_namespace.is_none(),
                async {
                    let options = windlass_clusterversion_controller::Options {
                        release_account_namespace: args.namespace.clone(),
                        release_account_name: args.release_service_account.clone(),
                        trust: trust.clone(),
                        api: args.release_api,
                    };
                    if let Err(error) = windlass_clusterversion_controller::run(
                        client.clone(),
                        identities.clone(),
                        options,
                        seal_key.clone(),
                        registry.controller("clusterversion"),
                        until_shutdown(shutdown_rx.clone()),
                    )
                    .await
                    {
                        tracing::error!(%error, "the ClusterVersion controller could not start");
                    }
                }
            ),
            // Package views are cluster-wide and need this process's served catalogs.
            scope::only_if(
                runs(scope::Controller::Package)
                    && runs(scope::Controller::Catalog)
                    && args.watch_namespace.is_none(),
                windlass_package_controller::run(
                    client.clone(),
                    store.clone(),
                    registry.controller("package"),
                    until_shutdown(shutdown_rx.clone()),
                ),
            ),
            // A hub's rollouts are cluster-scoped and read member Secrets from the manager's
            // namespace; a cluster with no Rollout spends nothing on it.
            scope::only_if(
                runs(scope::Controller::Fleet) && args.watch_namespace.is_none(),
                windlass_fleet_controller::run(
                    client.clone(),
                    args.namespace.clone(),
                    registry.controller("fleet"),
                    until_shutdown(shutdown_rx.clone()),
                ),
            ),
            scope::only_if(
                runs(scope::Controller::InstallScope),
                windlass_install_scope_controller::run(
                    client.clone(),
                    scope.clone(),
                    registry.controller("installscope"),
                    until_shutdown(shutdown_rx.clone()),
                ),
            ),
        );
    });
    match leadership {
        Some(held) => {
            tokio::select! {
                () = controllers => {}
                lost = held.keep(shutdown_rx.clone()) => {
                    if let Err(error) = lost {
                        // Another replica may already be reconciling: stop at once rather than
                        // race it, and let the Deployment restart us as a follower.
                        bail!("lost leadership: {error:#}");
                    }
                }
            }
            // The controllers have stopped (or were dropped): hand over without waiting for
            // the Lease to expire.
            held.release().await;
        }
        None => controllers.await,
    }
    info!("stopped");
    Ok(())
}

/// Keeps the store's mirror rules current from the cluster's ImageMirrorSets, and waits for
/// the first list: installs decide their images' mirrors once, so controllers should not
/// start without the rules.
async fn watch_mirrors(client: &Client, store: &Arc<windlass_catalog_store::CatalogStore>) {
    let (listed, first_list) = tokio::sync::oneshot::channel();
    let target = store.clone();
    tokio::spawn(windlass_kit::mirrors::watch(
        client.clone(),
        move |rules| target.set_mirrors(rules),
        listed,
    ));
    match tokio::time::timeout(windlass_kit::mirrors::FIRST_LIST_PATIENCE, first_list).await {
        Ok(Ok(())) => info!("image mirror rules read"),
        _ => warn!(
            "ImageMirrorSets could not be listed yet; starting without mirror rules until they are"
        ),
    }
}

fn until_shutdown(
    mut shutdown: watch::Receiver<bool>,
) -> impl std::future::Future<Output = ()> + Send + Sync + 'static {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = shutdown.wait_for(|stop| *stop).await;
        let _ = tx.send(());
    });
    async move {
        let _ = rx.await;
    }
}

async fn wait_established(
    client: &Client,
    name: &str,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    let mut warned = false;
    loop {
        if *shutdown.borrow() {
            bail!("shut down while waiting for CRD {name}");
        }
        let established = crds.get_opt(name).await?.is_some_and(|crd| {
            crd.status.and_then(|s| s.conditions).is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            })
        });
        if established {
            return Ok(());
        }
        if !warned {
            warn!(
                crd = name,
                "waiting for the CRD to be Established (install config/crd or the Helm chart)"
            );
            warned = true;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing a SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
