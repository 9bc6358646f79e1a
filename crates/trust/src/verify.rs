//! The entry point: is this artifact, at this digest, signed as the policy requires?
//!
//! [`Verifier::verify`] takes the image reference and digest, the artifact class, the policy
//! and a [`KeyResolver`], and returns a [`Verdict`]: allowed or not, verified or not, by which
//! keys, and reasons a person can act on. Only a registry that cannot be asked is an `Err`.
//!
//! Verdicts that let an artifact through ([`Decision::Verified`], [`Decision::NotCovered`]) are
//! cached by repository, digest, class and policy fingerprint (which covers the key material),
//! until the earliest `notAfter` of a key that counted; so polling an unchanged, verified
//! catalog costs no registry request beyond the poll's own manifest check. Refusals are not
//! cached: the missing signature may be pushed at any moment.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::TrustError;
use crate::check::{CheckOutcome, KeyRing, SignatureCheck, check_candidate};
use crate::discover::{Limits, SignatureSource, discover};
use crate::keys::PublicKey;
use crate::layout;
use crate::policy::{ArtifactClass, TrustPolicy, UnsignedAction, judge_rule};

/// Looks up key material by the names a policy uses. A controller reads Secrets or
/// ConfigMaps; the CLI reads files. An `Err` is a message naming where the key should be.
pub trait KeyResolver {
    fn resolve(&self, name: &str) -> Result<PublicKey, String>;
}

impl KeyResolver for BTreeMap<String, PublicKey> {
    fn resolve(&self, name: &str) -> Result<PublicKey, String> {
        self.get(name)
            .cloned()
            .ok_or_else(|| format!("no key material for key {name}"))
    }
}

/// What is being verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Artifact {
    /// The image reference as the user wrote it (a tag or digest reference; used for the
    /// repository and for messages).
    pub reference: String,
    /// The manifest digest to verify (`sha256:<hex>`), resolved by the caller.
    pub digest: String,
    pub class: ArtifactClass,
}

/// The outcome, for controllers to act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Decision {
    /// Every rule that applies is met.
    Verified,
    /// A rule is not met.
    Refused,
    /// No signature at all, and every rule that applies says `unsigned: Report`.
    UnsignedReported,
    /// No rule of the policy covers this artifact.
    NotCovered,
}

/// The result of verifying one artifact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub reference: String,
    pub repository: String,
    pub digest: String,
    pub class: ArtifactClass,
    pub decision: Decision,
    /// True only when the policy's rules were met by valid signatures.
    pub verified: bool,
    /// The keys whose valid signatures counted.
    pub verified_by: Vec<String>,
    /// Why it was refused (or, when allowed, what is worth knowing).
    pub reasons: Vec<String>,
    /// Every stored signature looked at.
    pub signatures: Vec<SignatureCheck>,
    pub policy_fingerprint: String,
    /// Whether this came from the cache, with no registry request.
    pub cached: bool,
}

