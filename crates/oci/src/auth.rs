//! Registry credentials: given on the command line or read from a docker config file.

use std::path::{Path, PathBuf};

use base64::Engine;

/// Credentials for one registry.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Auth {
    #[default]
    Anonymous,
    Basic {
        username: String,
        password: String,
    },
}

impl std::fmt::Debug for Auth {
    // Never print a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::Anonymous => f.write_str("Anonymous"),
            Auth::Basic { username, .. } => write!(f, "Basic({username}, ***)"),
        }
    }
}

impl Auth {
    pub(crate) fn to_registry_auth(&self) -> oci_client::secrets::RegistryAuth {
        match self {
            Auth::Anonymous => oci_client::secrets::RegistryAuth::Anonymous,
            Auth::Basic { username, password } => {
                oci_client::secrets::RegistryAuth::Basic(username.clone(), password.clone())
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("{}: {message}", path.display())]
    BadConfig { path: PathBuf, message: String },
}

/// The credentials a docker config (`config.json` / `auth.json` format) holds for `registry`.
/// `None` when the file has no entry for it.
pub fn docker_config_auth(path: &Path, registry: &str) -> Result<Option<Auth>, AuthError> {
    let bad = |message: String| AuthError::BadConfig {
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let config: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let Some(auths) = config["auths"].as_object() else {
        return Ok(None);
    };
    let entry = auths.iter().find(|(key, _)| {
        let key = key
            .trim_start_matches("https://")
            .trim_start_matches("http://");
        key == registry || key.split('/').next() == Some(registry)
    });
    let Some((_, entry)) = entry else {
        return Ok(None);
    };
    if let (Some(u), Some(p)) = (entry["username"].as_str(), entry["password"].as_str()) {
        return Ok(Some(Auth::Basic {
            username: u.into(),
            password: p.into(),
        }));
    }
    let Some(encoded) = entry["auth"].as_str() else {
        return Ok(None);
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|e| bad(format!("auths.{registry}.auth: {e}")))?;
    let text = String::from_utf8(decoded)
        .map_err(|_| bad(format!("auths.{registry}.auth is not UTF-8")))?;
    let (username, password) = text
        .split_once(':')
        .ok_or_else(|| bad(format!("auths.{registry}.auth is not user:password")))?;
    Ok(Some(Auth::Basic {
        username: username.into(),
        password: password.into(),
    }))
}

/// Where docker and podman keep credentials, in the order they are consulted, given the
/// process environment as `env` (the caller reads it: this crate reads no environment).
pub fn default_docker_configs(env: impl Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(file) = env("REGISTRY_AUTH_FILE") {
        out.push(PathBuf::from(file));
    }
    if let Some(dir) = env("XDG_RUNTIME_DIR") {
        out.push(Path::new(&dir).join("containers/auth.json"));
    }
    if let Some(dir) = env("DOCKER_CONFIG") {
        out.push(Path::new(&dir).join("config.json"));
    } else if let Some(home) = env("HOME") {
        out.push(Path::new(&home).join(".docker/config.json"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_files_follow_the_environment_given() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |key: &str| {
                vars.iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            default_docker_configs(env(&[("HOME", "/home/a")])),
            vec![PathBuf::from("/home/a/.docker/config.json")]
        );
        assert_eq!(
            default_docker_configs(env(&[
                ("REGISTRY_AUTH_FILE", "/etc/auth.json"),
                ("XDG_RUNTIME_DIR", "/run/user/1"),
                ("DOCKER_CONFIG", "/cfg"),
                ("HOME", "/home/a"),
            ])),
            vec![
                PathBuf::from("/etc/auth.json"),
                PathBuf::from("/run/user/1/containers/auth.json"),
                PathBuf::from("/cfg/config.json"),
            ]
        );
        assert!(default_docker_configs(env(&[])).is_empty());
    }

    #[test]
    fn reads_both_credential_spellings() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        let encoded = base64::engine::general_purpose::STANDARD.encode("alice:s3cret");
        std::fs::write(&path, format!(r#"{{"auths": {{"127.0.0.1:5000": {{"auth": "{encoded}"}}, "https://r.example": {{"username": "bob", "password": "pw"}}}}}}"#)).unwrap();
        assert_eq!(
            docker_config_auth(&path, "127.0.0.1:5000").unwrap(),
            Some(Auth::Basic {
                username: "alice".into(),
                password: "s3cret".into()
            })
        );
        assert_eq!(
            docker_config_auth(&path, "r.example").unwrap(),
            Some(Auth::Basic {
                username: "bob".into(),
                password: "pw".into()
            })
        );
        assert_eq!(docker_config_auth(&path, "other").unwrap(), None);
    }

    #[test]
    fn passwords_never_print() {
        let shown = format!(
            "{:?}",
            Auth::Basic {
                username: "alice".into(),
                password: "hunter2".into()
            }
        );
        assert!(!shown.contains("hunter2"));
    }
}
