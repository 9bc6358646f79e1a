//! Who publishes a package, as a hub shows it: a name (plain, or per language), a provider type
//! and a link.
//!
//! A CSV says it in annotations (`provider`, `provider-type`, `provider-url`) and falls back to
//! `spec.provider` (name and url). File-based catalogs carry no CSV: windlass writes the
//! package's provider as a property of its `olm.package` blob ([`PROPERTY`]), and a catalog
//! rendered by `opm` still has it in the head bundle's `olm.csv.metadata` property.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use windlass_bundle::ClusterServiceVersion;

use crate::model::{Property, RawJson};

/// The property type of the provider on an `olm.package` blob.
pub const PROPERTY: &str = "windlass.provider";
/// The bundle property `opm render` writes with the CSV's metadata (annotations, provider).
pub const CSV_METADATA_PROPERTY: &str = "olm.csv.metadata";

/// The CSV annotations the provider is read from.
pub mod annotations {
    /// A plain name, or a JSON object of names by language (`{"en": "Acme", "zh": "..."}`).
    pub const PROVIDER: &str = "provider";
    /// `custom`, `community`, `certified` or `platform`.
    pub const PROVIDER_TYPE: &str = "provider-type";
    pub const PROVIDER_URL: &str = "provider-url";
}

/// How a hub classes a provider. Anything else a CSV says is shown as `custom`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ProviderType {
    #[default]
    Custom,
    Community,
    Certified,
    Platform,
}

impl ProviderType {
    pub const ALL: [ProviderType; 4] = [
        ProviderType::Custom,
        ProviderType::Community,
        ProviderType::Certified,
        ProviderType::Platform,
    ];

    /// The type `raw` names (case and surrounding blanks ignored); `None` when it names none.
    pub fn parse(raw: &str) -> Option<ProviderType> {
        let raw = raw.trim();
        ProviderType::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(raw))
    }

    /// The type shown for an annotation value: unknown, empty or missing is `custom`.
    pub fn shown(raw: Option<&str>) -> ProviderType {
        raw.and_then(ProviderType::parse).unwrap_or_default()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ProviderType::Custom => "custom",
            ProviderType::Community => "community",
            ProviderType::Certified => "certified",
            ProviderType::Platform => "platform",
        }
    }
}

impl std::fmt::Display for ProviderType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A package's provider, as shown.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Provider {
    /// The name to show: the English name of an i18n name (else its first), or the plain name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The names by language, when the annotation gave an i18n JSON object.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub names: BTreeMap<String, String>,
    #[serde(rename = "type", default)]
    pub type_: ProviderType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// A name as written in the `provider` annotation: plain text, or a JSON object of names by
/// language. Returns the name to show and the names by language (empty for plain text).
pub fn parse_name(raw: &str) -> (Option<String>, BTreeMap<String, String>) {
    let trimmed = raw.trim();
    if trimmed.starts_with('{')
        && let Ok(Value::Object(map)) = serde_json::from_str::<Value>(trimmed)
    {
        let names: Vec<(String, String)> = map
            .iter()
            .filter_map(|(language, name)| {
                let name = name.as_str()?.trim();
                (!name.is_empty()).then(|| (language.clone(), name.to_string()))
            })
            .collect();
        // Not an i18n name (no string values): shown as written.
        if names.len() == map.len() && !names.is_empty() {
            let shown = names
                .iter()
                .find(|(language, _)| language == "en")
                .or_else(|| names.first())
                .map(|(_, name)| name.clone());
            return (shown, names.into_iter().collect());
        }
    }
    let plain = (!trimmed.is_empty()).then(|| trimmed.to_string());
    (plain, BTreeMap::new())
}

fn non_empty(value: Option<&str>) -> Option<String> {
    value
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(String::from)
}

impl Provider {
    /// From CSV annotations, with `spec.provider`'s name and url as the fallback.
    pub fn from_parts(
        annotation: impl Fn(&str) -> Option<String>,
        spec_name: Option<&str>,
        spec_url: Option<&str>,
    ) -> Provider {
        let (name, names) = match annotation(annotations::PROVIDER) {
            Some(raw) if !raw.trim().is_empty() => parse_name(&raw),
            _ => (non_empty(spec_name), BTreeMap::new()),
        };
        Provider {
            name,
            names,
            type_: ProviderType::shown(annotation(annotations::PROVIDER_TYPE).as_deref()),
            url: non_empty(annotation(annotations::PROVIDER_URL).as_deref())
                .or_else(|| non_empty(spec_url)),
        }
    }

    /// The provider a CSV declares.
    pub fn from_csv(csv: &ClusterServiceVersion) -> Provider {
        let spec = csv.spec.provider.as_ref();
        Provider::from_parts(
            |key| csv.metadata.annotations.get(key).cloned(),
            spec.and_then(|p| p.name.as_deref()),
            spec.and_then(|p| p.url.as_deref()),
        )
    }

    /// The provider in an `olm.csv.metadata` property value (`annotations` and `provider`, as
    /// `opm render` writes them); `None` when it names none.
    pub fn from_csv_metadata(value: &Value) -> Option<Provider> {
        let annotation = |key: &str| value["annotations"][key].as_str().map(String::from);
        let provider = Provider::from_parts(
            annotation,
            value["provider"]["name"].as_str(),
            value["provider"]["url"].as_str(),
        );
        (!provider.is_empty()).then_some(provider)
    }

    /// Whether nothing is known: no name, no url, and the default type.
    pub fn is_empty(&self) -> bool {
        self.name.is_none() && self.url.is_none() && self.type_ == ProviderType::default()
    }

