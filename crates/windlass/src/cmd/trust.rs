//! `windlass sign` and `windlass verify`: cosign-compatible image signatures, checked by
//! digest against keys or a trust policy.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use windlass_oci::RegistryClient;
use windlass_trust::{
    Artifact, ArtifactClass, CheckOutcome, Decision, Limits, PrivateKey, PublicKey,
    SignatureFormatChoice, TrustPolicy, Verdict, Verifier, publish_signature,
};

use super::bundle_registry::RegistryArgs;

/// The password of an encrypted private key, read as cosign reads it.
const PASSWORD_VARIABLE: &str = "COSIGN_PASSWORD";

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatArg {
    /// A Sigstore bundle stored as an OCI 1.1 referrer (cosign v3's default).
    Bundle,
    /// cosign's legacy simple-signing layer in the `sha256-<hex>.sig` image.
    Legacy,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassArg {
    Catalog,
    Bundle,
    Release,
    Image,
}

impl From<ClassArg> for ArtifactClass {
    fn from(class: ClassArg) -> Self {
        match class {
            ClassArg::Catalog => ArtifactClass::Catalog,
            ClassArg::Bundle => ArtifactClass::Bundle,
            ClassArg::Release => ArtifactClass::Release,
            ClassArg::Image => ArtifactClass::OperatorImage,
        }
    }
}

#[derive(clap::Args)]
pub struct SignArgs {
    /// The image to sign (a tag is resolved to its digest first; the digest is signed).
    pub reference: String,
    /// Private key: cosign's encrypted key (password in COSIGN_PASSWORD) or PKCS#8 PEM.
    #[arg(long)]
    pub key: PathBuf,
    #[arg(long, value_enum, default_value = "bundle")]
    pub format: FormatArg,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// The image to verify (a tag is resolved to its digest first).
    pub reference: String,
    /// A public key, `PATH` (named after the file: `release.pub` is key `release`) or
    /// `NAME=PATH`. Without --policy every key given must have signed.
    #[arg(long = "key", required = true)]
    pub keys: Vec<String>,
    /// A trust policy (YAML or JSON) whose keys are named by --key.
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// Which rules of the policy apply.
    #[arg(long, value_enum, default_value = "image")]
    pub class: ClassArg,
    #[arg(short = 'o', long, default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// `--key` values as `(name, path)`.
fn key_argument(value: &str) -> anyhow::Result<(String, PathBuf)> {
    if let Some((name, path)) = value.split_once('=')
        && !name.is_empty()
        && !name.contains('/')
    {
        return Ok((name.to_string(), PathBuf::from(path)));
    }
    let path = PathBuf::from(value);
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .with_context(|| {
            format!("--key {value}: cannot name the key after the file; write NAME={value}")
        })?
        .to_string();
    Ok((name, path))
}

fn read_public_keys(values: &[String]) -> anyhow::Result<BTreeMap<String, PublicKey>> {
    let mut keys = BTreeMap::new();
    for value in values {
        let (name, path) = key_argument(value)?;
        let text = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let key = PublicKey::from_pem(&text, &path.display().to_string())?;
        if keys.insert(name.clone(), key).is_some() {
            bail!("--key: two keys are named `{name}`; write NAME=PATH to tell them apart");
        }
    }
    Ok(keys)
}

fn read_policy(path: &Path) -> anyhow::Result<TrustPolicy> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let policy: TrustPolicy = if text.trim_start().starts_with('{') {
        serde_json::from_str(&text)
            .with_context(|| format!("{}: not a trust policy", path.display()))?
    } else {
        serde_saphyr::from_str(&text)
            .with_context(|| format!("{}: not a trust policy", path.display()))?
    };
    policy
        .validate()
        .with_context(|| format!("{}", path.display()))?;
    Ok(policy)
}

/// `registry/repo` and the digest a reference names now.
async fn resolve(client: &RegistryClient, reference: &str) -> anyhow::Result<(String, String)> {
    let repository = windlass_oci::repository_of(reference)?;
    let digest = match reference.rsplit_once('@') {
        Some((_, digest)) => digest.to_string(),
        None => client
            .resolve_digest(reference)
            .await?
            .with_context(|| format!("{reference}: not found in the registry"))?,
    };
    Ok((repository, digest))
}

/// Errors are exit code 2, so scripts can tell "refused" (1) from "could not check".
fn or_exit_2(result: anyhow::Result<ExitCode>) -> anyhow::Result<ExitCode> {
    match result {
        Ok(code) => Ok(code),
        Err(error) => {
            eprintln!("error: {error:#}");
            Ok(ExitCode::from(2))
        }
    }
}

pub fn sign(args: SignArgs) -> anyhow::Result<ExitCode> {
    or_exit_2(sign_inner(args))
}

fn sign_inner(args: SignArgs) -> anyhow::Result<ExitCode> {
    let text =
        std::fs::read(&args.key).with_context(|| format!("reading {}", args.key.display()))?;
    let password = std::env::var(PASSWORD_VARIABLE).unwrap_or_default();
    let key = PrivateKey::from_pem(&text, password.as_bytes(), &args.key.display().to_string())?;
    let options = args.registry.options(&args.reference)?;
    let client = RegistryClient::new(&options);
    let format = match args.format {
        FormatArg::Bundle => SignatureFormatChoice::Bundle,
        FormatArg::Legacy => SignatureFormatChoice::Legacy,
    };
    runtime()?.block_on(async {
        let (repository, digest) = resolve(&client, &args.reference).await?;
        if !args.reference.contains('@') {
            eprintln!(
                "signing {repository}@{digest}, the digest {} points at now",
                args.reference
            );
        }
        let published = publish_signature(
            &client,
            &repository,
            &digest,
            &key,
            format,
            chrono::Utc::now(),
        )
        .await?;
        let place = match (&published.tag, format) {
            (_, SignatureFormatChoice::Legacy) => {
                format!("tag {}", published.tag.as_deref().unwrap_or_default())
            }
            (Some(tag), SignatureFormatChoice::Bundle) => {
                format!(
                    "referrer {} (listed in tag {tag})",
                    published.manifest_digest
                )
            }
            (None, SignatureFormatChoice::Bundle) => {
                format!("referrer {}", published.manifest_digest)
            }
        };
        if published.written {
            println!(
                "signed {repository}@{digest} with {} ({}): {place}",
                args.key.display(),
                key.algorithm()
            );
        } else {
            println!("{repository}@{digest} already carries this signature: {place}");
        }
        Ok(ExitCode::SUCCESS)
    })
}

pub fn verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    or_exit_2(verify_inner(args))
}

