//! The recorded cosign output the trust tests read (`tests/data/cosign`).

/// A recorded file's bytes.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/cosign/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The digest of the image cosign signed.
pub fn digest() -> String {
    String::from_utf8(fixture("digest"))
        .unwrap()
        .trim()
        .to_string()
}
