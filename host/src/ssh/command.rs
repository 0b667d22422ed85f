//! The command an SSH client asks to run. Git sends `git-upload-pack '<path>'` (fetch, clone),
//! `git-receive-pack '<path>'` (push) or `git-upload-archive '<path>'` (`git archive
//! --remote`), the path shell-quoted as git's `sq_quote` writes it; anything else, and any
//! path that is not a plain project path, is refused, so no text of the client's ever reaches
//! a shell or names a file.

use crate::git::smart_http::Service;
use crate::git_access;

/// GitLab Shell's answer to a command it does not run.
pub const DISALLOWED: &str = "Disallowed command";

/// The git programs GitLab Shell runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// A fetch or a push: the services smart HTTP serves too.
    Pack(Service),
    /// `git archive --remote`, which GitLab serves over SSH only.
    UploadArchive,
}

impl Program {
    fn from_name(name: &str) -> Option<Program> {
        match name {
            "git-upload-archive" => Some(Program::UploadArchive),
            _ => Service::from_name(name).map(Program::Pack),
        }
    }

    /// The service whose access rules apply: an archive reads the repository, so it needs
    /// what a fetch needs (GitLab's `GitAccess::DOWNLOAD_COMMANDS` holds both).
    pub fn access(self) -> Service {
        match self {
            Program::Pack(service) => service,
            Program::UploadArchive => Service::UploadPack,
        }
    }
}

/// A git program on a project path (without leading `/` or trailing `.git`).
#[derive(Debug, PartialEq, Eq)]
pub struct GitCommand {
    pub program: Program,
    pub project: String,
}

/// The git program `command` asks for, if it is one and names a plausible project path.
pub fn parse(command: &[u8]) -> Option<GitCommand> {
    let command = std::str::from_utf8(command).ok()?;
    let (name, argument) = command.split_once(' ')?;
    let program = Program::from_name(name)?;
    let path = unquote(argument)?;
    let path = path.strip_prefix('/').unwrap_or(&path);
    let project = path.strip_suffix(".git").unwrap_or(path);
    git_access::plain_project_path(project).then(|| GitCommand {
        program,
        project: project.to_string(),
    })
}

/// The word `argument` is: one single-quoted string as git's `sq_quote` writes it (`'` and `!`
/// leave the quotes as `'\''` and `'\!'`), or a bare word of path characters.
fn unquote(argument: &str) -> Option<String> {
    let Some(mut rest) = argument.strip_prefix('\'') else {
        let bare = !argument.is_empty()
            && argument
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-./".contains(&b));
        return bare.then(|| argument.to_string());
    };
    let mut word = String::new();
    loop {
        let end = rest.find('\'')?;
        word.push_str(&rest[..end]);
        rest = &rest[end + 1..];
        if rest.is_empty() {
            return Some(word);
        }
        // Between two quoted parts only an escaped `'` or `!` may stand.
        let escaped = rest
            .strip_prefix("\\'\'")
            .map(|r| ('\'', r))
            .or_else(|| rest.strip_prefix("\\!\'").map(|r| ('!', r)))?;
        word.push(escaped.0);
        rest = escaped.1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(command: &str) -> Option<(Program, String)> {
        parse(command.as_bytes()).map(|c| (c.program, c.project))
    }

    #[test]
    fn git_commands_name_a_program_and_a_project() {
        let upload = Some((
            Program::Pack(Service::UploadPack),
            "group/project".to_string(),
        ));
        assert_eq!(project("git-upload-pack '/group/project.git'"), upload);
        assert_eq!(project("git-upload-pack 'group/project.git'"), upload);
        assert_eq!(project("git-upload-pack 'group/project'"), upload);
        assert_eq!(project("git-upload-pack group/project.git"), upload);
        assert_eq!(
            project("git-receive-pack '/a/b/c.git'"),
            Some((Program::Pack(Service::ReceivePack), "a/b/c".to_string()))
        );
        // `git archive --remote`: ssh:// URLs send the path with its `/`, scp-like ones without.
        let archive = Some((Program::UploadArchive, "group/project".to_string()));
        assert_eq!(project("git-upload-archive '/group/project.git'"), archive);
        assert_eq!(project("git-upload-archive 'group/project.git'"), archive);
    }

    #[test]
    fn an_archive_needs_what_a_fetch_needs() {
        assert_eq!(Program::UploadArchive.access(), Service::UploadPack);
        for service in [Service::UploadPack, Service::ReceivePack] {
            assert_eq!(Program::Pack(service).access(), service);
        }
    }

    #[test]
    fn anything_else_is_refused() {
        for command in [
            "",
            "ls",
            "git-upload-pack",
            "git-upload-archive",
            "git-upload-archive '../a/b.git'",
            "git-upload-archive 'a/b.git' --exec=x",
            "git-upload-archive--writer 'a/b.git'",
            "git-upload-pack  'a/b.git'",
            "git-upload-pack 'a/b.git",
            "git-upload-pack 'a/b.git' x",
            "git-upload-pack 'a/b.git'; rm -rf /",
            "git-upload-pack '../a/b.git'",
            "git-upload-pack 'a/../b.git'",
            "git-upload-pack 'a//b.git'",
            "git-upload-pack 'b.git'",
            "git-upload-pack '~/a/b.git'",
            "git-upload-pack 'a/b'\\''c.git'",
            "git-upload-pack a/b$(x).git",
            "git-receive-pack '/a/b.git/'",
        ] {
            assert_eq!(project(command), None, "{command}");
        }
        assert_eq!(parse(b"git-upload-pack '\xff/b'"), None);
    }

    #[test]
    fn quoting_is_undone_as_git_writes_it() {
        assert_eq!(unquote("'a'\\''b'").as_deref(), Some("a'b"));
        assert_eq!(unquote("'a'\\!'b'").as_deref(), Some("a!b"));
        assert_eq!(unquote("'a'b'"), None);
        assert_eq!(unquote("'a'\\x'b'"), None);
    }
}
