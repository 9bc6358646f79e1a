//! Names and labels of the objects a CSV creates.

use sha2::{Digest, Sha256};

/// Joins parts with `-`; when the result exceeds `max`, keeps a prefix and appends a short hash
/// of the whole, so distinct inputs stay distinct and the name stays stable across reconciles.
pub fn bounded(parts: &[&str], max: usize) -> String {
    let joined = parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("-");
    if joined.len() <= max {
        return joined;
    }
    let hash = Sha256::digest(joined.as_bytes());
    let suffix: String = hash.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let keep = max - suffix.len() - 1;
    let mut prefix: String = joined.chars().take(keep).collect();
    while prefix.ends_with(['-', '.']) {
        prefix.pop();
    }
    format!("{prefix}-{suffix}")
}

/// Object names (DNS subdomains) allow 253 characters.
pub fn object_name(parts: &[&str]) -> String {
    bounded(parts, 253)
}

/// Label values allow 63 characters.
pub fn label_value(value: &str) -> String {
    bounded(&[value], 63)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_joined_and_long_ones_hashed_stably() {
        assert_eq!(bounded(&["a", "", "b"], 63), "a-b");
        let long = "x".repeat(100);
        let one = bounded(&[&long, "sa"], 63);
        assert_eq!(one.len(), 63);
        assert_eq!(one, bounded(&[&long, "sa"], 63));
        assert_ne!(one, bounded(&[&long, "sb"], 63));
    }
}