impl Verdict {
    /// Whether the artifact may be used.
    pub fn allowed(&self) -> bool {
        self.decision != Decision::Refused
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct CacheKey {
    repository: String,
    /// Where the signatures were looked for (the repository itself, or a mirror of it).
    lookup: String,
    digest: String,
    class: ArtifactClass,
    fingerprint: String,
}

/// Verdicts by digest (see the module docs). A plain map: the [`Verifier`] guards it.
#[derive(Debug, Default)]
pub struct VerdictCache {
    entries: HashMap<CacheKey, (Verdict, Option<DateTime<Utc>>)>,
}

impl VerdictCache {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn get(&self, key: &CacheKey, now: DateTime<Utc>) -> Option<Verdict> {
        let (verdict, until) = self.entries.get(key)?;
        if until.is_some_and(|until| now >= until) {
            return None;
        }
        Some(verdict.clone())
    }

    fn put(&mut self, key: CacheKey, verdict: Verdict, until: Option<DateTime<Utc>>) {
        // Bounded: a manager sees a few hundred artifacts; past that, start over rather than
        // grow without limit.
        if self.entries.len() >= 4096 {
            self.entries.clear();
        }
        self.entries.insert(key, (verdict, until));
    }
}

/// Verifies artifacts against policies, reading signatures from a [`SignatureSource`].
pub struct Verifier<S: SignatureSource> {
    source: S,
    limits: Limits,
    cache: Mutex<VerdictCache>,
}

struct ResolvedKeys {
    usable: Vec<(String, PublicKey)>,
    notes: Vec<String>,
    material: BTreeMap<String, String>,
    valid_until: BTreeMap<String, DateTime<Utc>>,
}

fn resolve_keys(
    policy: &TrustPolicy,
    names: &BTreeSet<String>,
    resolver: &(dyn KeyResolver + Sync),
    now: DateTime<Utc>,
) -> ResolvedKeys {
    let mut resolved = ResolvedKeys {
        usable: Vec::new(),
        notes: Vec::new(),
        material: BTreeMap::new(),
        valid_until: BTreeMap::new(),
    };
    for name in names {
        let Some(trusted) = policy.key(name) else {
            continue;
        };
        match resolver.resolve(name) {
            Err(message) => {
                resolved
                    .material
                    .insert(name.clone(), format!("unresolved: {message}"));
                resolved
                    .notes
                    .push(format!("key {name} cannot be used: {message}"));
            }
            Ok(key) => {
                resolved.material.insert(name.clone(), key.fingerprint());
                if let Some(why) = trusted.outside_window(now) {
                    resolved
                        .notes
                        .push(format!("{why}; its signatures do not count"));
                } else {
                    if let Some(until) = trusted.not_after {
                        resolved.valid_until.insert(name.clone(), until);
                    }
                    resolved.usable.push((name.clone(), key));
                }
            }
        }
    }
    resolved
}

impl<S: SignatureSource> Verifier<S> {
    pub fn new(source: S, limits: Limits) -> Self {
        Verifier {
            source,
            limits,
            cache: Mutex::new(VerdictCache::default()),
        }
    }

    pub fn source(&self) -> &S {
        &self.source
    }

    /// Cached verdicts right now.
    pub fn cached_verdicts(&self) -> usize {
        self.cache.lock().expect("cache lock").len()
    }

    /// Verifies `artifact` under `policy` now.
    pub async fn verify(
        &self,
        artifact: &Artifact,
        policy: &TrustPolicy,
        keys: &(dyn KeyResolver + Sync),
    ) -> Result<Verdict, TrustError> {
        self.verify_at(artifact, policy, keys, Utc::now()).await
    }

    /// [`Verifier::verify_mirrored_at`] now.
    pub async fn verify_mirrored(
        &self,
        artifact: &Artifact,
        mirror: Option<&str>,
        policy: &TrustPolicy,
        keys: &(dyn KeyResolver + Sync),
    ) -> Result<Verdict, TrustError> {
        self.verify_mirrored_at(artifact, mirror, policy, keys, Utc::now())
            .await
    }

    /// [`Verifier::verify`] at a given time (key windows are judged at `now`).
    pub async fn verify_at(
        &self,
        artifact: &Artifact,
        policy: &TrustPolicy,
        keys: &(dyn KeyResolver + Sync),
        now: DateTime<Utc>,
    ) -> Result<Verdict, TrustError> {
        self.verify_mirrored_at(artifact, None, policy, keys, now)
            .await
    }

    /// Verifies `artifact`, pulled from `mirror` (a reference to a mirror of its repository)
    /// rather than where it names: the rules that apply are those of the artifact's own
    /// repository, and its signatures are looked for in the mirror, where a copy of the image
    /// carries its signatures with it. `None` looks in the artifact's own repository.
    pub async fn verify_mirrored_at(
        &self,
        artifact: &Artifact,
        mirror: Option<&str>,
        policy: &TrustPolicy,
        keys: &(dyn KeyResolver + Sync),
        now: DateTime<Utc>,
    ) -> Result<Verdict, TrustError> {
        policy.validate()?;
        let repository = windlass_oci::repository_of(&artifact.reference)?;
        let lookup = match mirror {
            Some(mirror) => windlass_oci::repository_of(mirror)?,
            None => repository.clone(),
        };
        if !layout::is_sha256_digest(&artifact.digest) {
            return Err(TrustError::Artifact {
                reference: artifact.reference.clone(),
                message: format!(
                    "`{}` is not a sha256 digest; resolve the reference to its digest first",
                    artifact.digest
                ),
            });
        }
        let rules = policy.rules_for(artifact.class, &repository);
        let names: BTreeSet<String> = rules
            .iter()
            .flat_map(|(_, rule)| rule.keys.iter().cloned())
            .collect();
        let resolved = resolve_keys(policy, &names, keys, now);
        let fingerprint = policy.fingerprint(&resolved.material);
        let key = CacheKey {
            repository: repository.clone(),
            lookup: lookup.clone(),
            digest: artifact.digest.clone(),
            class: artifact.class,
            fingerprint: fingerprint.clone(),
        };
        if let Some(mut verdict) = self.cache.lock().expect("cache lock").get(&key, now) {
            verdict.cached = true;
            verdict.reference = artifact.reference.clone();
            return Ok(verdict);
        }
        let mut verdict = Verdict {
            reference: artifact.reference.clone(),
            repository: repository.clone(),
            digest: artifact.digest.clone(),
            class: artifact.class,
            decision: Decision::NotCovered,
            verified: false,
            verified_by: Vec::new(),
            reasons: Vec::new(),
            signatures: Vec::new(),
            policy_fingerprint: fingerprint,
            cached: false,
        };
        if rules.is_empty() {
            verdict.reasons.push(format!(
                "no rule of the trust policy covers {} images in {repository}",
                artifact.class
            ));
            if policy.requires_signature(artifact.class) {
                verdict.decision = Decision::Refused;
                verdict.reasons.insert(
                    0,
                    format!(
                        "every {} image must be signed (requireSignatures)",
                        artifact.class
                    ),
                );
            }
            self.cache
                .lock()
                .expect("cache lock")
                .put(key, verdict.clone(), None);
            return Ok(verdict);
        }

        let found = discover(&self.source, &lookup, &artifact.digest, self.limits).await?;
        let ring: Vec<(String, &PublicKey)> = resolved
            .usable
            .iter()
            .map(|(n, k)| (n.clone(), k))
            .collect();
        let ring: &KeyRing<'_> = &ring;
        verdict.signatures = found
            .candidates
            .iter()
            .map(|c| check_candidate(c, &artifact.digest, ring))
            .collect();
        let signed_by: BTreeSet<String> = verdict
            .signatures
            .iter()
            .filter_map(|s| match &s.outcome {
                CheckOutcome::Valid { keys } => Some(keys.iter().cloned()),
                _ => None,
            })
            .flatten()
            .collect();
        let any_signature = verdict
            .signatures
            .iter()
            .any(|s| !matches!(s.outcome, CheckOutcome::NotASignature { .. }));

        verdict.reasons.extend(resolved.notes.iter().cloned());
        if found.skipped > 0 {
            verdict.reasons.push(format!(
                "{} more stored signatures were not read (limit {})",
                found.skipped, self.limits.max_signatures
            ));
        }
        if !any_signature {
            let reportable = !policy.requires_signature(artifact.class)
                && rules
                    .iter()
                    .all(|(_, rule)| rule.unsigned == UnsignedAction::Report);
            verdict.reasons.insert(
                0,
                format!(
                    "{repository}@{} is unsigned: no signature in {}",
                    artifact.digest,
                    found.looked_in.join(" or ")
                ),
            );
            verdict.decision = if reportable {
                Decision::UnsignedReported
            } else {
                Decision::Refused
            };
            return Ok(verdict);
        }

        let mut failures = Vec::new();
        for (index, rule) in &rules {
            if let Err(why) = judge_rule(rule, &signed_by) {
                failures.push(format!("rule {}: {why}", rule.display_name(*index)));
            }
        }
        let counted: BTreeSet<String> = rules
            .iter()
            .flat_map(|(_, rule)| rule.keys.iter().filter(|k| signed_by.contains(*k)).cloned())
            .collect();
        verdict.verified_by = counted.iter().cloned().collect();
        if failures.is_empty() {
            verdict.decision = Decision::Verified;
            verdict.verified = true;
            let until = counted
                .iter()
                .filter_map(|k| resolved.valid_until.get(k))
                .min()
                .copied();
            self.cache
                .lock()
                .expect("cache lock")
                .put(key, verdict.clone(), until);
        } else {
            verdict.decision = Decision::Refused;
            // The rule failures first, then what was wrong with each signature that did not count.
            let mut reasons = failures;
            for check in &verdict.signatures {
                if let CheckOutcome::Invalid { reason } = &check.outcome {
                    reasons.push(format!("{}: {reason}", check.location));
                }
            }
            reasons.append(&mut verdict.reasons);
            verdict.reasons = reasons;
        }
        Ok(verdict)
    }
}
