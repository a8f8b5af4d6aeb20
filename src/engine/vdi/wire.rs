//! The VDI session's messages on its one TCP connection, as a remote-display protocol multiplexes
//! its channels: screen frames (engine → client), input events and frame acknowledgements
//! (client → engine), and USB bulk data (both ways). Headers are a few bytes; payloads are never
//! held whole: the reader hands back each header and skips the payload through a fixed buffer.

use std::io::{self, Read};

/// The largest frame a session carries (a raw 4K frame is 33 MB).
pub const MAX_FRAME: u32 = 64 << 20;
/// The largest USB chunk.
pub const MAX_USB: u32 = 1 << 20;

const FRAME: u8 = 1;
const INPUT: u8 = 2;
const ACK: u8 = 3;
const USB: u8 = 4;

/// One message's header; frames and USB chunks are followed by `len` payload bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Msg {
    /// Screen frame `seq`, answering every input up to `answers` (0: none), first byte sent at
    /// `sent_ns` on the engine's CLOCK_MONOTONIC (the lab's host and client share one kernel).
    Frame {
        seq: u32,
        answers: u32,
        sent_ns: u64,
        len: u32,
    },
    /// Keyboard or mouse event `seq` (numbered from 1), with its few bytes of data.
    Input { seq: u32, data: [u8; 4] },
    /// The client has frame `seq` whole.
    Ack { seq: u32 },
    /// A USB bulk chunk of `len` bytes.
    Usb { len: u32 },
}

impl Msg {
    /// The header's bytes.
    pub fn header(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(21);
        match *self {
            Msg::Frame {
                seq,
                answers,
                sent_ns,
                len,
            } => {
                b.push(FRAME);
                b.extend(seq.to_be_bytes());
                b.extend(answers.to_be_bytes());
                b.extend(sent_ns.to_be_bytes());
                b.extend(len.to_be_bytes());
            }
            Msg::Input { seq, data } => {
                b.push(INPUT);
                b.extend(seq.to_be_bytes());
                b.extend(data);
            }
            Msg::Ack { seq } => {
                b.push(ACK);
                b.extend(seq.to_be_bytes());
            }
            Msg::Usb { len } => {
                b.push(USB);
                b.extend(len.to_be_bytes());
            }
        }
        b
    }

    /// Payload bytes after the header.
    pub fn payload(&self) -> u32 {
        match *self {
            Msg::Frame { len, .. } | Msg::Usb { len } => len,
            _ => 0,
        }
    }

    /// The header's length: type byte and fields.
    pub fn header_len(&self) -> u64 {
        match self {
            Msg::Frame { .. } => 21,
            Msg::Input { .. } => 9,
            Msg::Ack { .. } | Msg::Usb { .. } => 5,
        }
    }

    /// Bytes on the wire, header and payload.
    pub fn wire_bytes(&self) -> u64 {
        self.header_len() + u64::from(self.payload())
    }
}

/// Reads messages from a byte stream, checking every header against the bounds.
pub struct Reader<R> {
    r: R,
    skip: Vec<u8>,
}

fn bad(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

impl<R: Read> Reader<R> {
    pub fn new(r: R) -> Reader<R> {
        Reader {
            r,
            skip: vec![0; 64 << 10],
        }
    }

    /// The next message's header (Ok(None) at a clean end of stream). Use [`Reader::skip`] to
    /// read past its payload, calling `on_bytes` as it arrives.
    pub fn next_msg(&mut self) -> io::Result<Option<Msg>> {
        let mut t = [0u8; 1];
        match self.r.read(&mut t) {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(e) => return Err(e),
        }
        let mut field = |n: usize| -> io::Result<u64> {
            let mut b = [0u8; 8];
            self.r.read_exact(&mut b[8 - n..])?;
            Ok(u64::from_be_bytes(b))
        };
        let m = match t[0] {
            FRAME => Msg::Frame {
                seq: field(4)? as u32,
                answers: field(4)? as u32,
                sent_ns: field(8)?,
                len: field(4)? as u32,
            },
            INPUT => Msg::Input {
                seq: field(4)? as u32,
                data: (field(4)? as u32).to_be_bytes(),
            },
            ACK => Msg::Ack {
                seq: field(4)? as u32,
            },
            USB => Msg::Usb {
                len: field(4)? as u32,
            },
            other => return Err(bad(format!("unknown VDI message type {other}"))),
        };
        match m {
            Msg::Frame { len, .. } if len > MAX_FRAME => {
                Err(bad(format!("a {len}-byte frame is over {MAX_FRAME}")))
            }
            Msg::Usb { len } if len > MAX_USB => {
                Err(bad(format!("a {len}-byte USB chunk is over {MAX_USB}")))
            }
            m => Ok(Some(m)),
        }
    }

    /// Reads and drops `len` payload bytes.
    pub fn skip(&mut self, mut len: u32) -> io::Result<()> {
        while len > 0 {
            let n = (len as usize).min(self.skip.len());
            let got = self.r.read(&mut self.skip[..n])?;
            if got == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            len -= got as u32;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_payloads_are_skipped() {
        let msgs = [
            Msg::Frame {
                seq: 7,
                answers: 3,
                sent_ns: 123_456_789_012,
                len: 5,
            },
            Msg::Input {
                seq: 4,
                data: [1, 2, 3, 4],
            },
            Msg::Ack { seq: 7 },
            Msg::Usb { len: 3 },
        ];
        let mut bytes = Vec::new();
        for m in &msgs {
            bytes.extend(m.header());
            bytes.extend(vec![9u8; m.payload() as usize]);
        }
        assert_eq!(msgs[2].wire_bytes(), 5);
        for m in &msgs {
            assert_eq!(m.header_len(), m.header().len() as u64);
        }
        let mut r = Reader::new(&bytes[..]);
        for m in &msgs {
            let got = r.next_msg().unwrap().unwrap();
            assert_eq!(&got, m);
            r.skip(got.payload()).unwrap();
        }
        assert!(r.next_msg().unwrap().is_none());
    }

    #[test]
    fn hostile_headers_are_refused_before_anything_is_allocated() {
        let huge = Msg::Frame {
            seq: 1,
            answers: 0,
            sent_ns: 0,
            len: u32::MAX,
        };
        assert!(Reader::new(&huge.header()[..]).next_msg().is_err());
        assert!(Reader::new(&Msg::Usb { len: MAX_USB + 1 }.header()[..])
            .next_msg()
            .is_err());
        assert!(Reader::new(&[0x77u8, 0, 0][..]).next_msg().is_err());
        // A header cut short is an error, not a message.
        assert!(Reader::new(&Msg::Ack { seq: 1 }.header()[..3])
            .next_msg()
            .is_err());
        // A payload cut short too.
        let cut = Msg::Usb { len: 10 }.header();
        let mut r = Reader::new(&cut[..]);
        let m = r.next_msg().unwrap().unwrap();
        assert!(r.skip(m.payload()).is_err());
    }
}
