//! Push rules on the receive path: the one decision the pre-receive step asks of them. With
//! a plugin bound to the tenant's `push_rules` hook (the built-in `push-rules` plugin
//! enforces GitLab's push rule fields), the plugin sees the project's push rule, the pusher,
//! the reference updates (`check-refs`), then the new commits of each update in bounded
//! batches (`check-commits`), read from the push's quarantined objects. No binding: no check,
//! at the cost of a map lookup.
//!
//! The host computes what a plugin cannot: whether a commit's author and committer emails
//! belong to users (GitLab's `member_check`) and whether its signature verifies against the
//! pusher's GPG keys (`reject_unsigned_commits`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use crate::git::push_scan::{self, PushObjects, ScannedCommit};
use crate::git::receive;
use crate::keys::GpgVerifier;
use crate::model::hooks::PushRuleRow;
use crate::model::projects::ProjectRow;
use crate::model::users::UserRow;
use crate::model::visibility::Visibility as ProjectVisibility;
use crate::plugins::push_rules::{
    self as hook, ChangedFile, Commit, Project, Push, PushVerdict, Pusher, RefUpdate, Rule,
    Signature, UNAVAILABLE, User, Visibility,
};
use crate::plugins::{Hook, Plugins};
use crate::store::TenantDb;

use super::Refusal;

/// Emails whose owner is remembered during one push (an adversarial push with more distinct
/// emails only costs more lookups).
const EMAIL_CACHE: usize = 10_000;

/// A push, as the pre-receive step knows it.
pub struct PushSubject<'a> {
    pub project: &'a ProjectRow,
    pub pusher: &'a UserRow,
    pub updates: &'a [receive::RefUpdate],
    pub repository: &'a Path,
    /// The quarantine environment git gave the pre-receive hook (`GIT_OBJECT_DIRECTORY`,
    /// `GIT_ALTERNATE_OBJECT_DIRECTORIES`, `GIT_QUARANTINE_PATH`).
    pub quarantine_env: &'a [(String, String)],
}

/// Allow the push, or refuse it with the message for the pusher.
pub async fn check_push(plugins: &Plugins, db: &TenantDb, subject: PushSubject<'_>) -> PushVerdict {
    match try_check_push(plugins, db, subject).await {
        Ok(verdict) => verdict,
        Err(error) => {
            tracing::error!(
                tenant = db.tenant_id(),
                error = format!("{error:#}"),
                "push rules could not read the push"
            );
            PushVerdict::Refuse(UNAVAILABLE.into())
        }
    }
}

/// [`check_push`], with a push that could not be read as an error rather than a refusal.
pub async fn try_check_push(
    plugins: &Plugins,
    db: &TenantDb,
    subject: PushSubject<'_>,
) -> anyhow::Result<PushVerdict> {
    match plugins.binding(db.tenant_id(), Hook::PushRules) {
        Some(binding) => run(plugins, db, &binding, subject).await,
        None => Ok(PushVerdict::Allow),
    }
}

/// Whether a push of `db`'s tenant is checked at all.
pub fn is_bound(plugins: &Plugins, db: &TenantDb) -> bool {
    plugins.binding(db.tenant_id(), Hook::PushRules).is_some()
}

