//! Checks request heads before actix-http parses them, so that a malformed one is refused
//! with a JSON body.
//!
//! actix-http answers a head it cannot parse itself, deep in its HTTP/1 dispatcher, with an
//! empty 400 or 431 and no hook to change it. [`HeadGuard`] sits between the socket and
//! the dispatcher: it parses each head as it arrives with httparse (the parser actix-http
//! uses, called the same way), applies the checks actix-http applies after parsing, and
//! answers a head that fails them itself. A well-formed head reaches actix-http untouched,
//! in the dispatcher's own buffer: the only per-request cost is the extra parse.
//!
//! Bodies are skipped by their Content-Length, so every head of a keep-alive connection is
//! checked. After a chunked body, an upgrade or a CONNECT the framing is no longer known
//! here, and the rest of the connection passes unchecked (actix-http still refuses bad
//! heads there, with its empty bodies).

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use actix_web::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The largest request head accepted, in bytes; a larger one is answered 431. actix-http's
/// own limit is 128 KiB of unparsed input, so this one is always reached first.
pub const MAX_REQUEST_HEAD: usize = 64 * 1024;

/// actix-http parses at most this many header lines (its `MAX_HEADERS`) and answers 431
/// beyond; the same array size gives the same verdict.
const MAX_HEADERS: usize = 96;

/// The request target length `http::Uri` refuses from (its `MAX_LEN` is `u16::MAX - 1`).
const MAX_URI_LEN: usize = u16::MAX as usize - 1;

/// How much a refused client may still have in flight that is read and dropped before the
/// socket closes: closing with unread input resets the connection, which can destroy the
/// answer before the client reads it.
const MAX_DRAIN: usize = 256 * 1024;

/// A connection's byte stream, with every request head checked before it is handed on.
pub(crate) struct HeadGuard<T> {
    io: T,
    framing: Framing,
    stage: Stage,
    /// The start of a head that has not all arrived. Heads normally come in one read and
    /// never land here; this is the slow path for clients that send them in pieces.
    partial: Vec<u8>,
    /// Checked bytes from `partial`, waiting for room in the reader's buffer.
    checked: Vec<u8>,
    checked_from: usize,
}

/// Where the next byte of the stream belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// The start of a request head.
    Head,
    /// This many more bytes of a request body.
    Body(u64),
    /// Framing unknown from here on (chunked body, upgrade, CONNECT): pass everything.
    Unchecked,
}

enum Stage {
    Serving,
    /// Writing the refusal; `written` bytes of `answer` are out.
    Refusing {
        answer: Vec<u8>,
        written: usize,
    },
    /// Answer sent and write side shut: dropping what the client still has in flight.
    Draining {
        left: usize,
    },
    /// Nothing more is read or written; the reader sees end of stream.
    Closed,
}

/// Why a head is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub status: StatusCode,
    pub message: String,
}

impl Refusal {
    fn bad(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }

    fn too_large() -> Self {
        Self {
            status: StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            message: format!("the request head is over {MAX_REQUEST_HEAD} bytes"),
        }
    }

    /// The whole HTTP response, closing the connection.
    fn answer(&self) -> Vec<u8> {
        let body = serde_json::json!({ "error": self.message }).to_string();
        format!(
            "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{body}",
            self.status.as_u16(),
            self.status.canonical_reason().unwrap_or(""),
            body.len(),
        )
        .into_bytes()
    }
}

impl<T> HeadGuard<T> {
    pub(crate) fn new(io: T) -> Self {
        Self {
            io,
            framing: Framing::Head,
            stage: Stage::Serving,
            partial: Vec::new(),
            checked: Vec::new(),
            checked_from: 0,
        }
    }

