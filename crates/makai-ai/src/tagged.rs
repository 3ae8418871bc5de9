//! Tag-first deserialization of internally tagged JSON objects.
//!
//! serde's derived internally tagged enums (and `untagged` ones) buffer the
//! whole object into serde's private `Content` tree before looking at the tag,
//! copying every string on the way. Transcripts and session files hold
//! thousands of messages, so makai's message and entry types read the first
//! key instead and, when it is the tag (`role` of a message, `type` of a
//! content part or a session entry; pi and makai both write it first),
//! deserialize the rest of the object straight into the variant's struct. Any
//! other key order falls back to reading the object into a [`Map`] first,
//! which gives the same result.
//!
//! Implement [`TagDispatch`] for a type and call [`deserialize_tagged`] from
//! its `Deserialize` impl.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeOwned, Deserializer, Error, MapAccess, Visitor};
use serde_json::{Map, Value};

/// A type read from a JSON object whose variant is named by a tag key.
pub trait TagDispatch: Sized {
    /// The tag key (`type`, `role`).
    const TAG: &'static str;
    /// What the visitor expects, for error messages.
    const EXPECTING: &'static str;
    /// Reads the rest of the object (the tag already consumed).
    fn from_rest<'de, M: MapAccess<'de>>(tag: &str, rest: M) -> Result<Self, M::Error>;
    /// Reads a whole object (used when the tag was not the first key; the
    /// object still holds the tag).
    fn from_object<E: Error>(object: Map<String, Value>) -> Result<Self, E>;
}

/// Deserializes a [`TagDispatch`] type.
pub fn deserialize_tagged<'de, D: Deserializer<'de>, T: TagDispatch>(d: D) -> Result<T, D::Error> {
    d.deserialize_map(TagVisitor::<T>(PhantomData))
}

struct TagVisitor<T>(PhantomData<T>);

impl<'de, T: TagDispatch> Visitor<'de> for TagVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<T, M::Error> {
        let Some(first) = map.next_key::<String>()? else {
            return T::from_object(Map::new());
        };
        if first == T::TAG {
            let tag: String = map.next_value()?;
            return T::from_rest(&tag, map);
        }
        let mut object = Map::new();
        object.insert(first, map.next_value()?);
        while let Some((k, v)) = map.next_entry::<String, Value>()? {
            object.insert(k, v);
        }
        T::from_object(object)
    }
}

/// Reads the rest of an object into a map that starts with the tag (for
/// variants kept verbatim, such as unknown roles or entry types).
pub fn rest_with_tag<'de, M: MapAccess<'de>>(
    tag_key: &str,
    tag: &str,
    mut rest: M,
) -> Result<Map<String, Value>, M::Error> {
    let mut object = Map::new();
    object.insert(tag_key.to_string(), Value::String(tag.to_string()));
    while let Some((k, v)) = rest.next_entry::<String, Value>()? {
        object.insert(k, v);
    }
    Ok(object)
}

/// Reads a variant's struct from the rest of a tagged object.
pub fn variant<'de, T: serde::Deserialize<'de>, M: MapAccess<'de>>(rest: M) -> Result<T, M::Error> {
    T::deserialize(serde::de::value::MapAccessDeserializer::new(rest))
}

/// Reads a variant's struct from a whole object (the tag key is ignored as an
/// unknown field).
pub fn variant_from_object<T: DeserializeOwned, E: Error>(
    object: Map<String, Value>,
) -> Result<T, E> {
    T::deserialize(Value::Object(object)).map_err(E::custom)
}

/// The tag of an object read whole, or an error naming the missing key.
pub fn tag_of<'a, E: Error>(object: &'a Map<String, Value>, key: &str) -> Result<&'a str, E> {
    object
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| E::custom(format!("missing string field \"{key}\"")))
}
