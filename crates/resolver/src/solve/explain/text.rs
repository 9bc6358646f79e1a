//! The explanation as text for people: one line per requirement, candidates indented below.

use std::fmt::{self, Write as _};

use super::{Because, BundleRef, Cause, Problem, Requirement, Unsatisfiable};

impl fmt::Display for Unsatisfiable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.message)?;
        for line in &self.context {
            writeln!(f, "  {line}")?;
        }
        let mut text = String::new();
        render(&self.cause, 1, &mut text);
        f.write_str(text.trim_end())
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Requirement::Subscription {
                package,
                channel,
                range,
            } => {
                write!(f, "a bundle of {package}")?;
                match channel {
                    Some(c) => write!(f, " from channel {c}")?,
                    None => write!(f, " from its default channel")?,
                }
                if let Some(r) = range {
                    write!(f, " in range {r}")?;
                }
                Ok(())
            }
            Requirement::Package { package, range } => write!(f, "package {package} {range}"),
            Requirement::Api {
                group,
                version,
                kind,
            } => write!(f, "API {group}/{version} {kind}"),
            Requirement::KeepInstalled { package, version } => {
                write!(f, "{package} to stay at {version}")
            }
            Requirement::Constraint {
                message: Some(message),
                constraint,
            } => write!(f, "{message} (olm.constraint {constraint})"),
            Requirement::Constraint {
                message: None,
                constraint,
            } => write!(f, "olm.constraint {constraint}"),
        }
    }
}

fn list(refs: &[BundleRef]) -> String {
    if refs.is_empty() {
        return "nothing".into();
    }
    refs.iter()
        .map(|r| r.version.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::NoSuchPackage { package } => write!(f, "the catalog has no package {package}"),
            Problem::NoSuchChannel {
                package,
                channel,
                channels,
            } => write!(
                f,
                "package {package} has no channel {channel} (channels: {})",
                channels.join(", ")
            ),
            Problem::NoDefaultChannel { package, channels } => write!(
                f,
                "package {package} declares no default channel; pick one of {}",
                channels.join(", ")
            ),
            Problem::NothingInChannel {
                package,
                channel,
                range,
                installed,
                policy,
                available,
                in_range,
            } => {
                write!(
                    f,
                    "channel {channel} of {package} offers {}",
                    list(available)
                )?;
                match (range, installed) {
                    (Some(r), _) if *in_range == 0 => write!(f, "; none in range {r}"),
                    (_, Some(v)) => write!(
                        f,
                        "; from installed {v} the {policy} policy reaches none of those{} along \
                         the channel's edges (the any policy allows any version)",
                        if range.is_some() { " in range" } else { "" }
                    ),
                    _ => Ok(()),
                }
            }
            Problem::BadRange {
                package,
                range,
                error,
            } => {
                write!(
                    f,
                    "the range {range:?} for {package} cannot be read: {error}"
                )
            }
            Problem::NothingInRange {
                package,
                range,
                available,
            } => write!(
                f,
                "the catalog has {package} {}, none in {range}",
                list(available)
            ),
            Problem::NoOwner { api } => write!(f, "no bundle in the catalog owns {api}"),
            Problem::BadConstraint { error } => {
                write!(
                    f,
                    "the constraint cannot be used ({error}), so this bundle is never chosen"
                )
            }
            Problem::NoBundleSatisfies {
                considered,
                more_considered,
            } => {
                write!(f, "no bundle in the catalog satisfies it")?;
                if !considered.is_empty() {
                    let names: Vec<String> = considered.iter().map(|c| c.to_string()).collect();
                    write!(f, "; candidates considered: {}", names.join(", "))?;
                    if *more_considered > 0 {
                        write!(f, " and {more_considered} more")?;
                    }
                }
                Ok(())
            }
            Problem::PackageHeld { holder, needed_by } => {
                write!(
                    f,
                    "{} is already at {} for {needed_by}",
                    holder.package, holder.version
                )
            }
        }
    }
}

/// "needs <requirement>"; a constraint's own message reads "needs: <message> (olm.constraint ...)".
fn needs(requirement: &Requirement) -> String {
    match requirement {
        Requirement::Constraint {
            message: Some(_), ..
        } => format!("needs: {requirement}"),
        _ => format!("needs {requirement}"),
    }
}

fn render(cause: &Cause, level: usize, out: &mut String) {
    let pad = "  ".repeat(level);
    let _ = write!(
        out,
        "{pad}{} {}",
        cause.needed_by,
        needs(&cause.requirement)
    );
    render_body(cause, level, out);
}

/// What follows "X needs Y": the problem, or one line per rejected candidate.
fn render_body(cause: &Cause, level: usize, out: &mut String) {
    let pad = "  ".repeat(level);
    if let Some(p) = &cause.problem {
        let _ = writeln!(out, ": {p}");
        return;
    }
    let _ = writeln!(out, "; every candidate is ruled out:");
    for r in &cause.rejected {
        let _ = write!(out, "{pad}- {}", r.bundle);
        match &r.because {
            Because::PackageHeld { holder, needed_by } => {
                let _ = writeln!(
                    out,
                    ": {} is already at {} for {needed_by}",
                    holder.package, holder.version
                );
            }
            Because::ApiOwned { api, owner } => {
                let _ = writeln!(out, ": it owns {api}, which {owner} already owns");
            }
            Because::ConflictsWithRest => {
                let _ = writeln!(
                    out,
                    ": its requirements conflict with the rest of the installation"
                );
            }
            Because::NotExplored => {
                let _ = writeln!(
                    out,
                    ": its requirements cannot be met (not followed further)"
                );
            }
            Because::Unmet { cause } => {
                let _ = write!(out, " {}", needs(&cause.requirement));
                render_body(cause, level + 1, out);
            }
        }
    }
    if cause.more_rejected > 0 {
        let _ = writeln!(
            out,
            "{pad}- and {} more candidates, ruled out as well",
            cause.more_rejected
        );
    }
}