    fn refuse(&mut self, refusal: &Refusal) {
        log::debug!(
            "refused a request head: {} {}",
            refusal.status.as_u16(),
            refusal.message
        );
        self.partial = Vec::new();
        self.checked = Vec::new();
        self.stage = Stage::Refusing {
            answer: refusal.answer(),
            written: 0,
        };
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> HeadGuard<T> {
    /// Sends the refusal, then drops what is in flight; ready once the reader may see the
    /// end of the stream. Errors end it early: the client is gone, and that is no error.
    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            match &mut self.stage {
                Stage::Serving | Stage::Closed => return Poll::Ready(()),
                Stage::Refusing { answer, written } => {
                    let io = Pin::new(&mut self.io);
                    if *written < answer.len() {
                        match ready!(io.poll_write(cx, &answer[*written..])) {
                            Ok(0) | Err(_) => self.stage = Stage::Closed,
                            Ok(n) => *written += n,
                        }
                    } else {
                        self.stage = match ready!(io.poll_shutdown(cx)) {
                            Ok(()) => Stage::Draining { left: MAX_DRAIN },
                            Err(_) => Stage::Closed,
                        };
                    }
                }
                Stage::Draining { left } => {
                    let mut scratch = [0u8; 8192];
                    let mut dropped = ReadBuf::new(&mut scratch);
                    match Pin::new(&mut self.io).poll_read(cx, &mut dropped) {
                        Poll::Ready(Ok(())) if !dropped.filled().is_empty() => {
                            *left = left.saturating_sub(dropped.filled().len());
                            if *left == 0 {
                                self.stage = Stage::Closed;
                            }
                        }
                        // Nothing more right now is enough: the answer is already out.
                        _ => self.stage = Stage::Closed,
                    }
                }
            }
        }
    }

