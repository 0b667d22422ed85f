//! One call of a hook's plugin on an input written as JSON, changing nothing: what
//! `trellis plugin run` and the admin console's "Try it" share. Every hook has a sample input
//! ([`sample`]: prefilled in the console, run by `plugin run` without `--input`), and every
//! trial ends in the same [`Report`]: the answer, time, fuel, peak memory and log lines.
//!
//! A push-rules trial checks a sample push: its commits are written out in the input, and
//! `push-scan.read-blob` answers from the files' contents there, so no repository is read.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::bail;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::Limits;
use crate::call::{BlobSource, CallStats, PluginError};
use crate::external_auth;
use crate::hooks::Hook;
use crate::push_rules;
use crate::registry::{Binding, Plugins};
use crate::spam::{self, SpamAuthor, SpamProject, SpamSubject, SpammableKind};
use crate::webhook_formatter;
use crate::wit::{since_v0_1 as v0_1, since_v0_2 as v0_2};

/// Who the sample inputs name as the acting user (the console fills in the signed-in admin).
pub struct SampleUser {
    pub id: i64,
    pub username: String,
    pub created_at: DateTime<Utc>,
}

impl Default for SampleUser {
    fn default() -> Self {
        SampleUser {
            id: 1,
            username: "root".into(),
            created_at: DateTime::UNIX_EPOCH,
        }
    }
}

/// The sample input of `hook`, as pretty JSON (the format `--input` and the console read).
pub fn sample(hook: Hook, user: &SampleUser) -> String {
    let created_at = user
        .created_at
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let author = json!({ "id": user.id, "username": user.username, "created_at": created_at });
    let project = json!({ "id": 1, "path": "group/project", "visibility": "private" });
    let sample = match hook {
        Hook::SpamCheck => json!({
            "kind": "issue",
            "title": "Cheap watches, limited offer",
            "description": "Buy now at https://deals.example",
            "author": author,
        }),
        Hook::ExternalAuthorization => json!({
            "user": author,
            "user_email": format!("{}@example.com", user.username),
            "identities": [{ "provider": "ldapmain", "extern_uid": format!("uid={},ou=people", user.username) }],
            "classification_label": "confidential",
            "project": project,
        }),
        Hook::PushRules => json!({
            "project": project,
            "default_branch": "main",
            "rule": { "commit_message_regex": "^(feat|fix): ", "file_name_regex": "\\.exe$", "max_file_size": 1 },
            "pusher": {
                "user": author,
                "name": user.username,
                "verified_emails": [format!("{}@example.com", user.username)],
            },
            "updates": [{
                "ref_name": "refs/heads/main",
                "old_sha": "1111111111111111111111111111111111111111",
                "new_sha": "2222222222222222222222222222222222222222",
                "commits": [{
                    "sha": "2222222222222222222222222222222222222222",
                    "message": "update the readme\n",
                    "author_name": user.username,
                    "author_email": format!("{}@example.com", user.username),
                    "files": [{ "path": "README.md", "content": "# Project\n" }],
                }],
            }],
        }),
        Hook::WebhookFormatter => json!({
            "event_name": "Issue Hook",
            "object_kind": "issue",
            "payload": {
                "object_kind": "issue",
                "event_type": "issue",
                "user": { "id": user.id, "username": user.username },
                "project": { "id": 1, "path_with_namespace": "group/project" },
                "object_attributes": { "iid": 1, "title": "Crash on save", "action": "open", "state": "opened" },
            },
        }),
    };
    serde_json::to_string_pretty(&sample).unwrap_or_default()
}

/// What the plugin answered, for any hook.
pub struct Answer {
    /// Its decision (`allow`, `disallow`, `refuse`, `deliver`, `skip`...), or `None` when the
    /// call failed.
    pub verdict: Option<&'static str>,
    /// The decision's reason or message, the formatted request, or the failure.
    pub detail: String,
    pub error: Option<PluginError>,
}

impl Answer {
    fn of<T>(answer: Result<T, PluginError>, decide: impl FnOnce(T) -> Answer) -> Answer {
        match answer {
            Ok(value) => decide(value),
            Err(error) => Answer {
                verdict: None,
                detail: error.to_string(),
                error: Some(error),
            },
        }
    }

