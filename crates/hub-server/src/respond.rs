//! Building responses: every one carries the security headers and its Content-Security-
//! Policy; bodies are gzipped when the client accepts it and they are worth compressing.

use std::io::Write as _;

use http_body_util::Full;
use hyper::{Response, StatusCode, body::Bytes, header};
use windlass_hub::security::{CONTENT_SECURITY_POLICY, SECURITY_HEADERS};

pub type Reply = Response<Full<Bytes>>;

pub const HTML: &str = "text/html; charset=utf-8";
pub const JSON: &str = "application/json";
pub const JSON_LINES: &str = "application/jsonl";
pub const TEXT: &str = "text/plain; charset=utf-8";

/// Bodies smaller than this are sent as they are.
const COMPRESS_FROM: usize = 1024;

pub struct Builder {
    status: StatusCode,
    content_type: &'static str,
    body: Vec<u8>,
    headers: Vec<(header::HeaderName, String)>,
    csp: &'static str,
    gzip: bool,
}

impl Builder {
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Builder {
        Builder {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            content_type,
            body: body.into(),
            headers: Vec::new(),
            csp: CONTENT_SECURITY_POLICY,
            gzip: false,
        }
    }

    pub fn header(mut self, name: header::HeaderName, value: impl Into<String>) -> Builder {
        self.headers.push((name, value.into()));
        self
    }

    pub fn csp(mut self, policy: &'static str) -> Builder {
        self.csp = policy;
        self
    }

    /// Gzip the body when `accept_encoding` allows it.
    pub fn gzip_for(mut self, accept_encoding: Option<&str>) -> Builder {
        self.gzip = accept_encoding.is_some_and(accepts_gzip);
        self
    }

    pub fn build(self) -> Reply {
        let compress = self.gzip && self.body.len() >= COMPRESS_FROM;
        let body = if compress {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            let _ = encoder.write_all(&self.body);
            encoder.finish().unwrap_or_default()
        } else {
            self.body
        };
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        let mut set = |name: header::HeaderName, value: &str| {
            if let Ok(value) = value.parse() {
                headers.insert(name, value);
            }
        };
        set(header::CONTENT_TYPE, self.content_type);
        set(header::CONTENT_SECURITY_POLICY, self.csp);
        for (name, value) in SECURITY_HEADERS {
            set(header::HeaderName::from_static(name), value);
        }
        set(header::CACHE_CONTROL, "no-store");
        set(header::VARY, "Accept-Encoding, Cookie, Authorization");
        if compress {
            set(header::CONTENT_ENCODING, "gzip");
        }
        for (name, value) in &self.headers {
            set(name.clone(), value);
        }
        response
    }
}

/// Whether an `Accept-Encoding` header allows gzip (and does not refuse it with `q=0`).
pub fn accepts_gzip(accept_encoding: &str) -> bool {
    accept_encoding.split(',').any(|part| {
        let mut pieces = part.split(';').map(str::trim);
        let coding = pieces.next().unwrap_or_default();
        let refused = pieces.any(|p| p.replace(' ', "") == "q=0" || p.replace(' ', "") == "q=0.0");
        (coding.eq_ignore_ascii_case("gzip") || coding == "*") && !refused
    })
}

pub fn json(status: u16, value: &impl serde::Serialize) -> Builder {
    Builder::new(
        status,
        JSON,
        serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec()),
    )
}

/// `{"message": ...}` with a status.
pub fn message(status: u16, text: &str) -> Builder {
    json(status, &serde_json::json!({ "message": text }))
}

pub fn html(status: u16, page: String) -> Builder {
    Builder::new(status, HTML, page)
}

pub fn redirect(location: &str) -> Builder {
    Builder::new(303, TEXT, format!("see {location}\n")).header(header::LOCATION, location)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_used_when_accepted_and_worth_it() {
        for (header, expected) in [
            ("gzip", true),
            ("gzip, deflate, br", true),
            ("br;q=1.0, gzip;q=0.8", true),
            ("*", true),
            ("gzip;q=0", false),
            ("deflate", false),
            ("", false),
        ] {
            assert_eq!(accepts_gzip(header), expected, "{header:?}");
        }
        let big = Builder::new(200, TEXT, vec![b'a'; 4096])
            .gzip_for(Some("gzip"))
            .build();
        assert_eq!(big.headers()[header::CONTENT_ENCODING], "gzip");
        let small = Builder::new(200, TEXT, "x").gzip_for(Some("gzip")).build();
        assert!(small.headers().get(header::CONTENT_ENCODING).is_none());
    }

    #[test]
    fn every_response_carries_the_policy_and_nosniff() {
        let reply = message(404, "no").build();
        assert_eq!(
            reply.headers()[header::CONTENT_SECURITY_POLICY],
            CONTENT_SECURITY_POLICY
        );
        assert_eq!(reply.headers()["x-content-type-options"], "nosniff");
        assert_eq!(reply.headers()["x-frame-options"], "DENY");
    }
}
