//! `windlass release graph [serve]`: the update graph of every payload in a registry repository,
//! drawn, or served at `/graph?channel=&version=&arch=` like an update service (what OpenShift's
//! graph builder and Cincinnati do), so an air-gapped site needs nothing else.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Mutex;
use windlass_release::graph::Graph;
use windlass_release::graph_build::{PublishedPayload, build_graph};
use windlass_release::metadata::METADATA_FILE;
use windlass_release::{ReleaseMetadata, render};

use super::bundle_registry::RegistryArgs;
use super::release::runtime;
use super::release_registry as registry;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct GraphArgs {
    #[command(subcommand)]
    pub command: Option<GraphCommand>,
    /// A repository of payload images, for example 127.0.0.1:5000/releases.
    #[arg(long, required = true)]
    pub repository: Option<String>,
    /// Only this channel's part of the graph.
    #[arg(long)]
    pub channel: Option<String>,
    #[arg(short = 'o', long, default_value = "dot", value_parser = ["dot", "mermaid", "json"])]
    pub output: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(clap::Subcommand)]
pub enum GraphCommand {
    /// Serve the graph as a Cincinnati update service (`GET /graph?channel=...`).
    Serve(ServeArgs),
}

#[derive(clap::Args)]
pub struct ServeArgs {
    #[arg(long)]
    pub repository: String,
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Look at the repository again when the graph is older than this.
    #[arg(long, default_value_t = 30)]
    pub refresh_seconds: u64,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

pub fn run(args: GraphArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        Some(GraphCommand::Serve(serve_args)) => serve(serve_args),
        None => draw(args),
    }
}

/// Reads the release metadata of every tag of a repository, pulling each image once.
struct Scanner {
    repository: String,
    options: registry::RegistryOptions,
    /// By image digest: the payload, or `None` for an image that is not one.
    seen: HashMap<String, Option<PublishedPayload>>,
}

impl Scanner {
    fn new(repository: &str, args: &RegistryArgs) -> anyhow::Result<Scanner> {
        let repository = registry::repository_of(repository)?;
        Ok(Scanner {
            options: args.options(&repository)?,
            repository,
            seen: HashMap::new(),
        })
    }

    async fn graph(&mut self) -> anyhow::Result<(Graph, Vec<String>)> {
        let mut warnings = Vec::new();
        let mut payloads = Vec::new();
        let tags = registry::list_tags(&self.repository, &self.options)
            .await
            .with_context(|| format!("listing the tags of {}", self.repository))?;
        for tag in tags {
            let reference = format!("{}:{tag}", self.repository);
            let config = registry::image_config(&reference, &self.options).await?;
            if !self.seen.contains_key(&config.digest) {
                let pulled = registry::pull(&reference, &self.options).await?;
                let found = match pulled.files.get(METADATA_FILE) {
                    None => {
                        warnings.push(format!(
                            "{reference}: not a release payload (no {METADATA_FILE}); left out"
                        ));
                        None
                    }
                    Some(bytes) => match ReleaseMetadata::parse(METADATA_FILE, bytes) {
                        Ok(metadata) => Some(PublishedPayload {
                            metadata,
                            payload: format!("{}@{}", self.repository, config.digest),
                            architecture: config.architecture.clone(),
                            found_as: reference.clone(),
                        }),
                        Err(e) => {
                            warnings.push(format!("{reference}: {e}; left out"));
                            None
                        }
                    },
                };
                self.seen.insert(config.digest.clone(), found);
            }
            if let Some(Some(payload)) = self.seen.get(&config.digest) {
                let mut payload = payload.clone();
                payload.found_as = reference;
                payloads.push(payload);
            }
        }
        Ok((build_graph(&payloads, &self.repository)?, warnings))
    }
}

