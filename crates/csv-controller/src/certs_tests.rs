use windlass_revisions::seal::KEY_BYTES;

use super::*;

fn key() -> SealKey {
    SealKey::from_bytes(&[3; KEY_BYTES]).unwrap()
}

fn bytes(data: BTreeMap<String, String>) -> BTreeMap<String, Vec<u8>> {
    data.into_iter().map(|(k, v)| (k, v.into_bytes())).collect()
}

fn now() -> Timestamp {
    "2026-01-01T00:00:00Z".parse().unwrap()
}

#[test]
fn the_ca_round_trips_through_its_secret_and_rotates_keeping_the_old_one_trusted() {
    let ca = WebhookCa::generate(now()).unwrap();
    assert!(ca.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
    let back = WebhookCa::from_secret(&bytes(ca.secret_data()), &ca.secret_annotations()).unwrap();
    assert_eq!(back, ca);
    assert!(!ca.needs_rotation(now() + SignedDuration::from_hours(24 * 365 * 7)));
    assert!(ca.needs_rotation(now() + SignedDuration::from_hours(24 * 365 * 9)));

    let later = now() + SignedDuration::from_hours(24 * 365 * 9);
    let rotated = ca.clone().rotated(later).unwrap();
    assert_ne!(rotated.cert_pem, ca.cert_pem);
    assert!(
        rotated.bundle().contains(&ca.cert_pem) && rotated.bundle().contains(&rotated.cert_pem)
    );
    let back = WebhookCa::from_secret(&bytes(rotated.secret_data()), &rotated.secret_annotations())
        .unwrap();
    assert_eq!(back, rotated);
    assert_eq!(back.settled(ca.not_after).bundle(), rotated.cert_pem);
    // A key that does not load is no CA: a new one is made.
    let mut broken = bytes(ca.secret_data());
    broken.insert(ca_secret::KEY.into(), b"not a key".to_vec());
    assert!(WebhookCa::from_secret(&broken, &ca.secret_annotations()).is_none());
}

#[test]
fn a_leaf_is_signed_by_the_ca_for_the_service_names_and_sealed_in_its_secret() {
    let ca = WebhookCa::generate(now()).unwrap();
    let leaf = ca.issue("gateway-webhook", "ops", now()).unwrap();
    assert!(leaf.key_pem.contains("PRIVATE KEY"));
    assert_eq!(leaf.issuer, ca.fingerprint());
    let data = leaf.secret_data(&ca);
    assert_eq!(
        data["ca.crt"],
        ca.bundle(),
        "pods get the CA the clients trust"
    );
    let annotations = leaf.secret_annotations(&key(), "ops", "gateway-webhook-service-cert");
    let back = ServingCert::from_secret(
        &key(),
        "ops",
        "gateway-webhook-service-cert",
        &bytes(data.clone()),
        &annotations,
    )
    .unwrap();
    assert_eq!(back, leaf);
    assert!(!back.needs_reissue(&ca, now()));
    assert!(back.needs_reissue(&ca, now() + SignedDuration::from_hours(24 * 340)));
    // Another CA (after a rotation) means a new leaf.
    let other = WebhookCa::generate(now()).unwrap();
    assert!(back.needs_reissue(&other, now()));
}

#[test]
fn a_leaf_secret_a_tenant_edited_is_not_believed() {
    let ca = WebhookCa::generate(now()).unwrap();
    let leaf = ca.issue("db-webhook", "team-a", now()).unwrap();
    let name = "db-webhook-service-cert";
    let annotations = leaf.secret_annotations(&key(), "team-a", name);
    // A certificate of the tenant's own, and an expiry pushed out so it is never replaced.
    let theirs = WebhookCa::generate(now())
        .unwrap()
        .issue("db-webhook", "team-a", now())
        .unwrap();
    let mut swapped = bytes(leaf.secret_data(&ca));
    swapped.insert("tls.crt".into(), theirs.cert_pem.into_bytes());
    assert!(ServingCert::from_secret(&key(), "team-a", name, &swapped, &annotations).is_none());
    let mut postponed = annotations.clone();
    postponed.insert(
        annotations::CERTIFICATE_NOT_AFTER.into(),
        "2099-01-01T00:00:00Z".into(),
    );
    let data = bytes(leaf.secret_data(&ca));
    assert!(ServingCert::from_secret(&key(), "team-a", name, &data, &postponed).is_none());
    // Copied into another namespace, the seal does not check either.
    assert!(ServingCert::from_secret(&key(), "team-b", name, &data, &annotations).is_none());
    let mut unsealed = annotations.clone();
    unsealed.remove(windlass_api::names::seal::ANNOTATION);
    assert!(ServingCert::from_secret(&key(), "team-a", name, &data, &unsealed).is_none());
}
