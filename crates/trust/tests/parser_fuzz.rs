//! Fuzzing the signature and envelope parsers with mutations of real cosign output: truncated,
//! bit-flipped, spliced and random bytes never panic, and whatever is accepted as a valid
//! signature is exactly what was signed.
//!
//! Runs as a property test in `make unit` (256 cases per property by default); set
//! `PROPTEST_CASES` higher for a longer run.

mod common;
use common::{digest, fixture};

use std::collections::BTreeMap;

use proptest::prelude::*;
use windlass_trust::{
    CheckOutcome, PublicKey,
    bundle::Bundle,
    check::{check_bundle, check_simple_signing},
    dsse::{Envelope, Statement},
    layout::Manifest,
    simple_signing,
};

fn keys() -> BTreeMap<String, PublicKey> {
    ["a", "b"]
        .into_iter()
        .map(|name| {
            let file = format!("{name}.pub");
            (
                name.to_string(),
                PublicKey::from_pem(&fixture(&file), &file).unwrap(),
            )
        })
        .collect()
}

/// The legacy signature of `simple-signing.json`, from the signature image's layer annotation.
fn simple_signature() -> String {
    let manifest: serde_json::Value =
        serde_json::from_slice(&fixture("sig-manifest.json")).unwrap();
    manifest["layers"][0]["annotations"][simple_signing::SIGNATURE_ANNOTATION]
        .as_str()
        .unwrap()
        .to_string()
}

#[derive(Clone, Debug)]
enum Mutation {
    Truncate(usize),
    Flip { at: usize, bit: u8 },
    Splice { at: usize, bytes: Vec<u8> },
    Remove { at: usize, len: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Mutation::Splice { at, bytes }),
        (any::<usize>(), 1usize..32).prop_map(|(at, len)| Mutation::Remove { at, len }),
    ]
}

fn mutate(original: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut bytes = original.to_vec();
    for mutation in mutations {
        let len = bytes.len().max(1);
        match mutation {
            Mutation::Truncate(at) => bytes.truncate(at % len),
            Mutation::Flip { at, bit } => {
                if !bytes.is_empty() {
                    let i = at % bytes.len();
                    bytes[i] ^= 1 << bit;
                }
            }
            Mutation::Splice { at, bytes: insert } => {
                let i = at % (bytes.len() + 1);
                bytes.splice(i..i, insert.iter().copied());
            }
            Mutation::Remove { at, len: n } => {
                if !bytes.is_empty() {
                    let i = at % bytes.len();
                    let end = (i + n).min(bytes.len());
                    bytes.drain(i..end);
                }
            }
        }
    }
    bytes
}

/// Every parser, on any input: a value or an error, never a panic.
fn parse_everything(bytes: &[u8]) {
    let _ = simple_signing::parse(bytes);
    let _ = Envelope::parse(bytes);
    let _ = Statement::parse(bytes);
    let _ = Bundle::parse(bytes);
    let _ = Manifest::parse(bytes);
}

proptest! {
    #[test]
    fn random_bytes_are_errors_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        parse_everything(&bytes);
        let keys = keys();
        let ring: Vec<(String, &PublicKey)> = keys.iter().map(|(n, k)| (n.clone(), k)).collect();
        let outcome = check_bundle(&bytes, &digest(), &ring);
        prop_assert!(!matches!(outcome, CheckOutcome::Valid { .. }), "{outcome:?}");
    }

    #[test]
    fn a_mutated_bundle_is_accepted_only_if_what_was_signed_is_unchanged(
        mutations in prop::collection::vec(mutation(), 1..4)
    ) {
        let original = fixture("bundle.json");
        let mutated = mutate(&original, &mutations);
        parse_everything(&mutated);
        let keys = keys();
        let ring: Vec<(String, &PublicKey)> = keys.iter().map(|(n, k)| (n.clone(), k)).collect();
        if let CheckOutcome::Valid { .. } = check_bundle(&mutated, &digest(), &ring) {
            // Whitespace or unsigned fields may change; the signed envelope may not.
            let signed = Bundle::parse(&original).unwrap().envelope;
            let accepted = Bundle::parse(&mutated).expect("a valid bundle parses").envelope;
            prop_assert_eq!(accepted.payload, signed.payload);
            prop_assert_eq!(accepted.payload_type, signed.payload_type);
        }
    }

    #[test]
    fn a_mutated_simple_signing_payload_or_signature_never_verifies(
        mutations in prop::collection::vec(mutation(), 1..4),
        mutate_signature in any::<bool>(),
    ) {
        let payload = fixture("simple-signing.json");
        let signature = simple_signature();
        let (payload, signature) = if mutate_signature {
            let mutated = mutate(signature.as_bytes(), &mutations);
            (payload, String::from_utf8_lossy(&mutated).into_owned())
        } else {
            (mutate(&payload, &mutations), signature)
        };
        parse_everything(&payload);
        let keys = keys();
        let ring: Vec<(String, &PublicKey)> = keys.iter().map(|(n, k)| (n.clone(), k)).collect();
        let outcome = check_simple_signing(&payload, Some(&signature), &digest(), &ring);
        // The annotation is read trimmed, in any of base64's four alphabets: a mutation that
        // only respells the same signature bytes (trailing whitespace, dropped padding) is not
        // a change.
        let signature_bytes = |text: &str| {
            use base64::Engine as _;
            use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
            let text = text.trim();
            STANDARD
                .decode(text)
                .or_else(|_| STANDARD_NO_PAD.decode(text))
                .or_else(|_| URL_SAFE.decode(text))
                .or_else(|_| URL_SAFE_NO_PAD.decode(text))
                .ok()
        };
        let same_signature = signature == simple_signature()
            || signature_bytes(&signature).is_some_and(|b| Some(b) == signature_bytes(&simple_signature()));
        let unchanged = payload == fixture("simple-signing.json") && same_signature;
        prop_assert!(
            unchanged || !matches!(outcome, CheckOutcome::Valid { .. }),
            "a changed payload or signature verified: {outcome:?}"
        );
    }
}

#[test]
fn the_unmutated_fixtures_verify() {
    let keys = keys();
    let ring: Vec<(String, &PublicKey)> = keys.iter().map(|(n, k)| (n.clone(), k)).collect();
    assert!(matches!(
        check_bundle(&fixture("bundle.json"), &digest(), &ring),
        CheckOutcome::Valid { .. }
    ));
    assert!(matches!(
        check_simple_signing(
            &fixture("simple-signing.json"),
            Some(&simple_signature()),
            &digest(),
            &ring
        ),
        CheckOutcome::Valid { .. }
    ));
}
