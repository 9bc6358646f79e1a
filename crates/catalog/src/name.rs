//! Shared strings for names a catalog repeats thousands of times (package names, API groups,
//! versions, bundle names in upgrade edges), and raw JSON for values windlass only carries.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// An immutable string that is cheap to clone; an [`Interner`] makes equal names share one
/// allocation. Reads like a `&str`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(Arc<str>);

impl Name {
    pub fn new(text: &str) -> Name {
        Name(Arc::from(text))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Name {
    /// One shared empty name: defaults cost no allocation.
    fn default() -> Self {
        static EMPTY: std::sync::LazyLock<Name> = std::sync::LazyLock::new(|| Name::new(""));
        EMPTY.clone()
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<&str> for Name {
    fn from(text: &str) -> Self {
        Name::new(text)
    }
}

impl From<&String> for Name {
    fn from(text: &String) -> Self {
        Name::new(text)
    }
}

impl From<String> for Name {
    fn from(text: String) -> Self {
        Name(Arc::from(text))
    }
}

impl From<Name> for String {
    fn from(name: Name) -> Self {
        name.0.to_string()
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == &*other.0
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == &*other.0
    }
}

impl PartialEq<Name> for String {
    fn eq(&self, other: &Name) -> bool {
        **self == *other.0
    }
}

impl Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Ok(Name::new(&text))
    }
}

/// Hands out one [`Name`] per distinct string.
#[derive(Debug, Default)]
pub struct Interner {
    names: HashSet<Name, FastHasher>,
    /// Names handed out lately, by a fingerprint of their text: a catalog repeats a name many
    /// times in a row (a package's versions share its name, APIs and requirements), and a
    /// hit here costs one comparison instead of a hash and a table probe.
    recent: [Option<Name>; RECENT],
}

const RECENT: usize = 32;

/// A slot of [`Interner::recent`]: length, last and middle byte, mixed.
fn recent_slot(text: &str) -> usize {
    let bytes = text.as_bytes();
    let last = bytes.last().copied().unwrap_or(0) as usize;
    let middle = bytes.get(bytes.len() / 2).copied().unwrap_or(0) as usize;
    (bytes.len() ^ last.wrapping_mul(5) ^ middle.wrapping_mul(3)) % RECENT
}

/// Builds [`WordHasher`]s, for maps keyed by a catalog's names.
pub type FastHasher = BuildHasherDefault<WordHasher>;

/// A fast hasher for short trusted strings (names from one catalog): a word at a time,
/// multiply and rotate. Not for keys an attacker picks to collide; a catalog's author could
/// only slow their own catalog's loading.
#[derive(Default)]
pub struct WordHasher(u64);

impl Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
        }
    }

    fn write_u8(&mut self, byte: u8) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(byte)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl Interner {
    pub fn intern(&mut self, text: &str) -> Name {
        let slot = recent_slot(text);
        if let Some(name) = &self.recent[slot]
            && name.as_str() == text
        {
            return name.clone();
        }
        let name = match self.names.get(text) {
            Some(name) => name.clone(),
            None => {
                let name = Name::new(text);
                self.names.insert(name.clone());
                name
            }
        };
        self.recent[slot] = Some(name.clone());
        name
    }
}

/// A JSON value kept as its compact text: carried and rendered, never interpreted.
#[derive(Clone)]
pub struct RawJson(Box<RawValue>);

impl RawJson {
    /// The compact text of a value.
    pub fn from_value(value: &serde_json::Value) -> RawJson {
        RawJson(
            serde_json::value::to_raw_value(value).expect("a serde_json::Value always serializes"),
        )
    }

    /// JSON text as read; insignificant whitespace is dropped so equal values mostly compare
    /// equal by text and pretty-printed input costs no extra memory.
    pub fn from_json_text(text: &str) -> RawJson {
        let compact = compact(text);
        RawJson(
            RawValue::from_string(compact)
                .unwrap_or_else(|_| RawJson::from_value(&serde_json::Value::Null).0),
        )
    }

    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The value, parsed.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(self.0.get()).unwrap_or(serde_json::Value::Null)
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.get())
    }
}

impl PartialEq for RawJson {
    /// Equal text, or the same value written differently (key order aside, which a
    /// `preserve_order` value keeps).
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get() || self.to_value() == other.to_value()
    }
}

impl Serialize for RawJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    /// Through a generic value, so any format works; the JSON catalog reader takes the faster
    /// raw path itself.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(RawJson::from_value(&serde_json::Value::deserialize(
            deserializer,
        )?))
    }
}

/// JSON text without whitespace outside strings. The input is valid JSON (the parser checked).
fn compact(text: &str) -> String {
    let bytes = text.as_bytes();
    if !bytes
        .iter()
        .any(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
    {
        return text.to_string();
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
            out.push(b);
        } else if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
            out.push(b);
        }
    }
    // Only ASCII whitespace was removed, and only outside strings: still UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interned_names_share_one_allocation() {
        let mut interner = Interner::default();
        let a = interner.intern("etcd");
        let b = interner.intern(&String::from("etcd"));
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert_eq!(a, "etcd");
        assert_eq!("etcd", a);
        assert_ne!(interner.intern("prometheus"), a);
    }

    #[test]
    fn names_that_share_a_recent_slot_intern_apart() {
        let mut interner = Interner::default();
        let texts: Vec<String> = (0..500).map(|i| format!("v1.{i}.0")).collect();
        let first: Vec<Name> = texts.iter().map(|t| interner.intern(t)).collect();
        for (text, name) in texts.iter().zip(&first).rev() {
            let again = interner.intern(text);
            assert_eq!(again, **text);
            assert!(Arc::ptr_eq(&again.0, &name.0), "{text}");
        }
    }

    #[test]
    fn raw_json_is_compact_and_compares_by_value() {
        let pretty = "{\n    \"a\": [1, 2],\n    \"s\": \"x  y\\\" z\"\n}";
        let raw = RawJson::from_json_text(pretty);
        assert_eq!(raw.get(), r#"{"a":[1,2],"s":"x  y\" z"}"#);
        let value = serde_json::json!({"a": [1, 2], "s": "x  y\" z"});
        assert_eq!(raw, RawJson::from_value(&value));
        assert_eq!(raw.to_value(), value);
        assert_eq!(serde_json::to_value(&raw).unwrap(), value);
        assert_ne!(raw, RawJson::from_value(&serde_json::json!({"a": [2, 1]})));
    }
}
