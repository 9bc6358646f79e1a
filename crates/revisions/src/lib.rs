//! How windlass keeps revisions in the cluster, for every owner that needs them (Blueprints,
//! and the platform's ClusterVersion): the content is JSON, gzip-compressed, bounded in both
//! directions ([`codec`]), and **sealed** ([`seal`]): an HMAC, under a key only the manager can
//! read, over the content and the identity of the revision it belongs to.
//!
//! The seal is what makes stored content trustworthy wherever it is kept. A namespace admin
//! can edit or copy a revision Secret in their namespace, but cannot produce a valid seal for
//! what they wrote, so windlass refuses it (and applies nothing) instead of re-installing it.
//! A revision copied from another Blueprint, or renumbered, fails too: the seal covers the
//! owner's uid and the revision number.
//!
//! The ClusterServiceVersions windlass applies are sealed the same way ([`csv`]), so only those
//! are acted on, and so are the snapshots of an operator's custom resources taken before an
//! upgrade ([`operands`]).

pub mod codec;
pub mod csv;
pub mod operands;
pub mod seal;

pub use codec::{CodecError, MAX_DECODED_BYTES, MAX_ENCODED_BYTES, decode, encode};
pub use seal::{SealError, SealKey, Subject};