fn draw(args: GraphArgs) -> anyhow::Result<ExitCode> {
    let repository = args.repository.as_deref().unwrap_or_default();
    let mut scanner = Scanner::new(repository, &args.registry)?;
    let (graph, warnings) = runtime()?.block_on(scanner.graph())?;
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
    let (graph, title) = match &args.channel {
        Some(channel) => (
            graph.for_channel(channel, None)?,
            format!("{} {channel}", scanner.repository),
        ),
        None => (graph, scanner.repository.clone()),
    };
    match args.output.as_str() {
        "json" => println!("{}", String::from_utf8(graph.to_json())?),
        "mermaid" => print!("{}", render::to_mermaid(&graph)),
        _ => print!("{}", render::to_dot(&graph, &title)),
    }
    Ok(ExitCode::SUCCESS)
}

struct Served {
    scanner: Scanner,
    graph: Option<(Instant, Graph)>,
    refresh: Duration,
}

impl Served {
    /// The current graph, looking at the repository again when it is older than `refresh`; a
    /// failed look keeps the last graph.
    async fn graph(&mut self) -> Result<Graph, String> {
        let fresh = self
            .graph
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() < self.refresh);
        if !fresh {
            match self.scanner.graph().await {
                Ok((graph, warnings)) => {
                    for warning in warnings {
                        eprintln!("warning: {warning}");
                    }
                    self.graph = Some((Instant::now(), graph));
                }
                Err(e) => {
                    eprintln!("error: reading {}: {e:#}", self.scanner.repository);
                    if self.graph.is_none() {
                        return Err(format!("{e:#}"));
                    }
                }
            }
        }
        Ok(self.graph.as_ref().expect("set above").1.clone())
    }
}

fn respond(status: StatusCode, content_type: &str, body: Vec<u8>) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .expect("a static response builds")
}

fn error(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    let body = serde_json::json!({ "kind": "error", "value": message });
    respond(status, "application/json", body.to_string().into_bytes())
}

async fn answer(request: Request<Incoming>, served: Arc<Mutex<Served>>) -> Response<Full<Bytes>> {
    let path = request.uri().path();
    if !matches!(
        path,
        "/graph" | "/api/upgrades_info/v1/graph" | "/api/upgrades_info/graph"
    ) {
        return error(StatusCode::NOT_FOUND, "the update graph is at /graph");
    }
    let query: HashMap<String, String> =
        form_urlencoded::parse(request.uri().query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let Some(channel) = query.get("channel").filter(|c| !c.is_empty()) else {
        return error(
            StatusCode::BAD_REQUEST,
            "mandatory client parameters missing: channel",
        );
    };
    if let Some(version) = query.get("version").filter(|v| !v.is_empty())
        && semver::Version::parse(version).is_err()
    {
        return error(
            StatusCode::BAD_REQUEST,
            &format!("version {version:?} is not a semantic version"),
        );
    }
    let graph = match served.lock().await.graph().await {
        Ok(graph) => graph,
        Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, &e),
    };
    match graph.for_channel(channel, query.get("arch").map(String::as_str)) {
        Ok(graph) => respond(StatusCode::OK, "application/json", graph.to_json()),
        Err(e) => error(StatusCode::BAD_REQUEST, &e.to_string()),
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let scanner = Scanner::new(&args.repository, &args.registry)?;
    let repository = scanner.repository.clone();
    let served = Arc::new(Mutex::new(Served {
        scanner,
        graph: None,
        refresh: Duration::from_secs(args.refresh_seconds),
    }));
    runtime()?.block_on(async move {
        let listener = TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("listening on {}", args.listen))?;
        let (nodes, edges) = match served.lock().await.graph().await {
            Ok(graph) => (graph.nodes.len(), graph.edges.len()),
            Err(e) => anyhow::bail!("reading {repository}: {e}"),
        };
        println!(
            "serving the update graph of {repository} ({nodes} releases, {edges} edges) on http://{}/graph",
            listener.local_addr()?
        );
        loop {
            let (stream, _) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(pair) => pair,
                    Err(e) => { eprintln!("warning: accept failed: {e}"); continue; }
                },
                _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
            };
            let served = served.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let served = served.clone();
                    async move { Ok::<_, Infallible>(answer(request, served).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}
