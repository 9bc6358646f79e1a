//! Serving certificates for operator webhooks. One CA, the manager's, signs a leaf certificate
//! for each webhook Service (`<service>.<namespace>.svc`); the leaf and its key go into a
//! Secret in the operator's namespace, which its pods mount, and the CA's certificates are what
//! webhook configurations and CRD conversions trust.
//!
//! The CA lives in the manager's namespace, out of tenants' reach: what a cluster-scoped object
//! trusts is never read from a Secret a tenant can write. A leaf Secret in a tenant's namespace
//! is sealed, so one a tenant edited is issued again instead of being believed. Pure: the
//! Secrets are read and written by the reconciler.

use std::collections::BTreeMap;
use windlass_api::names::annotations;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use sha2::{Digest, Sha256};
use windlass_revisions::{SealKey, Subject, seal};

/// How long a leaf certificate is valid.
pub const VALIDITY: SignedDuration = SignedDuration::from_hours(24 * 365);
/// Leaves are replaced when less than this remains, so a webhook never serves an expired one.
pub const ROTATE_BEFORE: SignedDuration = SignedDuration::from_hours(24 * 30);
/// How long the CA is valid.
pub const CA_VALIDITY: SignedDuration = SignedDuration::from_hours(24 * 365 * 10);
/// The CA is replaced when less than this remains; the one it replaces stays trusted until it
/// expires, which is after every leaf it signed has (leaves live a year).
pub const CA_ROTATE_BEFORE: SignedDuration = SignedDuration::from_hours(24 * 365 * 2);

const CA_NAME: &str = "windlass webhook CA";

#[derive(Debug, thiserror::Error)]
#[error("generating a certificate for {subject}: {source}")]
pub struct CertError {
    subject: String,
    source: rcgen::Error,
}

/// Data keys of the CA Secret in the manager's namespace.
pub mod ca_secret {
    /// The Secret's name.
    pub const NAME: &str = "windlass-webhook-ca";
    pub const CERT: &str = "ca.crt";
    pub const KEY: &str = "ca.key";
    /// The CA a rotation replaced, trusted while it is valid.
    pub const PREVIOUS: &str = "previous-ca.crt";
}

/// The manager's webhook CA.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookCa {
    pub cert_pem: String,
    pub key_pem: String,
    pub not_after: Timestamp,
    /// After a rotation: the replaced CA's certificate, and when it expires.
    pub previous: Option<(String, Timestamp)>,
}

impl std::fmt::Debug for WebhookCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key signs certificates every webhook client trusts: never in a log line.
        f.debug_struct("WebhookCa")
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

fn to_offset(ts: Timestamp) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(ts.as_second())
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
}

fn ca_params(not_after: Timestamp) -> Result<CertificateParams, rcgen::Error> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(DnType::CommonName, CA_NAME);
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.not_before = to_offset(not_after - CA_VALIDITY - SignedDuration::from_mins(5));
    params.not_after = to_offset(not_after);
    Ok(params)
}

impl WebhookCa {
    /// A fresh CA valid for [`CA_VALIDITY`] from `now`.
    pub fn generate(now: Timestamp) -> Result<WebhookCa, CertError> {
        let err = |source| CertError {
            subject: CA_NAME.into(),
            source,
        };
        let not_after = now + CA_VALIDITY;
        let key = KeyPair::generate().map_err(err)?;
        let cert = ca_params(not_after)
            .map_err(err)?
            .self_signed(&key)
            .map_err(err)?;
        Ok(WebhookCa {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            not_after,
            previous: None,
        })
    }

    /// What webhook clients trust: this CA, and the one it replaced while that is valid.
    pub fn bundle(&self) -> String {
        match &self.previous {
            Some((previous, _)) => format!("{}{}", self.cert_pem, previous),
            None => self.cert_pem.clone(),
        }
    }

