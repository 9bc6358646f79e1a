//! `/healthz`, `/readyz` and `/metrics` over plain HTTP/1.

use std::{
    convert::Infallible,
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use http_body_util::Full;
use hyper::{
    Request, Response, StatusCode,
    body::{Bytes, Incoming},
    service::service_fn,
};
use hyper_util::rt::TokioIo;
use tokio::{net::TcpListener, sync::watch};
use tracing::{error, warn};

use super::metrics::Registry;

#[derive(Default)]
pub struct State {
    ready: AtomicBool,
}

impl State {
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }
}

#[derive(Clone, Copy)]
pub enum Endpoint {
    Health,
    Metrics,
}

pub async fn serve(
    addr: SocketAddr,
    endpoint: Endpoint,
    state: Arc<State>,
    registry: Registry,
    mut shutdown: watch::Receiver<bool>,
) {
    let listener = match TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(e) => {
            error!(%addr, error = %e, "cannot listen; is the port taken?");
            return;
        }
    };
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => { warn!(error = %e, "accept failed"); continue; }
            },
            _ = shutdown.wait_for(|stop| *stop) => return,
        };
        let (state, registry) = (state.clone(), registry.clone());
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let response = respond(endpoint, request.uri().path(), &state, &registry);
                async move { Ok::<_, Infallible>(response) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn respond(
    endpoint: Endpoint,
    path: &str,
    state: &State,
    registry: &Registry,
) -> Response<Full<Bytes>> {
    let (status, body, content_type) = match (endpoint, path) {
        (Endpoint::Health, "/healthz") => (StatusCode::OK, "ok".to_string(), "text/plain"),
        (Endpoint::Health, "/readyz") if state.ready.load(Ordering::Relaxed) => {
            (StatusCode::OK, "ok".into(), "text/plain")
        }
        (Endpoint::Health, "/readyz") => (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready".into(),
            "text/plain",
        ),
        (Endpoint::Metrics, "/metrics") => (
            StatusCode::OK,
            registry.render(),
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        ),
        _ => (StatusCode::NOT_FOUND, "not found".into(), "text/plain"),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = content_type.parse() {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}