async fn run(
    plugins: &Plugins,
    db: &TenantDb,
    binding: &Arc<crate::plugins::Binding>,
    subject: PushSubject<'_>,
) -> anyhow::Result<PushVerdict> {
    let rule = db.push_rule(subject.project.id).await?;
    let pusher = subject.pusher;
    let verified_emails = db.verified_emails(pusher.id).await?;
    let gpg = GpgVerifier::new(&db.gpg_public_keys(pusher.id).await?);
    let namespace = db
        .namespace_by_id(subject.project.namespace_id)
        .await?
        .map(|n| format!("{}/", n.full_path))
        .unwrap_or_default();
    let updates: Vec<RefUpdate> = subject
        .updates
        .iter()
        .map(|u| RefUpdate {
            ref_name: u.name.clone(),
            old_sha: u.old.clone(),
            new_sha: u.new.clone(),
        })
        .collect();
    let push = Push {
        project: Project {
            id: subject.project.id.max(0) as u64,
            path: format!("{namespace}{}", subject.project.path),
            visibility: match subject.project.visibility {
                ProjectVisibility::Public => Visibility::Public,
                ProjectVisibility::Internal => Visibility::Internal,
                ProjectVisibility::Private => Visibility::Private,
            },
        },
        default_branch: subject.project.default_branch.clone().unwrap_or_default(),
        rule: rule.as_ref().map(wit_rule),
        pusher: Pusher {
            user: User {
                id: pusher.id.max(0) as u64,
                username: pusher.username.clone(),
                created_at: pusher.created_at,
                is_admin: pusher.is_admin,
                external: pusher.external,
            },
            name: pusher.name.clone(),
            verified_emails,
        },
        updates: updates.clone(),
    };
    let objects = Arc::new(PushObjects {
        repository: subject.repository.to_path_buf(),
        env: subject.quarantine_env.to_vec(),
    });
    if let PushVerdict::Refuse(message) = hook::check_refs(plugins, binding, &push, &objects).await
    {
        return Ok(PushVerdict::Refuse(message));
    }
    let mut people = People {
        db,
        owners: HashMap::new(),
    };
    let mut earlier_tips: Vec<String> = Vec::new();
    for (index, update) in updates.iter().enumerate() {
        if push_scan::is_zero(&update.new_sha) || !push_scan::is_object_id(&update.new_sha) {
            continue;
        }
        let mut commits = objects.new_commits(&update.new_sha, &earlier_tips)?;
        let mut next = commits.next_batch().await?;
        while let Some(batch) = next {
            let mut converted = Vec::with_capacity(batch.len());
            for commit in batch {
                converted.push(people.commit(commit, &gpg).await?);
            }
            // git reads the next batch while the plugin checks this one.
            let check =
                hook::check_commits(plugins, binding, &push, index as u32, converted, &objects);
            let (verdict, following) = tokio::join!(check, commits.next_batch());
            if let PushVerdict::Refuse(message) = verdict {
                return Ok(PushVerdict::Refuse(message));
            }
            next = following?;
        }
        earlier_tips.push(update.new_sha.clone());
    }
    Ok(PushVerdict::Allow)
}

/// Whose emails are whose, looked up once per email per push.
struct People<'a> {
    db: &'a TenantDb,
    owners: HashMap<String, bool>,
}

impl People<'_> {
    async fn is_user(&mut self, email: &str) -> anyhow::Result<bool> {
        let key = email.to_lowercase();
        if let Some(known) = self.owners.get(&key) {
            return Ok(*known);
        }
        let known = !email.is_empty() && self.db.email_belongs_to_user(email).await?;
        if self.owners.len() >= EMAIL_CACHE {
            self.owners.clear();
        }
        self.owners.insert(key, known);
        Ok(known)
    }

    async fn commit(&mut self, commit: ScannedCommit, gpg: &GpgVerifier) -> anyhow::Result<Commit> {
        let signature = match &commit.signature {
            None => Signature::Unsigned,
            Some(sig) if gpg.verifies(&sig.armored, &sig.signed_data) => Signature::Verified,
            Some(_) => Signature::Unverified,
        };
        Ok(Commit {
            author_is_user: self.is_user(&commit.author_email).await?,
            committer_is_user: self.is_user(&commit.committer_email).await?,
            signature,
            files: commit
                .files
                .into_iter()
                .map(|f| ChangedFile {
                    path: f.path,
                    size: f.size,
                    added: f.added,
                    deleted: f.deleted,
                    blob_id: f.blob_id,
                })
                .collect(),
            sha: commit.sha,
            message: commit.message,
            author_name: commit.author_name,
            author_email: commit.author_email,
            committer_name: commit.committer_name,
            committer_email: commit.committer_email,
        })
    }
}

