//! Arbitrary text through the YAML reader into the bundle model: parsing, the typed CSV,
//! metadata files and whole-bundle loading must return values or errors, never panic, and a CSV
//! that reads must read the same from its own serialisation.
#![no_main]

use libfuzzer_sys::fuzz_target;
use windlass_bundle::metadata::{
    Annotations, dependencies_from_document, properties_from_document,
};
use windlass_bundle::{ClusterServiceVersion, FileTree, from_files};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(parsed) = windlass_bundle::yaml::parse_documents("fuzz.yaml", text) {
        for document in &parsed.documents {
            if let Ok(csv) = ClusterServiceVersion::from_value(document) {
                let _ = csv.version();
                let _ = csv.deployments().iter().map(|d| d.images()).count();
                let again = serde_json::to_value(&csv).expect("a model serialises");
                let back =
                    ClusterServiceVersion::from_value(&again).expect("serialised CSV reads back");
                assert_eq!(back, csv);
            }
            let _ = Annotations::from_document(document);
            let _ = dependencies_from_document(document);
            let _ = properties_from_document(document);
        }
    }
    let tree = FileTree {
        files: [
            ("manifests/csv.yaml".to_string(), data.to_vec()),
            ("metadata/annotations.yaml".to_string(), data.to_vec()),
        ]
        .into(),
    };
    let _ = from_files(&tree, "fuzz");
});