    /// As the property of an `olm.package` blob.
    pub fn to_property(&self) -> Property {
        Property::Other {
            type_: PROPERTY.into(),
            value: RawJson::from_value(&serde_json::to_value(self).unwrap_or_default()),
        }
    }

    /// The provider among a package blob's properties, if one is there and readable.
    pub fn from_properties(properties: &[Property]) -> Option<Provider> {
        properties.iter().find_map(|p| match p {
            Property::Other { type_, value } if type_ == PROPERTY => {
                serde_json::from_value::<Provider>(value.to_value())
                    .ok()
                    .filter(|p| !p.is_empty())
            }
            _ => None,
        })
    }

    /// The provider a bundle of a file-based catalog carries in `olm.csv.metadata`.
    pub fn from_bundle(bundle: &crate::model::Bundle) -> Option<Provider> {
        bundle.properties.iter().find_map(|p| match p {
            Property::Other { type_, value } if type_ == CSV_METADATA_PROPERTY => {
                Provider::from_csv_metadata(&value.to_value())
            }
            _ => None,
        })
    }

    /// `Acme (community)`, for one-line summaries.
    pub fn summary(&self) -> String {
        format!(
            "{} ({})",
            self.name.as_deref().unwrap_or("unknown provider"),
            self.type_
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotations(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |key| map.get(key).cloned()
    }

    #[test]
    fn provider_types_parse_loosely_and_anything_else_is_custom() {
        let cases = [
            (Some("community"), ProviderType::Community),
            (Some(" Certified "), ProviderType::Certified),
            (Some("PLATFORM"), ProviderType::Platform),
            (Some("custom"), ProviderType::Custom),
            (Some("gold"), ProviderType::Custom),
            (Some(""), ProviderType::Custom),
            (None, ProviderType::Custom),
        ];
        for (raw, shown) in cases {
            assert_eq!(ProviderType::shown(raw), shown, "{raw:?}");
        }
        assert_eq!(ProviderType::parse("gold"), None);
        assert_eq!(
            ProviderType::parse("community").unwrap().as_str(),
            "community"
        );
    }

    /// The annotation, the name shown, and every name by language.
    type NameCase<'a> = (&'a str, Option<&'a str>, &'a [(&'a str, &'a str)]);

    #[test]
    fn names_are_plain_or_i18n_json() {
        let cases: [NameCase; 6] = [
            ("Acme", Some("Acme"), &[]),
            ("  Acme Corp ", Some("Acme Corp"), &[]),
            (
                r#"{"zh":"平台","en":"platform"}"#,
                Some("platform"),
                &[("en", "platform"), ("zh", "平台")],
            ),
            // No English name: the first as written.
            (
                r#"{"zh":"平台","ja":"プラットフォーム"}"#,
                Some("平台"),
                &[("ja", "プラットフォーム"), ("zh", "平台")],
            ),
            // JSON that is not a map of names is a plain name.
            (r#"{"en": 3}"#, Some(r#"{"en": 3}"#), &[]),
            ("", None, &[]),
        ];
        for (raw, shown, names) in cases {
            let (name, by_language) = parse_name(raw);
            assert_eq!(name.as_deref(), shown, "{raw}");
            let expected: BTreeMap<String, String> = names
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(by_language, expected, "{raw}");
        }
    }

    #[test]
    fn annotations_win_over_spec_provider_which_is_the_fallback() {
        let both = Provider::from_parts(
            annotations(&[
                ("provider", r#"{"en":"Acme","zh":"阿克米"}"#),
                ("provider-type", "certified"),
                ("provider-url", "https://acme.example"),
            ]),
            Some("Acme Inc."),
            Some("https://spec.example"),
        );
        assert_eq!(both.name.as_deref(), Some("Acme"));
        assert_eq!(both.names.len(), 2);
        assert_eq!(both.type_, ProviderType::Certified);
        assert_eq!(both.url.as_deref(), Some("https://acme.example"));

        let spec_only = Provider::from_parts(
            annotations(&[("provider-type", "partner")]),
            Some("Acme Inc."),
            Some("https://spec.example"),
        );
        assert_eq!(
            spec_only,
            Provider {
                name: Some("Acme Inc.".into()),
                names: BTreeMap::new(),
                type_: ProviderType::Custom,
                url: Some("https://spec.example".into()),
            }
        );
        assert!(Provider::from_parts(annotations(&[]), None, Some(" ")).is_empty());
    }

    #[test]
    fn opm_csv_metadata_and_the_package_property_carry_the_provider() {
        let metadata = serde_json::json!({
            "annotations": {"provider": "Red Hat", "provider-type": "certified"},
            "provider": {"name": "Red Hat, Inc.", "url": "https://redhat.com"},
            "displayName": "x",
        });
        let provider = Provider::from_csv_metadata(&metadata).unwrap();
        assert_eq!(provider.name.as_deref(), Some("Red Hat"));
        assert_eq!(provider.type_, ProviderType::Certified);
        assert_eq!(provider.url.as_deref(), Some("https://redhat.com"));
        assert_eq!(
            Provider::from_csv_metadata(&serde_json::json!({"displayName": "x"})),
            None
        );

        let property = provider.to_property();
        let json = serde_json::to_value(&property).unwrap();
        assert_eq!(json["type"], PROPERTY);
        assert_eq!(json["value"]["type"], "certified");
        assert_eq!(Provider::from_properties(&[property]), Some(provider));
    }
}
