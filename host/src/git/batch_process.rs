//! A long-lived `git cat-file --batch-command --buffer`, fed requests on stdin and read
//! back request by request. A push scan keeps its processes for the whole scan: starting one
//! per batch of commits cost more than the batch's work (`git::push_scan`).

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::error::{Error, Result};

const READ_BUFFER: usize = 64 * 1024;

/// One object of a `contents` answer: its id as git printed it, its type and its bytes (empty
/// when git answered `missing`).
pub struct Object<'a> {
    pub id: &'a str,
    pub kind: &'a str,
    pub body: &'a [u8],
    pub missing: bool,
}

/// A `cat-file --batch-command --buffer` process (killed when dropped).
pub struct BatchProcess {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl BatchProcess {
    /// Starts `cat-file --batch-command --buffer` with `git` (a command carrying the
    /// repository and environment).
    pub fn start(mut git: tokio::process::Command) -> Result<BatchProcess> {
        let mut child = git
            .args(["cat-file", "--batch-command", "--buffer"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(Error::io("running git cat-file"))?;
        Ok(BatchProcess {
            stdin: child.stdin.take().ok_or_else(broken_pipe)?,
            // Trees and commits arrive by the megabyte: fewer, larger reads.
            stdout: BufReader::with_capacity(
                READ_BUFFER,
                child.stdout.take().ok_or_else(broken_pipe)?,
            ),
            _child: child,
        })
    }

    /// `contents` of each of `objects` (ids or revision expressions such as `<id>^{tree}`),
    /// in order: each answer is a header line, then the object's bytes and a newline unless
    /// it is missing. Returns the raw answers, for [`objects`].
    pub async fn contents(&mut self, objects: &[impl AsRef<str>]) -> Result<Vec<u8>> {
        self.ask("contents", objects, true).await
    }

    /// `info` of each of `objects`: one `<id> <type> <size>` (or `<name> missing`) line each.
    pub async fn info(&mut self, objects: &[impl AsRef<str>]) -> Result<Vec<u8>> {
        self.ask("info", objects, false).await
    }

    /// Writes the requests while reading their answers (git answers before it has read
    /// everything, and a large request must not block on a full output pipe).
    async fn ask(
        &mut self,
        command: &str,
        objects: &[impl AsRef<str>],
        with_bodies: bool,
    ) -> Result<Vec<u8>> {
        if objects.is_empty() {
            return Ok(Vec::new());
        }
        let mut input = String::with_capacity(objects.len() * (command.len() + 66) + 6);
        for object in objects {
            input.push_str(command);
            input.push(' ');
            input.push_str(object.as_ref());
            input.push('\n');
        }
        input.push_str("flush\n");
        let BatchProcess { stdin, stdout, .. } = self;
        let write = async {
            stdin.write_all(input.as_bytes()).await?;
            stdin.flush().await
        };
        let read = async {
            let mut out = Vec::new();
            for _ in 0..objects.len() {
                let start = out.len();
                if stdout.read_until(b'\n', &mut out).await? == 0 {
                    return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
                }
                let Some(size) = with_bodies.then(|| header_size(&out[start..])).flatten() else {
                    continue;
                };
                // Read into spare capacity: zero-filling the tens of megabytes of trees a
                // large push's scan reads first showed in its profile (`memset`).
                let wanted = size as u64 + 1;
                out.reserve(size + 1);
                if (&mut *stdout).take(wanted).read_to_end(&mut out).await? as u64 != wanted {
                    return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
                }
            }
            Ok(out)
        };
        let (written, out) = tokio::join!(write, read);
        written.map_err(Error::io("writing to git cat-file"))?;
        out.map_err(Error::io("reading git cat-file"))
    }
}

/// The id, type and size in a `<id> <type> <size>\n` header; `None` for `<name> missing`
/// (and anything else git may say of an object it cannot show).
fn parse_header(header: &[u8]) -> Option<(&str, &str, usize)> {
    let header = std::str::from_utf8(header).ok()?.trim_end();
    let mut parts = header.split(' ');
    let (id, kind, size) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || kind == "missing" {
        return None;
    }
    Some((id, kind, size.parse().ok()?))
}

fn header_size(header: &[u8]) -> Option<usize> {
    parse_header(header).map(|(_, _, size)| size)
}

/// The objects of a [`BatchProcess::contents`] answer, in order.
pub fn objects(raw: &[u8]) -> Vec<Object<'_>> {
    let mut objects = Vec::new();
    let mut rest = raw;
    while let Some(end) = memchr::memchr(b'\n', rest) {
        let header = &rest[..end];
        rest = &rest[end + 1..];
        match parse_header(header) {
            Some((id, kind, size)) if size <= rest.len() => {
                objects.push(Object {
                    id,
                    kind,
                    body: &rest[..size],
                    missing: false,
                });
                rest = rest.get(size + 1..).unwrap_or_default();
            }
            _ => objects.push(Object {
                id: std::str::from_utf8(header)
                    .unwrap_or_default()
                    .split(' ')
                    .next()
                    .unwrap_or_default(),
                kind: "",
                body: &[],
                missing: true,
            }),
        }
    }
    objects
}

/// A git process whose pipes are gone.
pub(super) fn broken_pipe() -> Error {
    Error::io("talking to git")(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_split_into_objects_and_missing_ones() {
        let raw = b"aaaa commit 3\nabc\nbbbb missing\ncccc tree 2\n\x00\n\n";
        let parsed = objects(raw);
        assert_eq!(parsed.len(), 3);
        assert_eq!((parsed[0].id, parsed[0].kind), ("aaaa", "commit"));
        assert_eq!(parsed[0].body, b"abc");
        assert!(parsed[1].missing && parsed[1].id == "bbbb");
        assert_eq!(parsed[2].body, b"\x00\n");
    }

    #[test]
    fn a_header_gives_its_size_unless_missing() {
        assert_eq!(header_size(b"abc blob 12\n"), Some(12));
        assert_eq!(header_size(b"abc missing\n"), None);
        assert_eq!(header_size(b"HEAD:x ambiguous\n"), None);
    }
}