    /// Hands checked bytes waiting in `checked` to the reader.
    fn give_checked(&mut self, buf: &mut ReadBuf<'_>) {
        let waiting = &self.checked[self.checked_from..];
        let n = waiting.len().min(buf.remaining());
        buf.put_slice(&waiting[..n]);
        self.checked_from += n;
        if self.checked_from == self.checked.len() {
            self.checked.clear();
            self.checked_from = 0;
        }
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncRead for HeadGuard<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if !matches!(this.stage, Stage::Serving) {
                ready!(this.poll_close(cx));
                return Poll::Ready(Ok(()));
            }
            if this.checked_from < this.checked.len() {
                this.give_checked(buf);
                return Poll::Ready(Ok(()));
            }
            if this.partial.is_empty() {
                // The hot path: read straight into the reader's buffer and check in place.
                if this.framing == Framing::Unchecked {
                    return Pin::new(&mut this.io).poll_read(cx, buf);
                }
                let before = buf.filled().len();
                ready!(Pin::new(&mut this.io).poll_read(cx, buf))?;
                let fresh = &buf.filled()[before..];
                match check(&mut this.framing, fresh) {
                    Ok(passed) if passed == fresh.len() => return Poll::Ready(Ok(())),
                    Ok(passed) => {
                        this.partial.extend_from_slice(&fresh[passed..]);
                        buf.set_filled(before + passed);
                        if passed > 0 {
                            return Poll::Ready(Ok(()));
                        }
                    }
                    Err(refusal) => {
                        buf.set_filled(before);
                        this.refuse(&refusal);
                    }
                }
            } else {
                let mut scratch = [0u8; 8192];
                let mut more = ReadBuf::new(&mut scratch);
                ready!(Pin::new(&mut this.io).poll_read(cx, &mut more))?;
                if more.filled().is_empty() {
                    // The client gave up halfway through a head, as actix-http would see it.
                    this.partial = Vec::new();
                    return Poll::Ready(Ok(()));
                }
                this.partial.extend_from_slice(more.filled());
                match check(&mut this.framing, &this.partial) {
                    Ok(0) => {}
                    Ok(passed) => {
                        let rest = this.partial.split_off(passed);
                        this.checked = std::mem::replace(&mut this.partial, rest);
                        this.checked_from = 0;
                    }
                    Err(refusal) => this.refuse(&refusal),
                }
            }
        }
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncWrite for HeadGuard<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match this.stage {
            Stage::Serving => Pin::new(&mut this.io).poll_write(cx, buf),
            // The connection is answered and closing: whatever comes now has no reader.
            _ => Poll::Ready(Ok(buf.len())),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match this.stage {
            Stage::Serving => Pin::new(&mut this.io).poll_write_vectored(cx, bufs),
            _ => Poll::Ready(Ok(bufs.iter().map(|buf| buf.len()).sum())),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.stage {
            Stage::Serving => Pin::new(&mut this.io).poll_flush(cx),
            _ => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.stage {
            Stage::Serving => Pin::new(&mut this.io).poll_shutdown(cx),
            // Shut already, after the refusal.
            _ => Poll::Ready(Ok(())),
        }
    }
}

/// Checks `bytes`, which start where `framing` says, and moves `framing` past them.
/// Returns how many bytes may be handed on; the rest is the start of a head still to come.
fn check(framing: &mut Framing, bytes: &[u8]) -> Result<usize, Refusal> {
    let mut at = 0;
    while at < bytes.len() {
        match *framing {
            Framing::Unchecked => return Ok(bytes.len()),
            Framing::Body(left) => {
                let available = bytes.len() - at;
                let taken = usize::try_from(left).map_or(available, |left| left.min(available));
                at += taken;
                // `taken` is at most `left`, so this cannot underflow.
                let left = left - taken as u64;
                *framing = if left == 0 {
                    Framing::Head
                } else {
                    Framing::Body(left)
                };
            }
            Framing::Head => match check_head(&bytes[at..])? {
                Some((len, next)) => {
                    at += len;
                    *framing = next;
                }
                None if bytes.len() - at > MAX_REQUEST_HEAD => return Err(Refusal::too_large()),
                None => return Ok(at),
            },
        }
    }
    Ok(at)
}

/// Checks the head at the start of `bytes` as actix-http's decoder would: `None` if it is
/// not all there yet, else its length and what follows it.
fn check_head(bytes: &[u8]) -> Result<Option<(usize, Framing)>, Refusal> {
    let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut []);
    let len = match request.parse_with_uninit_headers(bytes, &mut headers) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Refusal {
                status: StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                message: format!("the request has over {MAX_HEADERS} header lines"),
            })
        }
        Err(err) => return Err(Refusal::bad(format!("malformed request head: {err}"))),
    };
    if len > MAX_REQUEST_HEAD {
        return Err(Refusal::too_large());
    }
    // httparse fills these on a complete parse.
    let (Some(method), Some(target), Some(minor)) = (request.method, request.path, request.version)
    else {
        return Err(Refusal::bad("malformed request line"));
    };
    check_target(target)?;
    let http10 = minor == 0;

    let mut content_length = None;
    let mut transfer_encoding = None;
    let mut has_host = false;
    let mut upgrade = method == "CONNECT";
    for header in request.headers.iter() {
        let name = header.name;
        // Only the values looked into are decoded: every request has other headers.
        let value = || std::str::from_utf8(header.value).map(str::trim);
        if name.eq_ignore_ascii_case("content-length") {
            if content_length.is_some() {
                return Err(Refusal::bad("more than one Content-Length header"));
            }
            let length = value()
                .ok()
                .filter(|value| !value.starts_with('+'))
                .and_then(|value| value.parse::<u64>().ok())
                .ok_or_else(|| Refusal::bad("Content-Length is not a number of bytes"))?;
            content_length = Some(length);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if transfer_encoding.is_some() {
                return Err(Refusal::bad("more than one Transfer-Encoding header"));
            }
            transfer_encoding = Some(value().unwrap_or(""));
        } else if name.eq_ignore_ascii_case("host") {
            if has_host {
                return Err(Refusal::bad("more than one Host header"));
            }
            has_host = true;
        } else if name.eq_ignore_ascii_case("upgrade") {
            upgrade = true;
        }
    }
    if !http10 && !has_host {
        return Err(Refusal::bad("an HTTP/1.1 request needs a Host header"));
    }
    if let Some(coding) = transfer_encoding {
        if http10 {
            return Err(Refusal::bad("Transfer-Encoding is not allowed in HTTP/1.0"));
        }
        if content_length.is_some() {
            return Err(Refusal::bad(
                "Content-Length and Transfer-Encoding together",
            ));
        }
        // actix-http accepts `identity` in the header and then refuses it for not being
        // chunked: chunked is the only coding that passes.
        if !coding.eq_ignore_ascii_case("chunked") {
            return Err(Refusal::bad(
                "the only Transfer-Encoding accepted is chunked",
            ));
        }
        return Ok(Some((len, Framing::Unchecked)));
    }
    if http10 && method == "POST" && content_length.is_none() {
        return Err(Refusal::bad("an HTTP/1.0 POST needs a Content-Length"));
    }
    let next = match content_length {
        _ if upgrade => Framing::Unchecked,
        Some(length) if length > 0 => Framing::Body(length),
        _ => Framing::Head,
    };
    Ok(Some((len, next)))
}

