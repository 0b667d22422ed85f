//! Git's pkt-line framing (`gitprotocol-common(5)`): each packet is four hex digits giving its
//! length (the four digits included) followed by its payload, and the lengths 0000, 0001 and
//! 0002 are the flush, delimiter and response-end packets. The smart protocols are pipes of
//! these; the server reads them itself only where it must decide before `git` runs (the
//! reference updates a push asks for) and writes them for its own messages to the client.
//!
//! Input comes straight from the network, so parsing never trusts a length: a packet longer
//! than git allows, a length that is not hex, or one of the reserved lengths 0003 is an error,
//! and a packet cut short is reported as incomplete, never read past the buffer.

use std::fmt;

use super::receive::RefUpdate;

/// The largest packet git sends or accepts: 65516 bytes of payload plus the four-digit length.
pub const MAX_PACKET: usize = 65520;
const HEADER: usize = 4;

/// One packet, borrowed from the buffer it was parsed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packet<'a> {
    Data(&'a [u8]),
    Flush,
    Delimiter,
    ResponseEnd,
}

/// Why a stream is not pkt-lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The length field is not four hex digits.
    BadLength([u8; HEADER]),
    /// 0003 (a header with no room for itself) or more than [`MAX_PACKET`].
    InvalidLength(usize),
    /// A reference update line that is not `<old> <new> <ref>`.
    BadCommand(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BadLength(bytes) => {
                write!(
                    f,
                    "protocol error: bad line length character: {}",
                    String::from_utf8_lossy(bytes)
                )
            }
            Error::InvalidLength(n) => write!(f, "protocol error: bad line length {n}"),
            Error::BadCommand(line) => {
                write!(f, "protocol error: expected old/new/ref, got '{line}'")
            }
        }
    }
}

impl std::error::Error for Error {}

/// The first packet of `buf` and the bytes it took, or `None` when `buf` holds only part of it.
pub fn parse(buf: &[u8]) -> Result<Option<(Packet<'_>, usize)>, Error> {
    let Some(header) = buf.get(..HEADER) else {
        return Ok(None);
    };
    let header: [u8; HEADER] = header.try_into().expect("four bytes");
    let text = std::str::from_utf8(&header).map_err(|_| Error::BadLength(header))?;
    if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::BadLength(header));
    }
    let length = usize::from_str_radix(text, 16).map_err(|_| Error::BadLength(header))?;
    let packet = match length {
        0 => Packet::Flush,
        1 => Packet::Delimiter,
        2 => Packet::ResponseEnd,
        3 => return Err(Error::InvalidLength(length)),
        n if n > MAX_PACKET => return Err(Error::InvalidLength(length)),
        n => match buf.get(HEADER..n) {
            Some(payload) => Packet::Data(payload),
            None => return Ok(None),
        },
    };
    Ok(Some((packet, length.max(HEADER))))
}

/// `payload` as one data packet. Payloads longer than git allows are split by the caller
/// (messages here are short); this panics on one, which is a bug in the caller.
pub fn data(payload: &[u8]) -> Vec<u8> {
    assert!(
        payload.len() <= MAX_PACKET - HEADER,
        "pkt-line payload too long"
    );
    let mut packet = format!("{:04x}", payload.len() + HEADER).into_bytes();
    packet.extend_from_slice(payload);
    packet
}

pub const FLUSH: &[u8] = b"0000";

/// A message for the git client's terminal on side band 2 (progress), which git prints
/// prefixed with `remote: `; long messages are split over several packets.
pub fn progress(message: &str) -> Vec<u8> {
    sideband(2, message.as_bytes())
}

/// A fatal error on side band 3, which git prints and then aborts the operation.
pub fn error(message: &str) -> Vec<u8> {
    sideband(3, message.as_bytes())
}

fn sideband(band: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in bytes.chunks(MAX_PACKET - HEADER - 1) {
        let mut payload = Vec::with_capacity(chunk.len() + 1);
        payload.push(band);
        payload.extend_from_slice(chunk);
        out.extend(data(&payload));
    }
    out
}

/// A push's reference updates, the capabilities the client asked for, and the bytes they took.
pub type ReceiveCommands = (Vec<RefUpdate>, Vec<String>, usize);

/// The command list at the start of a `git-receive-pack` request: the reference updates, the
/// capabilities the client asked for (after the NUL of the first line), and the bytes it took
/// (the pack follows). `None` while the flush that ends the list has not arrived.
pub fn receive_commands(buf: &[u8]) -> Result<Option<ReceiveCommands>, Error> {
    let mut offset = 0;
    let mut updates = Vec::new();
    let mut capabilities = Vec::new();
    loop {
        let Some((packet, used)) = parse(&buf[offset..])? else {
            return Ok(None);
        };
        offset += used;
        let line = match packet {
            Packet::Flush => return Ok(Some((updates, capabilities, offset))),
            Packet::Data(line) => line,
            Packet::Delimiter | Packet::ResponseEnd => {
                return Err(Error::BadCommand("unexpected special packet".into()));
            }
        };
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let (command, caps) = match line.iter().position(|b| *b == 0) {
            Some(nul) => (&line[..nul], Some(&line[nul + 1..])),
            None => (line, None),
        };
        if let Some(caps) = caps.filter(|_| updates.is_empty()) {
            capabilities = String::from_utf8_lossy(caps)
                .split(' ')
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect();
        }
        updates.push(ref_update(command)?);
    }
}

