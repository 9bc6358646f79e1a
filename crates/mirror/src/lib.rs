//! Image references and mirror rules, for sites whose registries serve copies of the images
//! bundles name (an air-gapped site's own registry, a pull-through cache).
//!
//! [`reference`] parses and normalises image references as container runtimes read them;
//! [`rules`] rewrites them by registry/repository prefix to the mirrors cluster admins list in
//! ImageMirrorSets; [`pod`] finds and rewrites the images a pod template names. Pure: the controllers gather the rules and pull; nothing here touches a
//! registry or the cluster.

pub mod pod;
pub mod reference;
pub mod rules;

pub use reference::{ImageReference, ReferenceError, RepositoryPrefix, is_sha256_digest};
pub use rules::{Candidate, MirrorRule, MirrorRules, Rewrite, RuleError};
