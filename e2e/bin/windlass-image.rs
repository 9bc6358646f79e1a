//! `windlass-image`: assembles the manager's OCI image from a built binary and pushes it, with
//! windlass's own OCI code (`windlass_oci::image`), for machines without a container
//! engine. `make image` runs it on the static release build.
//!
//! The image is the one `crates/windlass/Containerfile` describes: the assembler reads that
//! file's final stage (base, `LABEL`, `USER`, `ENTRYPOINT`, `CMD`, the `COPY` of the binary) and
//! refuses any instruction it cannot reproduce, so the two cannot drift apart silently. What
//! the distroless base contributes (CA certificates, `/tmp`, `PATH`, `SSL_CERT_FILE`) is put in
//! by hand, the CA bundle copied from this machine.
//!
//! It lives here, not in the `windlass` CLI: it is build tooling next to the local control
//! plane it pushes to, the shipped binary has no use for it, and the end-to-end test
//! (`tests/manager_image.rs`) runs this very program.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail, ensure};
use clap::Parser;
use windlass_oci::RegistryOptions;
use windlass_oci::image::{Entry, RunConfig, push_runnable};

/// The Containerfile this binary was built with; `--containerfile` reads another.
const CONTAINERFILE: &str = include_str!("../../crates/windlass/Containerfile");
const CA_BUNDLE_PATH: &str = "/etc/ssl/certs/ca-certificates.crt";

/// Assemble the windlass manager image from a built binary and push it to a registry.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// The windlass binary to package; it must be statically linked (see --allow-dynamic).
    #[arg(long)]
    binary: PathBuf,
    /// Where to push; default `<local registry>/windlass/windlass:<binary's version>`, the
    /// local registry being WINDLASS_REGISTRY from the environment or from `make cluster`'s
    /// cluster.env (then over plain HTTP).
    #[arg(long)]
    reference: Option<String>,
    /// Speak plain HTTP to the registry (implied for the default, local registry).
    #[arg(long)]
    plain_http: bool,
    /// The CA bundle to put at /etc/ssl/certs/ca-certificates.crt, for TLS to registries.
    #[arg(long, default_value = CA_BUNDLE_PATH)]
    ca_bundle: PathBuf,
    /// Read this Containerfile instead of the one built in.
    #[arg(long)]
    containerfile: Option<PathBuf>,
    /// Package a dynamically linked binary. Such an image has no C library and does not start;
    /// only for checking the assembly itself (the end-to-end test uses the debug build).
    #[arg(long)]
    allow_dynamic: bool,
    /// Print what was pushed as JSON.
    #[arg(long)]
    json: bool,
}

/// What the final stage of a Containerfile says about the image.
#[derive(Debug, Default, PartialEq, Eq)]
struct Stage {
    base: String,
    labels: BTreeMap<String, String>,
    user: String,
    entrypoint: Vec<String>,
    cmd: Vec<String>,
    /// `(sources, destination)` of each `COPY`.
    copies: Vec<(String, String)>,
    /// Instructions this assembler does not reproduce (`RUN`, `ENV`, ...).
    unsupported: Vec<String>,
}

/// Logical lines: comments dropped, `\` continuations joined.
fn logical_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                lines.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.trim().is_empty() {
        lines.push(current);
    }
    lines
}

/// `a="b c" d=e` -> `[(a, "b c"), (d, e)]`.
fn key_values(args: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut pairs = Vec::new();
    let mut chars = args.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let key: String =
            std::iter::from_fn(|| chars.next_if(|c| *c != '=' && !c.is_whitespace())).collect();
        ensure!(
            chars.next() == Some('='),
            "LABEL {args}: expected key=value pairs"
        );
        let mut value = String::new();
        if chars.next_if_eq(&'"').is_some() {
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => value.extend(chars.next()),
                    Some(c) => value.push(c),
                    None => bail!("LABEL {args}: unterminated quote"),
                }
            }
        } else {
            value.extend(std::iter::from_fn(|| chars.next_if(|c| !c.is_whitespace())));
        }
        pairs.push((key, value));
    }
}

