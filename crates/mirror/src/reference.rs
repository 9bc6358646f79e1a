//! Image references as container runtimes read them: `[domain/]path[:tag][@digest]`, with
//! Docker Hub's short names expanded (`nginx` is `docker.io/library/nginx`), and repository
//! prefixes (`quay.io/acme`) as mirror rules name them.

use std::fmt;

/// Docker Hub, as references name it once normalised.
pub const DOCKER_HUB: &str = "docker.io";
/// Docker Hub's official images live under this namespace.
const DOCKER_LIBRARY: &str = "library";
/// Longest tag a registry accepts.
const MAX_TAG: usize = 128;
/// Longest repository name (domain and path) a registry accepts.
const MAX_NAME: usize = 255;

/// A parsed image reference, normalised: the domain is always present.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ImageReference {
    /// `quay.io`, `127.0.0.1:5000`, `docker.io`.
    pub domain: String,
    /// `acme/operator`, `library/nginx`.
    pub path: String,
    pub tag: Option<String>,
    /// `sha256:<hex>` (or another algorithm).
    pub digest: Option<String>,
}

/// Why a string is not an image reference or prefix. Each names the text and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    #[error("`{0}` is empty")]
    Empty(String),
    #[error("`{text}` is not an image reference: {why}")]
    Invalid { text: String, why: String },
    #[error(
        "`{0}` is not a registry or repository prefix: it must start with a registry host (quay.io/acme, docker.io/library/nginx) and carry no tag or digest"
    )]
    NotAPrefix(String),
}

impl ImageReference {
    /// Parses and normalises a reference.
    pub fn parse(text: &str) -> Result<ImageReference, ReferenceError> {
        let invalid = |why: &str| ReferenceError::Invalid {
            text: text.to_string(),
            why: why.to_string(),
        };
        if text.trim().is_empty() {
            return Err(ReferenceError::Empty(text.to_string()));
        }
        let (rest, digest) = match text.split_once('@') {
            Some((rest, digest)) => {
                check_digest(digest).map_err(|why| invalid(&why))?;
                (rest, Some(digest.to_string()))
            }
            None => (text, None),
        };
        // A tag follows the last `:` after the last `/`; a `:` before it is a port.
        let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match rest[last_slash..].rfind(':') {
            Some(i) => {
                let tag = &rest[last_slash + i + 1..];
                check_tag(tag).map_err(|why| invalid(&why))?;
                (&rest[..last_slash + i], Some(tag.to_string()))
            }
            None => (rest, None),
        };
        let (domain, path) = split_domain(name);
        check_domain(&domain).map_err(|why| invalid(&why))?;
        check_path(&path).map_err(|why| invalid(&why))?;
        let reference = ImageReference {
            domain,
            path,
            tag,
            digest,
        };
        if reference.name().len() > MAX_NAME {
            return Err(invalid(&format!(
                "the repository name is longer than {MAX_NAME} characters"
            )));
        }
        Ok(reference)
    }

    /// `domain/path`: the repository, without tag or digest.
    pub fn name(&self) -> String {
        format!("{}/{}", self.domain, self.path)
    }

    /// `:tag@digest`, whichever are present: what follows the name.
    pub fn suffix(&self) -> String {
        let mut out = String::new();
        if let Some(tag) = &self.tag {
            out.push(':');
            out.push_str(tag);
        }
        if let Some(digest) = &self.digest {
            out.push('@');
            out.push_str(digest);
        }
        out
    }

    /// The same image under another repository name (tag and digest kept).
    pub fn with_name(&self, name: &RepositoryPrefix) -> ImageReference {
        let (domain, path) = match name.0.split_once('/') {
            Some((domain, path)) => (domain.to_string(), path.to_string()),
            None => (name.0.clone(), String::new()),
        };
        ImageReference {
            domain,
            path,
            tag: self.tag.clone(),
            digest: self.digest.clone(),
        }
    }

    /// `name@digest` when there is a digest, else the reference as it is.
    pub fn pinned(&self) -> String {
        match &self.digest {
            Some(digest) => format!("{}@{digest}", self.name()),
            None => self.to_string(),
        }
    }
}

impl fmt::Display for ImageReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.name(), self.suffix())
    }
}

impl std::str::FromStr for ImageReference {
    type Err = ReferenceError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ImageReference::parse(text)
    }
}

/// A registry host, optionally followed by a repository path: `quay.io`, `quay.io/acme`,
/// `127.0.0.1:5000/mirror`. It matches a repository equal to it or below it (`quay.io/acme`
/// matches `quay.io/acme/db`, never `quay.io/acmecorp/db`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RepositoryPrefix(String);

