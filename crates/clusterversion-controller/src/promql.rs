//! Running the `PromQL` queries of conditional update risks against the Prometheus-compatible
//! query API `spec.prometheus` names (Prometheus, Thanos Querier, ...). What an answer means is
//! decided by `windlass_release::risk`; this module only asks.
//!
//! The CA bundle and the bearer token come from a ConfigMap and a Secret in the manager's
//! namespace, read at every evaluation, so a rotated token or CA is used from the next poll on.
//! A problem with the endpoint itself (a bad URL, a missing Secret) fails every query with the
//! same words, naming the field: each risk is then `Unknown` and its update not recommended.

use std::{collections::BTreeSet, time::Duration};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use windlass_api::clusterversion::{DataKeyRef, PrometheusEndpoint};
use windlass_release::risk::{QueryRequest, QueryResponse, QueryResults};

/// The biggest query answer read: a risk query answers one sample.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;
const DEFAULT_TIMEOUT_SECONDS: i64 = 30;
const DEFAULT_CA_KEY: &str = "ca.crt";
const DEFAULT_TOKEN_KEY: &str = "token";

/// Why there is no answer to any query when no endpoint is configured.
pub const NOT_CONFIGURED: &str =
    "no Prometheus-compatible endpoint is configured to evaluate it (spec.prometheus)";

/// A query endpoint ready to be asked.
pub struct Endpoint {
    base: String,
    client: reqwest::Client,
    token: Option<String>,
}

/// Reads what `spec` names (CA, token) from `namespace` and builds the client.
pub async fn endpoint(
    client: &kube::Client,
    namespace: &str,
    spec: &PrometheusEndpoint,
) -> Result<Endpoint, String> {
    let base = base_url(&spec.url)?;
    let timeout = spec
        .timeout_seconds
        .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
        .clamp(1, 300);
    let mut builder = reqwest::Client::builder().timeout(Duration::from_secs(timeout as u64));
    if let Some(ca) = &spec.ca_config_map {
        let pem = config_map_value(client, namespace, ca).await?;
        let certificates = reqwest::Certificate::from_pem_bundle(pem.as_bytes())
            .ok()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| {
                format!(
                    "spec.prometheus.caConfigMap: ConfigMap {namespace}/{} key {} holds no PEM certificate",
                    ca.name,
                    ca.data_key(DEFAULT_CA_KEY)
                )
            })?;
        builder = builder.tls_certs_only(certificates);
    }
    let token = match &spec.bearer_token_secret {
        Some(secret) => Some(secret_value(client, namespace, secret).await?),
        None => None,
    };
    let client = builder
        .build()
        .map_err(|e| format!("spec.prometheus: building the HTTP client: {e}"))?;
    Ok(Endpoint {
        base,
        client,
        token,
    })
}

/// `url` without a trailing slash, once it is an http(s) URL with a host.
fn base_url(url: &str) -> Result<String, String> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| format!("spec.prometheus.url {url:?} is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(format!(
            "spec.prometheus.url {url:?} must be an http:// or https:// URL with a host"
        ));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(format!(
            "spec.prometheus.url {url:?} must not carry a query or fragment: /api/v1/query?... is appended to it"
        ));
    }
    Ok(url.trim_end_matches('/').to_string())
}

async fn config_map_value(
    client: &kube::Client,
    namespace: &str,
    source: &DataKeyRef,
) -> Result<String, String> {
    let key = source.data_key(DEFAULT_CA_KEY);
    let where_ = format!(
        "spec.prometheus.caConfigMap: ConfigMap {namespace}/{} key {key}",
        source.name
    );
    let found = Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .get_opt(&source.name)
        .await
        .map_err(|e| format!("{where_}: {e}"))?
        .ok_or_else(|| format!("{where_}: no such ConfigMap"))?;
    found
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .cloned()
        .ok_or_else(|| format!("{where_}: no such key"))
}

async fn secret_value(
    client: &kube::Client,
    namespace: &str,
    source: &DataKeyRef,
) -> Result<String, String> {
    let key = source.data_key(DEFAULT_TOKEN_KEY);
    let where_ = format!(
        "spec.prometheus.bearerTokenSecret: Secret {namespace}/{} key {key}",
        source.name
    );
    let found = Api::<Secret>::namespaced(client.clone(), namespace)
        .get_opt(&source.name)
        .await
        .map_err(|e| format!("{where_}: {e}"))?
        .ok_or_else(|| format!("{where_}: no such Secret"))?;
    let bytes = found
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|b| b.0.clone())
        .ok_or_else(|| format!("{where_}: no such key"))?;
    let token = String::from_utf8(bytes)
        .map_err(|_| format!("{where_}: the token is not text"))?
        .trim()
        .to_string();
    if token.is_empty() {
        return Err(format!("{where_}: the token is empty"));
    }
    Ok(token)
}