fn exec_form(instruction: &str, args: &str) -> anyhow::Result<Vec<String>> {
    serde_json::from_str(args).with_context(|| {
        format!("{instruction} {args}: only the JSON (exec) form can be reproduced without a shell")
    })
}

/// Reads the final stage of a Containerfile. Instructions of earlier (build) stages do not end
/// up in the image and are skipped; in the final stage, any instruction this assembler does
/// not reproduce is an error.
fn final_stage(text: &str) -> anyhow::Result<Stage> {
    let mut stage: Option<Stage> = None;
    for line in logical_lines(text) {
        let (instruction, args) = line.split_once(char::is_whitespace).unwrap_or((&line, ""));
        let (instruction, args) = (instruction.to_ascii_uppercase(), args.trim());
        if instruction == "FROM" {
            let base = args.split_whitespace().next().unwrap_or_default();
            stage = Some(Stage {
                base: base.to_string(),
                ..Default::default()
            });
            continue;
        }
        let Some(stage) = stage.as_mut() else {
            if instruction == "ARG" {
                continue;
            }
            bail!("{instruction} before the first FROM");
        };
        match instruction.as_str() {
            "LABEL" => stage.labels.extend(key_values(args)?),
            "USER" => stage.user = args.to_string(),
            "ENTRYPOINT" => stage.entrypoint = exec_form("ENTRYPOINT", args)?,
            "CMD" => stage.cmd = exec_form("CMD", args)?,
            "COPY" => {
                let words: Vec<&str> = args
                    .split_whitespace()
                    .filter(|w| !w.starts_with("--"))
                    .collect();
                let Some((destination, sources)) = words.split_last() else {
                    bail!("COPY without a destination");
                };
                ensure!(!sources.is_empty(), "COPY {args}: no source");
                stage
                    .copies
                    .push((sources.join(" "), destination.to_string()));
            }
            // Harmless in a build stage; refused below if the final stage has them.
            _ => stage.unsupported.push(line.clone()),
        }
    }
    let stage = stage.context("the Containerfile has no FROM")?;
    if let Some(line) = stage.unsupported.first() {
        bail!("the final stage has `{line}`, which windlass-image cannot reproduce");
    }
    Ok(stage)
}

/// What a base image contributes that windlass-image puts in itself.
struct Base {
    env: &'static [&'static str],
}

fn known_base(image: &str) -> anyhow::Result<Base> {
    match image {
        // CA certificates, /tmp (1777), this environment, user 65532 (set by USER anyway).
        "gcr.io/distroless/static-debian12:nonroot" => Ok(Base {
            env: &[
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
            ],
        }),
        other => bail!("base image {other} is not one windlass-image knows how to stand in for"),
    }
}

/// What an executable's ELF header says: its architecture (as OCI names it) and whether it
/// asks for a dynamic loader (a `PT_INTERP` program header). Static-pie binaries have none.
fn elf_facts(bytes: &[u8]) -> anyhow::Result<(&'static str, bool)> {
    ensure!(bytes.starts_with(b"\x7fELF"), "not an ELF executable");
    ensure!(
        bytes.len() >= 64 && bytes[4] == 2 && bytes[5] == 1,
        "not a 64-bit little-endian ELF file"
    );
    let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    let architecture = match u16_at(0x12) {
        0x3e => "amd64",
        0xb7 => "arm64",
        other => bail!("ELF machine {other:#x} is not one windlass images are made for"),
    };
    let table = u64::from_le_bytes(bytes[0x20..0x28].try_into()?) as usize;
    let (size, count) = (u16_at(0x36) as usize, u16_at(0x38) as usize);
    let mut interpreter = false;
    for i in 0..count {
        let at = table + i * size;
        let kind = bytes
            .get(at..at + 4)
            .context("truncated ELF program headers")?;
        interpreter |= u32::from_le_bytes(kind.try_into()?) == 3; // PT_INTERP
    }
    Ok((architecture, !interpreter))
}

