//! What can go wrong in a reconcile, by stage, with the object concerned.

use windlass_kit::{ApplyError, ReconcileError, Stage, runner::FromFinalizerError};

use crate::revision::RevisionError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading cluster state (the Blueprint, its Secrets, CSVs, CRDs, custom resources).
    #[error("reading {what}: {source}")]
    Read { what: String, source: kube::Error },
    /// A revision Secret that cannot be built or read back.
    #[error("revision of Blueprint {blueprint}: {source}")]
    Revision {
        blueprint: String,
        source: RevisionError,
    },
    /// The build stage found the revision's content unusable.
    #[error("building {name}: {message}")]
    Build { name: String, message: String },
    /// Something the decision was made from changed before it was applied (another Blueprint
    /// wrote a shared CRD): decided again from fresh state.
    #[error("{what} changed since it was checked; checking again")]
    Stale { what: String },
    /// Writing a revision or plan Secret.
    #[error("storing Secret {secret}: {source}")]
    Store { secret: String, source: kube::Error },
    /// An object the plan applies.
    #[error("applying {kind} {name}: {source}")]
    Apply {
        kind: String,
        name: String,
        source: kube::Error,
    },
    /// A manifest the cluster has no API for (yet: a CRD applied moments ago, for example).
    #[error("{kind} {name}: {api_version} is not served: {source}")]
    Discovery {
        api_version: String,
        kind: String,
        name: String,
        source: kube::Error,
    },
    /// Applying or removing an object through the kit's applier (the error names it).
    #[error(transparent)]
    Object(#[from] ApplyError),
    /// Removing something no longer wanted.
    #[error("deleting {kind} {name}: {source}")]
    Delete {
        kind: String,
        name: String,
        source: kube::Error,
    },
    #[error("writing the status of Blueprint {name}: {source}")]
    Status { name: String, source: kube::Error },
    #[error("recording revision {revision} on Blueprint {name}: {source}")]
    Bookkeeping {
        name: String,
        revision: i64,
        source: kube::Error,
    },
    #[error("finalizer of Blueprint {name}: {message}")]
    Finalizer { name: String, message: String },
    /// The plan kept asking for facts; a bug, reported rather than looped on.
    #[error("the plan for Blueprint {name} did not settle: {message}")]
    Plan { name: String, message: String },
    #[error(transparent)]
    NotSynced(#[from] windlass_kit::synced::NotSynced),
}

impl ReconcileError for Error {
    fn stage(&self) -> Stage {
        match self {
            Error::Read { .. } | Error::Revision { .. } | Error::NotSynced(_) => Stage::Read,
            Error::Plan { .. } => Stage::Decide,
            Error::Build { .. } => Stage::Build,
            Error::Store { .. }
            | Error::Apply { .. }
            | Error::Stale { .. }
            | Error::Object(_)
            | Error::Discovery { .. }
            | Error::Delete { .. } => Stage::Apply,
            Error::Status { .. } | Error::Bookkeeping { .. } => Stage::Report,
            Error::Finalizer { .. } => Stage::Cleanup,
        }
    }

    /// A write that lost a race with another writer: decide again from fresh state, quickly.
    fn is_conflict(&self) -> bool {
        let source = match self {
            Error::Object(error) => return error.is_conflict(),
            Error::Stale { .. } => return true,
            Error::Status { source, .. }
            | Error::Bookkeeping { source, .. }
            | Error::Store { source, .. }
            | Error::Apply { source, .. } => source,
            _ => return false,
        };
        matches!(source, kube::Error::Api(status) if status.code == 409)
    }
}

impl Error {
    /// What the API server said, when an object write was refused (else the whole error).
    pub fn api_message(&self) -> String {
        match self {
            Error::Object(error) => error
                .api_message()
                .map_or_else(|| error.to_string(), str::to_string),
            Error::Apply {
                source: kube::Error::Api(status),
                ..
            } => status.message.clone(),
            other => other.to_string(),
        }
    }

    /// The API server refused the write for lack of permission (RBAC of the identity used).
    pub fn is_forbidden(&self) -> bool {
        match self {
            Error::Object(error) => error.is_forbidden(),
            Error::Apply { source, .. } => {
                matches!(source, kube::Error::Api(status) if status.code == 403)
            }
            _ => false,
        }
    }
}

impl FromFinalizerError for Error {
    fn from_finalizer(name: String, message: String) -> Self {
        Error::Finalizer { name, message }
    }
}