    fn decided(verdict: &'static str, detail: impl Into<String>) -> Answer {
        Answer {
            verdict: Some(verdict),
            detail: detail.into(),
            error: None,
        }
    }
}

/// A trial's answer, its cost and log, and the limits it ran under.
pub struct Report {
    pub answer: Answer,
    pub stats: CallStats,
    pub limits: Limits,
}

impl Report {
    /// The report as `trellis plugin run` prints it and the console shows it.
    pub fn text(&self) -> String {
        let (answer, stats, limits) = (&self.answer, &self.stats, &self.limits);
        let mut out = match (answer.verdict, &answer.error) {
            (Some(verdict), _) => format!("verdict: {verdict}\nreason:  {}\n", answer.detail),
            (None, Some(error)) => format!("error:   {error} ({})\n", error.outcome()),
            (None, None) => format!("error:   {}\n", answer.detail),
        };
        out += &format!("time:    {:.3} ms\n", stats.elapsed.as_secs_f64() * 1000.0);
        out += &format!("fuel:    {}\n", stats.fuel);
        out += &format!("memory:  {} bytes peak\n", stats.peak_memory);
        out += &format!(
            "limits:  {} ms, {} fuel, {} bytes\n",
            limits.timeout_ms,
            limits.fuel.map_or("unlimited".into(), |f| f.to_string()),
            limits.memory_bytes
        );
        if !stats.log.is_empty() {
            out += "log:\n";
            for line in &stats.log {
                out += &format!("  {line}\n");
            }
        }
        out
    }
}

/// A hook's input read from its JSON text (the whole input is checked before any call).
pub enum Input {
    Spam(SpamSubject),
    Authorization(v0_1::AuthorizationRequest),
    Push(SamplePush),
    Webhook(v0_1::WebhookEvent),
}

/// Reads `text` as `hook`'s input.
pub fn input(hook: Hook, text: &str) -> anyhow::Result<Input> {
    Ok(match hook {
        Hook::SpamCheck => Input::Spam(serde_json::from_str::<SpamFile>(text)?.subject()?),
        Hook::ExternalAuthorization => {
            Input::Authorization(serde_json::from_str::<AuthorizationFile>(text)?.request()?)
        }
        Hook::PushRules => Input::Push(serde_json::from_str::<PushFile>(text)?.push()?),
        Hook::WebhookFormatter => {
            let file: WebhookFile = serde_json::from_str(text)?;
            Input::Webhook(v0_1::WebhookEvent {
                event_name: file.event_name,
                object_kind: file.object_kind,
                payload: file.payload.to_string(),
            })
        }
    })
}

/// Calls `binding`'s plugin on `input` (a push: `check-refs`, then `check-commits` per
/// update until a refusal, the costs added up).
pub async fn run(plugins: &Plugins, binding: &Arc<Binding>, input: Input) -> Report {
    let (answer, stats) = match input {
        Input::Spam(subject) => {
            let (outcome, stats) = spam::check_with(plugins, binding, &subject, false).await;
            let answer = match outcome.verdict {
                Some(verdict) => Answer::decided(verdict.name(), outcome.reason),
                None => Answer {
                    verdict: None,
                    detail: outcome.reason,
                    error: outcome.error,
                },
            };
            (answer, stats)
        }
        Input::Authorization(request) => {
            let (answer, stats) = external_auth::authorize(plugins, binding, None, request).await;
            let answer = Answer::of(answer, |d| match d.allowed {
                true => Answer::decided("allow", d.reason),
                false => Answer::decided("deny", d.reason),
            });
            (answer, stats)
        }
        Input::Push(sample) => run_push(plugins, binding, sample).await,
        Input::Webhook(event) => {
            let (answer, stats) = webhook_formatter::format_with(plugins, binding, event).await;
            let answer = Answer::of(answer, |formatted| match formatted {
                None => Answer::decided("skip", ""),
                Some((headers, body)) => {
                    let mut detail: String = headers
                        .iter()
                        .map(|(name, value)| format!("{name}: {value}\n"))
                        .collect();
                    detail += &format!("\n{body}");
                    Answer::decided("deliver", detail)
                }
            });
            (answer, stats)
        }
    };
    Report {
        answer,
        stats,
        limits: binding.limits,
    }
}