/// Refuses a request target that actix-http's `Uri` parse would refuse. Only a target
/// outside the plain origin form is parsed, which keeps the copy that parse makes off the
/// path of ordinary requests.
fn check_target(target: &str) -> Result<(), Refusal> {
    let plain = target.starts_with('/')
        && target.len() < MAX_URI_LEN
        && target
            .bytes()
            .all(|byte| PLAIN_TARGET_BYTES[usize::from(byte)]);
    if plain || actix_web::http::Uri::try_from(target).is_ok() {
        Ok(())
    } else {
        Err(Refusal::bad("malformed request target"))
    }
}

/// Which bytes may stand in a plain origin-form target: a table, because every byte of
/// every request's target is looked up in it.
const PLAIN_TARGET_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < table.len() {
        // `byte` is below 256, so it fits a u8.
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric() || is_uri_punctuation(b);
        byte += 1;
    }
    table
};

/// The punctuation RFC 3986 allows in a URI (unreserved, reserved, and `%`).
const fn is_uri_punctuation(byte: u8) -> bool {
    matches!(
        byte,
        b'-' | b'.'
            | b'_'
            | b'~'
            | b':'
            | b'/'
            | b'?'
            | b'#'
            | b'['
            | b']'
            | b'@'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
            | b'%'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(text: &str) -> Result<(usize, Framing), Refusal> {
        let mut framing = Framing::Head;
        check(&mut framing, text.as_bytes()).map(|passed| (passed, framing))
    }

    fn status(text: &str) -> u16 {
        checked(text).unwrap_err().status.as_u16()
    }

    #[test]
    fn well_formed_requests_pass_whole() {
        let get = "GET /slices HTTP/1.1\r\nHost: a\r\n\r\n";
        assert_eq!(checked(get), Ok((get.len(), Framing::Head)));
        let two = format!("POST /slices HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc{get}");
        assert_eq!(checked(&two), Ok((two.len(), Framing::Head)));
    }

    #[test]
    fn a_body_split_across_reads_is_followed() {
        let mut framing = Framing::Head;
        let head = "PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabcd";
        assert_eq!(check(&mut framing, head.as_bytes()), Ok(head.len()));
        assert_eq!(framing, Framing::Body(6));
        // The body's bytes are not read as a head, whatever they hold.
        assert_eq!(check(&mut framing, b"NOT HT"), Ok(6));
        assert_eq!(framing, Framing::Head);
    }

    #[test]
    fn a_partial_head_is_held_back() {
        let text = "GET /slices HTTP/1.1\r\nHost: a\r\n\r\nGET /sli";
        assert_eq!(checked(text), Ok((text.len() - 8, Framing::Head)));
    }

    #[test]
    fn malformed_heads_are_refused() {
        assert_eq!(status("NOT HTTP AT ALL\r\n\r\n"), 400);
        assert_eq!(
            status("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: nope\r\n\r\n"),
            400
        );
        assert_eq!(
            status("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n"),
            400
        );
        assert_eq!(
            status("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            400
        );
        assert_eq!(status("GET / HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(
            status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"),
            400
        );
        assert_eq!(
            status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n"),
            400
        );
        assert_eq!(status("POST / HTTP/1.0\r\n\r\n"), 400);
    }

    #[test]
    fn oversized_heads_are_refused_431() {
        let long = format!("GET / HTTP/1.1\r\nX: {}", "x".repeat(MAX_REQUEST_HEAD));
        assert_eq!(status(&long), 431);
        let many: String = (0..=MAX_HEADERS).map(|i| format!("X-{i}: y\r\n")).collect();
        assert_eq!(
            status(&format!("GET / HTTP/1.1\r\nHost: a\r\n{many}\r\n")),
            431
        );
    }

    #[test]
    fn a_chunked_body_ends_the_checking() {
        let text = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc";
        assert_eq!(checked(text), Ok((text.len(), Framing::Unchecked)));
    }

    /// A connection that delivers the given pieces one read at a time and records what
    /// is written to it.
    #[derive(Default)]
    struct Scripted {
        pieces: std::collections::VecDeque<Vec<u8>>,
        written: Vec<u8>,
        shut: bool,
    }

    impl AsyncRead for Scripted {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            if let Some(mut piece) = self.pieces.pop_front() {
                let n = piece.len().min(buf.remaining());
                buf.put_slice(&piece[..n]);
                if n < piece.len() {
                    self.pieces.push_front(piece.split_off(n));
                }
            }
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncWrite for Scripted {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.written.extend_from_slice(buf);
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.shut = true;
            Poll::Ready(Ok(()))
        }
    }

    /// Reads the guarded stream to its end in reads of at most `chunk` bytes.
    async fn read_all(pieces: &[&str], chunk: usize) -> (Vec<u8>, Scripted) {
        use tokio::io::AsyncReadExt;
        let mut guard = HeadGuard::new(Scripted {
            pieces: pieces
                .iter()
                .map(|piece| piece.as_bytes().to_vec())
                .collect(),
            ..Scripted::default()
        });
        let mut passed = Vec::new();
        let mut buf = vec![0u8; chunk];
        loop {
            let n = guard.read(&mut buf).await.unwrap();
            if n == 0 {
                return (passed, guard.io);
            }
            passed.extend_from_slice(&buf[..n]);
        }
    }

    #[actix_rt::test]
    async fn a_head_in_pieces_is_passed_on_whole_once_checked() {
        let pieces = [
            "GET /sli",
            "ces HTTP/1.1\r\nHo",
            "st: a\r\nContent-Length: 3\r\n\r\nab",
            "cGET / HTTP/1.1\r\nHost: a\r\n\r\n",
        ];
        // A reader's buffer smaller than the head takes it in several reads.
        for chunk in [5, 8192] {
            let (passed, io) = read_all(&pieces, chunk).await;
            assert_eq!(String::from_utf8(passed).unwrap(), pieces.concat());
            assert!(io.written.is_empty() && !io.shut);
        }
    }

    #[actix_rt::test]
    async fn a_bad_head_in_pieces_is_answered_and_never_passed_on() {
        let pieces = [
            "GET / HTTP/1.1\r\nHost: a\r\n\r\nPOST / HTTP/1.1\r\nHost: a\r\nCont",
            "ent-Length: x\r\n\r\n",
        ];
        let (passed, io) = read_all(&pieces, 8192).await;
        assert_eq!(passed, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        let answer = String::from_utf8(io.written).unwrap();
        assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
        assert!(answer.ends_with("{\"error\":\"Content-Length is not a number of bytes\"}"));
        assert!(io.shut);
    }

    #[test]
    fn the_refusal_is_a_complete_json_response() {
        let answer = String::from_utf8(Refusal::bad("no").answer()).unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{answer}"
        );
        assert!(answer.ends_with("\r\n\r\n{\"error\":\"no\"}"), "{answer}");
        assert!(answer.contains("content-length: 14\r\n"), "{answer}");
    }
}
