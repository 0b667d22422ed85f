//! Reading a push's reference updates off the bytes a transport copies into `git
//! receive-pack`, as they pass: the command list comes first (`old new ref` packets up to a
//! flush), then the pack. Knowing the updates before git does lets push rules start on the
//! pushed objects as soon as git has indexed them (`services::push_prescan`), instead of
//! waiting for the `pre-receive` hook.
//!
//! The tap never changes what git reads: it copies at most [`MAX_COMMANDS_BYTES`] of the
//! stream aside and gives up quietly on anything it does not understand (a shallow push's
//! `shallow` lines, an oversized list), leaving the push to the hook alone.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;

use super::pktline;
use super::receive::RefUpdate;

/// The most of a push's first bytes kept while looking for the end of its command list
/// (about 40,000 updates).
pub const MAX_COMMANDS_BYTES: usize = 4 * 1024 * 1024;

/// Told the reference updates once the command list has passed.
pub type OnCommands = Box<dyn FnOnce(Vec<RefUpdate>) + Send>;

/// Parses the command list out of the bytes fed to it.
pub struct CommandsTap {
    seen: Vec<u8>,
    /// Where the first packet not yet looked at starts in `seen` (each byte is looked at
    /// once, however the stream is cut).
    scanned: usize,
    on_commands: Option<OnCommands>,
}

impl CommandsTap {
    pub fn new(on_commands: OnCommands) -> CommandsTap {
        CommandsTap {
            seen: Vec::new(),
            scanned: 0,
            on_commands: Some(on_commands),
        }
    }

    /// The next bytes on their way to git.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.on_commands.is_none() || bytes.is_empty() {
            return;
        }
        let room = MAX_COMMANDS_BYTES.saturating_sub(self.seen.len());
        self.seen.extend_from_slice(&bytes[..bytes.len().min(room)]);
        let ended = loop {
            match pktline::parse(&self.seen[self.scanned..]) {
                Ok(Some((pktline::Packet::Flush, _))) => break true,
                Ok(Some((_, used))) => self.scanned += used,
                Ok(None) if self.seen.len() < MAX_COMMANDS_BYTES => return,
                _ => break false,
            }
        };
        match pktline::receive_commands(&self.seen).ok().flatten() {
            Some((updates, _, _)) if ended => {
                self.done();
                if let Some(on_commands) = self.on_commands.take() {
                    on_commands(updates);
                }
            }
            _ => {
                self.on_commands = None;
                self.done();
            }
        }
    }

    fn done(&mut self) {
        self.seen = Vec::new();
        self.scanned = 0;
    }
}

/// A writer into git's stdin that shows what passes to a [`CommandsTap`], if any.
pub struct TappedWriter<W> {
    inner: W,
    tap: Option<CommandsTap>,
}

impl<W> TappedWriter<W> {
    pub fn new(inner: W, tap: Option<CommandsTap>) -> TappedWriter<W> {
        TappedWriter { inner, tap }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for TappedWriter<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        let written = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let (Poll::Ready(Ok(n)), Some(tap)) = (&written, &mut this.tap) {
            tap.feed(&buf[..*n]);
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio::io::AsyncWriteExt;

    use super::*;

    fn recording() -> (CommandsTap, Arc<Mutex<Option<Vec<RefUpdate>>>>) {
        let told = Arc::new(Mutex::new(None));
        let slot = told.clone();
        let tap = CommandsTap::new(Box::new(move |updates| {
            *slot.lock().unwrap() = Some(updates);
        }));
        (tap, told)
    }

    fn command_list(lines: &[String]) -> Vec<u8> {
        let mut out = Vec::new();
        for line in lines {
            out.extend(pktline::data(line.as_bytes()));
        }
        out.extend_from_slice(pktline::FLUSH);
        out
    }

    #[tokio::test]
    async fn updates_are_told_once_the_list_has_passed_and_git_gets_every_byte() {
        let (a, b) = ("a".repeat(40), "b".repeat(40));
        let mut stream = command_list(&[
            format!("{a} {b} refs/heads/main\0report-status side-band-64k"),
            format!("{} {b} refs/tags/v1", "0".repeat(40)),
        ]);
        stream.extend_from_slice(b"PACK....");
        let (tap, told) = recording();
        let mut git = TappedWriter::new(Vec::new(), Some(tap));
        for chunk in stream.chunks(7) {
            git.write_all(chunk).await.unwrap();
        }
        assert_eq!(git.inner, stream, "git reads the stream unchanged");
        let updates = told.lock().unwrap().take().unwrap();
        assert_eq!(updates.len(), 2);
        assert_eq!(updates[0].name, "refs/heads/main");
        assert_eq!(
            (updates[0].old.as_str(), updates[0].new.as_str()),
            (&a[..], &b[..])
        );
        assert!(updates[1].is_creation());
    }

    #[test]
    fn anything_else_is_left_to_the_hook() {
        let (mut tap, told) = recording();
        tap.feed(&command_list(&[format!("shallow {}", "a".repeat(40))]));
        assert!(told.lock().unwrap().is_none());
        assert!(tap.on_commands.is_none(), "given up");

        let (mut tap, told) = recording();
        let packet =
            pktline::data(format!("{} {} refs/heads/x", "a".repeat(40), "b".repeat(40)).as_bytes());
        for _ in 0..=MAX_COMMANDS_BYTES / packet.len() {
            tap.feed(&packet);
        }
        assert!(told.lock().unwrap().is_none());
        assert!(
            tap.on_commands.is_none() && tap.seen.is_empty(),
            "nothing kept"
        );
    }
}