impl RepositoryPrefix {
    /// Parses a prefix. It must start with a registry host, so `nginx` (a Docker Hub short
    /// name) is refused as ambiguous; `docker.io/library/nginx` says what it means. Docker
    /// Hub's other spellings (`index.docker.io`) are normalised.
    pub fn parse(text: &str) -> Result<RepositoryPrefix, ReferenceError> {
        let not_a_prefix = || ReferenceError::NotAPrefix(text.to_string());
        if text.trim().is_empty() {
            return Err(ReferenceError::Empty(text.to_string()));
        }
        if text.contains('@') || text.ends_with('/') {
            return Err(not_a_prefix());
        }
        let (first, path) = match text.split_once('/') {
            Some((first, path)) => (first, Some(path)),
            None => (text, None),
        };
        if !looks_like_domain(first) {
            return Err(not_a_prefix());
        }
        let domain = normalise_domain(first);
        check_domain(&domain).map_err(|_| not_a_prefix())?;
        let mut prefix = domain;
        if let Some(path) = path {
            // A `:` after the host is a tag: prefixes have none.
            check_path(path).map_err(|_| not_a_prefix())?;
            prefix.push('/');
            prefix.push_str(path);
        }
        if prefix.len() > MAX_NAME {
            return Err(not_a_prefix());
        }
        Ok(RepositoryPrefix(prefix))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the repository `name` (`domain/path`) is this prefix or lies below it.
    pub fn covers(&self, name: &str) -> bool {
        name == self.0
            || name
                .strip_prefix(self.0.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
    }

    /// `name` with this prefix replaced by `to`; `None` when the prefix does not cover it.
    pub fn replace_in(&self, name: &str, to: &RepositoryPrefix) -> Option<String> {
        self.covers(name)
            .then(|| format!("{}{}", to.0, &name[self.0.len()..]))
    }
}

impl fmt::Display for RepositoryPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether the first component of a name is a registry host rather than a Docker Hub
/// namespace: it has a `.` or a port, or is `localhost`.
fn looks_like_domain(first: &str) -> bool {
    first.contains('.') || first.contains(':') || first == "localhost"
}

fn normalise_domain(domain: &str) -> String {
    match domain {
        "index.docker.io" | "registry-1.docker.io" => DOCKER_HUB.to_string(),
        other => other.to_string(),
    }
}

/// `name` as domain and path, Docker Hub's short names expanded.
fn split_domain(name: &str) -> (String, String) {
    match name.split_once('/') {
        Some((first, rest))
            if looks_like_domain(first) || first.chars().any(|c| c.is_ascii_uppercase()) =>
        {
            let domain = normalise_domain(first);
            let path = if domain == DOCKER_HUB && !rest.contains('/') {
                format!("{DOCKER_LIBRARY}/{rest}")
            } else {
                rest.to_string()
            };
            (domain, path)
        }
        Some(_) => (DOCKER_HUB.to_string(), name.to_string()),
        None => (DOCKER_HUB.to_string(), format!("{DOCKER_LIBRARY}/{name}")),
    }
}

fn check_domain(domain: &str) -> Result<(), String> {
    let invalid_host = || format!("`{domain}` is not a valid registry host");
    let (host, port) = if domain.starts_with('[') {
        let end = domain.find(']').ok_or_else(invalid_host)?;
        let rest = &domain[end + 1..];
        match rest.strip_prefix(':') {
            Some(port) => (&domain[..=end], Some(port)),
            None if rest.is_empty() => (domain, None),
            None => return Err(invalid_host()),
        }
    } else {
        match domain.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (domain, None),
        }
    };
    if let Some(port) = port
        && (port.is_empty() || !port.chars().all(|c| c.is_ascii_digit()) || port.len() > 5)
    {
        return Err(format!("`{domain}` has an invalid port"));
    }
    if host.starts_with('[') && host.ends_with(']') {
        let inner = &host[1..host.len() - 1];
        return if !inner.is_empty() && inner.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            Ok(())
        } else {
            Err(format!("`{domain}` is not a valid IPv6 host"))
        };
    }
    let component_ok = |c: &str| {
        !c.is_empty()
            && c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-')
            && !c.starts_with('-')
            && !c.ends_with('-')
    };
    if host.split('.').all(component_ok) {
        Ok(())
    } else {
        Err(format!("`{domain}` is not a valid registry host"))
    }
}

/// Path components: lowercase letters and digits, separated by `.`, `_`, `__` or dashes.
fn check_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("the repository path is empty".into());
    }
    for component in path.split('/') {
        let bytes = component.as_bytes();
        let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        let valid = !bytes.is_empty()
            && alnum(&bytes[0])
            && alnum(&bytes[bytes.len() - 1])
            && bytes
                .iter()
                .all(|b| alnum(b) || matches!(b, b'.' | b'_' | b'-'))
            && !component.contains("..")
            && !component.contains("___")
            && !component.contains("._")
            && !component.contains("_.");
        if !valid {
            return Err(format!(
                "repository path component `{component}` must be lowercase letters and digits, separated by `.`, `_`, `__` or `-`"
            ));
        }
    }
    Ok(())
}

