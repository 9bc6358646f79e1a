//! The hub's server: the hub page and its read API over HTTP, for people who sign in, acting in
//! the cluster only as them (see [`auth`]). What the pages show and what actions write is
//! decided in `windlass-hub`; this crate reads catalogs ([`content`]), authenticates
//! ([`auth`]), calls the API server as the person ([`cluster`], [`delisting`], [`instances`])
//! and serves ([`routes`]).

pub mod auth;
pub mod cluster;
pub mod content;
pub mod delisting;
pub mod instances;
pub mod respond;
pub mod routes;

use std::{convert::Infallible, net::SocketAddr, sync::Arc};

use hyper::{Request, body::Incoming, service::service_fn};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

pub use auth::{AuthMode, Authenticator};
pub use content::Contents;

/// What the server needs.
pub struct Hub {
    pub auth: Arc<Authenticator>,
    pub contents: Arc<Contents>,
    /// Signs CSRF tokens; random per process, so tokens end with it.
    pub key: Vec<u8>,
    /// The hub is reached over TLS (directly or through a proxy): cookies get `Secure`, and
    /// origins are `https://`.
    pub secure_cookies: bool,
}

impl Hub {
    pub async fn new(mode: AuthMode, manager_namespace: &str, secure_cookies: bool) -> Arc<Hub> {
        let mut key = vec![0u8; 32];
        getrandom::fill(&mut key).expect("the system's random source");
        Arc::new(Hub {
            auth: Authenticator::new(mode).await,
            contents: Contents::new(manager_namespace),
            key,
            secure_cookies,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("listening on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// Binds `addr` (port 0 picks a free one); returns the listener and the address it got.
pub async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), ServeError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Listen { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ServeError::Listen { addr, source })?;
    Ok((listener, bound))
}

/// Serves until the process ends.
pub async fn serve(hub: Arc<Hub>, listener: TcpListener) {
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(pair) => pair,
            Err(error) => {
                tracing::warn!(%error, "accept failed");
                continue;
            }
        };
        let hub = hub.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let hub = hub.clone();
                async move { Ok::<_, Infallible>(routes::handle(hub, request).await) }
            });
            if let Err(error) = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(%error, "connection ended with an error");
            }
        });
    }
}
