//! Image references (`[registry[:port]/]path[:tag][@algorithm:hex]`), parsed by hand.
//!
//! The registry client's own parser matches one large Unicode regular expression: compiling
//! it costs tens of megabytes and every thread that matches it keeps a cache of several more,
//! which a long-running manager pays for as long as it lives. This parser accepts the same
//! grammar and normalises the same way (a first component without `.` or `:` that is not
//! `localhost` is a Docker Hub path, one-component Docker Hub names live under `library/`).

use oci_client::Reference;

const DOCKER_HUB: &str = "docker.io";
const DOCKER_HUB_LEGACY: &str = "index.docker.io";
const NAME_LENGTH_MAX: usize = 255;
const TAG_LENGTH_MAX: usize = 128;

/// Parses `reference`, or says what is wrong with it.
pub fn parse(reference: &str) -> Result<Reference, String> {
    if reference.is_empty() {
        return Err("it is empty".into());
    }
    let (rest, digest) = match reference.split_once('@') {
        Some((rest, digest)) => (rest, Some(check_digest(digest)?)),
        None => (reference, None),
    };
    // A tag follows the last `:` after the last `/`; a `:` before that belongs to a port.
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
        None => (rest, None),
    };
    if let Some(tag) = tag {
        check_tag(tag)?;
    }
    check_name(name)?;
    let (registry, repository) = split_registry(name);
    if repository.len() > NAME_LENGTH_MAX {
        return Err(format!(
            "the repository name is longer than {NAME_LENGTH_MAX} characters"
        ));
    }
    Ok(match (tag, digest) {
        (Some(tag), Some(digest)) => {
            Reference::with_tag_and_digest(registry, repository, tag.into(), digest.into())
        }
        (None, Some(digest)) => Reference::with_digest(registry, repository, digest.into()),
        (tag, None) => Reference::with_tag(registry, repository, tag.unwrap_or("latest").into()),
    })
}

fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the repository name is empty".into());
    }
    let components: Vec<&str> = name.split('/').collect();
    let path_valid = |path: &[&str]| !path.is_empty() && path.iter().all(|c| is_path_component(c));
    // The first component may be a registry host; either reading that fits is accepted.
    let with_registry = components.len() > 1 && is_registry(components[0]);
    if (with_registry && path_valid(&components[1..])) || path_valid(&components) {
        return Ok(());
    }
    let path = &components[usize::from(with_registry)..];
    if path
        .iter()
        .all(|c| is_path_component(&c.to_ascii_lowercase()))
    {
        return Err("the repository name must be lowercase".into());
    }
    Err(format!(
        "`{name}` is not a repository name (lowercase letters and digits, separated by `.`, `_`, `__`, dashes or `/`, after an optional registry host)"
    ))
}

/// `[a-z0-9]+` joined by `.`, `_`, `__` or any number of `-`.
fn is_path_component(component: &str) -> bool {
    let bytes = component.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if bytes.is_empty() || !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        if alnum(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !alnum(bytes[i]) {
            i += 1;
        }
        let separator = &component[start..i];
        let allowed = matches!(separator, "." | "_" | "__") || separator.bytes().all(|b| b == b'-');
        if !allowed {
            return false;
        }
    }
    true
}

/// Host labels of letters, digits and inner dashes, joined by `.`, with an optional port.
fn is_registry(host: &str) -> bool {
    let (labels, port) = match host.split_once(':') {
        Some((labels, port)) => (labels, Some(port)),
        None => (host, None),
    };
    let label_valid = |label: &str| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-'
    };
    labels.split('.').all(label_valid)
        && port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// A word character, then up to 127 word characters, `.` or `-`.
fn check_tag(tag: &str) -> Result<(), String> {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut chars = tag.chars();
    let first_valid = chars.next().is_some_and(word);
    let count = tag.chars().count();
    if !first_valid || count > TAG_LENGTH_MAX || !chars.all(|c| word(c) || c == '.' || c == '-') {
        return Err(format!(
            "`{tag}` is not a tag (a letter, digit or `_`, then up to 127 of those, `.` or `-`)"
        ));
    }
    Ok(())
}

/// `algorithm:hex`, with the hex length the algorithm fixes.
fn check_digest(digest: &str) -> Result<&str, String> {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return Err(format!("`{digest}` is not a digest (algorithm:hex)"));
    };
    let length = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        other => return Err(format!("digest algorithm `{other}` is not supported")),
    };
    if hex.len() != length || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "`{digest}` is not a {algorithm} digest ({length} hexadecimal digits)"
        ));
    }
    Ok(digest)
}

