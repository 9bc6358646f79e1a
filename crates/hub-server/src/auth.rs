//! Who a request comes from, and the client that acts as them.
//!
//! Two ways to run, never mixed:
//!
//! - **Kubeconfig** (`windlass hub` on a workstation): the hub acts with the kubeconfig of the
//!   person who started it. Listening on loopback is not enough (anyone on the machine can
//!   reach it), so a random launch token is needed too: the link the command prints signs a
//!   browser in (a session cookie), and API clients send it as `Authorization: Bearer`.
//! - **Bearer token** (in the cluster): every request carries the person's own Kubernetes
//!   token, in `Authorization: Bearer` or in the server-side session a sign-in created. The
//!   token is checked with a TokenReview (anonymous and unauthenticated tokens are refused),
//!   then every read and action is made with that token itself, so the API server's
//!   authentication, RBAC and audit see the person, not the hub. The hub's own account needs
//!   only `create tokenreviews`; it holds no impersonation right. A review is trusted for a
//!   minute, so a revoked token stops working within one.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenReview, TokenReviewSpec};
use kube::{Api, Client, Config, api::PostParams, config::AuthInfo};
use sha2::{Digest, Sha256};

/// How long a session lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(8 * 3600);
/// How long a TokenReview's answer is trusted.
const REVIEW_TTL: Duration = Duration::from_secs(60);
/// At most this many sessions; the oldest go first.
const MAX_SESSIONS: usize = 10_000;

/// How the hub authenticates people.
pub enum AuthMode {
    /// Act with this client (the starting person's kubeconfig); browsers and API clients
    /// present `launch_token`.
    Kubeconfig {
        client: Client,
        launch_token: String,
    },
    /// Act with each person's own bearer token, after `reviewer` (the hub's own account)
    /// checked it with a TokenReview. `base` is how to reach the API server.
    BearerToken { reviewer: Client, base: Box<Config> },
}

/// The person behind a request.
#[derive(Clone)]
pub struct Identity {
    /// What signed the request in (session id or bearer token): CSRF tokens are bound to it.
    pub credential: String,
    /// Acts as the person.
    pub client: Client,
    /// The user name, when known.
    pub user: Option<String>,
    /// Whether a session cookie (not a header) carried the credential: browsers send cookies
    /// on their own, so such requests need the CSRF checks.
    pub from_cookie: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("sign in first: no session and no Authorization header")]
    Missing,
    #[error("this session has ended; sign in again")]
    UnknownSession,
    #[error("the token is not valid for this hub")]
    WrongLaunchToken,
    #[error("the API server does not accept this token{0}")]
    Rejected(String),
    #[error("anonymous requests may not use the hub")]
    Anonymous,
    #[error("could not check the token with the API server: {0}")]
    Review(String),
}

struct Session {
    /// The bearer token (BearerToken mode) or the launch token (Kubeconfig mode).
    token: String,
    started: Instant,
}

struct Reviewed {
    user: String,
    client: Client,
    at: Instant,
}

pub struct Authenticator {
    mode: AuthMode,
    /// The starting person's user name (Kubeconfig mode), from a SelfSubjectReview.
    local_user: Option<String>,
    sessions: Mutex<HashMap<String, Session>>,
    /// TokenReview answers by the token's SHA-256.
    reviews: Mutex<HashMap<[u8; 32], Reviewed>>,
}

impl Authenticator {
    pub async fn new(mode: AuthMode) -> Arc<Authenticator> {
        let local_user = match &mode {
            AuthMode::Kubeconfig { client, .. } => whoami(client).await,
            AuthMode::BearerToken { .. } => None,
        };
        Arc::new(Authenticator {
            mode,
            local_user,
            sessions: Mutex::default(),
            reviews: Mutex::default(),
        })
    }

    pub fn is_kubeconfig(&self) -> bool {
        matches!(self.mode, AuthMode::Kubeconfig { .. })
    }

