//! A long-lived `git cat-file --batch-command --buffer`, fed requests on stdin and read
//! back request by request. A push scan keeps its processes for the whole scan: starting one
//! per batch of commits cost more than the batch's work (`git::push_scan`).

use std::ops::Range;
use std::process::Stdio;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::error::{Error, Result};

const READ_BUFFER: usize = 64 * 1024;

/// One object of an answer: its id as git printed it, its type, its size, and its bytes
/// (empty for `info`, and when git answered `missing`).
pub struct Object<'a> {
    pub id: &'a str,
    pub kind: &'a str,
    pub size: u64,
    pub body: &'a [u8],
    pub missing: bool,
}

/// What git answered to one batch of requests: the bytes as read, and where each object's id,
/// type and body lie in them, found while reading (each header is parsed once).
#[derive(Default)]
pub struct Answers {
    raw: Vec<u8>,
    spans: Vec<Span>,
}

struct Span {
    id: Range<usize>,
    kind: Range<usize>,
    size: u64,
    body: Range<usize>,
    missing: bool,
}

impl Answers {
    /// The objects, in the order they were asked for.
    pub fn objects(&self) -> impl Iterator<Item = Object<'_>> {
        let text = |range: &Range<usize>| {
            std::str::from_utf8(&self.raw[range.clone()]).unwrap_or_default()
        };
        self.spans.iter().map(move |span| Object {
            id: text(&span.id),
            kind: text(&span.kind),
            size: span.size,
            body: &self.raw[span.body.clone()],
            missing: span.missing,
        })
    }

    /// How many bytes git sent.
    pub fn bytes(&self) -> usize {
        self.raw.len()
    }
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
    /// in order.
    pub async fn contents(&mut self, objects: &[impl AsRef<str>]) -> Result<Answers> {
        self.ask("contents", objects, true).await
    }

    /// `info` of each of `objects`, in order: ids, types and sizes, no bodies.
    pub async fn info(&mut self, objects: &[impl AsRef<str>]) -> Result<Answers> {
        self.ask("info", objects, false).await
    }

    /// Writes the requests while reading their answers (git answers before it has read
    /// everything, and a large request must not block on a full output pipe).
    async fn ask(
        &mut self,
        command: &str,
        objects: &[impl AsRef<str>],
        with_bodies: bool,
    ) -> Result<Answers> {
        if objects.is_empty() {
            return Ok(Answers::default());
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
        let (written, answers) =
            tokio::join!(write, read_answers(stdout, objects.len(), with_bodies));
        written.map_err(Error::io("writing to git cat-file"))?;
        answers.map_err(Error::io("reading git cat-file"))
    }
}

/// `count` answers from `stdout`: each a header line (`<id> <type> <size>`, or `<name>
/// missing`), then, `with_bodies` and unless missing, the object's bytes and a newline.
async fn read_answers(
    stdout: &mut (impl AsyncBufRead + Unpin),
    count: usize,
    with_bodies: bool,
) -> std::io::Result<Answers> {
    let mut answers = Answers {
        raw: Vec::new(),
        spans: Vec::with_capacity(count),
    };
    let raw = &mut answers.raw;
    for _ in 0..count {
        let start = raw.len();
        if stdout.read_until(b'\n', raw).await? == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        }
        let Some((id_len, kind_len, size)) = parse_header(&raw[start..]) else {
            let name = raw[start..]
                .iter()
                .position(|b| matches!(b, b' ' | b'\n'))
                .unwrap_or(raw.len() - start);
            answers.spans.push(Span {
                id: start..start + name,
                kind: start..start,
                size: 0,
                body: start..start,
                missing: true,
            });
            continue;
        };
        let kind = start + id_len + 1..start + id_len + 1 + kind_len;
        let body = raw.len();
        if with_bodies {
            // Read into spare capacity: zero-filling the tens of megabytes of trees a large
            // push's scan reads first showed in its profile (`memset`).
            let wanted = size + 1;
            raw.reserve(usize::try_from(wanted).map_err(std::io::Error::other)?);
            if (&mut *stdout).take(wanted).read_to_end(raw).await? as u64 != wanted {
                return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
            }
        }
        answers.spans.push(Span {
            id: start..start + id_len,
            kind,
            size,
            body: if with_bodies {
                body..raw.len() - 1
            } else {
                body..body
            },
            missing: false,
        });
    }
    Ok(answers)
}

/// A `<id> <type> <size>\n` header: the lengths of the id and the type, and the size; `None`
/// for `<name> missing` (and anything else git may say of an object it cannot show).
fn parse_header(header: &[u8]) -> Option<(usize, usize, u64)> {
    let header = std::str::from_utf8(header).ok()?.trim_end();
    let mut parts = header.split(' ');
    let (id, kind, size) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || kind == "missing" {
        return None;
    }
    Some((id.len(), kind.len(), size.parse().ok()?))
}

/// A git process whose pipes are gone.
pub(super) fn broken_pipe() -> Error {
    Error::io("talking to git")(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_split_into_objects_and_missing_ones() {
        let raw = b"aaaa commit 3\nabc\nbbbb missing\ncccc tree 2\n\x00\n\n";
        let answers = read_answers(&mut &raw[..], 3, true).await.unwrap();
        let parsed: Vec<Object<'_>> = answers.objects().collect();
        assert_eq!(parsed.len(), 3);
        assert_eq!((parsed[0].id, parsed[0].kind), ("aaaa", "commit"));
        assert_eq!(parsed[0].body, b"abc");
        assert!(parsed[1].missing && parsed[1].id == "bbbb");
        assert_eq!(parsed[2].body, b"\x00\n");
    }

    #[tokio::test]
    async fn info_answers_carry_sizes_and_no_bodies() {
        let raw = b"aaaa blob 12\nHEAD:x ambiguous\n";
        let answers = read_answers(&mut &raw[..], 2, false).await.unwrap();
        let parsed: Vec<Object<'_>> = answers.objects().collect();
        assert_eq!(
            (parsed[0].id, parsed[0].kind, parsed[0].size),
            ("aaaa", "blob", 12)
        );
        assert!(parsed[0].body.is_empty() && !parsed[0].missing);
        assert!(parsed[1].missing && parsed[1].id == "HEAD:x");
    }

    #[tokio::test]
    async fn a_short_answer_is_an_error() {
        let raw = b"aaaa blob 12\nabc";
        assert!(read_answers(&mut &raw[..], 1, true).await.is_err());
    }

    #[test]
    fn a_header_gives_its_size_unless_missing() {
        let header_size = |header: &[u8]| parse_header(header).map(|(_, _, size)| size);
        assert_eq!(header_size(b"abc blob 12\n"), Some(12));
        assert_eq!(header_size(b"abc missing\n"), None);
        assert_eq!(header_size(b"HEAD:x ambiguous\n"), None);
    }
}
