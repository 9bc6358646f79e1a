//! Every parser of stored signature data on arbitrary bytes, and the full check of a Sigstore
//! bundle and a simple-signing payload against a fixed key: an error or a refusal, never a
//! panic, and never `Valid` for bytes that a fixed key did not sign.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use windlass_trust::{
    CheckOutcome, PublicKey,
    bundle::Bundle,
    check::{check_bundle, check_simple_signing},
    dsse::{Envelope, Statement},
    layout::Manifest,
    simple_signing,
};

const DIGEST: &str = "sha256:4c6318cd53e0321841aa1aa83be4a8bb6ecadad4869f0351e7dca94bd22b89b5";

fn key() -> &'static PublicKey {
    static KEY: OnceLock<PublicKey> = OnceLock::new();
    KEY.get_or_init(|| {
        PublicKey::from_pem(include_bytes!("../../tests/data/cosign/a.pub"), "a.pub")
            .expect("the recorded public key")
    })
}

fuzz_target!(|data: &[u8]| {
    let _ = simple_signing::parse(data);
    let _ = Envelope::parse(data);
    let _ = Statement::parse(data);
    let _ = Bundle::parse(data);
    let _ = Manifest::parse(data);
    let ring = [("a".to_string(), key())];
    // Random bytes cannot carry a valid signature by a key whose private half is not here.
    assert!(!matches!(
        check_bundle(data, DIGEST, &ring),
        CheckOutcome::Valid { .. }
    ));
    let (payload, signature) = match data.iter().position(|b| *b == 0) {
        Some(split) => (&data[..split], std::str::from_utf8(&data[split + 1..]).ok()),
        None => (data, None),
    };
    assert!(!matches!(
        check_simple_signing(payload, signature, DIGEST, &ring),
        CheckOutcome::Valid { .. }
    ));
});
