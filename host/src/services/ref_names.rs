//! GitLab's refusal of branch and tag names a push may not create (`Gitlab::Checks::BranchCheck`
//! and `TagCheck`, `Gitlab::GitRefValidator`): names the API itself refuses, so a push cannot
//! make what the API would then misread. A branch called `HEAD` shadows the repository's HEAD,
//! and one named like a commit id (`git rev-parse` prefers a ref to an object) makes every
//! lookup of that id answer the pusher's commit instead.

use crate::git::receive::RefUpdate;

pub const INVALID_BRANCH: &str = "You cannot create a branch with an invalid name.";
pub const HEX_BRANCH: &str = "You cannot create a branch with a SHA-1 or SHA-256 branch name.";
pub const INVALID_TAG: &str = "You cannot create a tag with an invalid name.";
pub const HEX_TAG: &str = "You cannot create a tag with a SHA-1 or SHA-256 tag name.";
pub const PROHIBITED_TAG: &str = "You cannot create a tag with a prohibited pattern.";

/// GitLab's message for the first update that creates or moves a branch or tag to a name it
/// refuses; deletions are always allowed (they clean such names up).
pub fn refusal(updates: &[RefUpdate]) -> Option<&'static str> {
    updates
        .iter()
        .filter(|update| !update.is_deletion())
        .find_map(|update| {
            if let Some(branch) = update.branch() {
                branch_refusal(branch)
            } else {
                update.tag().and_then(tag_refusal)
            }
        })
}

fn branch_refusal(name: &str) -> Option<&'static str> {
    if names_an_object(name) {
        Some(HEX_BRANCH)
    } else if !valid_name(name) {
        Some(INVALID_BRANCH)
    } else {
        None
    }
}

fn tag_refusal(name: &str) -> Option<&'static str> {
    if !valid_name(name) {
        Some(INVALID_TAG)
    } else if name.starts_with("refs/tags/") {
        Some(PROHIBITED_TAG)
    } else if is_object_id(name) {
        Some(HEX_TAG)
    } else {
        None
    }
}

/// `Gitlab::GitRefValidator.validate`: not `HEAD`, no leading `-`, no `refs/heads/` or
/// `refs/remotes/` inside the name; git already refused what `check-ref-format` refuses.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name != "HEAD"
        && !name.starts_with('-')
        && !name.starts_with("refs/heads/")
        && !name.starts_with("refs/remotes/")
}

/// A branch whose first component is a full object id (`<sha>` or `<sha>/...`).
fn names_an_object(name: &str) -> bool {
    is_object_id(name.split('/').next().unwrap_or(name))
}

fn is_object_id(name: &str) -> bool {
    matches!(name.len(), 40 | 64) && name.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(name: &str, new: &str) -> RefUpdate {
        RefUpdate {
            old: "0".repeat(40),
            new: new.into(),
            name: name.into(),
        }
    }

    #[test]
    fn names_the_api_refuses_are_refused_on_push() {
        let sha = "a".repeat(40);
        let refused = [
            ("refs/heads/HEAD", INVALID_BRANCH),
            ("refs/heads/-rf", INVALID_BRANCH),
            ("refs/heads/refs/heads/main", INVALID_BRANCH),
            ("refs/heads/refs/remotes/origin/x", INVALID_BRANCH),
            (&format!("refs/heads/{sha}"), HEX_BRANCH),
            (&format!("refs/heads/{sha}/x"), HEX_BRANCH),
            (&format!("refs/heads/{}", "b".repeat(64)), HEX_BRANCH),
            ("refs/tags/HEAD", INVALID_TAG),
            ("refs/tags/refs/tags/v1", PROHIBITED_TAG),
            (&format!("refs/tags/{sha}"), HEX_TAG),
        ];
        for (name, message) in refused {
            assert_eq!(refusal(&[update(name, &sha)]), Some(message), "{name}");
        }
        for allowed in [
            "refs/heads/main",
            "refs/heads/feature/HEAD-less",
            "refs/heads/deadbeef",
            "refs/tags/v1.0",
            "refs/notes/commits",
        ] {
            assert_eq!(refusal(&[update(allowed, &sha)]), None, "{allowed}");
        }
        let deletion = update("refs/heads/HEAD", &"0".repeat(40));
        assert_eq!(refusal(&[deletion]), None, "a deletion cleans up");
    }
}
