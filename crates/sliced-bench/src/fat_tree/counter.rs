//! Counting a bridge's flows the way `ovs-ofctl dump-aggregate` does, over a connection to
//! its management socket that stays open: at k=16 a round of 320 ovs-ofctl processes took
//! seconds on this 2-core machine, too coarse a clock for "every table right" and CPU
//! taken from the processes measured. One OpenFlow 1.3 AGGREGATE request per count, asked
//! of every bridge before any answer is read.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context};

use crate::wire::{self, Header, HEADER_LEN, OFP13};

const ECHO_REQUEST: u8 = wire::ECHO_REQUEST;
const ECHO_REPLY: u8 = wire::ECHO_REPLY;
const MULTIPART_REQUEST: u8 = 18;
const MULTIPART_REPLY: u8 = 19;
const MULTIPART_AGGREGATE: u16 = 2;
/// The body of an aggregate reply: packet_count, byte_count (8 each), flow_count (4), pad.
const AGGREGATE_REPLY_BODY: usize = 24;
/// A count the switch does not answer within this is an error, not a wait.
const ANSWER_LIMIT: Duration = Duration::from_secs(60);

/// A question sent ([`Counter::ask`]), or not when the connection failed.
pub(crate) struct Asked {
    xid: Option<u32>,
    cookie: u64,
    mask: u64,
}

/// An open OpenFlow 1.3 connection to one bridge's management socket.
pub(crate) struct Counter {
    socket: std::path::PathBuf,
    stream: UnixStream,
    buffer: Vec<u8>,
    xid: u32,
}

impl Counter {
    /// Connects to `socket` (`<bridge>.mgmt`) and says HELLO.
    pub(crate) fn connect(socket: &Path) -> anyhow::Result<Self> {
        Ok(Self {
            socket: socket.to_path_buf(),
            stream: open(socket)?,
            buffer: Vec::new(),
            xid: 1,
        })
    }

    /// Asks how many flows have `cookie` under `mask`, in every table; the answer is
    /// [`Counter::answer`]'s. Asking every bridge before reading any answer makes a round
    /// over 320 bridges one pass of ovs-vswitchd's main loop instead of 320: during the
    /// k=16 apply a pass took 1-3 s, and one request at a time left the bench's clock
    /// with a resolution of 15 s.
    pub(crate) fn ask(&mut self, cookie: u64, mask: u64) -> Asked {
        self.xid = self.xid.wrapping_add(1);
        let xid = self.xid;
        let sent = self.stream.write_all(&aggregate_request(xid, cookie, mask));
        Asked {
            xid: sent.is_ok().then_some(xid),
            cookie,
            mask,
        }
    }

    /// The answer to `asked`. A connection the switch dropped meanwhile (a loaded Open
    /// vSwitch drops a client that missed its inactivity probe) is opened again, and the
    /// question asked again, once.
    pub(crate) fn answer(&mut self, asked: Asked) -> anyhow::Result<usize> {
        if let Some(xid) = asked.xid {
            if let Ok(count) = self.read_answer(xid) {
                return Ok(count);
            }
        }
        self.stream = open(&self.socket)?;
        self.buffer.clear();
        let again = self.ask(asked.cookie, asked.mask);
        let xid = again.xid.context("cannot ask the switch again")?;
        self.read_answer(xid)
    }

    fn read_answer(&mut self, xid: u32) -> anyhow::Result<usize> {
        loop {
            let message = self.next_message()?;
            let Some(header) = Header::parse(&message) else {
                bail!("a message shorter than its header");
            };
            match header.kind {
                ECHO_REQUEST => {
                    let mut reply = message.clone();
                    reply[1] = ECHO_REPLY;
                    self.stream.write_all(&reply)?;
                }
                MULTIPART_REPLY if header.xid == xid => {
                    return parse_aggregate_reply(&message)
                        .context("an aggregate reply that cannot be read");
                }
                wire::ERROR if header.xid == xid => bail!("the switch refused the request"),
                _ => {}
            }
        }
    }

    fn next_message(&mut self) -> anyhow::Result<Vec<u8>> {
        loop {
            if let Some(len) = wire::frame_len(&self.buffer).map_err(anyhow::Error::msg)? {
                return Ok(self.buffer.drain(..len).collect());
            }
            let mut chunk = [0u8; 4096];
            let read = self.stream.read(&mut chunk).context("reading the switch")?;
            if read == 0 {
                bail!("the switch closed the connection");
            }
            self.buffer.extend_from_slice(&chunk[..read]);
        }
    }
}

fn open(socket: &Path) -> anyhow::Result<UnixStream> {
    let mut stream = UnixStream::connect(socket)
        .with_context(|| format!("cannot connect to {}", socket.display()))?;
    stream.set_read_timeout(Some(ANSWER_LIMIT))?;
    let mut hello = Vec::new();
    wire::hello(&mut hello, OFP13);
    stream.write_all(&hello)?;
    Ok(stream)
}

/// OFPMP_AGGREGATE over every table, port and group, matching everything, for the flows
/// whose cookie is `cookie` under `mask`.
fn aggregate_request(xid: u32, cookie: u64, mask: u64) -> Vec<u8> {
    let mut out = vec![OFP13, MULTIPART_REQUEST, 0, 0];
    out.extend_from_slice(&xid.to_be_bytes());
    out.extend_from_slice(&MULTIPART_AGGREGATE.to_be_bytes());
    out.extend_from_slice(&[0; 6]); // flags, pad
    out.extend_from_slice(&[0xff, 0, 0, 0]); // OFPTT_ALL, pad
    out.extend_from_slice(&u32::MAX.to_be_bytes()); // out_port OFPP_ANY
    out.extend_from_slice(&u32::MAX.to_be_bytes()); // out_group OFPG_ANY
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&cookie.to_be_bytes());
    out.extend_from_slice(&mask.to_be_bytes());
    // An empty OXM match: type 1, length 4, padded to 8.
    out.extend_from_slice(&[0, 1, 0, 4, 0, 0, 0, 0]);
    let len = out.len() as u16;
    out[2..4].copy_from_slice(&len.to_be_bytes());
    out
}

fn parse_aggregate_reply(message: &[u8]) -> Option<usize> {
    let body = message.get(HEADER_LEN + 8..HEADER_LEN + 8 + AGGREGATE_REPLY_BODY)?;
    let kind = u16::from_be_bytes([message[HEADER_LEN], message[HEADER_LEN + 1]]);
    if kind != MULTIPART_AGGREGATE {
        return None;
    }
    let flows = u32::from_be_bytes([body[16], body[17], body[18], body[19]]);
    usize::try_from(flows).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_as_long_as_it_says_and_the_reply_reads_back() {
        let request = aggregate_request(7, 0x5c1c_0400_0000_0000, 0xffff_ff00_0000_0000);
        assert_eq!(request.len(), 56);
        assert_eq!(u16::from_be_bytes([request[2], request[3]]), 56);
        let mut reply = vec![
            OFP13,
            MULTIPART_REPLY,
            0,
            40,
            0,
            0,
            0,
            7,
            0,
            2,
            0,
            0,
            0,
            0,
            0,
            0,
        ];
        reply.extend_from_slice(&[0; 16]);
        reply.extend_from_slice(&2074u32.to_be_bytes());
        reply.extend_from_slice(&[0; 4]);
        assert_eq!(parse_aggregate_reply(&reply), Some(2074));
        assert_eq!(parse_aggregate_reply(&reply[..20]), None);
    }
}
