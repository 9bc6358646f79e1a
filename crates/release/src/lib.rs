//! Release payloads: the pure half of a Cluster Version Operator, with no cluster access.
//!
//! A release payload is the CVO's image layout, read unmodified:
//!
//! ```text
//! manifests/                         the updater's own objects, applied first
//! release-manifests/
//!   release-metadata                 {"kind":"cincinnati-metadata-v0","version","previous","next","metadata"}
//!   image-references                 an ImageStream: every image of the release, by digest
//!   0000_<NN>_<component>_<rest>.yaml|yml|json
//! ```
//!
//! What a controller does with this crate:
//!
//! 1. [`Payload::from_tree`] (or [`Payload::read_dir`]) reads and checks a payload; a malformed
//!    one is an [`InvalidPayload`] listing every problem with its file.
//! 2. [`Payload::plan`] turns it into a [`Plan`] for one cluster ([`InclusionOptions`]: profile,
//!    feature set, capabilities, overrides): run levels in order, each with steps of components
//!    that may run in parallel, each manifest with its [`Action`] (apply, create-only, delete)
//!    and whether it makes its level irreversible. [`plan`] documents the ordering rules.
//! 3. [`graph::Graph::parse`] reads an update service's answer; [`graph::Graph::updates_from`]
//!    lists available and conditional updates; [`risk`] evaluates the risks from PromQL
//!    results the caller fetched, and [`risk::recommend`] gives the `Recommended` condition.
//!    [`graph_build::build_graph`] makes a graph from published payloads, as OpenShift's graph
//!    builder does, and [`render`] draws it.
//! 4. [`policy::check_update`] decides whether an update may start (and what `force` or
//!    `acceptRisks` let through); [`policy::check_rollback`] whether a rollback may.
//! 5. [`history::record`] and [`history::prune`] keep ClusterVersion history as the CVO does;
//!    [`progress`] estimates the time left from earlier updates and words the progress.
//!
//! The manifest annotations honoured are the CVO's (see [`annotations`]), plus windlass's own
//! [`annotations::IRREVERSIBLE`]: `release.windlass.dev/irreversible: "true"` on a manifest makes
//! its run level one that cannot be undone; an update that started it cannot be rolled back, and
//! automatic rollback is possible only before it.
//!
//! Beyond the CVO, loading also requires what `oc adm release new` guarantees: every image in
//! `image-references` and every pod-template image (Deployments, DaemonSets, StatefulSets,
//! ReplicaSets, Jobs, CronJobs, Pods) pinned by digest, and each such image listed in
//! `image-references` (manifests that delete their object are exempt).

pub mod admin_gates;
pub mod annotations;
pub mod capabilities;
pub mod error;
pub mod graph;
pub mod graph_build;
pub mod health;
pub mod history;
pub mod manifest;
pub mod metadata;
pub mod operators;
pub mod payload;
pub mod plan;
pub mod policy;
pub mod preview;
pub mod progress;
pub mod render;
pub mod risk;
pub mod substitute;
pub mod synthetic;

pub use error::{GraphError, InvalidPayload, PayloadError};
pub use manifest::{
    Action, Capabilities, Exclusion, InclusionOptions, Manifest, ObjectId, ObjectRef,
};
pub use metadata::{ImageReference, ImageReferences, ReleaseMetadata};
pub use payload::{LoadOptions, Payload, PayloadWarning, ReadPayloadError};
pub use plan::{ComponentTasks, Plan, PlannedManifest, RunLevel, Step};
