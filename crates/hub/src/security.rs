//! The rules every response and every state change follows, as plain functions.
//!
//! - Every response carries a strict Content-Security-Policy (only the hub's own script,
//!   stylesheet and images; no inline code, no plugins, no framing, forms post only to the
//!   hub), `nosniff`, no referrer, and no framing.
//! - A state change needs a CSRF token bound to the credential that signed the request in
//!   (an HMAC under a key only this hub process holds), and, when the browser names an origin,
//!   that origin must be the hub's own. Cookies are `HttpOnly; SameSite=Strict`.
//! - Icons are served only as images, of the type the catalog declares when it is one of a few
//!   image types and the bytes look like it.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The Content-Security-Policy of every page and API response.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'";

/// Served with icons and graphs: an SVG opened on its own runs nothing and loads nothing.
pub const IMAGE_CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; style-src 'unsafe-inline'; sandbox; frame-ancestors 'none'";

/// Headers every response carries (besides its Content-Security-Policy).
pub const SECURITY_HEADERS: [(&str, &str); 5] = [
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
];

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "windlass_hub_session";

/// The header the page's script sends the CSRF token in (forms without script send the field
/// `csrf`).
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The CSRF token for a credential (a session id or a bearer token): hex HMAC-SHA256 under
/// the hub's key.
pub fn csrf_token(key: &[u8], credential: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(b"windlass-hub csrf\0");
    mac.update(credential.as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether `presented` is the CSRF token of `credential`, compared in constant time.
pub fn csrf_valid(key: &[u8], credential: &str, presented: &str) -> bool {
    let Some(bytes) = decode_hex(presented) else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(b"windlass-hub csrf\0");
    mac.update(credential.as_bytes());
    mac.verify_slice(&bytes).is_ok()
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The verdict on where a state-changing request came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OriginCheck {
    SameOrigin,
    /// The browser named another origin (or `null`).
    CrossOrigin(String),
    /// No `Origin` or `Referer`, as from curl: allowed only with a valid CSRF token, which such
    /// a client has only if it read a page first.
    Unknown,
}

/// Compares the request's `Origin` (else `Referer`) with the hub's own origin, which is
/// `scheme://host` from the request's `Host`.
pub fn check_origin(
    origin: Option<&str>,
    referer: Option<&str>,
    host: Option<&str>,
    scheme: &str,
) -> OriginCheck {
    let Some(host) = host else {
        return OriginCheck::CrossOrigin("(no Host header)".into());
    };
    let ours = format!("{scheme}://{}", host.to_ascii_lowercase());
    let named = match (origin, referer) {
        (Some(origin), _) => origin.to_ascii_lowercase(),
        (None, Some(referer)) => {
            let lower = referer.to_ascii_lowercase();
            // scheme://authority of the referring page.
            match lower.split_once("://") {
                Some((s, rest)) => format!("{s}://{}", rest.split('/').next().unwrap_or("")),
                None => lower,
            }
        }
        (None, None) => return OriginCheck::Unknown,
    };
    if named == ours {
        OriginCheck::SameOrigin
    } else {
        OriginCheck::CrossOrigin(named)
    }
}

/// The session cookie as set: only sent back to this hub, never readable by script, never
/// on a request another site starts. `Secure` when the hub is reached over TLS.
pub fn session_cookie(id: &str, secure: bool, max_age_seconds: u64) -> String {
    format!(
        "{SESSION_COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_seconds}{}",
        if secure { "; Secure" } else { "" }
    )
}

/// The session id from a `Cookie` header, if present.
pub fn session_from_cookies(cookie_header: &str) -> Option<&str> {
    cookie_header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value)
}

/// The image types an icon may be served as.
pub const ICON_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/svg+xml"];

/// Why an icon is not served.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IconError {
    #[error("the package has no icon")]
    None,
    #[error("the icon's media type {0:?} is not one of {ICON_TYPES:?}")]
    MediaType(String),
    #[error("the icon's base64data does not decode: {0}")]
    Base64(String),
    #[error("the icon's bytes are not a {0} image")]
    Content(String),
}

/// An icon from its `{base64data, mediatype}`: the bytes and the type to serve them as, when
/// the declared type is an image type allowed here and the bytes are of that type.
pub fn icon(value: &serde_json::Value) -> Result<(Vec<u8>, &'static str), IconError> {
    use base64::Engine;
    let declared = value["mediatype"]
        .as_str()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let data = value["base64data"].as_str().unwrap_or_default();
    if data.is_empty() {
        return Err(IconError::None);
    }
    let media_type = ICON_TYPES
        .iter()
        .copied()
        .find(|t| *t == declared)
        .ok_or_else(|| IconError::MediaType(declared.clone()))?;
    let cleaned: String = data.chars().filter(|c| !c.is_whitespace()).collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(cleaned.as_bytes())
        .map_err(|e| IconError::Base64(e.to_string()))?;
    let looks_right = match media_type {
        "image/png" => bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "image/jpeg" => bytes.starts_with(&[0xff, 0xd8, 0xff]),
        "image/gif" => bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a"),
        // SVG is text: an XML document whose root is an svg element.
        _ => String::from_utf8_lossy(&bytes)
            .to_ascii_lowercase()
            .contains("<svg"),
    };
    if !looks_right {
        return Err(IconError::Content(media_type.into()));
    }
    Ok((bytes, media_type))
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use serde_json::json;

    use super::*;

    #[test]
    fn csrf_tokens_are_bound_to_the_key_and_the_credential() {
        let token = csrf_token(b"key", "session-1");
        assert_eq!(token.len(), 64);
        assert!(csrf_valid(b"key", "session-1", &token));
        assert!(!csrf_valid(b"key", "session-2", &token));
        assert!(!csrf_valid(b"other", "session-1", &token));
        assert!(!csrf_valid(b"key", "session-1", ""));
        assert!(!csrf_valid(b"key", "session-1", "zz"));
        assert!(!csrf_valid(b"key", "session-1", &token[..62]));
    }

    #[test]
    fn origins_are_compared_with_the_host() {
        let host = Some("127.0.0.1:8080");
        let cases = [
            (Some("http://127.0.0.1:8080"), None, OriginCheck::SameOrigin),
            (
                Some("http://evil.example"),
                None,
                OriginCheck::CrossOrigin("http://evil.example".into()),
            ),
            (Some("null"), None, OriginCheck::CrossOrigin("null".into())),
            (
                None,
                Some("http://127.0.0.1:8080/packages/x"),
                OriginCheck::SameOrigin,
            ),
            (
                None,
                Some("http://127.0.0.1:8080.evil/x"),
                OriginCheck::CrossOrigin("http://127.0.0.1:8080.evil".into()),
            ),
            (None, None, OriginCheck::Unknown),
        ];
        for (origin, referer, expected) in cases {
            assert_eq!(
                check_origin(origin, referer, host, "http"),
                expected,
                "{origin:?} {referer:?}"
            );
        }
        assert!(matches!(
            check_origin(Some("https://127.0.0.1:8080"), None, host, "http"),
            OriginCheck::CrossOrigin(_)
        ));
    }

    #[test]
    fn the_policy_forbids_inline_code_plugins_and_framing() {
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "object-src 'none'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
            "form-action 'self'",
        ] {
            assert!(CONTENT_SECURITY_POLICY.contains(directive), "{directive}");
        }
        assert!(!CONTENT_SECURITY_POLICY.contains("unsafe"));
    }

    #[test]
    fn cookies_are_http_only_and_strict() {
        let cookie = session_cookie("abc", false, 3600);
        assert_eq!(
            cookie,
            "windlass_hub_session=abc; Path=/; HttpOnly; SameSite=Strict; Max-Age=3600"
        );
        assert!(session_cookie("abc", true, 1).ends_with("; Secure"));
        assert_eq!(
            session_from_cookies("a=b; windlass_hub_session=xyz; c=d"),
            Some("xyz")
        );
        assert_eq!(session_from_cookies("a=b"), None);
    }

    #[test]
    fn icons_are_served_only_as_the_image_they_declare() {
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        let png = crate::synthetic::PNG_PIXEL;
        assert_eq!(
            icon(&json!({"base64data": b64(png), "mediatype": "image/png"}))
                .unwrap()
                .1,
            "image/png"
        );
        let svg = b"<?xml version=\"1.0\"?><svg xmlns=\"http://www.w3.org/2000/svg\"/>";
        assert_eq!(
            icon(&json!({"base64data": b64(svg), "mediatype": "image/svg+xml"}))
                .unwrap()
                .1,
            "image/svg+xml"
        );
        let refused = [
            (
                json!({"base64data": b64(b"<html><script>x</script>"), "mediatype": "text/html"}),
                "media type",
            ),
            (
                json!({"base64data": b64(b"<html><script>x</script>"), "mediatype": "image/png"}),
                "not a image/png",
            ),
            (
                json!({"base64data": b64(png), "mediatype": "image/svg+xml"}),
                "not a image/svg+xml",
            ),
            (
                json!({"base64data": "!!!", "mediatype": "image/png"}),
                "does not decode",
            ),
            (json!({"mediatype": "image/png"}), "no icon"),
        ];
        for (value, expected) in refused {
            let error = icon(&value).unwrap_err().to_string();
            assert!(error.contains(expected), "{value}: {error}");
        }
    }
}