async fn run_push(
    plugins: &Plugins,
    binding: &Arc<Binding>,
    sample: SamplePush,
) -> (Answer, CallStats) {
    let blobs: Arc<dyn BlobSource> = Arc::new(sample.blobs);
    let (mut answer, mut total) =
        push_rules::refs_answer(plugins, binding, &sample.push, blobs.clone()).await;
    for (update, commits) in sample.commits.into_iter().enumerate() {
        if !matches!(answer, Ok(v0_2::Decision::Allow)) || commits.is_empty() {
            continue;
        }
        let (next, stats) = push_rules::commits_answer(
            plugins,
            binding,
            &sample.push,
            update as u32,
            commits,
            blobs.clone(),
        )
        .await;
        answer = next;
        total.elapsed += stats.elapsed;
        total.fuel += stats.fuel;
        total.peak_memory = total.peak_memory.max(stats.peak_memory);
        total.log.extend(stats.log);
    }
    let answer = Answer::of(
        answer.and_then(push_rules::bounded),
        |decision| match decision {
            v0_2::Decision::Allow => Answer::decided("allow", ""),
            v0_2::Decision::Refuse(message) => Answer::decided("refuse", message),
        },
    );
    (answer, total)
}

// ---- the input files ------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserFile {
    id: i64,
    username: String,
    /// RFC 3339, e.g. `2024-01-31T12:00:00Z`.
    created_at: DateTime<Utc>,
    #[serde(default)]
    is_admin: bool,
    #[serde(default)]
    external: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectFile {
    id: i64,
    path: String,
    visibility: String,
}

fn visibility(name: &str) -> anyhow::Result<&str> {
    match name {
        "private" | "internal" | "public" => Ok(name),
        other => bail!("unknown visibility {other:?} (private, internal or public)"),
    }
}

/// The input of `spam-check`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpamFile {
    #[serde(default = "issue")]
    kind: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    is_update: bool,
    #[serde(default)]
    confidential: bool,
    author: UserFile,
    ip: Option<String>,
    user_agent: Option<String>,
    project: Option<ProjectFile>,
}

fn issue() -> String {
    "issue".into()
}

impl SpamFile {
    fn subject(self) -> anyhow::Result<SpamSubject> {
        let kind = match self.kind.as_str() {
            "issue" => SpammableKind::Issue,
            "merge_request" | "merge-request" => SpammableKind::MergeRequest,
            "note" => SpammableKind::Note,
            "snippet" => SpammableKind::Snippet,
            other => bail!("unknown kind {other:?} (issue, merge_request, note or snippet)"),
        };
        let project = match self.project {
            Some(p) => Some(SpamProject {
                id: p.id,
                visibility: visibility(&p.visibility)?.to_string(),
                path: p.path,
            }),
            None => None,
        };
        Ok(SpamSubject {
            kind,
            title: self.title,
            description: self.description,
            is_update: self.is_update,
            confidential: self.confidential,
            author: SpamAuthor {
                id: self.author.id,
                username: self.author.username,
                created_at_ms: self.author.created_at.timestamp_millis(),
                is_admin: self.author.is_admin,
                external: self.author.external,
            },
            ip: self.ip,
            user_agent: self.user_agent,
            project,
        })
    }
}

/// The input of `external-authorization`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthorizationFile {
    user: UserFile,
    user_email: Option<String>,
    #[serde(default)]
    identities: Vec<IdentityFile>,
    classification_label: String,
    project: Option<ProjectFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdentityFile {
    provider: String,
    extern_uid: String,
}

