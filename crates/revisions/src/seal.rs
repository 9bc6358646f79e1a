//! Seals: an HMAC-SHA256 under the manager's key over what a revision holds and whose
//! revision it is. Verifying one needs the key, which only the manager can read, so a seal
//! that checks proves windlass wrote exactly this content for exactly this owner.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The length of a key in bytes.
pub const KEY_BYTES: usize = 32;

/// The manager's sealing key.
#[derive(Clone)]
pub struct SealKey([u8; KEY_BYTES]);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A key in a log line would let whoever reads the log forge seals.
        f.write_str("SealKey(..)")
    }
}

impl SealKey {
    pub fn from_bytes(bytes: &[u8]) -> Result<SealKey, SealError> {
        let key: [u8; KEY_BYTES] = bytes
            .try_into()
            .map_err(|_| SealError::KeyLength { found: bytes.len() })?;
        Ok(SealKey(key))
    }

    pub fn as_bytes(&self) -> &[u8; KEY_BYTES] {
        &self.0
    }
}

/// Whose content a seal covers, e.g. `Blueprint` `team-a/db` uid `…` revision 3, or a CSV's
/// namespace and name. Every part is sealed, so content cannot be moved to another owner or
/// renumbered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    pub kind: String,
    /// `namespace/name` or `name`.
    pub object: String,
    pub uid: String,
    /// The revision number, when the subject is a revision.
    pub revision: Option<i64>,
}

impl Subject {
    fn parts(&self) -> [String; 4] {
        [
            self.kind.clone(),
            self.object.clone(),
            self.uid.clone(),
            self.revision.map(|r| r.to_string()).unwrap_or_default(),
        ]
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("the sealing key must be {KEY_BYTES} bytes, found {found}")]
    KeyLength { found: usize },
    #[error("no seal: windlass did not write this content")]
    Missing,
    #[error("the seal is not valid hex")]
    Malformed,
    #[error(
        "the seal does not match: the content was changed, moved or not written by this windlass"
    )]
    Mismatch,
}

fn mac(key: &SealKey, subject: &Subject, content: &[&[u8]]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(key.as_bytes()).expect("HMAC takes any key length");
    // Length-prefixed, so no two different inputs concatenate to the same bytes.
    let subject_parts = subject.parts();
    let all = subject_parts
        .iter()
        .map(String::as_bytes)
        .chain(content.iter().copied());
    for part in all {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part);
    }
    mac
}

/// The seal (lowercase hex) of `content` for `subject`.
pub fn seal(key: &SealKey, subject: &Subject, content: &[&[u8]]) -> String {
    mac(key, subject, content)
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Checks `found` (a seal as [`seal`] wrote it, `None` when there is none) in constant time.
pub fn verify(
    key: &SealKey,
    subject: &Subject,
    content: &[&[u8]],
    found: Option<&str>,
) -> Result<(), SealError> {
    let found = found.ok_or(SealError::Missing)?;
    if found.len() % 2 != 0 {
        return Err(SealError::Malformed);
    }
    let bytes: Vec<u8> = (0..found.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&found[i..i + 2], 16))
        .collect::<Result<_, _>>()
        .map_err(|_| SealError::Malformed)?;
    mac(key, subject, content)
        .verify_slice(&bytes)
        .map_err(|_| SealError::Mismatch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(byte: u8) -> SealKey {
        SealKey::from_bytes(&[byte; KEY_BYTES]).unwrap()
    }

    fn subject(revision: i64) -> Subject {
        Subject {
            kind: "Blueprint".into(),
            object: "team-a/db".into(),
            uid: "0b9f".into(),
            revision: Some(revision),
        }
    }

    #[test]
    fn a_seal_checks_only_for_the_same_key_subject_and_content() {
        let content: &[&[u8]] = &[b"manifests", b"config"];
        let sealed = seal(&key(1), &subject(3), content);
        assert_eq!(verify(&key(1), &subject(3), content, Some(&sealed)), Ok(()));
        assert_eq!(
            verify(&key(2), &subject(3), content, Some(&sealed)),
            Err(SealError::Mismatch)
        );
        assert_eq!(
            verify(&key(1), &subject(4), content, Some(&sealed)),
            Err(SealError::Mismatch),
            "renumbered"
        );
        let mut elsewhere = subject(3);
        elsewhere.uid = "other".into();
        assert_eq!(
            verify(&key(1), &elsewhere, content, Some(&sealed)),
            Err(SealError::Mismatch),
            "copied to another owner"
        );
        assert_eq!(
            verify(
                &key(1),
                &subject(3),
                &[b"manifests", b"config!"],
                Some(&sealed)
            ),
            Err(SealError::Mismatch),
            "edited"
        );
        assert_eq!(
            verify(&key(1), &subject(3), content, None),
            Err(SealError::Missing)
        );
        assert_eq!(
            verify(&key(1), &subject(3), content, Some("zz")),
            Err(SealError::Malformed)
        );
    }

    #[test]
    fn keys_have_one_length_and_never_print() {
        assert_eq!(
            SealKey::from_bytes(&[0; 16]).unwrap_err(),
            SealError::KeyLength { found: 16 }
        );
        assert_eq!(format!("{:?}", key(7)), "SealKey(..)");
    }

    proptest! {
        #[test]
        fn moving_bytes_between_parts_breaks_the_seal(a in ".{0,8}", b in ".{0,8}") {
            let sealed = seal(&key(1), &subject(1), &[a.as_bytes(), b.as_bytes()]);
            let joined = format!("{a}{b}");
            let moved: &[&[u8]] = &[joined.as_bytes(), b""];
            if !b.is_empty() {
                prop_assert_eq!(verify(&key(1), &subject(1), moved, Some(&sealed)), Err(SealError::Mismatch));
            }
        }
    }
}
