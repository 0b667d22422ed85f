//! GitLab's visibility levels, stored by name in the `visibility` columns of projects and
//! namespaces.

use std::fmt;

/// Ordered from the narrowest: `Private < Internal < Public`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Visibility {
    Private,
    Internal,
    Public,
}

impl Visibility {
    pub const ALL: [Visibility; 3] = [
        Visibility::Private,
        Visibility::Internal,
        Visibility::Public,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Private => "private",
            Visibility::Internal => "internal",
            Visibility::Public => "public",
        }
    }

    pub fn parse(name: &str) -> Option<Visibility> {
        Visibility::ALL.into_iter().find(|v| v.as_str() == name)
    }

    /// GitLab's numeric level (`Gitlab::VisibilityLevel`): 0, 10 or 20.
    pub fn level(self) -> i64 {
        match self {
            Visibility::Private => 0,
            Visibility::Internal => 10,
            Visibility::Public => 20,
        }
    }
}

impl fmt::Display for Visibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Visibility {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl sqlx::Type<sqlx::Any> for Visibility {
    fn type_info() -> sqlx::any::AnyTypeInfo {
        <String as sqlx::Type<sqlx::Any>>::type_info()
    }

    fn compatible(ty: &sqlx::any::AnyTypeInfo) -> bool {
        <String as sqlx::Type<sqlx::Any>>::compatible(ty)
    }
}

impl<'r> sqlx::Decode<'r, sqlx::Any> for Visibility {
    fn decode(value: sqlx::any::AnyValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        let name = <&str as sqlx::Decode<sqlx::Any>>::decode(value)?;
        Visibility::parse(name).ok_or_else(|| format!("unknown visibility {name:?}").into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_levels_round_trip_in_order() {
        for v in Visibility::ALL {
            assert_eq!(Visibility::parse(v.as_str()), Some(v));
        }
        assert!(Visibility::Private < Visibility::Internal);
        assert!(Visibility::Internal.level() < Visibility::Public.level());
        assert_eq!(Visibility::parse("secret"), None);
    }
}
