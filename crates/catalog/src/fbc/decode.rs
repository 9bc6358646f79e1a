//! One file-based-catalog blob, decoded by its `schema` straight into the model: no generic
//! value tree in between, names interned as they are read, and properties the resolver does not
//! read kept as compact JSON text.
//!
//! The same code reads JSON and YAML; only raw values differ (JSON input is copied as text,
//! other formats go through a value).

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::model::{ChannelEntry, Deprecation, Gvk, Property, RelatedImage};
use crate::name::{Interner, Name, RawJson};

/// What the decoder needs besides the input.
pub(crate) struct Context<'i> {
    pub interner: &'i mut Interner,
    /// The input is JSON text, so raw values can be taken as written.
    pub json: bool,
}

impl Context<'_> {
    fn reborrow(&mut self) -> Context<'_> {
        Context {
            interner: self.interner,
            json: self.json,
        }
    }
}

/// A blob's `schema`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Schema {
    Package,
    Channel,
    Bundle,
    Deprecations,
    Other(String),
}

/// The fields of a blob of any schema; [`Fields::schema`] says which apply.
#[derive(Debug, Default)]
pub(crate) struct Fields {
    pub schema: Option<Schema>,
    pub name: Option<String>,
    pub package: Option<Name>,
    pub default_channel: Option<String>,
    pub description: Option<String>,
    pub icon: Option<RawJson>,
    pub image: Option<String>,
    pub properties: Vec<Property>,
    pub related_images: Vec<RelatedImage>,
    pub channel_entries: Vec<ChannelEntry>,
    pub deprecations: Vec<Deprecation>,
}

/// Decodes one blob.
pub(crate) struct BlobSeed<'i>(pub Context<'i>);

impl<'de> DeserializeSeed<'de> for BlobSeed<'_> {
    type Value = Fields;
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Fields, D::Error> {
        deserializer.deserialize_map(self)
    }
}

enum BlobKey {
    Schema,
    Name,
    Package,
    DefaultChannel,
    Description,
    Icon,
    Image,
    Properties,
    RelatedImages,
    Entries,
    Other,
}

impl<'de> de::Deserialize<'de> for BlobKey {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(KeyVisitor(|key: &str| match key {
            "schema" => BlobKey::Schema,
            "name" => BlobKey::Name,
            "package" => BlobKey::Package,
            "defaultChannel" => BlobKey::DefaultChannel,
            "description" => BlobKey::Description,
            "icon" => BlobKey::Icon,
            "image" => BlobKey::Image,
            "properties" => BlobKey::Properties,
            "relatedImages" => BlobKey::RelatedImages,
            "entries" => BlobKey::Entries,
            _ => BlobKey::Other,
        }))
    }
}

/// Maps a key to a field without allocating.
struct KeyVisitor<F>(F);

impl<'de, K, F: FnOnce(&str) -> K> Visitor<'de> for KeyVisitor<F> {
    type Value = K;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<K, E> {
        Ok((self.0)(v))
    }
}

