//! Branches, tags and revisions. Names from callers are checked before git sees them: a
//! [`Revision`] never starts with `-` (no option injection) nor names a range or a path, and
//! new branch and tag names follow `git check-ref-format`'s rules ([`valid_ref_name`]).
//! [`Repository::update_ref`] moves one ref with compare-and-swap.

use std::collections::HashSet;

use super::commits::{self, Commit};
use super::process::{answer, git, run};
use super::{Error, Repository, Result, text};

/// A revision a caller named (a branch, a tag, a commit id, `HEAD~2`...), safe to hand to git:
/// not empty, no leading `-`, no whitespace or control characters, no `..` ranges and no
/// `:` (which would name a path inside a tree).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision(String);

impl Revision {
    pub fn parse(name: &str) -> Option<Revision> {
        let safe = !name.is_empty()
            && name.len() <= 1024
            && !name.starts_with('-')
            && !name.contains("..")
            && !name.contains(':')
            && !name.chars().any(|c| c.is_whitespace() || c.is_control());
        safe.then(|| Revision(name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether `name` is valid as a branch or tag name: `git check-ref-format`'s rules for
/// `refs/heads/<name>`, plus GitLab's refusals of names git would misread (a leading `-`,
/// `HEAD`, and a 40-hex-digit name that would shadow commit ids).
pub fn valid_ref_name(name: &str) -> bool {
    let components_ok = name
        .split('/')
        .all(|part| !part.is_empty() && !part.starts_with('.') && !part.ends_with(".lock"));
    let chars_ok = !name.chars().any(|c| {
        c.is_control() || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\' | '\x7f')
    });
    let looks_like_sha = name.len() == 40 && name.bytes().all(|b| b.is_ascii_hexdigit());
    components_ok
        && chars_ok
        && !looks_like_sha
        && name != "@"
        && name != "HEAD"
        && !name.starts_with('-')
        && !name.ends_with('.')
        && !name.contains("..")
        && !name.contains("@{")
        && name.len() <= 255
}

/// A branch and the commit it points at.
#[derive(Debug, Clone)]
pub struct Branch {
    pub name: String,
    pub commit: Commit,
}

/// A tag: `target` is what the ref points at (a tag object for annotated tags, else the
/// commit); `message` and `created_at` (the tagger's date) only for annotated tags.
#[derive(Debug, Clone)]
pub struct Tag {
    pub name: String,
    pub target: String,
    pub message: String,
    pub created_at: Option<String>,
    pub commit: Commit,
}

/// The tagger of an annotated tag.
pub struct Tagger<'a> {
    pub name: &'a str,
    pub email: &'a str,
    /// Seconds since the epoch.
    pub time: i64,
}

/// Commit fields for `for-each-ref`, in the order [`commits::parse`] reads them: the peeled
/// object's (`*field`) for annotated tags, the ref's own object's otherwise.
fn commit_fields() -> String {
    [
        "objectname",
        "parent",
        "authorname",
        "authoremail:trim",
        "authordate:iso-strict",
        "committername",
        "committeremail:trim",
        "committerdate:iso-strict",
        "contents",
    ]
    .map(|field| format!("%(if)%(*objectname)%(then)%(*{field})%(else)%({field})%(end)"))
    .join("\x1f")
}

impl Repository {
    /// The commit id `revision` resolves to, if it names a commit (tags are peeled).
    pub async fn resolve_commit(&self, revision: &Revision) -> Result<Option<String>> {
        let peeled = format!("{}^{{commit}}", revision.as_str());
        let out = answer(
            Some(&self.path),
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &peeled,
            ],
        )
        .await?;
        Ok(out.map(|o| text(&o)).filter(|id| !id.is_empty()))
    }

    /// The object a full ref name points at (`refs/heads/x`), if it exists.
    pub async fn ref_target(&self, full_name: &str) -> Result<Option<String>> {
        let out = git(
            Some(&self.path),
            &["for-each-ref", "--format=%(objectname)", full_name],
        )
        .await?;
        Ok(text(&out)
            .lines()
            .next()
            .map(str::to_string)
            .filter(|id| !id.is_empty()))
    }

    /// Every branch with its commit, sorted by name.
    pub async fn branch_list(&self) -> Result<Vec<Branch>> {
        let format = format!("--format=%(refname:lstrip=2)\x1f{}\x1e", commit_fields());
        let out = git(Some(&self.path), &["for-each-ref", &format, "refs/heads"]).await?;
        Ok(named_records(&out)
            .into_iter()
            .map(|(name, commit)| Branch { name, commit })
            .collect())
    }

    /// Branch names whose tips are in `target`'s history (`target` included).
    pub async fn merged_into(&self, target: &str) -> Result<HashSet<String>> {
        let merged = format!("--merged={target}");
        let out = git(
            Some(&self.path),
            &[
                "for-each-ref",
                &merged,
                "--format=%(refname:lstrip=2)",
                "refs/heads",
            ],
        )
        .await?;
        Ok(text(&out).lines().map(str::to_string).collect())
    }

    /// Every tag with its commit, sorted by name; tags that point at something other than
    /// a commit are left out.
    pub async fn tag_list(&self) -> Result<Vec<Tag>> {
        let format = format!(
            "--format=%(refname:lstrip=2)\x1f%(objectname)\x1f%(objecttype)\x1f%(contents)\x1f%(taggerdate:iso-strict)\x1f{}\x1e",
            commit_fields()
        );
        let out = git(Some(&self.path), &["for-each-ref", &format, "refs/tags"]).await?;
        let mut tags = Vec::new();
        for record in String::from_utf8_lossy(&out).split('\x1e') {
            let record = record.trim_start_matches('\n');
            let fields: Vec<&str> = record.splitn(6, '\x1f').collect();
            let [name, target, kind, message, date, commit] = fields.as_slice() else {
                continue;
            };
            let Some(commit) = commits::parse(commit.as_bytes()).into_iter().next() else {
                continue;
            };
            if commit.id.is_empty() || commit.committed_date.is_empty() {
                continue;
            }
            let annotated = *kind == "tag";
            tags.push(Tag {
                name: name.to_string(),
                target: target.to_string(),
                message: if annotated {
                    message.trim_end().to_string()
                } else {
                    String::new()
                },
                created_at: annotated
                    .then(|| date.to_string())
                    .filter(|d| !d.is_empty()),
                commit,
            });
        }
        Ok(tags)
    }

    /// The message of the annotated tag `full_name` names; `None` for a lightweight tag.
    pub async fn tag_message(&self, full_name: &str) -> Result<Option<String>> {
        let format = "--format=%(objecttype)\x1f%(contents)";
        let out = git(Some(&self.path), &["for-each-ref", format, full_name]).await?;
        let out = String::from_utf8_lossy(&out);
        Ok(out
            .split_once('\x1f')
            .filter(|(kind, _)| *kind == "tag")
            .map(|(_, message)| message.trim_end().to_string()))
    }

    /// Writes an annotated tag object for `commit` and returns its id (no ref is made).
    pub async fn make_tag_object(
        &self,
        name: &str,
        commit: &str,
        message: &str,
        tagger: &Tagger<'_>,
    ) -> Result<String> {
        let mut body = format!(
            "object {commit}\ntype commit\ntag {name}\ntagger {} <{}> {} +0000\n\n{}",
            tagger.name.replace(['<', '>', '\n'], ""),
            tagger.email.replace(['<', '>', '\n'], ""),
            tagger.time,
            message
        );
        if !body.ends_with('\n') {
            body.push('\n');
        }
        let out = run(Some(&self.path), &["mktag"], body.as_bytes(), &[]).await?;
        Ok(text(&out))
    }

    /// Points `full_name` at `new`, whatever it pointed at: for refs the server keeps for
    /// itself (a merge request's head), never for branches and tags.
    pub async fn set_ref(&self, full_name: &str, new: &str) -> Result<()> {
        git(
            Some(&self.path),
            &["update-ref", "--no-deref", "--", full_name, new],
        )
        .await
        .map(|_| ())
    }

    /// Moves `full_name` from `old` to `new` atomically: `None` as `new` deletes it, `None`
    /// as `old` requires that it does not exist yet. Fails with [`Error::RefMoved`] when the
    /// ref is not at `old` any more (someone else changed it first).
    pub async fn update_ref(
        &self,
        full_name: &str,
        new: Option<&str>,
        old: Option<&str>,
    ) -> Result<()> {
        const ZERO: &str = "0000000000000000000000000000000000000000";
        let old = old.unwrap_or(ZERO);
        let args: Vec<&str> = match new {
            Some(new) => vec!["update-ref", "--no-deref", "--", full_name, new, old],
            None => vec!["update-ref", "--no-deref", "-d", "--", full_name, old],
        };
        match git(Some(&self.path), &args).await {
            Ok(_) => Ok(()),
            Err(Error::Failed { stderr, .. })
                if stderr.contains("but expected")
                    || stderr.contains("reference already exists")
                    || stderr.contains("unable to resolve reference")
                    || stderr.contains("cannot lock ref") =>
            {
                Err(Error::RefMoved(full_name.to_string()))
            }
            Err(error) => Err(error),
        }
    }
}

/// `name\x1f<commit fields>\x1e` records.
fn named_records(out: &[u8]) -> Vec<(String, Commit)> {
    String::from_utf8_lossy(out)
        .split('\x1e')
        .filter_map(|record| {
            let record = record.trim_start_matches('\n');
            let (name, commit) = record.split_once('\x1f')?;
            let commit = commits::parse(commit.as_bytes()).into_iter().next()?;
            Some((name.to_string(), commit))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_names_follow_check_ref_format() {
        for ok in [
            "main",
            "feature/x",
            "v1.0",
            "release-2026",
            "a@b",
            "ünïcode",
        ] {
            assert!(valid_ref_name(ok), "{ok}");
        }
        for bad in [
            "",
            "-x",
            "--upload-pack=x",
            "a..b",
            "a b",
            "a~1",
            "a^",
            "a:b",
            "a?",
            "a*",
            "a[",
            "a\\b",
            "a\x01",
            "/a",
            "a/",
            "a//b",
            ".a",
            "a/.b",
            "a.lock",
            "a.",
            "@",
            "HEAD",
            "a@{1}",
            "0123456789012345678901234567890123456789",
        ] {
            assert!(!valid_ref_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn revisions_refuse_options_ranges_and_paths() {
        for ok in ["main", "v1.0", "HEAD~2", "abc123", "feature/x", "main^"] {
            assert!(Revision::parse(ok).is_some(), "{ok}");
        }
        for bad in [
            "",
            "-n",
            "--output=/tmp/x",
            "a..b",
            "main:README",
            "a b",
            "a\nb",
        ] {
            assert!(Revision::parse(bad).is_none(), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn branches_tags_and_compare_and_swap() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::project(dir.path(), 1, 1);
        repo.create("main").await.unwrap();
        let author = super::super::Author {
            name: "Ada",
            email: "ada@example.com",
        };
        let first = repo
            .commit_file("main", "a.txt", b"a\n", "First\n\nbody", &author)
            .await
            .unwrap();
        let branches = repo.branch_list().await.unwrap();
        assert_eq!(branches.len(), 1);
        assert_eq!(branches[0].commit.id, first);
        assert_eq!(branches[0].commit.title(), "First");
        assert_eq!(branches[0].commit.author_email, "ada@example.com");

        repo.update_ref("refs/heads/dev", Some(&first), None)
            .await
            .unwrap();
        assert!(matches!(
            repo.update_ref("refs/heads/dev", Some(&first), None).await,
            Err(Error::RefMoved(_))
        ));
        let tagger = Tagger {
            name: "Ada",
            email: "ada@example.com",
            time: 1_700_000_000,
        };
        let object = repo
            .make_tag_object("v1", &first, "Release", &tagger)
            .await
            .unwrap();
        repo.update_ref("refs/tags/v1", Some(&object), None)
            .await
            .unwrap();
        repo.update_ref("refs/tags/light", Some(&first), None)
            .await
            .unwrap();
        let tags = repo.tag_list().await.unwrap();
        assert_eq!(tags.len(), 2);
        let light = tags.iter().find(|t| t.name == "light").unwrap();
        assert!(light.message.is_empty() && light.created_at.is_none());
        let v1 = tags.iter().find(|t| t.name == "v1").unwrap();
        assert_eq!(v1.target, object);
        assert_eq!(v1.commit.id, first);
        assert_eq!(v1.message, "Release");
        assert!(v1.created_at.is_some());

        let v1 = Revision::parse("v1").unwrap();
        assert_eq!(repo.resolve_commit(&v1).await.unwrap(), Some(first.clone()));
        let missing = Revision::parse("nope").unwrap();
        assert_eq!(repo.resolve_commit(&missing).await.unwrap(), None);
        assert_eq!(repo.merged_into("main").await.unwrap().len(), 2);
        repo.update_ref("refs/heads/dev", None, Some(&first))
            .await
            .unwrap();
        assert_eq!(repo.ref_target("refs/heads/dev").await.unwrap(), None);
    }
}
