//! Why a payload or an update graph was refused. Every variant names the file (payload paths are
//! relative to the payload root, `release-manifests/0000_10_dns_deployment.yaml`), the object or
//! the graph element concerned.

use windlass_bundle::yaml::YamlError;

/// One problem in a payload. [`InvalidPayload`] carries all of them, so one read shows them all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    #[error("{source_name}: no release-manifests/ directory, so this is not a release payload")]
    NotAPayload { source_name: String },
    #[error("{file}: missing; a payload needs {what}")]
    MissingFile { file: String, what: &'static str },
    #[error("{file}: not UTF-8 text")]
    NotText { file: String },
    #[error("{file}: {message}")]
    Metadata { file: String, message: String },
    #[error("{file}: {message}")]
    ImageReferences { file: String, message: String },
    #[error(
        "{file}: tag {tag}: {image} is not pinned by digest (name@sha256:<64 hex digits>); a tag can move and cannot be verified"
    )]
    ReferenceNotByDigest {
        file: String,
        tag: String,
        image: String,
    },
    #[error("{file}: {message}")]
    Yaml { file: String, message: String },
    #[error("{file}: document {document}: {message}")]
    Object {
        file: String,
        document: usize,
        message: String,
    },
    #[error("{file}: {object}: annotation {key}={value:?}: {message}")]
    Annotation {
        file: String,
        object: String,
        key: String,
        value: String,
        message: String,
    },
    #[error("{file}: {object}: container {container} runs {image}, which is not pinned by digest")]
    ContainerImageNotByDigest {
        file: String,
        object: String,
        container: String,
        image: String,
    },
    #[error(
        "{file}: {object}: container {container} runs {image}, which release-manifests/image-references does not list"
    )]
    ContainerImageNotReferenced {
        file: String,
        object: String,
        container: String,
        image: String,
    },
    #[error("{file}: {object} is defined twice (also in {other})")]
    DuplicateObject {
        file: String,
        object: String,
        other: String,
    },
    #[error(
        "{file}: run level {level} has {width} digits but {other} has run level {other_level}; file-name order would not be numeric order"
    )]
    MixedLevelWidths {
        file: String,
        level: String,
        width: usize,
        other: String,
        other_level: String,
    },
    #[error(
        "{file}: template {expression} is not one windlass renders (only {{{{.ReleaseImage}}}} and {{{{.ClusterProfile}}}})"
    )]
    Template { file: String, expression: String },
}

impl PayloadError {
    /// The payload file the problem is in.
    pub fn file(&self) -> &str {
        match self {
            PayloadError::NotAPayload { source_name } => source_name,
            PayloadError::MissingFile { file, .. }
            | PayloadError::NotText { file }
            | PayloadError::Metadata { file, .. }
            | PayloadError::ImageReferences { file, .. }
            | PayloadError::ReferenceNotByDigest { file, .. }
            | PayloadError::Yaml { file, .. }
            | PayloadError::Object { file, .. }
            | PayloadError::Annotation { file, .. }
            | PayloadError::ContainerImageNotByDigest { file, .. }
            | PayloadError::ContainerImageNotReferenced { file, .. }
            | PayloadError::DuplicateObject { file, .. }
            | PayloadError::MixedLevelWidths { file, .. }
            | PayloadError::Template { file, .. } => file,
        }
    }
}

impl From<YamlError> for PayloadError {
    fn from(error: YamlError) -> Self {
        let file = error.file.clone();
        PayloadError::Yaml {
            message: error
                .to_string()
                .trim_start_matches(&file)
                .trim_start_matches(':')
                .trim()
                .to_string(),
            file,
        }
    }
}

/// A payload that was refused, with every problem found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name} is not a valid release payload:{}", list(errors))]
pub struct InvalidPayload {
    pub source_name: String,
    pub errors: Vec<PayloadError>,
}

fn list(errors: &[PayloadError]) -> String {
    errors.iter().map(|e| format!("\n  {e}")).collect()
}

/// Why an update graph was refused or a question about it has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    #[error("{source_name}: not a Cincinnati graph: {message}")]
    Parse {
        source_name: String,
        message: String,
    },
    #[error("{source_name}: node {index}: {message}")]
    Node {
        source_name: String,
        index: usize,
        message: String,
    },
    #[error(
        "{source_name}: edge {index} [{from}, {to}] names node {missing}, but the graph has {count} nodes (0 to {last})",
        last = count.saturating_sub(1)
    )]
    EdgeOutOfRange {
        source_name: String,
        index: usize,
        from: usize,
        to: usize,
        missing: usize,
        count: usize,
    },
    #[error("{source_name}: nodes {first} and {second} both have version {version}")]
    DuplicateVersion {
        source_name: String,
        version: String,
        first: usize,
        second: usize,
    },
    #[error(
        "{source_name}: conditional edge {from} -> {to} names version {missing}, which no node has"
    )]
    UnknownConditionalVersion {
        source_name: String,
        from: String,
        to: String,
        missing: String,
    },
    #[error("{source_name}: the update graph has a cycle: {}", path.join(" -> "))]
    Cycle {
        source_name: String,
        path: Vec<String>,
    },
    #[error("{source_name}: {first} and {second} both are version {version}")]
    DuplicatePayload {
        source_name: String,
        version: String,
        first: String,
        second: String,
    },
    #[error("channel {channel:?} is not a channel name (lower-case letters, digits, `-` and `.`)")]
    BadChannel { channel: String },
    #[error("version {version} is not in the update graph{}", channel.as_ref().map(|c| format!(" of channel {c}")).unwrap_or_default())]
    VersionNotFound {
        version: String,
        channel: Option<String>,
    },
}
