//! GitLab's visibility levels, stored by name in the `visibility` columns of projects and
//! namespaces.

stored_names! {
    /// Ordered from the narrowest: `Private < Internal < Public`.
    pub enum Visibility {
        Private = "private",
        Internal = "internal",
        Public = "public",
    }
}

impl Visibility {
    /// GitLab's numeric level (`Gitlab::VisibilityLevel`): 0, 10 or 20.
    pub fn level(self) -> i64 {
        match self {
            Visibility::Private => 0,
            Visibility::Internal => 10,
            Visibility::Public => 20,
        }
    }

    /// The visibility of GitLab's numeric `level`.
    pub fn from_level(level: i64) -> Option<Visibility> {
        Visibility::ALL.iter().copied().find(|v| v.level() == level)
    }

    /// A visibility given by name or by its level as text (`"10"`), as GitLab's settings take
    /// them.
    pub fn named_or_numbered(text: &str) -> Option<Visibility> {
        Visibility::parse(text).or_else(|| {
            Visibility::ALL
                .iter()
                .copied()
                .find(|v| v.level().to_string() == text)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_levels_round_trip_in_order() {
        for v in Visibility::ALL {
            assert_eq!(Visibility::parse(v.as_str()), Some(*v));
        }
        assert!(Visibility::Private < Visibility::Internal);
        assert!(Visibility::Internal.level() < Visibility::Public.level());
        assert_eq!(Visibility::parse("secret"), None);
        assert_eq!(Visibility::from_level(10), Some(Visibility::Internal));
        assert_eq!(Visibility::from_level(5), None);
        assert_eq!(
            Visibility::named_or_numbered("20"),
            Some(Visibility::Public)
        );
        assert_eq!(Visibility::named_or_numbered("+20"), None);
    }
}
