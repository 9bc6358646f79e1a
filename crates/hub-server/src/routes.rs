//! Every route of the hub: the pages, their fragments and images, the actions, the read API,
//! signing in and out.
//!
//! Order of checks for anything but `/healthz`, `/static/` and signing in: who is asking
//! (401 otherwise), then, for a state change, the origin and the CSRF token (403 otherwise),
//! then the work, done with the person's own client.

use std::sync::Arc;

use http_body_util::BodyExt;
use hyper::{Method, Request, body::Incoming, header};
use windlass_hub::{
    Query,
    actions::InstallRequest,
    api,
    delisting::{DelistRequest, Edit},
    detail::PackageDetail,
    graph,
    html::Viewer,
    pages::{
        self, Around, InstallDefaults, error_page, installed_page, list::results, login::LoginKind,
        login_page,
    },
    security::{
        self, CSRF_HEADER, IMAGE_CONTENT_SECURITY_POLICY, OriginCheck, csrf_token, csrf_valid,
    },
};

use crate::{
    Hub,
    auth::{AuthError, Identity, SESSION_TTL},
    cluster,
    content::View,
    delisting, instances,
    respond::{self, Builder, Reply},
};

/// Largest request body accepted (forms are small).
const MAX_BODY: usize = 64 * 1024;

/// What a handler needs from the request.
pub struct Asked {
    pub method: Method,
    pub path: String,
    pub query: String,
    headers: hyper::HeaderMap,
    body: Vec<u8>,
}

