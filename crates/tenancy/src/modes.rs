//! OLM's install modes: which namespaces an operator watches, and whether its CSV supports
//! that.

use std::collections::BTreeSet;

use windlass_api::policy::InstallModeType;

/// Why the target namespaces cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InstallModeError {
    #[error(
        "the operator does not support install mode {mode} (it supports {})",
        list(supported)
    )]
    Unsupported {
        mode: InstallModeType,
        supported: Vec<InstallModeType>,
    },
    #[error(
        "spec.targetNamespaces mixes \"\" (all namespaces) with named namespaces: {}",
        list_names(targets)
    )]
    Mixed { targets: Vec<String> },
}

fn list(modes: &[InstallModeType]) -> String {
    if modes.is_empty() {
        return "none".into();
    }
    modes
        .iter()
        .map(|m| m.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn list_names(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The install modes a CSV's `spec.installModes` marks supported (unknown types ignored).
pub fn supported_modes<'a>(
    modes: impl IntoIterator<Item = (&'a str, bool)>,
) -> Vec<InstallModeType> {
    let mut found: Vec<InstallModeType> = modes
        .into_iter()
        .filter(|(_, supported)| *supported)
        .filter_map(|(name, _)| match name {
            "OwnNamespace" => Some(InstallModeType::OwnNamespace),
            "SingleNamespace" => Some(InstallModeType::SingleNamespace),
            "MultiNamespace" => Some(InstallModeType::MultiNamespace),
            "AllNamespaces" => Some(InstallModeType::AllNamespaces),
            _ => None,
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The install mode of `targets` for an operator in `namespace`: no targets or `[""]` is
/// AllNamespaces, its own namespace alone OwnNamespace, one other SingleNamespace, several
/// MultiNamespace.
pub fn install_mode(
    namespace: &str,
    targets: &[String],
) -> Result<InstallModeType, InstallModeError> {
    let named: BTreeSet<&str> = targets
        .iter()
        .map(String::as_str)
        .filter(|t| !t.is_empty())
        .collect();
    let all = targets.is_empty() || targets.iter().any(String::is_empty);
    if all && !named.is_empty() {
        return Err(InstallModeError::Mixed {
            targets: targets.to_vec(),
        });
    }
    Ok(match named.len() {
        0 => InstallModeType::AllNamespaces,
        1 if named.contains(namespace) => InstallModeType::OwnNamespace,
        1 => InstallModeType::SingleNamespace,
        _ => InstallModeType::MultiNamespace,
    })
}

/// The target namespaces to install with: the Subscription's when it names them; otherwise
/// every namespace when that is both supported and `allowed`, else the operator's own
/// namespace (or, failing that, an error naming what the operator supports).
pub fn resolve_targets(
    namespace: &str,
    requested: Option<&[String]>,
    supported: &[InstallModeType],
    allowed: &BTreeSet<InstallModeType>,
) -> Result<(Vec<String>, InstallModeType), InstallModeError> {
    let targets = match requested {
        Some(targets) => targets.to_vec(),
        None if supported.contains(&InstallModeType::AllNamespaces)
            && allowed.contains(&InstallModeType::AllNamespaces) =>
        {
            Vec::new()
        }
        None => vec![namespace.to_string()],
    };
    let mode = install_mode(namespace, &targets)?;
    // A CSV that says nothing about install modes predates them: it is taken to support
    // every mode, as OLM does.
    if !supported.is_empty() && !supported.contains(&mode) {
        return Err(InstallModeError::Unsupported {
            mode,
            supported: supported.to_vec(),
        });
    }
    Ok((targets, mode))
}

#[cfg(test)]
mod tests {
    use super::*;
    use InstallModeType::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn targets_map_to_olm_install_modes() {
        let cases: &[(&[&str], InstallModeType)] = &[
            (&[], AllNamespaces),
            (&[""], AllNamespaces),
            (&["team-a"], OwnNamespace),
            (&["team-b"], SingleNamespace),
            (&["team-a", "team-b"], MultiNamespace),
            (&["team-a", "team-a"], OwnNamespace),
        ];
        for (targets, mode) in cases {
            assert_eq!(
                install_mode("team-a", &names(targets)),
                Ok(*mode),
                "{targets:?}"
            );
        }
        assert!(matches!(
            install_mode("team-a", &names(&["", "team-b"])),
            Err(InstallModeError::Mixed { .. })
        ));
    }

    #[test]
    fn the_default_is_all_namespaces_only_when_supported_and_allowed() {
        let all: BTreeSet<_> = [AllNamespaces].into();
        let none = BTreeSet::new();
        let both = [OwnNamespace, AllNamespaces];
        assert_eq!(
            resolve_targets("team-a", None, &both, &all).unwrap(),
            (Vec::new(), AllNamespaces)
        );
        assert_eq!(
            resolve_targets("team-a", None, &both, &none).unwrap(),
            (names(&["team-a"]), OwnNamespace)
        );
    }

    #[test]
    fn an_unsupported_mode_is_refused_naming_what_is_supported() {
        let error =
            resolve_targets("team-a", None, &[AllNamespaces], &BTreeSet::new()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the operator does not support install mode OwnNamespace (it supports AllNamespaces)"
        );
        // Install modes predate some CSVs: saying nothing supports everything.
        assert!(
            resolve_targets("team-a", Some(&names(&["x", "y"])), &[], &BTreeSet::new()).is_ok()
        );
    }

    #[test]
    fn supported_modes_read_the_csv_flags() {
        let modes = supported_modes([
            ("OwnNamespace", true),
            ("SingleNamespace", false),
            ("AllNamespaces", true),
            ("Bogus", true),
        ]);
        assert_eq!(modes, [OwnNamespace, AllNamespaces]);
    }
}
