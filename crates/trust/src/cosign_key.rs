//! cosign's encrypted private key format: a PEM block `ENCRYPTED SIGSTORE PRIVATE KEY` (older
//! releases: `ENCRYPTED COSIGN PRIVATE KEY`) whose body is JSON:
//!
//! ```json
//! {"kdf":{"name":"scrypt","params":{"N":65536,"r":8,"p":1},"salt":"<base64>"},
//!  "cipher":{"name":"nacl/secretbox","nonce":"<base64>"},
//!  "ciphertext":"<base64>"}
//! ```
//!
//! The key is scrypt(password, salt, N, r, p) (32 bytes); the ciphertext is NaCl secretbox
//! (XSalsa20-Poly1305, tag first) of the PKCS#8 DER private key. The password is what cosign
//! reads from `COSIGN_PASSWORD`. Only the three scrypt strengths cosign itself writes are
//! accepted, which also bounds the memory a hostile file can make us spend.

use base64::Engine;
use crypto_secretbox::aead::{Aead, KeyInit};
use crypto_secretbox::{Nonce, XSalsa20Poly1305};
use rand_core::RngCore;

pub const SIGSTORE_PEM_LABEL: &str = "ENCRYPTED SIGSTORE PRIVATE KEY";
pub const COSIGN_PEM_LABEL: &str = "ENCRYPTED COSIGN PRIVATE KEY";

/// (N, r, p) that cosign writes: legacy, standard (its default) and OWASP.
const ACCEPTED_PARAMS: [(u64, u32, u32); 3] = [(32768, 8, 1), (65536, 8, 1), (131072, 8, 1)];
const DEFAULT_N: u64 = 65536;

