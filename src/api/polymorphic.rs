//! Fields that accept more than one form, kept in the form the user wrote so that an object
//! read back from the API server is byte-for-byte what was applied.
//!
//! Deserialization dispatches on the JSON type first, so a wrong shape yields an error that
//! names the accepted forms instead of serde's "did not match any variant".

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::schema::polymorphic;

/// Implemented by the item types of polymorphic fields so that schemas and errors can name them.
pub trait Described {
    /// What one item is, e.g. "provider object".
    const WHAT: &'static str;
}

/// One item or a list of items (`inference: {provider: vllm}` or `inference: [{id: a, …}, …]`).
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    /// The single-object form.
    One(T),
    /// The list form.
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    /// The items, whatever the form.
    pub fn items(&self) -> &[T] {
        match self {
            Self::One(item) => std::slice::from_ref(item),
            Self::Many(items) => items,
        }
    }

    /// Whether the user wrote the list form.
    pub fn is_list(&self) -> bool {
        matches!(self, Self::Many(_))
    }
}

fn from_value<T: DeserializeOwned, E: serde::de::Error>(value: Value) -> Result<T, E> {
    serde_json::from_value(value).map_err(E::custom)
}

impl<'de, T: DeserializeOwned + Described> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            value @ Value::Object(_) => from_value(value).map(Self::One),
            value @ Value::Array(_) => from_value(value).map(Self::Many),
            other => Err(D::Error::custom(format!(
                "expected a {what} or a list of {what}s, found {}",
                json_kind(&other),
                what = T::WHAT
            ))),
        }
    }
}

impl<T: Described> JsonSchema for OneOrMany<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("OneOrMany_{}", T::WHAT.replace(' ', "_")).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        polymorphic(&format!(
            "A single {what}, or a list of {what}s each with an explicit id.",
            what = T::WHAT
        ))
    }
}

/// A model given by name only, or with details.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum NameOrObject<T> {
    /// `- llama3.2-8b`
    Name(String),
    /// `- {name: llama3.2-70b, provider: vllm-primary, …}`
    Object(T),
}

impl<'de, T: DeserializeOwned + Described> Deserialize<'de> for NameOrObject<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(name) => Ok(Self::Name(name)),
            value @ Value::Object(_) => from_value(value).map(Self::Object),
            other => Err(D::Error::custom(format!(
                "expected a name (string) or a {}, found {}",
                T::WHAT,
                json_kind(&other)
            ))),
        }
    }
}

impl<T: Described> JsonSchema for NameOrObject<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("NameOrObject_{}", T::WHAT.replace(' ', "_")).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        polymorphic(&format!("A name (string), or a {}.", T::WHAT))
    }
}

/// A switch given as a bool, or as an object of options (`expose: true` or `expose: {hostname: …}`).
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum BoolOrObject<T> {
    /// `true` or `false`.
    Bool(bool),
    /// Options; an empty object means enabled with defaults.
    Object(T),
}

impl<'de, T: DeserializeOwned + Described> Deserialize<'de> for BoolOrObject<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Bool(enabled) => Ok(Self::Bool(enabled)),
            value @ Value::Object(_) => from_value(value).map(Self::Object),
            other => Err(D::Error::custom(format!(
                "expected true, false or {}, found {}",
                T::WHAT,
                json_kind(&other)
            ))),
        }
    }
}

impl<T: Described> JsonSchema for BoolOrObject<T> {
    fn schema_name() -> Cow<'static, str> {
        format!(
            "BoolOrObject_{}",
            T::WHAT.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        )
        .into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        polymorphic(&format!("true, false, or {}.", T::WHAT))
    }
}

/// The JSON type of a value, for error messages.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
