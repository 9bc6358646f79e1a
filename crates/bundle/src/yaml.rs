//! YAML reading with the policies windlass applies to real bundles.
//!
//! Real bundles contain duplicate mapping keys. We read strictly first; when the only problem is
//! a duplicate key we read again with "last key wins" (what most YAML readers do) and record the
//! fact so lint can report it. Nothing is dropped.

use serde_saphyr::options::DuplicateKeyPolicy;

/// Why a YAML (or JSON) file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {message}", location(*.line, *.column))]
pub struct YamlError {
    pub file: String,
    /// 1-based line of the problem, when the parser knows it.
    pub line: Option<u64>,
    pub column: Option<u64>,
    pub message: String,
}

fn location(line: Option<u64>, column: Option<u64>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

/// The documents of one file, in order, with what the reader had to tolerate.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Documents {
    pub documents: Vec<serde_json::Value>,
    /// Set when a mapping repeated a key; the last value was kept.
    pub duplicate_key: Option<YamlError>,
}

fn options(duplicates: DuplicateKeyPolicy) -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.duplicate_keys = duplicates;
    // Snippets cost time on every error and we name file and line ourselves.
    options.with_snippet = false;
    // YAML 1.2 booleans only: `y`, `on`, `no` stay strings (an env value `on` must not turn
    // into `true` on its way to the cluster).
    options.strict_booleans = true;
    options
}

fn to_error(file: &str, error: &serde_saphyr::Error) -> YamlError {
    let location = error.location();
    YamlError {
        file: file.to_string(),
        line: location.map(|l| l.line()).filter(|l| *l > 0),
        column: location.map(|l| l.column()).filter(|c| *c > 0),
        message: first_line(&error.to_string()),
    }
}

fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or_default().trim();
    // The parser's advice names its own API; a bundle author needs only the fact.
    match line.split_once(", set DuplicateKeyPolicy") {
        Some((fact, _)) => fact.to_string(),
        None => line.to_string(),
    }
}

/// Parses every document of a YAML stream (JSON is YAML too). Empty documents are skipped.
pub fn parse_documents(file: &str, text: &str) -> Result<Documents, YamlError> {
    match serde_saphyr::from_multiple_with_options::<serde_json::Value>(
        text,
        options(DuplicateKeyPolicy::Error),
    ) {
        Ok(documents) => Ok(Documents {
            documents: strip_nulls(documents),
            duplicate_key: None,
        }),
        Err(strict)
            if matches!(
                strict.without_snippet(),
                serde_saphyr::Error::DuplicateMappingKey { .. }
            ) =>
        {
            let documents = serde_saphyr::from_multiple_with_options::<serde_json::Value>(
                text,
                options(DuplicateKeyPolicy::LastWins),
            )
            .map_err(|e| to_error(file, &e))?;
            Ok(Documents {
                documents: strip_nulls(documents),
                duplicate_key: Some(to_error(file, &strict)),
            })
        }
        Err(other) => Err(to_error(file, &other)),
    }
}

fn strip_nulls(documents: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
    documents.into_iter().filter(|d| !d.is_null()).collect()
}

/// Parses exactly one document (a metadata file); an empty file reads as `null`.
pub fn parse_one(file: &str, text: &str) -> Result<Documents, YamlError> {
    let mut parsed = parse_documents(file, text)?;
    if parsed.documents.len() > 1 {
        return Err(YamlError {
            file: file.to_string(),
            line: None,
            column: None,
            message: format!(
                "expected one YAML document, found {}",
                parsed.documents.len()
            ),
        });
    }
    if parsed.documents.is_empty() {
        parsed.documents.push(serde_json::Value::Null);
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_document_streams_keep_order_and_skip_empty_documents() {
        let parsed = parse_documents("a.yaml", "a: 1\n---\n---\nb: [x, y]\n").unwrap();
        assert_eq!(
            parsed.documents,
            vec![
                serde_json::json!({"a": 1}),
                serde_json::json!({"b": ["x", "y"]})
            ]
        );
        assert!(parsed.duplicate_key.is_none());
    }

    #[test]
    fn duplicate_keys_keep_the_last_value_and_are_reported() {
        let parsed = parse_documents("dup.yaml", "a: 1\nb: 2\na: 3\n").unwrap();
        assert_eq!(parsed.documents, vec![serde_json::json!({"a": 3, "b": 2})]);
        let dup = parsed.duplicate_key.expect("duplicate reported");
        assert_eq!(dup.file, "dup.yaml");
        assert_eq!(dup.line, Some(3));
    }

    #[test]
    fn malformed_yaml_names_file_and_line() {
        let error = parse_documents("bad.yaml", "a: 1\nb: [1, 2\nc: 3\n").unwrap_err();
        assert_eq!(error.file, "bad.yaml");
        assert!(error.line.is_some_and(|l| l >= 2), "{error:?}");
        assert!(error.to_string().starts_with("bad.yaml:"), "{error}");
    }

    #[test]
    fn anchors_and_aliases_expand() {
        let parsed = parse_documents("a.yaml", "x: &v {k: 1}\ny: *v\n").unwrap();
        assert_eq!(parsed.documents[0]["y"], serde_json::json!({"k": 1}));
    }

    #[test]
    fn one_document_files_refuse_streams() {
        assert!(parse_one("m.yaml", "a: 1\n---\nb: 2\n").is_err());
        assert_eq!(
            parse_one("m.yaml", "").unwrap().documents,
            vec![serde_json::Value::Null]
        );
    }
}
