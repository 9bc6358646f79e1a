//! The vocabulary of a CRD schema node (`JSONSchemaProps` in apiextensions v1).

/// Every keyword a v1 `JSONSchemaProps` knows. Anything else in a schema node is dropped by the
/// API server when it decodes the CRD (and rejected outright under strict field validation), so
/// v1beta1 never acted on it either.
pub(crate) const KNOWN: &[&str] = &[
    "id",
    "$schema",
    "$ref",
    "description",
    "type",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
    "externalDocs",
    "example",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];

/// Keywords apiextensions refuses in every schema ("... is not supported" in its OpenAPI
/// validation and in the structural-schema conversion).
pub(crate) const UNSUPPORTED: &[&str] = &[
    "id",
    "$schema",
    "$ref",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
];

/// Keywords the structural rules forbid inside `allOf`/`anyOf`/`oneOf`/`not` (the "generic"
/// part of a schema plus the Kubernetes extensions); value validations may stay there.
pub(crate) const FORBIDDEN_NESTED: &[&str] = &[
    "type",
    "description",
    "title",
    "default",
    "nullable",
    "additionalProperties",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];

/// The junctors, in the order windlass walks them (the order only affects the change list).
pub(crate) const JUNCTORS: &[&str] = &["allOf", "anyOf", "oneOf", "not"];

/// The OpenAPI v3 types apiextensions accepts.
pub(crate) const TYPES: &[&str] = &["string", "number", "integer", "boolean", "array", "object"];

/// Maps a misspelt type to the one its author evidently meant; `None` when there is no safe
/// reading (the type is then dropped and the node accepts any value, as v1beta1 let it).
pub(crate) fn normalise_type(t: &str) -> Option<&'static str> {
    let lower = t.trim().to_ascii_lowercase();
    let word = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or("");
    match word {
        "string" | "str" => Some("string"),
        "integer" | "int" | "int32" | "int64" | "long" => Some("integer"),
        "number" | "float" | "double" => Some("number"),
        "boolean" | "bool" => Some("boolean"),
        "array" | "list" => Some("array"),
        "object" | "map" => Some("object"),
        _ => None,
    }
}

/// Field names that Kubernetes itself types as IntOrString (ports, rollout budgets) or as
/// resource quantities; an untyped node with one of these names is taken to be int-or-string.
pub(crate) const INT_OR_STRING_FIELDS: &[&str] = &[
    "port",
    "targetPort",
    "servicePort",
    "maxUnavailable",
    "maxSurge",
    "minAvailable",
];

/// Maps whose values are resource quantities (`resources.limits.cpu: 500m` or `2`).
pub(crate) const QUANTITY_MAPS: &[&str] = &[
    "limits",
    "requests",
    "capacity",
    "allocatable",
    "hard",
    "overhead",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_the_misspellings_seen_in_bundles() {
        let table = [
            ("int32", Some("integer")),
            ("string, quote", Some("string")),
            ("String", Some("string")),
            ("Boolean", Some("boolean")),
            ("null", None),
            ("", None),
        ];
        for (input, want) in table {
            assert_eq!(normalise_type(input), want, "{input}");
        }
    }
}
