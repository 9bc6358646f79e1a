//! Signing in, and pages that only say what went wrong.

use crate::html::{Section, Viewer, escape, layout};

/// How the hub expects people to sign in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoginKind {
    /// `windlass hub` on a workstation: the link it printed carries a token.
    LaunchToken,
    /// In the cluster: a Kubernetes bearer token (`kubectl create token`, an OIDC id-token).
    KubernetesToken,
}

pub fn login_page(kind: LoginKind, problem: Option<&str>) -> String {
    let mut body = String::from("<h1>Sign in</h1>");
    if let Some(problem) = problem {
        body.push_str(&format!(
            "<p class=\"message error\" id=\"login-error\">{}</p>",
            escape(problem)
        ));
    }
    match kind {
        LoginKind::LaunchToken => body.push_str(
            "<p>Open the link <code>windlass hub</code> printed when it started: it signs you in \
             for this browser. The hub acts with that command's kubeconfig.</p>",
        ),
        LoginKind::KubernetesToken => body.push_str(
            "<p>The hub acts as you: paste a Kubernetes bearer token (for example from \
             <code>kubectl create token</code> or your identity provider). Every read and change \
             is made with it, so your RBAC decides what you see and may do.</p>\
             <form method=\"post\" action=\"/login\" class=\"login\"><label>Token \
             <input type=\"password\" name=\"token\" id=\"token\" autocomplete=\"off\" required></label>\
             <button type=\"submit\">Sign in</button></form>",
        ),
    }
    layout("Sign in", Section::None, &Viewer::default(), &body)
}

/// A page that says what went wrong (a missing package, a refused read).
pub fn error_page(title: &str, message: &str, viewer: &Viewer) -> String {
    let body = format!(
        "<h1>{}</h1><p class=\"message error\">{}</p><p><a href=\"/\">All packages</a></p>",
        escape(title),
        escape(message)
    );
    layout(title, Section::None, viewer, &body)
}
