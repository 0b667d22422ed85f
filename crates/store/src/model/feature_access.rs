//! Who may use a project feature (GitLab's `ProjectFeature` access levels): stored by name in
//! the project's `issues_access_level` and `merge_requests_access_level` columns and in its
//! settings (`repository_access_level`, `wiki_access_level`...).

stored_names! {
    /// Ordered as GitLab's numbers (0, 10, 20, 30): `Disabled < Private < Enabled < Public`.
    pub enum FeatureAccess {
        Disabled = "disabled",
        /// Project members only.
        Private = "private",
        /// Whoever may see the project.
        Enabled = "enabled",
        /// Everyone, even in a private or internal project (pages and requirements only).
        Public = "public",
    }
}

impl FeatureAccess {
    /// The levels of every feature but pages and requirements.
    pub const NOT_PUBLIC: &'static [FeatureAccess] = &[
        FeatureAccess::Disabled,
        FeatureAccess::Private,
        FeatureAccess::Enabled,
    ];

    /// Whether the feature is open to someone who may see the project: nobody when disabled,
    /// a `member` when private, everyone otherwise.
    pub fn open_to(self, member: bool) -> bool {
        match self {
            FeatureAccess::Disabled => false,
            FeatureAccess::Private => member,
            FeatureAccess::Enabled | FeatureAccess::Public => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_round_trip_in_gitlabs_order() {
        for level in FeatureAccess::ALL {
            assert_eq!(FeatureAccess::parse(level.as_str()), Some(*level));
        }
        assert!(FeatureAccess::Disabled < FeatureAccess::Private);
        assert!(FeatureAccess::Enabled < FeatureAccess::Public);
        assert!(!FeatureAccess::NOT_PUBLIC.contains(&FeatureAccess::Public));
        assert!(FeatureAccess::Private.open_to(true) && !FeatureAccess::Private.open_to(false));
    }
}
