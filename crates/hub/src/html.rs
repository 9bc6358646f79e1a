//! Escaping, and the frame every page shares.
//!
//! Pages are built as strings; every value that did not come from this crate goes through
//! [`escape`] (text and attribute values alike), and sanitized markdown is the only HTML
//! taken from outside. No page carries inline script or style: the one script and the one
//! stylesheet are served from `/static/`, so the Content-Security-Policy can forbid the rest.

use std::fmt::Write as _;

/// Escapes text for HTML and XML, in element content and in quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

/// A path segment, percent-encoded (catalog and package names are DNS-1123 in practice, but
/// nothing here relies on it).
pub fn segment(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

/// A query string from pairs, values percent-encoded.
pub fn query(pairs: &[(&str, &str)]) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        if !v.is_empty() {
            out.append_pair(k, v);
        }
    }
    out.finish()
}

/// Who is looking, and the token their state changes must carry.
#[derive(Clone, Debug, Default)]
pub struct Viewer {
    /// The user name the API server knows them by, when known (`kubectl auth whoami`).
    pub user: Option<String>,
    pub csrf_token: String,
}

/// Which part of the navigation is current.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    Packages,
    Installed,
    None,
}

/// The whole page around `body`.
pub fn layout(title: &str, section: Section, viewer: &Viewer, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 1024);
    let current = |s: Section| {
        if s == section {
            " aria-current=\"page\""
        } else {
            ""
        }
    };
    let _ = write!(
        out,
        concat!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
            "<meta name=\"csrf-token\" content=\"{csrf}\">",
            "<title>{title} · windlass hub</title>",
            "<link rel=\"stylesheet\" href=\"/static/hub.css\">",
            "<link rel=\"icon\" href=\"/static/favicon.svg\" type=\"image/svg+xml\">",
            "<script src=\"/static/hub.js\" defer></script></head>",
            "<body><header class=\"top\"><a class=\"brand\" href=\"/\">windlass hub</a>",
            "<nav><a href=\"/\"{packages}>Packages</a><a href=\"/installed\"{installed}>Installed</a></nav>",
            "<span class=\"who\">{who}</span></header><main>{body}</main></body></html>\n"
        ),
        csrf = escape(&viewer.csrf_token),
        title = escape(title),
        packages = current(Section::Packages),
        installed = current(Section::Installed),
        who = viewer
            .user
            .as_deref()
            .map(|u| format!("signed in as <strong>{}</strong>", escape(u)))
            .unwrap_or_default(),
        body = body,
    );
    out
}

/// A small provider-type badge.
pub fn provider_badge(provider_type: &str) -> String {
    format!(
        "<span class=\"badge type-{t}\">{t}</span>",
        t = escape(provider_type)
    )
}

/// The package's icon, or its first letter when the catalog has none.
pub fn icon(catalog: &str, package: &str, title: &str, has_icon: bool, class: &str) -> String {
    if has_icon {
        format!(
            "<img class=\"{class}\" src=\"/icons/{}/{}\" alt=\"\" width=\"48\" height=\"48\">",
            segment(catalog),
            segment(package)
        )
    } else {
        let letter: String = title
            .chars()
            .find(|c| c.is_alphanumeric())
            .map(|c| c.to_uppercase().collect())
            .unwrap_or_default();
        format!(
            "<span class=\"{class} letter\" aria-hidden=\"true\">{}</span>",
            escape(&letter)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_text_and_attributes() {
        assert_eq!(
            escape(r#"<a href="x" onclick='y'>&</a>"#),
            "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
        assert_eq!(segment("a b/c?"), "a%20b%2Fc%3F");
        assert_eq!(query(&[("q", "a&b"), ("x", "")]), "q=a%26b");
    }

    #[test]
    fn the_frame_carries_the_csrf_token_and_no_inline_code() {
        let viewer = Viewer {
            user: Some("<alice>".into()),
            csrf_token: "t\"ok".into(),
        };
        let page = layout("<T>", Section::Packages, &viewer, "<p>body</p>");
        assert!(page.contains("<meta name=\"csrf-token\" content=\"t&quot;ok\">"));
        assert!(page.contains("&lt;alice&gt;"));
        assert!(page.contains("<title>&lt;T&gt; · windlass hub</title>"));
        assert_eq!(page.matches("<script").count(), 1);
        assert!(page.contains("<script src=\"/static/hub.js\" defer></script>"));
        assert!(!page.contains("style="));
    }
}
