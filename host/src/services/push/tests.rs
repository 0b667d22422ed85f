use super::after_push::hooked_updates;
use super::pre_receive::pre_receive;
use super::protected_refs::*;
use super::*;
use crate::access_level::AccessLevel;
use crate::git::Repository;
use crate::git::receive::{Quarantine, RefUpdate, ZERO_SHA};
use crate::model::projects::ProjectRow;
use crate::model::users::UserRow;
use crate::plugins::Plugins;
use crate::services::protected_branches::{Actor, DefaultBranchProtection};
use crate::settings::Settings;
use crate::store::TenantDb;
use crate::test_support;

/// A project with a README commit on `main`, protected as `default_branch_protection`
/// 2 protects it, in a fresh SQLite database under `dir`.
async fn project(dir: &std::path::Path) -> (TenantDb, UserRow, ProjectRow, Repository) {
    let world = test_support::tenant(dir).await;
    let protection = Some(DefaultBranchProtection(2));
    let row = world.project(dir, "Pushed", protection).await;
    let repo = Repository::project(dir, world.tenant.tenant_id(), row.id);
    (world.tenant, world.root, row, repo)
}

fn git_out(repo: &Repository, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(repo.path())
        .args(args)
        .env("GIT_AUTHOR_NAME", "A")
        .env("GIT_AUTHOR_EMAIL", "a@example.com")
        .env("GIT_COMMITTER_NAME", "A")
        .env("GIT_COMMITTER_EMAIL", "a@example.com")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn update(old: &str, new: &str, name: &str) -> Vec<RefUpdate> {
    vec![RefUpdate {
        old: old.into(),
        new: new.into(),
        name: name.into(),
    }]
}

#[test]
fn only_groups_within_the_hooks_limit_get_push_events() {
    let update = |old: &str, new: &str, name: &str| RefUpdate {
        old: old.repeat(40),
        new: new.repeat(40),
        name: name.into(),
    };
    let mut updates: Vec<RefUpdate> = (0..4)
        .map(|n| update("0", "a", &format!("refs/heads/new-{n}")))
        .collect();
    updates.push(update("b", "a", "refs/heads/main"));
    updates.push(update("b", "0", "refs/heads/gone"));
    updates.push(update("0", "a", "refs/tags/v1"));
    let applied: Vec<&RefUpdate> = updates.iter().collect();
    let mut hooked: Vec<String> = hooked_updates(&applied, 3).into_iter().collect();
    hooked.sort();
    assert_eq!(
        hooked,
        ["refs/heads/gone", "refs/heads/main", "refs/tags/v1"]
    );
    assert_eq!(hooked_updates(&applied, 4).len(), 7);
}

#[tokio::test]
async fn the_decision_follows_protected_branches() {
    let dir = tempfile::tempdir().unwrap();
    let (db, root, row, repo) = project(dir.path()).await;
    let main = git_out(&repo, &["rev-parse", "refs/heads/main"]);
    let tree = git_out(&repo, &["rev-parse", "refs/heads/main^{tree}"]);
    let child = git_out(&repo, &["commit-tree", &tree, "-p", &main, "-m", "child"]);
    let unrelated = git_out(&repo, &["commit-tree", &tree, "-m", "unrelated"]);
    let runtime = crate::plugins::runtime::Runtime::new(crate::plugins::runtime::RuntimeOptions {
        cache_dir: None,
        pool_instances: 1,
        max_memory_bytes: 64 << 20,
    })
    .unwrap();
    let plugins = Plugins::new(runtime, crate::plugins::Maxima::default());
    let sessions = PushSessions::new(dir.path().join("hooks"), dir.path().join("s.sock"), plugins);
    let settings = Settings::from_stored(1, 0, 0, "{}");
    let start = |level| {
        let context = PushContext {
            db: db.clone(),
            repo: repo.clone(),
            project: row.clone(),
            default_branch_protection: DefaultBranchProtection(2),
            pusher: root.clone(),
            pusher_avatar: None,
            actor: Actor {
                level,
                admin: false,
            },
            origin: PushOrigin::Git,
            notice: None,
        };
        sessions.start(context, &settings)
    };
    let developer = start(AccessLevel::Developer);
    let maintainer = start(AccessLevel::Maintainer);
    let decide = |push: &Push, updates: Vec<RefUpdate>| {
        let session = push.session.clone();
        async move { pre_receive(&session, &updates, &[]).await.unwrap() }
    };
    let refused = |message: &str| PushVerdict::Refuse(message.to_string());
    let to_main = |new: &str| update(&main, new, "refs/heads/main");

    assert_eq!(
        decide(&developer, to_main(&child)).await,
        refused(PUSH_PROTECTED)
    );
    assert_eq!(
        decide(&maintainer, to_main(&child)).await,
        PushVerdict::Allow
    );
    assert_eq!(
        decide(&maintainer, to_main(&unrelated)).await,
        refused(FORCE_PUSH_PROTECTED)
    );
    assert_eq!(
        decide(&maintainer, to_main(ZERO_SHA)).await,
        refused(DELETE_DEFAULT_BRANCH)
    );
    let feature = update(ZERO_SHA, &child, "refs/heads/feature");
    assert_eq!(decide(&developer, feature).await, PushVerdict::Allow);
    let tag = update(ZERO_SHA, &unrelated, "refs/tags/v1");
    assert_eq!(decide(&developer, tag).await, PushVerdict::Allow);

    // A pattern allowing developers and force pushes.
    let new = crate::store::protected_branches::NewProtectedBranch {
        name: "rel/*",
        allow_force_push: true,
        code_owner_approval_required: false,
        levels: vec![("push", 30), ("merge", 40)],
    };
    db.create_protected_branch(row.id, &new, None)
        .await
        .unwrap();
    git_out(&repo, &["update-ref", "refs/heads/rel/1", &main]);
    let rel = update(&main, &unrelated, "refs/heads/rel/1");
    assert_eq!(decide(&developer, rel).await, PushVerdict::Allow);
    let delete = update(&main, ZERO_SHA, "refs/heads/rel/1");
    assert_eq!(
        decide(&developer, delete.clone()).await,
        refused(DELETE_PROTECTED)
    );
    assert_eq!(
        decide(&maintainer, delete).await,
        refused(DELETE_PROTECTED_NOT_WEB)
    );
    // Creating a branch only maintainers may push, as a developer.
    let new = crate::store::protected_branches::NewProtectedBranch {
        name: "locked",
        allow_force_push: false,
        code_owner_approval_required: false,
        levels: vec![("push", 40), ("merge", 30)],
    };
    db.create_protected_branch(row.id, &new, None)
        .await
        .unwrap();
    let locked = update(ZERO_SHA, &child, "refs/heads/locked");
    assert_eq!(
        decide(&developer, locked).await,
        refused(CREATE_PROTECTED_NOT_WEB)
    );
    // Unknown sessions are refused.
    let none = check(&sessions, "nope", &[], &Quarantine::default()).await;
    assert!(matches!(none, PushVerdict::Refuse(_)));
    drop(developer);
    assert!(sessions.get("nope").is_none());
}
