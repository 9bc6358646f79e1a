//! Serving certificates for operator webhooks: a CA per webhook Service and a leaf certificate
//! for `<service>.<namespace>.svc`, kept in a Secret and rotated well before they expire.

use std::collections::BTreeMap;
use windlass_api::names::annotations;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// How long a generated certificate is valid.
pub const VALIDITY: SignedDuration = SignedDuration::from_hours(24 * 365);
/// Certificates are replaced when less than this remains, so a webhook never serves an expired one.
pub const ROTATE_BEFORE: SignedDuration = SignedDuration::from_hours(24 * 30);

#[derive(Debug, thiserror::Error)]
#[error("generating a serving certificate for {subject}: {source}")]
pub struct CertError {
    subject: String,
    source: rcgen::Error,
}

/// A CA and a serving certificate it signed, PEM-encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServingCert {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
    pub not_after: Timestamp,
}

impl ServingCert {
    /// The Secret data keys OLM-built operators expect (`tls.crt`, `tls.key`, `ca.crt`).
    pub fn secret_data(&self) -> BTreeMap<String, String> {
        [
            ("tls.crt".to_string(), self.cert_pem.clone()),
            ("tls.key".to_string(), self.key_pem.clone()),
            ("ca.crt".to_string(), self.ca_pem.clone()),
        ]
        .into()
    }

    /// Reads a certificate back from a Secret's data and annotations; `None` when anything is
    /// missing, which makes the caller generate a new one.
    pub fn from_secret(
        data: &BTreeMap<String, Vec<u8>>,
        annotations: &BTreeMap<String, String>,
    ) -> Option<Self> {
        let text = |key: &str| {
            data.get(key)
                .and_then(|v| String::from_utf8(v.clone()).ok())
        };
        Some(ServingCert {
            ca_pem: text("ca.crt")?,
            cert_pem: text("tls.crt")?,
            key_pem: text("tls.key")?,
            not_after: annotations
                .get(annotations::CERTIFICATE_NOT_AFTER)?
                .parse()
                .ok()?,
        })
    }

    pub fn needs_rotation(&self, now: Timestamp) -> bool {
        self.not_after.duration_since(now) < ROTATE_BEFORE
    }
}

fn to_offset(ts: Timestamp) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(ts.as_second())
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
}

/// Generates a fresh CA and a certificate for the Service's in-cluster DNS names.
pub fn generate(service: &str, namespace: &str, now: Timestamp) -> Result<ServingCert, CertError> {
    let subject = format!("{service}.{namespace}.svc");
    let err = |source| CertError {
        subject: subject.clone(),
        source,
    };
    let not_before = now - SignedDuration::from_mins(5);
    let not_after = now + VALIDITY;

    let ca_key = KeyPair::generate().map_err(err)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca_params.distinguished_name.push(
        DnType::CommonName,
        format!("windlass webhook CA for {subject}"),
    );
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    ca_params.not_before = to_offset(not_before);
    ca_params.not_after = to_offset(not_after);
    let ca_cert = ca_params.self_signed(&ca_key).map_err(err)?;

    let names = vec![
        service.to_string(),
        format!("{service}.{namespace}"),
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ];
    let key = KeyPair::generate().map_err(err)?;
    let mut params = CertificateParams::new(names).map_err(err)?;
    params
        .distinguished_name
        .push(DnType::CommonName, subject.clone());
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = to_offset(not_before);
    params.not_after = to_offset(not_after);
    let issuer = Issuer::from_params(&ca_params, &ca_key);
    let cert = params.signed_by(&key, &issuer).map_err(err)?;

    Ok(ServingCert {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        not_after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_certificate_round_trips_through_a_secret_and_rotates_near_expiry() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let cert = generate("gateway-webhook", "ops", now).unwrap();
        assert!(cert.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(cert.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(cert.key_pem.contains("PRIVATE KEY"));
        assert_ne!(cert.ca_pem, cert.cert_pem);

        let data = cert
            .secret_data()
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes()))
            .collect();
        let annotations = [(
            annotations::CERTIFICATE_NOT_AFTER.to_string(),
            cert.not_after.to_string(),
        )]
        .into();
        let back = ServingCert::from_secret(&data, &annotations).unwrap();
        assert_eq!(back, cert);

        assert!(!cert.needs_rotation(now));
        assert!(!cert.needs_rotation(now + SignedDuration::from_hours(24 * 300)));
        assert!(cert.needs_rotation(now + SignedDuration::from_hours(24 * 340)));
        assert!(cert.needs_rotation(now + VALIDITY));
    }

    #[test]
    fn a_secret_missing_any_part_is_regenerated() {
        let annotations = BTreeMap::new();
        assert!(ServingCert::from_secret(&BTreeMap::new(), &annotations).is_none());
    }
}