    /// The person behind a request, from its `Authorization` header or session cookie.
    pub async fn identify(
        &self,
        authorization: Option<&str>,
        session: Option<&str>,
    ) -> Result<Identity, AuthError> {
        if let Some(token) = authorization.and_then(|h| h.strip_prefix("Bearer ")) {
            let token = token.trim();
            let (client, user) = self.check(token).await?;
            return Ok(Identity {
                credential: token.to_string(),
                client,
                user,
                from_cookie: false,
            });
        }
        let id = session.ok_or(AuthError::Missing)?;
        let token = {
            let sessions = self.sessions.lock().expect("sessions lock");
            let session = sessions.get(id).ok_or(AuthError::UnknownSession)?;
            if session.started.elapsed() > SESSION_TTL {
                return Err(AuthError::UnknownSession);
            }
            session.token.clone()
        };
        let (client, user) = self.check(&token).await?;
        Ok(Identity {
            credential: id.to_string(),
            client,
            user,
            from_cookie: true,
        })
    }

    /// Checks a presented token; returns the client that acts as its owner.
    async fn check(&self, token: &str) -> Result<(Client, Option<String>), AuthError> {
        match &self.mode {
            AuthMode::Kubeconfig {
                client,
                launch_token,
            } => {
                if constant_time_eq(token.as_bytes(), launch_token.as_bytes()) {
                    Ok((client.clone(), self.local_user.clone()))
                } else {
                    Err(AuthError::WrongLaunchToken)
                }
            }
            AuthMode::BearerToken { reviewer, base } => {
                let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
                if let Some(hit) = self
                    .reviews
                    .lock()
                    .expect("reviews lock")
                    .get(&digest)
                    .filter(|r| r.at.elapsed() < REVIEW_TTL)
                {
                    return Ok((hit.client.clone(), Some(hit.user.clone())));
                }
                let user = review(reviewer, token).await?;
                let client =
                    client_for(base, token).map_err(|e| AuthError::Review(e.to_string()))?;
                let mut reviews = self.reviews.lock().expect("reviews lock");
                reviews.retain(|_, r| r.at.elapsed() < REVIEW_TTL);
                reviews.insert(
                    digest,
                    Reviewed {
                        user: user.clone(),
                        client: client.clone(),
                        at: Instant::now(),
                    },
                );
                Ok((client, Some(user)))
            }
        }
    }

    /// Signs a browser in with `token` (the launch token, or a Kubernetes token): checks it and
    /// returns a new session id.
    pub async fn sign_in(&self, token: &str) -> Result<String, AuthError> {
        self.check(token.trim()).await?;
        let id = random_hex(32);
        let mut sessions = self.sessions.lock().expect("sessions lock");
        sessions.retain(|_, s| s.started.elapsed() < SESSION_TTL);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, s)| s.started)
                .map(|(k, _)| k.clone())
        {
            sessions.remove(&oldest);
        }
        sessions.insert(
            id.clone(),
            Session {
                token: token.trim().to_string(),
                started: Instant::now(),
            },
        );
        Ok(id)
    }

    pub fn sign_out(&self, session: &str) {
        self.sessions.lock().expect("sessions lock").remove(session);
    }
}

/// Asks the API server who owns `token`.
async fn review(reviewer: &Client, token: &str) -> Result<String, AuthError> {
    let request = TokenReview {
        spec: TokenReviewSpec {
            token: token.to_string(),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = Api::<TokenReview>::all(reviewer.clone())
        .create(&PostParams::default(), &request)
        .await
        .map_err(|e| AuthError::Review(e.to_string()))?;
    let status = answer.status.unwrap_or_default();
    if status.authenticated != Some(true) {
        let why = status.error.map(|e| format!(": {e}")).unwrap_or_default();
        return Err(AuthError::Rejected(why));
    }
    let user = status.user.unwrap_or_default();
    let name = user.username.unwrap_or_default();
    if name.is_empty() || name == "system:anonymous" {
        return Err(AuthError::Anonymous);
    }
    Ok(name)
}

/// A client that presents `token` and nothing else of the hub's.
fn client_for(base: &Config, token: &str) -> Result<Client, kube::Error> {
    let mut config = base.clone();
    config.auth_info = AuthInfo {
        token: Some(token.to_string().into()),
        ..Default::default()
    };
    Client::try_from(config)
}

/// The user name the API server knows `client` by.
async fn whoami(client: &Client) -> Option<String> {
    Api::<SelfSubjectReview>::all(client.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .ok()?
        .status?
        .user_info?
        .username
}

pub fn random_hex(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).expect("the system's random source");
    buffer.iter().map(|b| format!("{b:02x}")).collect()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
