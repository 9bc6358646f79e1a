//! Which namespace a controller watches and reconciles.
//!
//! A controller builds every watch through its [`Scope`], so a manager confined to one
//! namespace (`windlass manager --watch-namespace`) sees and reconciles only that namespace's
//! objects. Reads that must see every namespace (a CRD that a CSV elsewhere still owns) use
//! `Api::all` on purpose and say so where they do.

use std::fmt;

use kube::{
    Api, Client, Resource,
    core::{DynamicObject, NamespaceResourceScope},
    discovery::ApiResource,
};
use serde::de::DeserializeOwned;

/// Every namespace, or one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    namespace: Option<String>,
}

impl Scope {
    /// Every namespace.
    pub fn cluster() -> Scope {
        Scope { namespace: None }
    }

    /// Only `namespace`.
    pub fn namespace(namespace: impl Into<String>) -> Scope {
        Scope {
            namespace: Some(namespace.into()),
        }
    }

    /// The one namespace, when the scope is narrowed.
    pub fn only(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// Whether an object in `namespace` (`None`: cluster-scoped) is in scope. Cluster-scoped
    /// objects always are: a namespace's manager still reads the catalogs everyone shares.
    pub fn contains(&self, namespace: Option<&str>) -> bool {
        match (&self.namespace, namespace) {
            (None, _) | (_, None) => true,
            (Some(ours), Some(theirs)) => ours == theirs,
        }
    }

    /// The collection of a namespaced kind this scope watches.
    pub fn api<K>(&self, client: &Client) -> Api<K>
    where
        K: Resource<Scope = NamespaceResourceScope, DynamicType = ()> + Clone + DeserializeOwned,
        K: fmt::Debug,
    {
        match &self.namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        }
    }

    /// The same for a kind known only at run time (namespaced resources only).
    pub fn api_with(&self, client: &Client, resource: &ApiResource) -> Api<DynamicObject> {
        match &self.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
            None => Api::all_with(client.clone(), resource),
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "namespace {ns}"),
            None => f.write_str("every namespace"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_narrowed_scope_holds_its_namespace_and_cluster_scoped_objects() {
        let team = Scope::namespace("team-a");
        assert!(team.contains(Some("team-a")));
        assert!(!team.contains(Some("team-b")));
        assert!(team.contains(None));
        assert_eq!(team.only(), Some("team-a"));
        assert!(Scope::cluster().contains(Some("anything")));
        assert_eq!(Scope::cluster().to_string(), "every namespace");
        assert_eq!(team.to_string(), "namespace team-a");
    }
}