/// The stored push rule as the plugin sees it.
fn wit_rule(row: &PushRuleRow) -> Rule {
    let regex = |name: &str| {
        row.regexes
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, r)| r.clone())
            .filter(|r| !r.is_empty())
    };
    let flag = |name: &str| row.flags.iter().any(|(n, on)| *n == name && *on);
    Rule {
        commit_message_regex: regex("commit_message_regex"),
        commit_message_negative_regex: regex("commit_message_negative_regex"),
        branch_name_regex: regex("branch_name_regex"),
        author_email_regex: regex("author_email_regex"),
        file_name_regex: regex("file_name_regex"),
        deny_delete_tag: flag("deny_delete_tag"),
        member_check: flag("member_check"),
        prevent_secrets: flag("prevent_secrets"),
        commit_committer_check: flag("commit_committer_check"),
        reject_unsigned_commits: flag("reject_unsigned_commits"),
        max_file_size: row.max_file_size.max(0) as u64,
    }
}

/// Sets a project's first push rule: GitLab's 422 when it has one.
pub async fn create_rule(db: &TenantDb, rule: &PushRuleRow) -> Result<PushRuleRow, Refusal> {
    let exists = || Refusal::Exists("Project push rule exists");
    if db.push_rule(rule.project_id).await?.is_some() {
        return Err(exists());
    }
    db.insert_push_rule(rule)
        .await
        .map_err(|error| match error.is_conflict() {
            true => exists(),
            false => Refusal::Store(error),
        })
}

pub async fn update_rule(db: &TenantDb, rule: &PushRuleRow) -> Result<PushRuleRow, Refusal> {
    db.update_push_rule(rule)
        .await?
        .ok_or(Refusal::NotFound("Push Rule"))
}

