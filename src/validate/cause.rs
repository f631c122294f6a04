//! One reason an object is refused, as the API server names it in a Status cause.

use serde::Serialize;

/// The API server's cause types (`metav1.CauseType`) the offline checks produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum CauseType {
    /// A field the schema does not declare (strict decoding).
    #[serde(rename = "FieldValueUnknown")]
    Unknown,
    /// `FieldValueInvalid`: a bound, pattern or rule not met.
    #[serde(rename = "FieldValueInvalid")]
    Invalid,
    /// `FieldValueRequired`.
    #[serde(rename = "FieldValueRequired")]
    Required,
    /// `FieldValueTypeInvalid`.
    #[serde(rename = "FieldValueTypeInvalid")]
    TypeInvalid,
    /// `FieldValueNotSupported`: not one of an enum.
    #[serde(rename = "FieldValueNotSupported")]
    NotSupported,
    /// `FieldValueTooLong`.
    #[serde(rename = "FieldValueTooLong")]
    TooLong,
    /// `FieldValueTooMany`.
    #[serde(rename = "FieldValueTooMany")]
    TooMany,
    /// `FieldValueDuplicate`.
    #[serde(rename = "FieldValueDuplicate")]
    Duplicate,
    /// `FieldValueForbidden`.
    #[serde(rename = "FieldValueForbidden")]
    Forbidden,
}

impl CauseType {
    /// The API server's name for the type (`FieldValueInvalid`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "FieldValueUnknown",
            Self::Invalid => "FieldValueInvalid",
            Self::Required => "FieldValueRequired",
            Self::TypeInvalid => "FieldValueTypeInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::Duplicate => "FieldValueDuplicate",
            Self::Forbidden => "FieldValueForbidden",
        }
    }

    /// Whether the API server skips the CEL rules of an object with a schema error of this type
    /// (for the others it evaluates them too).
    pub fn blocks_rules(self) -> bool {
        matches!(
            self,
            Self::NotSupported | Self::Required | Self::TooLong | Self::TooMany | Self::TypeInvalid
        )
    }

    /// The type a CEL rule's `reason` names; `FieldValueInvalid` when it names none.
    pub fn from_reason(reason: Option<&str>) -> Self {
        match reason {
            Some("FieldValueRequired") => Self::Required,
            Some("FieldValueDuplicate") => Self::Duplicate,
            Some("FieldValueForbidden") => Self::Forbidden,
            _ => Self::Invalid,
        }
    }
}

/// A refused field: its path (`spec.networking.port`, `spec.disabled[1]`), the cause type and
/// the message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cause {
    /// The field's path, as the API server writes it (no leading dot).
    pub field: String,
    /// The cause type.
    #[serde(rename = "reason")]
    pub kind: CauseType,
    /// What is wrong.
    pub message: String,
}

impl Cause {
    /// A cause of `kind` at `field`.
    pub fn new(kind: CauseType, field: &str, message: String) -> Self {
        Self {
            field: field.to_owned(),
            kind,
            message,
        }
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}
