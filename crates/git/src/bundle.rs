//! Backups of repositories as bundles: `git bundle create --all` writes every ref and the
//! objects they reach as one file, consistent while pushes land (the refs are read once and
//! the pack is made from them), and a bundle is fetched back into a new bare repository.
//! A bundle carries no HEAD symbolic ref, so the backup keeps it beside the bundle.

use std::path::{Path, PathBuf};

use super::process::git;
use super::{Error, Repository, Result, text};

/// The repositories of a data directory's `repositories/` folder: every `*.git` directory
/// of every tenant's folder, sorted by path.
pub fn list(repositories: &Path) -> Result<Vec<Repository>> {
    let mut found = Vec::new();
    let tenants = match std::fs::read_dir(repositories) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(found),
        Err(error) => {
            return Err(Error::io(format!("reading {}", repositories.display()))(
                error,
            ));
        }
    };
    for tenant in tenants {
        let tenant = tenant.map_err(Error::io("reading the repositories folder"))?;
        if tenant.path().is_dir() {
            found.extend(list_tenant(&tenant.path())?);
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// The repositories of one tenant's folder (`repositories/<tenant>`), sorted by path.
pub fn list_tenant(folder: &Path) -> Result<Vec<Repository>> {
    let mut found = Vec::new();
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(found),
        Err(error) => return Err(Error::io(format!("reading {}", folder.display()))(error)),
    };
    for entry in entries {
        let path: PathBuf = entry
            .map_err(Error::io("reading a tenant's repositories"))?
            .path();
        if path.extension().is_some_and(|ext| ext == "git") && path.join("HEAD").is_file() {
            found.push(Repository { path });
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

impl Repository {
    /// A repository at `path` (one [`list`] found, or where a backup puts one back).
    pub fn at(path: PathBuf) -> Repository {
        Repository { path }
    }

    /// The ref HEAD points at (`refs/heads/main`).
    pub async fn head_ref(&self) -> Result<String> {
        let out = git(Some(&self.path), &["symbolic-ref", "HEAD"]).await?;
        Ok(text(&out))
    }

    /// Writes every ref and the objects they reach to the bundle `file`; false (and no file)
    /// when the repository has no ref, which git cannot bundle.
    pub async fn bundle(&self, file: &Path) -> Result<bool> {
        let any = git(
            Some(&self.path),
            &["for-each-ref", "--count=1", "--format=%(refname)"],
        )
        .await?;
        if any.is_empty() {
            return Ok(false);
        }
        let file = file.to_string_lossy();
        git(
            Some(&self.path),
            &["bundle", "create", "--quiet", &file, "--all"],
        )
        .await?;
        Ok(true)
    }

    /// Makes this (absent) repository anew with HEAD on `head` and, from `bundle`, every ref
    /// the bundle holds.
    pub async fn restore(&self, bundle: Option<&Path>, head: &str) -> Result<()> {
        let branch = head.strip_prefix("refs/heads/").unwrap_or(head);
        self.create(branch).await?;
        if let Some(bundle) = bundle {
            let source = bundle.to_string_lossy();
            git(
                Some(&self.path),
                &[
                    "fetch",
                    "--quiet",
                    "--no-write-fetch-head",
                    "--",
                    &source,
                    "+refs/*:refs/*",
                ],
            )
            .await?;
        }
        git(Some(&self.path), &["symbolic-ref", "HEAD", head]).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Author;

    #[tokio::test]
    async fn a_bundle_restores_every_ref_and_head() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::project(dir.path(), 1, 7);
        repo.create("trunk").await.unwrap();
        let empty = Repository::project(dir.path(), 1, 8);
        empty.create("main").await.unwrap();
        let author = Author {
            name: "Ada",
            email: "ada@example.com",
        };
        repo.commit_file("trunk", "a.txt", b"a\n", "one", &author)
            .await
            .unwrap();
        repo.commit_file("side", "b.txt", b"b\n", "two", &author)
            .await
            .unwrap();
        let found = list(&dir.path().join("repositories")).unwrap();
        assert_eq!(found.len(), 2);

        let file = dir.path().join("7.bundle");
        assert!(repo.bundle(&file).await.unwrap());
        assert!(!empty.bundle(&dir.path().join("8.bundle")).await.unwrap());
        let copy = Repository::project(&dir.path().join("copy"), 1, 7);
        copy.restore(Some(&file), &repo.head_ref().await.unwrap())
            .await
            .unwrap();
        let refs = |r: &Repository| {
            let path = r.path.clone();
            async move {
                git(
                    Some(&path),
                    &["for-each-ref", "--format=%(objectname) %(refname)"],
                )
                .await
                .unwrap()
            }
        };
        assert_eq!(refs(&copy).await, refs(&repo).await);
        assert_eq!(copy.head_ref().await.unwrap(), "refs/heads/trunk");
        assert!(copy.restore(Some(&file), "refs/heads/trunk").await.is_err());
    }
}
