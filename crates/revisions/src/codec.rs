//! JSON, gzip-compressed, bounded both ways: what is written must fit a Secret, and what is
//! read must not inflate beyond a limit (a corrupt or hostile blob is refused, not unpacked).

use std::io::{Read, Write};

use flate2::{Compression, read::GzDecoder, write::GzEncoder};
use serde::{Serialize, de::DeserializeOwned};

/// The API server refuses a Secret whose data exceeds 1 MiB (1,048,576 bytes); this leaves room
/// for the key, labels and annotations.
pub const MAX_ENCODED_BYTES: usize = 1_000_000;
/// Decoding stops here: a small corrupt or hostile blob must not inflate into gigabytes.
pub const MAX_DECODED_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("encoding as JSON: {0}")]
    Serialize(serde_json::Error),
    #[error("compressing: {0}")]
    Compress(std::io::Error),
    #[error("compressed content is {bytes} bytes, more than the {limit} bytes a Secret can hold")]
    TooLarge { bytes: usize, limit: usize },
    #[error("data is not valid gzip (corrupt or truncated): {0}")]
    Decompress(std::io::Error),
    #[error(
        "decompressed content is larger than {limit} bytes; refused (corrupt data or a gzip bomb)"
    )]
    DecompressedTooLarge { limit: u64 },
    #[error("decompressed data is not the expected document: {0}")]
    Deserialize(serde_json::Error),
}

/// gzip of the JSON of `content`, refused when it would not fit a Secret.
pub fn encode<T: Serialize>(content: &T) -> Result<Vec<u8>, CodecError> {
    let json = serde_json::to_vec(content).map_err(CodecError::Serialize)?;
    let mut encoder = GzEncoder::new(Vec::with_capacity(json.len() / 4), Compression::best());
    encoder.write_all(&json).map_err(CodecError::Compress)?;
    let bytes = encoder.finish().map_err(CodecError::Compress)?;
    if bytes.len() > MAX_ENCODED_BYTES {
        return Err(CodecError::TooLarge {
            bytes: bytes.len(),
            limit: MAX_ENCODED_BYTES,
        });
    }
    Ok(bytes)
}

/// The inverse of [`encode`]; refuses anything that inflates beyond [`MAX_DECODED_BYTES`].
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    let mut json = Vec::new();
    GzDecoder::new(bytes)
        .take(MAX_DECODED_BYTES + 1)
        .read_to_end(&mut json)
        .map_err(CodecError::Decompress)?;
    if json.len() as u64 > MAX_DECODED_BYTES {
        return Err(CodecError::DecompressedTooLarge {
            limit: MAX_DECODED_BYTES,
        });
    }
    serde_json::from_slice(&json).map_err(CodecError::Deserialize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn content_round_trips() {
        let content = json!({"revision": 3, "manifests": [{"kind": "Deployment"}]});
        let bytes = encode(&content).unwrap();
        assert_eq!(decode::<Value>(&bytes).unwrap(), content);
    }

    #[test]
    fn garbage_and_bombs_are_refused() {
        assert!(matches!(
            decode::<Value>(b"not gzip"),
            Err(CodecError::Decompress(_))
        ));
        let zeros = vec![b' '; (MAX_DECODED_BYTES + 10) as usize];
        let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
        encoder.write_all(&zeros).unwrap();
        let bomb = encoder.finish().unwrap();
        assert!(bomb.len() < 100_000);
        assert!(matches!(
            decode::<Value>(&bomb),
            Err(CodecError::DecompressedTooLarge { .. })
        ));
    }
}