impl AuthorizationFile {
    fn request(self) -> anyhow::Result<v0_1::AuthorizationRequest> {
        let project = match self.project {
            Some(p) => Some(v0_1::Project {
                id: p.id.max(0) as u64,
                visibility: match visibility(&p.visibility)? {
                    "public" => v0_1::Visibility::Public,
                    "internal" => v0_1::Visibility::Internal,
                    _ => v0_1::Visibility::Private,
                },
                path: p.path,
            }),
            None => None,
        };
        let u = self.user;
        Ok(v0_1::AuthorizationRequest {
            user: v0_1::User {
                id: u.id.max(0) as u64,
                username: u.username,
                created_at: u.created_at.timestamp_millis(),
                is_admin: u.is_admin,
                external: u.external,
            },
            user_email: self.user_email,
            identities: self
                .identities
                .into_iter()
                .map(|i| v0_1::Identity {
                    provider: i.provider,
                    extern_uid: i.extern_uid,
                })
                .collect(),
            classification_label: self.classification_label,
            project,
        })
    }
}

/// The input of `webhook-formatter`: the event and its standard payload (a JSON value).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookFile {
    event_name: String,
    object_kind: String,
    payload: serde_json::Value,
}

/// The input of `push-rules`: the push as the plugin sees it, each update with its new
/// commits, each changed file with its content (the blob `read-blob` returns).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PushFile {
    project: ProjectFile,
    default_branch: String,
    rule: Option<RuleFile>,
    pusher: PusherFile,
    updates: Vec<UpdateFile>,
}

