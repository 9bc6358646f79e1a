//! `-o table|wide|json|yaml`, as kubectl reads it, for the commands that list objects: one
//! flag, one column layout and one List shape, so every listing reads and scripts the same.

use serde::Serialize;
use serde_json::{Value, json};

/// How a listing is printed.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// Columns, as `kubectl get` prints them.
    #[default]
    Table,
    /// The columns and more of them.
    Wide,
    /// The objects, as JSON.
    Json,
    /// The objects, as YAML.
    Yaml,
}

/// The `-o` flag, flattened into a command's arguments.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct OutputArgs {
    /// `table`, `wide` (more columns), `json` or `yaml` (the objects themselves).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

impl Format {
    pub fn wide(self) -> bool {
        self == Format::Wide
    }

    /// The objects `data` builds, as JSON or YAML text; `None` for the column formats, which
    /// each command draws itself. `data` runs only when it is printed.
    pub fn data(
        self,
        data: impl FnOnce() -> anyhow::Result<Value>,
    ) -> anyhow::Result<Option<String>> {
        Ok(match self {
            Format::Table | Format::Wide => None,
            Format::Json => Some(format!("{}\n", serde_json::to_string_pretty(&data()?)?)),
            Format::Yaml => Some(serde_saphyr::to_string(&data()?)?),
        })
    }
}

/// One object as `kubectl get -o json` shows it: without the server's `managedFields`.
pub fn object(item: &impl Serialize) -> anyhow::Result<Value> {
    let mut value = serde_json::to_value(item)?;
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    Ok(value)
}

/// Objects as a Kubernetes `List`, which `kubectl apply -f` and `jq '.items[]'` read.
pub fn list<T: Serialize>(items: &[T]) -> anyhow::Result<Value> {
    let items = items
        .iter()
        .map(object)
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(json!({ "apiVersion": "v1", "kind": "List", "items": items }))
}

/// Rows as kubectl's columns: the first row is the header, columns are padded by characters
/// (not bytes, so names in any script line up) and three spaces apart, the last unpadded.
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if c + 1 < row.len() {
                let pad = widths[c] - cell.chars().count();
                line.push_str(&" ".repeat(pad + 3));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A cell of an optional field: empty or missing shows as kubectl shows it, `-`.
pub fn cell(value: Option<impl Into<String>>) -> String {
    value
        .map(Into::into)
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "-".into())
}

/// The header row of a table from its column names.
pub fn header(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        output: OutputArgs,
    }

    #[test]
    fn the_flag_reads_as_kubectls_and_defaults_to_a_table() {
        let parse = |args: &[&str]| Cli::try_parse_from(args).map(|c| c.output.format);
        assert_eq!(parse(&["x"]).unwrap(), Format::Table);
        assert_eq!(parse(&["x", "-o", "wide"]).unwrap(), Format::Wide);
        assert_eq!(parse(&["x", "--output=json"]).unwrap(), Format::Json);
        assert_eq!(parse(&["x", "-oyaml"]).unwrap(), Format::Yaml);
        assert!(parse(&["x", "-o", "name"]).is_err());
    }

    #[test]
    fn json_and_yaml_print_the_data_and_tables_do_not_build_it() {
        let value = || Ok(json!({"kind": "List", "items": [{"a": 1}]}));
        let json = Format::Json.data(value).unwrap().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&json).unwrap()["items"][0]["a"],
            1
        );
        assert!(json.ends_with("}\n"));
        let yaml = Format::Yaml.data(value).unwrap().unwrap();
        assert!(yaml.contains("kind: List"), "{yaml}");
        for format in [Format::Table, Format::Wide] {
            assert!(
                format
                    .data(|| panic!("a table must not serialize the objects"))
                    .unwrap()
                    .is_none()
            );
        }
    }

    #[test]
    fn a_list_leaves_out_managed_fields() {
        let list = list(&[json!({
            "kind": "Rollout",
            "metadata": {"name": "r", "managedFields": [{"manager": "windlass"}]},
        })])
        .unwrap();
        assert_eq!(list["kind"], "List");
        assert_eq!(list["items"][0]["metadata"], json!({"name": "r"}));
    }

    #[test]
    fn columns_line_up_by_characters_and_the_last_is_not_padded() {
        let rows = vec![
            header(&["NAME", "PROVIDER", "MESSAGE"]),
            vec!["db".into(), "平台".into(), "ok".into()],
            vec!["cache".into(), "-".into(), String::new()],
        ];
        assert_eq!(
            table(&rows),
            "NAME    PROVIDER   MESSAGE\ndb      平台         ok\ncache   -\n"
        );
        assert_eq!(cell(Some("")), "-");
        assert_eq!(cell(None::<String>), "-");
        assert_eq!(cell(Some("x")), "x");
    }
}