    pub fn needs_rotation(&self, now: Timestamp) -> bool {
        self.not_after.duration_since(now) < CA_ROTATE_BEFORE
    }

    /// A new CA, this one trusted beside it until it expires; a replaced CA already expired
    /// is dropped.
    pub fn rotated(self, now: Timestamp) -> Result<WebhookCa, CertError> {
        let fresh = WebhookCa::generate(now)?;
        Ok(WebhookCa {
            previous: Some((self.cert_pem, self.not_after)),
            ..fresh
        })
    }

    /// This CA without a replaced one that has expired.
    pub fn settled(mut self, now: Timestamp) -> WebhookCa {
        if self.previous.as_ref().is_some_and(|(_, end)| *end <= now) {
            self.previous = None;
        }
        self
    }

    /// A short fingerprint of this CA's certificate: which CA issued a leaf.
    pub fn fingerprint(&self) -> String {
        fingerprint(&self.cert_pem)
    }

    /// The CA Secret's data and annotations.
    pub fn secret_data(&self) -> BTreeMap<String, String> {
        let mut data = BTreeMap::from([
            (ca_secret::CERT.to_string(), self.cert_pem.clone()),
            (ca_secret::KEY.to_string(), self.key_pem.clone()),
        ]);
        if let Some((previous, _)) = &self.previous {
            data.insert(ca_secret::PREVIOUS.to_string(), previous.clone());
        }
        data
    }

    pub fn secret_annotations(&self) -> BTreeMap<String, String> {
        let mut notes = BTreeMap::from([(
            annotations::CERTIFICATE_NOT_AFTER.to_string(),
            self.not_after.to_string(),
        )]);
        if let Some((_, end)) = &self.previous {
            notes.insert(
                annotations::PREVIOUS_CERTIFICATE_NOT_AFTER.to_string(),
                end.to_string(),
            );
        }
        notes
    }

    /// The CA read back from its Secret; `None` when anything is missing or the key does not
    /// load (a new CA is made then).
    pub fn from_secret(
        data: &BTreeMap<String, Vec<u8>>,
        annotations: &BTreeMap<String, String>,
    ) -> Option<WebhookCa> {
        let text = |key: &str| {
            data.get(key)
                .and_then(|v| String::from_utf8(v.clone()).ok())
        };
        let time = |key: &str| annotations.get(key).and_then(|t| t.parse().ok());
        let ca = WebhookCa {
            cert_pem: text(ca_secret::CERT)?,
            key_pem: text(ca_secret::KEY)?,
            not_after: time(annotations::CERTIFICATE_NOT_AFTER)?,
            previous: text(ca_secret::PREVIOUS)
                .zip(time(annotations::PREVIOUS_CERTIFICATE_NOT_AFTER)),
        };
        KeyPair::from_pem(&ca.key_pem).ok()?;
        Some(ca)
    }

    /// A leaf for Service `service` in `namespace`, valid for [`VALIDITY`] from `now`.
    pub fn issue(
        &self,
        service: &str,
        namespace: &str,
        now: Timestamp,
    ) -> Result<ServingCert, CertError> {
        let subject = format!("{service}.{namespace}.svc");
        let err = |source| CertError {
            subject: subject.clone(),
            source,
        };
        let ca_key = KeyPair::from_pem(&self.key_pem).map_err(err)?;
        // The issuer is named by its distinguished name and key; both are the CA's.
        let ca = ca_params(self.not_after).map_err(err)?;
        let issuer = Issuer::from_params(&ca, &ca_key);
        let names = vec![
            service.to_string(),
            format!("{service}.{namespace}"),
            format!("{service}.{namespace}.svc"),
            format!("{service}.{namespace}.svc.cluster.local"),
        ];
        let not_after = now + VALIDITY;
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
        params.not_before = to_offset(now - SignedDuration::from_mins(5));
        params.not_after = to_offset(not_after);
        let cert = params.signed_by(&key, &issuer).map_err(err)?;
        Ok(ServingCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            not_after,
            issuer: self.fingerprint(),
        })
    }
}