impl<'de> Visitor<'de> for BlobSeed<'_> {
    type Value = Fields;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a file-based-catalog blob (a map with a `schema`)")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Fields, A::Error> {
        let mut fields = Fields::default();
        // `entries` means channel entries or deprecations; opm writes `schema` first, but a
        // blob written by hand may not.
        let mut deferred_entries: Option<serde_json::Value> = None;
        while let Some(key) = map.next_key::<BlobKey>()? {
            let ignored = matches!(fields.schema, Some(Schema::Other(_)));
            match key {
                BlobKey::Schema => {
                    let schema: String = map.next_value()?;
                    fields.schema = Some(match schema.as_str() {
                        "olm.package" => Schema::Package,
                        "olm.channel" => Schema::Channel,
                        "olm.bundle" => Schema::Bundle,
                        "olm.deprecations" => Schema::Deprecations,
                        _ => Schema::Other(schema),
                    });
                }
                BlobKey::Package => {
                    fields.package = Some(map.next_value_seed(NameSeed(&mut *self.0.interner))?)
                }
                _ if ignored => {
                    map.next_value::<IgnoredAny>()?;
                }
                BlobKey::Name => fields.name = map.next_value()?,
                BlobKey::DefaultChannel => fields.default_channel = map.next_value()?,
                BlobKey::Description => fields.description = map.next_value()?,
                BlobKey::Icon => fields.icon = map.next_value_seed(RawSeed(self.0.json))?,
                BlobKey::Image => fields.image = map.next_value()?,
                BlobKey::Properties => {
                    fields.properties = map.next_value_seed(PropertiesSeed(self.0.reborrow()))?
                }
                BlobKey::RelatedImages => {
                    fields.related_images = map.next_value::<Option<_>>()?.unwrap_or_default()
                }
                BlobKey::Entries => match fields.schema {
                    // Bundle names repeat within a channel (an entry's name is the next one's
                    // `replaces`), rarely across packages: a table per channel shares them
                    // without growing the catalog-wide one by every bundle of the catalog.
                    Some(Schema::Channel) => {
                        fields.channel_entries =
                            map.next_value_seed(EntriesSeed(&mut Interner::default()))?
                    }
                    Some(Schema::Deprecations) => {
                        fields.deprecations = map.next_value::<Option<_>>()?.unwrap_or_default()
                    }
                    _ => deferred_entries = Some(map.next_value()?),
                },
                BlobKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if let Some(entries) = deferred_entries {
            match fields.schema {
                Some(Schema::Channel) => {
                    fields.channel_entries = EntriesSeed(&mut Interner::default())
                        .deserialize(entries)
                        .map_err(de::Error::custom)?
                }
                Some(Schema::Deprecations) => {
                    fields.deprecations = serde::Deserialize::deserialize(entries)
                        .map_err(|e: serde_json::Error| de::Error::custom(e))?
                }
                _ => {}
            }
        }
        fields.properties.shrink_to_fit();
        fields.channel_entries.shrink_to_fit();
        Ok(fields)
    }
}

/// A string, interned.
struct NameSeed<'i>(&'i mut Interner);

impl<'de> DeserializeSeed<'de> for NameSeed<'_> {
    type Value = Name;
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Name, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for NameSeed<'_> {
    type Value = Name;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Name, E> {
        Ok(self.0.intern(v))
    }
}

/// An optional string, interned.
struct OptionalNameSeed<'i>(&'i mut Interner);

impl<'de> DeserializeSeed<'de> for OptionalNameSeed<'_> {
    type Value = Option<Name>;
    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Option<Name>, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for OptionalNameSeed<'_> {
    type Value = Option<Name>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or null")
    }
    fn visit_none<E: de::Error>(self) -> Result<Option<Name>, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<Name>, E> {
        Ok(None)
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<Name>, D::Error> {
        NameSeed(self.0).deserialize(d).map(Some)
    }
}

/// A list decoded element by element with a seed holding the interner; `null` reads as empty.
macro_rules! seeded_list {
    ($seed:ident, $element:ident, $out:ty, $what:literal) => {
        struct $seed<'i>(&'i mut Interner);

        impl<'de> DeserializeSeed<'de> for $seed<'_> {
            type Value = Vec<$out>;
            fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<$out>, D::Error> {
                d.deserialize_option(self)
            }
        }

        impl<'de> Visitor<'de> for $seed<'_> {
            type Value = Vec<$out>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str($what)
            }
            fn visit_none<E: de::Error>(self) -> Result<Vec<$out>, E> {
                Ok(Vec::new())
            }
            fn visit_unit<E: de::Error>(self) -> Result<Vec<$out>, E> {
                Ok(Vec::new())
            }
            fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<$out>, D::Error> {
                d.deserialize_seq(self)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<$out>, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
                while let Some(item) = seq.next_element_seed($element(&mut *self.0))? {
                    out.push(item);
                }
                Ok(out)
            }
        }
    };
}

seeded_list!(NamesSeed, NameSeed, Name, "a list of strings");
// `olm.channel` entries.
seeded_list!(
    EntriesSeed,
    EntrySeed,
    ChannelEntry,
    "a list of channel entries"
);

struct EntrySeed<'i>(&'i mut Interner);

