//! `windlass bundle manifests`: the objects windlass would apply for a bundle ahead of its
//! ClusterServiceVersion, converted for the pinned Kubernetes version.

use std::io::Write;
use std::{path::PathBuf, process::ExitCode};

use anyhow::Context;
use serde_json::{Value, json};
use windlass_bundle::legacy_apis::{ConvertedManifests, convert_manifests};

#[derive(clap::Args)]
pub struct ManifestsArgs {
    /// A bundle directory, package-manifest version folder or packed .tgz.
    pub bundle: PathBuf,
    /// Output format: a YAML stream, or a JSON `List` that `kubectl create -f` takes.
    #[arg(short = 'o', long, default_value = "yaml", value_parser = ["yaml", "json"])]
    pub output: String,
}

pub fn run(args: ManifestsArgs) -> anyhow::Result<ExitCode> {
    let bundle = windlass_bundle::load_bundle(&args.bundle)
        .with_context(|| format!("reading bundle {}", args.bundle.display()))?;
    let converted = match convert_manifests(&bundle.manifests) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!("nothing of {} would be applied", args.bundle.display());
            return Ok(ExitCode::FAILURE);
        }
    };
    let text = render(&converted, &args.output)?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    let mut stderr = std::io::stderr().lock();
    for line in change_lines(&converted) {
        writeln!(stderr, "{line}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per change, `file: crd path: what (why)`, then a count.
fn change_lines(converted: &ConvertedManifests) -> Vec<String> {
    let mut lines: Vec<String> = converted
        .changes
        .iter()
        .map(|(file, c)| format!("{file}: {c}"))
        .collect();
    let objects = converted.objects.len();
    lines.push(format!(
        "{} change(s) in {objects} object(s)",
        converted.changes.len()
    ));
    lines
}

fn render(converted: &ConvertedManifests, output: &str) -> anyhow::Result<String> {
    let objects: Vec<&Value> = converted.objects.iter().map(|m| &m.object).collect();
    if output == "json" {
        let list = json!({ "apiVersion": "v1", "kind": "List", "items": objects });
        return Ok(serde_json::to_string_pretty(&list)? + "\n");
    }
    let mut out = String::new();
    for object in objects {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(object).context("writing YAML")?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use windlass_bundle::Manifest;
    use windlass_bundle::crd::Change;

    fn sample() -> ConvertedManifests {
        ConvertedManifests {
            objects: vec![Manifest {
                file: "manifests/a.yaml".into(),
                object: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "on"}}),
            }],
            changes: vec![(
                "manifests/a.yaml".into(),
                Change {
                    crd: "ConfigMap/a".into(),
                    path: "apiVersion".into(),
                    what: "set".into(),
                    why: "because".into(),
                },
            )],
        }
    }

    #[test]
    fn yaml_output_reads_back_as_the_same_objects() {
        let text = render(&sample(), "yaml").unwrap();
        assert!(text.starts_with("---\n"));
        let back: Vec<Value> = windlass_bundle::yaml::parse_documents("out", &text)
            .unwrap()
            .documents;
        assert_eq!(back, vec![sample().objects[0].object.clone()]);
    }

    #[test]
    fn json_output_is_a_list() {
        let text = render(&sample(), "json").unwrap();
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["kind"], "List");
        assert_eq!(back["items"][0]["metadata"]["name"], "a");
    }

    #[test]
    fn changes_name_the_file() {
        assert_eq!(
            change_lines(&sample()),
            vec![
                "manifests/a.yaml: ConfigMap/a apiVersion: set (because)",
                "1 change(s) in 1 object(s)"
            ]
        );
    }
}