/// Drops a project's push rule, if it has one.
pub async fn delete_rule(db: &TenantDb, project_id: i64) -> Result<(), Refusal> {
    db.delete_push_rule(project_id).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;
    use crate::git::Repository;
    use crate::plugins::Maxima;
    use crate::plugins::builtin;
    use crate::plugins::runtime::{Runtime, RuntimeOptions};
    use crate::store::Db;
    use crate::store::plugins::{NewBinding, NewPlugin};
    use crate::test_support;

    const ZERO: &str = "0000000000000000000000000000000000000000";

    /// A tenant with its root, one project (README on `main`) and plugins with nothing bound.
    struct World {
        _dir: tempfile::TempDir,
        db: Db,
        tenant: TenantDb,
        root: UserRow,
        project: ProjectRow,
        repository: std::path::PathBuf,
        quarantine: Vec<(String, String)>,
        plugins: Arc<Plugins>,
    }

    async fn world() -> World {
        let dir = tempfile::tempdir().unwrap();
        let world = test_support::tenant(dir.path()).await;
        let project = world.project(dir.path(), "Checked", None).await;
        let test_support::Tenant {
            db, tenant, root, ..
        } = world;
        let repository = Repository::project(dir.path(), tenant.tenant_id(), project.id)
            .path()
            .to_path_buf();
        // Objects written with this environment land in the quarantine directory only, as
        // those of a push git has not accepted yet.
        let incoming = dir.path().join("incoming");
        std::fs::create_dir_all(&incoming).unwrap();
        let quarantine = vec![
            (
                "GIT_OBJECT_DIRECTORY".to_string(),
                incoming.to_string_lossy().to_string(),
            ),
            (
                "GIT_ALTERNATE_OBJECT_DIRECTORIES".to_string(),
                repository.join("objects").to_string_lossy().to_string(),
            ),
        ];
        let runtime = Runtime::new(RuntimeOptions {
            cache_dir: None,
            pool_instances: 4,
            max_memory_bytes: 256 << 20,
        })
        .unwrap();
        let plugins = Plugins::new(runtime, Maxima::default());
        World {
            _dir: dir,
            db,
            tenant,
            root,
            project,
            repository,
            quarantine,
            plugins,
        }
    }

    impl World {
        fn git(&self, args: &[&str], input: &[u8]) -> String {
            use std::io::Write;
            let mut child = Command::new("git")
                .arg("--git-dir")
                .arg(&self.repository)
                .args(args)
                .envs(self.quarantine.iter().map(|(k, v)| (k, v)))
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_AUTHOR_NAME", "Ann Author")
                .env("GIT_AUTHOR_EMAIL", "ann@example.com")
                .env("GIT_COMMITTER_NAME", "Ann Author")
                .env("GIT_COMMITTER_EMAIL", "ann@example.com")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(input).unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "git {args:?}");
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        }

        /// A quarantined commit on `parent` adding `file` with `content`.
        fn commit(&self, parent: &str, message: &str, file: &str, content: &[u8]) -> String {
            let blob = self.git(&["hash-object", "-w", "--stdin"], content);
            let tree = self.git(
                &["mktree"],
                format!("100644 blob {blob}\t{file}\n").as_bytes(),
            );
            self.git(&["commit-tree", &tree, "-p", parent], message.as_bytes())
        }

        fn main_tip(&self) -> String {
            self.git(&["rev-parse", "refs/heads/main"], b"")
        }

        async fn bind_built_in(&self) {
            let (built_in, sha256) = builtin::with_digests()
                .iter()
                .find(|(b, _)| b.name == "push-rules")
                .unwrap();
            let compiled = self
                .plugins
                .compile(Arc::from(built_in.bytes))
                .await
                .unwrap();
            let (row, _) = self
                .tenant
                .insert_plugin(&NewPlugin {
                    sha256,
                    name: built_in.name,
                    version: Some(built_in.version),
                    world: compiled.target.world.world_name(),
                    api_version: &compiled.target.package_version,
                    size: built_in.bytes.len() as i64,
                    content: None,
                })
                .await
                .unwrap();
            self.tenant
                .bind_plugin(&NewBinding {
                    hook: "push_rules",
                    plugin_id: row.id,
                    config: "{}",
                    failure_policy: "fail_closed",
                    timeout_ms: 1000,
                    fuel: None,
                    memory_bytes: 64 << 20,
                    outbound_http: None,
                })
                .await
                .unwrap();
            self.plugins.refresh(&self.db).await.unwrap();
        }

        async fn rule(&self, set: impl FnOnce(&mut PushRuleRow)) {
            let mut rule = PushRuleRow::defaults(self.project.id);
            set(&mut rule);
            self.tenant.delete_push_rule(self.project.id).await.unwrap();
            self.tenant.insert_push_rule(&rule).await.unwrap();
        }

        async fn check(&self, updates: &[receive::RefUpdate]) -> PushVerdict {
            let subject = PushSubject {
                project: &self.project,
                pusher: &self.root,
                updates,
                repository: &self.repository,
                quarantine_env: &self.quarantine,
            };
            check_push(&self.plugins, &self.tenant, subject).await
        }
    }

    fn update(ref_name: &str, old: &str, new: &str) -> receive::RefUpdate {
        receive::RefUpdate {
            name: ref_name.into(),
            old: old.into(),
            new: new.into(),
        }
    }

    fn set_regex(rule: &mut PushRuleRow, name: &str, pattern: &str) {
        let slot = rule.regexes.iter_mut().find(|(n, _)| *n == name).unwrap();
        slot.1 = Some(pattern.into());
    }

    #[tokio::test]
    async fn the_bound_plugin_reads_the_quarantined_push_in_batches() {
        let w = world().await;
        let main = w.main_tip();
        // The offending commit is the oldest: rev-list hands it over in the second batch.
        let mut tip = w.commit(&main, "wip: nothing yet\n", "a.txt", b"a");
        for i in 0..push_scan::BATCH_COMMITS + 49 {
            tip = w.commit(
                &tip,
                &format!("feat: step {i}\n"),
                "a.txt",
                i.to_string().as_bytes(),
            );
        }
        let push = [update("refs/heads/main", &main, &tip)];
        w.rule(|r| set_regex(r, "commit_message_regex", "^feat: "))
            .await;
        assert_eq!(
            w.check(&push).await,
            PushVerdict::Allow,
            "nothing bound: no checks"
        );

        w.bind_built_in().await;
        assert_eq!(
            w.check(&push).await,
            PushVerdict::Refuse("Commit message does not follow the pattern '^feat: '".into())
        );
        w.rule(|r| set_regex(r, "commit_message_regex", "^(feat|wip): "))
            .await;
        assert_eq!(w.check(&push).await, PushVerdict::Allow);
        w.tenant.delete_push_rule(w.project.id).await.unwrap();
        assert_eq!(w.check(&push).await, PushVerdict::Allow, "no push rule");
    }

    #[tokio::test]
    async fn files_members_signatures_and_refs() {
        let w = world().await;
        w.bind_built_in().await;
        let main = w.main_tip();
        let big = w.commit(&main, "big\n", "data.bin", &vec![b'x'; (1 << 20) + 1]);
        let push = [update("refs/heads/main", &main, &big)];
        w.rule(|r| r.max_file_size = 1).await;
        assert_eq!(
            w.check(&push).await,
            PushVerdict::Refuse(
                "File \"data.bin\" is larger than the allowed size of 1 MiB. Use Git LFS to \
                 manage this file."
                    .into()
            )
        );
        let secret = w.commit(&main, "keys\n", ".id_rsa", b"-----BEGIN");
        let push = [update("refs/heads/topic", ZERO, &secret)];
        w.rule(|r| {
            r.flags
                .iter_mut()
                .for_each(|(n, on)| *on = *n == "prevent_secrets")
        })
        .await;
        assert_eq!(
            w.check(&push).await,
            PushVerdict::Refuse(
                "File name .id_rsa was prohibited by the pattern \
                 \"(^|/)\\\\.?id_(rsa|dsa|ed25519|ecdsa|ecdsa_sk|ed25519_sk)$\"."
                    .into()
            )
        );
        w.rule(|r| {
            r.flags
                .iter_mut()
                .for_each(|(n, on)| *on = *n == "member_check")
        })
        .await;
        assert_eq!(
            w.check(&push).await,
            PushVerdict::Refuse("Author 'ann@example.com' is not a member of team".into())
        );
        w.rule(|r| {
            r.flags
                .iter_mut()
                .for_each(|(n, on)| *on = *n == "reject_unsigned_commits")
        })
        .await;
        assert_eq!(
            w.check(&push).await,
            PushVerdict::Refuse("Commit must be signed with a GPG key".into())
        );
        w.rule(|r| {
            r.flags
                .iter_mut()
                .for_each(|(n, on)| *on = *n == "deny_delete_tag")
        })
        .await;
        let delete = [update("refs/tags/v1", &main, ZERO)];
        assert_eq!(
            w.check(&delete).await,
            PushVerdict::Refuse("You cannot delete a tag".into())
        );
        assert_eq!(w.check(&push).await, PushVerdict::Allow);
    }

    #[tokio::test]
    async fn an_unreadable_push_is_refused_as_unavailable() {
        let mut w = world().await;
        w.bind_built_in().await;
        let main = w.main_tip();
        let tip = w.commit(&main, "x\n", "a", b"a");
        // Without the quarantine environment the pushed objects are not there.
        w.quarantine.clear();
        let push = [update("refs/heads/main", &main, &tip)];
        assert_eq!(
            w.check(&push).await,
            PushVerdict::Refuse(UNAVAILABLE.into())
        );
    }
}