impl<'de> DeserializeSeed<'de> for EntrySeed<'_> {
    type Value = ChannelEntry;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<ChannelEntry, D::Error> {
        d.deserialize_map(self)
    }
}

enum EntryKey {
    Name,
    Replaces,
    Skips,
    SkipRange,
    Other,
}

impl<'de> de::Deserialize<'de> for EntryKey {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(KeyVisitor(|key: &str| match key {
            "name" => EntryKey::Name,
            "replaces" => EntryKey::Replaces,
            "skips" => EntryKey::Skips,
            "skipRange" => EntryKey::SkipRange,
            _ => EntryKey::Other,
        }))
    }
}

impl<'de> Visitor<'de> for EntrySeed<'_> {
    type Value = ChannelEntry;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a channel entry")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ChannelEntry, A::Error> {
        let mut name = None;
        let mut entry = ChannelEntry::default();
        while let Some(key) = map.next_key::<EntryKey>()? {
            match key {
                EntryKey::Name => name = Some(map.next_value_seed(NameSeed(&mut *self.0))?),
                EntryKey::Replaces => {
                    entry.replaces = map.next_value_seed(OptionalNameSeed(&mut *self.0))?
                }
                EntryKey::Skips => entry.skips = map.next_value_seed(NamesSeed(&mut *self.0))?,
                EntryKey::SkipRange => {
                    entry.skip_range = map.next_value_seed(OptionalNameSeed(&mut *self.0))?
                }
                EntryKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        entry.name = name.ok_or_else(|| de::Error::missing_field("name"))?;
        entry.skips.shrink_to_fit();
        Ok(entry)
    }
}

/// A value kept as compact JSON text.
struct RawSeed(bool);

impl<'de> DeserializeSeed<'de> for RawSeed {
    type Value = Option<RawJson>;
    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Option<RawJson>, D::Error> {
        if self.0 {
            let raw = <Box<RawValue> as serde::Deserialize>::deserialize(deserializer)?;
            Ok(match raw.get() {
                "null" => None,
                text => Some(RawJson::from_json_text(text)),
            })
        } else {
            let value = <serde_json::Value as serde::Deserialize>::deserialize(deserializer)?;
            Ok((!value.is_null()).then(|| RawJson::from_value(&value)))
        }
    }
}

/// A bundle's `properties`.
struct PropertiesSeed<'i>(Context<'i>);

impl<'de> DeserializeSeed<'de> for PropertiesSeed<'_> {
    type Value = Vec<Property>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<Property>, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for PropertiesSeed<'_> {
    type Value = Vec<Property>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of properties")
    }
    fn visit_none<E: de::Error>(self) -> Result<Vec<Property>, E> {
        Ok(Vec::new())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Vec<Property>, E> {
        Ok(Vec::new())
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<Property>, D::Error> {
        d.deserialize_seq(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Vec<Property>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(p) = seq.next_element_seed(PropertySeed(self.0.reborrow()))? {
            out.push(p);
        }
        Ok(out)
    }
}

/// One `{type, value}` property, typed by `type` for the kinds windlass acts on.
pub(crate) struct PropertySeed<'i>(pub Context<'i>);

impl<'de> DeserializeSeed<'de> for PropertySeed<'_> {
    type Value = Property;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Property, D::Error> {
        d.deserialize_map(self)
    }
}

enum PropertyKey {
    Type,
    Value,
    Other,
}

impl<'de> de::Deserialize<'de> for PropertyKey {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(KeyVisitor(|key: &str| match key {
            "type" => PropertyKey::Type,
            "value" => PropertyKey::Value,
            _ => PropertyKey::Other,
        }))
    }
}