/// GitLab's push rule fields, each optional.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
struct RuleFile {
    commit_message_regex: Option<String>,
    commit_message_negative_regex: Option<String>,
    branch_name_regex: Option<String>,
    author_email_regex: Option<String>,
    file_name_regex: Option<String>,
    deny_delete_tag: bool,
    member_check: bool,
    prevent_secrets: bool,
    commit_committer_check: bool,
    reject_unsigned_commits: bool,
    max_file_size: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PusherFile {
    user: UserFile,
    name: String,
    #[serde(default)]
    verified_emails: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateFile {
    ref_name: String,
    old_sha: String,
    new_sha: String,
    #[serde(default)]
    commits: Vec<CommitFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommitFile {
    sha: String,
    message: String,
    author_name: String,
    author_email: String,
    /// The author's, when not given.
    committer_name: Option<String>,
    committer_email: Option<String>,
    #[serde(default = "yes")]
    author_is_user: bool,
    #[serde(default = "yes")]
    committer_is_user: bool,
    /// `unsigned` (default), `verified` or `unverified`.
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    files: Vec<FileFile>,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileFile {
    path: String,
    #[serde(default)]
    content: String,
    /// New in this commit (default); `false`: changed.
    #[serde(default = "yes")]
    added: bool,
    #[serde(default)]
    deleted: bool,
}

/// A push to try: the input of `check-refs`, the commits of each update, and the blobs.
pub struct SamplePush {
    push: v0_2::Push,
    commits: Vec<Vec<v0_2::Commit>>,
    blobs: SampleBlobs,
}

/// The sample's file contents by (synthetic) blob id.
struct SampleBlobs(HashMap<String, Vec<u8>>);

impl BlobSource for SampleBlobs {
    fn read_blob(&self, id: &str, max: usize) -> Result<Vec<u8>, String> {
        let blob = self
            .0
            .get(id)
            .ok_or_else(|| format!("no blob {id} in the sample push"))?;
        Ok(blob[..blob.len().min(max)].to_vec())
    }
}

impl PushFile {
    fn push(self) -> anyhow::Result<SamplePush> {
        let mut blobs = HashMap::new();
        let mut commits = Vec::new();
        let mut updates = Vec::new();
        for update in self.updates {
            let mut batch = Vec::new();
            for commit in update.commits {
                batch.push(commit.read(&mut blobs)?);
            }
            commits.push(batch);
            updates.push(v0_2::RefUpdate {
                ref_name: update.ref_name,
                old_sha: update.old_sha,
                new_sha: update.new_sha,
            });
        }
        let u = self.pusher.user;
        let push = v0_2::Push {
            project: v0_2::Project {
                id: self.project.id.max(0) as u64,
                visibility: match visibility(&self.project.visibility)? {
                    "public" => v0_2::Visibility::Public,
                    "internal" => v0_2::Visibility::Internal,
                    _ => v0_2::Visibility::Private,
                },
                path: self.project.path,
            },
            default_branch: self.default_branch,
            rule: self.rule.map(|r| v0_2::Rule {
                commit_message_regex: r.commit_message_regex,
                commit_message_negative_regex: r.commit_message_negative_regex,
                branch_name_regex: r.branch_name_regex,
                author_email_regex: r.author_email_regex,
                file_name_regex: r.file_name_regex,
                deny_delete_tag: r.deny_delete_tag,
                member_check: r.member_check,
                prevent_secrets: r.prevent_secrets,
                commit_committer_check: r.commit_committer_check,
                reject_unsigned_commits: r.reject_unsigned_commits,
                max_file_size: r.max_file_size,
            }),
            pusher: v0_2::Pusher {
                user: v0_2::User {
                    id: u.id.max(0) as u64,
                    username: u.username,
                    created_at: u.created_at.timestamp_millis(),
                    is_admin: u.is_admin,
                    external: u.external,
                },
                name: self.pusher.name,
                verified_emails: self.pusher.verified_emails,
            },
            updates,
        };
        Ok(SamplePush {
            push,
            commits,
            blobs: SampleBlobs(blobs),
        })
    }
}

impl CommitFile {
    fn read(self, blobs: &mut HashMap<String, Vec<u8>>) -> anyhow::Result<v0_2::Commit> {
        let signature = match self.signature.as_deref().unwrap_or("unsigned") {
            "unsigned" => v0_2::Signature::Unsigned,
            "verified" => v0_2::Signature::Verified,
            "unverified" => v0_2::Signature::Unverified,
            other => bail!("unknown signature {other:?} (unsigned, verified or unverified)"),
        };
        let files = self
            .files
            .into_iter()
            .map(|file| {
                let content = file.content.into_bytes();
                let blob_id = if file.deleted {
                    String::new()
                } else {
                    hex::encode(Sha256::digest(&content))[..40].to_string()
                };
                let size = if file.deleted {
                    0
                } else {
                    content.len() as u64
                };
                if !file.deleted {
                    blobs.insert(blob_id.clone(), content);
                }
                v0_2::ChangedFile {
                    path: file.path,
                    size,
                    added: file.added && !file.deleted,
                    deleted: file.deleted,
                    blob_id,
                }
            })
            .collect();
        Ok(v0_2::Commit {
            committer_name: self
                .committer_name
                .unwrap_or_else(|| self.author_name.clone()),
            committer_email: self
                .committer_email
                .unwrap_or_else(|| self.author_email.clone()),
            sha: self.sha,
            message: self.message,
            author_name: self.author_name,
            author_email: self.author_email,
            author_is_user: self.author_is_user,
            committer_is_user: self.committer_is_user,
            signature,
            files,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_reads_as_its_hook_input() {
        for hook in Hook::ALL {
            let text = sample(hook, &SampleUser::default());
            assert!(input(hook, &text).is_ok(), "{hook:?}: {text}");
        }
    }

    #[test]
    fn a_sample_push_answers_read_blob_from_its_files() {
        let Ok(Input::Push(sample)) = input(
            Hook::PushRules,
            &sample(Hook::PushRules, &SampleUser::default()),
        ) else {
            panic!("not a push");
        };
        let file = &sample.commits[0][0].files[0];
        assert_eq!(
            (file.path.as_str(), file.size, file.added),
            ("README.md", 10, true)
        );
        assert_eq!(
            sample.blobs.read_blob(&file.blob_id, 3),
            Ok(b"# P".to_vec())
        );
        assert!(sample.blobs.read_blob("0000", 3).is_err());
    }

    #[test]
    fn unknown_fields_and_values_are_refused() {
        assert!(
            input(
                Hook::WebhookFormatter,
                r#"{"event_name":"x","object_kind":"y","payload":{},"extra":1}"#
            )
            .is_err()
        );
        let text = sample(Hook::PushRules, &SampleUser::default())
            .replace("\"README.md\"", "\"README.md\", \"size\": 3");
        assert!(input(Hook::PushRules, &text).is_err());
    }
}