/// `windlass 0.1.0` -> `0.1.0`, by running the binary (which also shows it runs here).
fn binary_version(binary: &Path) -> anyhow::Result<String> {
    let output = std::process::Command::new(binary)
        .arg("--version")
        .output()
        .with_context(|| format!("running {} --version", binary.display()))?;
    ensure!(
        output.status.success(),
        "{} --version failed: {}",
        binary.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    text.split_whitespace()
        .nth(1)
        .map(str::to_string)
        .with_context(|| format!("{} --version printed {text:?}", binary.display()))
}

fn local_registry() -> anyhow::Result<String> {
    if let Ok(registry) = std::env::var("WINDLASS_REGISTRY") {
        return Ok(registry);
    }
    let env = windlass_testkit::cluster_env()?;
    env.get("WINDLASS_REGISTRY")
        .cloned()
        .context("cluster.env names no registry; start the local control plane with `make cluster`")
}

async fn run(args: Args) -> anyhow::Result<()> {
    let containerfile = match &args.containerfile {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
        }
        None => CONTAINERFILE.to_string(),
    };
    let stage = final_stage(&containerfile).context("reading the Containerfile")?;
    let base = known_base(&stage.base)?;
    let copies = stage.copies.as_slice();
    let [(source, destination)] = copies else {
        bail!("the final stage should COPY one file, the binary; it has {copies:?}");
    };
    ensure!(
        !source.contains(' '),
        "the final stage should COPY one file, the binary; it copies {source}"
    );

    let binary = std::fs::read(&args.binary)
        .with_context(|| format!("reading {}", args.binary.display()))?;
    let (architecture, is_static) =
        elf_facts(&binary).with_context(|| args.binary.display().to_string())?;
    ensure!(
        is_static || args.allow_dynamic,
        "{} is dynamically linked: the image has no C library, so it would not start. Build it \
         statically (`make image` does) or pass --allow-dynamic to check the assembly only",
        args.binary.display()
    );
    let version = binary_version(&args.binary)?;
    let ca_bundle = std::fs::read(&args.ca_bundle)
        .with_context(|| format!("reading the CA bundle {}", args.ca_bundle.display()))?;
    ensure!(
        String::from_utf8_lossy(&ca_bundle).contains("-----BEGIN CERTIFICATE-----"),
        "{} holds no PEM certificates",
        args.ca_bundle.display()
    );

    let (reference, plain_http) = match args.reference {
        Some(reference) => (reference, args.plain_http),
        None => (
            format!("{}/windlass/windlass:{version}", local_registry()?),
            true,
        ),
    };
    let binary_size = binary.len();
    let entries = [
        Entry::File {
            path: destination.clone(),
            mode: 0o755,
            bytes: binary,
        },
        Entry::File {
            path: CA_BUNDLE_PATH.into(),
            mode: 0o644,
            bytes: ca_bundle,
        },
        Entry::Dir {
            path: "/tmp".into(),
            mode: 0o1777,
        },
    ];
    let run = RunConfig {
        entrypoint: stage.entrypoint,
        cmd: stage.cmd,
        user: stage.user,
        env: base.env.iter().map(|e| e.to_string()).collect(),
        labels: stage.labels,
        os: "linux".into(),
        architecture: architecture.into(),
        created_by: format!("windlass-image {version} ({} stand-in)", stage.base),
    };
    let options = RegistryOptions {
        plain_http,
        ..Default::default()
    };
    let pushed = push_runnable(&entries, &run, &reference, &options).await?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "reference": pushed.reference,
                "digest": pushed.digest,
                "configDigest": pushed.config_digest,
                "layerDigest": pushed.layer_digest,
                "layerDiffId": pushed.layer_diff_id,
                "layerSize": pushed.layer_size,
                "totalSize": pushed.total_size,
                "binarySize": binary_size,
                "static": is_static,
            })
        );
    } else {
        let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
        println!("pushed {}@{}", pushed.reference, pushed.digest);
        println!(
            "  binary {:.1} MiB ({}), layer {:.1} MiB compressed, image {:.1} MiB in the registry",
            mib(binary_size as u64),
            if is_static {
                "static"
            } else {
                "dynamically linked"
            },
            mib(pushed.layer_size),
            mib(pushed.total_size),
        );
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("windlass-image: {error:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_windlass_containerfile_describes_the_manager_image() {
        let stage = final_stage(CONTAINERFILE).unwrap();
        assert_eq!(stage.base, "gcr.io/distroless/static-debian12:nonroot");
        assert!(known_base(&stage.base).is_ok());
        assert_eq!(stage.entrypoint, ["/windlass"]);
        assert_eq!(stage.cmd, ["manager"]);
        assert_eq!(stage.user, "65532:65532");
        assert_eq!(
            stage.copies,
            [("/windlass".to_string(), "/windlass".to_string())]
        );
        assert_eq!(stage.labels["org.opencontainers.image.title"], "windlass");
        assert_eq!(
            stage.labels["org.opencontainers.image.description"],
            "Operator lifecycle manager for Kubernetes"
        );
        assert_eq!(
            stage.labels["org.opencontainers.image.licenses"],
            "Apache-2.0"
        );
        assert_eq!(stage.labels.len(), 4);
    }

    #[test]
    fn build_stages_are_skipped_and_the_final_stage_is_strict() {
        let text = "ARG X=1\nFROM a AS build\nRUN make \\\n  all\n# comment\nFROM b\n\
                    LABEL k=v q=\"a \\\"b\\\" c\"\nUSER 1:1\nCOPY --from=build /x /y\n";
        let stage = final_stage(text).unwrap();
        assert_eq!(stage.base, "b");
        assert_eq!(stage.labels["k"], "v");
        assert_eq!(stage.labels["q"], "a \"b\" c");
        assert_eq!(stage.user, "1:1");
        assert_eq!(stage.copies, [("/x".to_string(), "/y".to_string())]);

        let error = final_stage(&format!("{text}ENV A=b\n")).unwrap_err();
        assert!(format!("{error:#}").contains("ENV A=b"), "{error:#}");
        let error = final_stage(&format!("{text}CMD manager\n")).unwrap_err();
        assert!(format!("{error:#}").contains("JSON"), "{error:#}");
        assert!(final_stage(&format!("{text}LABEL legacy value\n")).is_err());
        assert!(known_base("docker.io/library/alpine:3").is_err());
    }

    #[test]
    fn elf_headers_tell_static_from_dynamic() {
        // This test binary asks for the dynamic loader.
        let this = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let (architecture, is_static) = elf_facts(&this).unwrap();
        assert_eq!(
            architecture,
            std::env::consts::ARCH
                .replace("x86_64", "amd64")
                .replace("aarch64", "arm64")
        );
        assert!(!is_static);

        // A minimal x86-64 header with one PT_LOAD and no PT_INTERP.
        let mut elf = vec![0u8; 64 + 56];
        elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
        elf[0x12] = 0x3e;
        elf[0x20] = 64;
        elf[0x36] = 56;
        elf[0x38] = 1;
        elf[64] = 1; // PT_LOAD
        assert_eq!(elf_facts(&elf).unwrap(), ("amd64", true));
        elf[64] = 3; // PT_INTERP
        assert_eq!(elf_facts(&elf).unwrap(), ("amd64", false));
        elf[0x12] = 0x28; // 32-bit ARM
        assert!(elf_facts(&elf).is_err());
        assert!(elf_facts(b"#!/bin/sh\n").is_err());
    }
}