impl<'de> Visitor<'de> for PropertySeed<'_> {
    type Value = Property;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a property ({type, value})")
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Property, A::Error> {
        let mut type_: Option<PropertyType> = None;
        let mut value = None;
        let mut deferred: Option<serde_json::Value> = None;
        while let Some(key) = map.next_key::<PropertyKey>()? {
            match key {
                PropertyKey::Type => {
                    type_ = Some(map.next_value_seed(PropertyTypeSeed(&mut *self.0.interner))?)
                }
                PropertyKey::Value => match &type_ {
                    Some(t) => {
                        value = Some(map.next_value_seed(ValueSeed {
                            type_: t.clone(),
                            context: self.0.reborrow(),
                        })?)
                    }
                    None => deferred = Some(map.next_value()?),
                },
                PropertyKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let type_ = type_.ok_or_else(|| de::Error::missing_field("type"))?;
        if let Some(raw) = deferred {
            let seed = ValueSeed {
                type_,
                context: Context {
                    interner: self.0.interner,
                    json: false,
                },
            };
            return seed.deserialize(raw).map_err(de::Error::custom);
        }
        value.ok_or_else(|| de::Error::missing_field("value"))
    }
}

/// A property's `type`: the kinds windlass reads, or any other (interned, since it is kept).
#[derive(Clone)]
enum PropertyType {
    Package,
    PackageRequired,
    Gvk,
    GvkRequired,
    Other(Name),
}

struct PropertyTypeSeed<'i>(&'i mut Interner);

impl<'de> DeserializeSeed<'de> for PropertyTypeSeed<'_> {
    type Value = PropertyType;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<PropertyType, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for PropertyTypeSeed<'_> {
    type Value = PropertyType;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a property type")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<PropertyType, E> {
        Ok(match v {
            "olm.package" => PropertyType::Package,
            "olm.package.required" => PropertyType::PackageRequired,
            "olm.gvk" => PropertyType::Gvk,
            "olm.gvk.required" => PropertyType::GvkRequired,
            other => PropertyType::Other(self.0.intern(other)),
        })
    }
}

/// A property's `value`, by its type.
struct ValueSeed<'i> {
    type_: PropertyType,
    context: Context<'i>,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Property;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Property, D::Error> {
        let interner = self.context.interner;
        match self.type_ {
            PropertyType::Package => {
                let [package_name, version] =
                    d.deserialize_map(NamedFields::new(interner, ["packageName", "version"]))?;
                Ok(Property::Package {
                    package_name,
                    version,
                })
            }
            PropertyType::PackageRequired => {
                let [package_name, version_range] =
                    d.deserialize_map(NamedFields::new(interner, ["packageName", "versionRange"]))?;
                Ok(Property::PackageRequired {
                    package_name,
                    version_range,
                })
            }
            PropertyType::Gvk | PropertyType::GvkRequired => {
                let [group, version, kind] =
                    d.deserialize_map(NamedFields::new(interner, ["group", "version", "kind"]))?;
                let gvk = Gvk {
                    group,
                    version,
                    kind,
                };
                Ok(if matches!(self.type_, PropertyType::Gvk) {
                    Property::Gvk(gvk)
                } else {
                    Property::GvkRequired(gvk)
                })
            }
            PropertyType::Other(type_) => {
                let value = RawSeed(self.context.json).deserialize(d)?;
                Ok(Property::Other {
                    type_,
                    value: value.unwrap_or_else(|| RawJson::from_value(&serde_json::Value::Null)),
                })
            }
        }
    }
}

/// A map of required string fields, each interned; other fields are ignored.
struct NamedFields<'i, const N: usize> {
    interner: &'i mut Interner,
    names: [&'static str; N],
}

impl<'i, const N: usize> NamedFields<'i, N> {
    fn new(interner: &'i mut Interner, names: [&'static str; N]) -> Self {
        NamedFields { interner, names }
    }
}