fn split_registry(name: &str) -> (String, String) {
    let (mut registry, mut repository) = match name.split_once('/') {
        Some((first, rest))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            (first.to_string(), rest.to_string())
        }
        _ => (DOCKER_HUB.to_string(), name.to_string()),
    };
    if registry == DOCKER_HUB_LEGACY {
        registry = DOCKER_HUB.into();
    }
    if registry == DOCKER_HUB && !repository.contains('/') {
        repository = format!("library/{repository}");
    }
    (registry, repository)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(reference: &str) -> (String, String, Option<String>, Option<String>) {
        let parsed = parse(reference).unwrap_or_else(|e| panic!("{reference}: {e}"));
        (
            parsed.registry().into(),
            parsed.repository().into(),
            parsed.tag().map(Into::into),
            parsed.digest().map(Into::into),
        )
    }

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn registries_ports_tags_and_digests_are_told_apart() {
        assert_eq!(
            parts("127.0.0.1:5000/demo:1.0.0"),
            (
                "127.0.0.1:5000".into(),
                "demo".into(),
                Some("1.0.0".into()),
                None
            )
        );
        assert_eq!(
            parts("localhost:5000/a/b_c/d__e/f.g-h--i"),
            (
                "localhost:5000".into(),
                "a/b_c/d__e/f.g-h--i".into(),
                Some("latest".into()),
                None
            )
        );
        assert_eq!(
            parts(&format!("quay.io/acme/db:v1@{DIGEST}")),
            (
                "quay.io".into(),
                "acme/db".into(),
                Some("v1".into()),
                Some(DIGEST.into())
            )
        );
        assert_eq!(
            parts(&format!("registry:5000/x@{DIGEST}")),
            (
                "registry:5000".into(),
                "x".into(),
                None,
                Some(DIGEST.into())
            )
        );
    }

    #[test]
    fn short_names_are_docker_hub_names() {
        assert_eq!(parts("nginx").0, "docker.io");
        assert_eq!(parts("nginx").1, "library/nginx");
        assert_eq!(parts("acme/db:1").1, "acme/db");
        assert_eq!(parts("index.docker.io/nginx").0, "docker.io");
        assert_eq!(parts("index.docker.io/nginx").1, "library/nginx");
        assert_eq!(parts("localhost/x").0, "localhost");
    }

    #[test]
    fn the_client_parser_agrees_on_valid_references() {
        for reference in [
            "nginx",
            "nginx:1.27",
            "acme/db",
            "quay.io/acme/db-operator:v1.2.3",
            "registry.site:5000/mirror/acme/db:latest",
            "localhost:5000/x",
            "Registry.Example.com/acme/x:T_1",
            &format!("quay.io/acme/db@{DIGEST}"),
            &format!("quay.io/acme/db:v1@{DIGEST}"),
        ] {
            let ours = parse(reference).unwrap();
            let theirs: Reference = reference.parse().unwrap();
            assert_eq!(ours.whole(), theirs.whole(), "{reference}");
            assert_eq!(ours.registry(), theirs.registry(), "{reference}");
            assert_eq!(ours.repository(), theirs.repository(), "{reference}");
        }
    }

    #[test]
    fn malformed_references_say_what_is_wrong() {
        for (reference, says) in [
            ("", "empty"),
            ("Not A Ref", "not a repository name"),
            ("quay.io/Acme/db", "lowercase"),
            ("quay.io//acme", "not a repository name"),
            ("quay.io/acme-/db", "not a repository name"),
            ("quay.io/acme:-v1", "not a tag"),
            (&format!("quay.io/acme:{}", "v".repeat(129)), "not a tag"),
            ("quay.io/acme@sha256:0123", "64 hexadecimal digits"),
            ("quay.io/acme@md5:0123", "not supported"),
            ("quay.io/acme@0123", "algorithm:hex"),
            ("quay.io:port/acme", "not a repository name"),
        ] {
            let error = parse(reference).map(|r| r.whole()).unwrap_err();
            assert!(error.contains(says), "{reference}: {error}");
            assert!(reference.parse::<Reference>().is_err(), "{reference}");
        }
    }
}
