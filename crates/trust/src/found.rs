//! What was found for one digest: the stored signatures as read, before any key looks at
//! them. Pure data, shared by the registry reader (`discover`, with the `registry` feature) and
//! the checks.

use crate::check::SignatureFormat;

/// Caps on what one verification reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Signatures read per artifact, all places together; the rest are reported as skipped.
    pub max_signatures: usize,
    /// Largest manifest, bundle or payload read, in bytes.
    pub max_signature_bytes: u64,
    /// Largest referrers index or `.sig` manifest (these list many signatures), in bytes.
    pub max_index_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_signatures: 32,
            max_signature_bytes: 256 * 1024,
            max_index_bytes: 1024 * 1024,
        }
    }
}

/// What a stored signature holds, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CandidateContent {
    Bundle {
        bytes: Vec<u8>,
    },
    SimpleSigning {
        payload: Vec<u8>,
        signature: Option<String>,
    },
    /// Found but not readable (missing blob, over a limit, malformed manifest).
    Unreadable {
        format: SignatureFormat,
        reason: String,
    },
}

/// One stored signature and where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub location: String,
    pub content: CandidateContent,
}

/// Everything found for one digest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Discovery {
    pub candidates: Vec<Candidate>,
    /// Human descriptions of the places looked in, for "unsigned" messages.
    pub looked_in: Vec<String>,
    /// Signatures left unread because of `max_signatures`.
    pub skipped: usize,
}