fn ref_update(command: &[u8]) -> Result<RefUpdate, Error> {
    let text = std::str::from_utf8(command)
        .map_err(|_| Error::BadCommand(String::from_utf8_lossy(command).into_owned()))?;
    let bad = || Error::BadCommand(text.to_string());
    let mut parts = text.splitn(3, ' ');
    let (old, new, name) = (
        parts.next().ok_or_else(bad)?,
        parts.next().ok_or_else(bad)?,
        parts.next().ok_or_else(bad)?,
    );
    let object_id =
        |id: &str| matches!(id.len(), 40 | 64) && id.bytes().all(|b| b.is_ascii_hexdigit());
    if !object_id(old) || !object_id(new) || old.len() != new.len() || name.is_empty() {
        return Err(bad());
    }
    Ok(RefUpdate {
        old: old.to_ascii_lowercase(),
        new: new.to_ascii_lowercase(),
        name: name.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "0000000000000000000000000000000000000000";
    const NEW: &str = "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3";

    #[test]
    fn packets_parse_and_report_incomplete_ones() {
        assert_eq!(parse(b"0000rest"), Ok(Some((Packet::Flush, 4))));
        assert_eq!(parse(b"0001"), Ok(Some((Packet::Delimiter, 4))));
        assert_eq!(parse(b"0002"), Ok(Some((Packet::ResponseEnd, 4))));
        assert_eq!(parse(b"0009hello"), Ok(Some((Packet::Data(b"hello"), 9))));
        assert_eq!(parse(b"000ahello"), Ok(None));
        assert_eq!(parse(b"00"), Ok(None));
    }

    #[test]
    fn bad_lengths_are_errors() {
        assert_eq!(parse(b"0003"), Err(Error::InvalidLength(3)));
        assert_eq!(parse(b"fff1"), Err(Error::InvalidLength(0xfff1)));
        assert!(matches!(parse(b"00g0"), Err(Error::BadLength(_))));
        assert!(matches!(parse(b"+001"), Err(Error::BadLength(_))));
    }

    #[test]
    fn data_round_trips() {
        let packet = data(b"# service=git-upload-pack\n");
        assert_eq!(&packet[..4], b"001e");
        assert_eq!(
            parse(&packet),
            Ok(Some((Packet::Data(b"# service=git-upload-pack\n"), 30)))
        );
    }

    #[test]
    fn sideband_messages_are_split_to_fit() {
        let long = "x".repeat(MAX_PACKET * 2);
        let out = error(&long);
        let mut offset = 0;
        let mut total = 0;
        while offset < out.len() {
            let (Packet::Data(payload), used) = parse(&out[offset..]).unwrap().unwrap() else {
                panic!("not data");
            };
            assert_eq!(payload[0], 3);
            total += payload.len() - 1;
            offset += used;
        }
        assert_eq!(total, long.len());
    }

    #[test]
    fn receive_commands_read_updates_and_capabilities() {
        let mut body =
            data(format!("{OLD} {NEW} refs/heads/main\0report-status side-band-64k\n").as_bytes());
        body.extend(data(format!("{NEW} {OLD} refs/tags/v1").as_bytes()));
        body.extend_from_slice(FLUSH);
        body.extend_from_slice(b"PACK...");
        let (updates, caps, used) = receive_commands(&body).unwrap().unwrap();
        assert_eq!(caps, ["report-status", "side-band-64k"]);
        assert_eq!(updates.len(), 2);
        assert!(updates[0].is_creation() && updates[0].name == "refs/heads/main");
        assert!(updates[1].is_deletion() && updates[1].name == "refs/tags/v1");
        assert_eq!(&body[used..], b"PACK...");
    }

    #[test]
    fn receive_commands_wait_for_the_flush_and_refuse_garbage() {
        let line = data(format!("{OLD} {NEW} refs/heads/main").as_bytes());
        assert_eq!(receive_commands(&line), Ok(None));
        let mut bad = data(b"not a command");
        bad.extend_from_slice(FLUSH);
        assert!(matches!(receive_commands(&bad), Err(Error::BadCommand(_))));
        let mut short = data(format!("{OLD} {} refs/heads/x", &NEW[..39]).as_bytes());
        short.extend_from_slice(FLUSH);
        assert!(receive_commands(&short).is_err());
    }
}