/// Which of the wanted fields a key is.
struct FieldIndex<const N: usize>([&'static str; N]);

impl<'de, const N: usize> DeserializeSeed<'de> for FieldIndex<N> {
    type Value = Option<usize>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        let names = self.0;
        d.deserialize_identifier(KeyVisitor(move |key: &str| {
            names.iter().position(|n| *n == key)
        }))
    }
}

impl<'de, const N: usize> Visitor<'de> for NamedFields<'_, N> {
    type Value = [Name; N];
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a map with {}", self.names.join(", "))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<[Name; N], A::Error> {
        let mut found: [Option<Name>; N] = std::array::from_fn(|_| None);
        while let Some(index) = map.next_key_seed(FieldIndex(self.names))? {
            match index {
                Some(i) => found[i] = Some(map.next_value_seed(NameSeed(&mut *self.interner))?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if let Some(i) = found.iter().position(Option::is_none) {
            return Err(de::Error::missing_field(self.names[i]));
        }
        Ok(found.map(Option::unwrap_or_default))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_json(text: &str) -> Result<Fields, serde_json::Error> {
        let mut interner = Interner::default();
        let mut de = serde_json::Deserializer::from_str(text);
        BlobSeed(Context {
            interner: &mut interner,
            json: true,
        })
        .deserialize(&mut de)
    }

    #[test]
    fn bundles_decode_with_typed_and_raw_properties() {
        let fields = decode_json(
            r#"{"schema": "olm.bundle", "name": "a.v1.0.0", "package": "a", "image": "x/a:1",
            "properties": [
              {"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}},
              {"value": {"group": "g", "version": "v1", "kind": "K"}, "type": "olm.gvk.required"},
              {"type": "olm.csv.metadata", "value": {"description": "long\ntext", "n": [1, 2.5]}}
            ], "relatedImages": [{"name": "op", "image": "x/op:1"}], "extra": {"x": 1}}"#,
        )
        .unwrap();
        assert_eq!(fields.schema, Some(Schema::Bundle));
        assert_eq!(fields.package.as_deref(), Some("a"));
        assert_eq!(
            fields.properties[0],
            Property::Package {
                package_name: "a".into(),
                version: "1.0.0".into()
            }
        );
        assert!(matches!(&fields.properties[1], Property::GvkRequired(g) if g.kind == "K"));
        match &fields.properties[2] {
            Property::Other { type_, value } => {
                assert_eq!(type_, "olm.csv.metadata");
                assert_eq!(value.get(), r#"{"description":"long\ntext","n":[1,2.5]}"#);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(fields.related_images[0].image, "x/op:1");
    }

    #[test]
    fn entries_follow_the_schema_wherever_it_is_written() {
        for text in [
            r#"{"schema": "olm.channel", "name": "c", "package": "p", "entries": [{"name": "p.v2", "replaces": "p.v1", "skips": ["p.v0"], "skipRange": "<2.0.0"}]}"#,
            r#"{"entries": [{"name": "p.v2", "replaces": "p.v1", "skips": ["p.v0"], "skipRange": "<2.0.0"}], "name": "c", "package": "p", "schema": "olm.channel"}"#,
        ] {
            let fields = decode_json(text).unwrap();
            assert_eq!(
                fields.channel_entries,
                vec![ChannelEntry {
                    name: "p.v2".into(),
                    replaces: Some("p.v1".into()),
                    skips: vec!["p.v0".into()],
                    skip_range: Some("<2.0.0".into()),
                }]
            );
        }
        let fields = decode_json(
            r#"{"entries": [{"reference": {"schema": "olm.package"}, "message": "gone"}], "schema": "olm.deprecations", "package": "p"}"#,
        )
        .unwrap();
        assert_eq!(fields.deprecations[0].message, "gone");
    }

    #[test]
    fn wrong_shapes_are_errors_naming_the_field() {
        for (text, expected) in [
            (
                r#"{"schema": "olm.bundle", "properties": [{"type": "olm.package", "value": {"version": "1"}}]}"#,
                "missing field `packageName`",
            ),
            (
                r#"{"schema": "olm.channel", "entries": [{"replaces": "x"}]}"#,
                "missing field `name`",
            ),
            (r#"{"schema": "olm.bundle", "name": 5}"#, "invalid type"),
            (r#"[1, 2]"#, "invalid type"),
        ] {
            let error = decode_json(text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn unknown_schemas_are_skipped_whatever_their_fields_hold() {
        let fields = decode_json(
            r#"{"schema": "example.other", "package": "p", "entries": 5, "properties": "x"}"#,
        )
        .unwrap();
        assert_eq!(fields.schema, Some(Schema::Other("example.other".into())));
        assert_eq!(fields.package.as_deref(), Some("p"));
    }
}
