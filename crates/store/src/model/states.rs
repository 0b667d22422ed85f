//! The states of users and issues, stored by name in their `state` columns.

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
        assert_eq!(UserState::parse("banned"), None);
    }
}