fn check_tag(tag: &str) -> Result<(), String> {
    let valid = !tag.is_empty()
        && tag.len() <= MAX_TAG
        && tag
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "tag `{tag}` must be 1 to {MAX_TAG} letters, digits, `_`, `.` or `-`, not starting with `.` or `-`"
        ))
    }
}

fn check_digest(digest: &str) -> Result<(), String> {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return Err(format!("digest `{digest}` is not algorithm:hex"));
    };
    let hex_ok = |len: usize| {
        hex.len() == len
            && hex
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    };
    let valid = match algorithm {
        "sha256" => hex_ok(64),
        "sha512" => hex_ok(128),
        _ => false,
    };
    if valid {
        Ok(())
    } else {
        Err(format!(
            "digest `{digest}` is not sha256:<64 lowercase hex> (or sha512:<128>)"
        ))
    }
}

/// Whether `digest` is `sha256:` followed by 64 lowercase hex digits.
pub fn is_sha256_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn references_are_normalised_as_runtimes_read_them() {
        let cases = [
            ("nginx", "docker.io/library/nginx", None, None),
            ("nginx:1.27", "docker.io/library/nginx", Some("1.27"), None),
            ("acme/db", "docker.io/acme/db", None, None),
            (
                "index.docker.io/acme/db:1",
                "docker.io/acme/db",
                Some("1"),
                None,
            ),
            ("docker.io/nginx", "docker.io/library/nginx", None, None),
            (
                "quay.io/acme/db-operator@DIGEST",
                "quay.io/acme/db-operator",
                None,
                Some(DIGEST),
            ),
            (
                "127.0.0.1:5000/acme/db:v1@DIGEST",
                "127.0.0.1:5000/acme/db",
                Some("v1"),
                Some(DIGEST),
            ),
            ("localhost/db", "localhost/db", None, None),
            ("localhost:5000/a/b/c", "localhost:5000/a/b/c", None, None),
            ("[::1]:5000/db:2", "[::1]:5000/db", Some("2"), None),
        ];
        for (text, name, tag, digest) in cases {
            let text = text.replace("DIGEST", DIGEST);
            let parsed = ImageReference::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(parsed.name(), name, "{text}");
            assert_eq!(parsed.tag.as_deref(), tag, "{text}");
            assert_eq!(parsed.digest.as_deref(), digest, "{text}");
            // Printing and reading again gives the same reference.
            assert_eq!(ImageReference::parse(&parsed.to_string()).unwrap(), parsed);
        }
    }

    #[test]
    fn bad_references_say_what_is_wrong() {
        let cases = [
            ("", "is empty"),
            ("quay.io/Acme/db", "lowercase"),
            ("quay.io/acme/db:", "tag"),
            ("quay.io/acme/db:-x", "tag"),
            ("quay.io/acme/db@sha256:abc", "digest"),
            ("quay.io/acme/db@md5:0123", "digest"),
            ("quay.io:port/acme", "port"),
            ("quay.io/acme//db", "path component"),
            ("quay.io/", "empty"),
        ];
        for (text, expected) in cases {
            let error = ImageReference::parse(text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn prefixes_start_with_a_host_and_carry_no_tag() {
        for ok in [
            "quay.io",
            "quay.io/acme",
            "127.0.0.1:5000/mirror/x",
            "localhost/a",
        ] {
            assert_eq!(RepositoryPrefix::parse(ok).unwrap().as_str(), ok);
        }
        assert_eq!(
            RepositoryPrefix::parse("index.docker.io/library")
                .unwrap()
                .as_str(),
            "docker.io/library"
        );
        for bad in [
            "nginx",
            "acme/db",
            "quay.io/acme:v1",
            "quay.io/acme@sha256:00",
            "quay.io/",
            "",
        ] {
            assert!(RepositoryPrefix::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_prefix_covers_itself_and_what_lies_below_it_only() {
        let prefix = RepositoryPrefix::parse("quay.io/acme").unwrap();
        assert!(prefix.covers("quay.io/acme"));
        assert!(prefix.covers("quay.io/acme/db"));
        assert!(!prefix.covers("quay.io/acmecorp/db"));
        assert!(!prefix.covers("quay.io"));
        let to = RepositoryPrefix::parse("10.0.0.1:5000/mirror").unwrap();
        assert_eq!(
            prefix.replace_in("quay.io/acme/db", &to).as_deref(),
            Some("10.0.0.1:5000/mirror/db")
        );
        assert_eq!(prefix.replace_in("quay.io/other/db", &to), None);
    }

    #[test]
    fn sha256_digests_are_recognised() {
        assert!(is_sha256_digest(DIGEST));
        assert!(!is_sha256_digest("sha256:ABC"));
        assert!(!is_sha256_digest(&DIGEST.replace("sha256", "sha512")));
    }
}