fn verify_inner(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let keys = read_public_keys(&args.keys)?;
    let policy = match &args.policy {
        Some(path) => read_policy(path)?,
        None => TrustPolicy::require_all(&keys.keys().cloned().collect::<Vec<_>>()),
    };
    let options = args.registry.options(&args.reference)?;
    let client = RegistryClient::new(&options);
    let verdict = runtime()?.block_on(async {
        let (_, digest) = resolve(&client, &args.reference).await?;
        let verifier = Verifier::new(client.clone(), Limits::default());
        let artifact = Artifact {
            reference: args.reference.clone(),
            digest,
            class: args.class.into(),
        };
        anyhow::Ok(verifier.verify(&artifact, &policy, &keys).await?)
    })?;
    if args.output == "json" {
        println!("{}", serde_json::to_string_pretty(&verdict)?);
    } else {
        print_verdict(&verdict);
    }
    Ok(if verdict.decision == Decision::Verified {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_verdict(verdict: &Verdict) {
    let subject = format!("{}@{}", verdict.repository, verdict.digest);
    match verdict.decision {
        Decision::Verified => println!(
            "verified {subject}: signed by {}",
            verdict.verified_by.join(", ")
        ),
        Decision::Refused => println!("refused {subject}"),
        Decision::UnsignedReported => println!("not verified {subject} (unsigned, reported)"),
        Decision::NotCovered => println!("not verified {subject} (no rule applies)"),
    }
    for reason in &verdict.reasons {
        println!("  - {reason}");
    }
    for check in &verdict.signatures {
        let outcome = match &check.outcome {
            CheckOutcome::Valid { keys } => format!("valid, by {}", keys.join(", ")),
            CheckOutcome::Invalid { reason } => format!("invalid: {reason}"),
            CheckOutcome::NotASignature { reason } => format!("skipped: {reason}"),
        };
        println!("  {:?} at {}: {outcome}", check.format, check.location);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_named_after_their_file_or_explicitly() {
        assert_eq!(
            key_argument("keys/release.pub").unwrap(),
            ("release".into(), PathBuf::from("keys/release.pub"))
        );
        assert_eq!(
            key_argument("ops=keys/cosign.pub").unwrap(),
            ("ops".into(), PathBuf::from("keys/cosign.pub"))
        );
        // A path with `=` in a directory name stays a path.
        assert_eq!(
            key_argument("a=b/c.pub").unwrap(),
            ("a".into(), PathBuf::from("b/c.pub"))
        );
        assert_eq!(key_argument("dir/x=y/c.pub").unwrap().0, "c");
    }
}
