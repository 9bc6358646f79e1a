//! `windlass hub`: the hub page and its read API.
//!
//! On a workstation it acts with your kubeconfig, listens on 127.0.0.1 and prints a sign-in
//! link carrying a random token (anyone else on the machine can reach the port, not the
//! token). In the cluster (`--auth token`, what the Helm chart runs) each person signs in
//! with their own Kubernetes token, checked with a TokenReview and used for everything they
//! do, so their RBAC decides.

use std::{io::Write as _, net::SocketAddr, path::PathBuf, process::ExitCode};

use anyhow::Context as _;
use windlass_hub_server::{AuthMode, Hub};

#[derive(clap::Args)]
pub struct HubArgs {
    /// Where to listen; port 0 picks a free port (the printed link names it).
    #[arg(long, default_value = "127.0.0.1:8686")]
    pub listen: SocketAddr,
    /// How people sign in: `kubeconfig` (act with this kubeconfig; a launch token guards the
    /// page) or `token` (each person's own Kubernetes bearer token, checked with TokenReview;
    /// in the cluster).
    #[arg(long, default_value = "kubeconfig", value_parser = ["kubeconfig", "token"])]
    pub auth: String,
    /// Kubeconfig to act with (`--auth kubeconfig`), or to reach the API server and review
    /// tokens with (`--auth token`; in a pod the ServiceAccount is used).
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The namespace Catalogs' pull Secrets live in (the manager's).
    #[arg(long, env = "POD_NAMESPACE", default_value = "windlass-system")]
    pub manager_namespace: String,
    /// The hub is reached over HTTPS (for example through an Ingress): cookies get `Secure`
    /// and only `https://` origins count as the hub's own.
    #[arg(long, default_value_t = false)]
    pub secure_cookies: bool,
    /// Use this launch token (`--auth kubeconfig`) instead of a random one; read it from the
    /// environment so it stays out of process listings.
    #[arg(long, env = "WINDLASS_HUB_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    #[arg(long, default_value = "info")]
    pub log_level: String,
}

pub fn run(args: HubArgs) -> anyhow::Result<ExitCode> {
    let filter = tracing_subscriber::EnvFilter::try_new(&args.log_level)
        .with_context(|| format!("--log-level {:?}", args.log_level))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run_async(args))
}

async fn run_async(args: HubArgs) -> anyhow::Result<ExitCode> {
    let mut config = crate::manager::config(args.kubeconfig.as_ref()).await?;
    config
        .headers
        .retain(|(name, _)| *name != hyper::header::USER_AGENT);
    let agent = format!("windlass-hub/{}", env!("CARGO_PKG_VERSION"));
    config
        .headers
        .push((hyper::header::USER_AGENT, agent.parse()?));
    let (mode, launch_token) = match args.auth.as_str() {
        "token" => (
            AuthMode::BearerToken {
                reviewer: kube::Client::try_from(config.clone())?,
                base: Box::new(config),
            },
            None,
        ),
        _ => {
            let token = args
                .token
                .clone()
                .unwrap_or_else(|| windlass_hub_server::auth::random_hex(24));
            (
                AuthMode::Kubeconfig {
                    client: kube::Client::try_from(config)?,
                    launch_token: token.clone(),
                },
                Some(token),
            )
        }
    };
    let (listener, addr) = windlass_hub_server::bind(args.listen).await?;
    let hub = Hub::new(mode, &args.manager_namespace, args.secure_cookies).await;
    let scheme = if args.secure_cookies { "https" } else { "http" };
    let banner = match launch_token {
        Some(token) => format!(
            "windlass hub: open {scheme}://{addr}/login?token={token}\n  (API: curl -H 'Authorization: Bearer {token}' {scheme}://{addr}/api/v1/packages)\n"
        ),
        None => format!(
            "windlass hub: listening on {addr}; people sign in with their Kubernetes token\n"
        ),
    };
    // One write, so a reader that takes the first line and closes the pipe cannot stop the
    // server half way; a stdout nobody reads is no reason to stop serving either.
    let mut out = std::io::stdout().lock();
    if let Err(error) = out.write_all(banner.as_bytes()).and_then(|()| out.flush()) {
        tracing::warn!(%error, "could not print the hub's address; serving anyway on {addr}");
    }
    drop(out);
    windlass_hub_server::serve(hub, listener).await;
    Ok(ExitCode::SUCCESS)
}
