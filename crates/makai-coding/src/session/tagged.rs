//! Fast deserialization of internally tagged JSON objects.
//!
//! serde's derived internally tagged enums buffer the whole object before
//! looking at the tag, which made loading a large session several times
//! slower than the JSON parse itself. pi and makai both write the tag
//! (`type` of an entry, `role` of a message) as the first key, so this reads
//! the first key and, when it is the tag, deserializes the rest of the object
//! straight into the variant's struct. Any other key order falls back to
//! reading the object into a [`Map`] first, which gives the same result.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserializer, Error, MapAccess, Visitor};
use serde_json::{Map, Value};

/// A type read from a JSON object whose variant is named by a tag key.
pub(crate) trait TagDispatch: Sized {
    /// The tag key (`type`, `role`).
    const TAG: &'static str;
    /// What the visitor expects, for error messages.
    const EXPECTING: &'static str;
    /// Reads the rest of the object (the tag already consumed).
    fn from_rest<'de, M: MapAccess<'de>>(tag: &str, rest: M) -> Result<Self, M::Error>;
    /// Reads a whole object (used when the tag was not the first key).
    fn from_object<E: Error>(object: Map<String, Value>) -> Result<Self, E>;
}

/// Deserializes a [`TagDispatch`] type.
pub(crate) fn deserialize_tagged<'de, D: Deserializer<'de>, T: TagDispatch>(
    d: D,
) -> Result<T, D::Error> {
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

/// Reads the rest of an object into a map that starts with the tag.
pub(crate) fn rest_with_tag<'de, M: MapAccess<'de>>(
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