#[derive(serde::Serialize, serde::Deserialize)]
struct Sealed {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Kdf {
    name: String,
    params: KdfParams,
    salt: String,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct KdfParams {
    #[serde(rename = "N")]
    n: u64,
    r: u32,
    p: u32,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Cipher {
    name: String,
    nonce: String,
}

fn b64(text: &str, field: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("field `{field}` is not base64: {e}"))
}

fn derive(password: &[u8], salt: &[u8], n: u64, r: u32, p: u32) -> Result<[u8; 32], String> {
    let log_n = n.trailing_zeros() as u8;
    let params = scrypt::Params::new(log_n, r, p, 32)
        .map_err(|e| format!("scrypt parameters N={n} r={r} p={p}: {e}"))?;
    let mut key = [0u8; 32];
    scrypt::scrypt(password, salt, &params, &mut key).map_err(|e| format!("scrypt: {e}"))?;
    Ok(key)
}

/// Decrypts the PEM body (the JSON above) with `password`, giving the PKCS#8 DER key.
pub fn decrypt(body: &[u8], password: &[u8]) -> Result<Vec<u8>, String> {
    let sealed: Sealed = serde_json::from_slice(body)
        .map_err(|e| format!("not cosign's encrypted key JSON: {e}"))?;
    if sealed.kdf.name != "scrypt" {
        return Err(format!("unknown key derivation `{}`", sealed.kdf.name));
    }
    if sealed.cipher.name != "nacl/secretbox" {
        return Err(format!("unknown cipher `{}`", sealed.cipher.name));
    }
    let KdfParams { n, r, p } = sealed.kdf.params;
    if !ACCEPTED_PARAMS.contains(&(n, r, p)) {
        return Err(format!(
            "unsupported scrypt parameters N={n} r={r} p={p} (cosign writes N=32768, 65536 or 131072 with r=8 p=1)"
        ));
    }
    let salt = b64(&sealed.kdf.salt, "kdf.salt")?;
    let nonce = b64(&sealed.cipher.nonce, "cipher.nonce")?;
    if nonce.len() != 24 {
        return Err(format!(
            "cipher.nonce is {} bytes; secretbox needs 24",
            nonce.len()
        ));
    }
    let ciphertext = b64(&sealed.ciphertext, "ciphertext")?;
    let key = derive(password, &salt, n, r, p)?;
    XSalsa20Poly1305::new(&key.into())
        .decrypt(Nonce::from_slice(&nonce), ciphertext.as_slice())
        .map_err(|_| {
            "cannot decrypt: wrong password (set COSIGN_PASSWORD) or a damaged key file".to_string()
        })
}

/// Encrypts a PKCS#8 DER key with `password` at cosign's default strength.
pub fn encrypt(pkcs8_der: &[u8], password: &[u8]) -> Vec<u8> {
    let mut salt = [0u8; 32];
    let mut nonce = [0u8; 24];
    rand_core::OsRng.fill_bytes(&mut salt);
    rand_core::OsRng.fill_bytes(&mut nonce);
    let key = derive(password, &salt, DEFAULT_N, 8, 1).expect("the default parameters are valid");
    let ciphertext = XSalsa20Poly1305::new(&key.into())
        .encrypt(Nonce::from_slice(&nonce), pkcs8_der)
        .expect("secretbox encryption of a small buffer cannot fail");
    let engine = base64::engine::general_purpose::STANDARD;
    let sealed = Sealed {
        kdf: Kdf {
            name: "scrypt".into(),
            params: KdfParams {
                n: DEFAULT_N,
                r: 8,
                p: 1,
            },
            salt: engine.encode(salt),
        },
        cipher: Cipher {
            name: "nacl/secretbox".into(),
            nonce: engine.encode(nonce),
        },
        ciphertext: engine.encode(ciphertext),
    };
    serde_json::to_vec(&sealed).expect("the sealed key serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decrypts_what_it_encrypts_and_refuses_a_wrong_password() {
        let sealed = encrypt(b"pkcs8 bytes", b"pw");
        assert_eq!(decrypt(&sealed, b"pw").unwrap(), b"pkcs8 bytes");
        assert!(
            decrypt(&sealed, b"other")
                .unwrap_err()
                .contains("wrong password")
        );
    }

    #[test]
    fn hostile_parameters_are_refused_before_any_work() {
        let mut sealed: serde_json::Value = serde_json::from_slice(&encrypt(b"k", b"pw")).unwrap();
        sealed["kdf"]["params"]["N"] = serde_json::json!(1u64 << 40);
        let body = serde_json::to_vec(&sealed).unwrap();
        assert!(
            decrypt(&body, b"pw")
                .unwrap_err()
                .contains("unsupported scrypt")
        );
        sealed["kdf"]["params"]["N"] = serde_json::json!(65536);
        sealed["cipher"]["name"] = serde_json::json!("aes");
        let body = serde_json::to_vec(&sealed).unwrap();
        assert!(
            decrypt(&body, b"pw")
                .unwrap_err()
                .contains("unknown cipher")
        );
        assert!(decrypt(b"{", b"pw").unwrap_err().contains("JSON"));
    }

    #[test]
    fn the_tag_comes_first_as_in_nacl() {
        // secretbox output is 16 bytes of Poly1305 tag, then the XSalsa20 stream XOR plaintext:
        // the last bytes of the ciphertext are exactly plaintext XOR keystream, so flipping
        // a plaintext bit flips the same bit at the same offset from the end.
        let key = [7u8; 32];
        let nonce = [9u8; 24];
        let cipher = XSalsa20Poly1305::new(&key.into());
        let a = cipher
            .encrypt(Nonce::from_slice(&nonce), &[0u8; 8][..])
            .unwrap();
        let b = cipher
            .encrypt(Nonce::from_slice(&nonce), &[1u8, 0, 0, 0, 0, 0, 0, 0][..])
            .unwrap();
        assert_eq!(a.len(), 24);
        assert_eq!(a[16] ^ b[16], 1);
        assert_eq!(a[17..], b[17..]);
    }
}