impl Asked {
    fn header(&self, name: impl header::AsHeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn param(&self, name: &str) -> String {
        params(self.query.as_bytes(), name)
    }

    fn form(&self, name: &str) -> String {
        params(&self.body, name)
    }

    fn wants_json(&self) -> bool {
        self.path.starts_with("/api/")
            || self.path.starts_with("/actions/")
            || self
                .header(header::ACCEPT)
                .is_some_and(|a| a.contains("application/json"))
    }
}

fn params(bytes: &[u8], name: &str) -> String {
    form_urlencoded::parse(bytes)
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default()
}

/// Reads the request (its body up to [`MAX_BODY`]) and answers it.
pub async fn handle(hub: Arc<Hub>, request: Request<Incoming>) -> Reply {
    let (parts, body) = request.into_parts();
    let limited = http_body_util::Limited::new(body, MAX_BODY);
    let body = match limited.collect().await {
        Ok(collected) => collected.to_bytes().to_vec(),
        Err(_) => return respond::message(413, "the request body is too large").build(),
    };
    let request = Asked {
        method: parts.method,
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or_default().to_string(),
        headers: parts.headers,
        body,
    };
    route(&hub, &request).await.build()
}

async fn route(hub: &Hub, request: &Asked) -> Builder {
    let path = request.path.as_str();
    match (&request.method, path) {
        (&Method::GET, "/healthz") => return Builder::new(200, respond::TEXT, "ok\n"),
        (&Method::GET, p) if p.starts_with("/static/") => return asset(&p["/static/".len()..]),
        (&Method::GET, "/login") => return login_get(hub, request).await,
        (&Method::POST, "/login") => return login_post(hub, request).await,
        _ => {}
    }
    let identity = match hub
        .auth
        .identify(
            request.header(header::AUTHORIZATION),
            request
                .header(header::COOKIE)
                .and_then(security::session_from_cookies),
        )
        .await
    {
        Ok(identity) => identity,
        Err(error) => return unauthenticated(hub, request, &error),
    };
    let viewer = Viewer {
        user: identity.user.clone(),
        csrf_token: csrf_token(&hub.key, &identity.credential),
    };
    if request.method == Method::POST {
        if let Err(refusal) = check_state_change(hub, request, &identity) {
            return respond::message(403, &refusal);
        }
        return post(hub, request, &identity).await;
    }
    if request.method != Method::GET && request.method != Method::HEAD {
        return respond::message(405, "only GET and POST are served")
            .header(header::ALLOW, "GET, HEAD, POST");
    }
    get(hub, request, &identity, &viewer).await
}

fn asset(name: &str) -> Builder {
    match windlass_hub::assets::asset(name) {
        Some((content_type, bytes)) => Builder::new(200, content_type, bytes.to_vec()),
        None => respond::message(404, "no such file"),
    }
}

fn unauthenticated(hub: &Hub, request: &Asked, error: &AuthError) -> Builder {
    tracing::debug!(path = request.path, %error, "unauthenticated request");
    if request.wants_json() || request.method != Method::GET {
        return respond::message(401, &error.to_string())
            .header(header::WWW_AUTHENTICATE, "Bearer realm=\"windlass-hub\"");
    }
    respond::html(401, login_page(login_kind(hub), Some(&error.to_string())))
}

fn login_kind(hub: &Hub) -> LoginKind {
    if hub.auth.is_kubeconfig() {
        LoginKind::LaunchToken
    } else {
        LoginKind::KubernetesToken
    }
}

/// `GET /login`: the sign-in page; with `?token=` (the link `windlass hub` prints) it signs
/// the browser in and sends it on without the token in the address.
async fn login_get(hub: &Hub, request: &Asked) -> Builder {
    let token = request.param("token");
    if token.is_empty() {
        return respond::html(200, login_page(login_kind(hub), None));
    }
    if !hub.auth.is_kubeconfig() {
        return respond::html(
            400,
            login_page(
                login_kind(hub),
                Some("send the token with the form (POST), never in the address"),
            ),
        );
    }
    signed_in(hub, &token).await
}

/// `POST /login`: signs in with a Kubernetes token (or the launch token) from the form. Only
/// from the hub's own page: a sign-in another site starts is refused.
async fn login_post(hub: &Hub, request: &Asked) -> Builder {
    if let OriginCheck::CrossOrigin(origin) = origin_of(hub, request) {
        return respond::message(
            403,
            &format!("sign-in from another site ({origin}) refused"),
        );
    }
    signed_in(hub, &request.form("token")).await
}

async fn signed_in(hub: &Hub, token: &str) -> Builder {
    match hub.auth.sign_in(token).await {
        Ok(session) => respond::redirect("/").header(
            header::SET_COOKIE,
            security::session_cookie(&session, hub.secure_cookies, SESSION_TTL.as_secs()),
        ),
        Err(error) => respond::html(401, login_page(login_kind(hub), Some(&error.to_string()))),
    }
}

fn origin_of(hub: &Hub, request: &Asked) -> OriginCheck {
    security::check_origin(
        request.header(header::ORIGIN),
        request.header(header::REFERER),
        request.header(header::HOST),
        if hub.secure_cookies { "https" } else { "http" },
    )
}

/// A state change must come from the hub's own page: no other origin, and the CSRF token of
/// the credential that signed it in (header or form field). Header-authenticated clients
/// (curl with a bearer token) are held to the same token rule, so an auth proxy that adds
/// headers to every request cannot be used across sites.
fn check_state_change(hub: &Hub, request: &Asked, identity: &Identity) -> Result<(), String> {
    if let OriginCheck::CrossOrigin(origin) = origin_of(hub, request) {
        return Err(format!(
            "refused: the request comes from another site ({origin})"
        ));
    }
    let presented = request
        .header(CSRF_HEADER)
        .map(str::to_string)
        .unwrap_or_else(|| request.form("csrf"));
    if !csrf_valid(&hub.key, &identity.credential, &presented) {
        return Err(
            "refused: the request lacks this session's CSRF token (reload the page and try again)"
                .into(),
        );
    }
    Ok(())
}

async fn post(hub: &Hub, request: &Asked, identity: &Identity) -> Builder {
    let client = &identity.client;
    let namespace = request.form("namespace");
    let name = request.form("name");
    let outcome = match request.path.as_str() {
        "/logout" => {
            if identity.from_cookie {
                hub.auth.sign_out(&identity.credential);
            }
            return respond::redirect("/login").header(
                header::SET_COOKIE,
                security::session_cookie("", hub.secure_cookies, 0),
            );
        }
        "/actions/install" => cluster::install(client, &InstallRequest::parse(&request.body)).await,
        "/actions/approve" => {
            cluster::approve(client, &namespace, &name, &request.form("plan")).await
        }
        "/actions/rollback" => cluster::rollback(client, &namespace, &name).await,
        "/actions/resume" => cluster::resume(client, &namespace, &name).await,
        "/actions/delist" | "/actions/relist" => {
            let form = DelistRequest::parse(&request.body);
            let edit = if request.path == "/actions/delist" {
                Edit::Delist {
                    reason: form.reason(),
                }
            } else {
                Edit::Relist
            };
            match hub.contents.view(client).await {
                Ok(view) => delisting::edit(client, &view.index, &form, edit).await,
                Err(error) => cluster::Outcome::api("listing catalogs", error),
            }
        }
        _ => return respond::message(404, "no such action"),
    };
    tracing::info!(
        user = identity.user.as_deref().unwrap_or("-"),
        action = %request.path,
        namespace = %namespace,
        catalog = %request.form("catalog"),
        status = outcome.status,
        "hub action"
    );
    respond::json(
        outcome.status,
        &serde_json::json!({ "message": outcome.message, "location": outcome.location }),
    )
}

async fn get(hub: &Hub, request: &Asked, identity: &Identity, viewer: &Viewer) -> Builder {
    let path = request.path.as_str();
    let segments: Vec<String> = path
        .trim_start_matches('/')
        .split('/')
        .map(percent_decode)
        .collect();
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    // The installed view reads Subscriptions, not catalogs.
    if let ["installed", rest @ ..] = segments.as_slice() {
        let namespace = match request.param("namespace") {
            n if n.is_empty() => default_namespace(identity),
            n => n,
        };
        let listing = if namespace.is_empty() {
            Ok(Vec::new())
        } else {
            cluster::installed(&identity.client, &namespace).await
        };
        return match rest {
            [] => respond::html(200, installed_page(&namespace, &listing, viewer)),
            ["rows"] => respond::html(200, pages::installed::rows(&namespace, &listing, viewer)),
            _ => not_found(request, viewer, "no such page"),
        };
    }
    let view = match hub.contents.view(&identity.client).await {
        Ok(view) => view,
        Err(error) => return refused_catalogs(request, viewer, error),
    };
    let accept_encoding = request.header(header::ACCEPT_ENCODING);
    match segments.as_slice() {
        [""] => {
            let query = Query::parse(&request.query);
            let page = request.param("page").parse().unwrap_or(1);
            if request.param("fragment") == "results" {
                return respond::html(200, results(&view.index, &query, page));
            }
            let mut html = pages::list_page(&view.index, &query, page, viewer);
            if !view.problems.is_empty() {
                html = with_problems(html, &view);
            }
            respond::html(200, html).gzip_for(accept_encoding)
        }
        ["packages", catalog, name] => match view.index.package(name, Some(*catalog)) {
            Some((content, package)) => {
                let detail = PackageDetail::of(content, package);
                let defaults = InstallDefaults {
                    namespace: match request.param("namespace") {
                        n if n.is_empty() => default_namespace(identity),
                        n => n,
                    },
                };
                let known = known_namespaces(request, identity);
                let (may_delist, instances) = tokio::join!(
                    delisting::may_delist(&identity.client, catalog),
                    instances::of(&identity.client, content, package, &known),
                );
                let around = Around {
                    also_offered_by: view
                        .index
                        .offering(name)
                        .into_iter()
                        .filter(|c| *c != *catalog)
                        .map(String::from)
                        .collect(),
                    may_delist,
                    instances: Some(instances),
                };
                respond::html(
                    200,
                    pages::package_page(&detail, &defaults, &around, viewer),
                )
                .gzip_for(accept_encoding)
            }
            None => not_found(
                request,
                viewer,
                &format!("catalog {catalog} has no package {name}"),
            ),
        },
        ["graphs", catalog, name, file] => {
            let Some(channel) = file.strip_suffix(".svg") else {
                return not_found(request, viewer, "graphs are .svg");
            };
            let Some((content, package)) = view.index.package(name, Some(*catalog)) else {
                return not_found(request, viewer, "no such package");
            };
            let detail = PackageDetail::of(content, package);
            match detail.channel(channel) {
                Some(channel) => {
                    Builder::new(200, "image/svg+xml", graph::channel_svg(name, channel))
                        .csp(IMAGE_CONTENT_SECURITY_POLICY)
                        .gzip_for(accept_encoding)
                }
                None => not_found(request, viewer, "no such channel"),
            }
        }
        ["icons", catalog, name] => {
            let icon = view
                .index
                .package(name, Some(*catalog))
                .and_then(|(_, p)| p.icon.as_ref().map(|i| i.to_value()));
            match icon.as_ref().map(security::icon) {
                Some(Ok((bytes, media_type))) => Builder::new(200, media_type, bytes)
                    .csp(IMAGE_CONTENT_SECURITY_POLICY)
                    .header(header::CONTENT_DISPOSITION, "inline; filename=\"icon\""),
                Some(Err(error)) => respond::message(404, &error.to_string()),
                None => respond::message(404, "no such icon"),
            }
        }
        ["api", "v1", "catalogs"] => {
            respond::json(200, &api::catalogs(&view.index)).gzip_for(accept_encoding)
        }
        ["api", "v1", "catalogs", name, "all"] => catalog_all(request, &view, name),
        ["api", "v1", "packages"] => {
            let query = Query::parse(&request.query);
            respond::json(200, &api::packages(&view.index, &query)).gzip_for(accept_encoding)
        }
        ["api", "v1", "packages", name] => {
            let catalog = request.param("catalog");
            let catalog = (!catalog.is_empty()).then_some(catalog.as_str());
            match view.index.package(name, catalog) {
                Some((content, package)) => {
                    let detail = PackageDetail::of(content, package);
                    let known = known_namespaces(request, identity);
                    let installed = instances::of(&identity.client, content, package, &known).await;
                    let body = api::PackageBody {
                        detail: &detail,
                        installed: Some(&installed),
                    };
                    respond::json(200, &body).gzip_for(accept_encoding)
                }
                None => respond::message(
                    404,
                    &match catalog {
                        Some(c) => format!("catalog {c} has no package {name}"),
                        None => format!("no catalog you may read has a package {name}"),
                    },
                ),
            }
        }
        _ => not_found(request, viewer, "no such page"),
    }
}

/// `GET /api/v1/catalogs/<name>/all`: JSON lines, gzipped when accepted, with
/// `Last-Modified` and `If-Modified-Since`.
fn catalog_all(request: &Asked, view: &View, name: &str) -> Builder {
    let Some(content) = view.index.catalog(name) else {
        let why = view
            .problems
            .iter()
            .find(|p| p.catalog == name)
            .map(|p| format!("catalog {name}: {}", p.message))
            .unwrap_or_else(|| format!("no catalog {name} (or you may not read it)"));
        return respond::message(404, &why);
    };
    let modified = httpdate::fmt_http_date(content.loaded_at);
    if let Some(since) = request
        .header(header::IF_MODIFIED_SINCE)
        .and_then(|h| httpdate::parse_http_date(h).ok())
        && content.loaded_at <= since
    {
        return Builder::new(304, respond::JSON_LINES, Vec::new())
            .header(header::LAST_MODIFIED, modified);
    }
    let mut body = Vec::new();
    if let Err(error) = api::catalog_lines(content, &mut body) {
        return respond::message(500, &format!("rendering catalog {name}: {error}"));
    }
    Builder::new(200, respond::JSON_LINES, body)
        .header(header::LAST_MODIFIED, modified)
        .gzip_for(request.header(header::ACCEPT_ENCODING))
}

fn default_namespace(identity: &Identity) -> String {
    identity.client.default_namespace().to_string()
}

/// The namespaces the person named: the page's `namespace` and their default. Installs are
/// looked for there when they may not list Subscriptions across namespaces.
fn known_namespaces(request: &Asked, identity: &Identity) -> Vec<String> {
    let mut known = vec![request.param("namespace"), default_namespace(identity)];
    known.retain(|n| !n.is_empty());
    known.dedup();
    known
}

fn with_problems(html: String, view: &View) -> String {
    let notes: String = view
        .problems
        .iter()
        .map(|p| {
            format!(
                "<p class=\"message warning\">Catalog {}: {}</p>",
                windlass_hub::html::escape(&p.catalog),
                windlass_hub::html::escape(&p.message)
            )
        })
        .collect();
    html.replacen(
        "<div id=\"results\"",
        &format!("{notes}<div id=\"results\""),
        1,
    )
}

fn refused_catalogs(request: &Asked, viewer: &Viewer, error: kube::Error) -> Builder {
    let (status, message) = match error {
        kube::Error::Api(status) => (
            status.code,
            format!(
                "listing catalogs: the API server refused: {}",
                status.message
            ),
        ),
        other => (502, format!("listing catalogs: {other}")),
    };
    if request.wants_json() {
        return respond::message(status, &message);
    }
    respond::html(
        status,
        error_page("Catalogs not readable", &message, viewer),
    )
}

fn not_found(request: &Asked, viewer: &Viewer, message: &str) -> Builder {
    if request.wants_json() {
        return respond::message(404, message);
    }
    respond::html(404, error_page("Not found", message, viewer))
}

fn percent_decode(segment: &str) -> String {
    // form_urlencoded decodes `+` as a space, which a path does not mean.
    form_urlencoded::parse(format!("x={}", segment.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}