impl Endpoint {
    /// Asks one query; `Err` says why there is no answer (the transport, an unreadable body).
    /// A Prometheus error answer (`"status":"error"`) is an answer: the risk crate words it.
    pub async fn query(&self, query: &str) -> Result<QueryResponse, String> {
        let url = format!("{}{}", self.base, QueryRequest::new(query).path_and_query());
        let mut request = self.client.get(&url).header("Accept", "application/json");
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| format!("asking {}: {}", self.base, causes(&e)))?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("reading the answer of {}: {}", self.base, causes(&e)))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_ANSWER_BYTES {
                return Err(format!(
                    "{} answered more than {MAX_ANSWER_BYTES} bytes",
                    self.base
                ));
            }
        }
        // Prometheus answers a bad query with 400 and an error document: that is an answer.
        match QueryResponse::parse(&body) {
            Ok(answer) => Ok(answer),
            Err(_) if !status.is_success() => Err(format!(
                "{} answered {status}: {}",
                self.base,
                String::from_utf8_lossy(&body[..body.len().min(300)]).trim()
            )),
            Err(why) => Err(format!("{} answered {status}: {why}", self.base)),
        }
    }
}

/// Runs every query (at once), each answer or failure by its query.
pub async fn run(endpoint: &Result<Endpoint, String>, queries: BTreeSet<String>) -> QueryResults {
    let endpoint = match endpoint {
        Ok(endpoint) => endpoint,
        Err(why) => return queries.into_iter().map(|q| (q, Err(why.clone()))).collect(),
    };
    let answers = futures::future::join_all(queries.iter().map(|q| endpoint.query(q))).await;
    queries.into_iter().zip(answers).collect()
}

/// An error and its sources, so "connection refused" is not hidden behind "error sending
/// request".
fn causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_must_be_a_plain_http_base() {
        assert_eq!(
            base_url("https://thanos-querier.openshift-monitoring.svc:9091/").unwrap(),
            "https://thanos-querier.openshift-monitoring.svc:9091"
        );
        assert_eq!(
            base_url("http://127.0.0.1:9090/prometheus").unwrap(),
            "http://127.0.0.1:9090/prometheus"
        );
        for (url, says) in [
            ("prometheus:9090", "must be an http:// or https:// URL"),
            ("ftp://prometheus/", "must be an http:// or https:// URL"),
            ("not a url", "is not a URL"),
            ("http://p:9090/?x=1", "must not carry a query"),
        ] {
            let error = base_url(url).unwrap_err();
            assert!(
                error.contains(says) && error.contains("spec.prometheus.url"),
                "{url}: {error}"
            );
        }
    }

    /// Answers one HTTP request with `status` and `body`; returns the request it read.
    async fn answer_once(
        listener: tokio::net::TcpListener,
        status: &'static str,
        body: &'static str,
    ) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buffer = [0u8; 4096];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let read = stream.read(&mut buffer).await.unwrap();
            if read == 0 {
                break;
            }
            request.extend_from_slice(&buffer[..read]);
        }
        let response = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(response.as_bytes()).await.unwrap();
        String::from_utf8_lossy(&request).into_owned()
    }

    #[tokio::test]
    async fn a_query_asks_the_query_api_with_the_bearer_token_and_reads_error_answers() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/prometheus", listener.local_addr().unwrap());
        let endpoint = Endpoint {
            base: base_url(&base).unwrap(),
            client: reqwest::Client::new(),
            token: Some("s3cret".into()),
        };
        let server = tokio::spawn(answer_once(
            listener,
            "200 OK",
            r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}"#,
        ));
        let answer = endpoint.query("max(up{job=\"etcd\"})").await.unwrap();
        assert_eq!(answer.matches(), Ok(true));
        let request = server.await.unwrap();
        assert!(
            request.starts_with(
                "GET /prometheus/api/v1/query?query=max%28up%7Bjob%3D%22etcd%22%7D%29 HTTP/1.1"
            ),
            "{request}"
        );
        assert!(
            request
                .to_ascii_lowercase()
                .contains("authorization: bearer s3cret"),
            "{request}"
        );

        // A bad query: Prometheus answers 400 with an error document, which is an answer.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = Endpoint {
            base: format!("http://{}", listener.local_addr().unwrap()),
            client: reqwest::Client::new(),
            token: None,
        };
        let server = tokio::spawn(answer_once(
            listener,
            "400 Bad Request",
            r#"{"status":"error","errorType":"bad_data","error":"parse error at char 4"}"#,
        ));
        let answer = endpoint.query("max(").await.unwrap();
        let _ = server.await;
        assert!(
            answer
                .matches()
                .unwrap_err()
                .contains("bad_data: parse error")
        );

        // Not a query API at all.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = Endpoint {
            base: format!("http://{}", listener.local_addr().unwrap()),
            client: reqwest::Client::new(),
            token: None,
        };
        let server = tokio::spawn(answer_once(listener, "403 Forbidden", "no access"));
        let error = endpoint.query("up").await.unwrap_err();
        let _ = server.await;
        assert!(
            error.contains("answered 403 Forbidden: no access"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn without_an_endpoint_every_query_fails_with_the_same_reason() {
        let results = run(
            &Err("spec.prometheus.bearerTokenSecret: no such Secret".into()),
            ["a".to_string(), "b".to_string()].into(),
        )
        .await;
        assert_eq!(results.len(), 2);
        assert!(
            results
                .values()
                .all(|r| r.as_ref().unwrap_err().contains("no such Secret"))
        );
    }
}
