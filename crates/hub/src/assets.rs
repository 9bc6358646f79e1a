//! The page's only script, stylesheet and icon, compiled into the binary: the hub needs no
//! file on disk and makes no request to anywhere else.

/// `(path under /static/, content type, bytes)`.
pub const ASSETS: [(&str, &str, &[u8]); 3] = [
    (
        "hub.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/hub.js"),
    ),
    (
        "hub.css",
        "text/css; charset=utf-8",
        include_bytes!("../assets/hub.css"),
    ),
    (
        "favicon.svg",
        "image/svg+xml",
        include_bytes!("../assets/favicon.svg"),
    ),
];

/// An asset by its name under `/static/`.
pub fn asset(name: &str) -> Option<(&'static str, &'static [u8])> {
    ASSETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, t, b)| (*t, *b))
}
