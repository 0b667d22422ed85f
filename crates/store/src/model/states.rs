//! The states of users, issues and milestones, stored by name in their `state` columns, and of
//! a project's import (`import_status`).

stored_names! {
    /// GitLab's user states (`User#state`): who may sign in and use the API.
    pub enum UserState {
        Active = "active",
        Blocked = "blocked",
        /// Blocked by directory sync; only the directory changes it.
        LdapBlocked = "ldap_blocked",
        /// Signed up and waiting for an administrator's approval.
        BlockedPendingApproval = "blocked_pending_approval",
        Deactivated = "deactivated",
    }
}

stored_names! {
    /// An issue's state.
    pub enum IssueState {
        Opened = "opened",
        Closed = "closed",
    }
}

stored_names! {
    /// A milestone's state.
    pub enum MilestoneState {
        Active = "active",
        Closed = "closed",
    }
}

stored_names! {
    /// Where a project's import, or a fork's copy, is (GitLab's `import_status`): `none` for a
    /// project that was never imported.
    pub enum ImportStatus {
        None = "none",
        Scheduled = "scheduled",
        Started = "started",
        Finished = "finished",
        Failed = "failed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_reads_back_its_name() {
        for state in UserState::ALL {
            assert_eq!(UserState::parse(state.as_str()), Some(*state));
        }
        for state in IssueState::ALL {
            assert_eq!(IssueState::parse(&state.to_string()), Some(*state));
        }
        for state in MilestoneState::ALL {
            assert_eq!(MilestoneState::parse(state.as_str()), Some(*state));
        }
        for status in ImportStatus::ALL {
            assert_eq!(ImportStatus::parse(status.as_str()), Some(*status));
        }
        assert_eq!(UserState::parse("banned"), None);
    }

    #[test]
    fn events_read_back_the_names_they_wrote() {
        let written = serde_json::to_value(IssueState::Closed).unwrap();
        assert_eq!(written, "closed");
        assert_eq!(
            serde_json::from_value::<IssueState>(written).unwrap(),
            IssueState::Closed
        );
        assert!(serde_json::from_value::<IssueState>("reopened".into()).is_err());
    }
}
