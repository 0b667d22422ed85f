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
    }
}