fn fingerprint(pem: &str) -> String {
    Sha256::digest(pem.as_bytes())
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A leaf certificate and its key, PEM-encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServingCert {
    pub cert_pem: String,
    pub key_pem: String,
    pub not_after: Timestamp,
    /// The fingerprint of the CA that signed it.
    pub issuer: String,
}

/// The annotation naming the CA that signed a leaf.
const ISSUER: &str = "windlass.dev/certificate-issuer";

impl ServingCert {
    /// The leaf Secret's data: the keys OLM-built operators expect (`tls.crt`, `tls.key`,
    /// `ca.crt`, the last being what clients of the webhook trust).
    pub fn secret_data(&self, ca: &WebhookCa) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("tls.crt".to_string(), self.cert_pem.clone()),
            ("tls.key".to_string(), self.key_pem.clone()),
            ("ca.crt".to_string(), ca.bundle()),
        ])
    }

    /// The leaf Secret's annotations: when it expires, who issued it, and the seal over both
    /// and the certificate and key, bound to the Secret's namespace and name.
    pub fn secret_annotations(
        &self,
        key: &SealKey,
        namespace: &str,
        name: &str,
    ) -> BTreeMap<String, String> {
        let not_after = self.not_after.to_string();
        BTreeMap::from([
            (
                annotations::CERTIFICATE_NOT_AFTER.to_string(),
                not_after.clone(),
            ),
            (ISSUER.to_string(), self.issuer.clone()),
            (
                windlass_api::names::seal::ANNOTATION.to_string(),
                seal::seal(
                    key,
                    &leaf_subject(namespace, name),
                    &self.sealed_parts(&not_after),
                ),
            ),
        ])
    }

    fn sealed_parts<'a>(&'a self, not_after: &'a str) -> [&'a [u8]; 4] {
        [
            self.cert_pem.as_bytes(),
            self.key_pem.as_bytes(),
            not_after.as_bytes(),
            self.issuer.as_bytes(),
        ]
    }

    /// The leaf read back from Secret `namespace/name`; `None` when anything is missing or its
    /// seal does not check (edited, or not written by this windlass), which makes the caller
    /// issue a new one.
    pub fn from_secret(
        key: &SealKey,
        namespace: &str,
        name: &str,
        data: &BTreeMap<String, Vec<u8>>,
        annotations: &BTreeMap<String, String>,
    ) -> Option<Self> {
        let text = |key: &str| {
            data.get(key)
                .and_then(|v| String::from_utf8(v.clone()).ok())
        };
        let not_after_text = annotations.get(annotations::CERTIFICATE_NOT_AFTER)?;
        let cert = ServingCert {
            cert_pem: text("tls.crt")?,
            key_pem: text("tls.key")?,
            not_after: not_after_text.parse().ok()?,
            issuer: annotations.get(ISSUER)?.clone(),
        };
        let found = annotations.get(windlass_api::names::seal::ANNOTATION);
        seal::verify(
            key,
            &leaf_subject(namespace, name),
            &cert.sealed_parts(not_after_text),
            found.map(String::as_str),
        )
        .ok()?;
        Some(cert)
    }

    /// Whether the leaf must be issued again: it expires soon, or another CA signed it.
    pub fn needs_reissue(&self, ca: &WebhookCa, now: Timestamp) -> bool {
        self.not_after.duration_since(now) < ROTATE_BEFORE || self.issuer != ca.fingerprint()
    }
}

fn leaf_subject(namespace: &str, name: &str) -> Subject {
    Subject {
        kind: "WebhookCertificate".into(),
        object: format!("{namespace}/{name}"),
        uid: String::new(),
        revision: None,
    }
}

#[cfg(test)]
#[path = "certs_tests.rs"]
mod tests;
