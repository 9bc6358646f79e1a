//! Registry credentials from a `kubernetes.io/dockerconfigjson` pull Secret.

use std::collections::BTreeMap;

use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use windlass_oci::Auth;

/// The Secret type a Catalog's `pullSecret` must have.
pub const DOCKER_CONFIG_JSON_TYPE: &str = "kubernetes.io/dockerconfigjson";
/// The data key holding the docker config.
pub const DOCKER_CONFIG_JSON_KEY: &str = ".dockerconfigjson";

/// Credentials by registry host (`host[:port]`).
pub type Credentials = BTreeMap<String, Auth>;

/// Why a pull Secret cannot be used. Never carries a password.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CredentialsError {
    #[error("has type {0:?}, not {DOCKER_CONFIG_JSON_TYPE}")]
    WrongType(String),
    #[error("has no {DOCKER_CONFIG_JSON_KEY} key")]
    NoConfig,
    #[error("{DOCKER_CONFIG_JSON_KEY}: {0}")]
    BadConfig(String),
}

/// Reads the credentials of a `kubernetes.io/dockerconfigjson` Secret.
pub fn from_secret(secret: &Secret) -> Result<Credentials, CredentialsError> {
    let type_ = secret.type_.clone().unwrap_or_default();
    if type_ != DOCKER_CONFIG_JSON_TYPE {
        return Err(CredentialsError::WrongType(type_));
    }
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get(DOCKER_CONFIG_JSON_KEY))
        .map(|b| b.0.clone())
        .ok_or(CredentialsError::NoConfig)?;
    parse_docker_config(&bytes)
}

/// The registry host of a docker config key: `https://host:port/v1/` -> `host:port`.
fn host_of(key: &str) -> String {
    key.trim_start_matches("https://")
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Parses a docker config (`{"auths": {"<registry>": {"auth": base64(user:pass)} | {"username",
/// "password"}}}`) into credentials by registry host.
pub fn parse_docker_config(bytes: &[u8]) -> Result<Credentials, CredentialsError> {
    let bad = |m: String| CredentialsError::BadConfig(m);
    let config: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
    let Some(auths) = config["auths"].as_object() else {
        return Err(bad("no `auths` object".into()));
    };
    let mut out = Credentials::new();
    for (key, entry) in auths {
        let host = host_of(key);
        if let (Some(username), Some(password)) =
            (entry["username"].as_str(), entry["password"].as_str())
        {
            out.insert(
                host,
                Auth::Basic {
                    username: username.into(),
                    password: password.into(),
                },
            );
            continue;
        }
        let Some(encoded) = entry["auth"].as_str() else {
            continue;
        };
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|e| bad(format!("auths.{key}.auth is not base64: {e}")))?;
        let text = String::from_utf8(decoded)
            .map_err(|_| bad(format!("auths.{key}.auth is not UTF-8")))?;
        let (username, password) = text
            .split_once(':')
            .ok_or_else(|| bad(format!("auths.{key}.auth is not user:password")))?;
        out.insert(
            host,
            Auth::Basic {
                username: username.into(),
                password: password.into(),
            },
        );
    }
    Ok(out)
}

/// The credentials for `reference`'s registry: anonymous unless the Secret has an entry for it
/// (credentials never go to another registry).
pub fn auth_for(credentials: &Credentials, reference: &str) -> Auth {
    let Some(host) = windlass_oci::registry_of(reference) else {
        return Auth::Anonymous;
    };
    let docker_hub = ["docker.io", "index.docker.io", "registry-1.docker.io"];
    credentials
        .get(&host)
        .or_else(|| {
            docker_hub
                .contains(&host.as_str())
                .then(|| docker_hub.iter().find_map(|h| credentials.get(*h)))
                .flatten()
        })
        .cloned()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::ByteString;

    use super::*;

    fn basic(u: &str, p: &str) -> Auth {
        Auth::Basic {
            username: u.into(),
            password: p.into(),
        }
    }

    fn secret(type_: &str, config: &str) -> Secret {
        Secret {
            type_: Some(type_.into()),
            data: Some(
                [(
                    DOCKER_CONFIG_JSON_KEY.to_string(),
                    ByteString(config.as_bytes().to_vec()),
                )]
                .into(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn both_credential_spellings_are_read_by_host() {
        let encoded = base64::engine::general_purpose::STANDARD.encode("alice:s3:cret");
        let config = format!(
            r#"{{"auths": {{"127.0.0.1:5000": {{"auth": "{encoded}"}},
                "https://quay.io/v1/": {{"username": "bob", "password": "pw"}},
                "empty.example": {{}}}}}}"#
        );
        let credentials = from_secret(&secret(DOCKER_CONFIG_JSON_TYPE, &config)).unwrap();
        assert_eq!(credentials["127.0.0.1:5000"], basic("alice", "s3:cret"));
        assert_eq!(credentials["quay.io"], basic("bob", "pw"));
        assert!(!credentials.contains_key("empty.example"));
        assert_eq!(
            auth_for(&credentials, "127.0.0.1:5000/catalog:latest"),
            basic("alice", "s3:cret")
        );
        assert_eq!(
            auth_for(&credentials, "quay.io/acme/db-bundle@sha256:0123"),
            basic("bob", "pw")
        );
        // Never sent to a registry the Secret does not name.
        assert_eq!(
            auth_for(&credentials, "127.0.0.1:5001/catalog:latest"),
            Auth::Anonymous
        );
    }

    #[test]
    fn docker_hub_aliases_share_credentials() {
        let credentials: Credentials = [("index.docker.io".to_string(), basic("u", "p"))].into();
        assert_eq!(auth_for(&credentials, "acme/catalog:1"), basic("u", "p"));
    }

    #[test]
    fn unusable_secrets_say_why_without_secrets() {
        assert_eq!(
            from_secret(&secret("Opaque", "{}")),
            Err(CredentialsError::WrongType("Opaque".into()))
        );
        let empty = Secret {
            type_: Some(DOCKER_CONFIG_JSON_TYPE.into()),
            ..Default::default()
        };
        assert_eq!(from_secret(&empty), Err(CredentialsError::NoConfig));
        let error = from_secret(&secret(
            DOCKER_CONFIG_JSON_TYPE,
            r#"{"auths": {"r": {"auth": "bm9jb2xvbg=="}}}"#,
        ))
        .unwrap_err();
        assert!(error.to_string().contains("not user:password"), "{error}");
        assert!(matches!(
            from_secret(&secret(DOCKER_CONFIG_JSON_TYPE, "nope")),
            Err(CredentialsError::BadConfig(_))
        ));
    }
}
