//! Just enough HTTP/1.1 to talk to `sliced` over its Unix socket: one request per
//! connection (`Connection: close`), a response read under a size limit and a deadline.
//!
//! A client crate would bring a TLS stack, a connection pool and an async runtime for
//! what is four requests to a local socket; this is small enough to read in one sitting.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// How long one exchange may take, first byte sent to last byte received. The daemon
/// answers a write only after an fsync, which on a loaded disk can take seconds: this is
/// long enough for that and short enough that a hung daemon does not hang the shell.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// The largest response accepted, status line and headers included. The biggest answer
/// is the port list of one slice, about 50 bytes a port: room for 300 000 ports.
pub(crate) const MAX_RESPONSE: usize = 16 * 1024 * 1024;

/// Why an exchange with the daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("no complete response within {} s", .0.as_secs())]
    TimedOut(Duration),
    #[error("the response is larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("malformed response: {0}")]
    Malformed(&'static str),
}

/// A final (non-1xx) response.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Response {
    pub(crate) fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Bounds on one exchange; tests shrink them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub timeout: Duration,
    pub max_response: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: TIMEOUT,
            max_response: MAX_RESPONSE,
        }
    }
}

/// Sends one request on a fresh connection and reads the response. `body`, when given, is
/// sent as JSON.
pub(crate) fn exchange(
    stream: UnixStream,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
    limits: Limits,
) -> Result<Response, HttpError> {
    let deadline = Instant::now() + limits.timeout;
    send(&stream, method, path, body, deadline, limits.timeout)?;
    let mut incoming = Incoming {
        stream,
        buf: Vec::new(),
        pos: 0,
        received: 0,
        limit: limits.max_response,
        deadline,
        timeout: limits.timeout,
    };
    incoming.response(method)
}

fn send(
    mut stream: &UnixStream,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
    deadline: Instant,
    timeout: Duration,
) -> Result<(), HttpError> {
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\nConnection: close\r\n"
    );
    if let Some(body) = body {
        request.push_str("Content-Type: application/json\r\n");
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body.unwrap_or_default());
    let left = remaining(deadline, timeout)?;
    stream.set_write_timeout(Some(left))?;
    stream
        .write_all(&bytes)
        .map_err(|err| timed_out(err, timeout))?;
    stream.flush()?;
    Ok(())
}

/// The time left before `deadline`, or `TimedOut` when there is none.
fn remaining(deadline: Instant, timeout: Duration) -> Result<Duration, HttpError> {
    let left = deadline.saturating_duration_since(Instant::now());
    // The socket API rejects a zero timeout (it has no "expired" value): report it here.
    if left.is_zero() {
        return Err(HttpError::TimedOut(timeout));
    }
    Ok(left)
}

fn timed_out(err: std::io::Error, timeout: Duration) -> HttpError {
    match err.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            HttpError::TimedOut(timeout)
        }
        _ => HttpError::Io(err),
    }
}

/// The receiving side of a connection: bytes arrived but not yet consumed, and the
/// budget of bytes and time left.
struct Incoming {
    stream: UnixStream,
    buf: Vec<u8>,
    pos: usize,
    received: usize,
    limit: usize,
    deadline: Instant,
    timeout: Duration,
}

/// What frames the body of a response.
enum Framing {
    None,
    Length(usize),
    Chunked,
    UntilClose,
}

impl Incoming {
    fn response(&mut self, method: &str) -> Result<Response, HttpError> {
        loop {
            let status = self.status_line()?;
            let framing = self.headers(status, method)?;
            // Interim responses (100 Continue and the like) precede the real one; 101 would
            // switch protocols, which was never asked for.
            if (100..200).contains(&status) {
                if status == 101 {
                    return Err(HttpError::Malformed("unexpected protocol switch"));
                }
                continue;
            }
            let body = match framing {
                Framing::None => Vec::new(),
                Framing::Length(len) => self.take(len)?,
                Framing::Chunked => self.chunked()?,
                Framing::UntilClose => self.rest()?,
            };
            return Ok(Response { status, body });
        }
    }

    fn status_line(&mut self) -> Result<u16, HttpError> {
        let line = self.line()?;
        let line = std::str::from_utf8(&line)
            .map_err(|_| HttpError::Malformed("status line is not text"))?;
        let (version, rest) = line
            .split_once(' ')
            .ok_or(HttpError::Malformed("no status code"))?;
        if !version.starts_with("HTTP/1.") {
            return Err(HttpError::Malformed("not an HTTP/1.x response"));
        }
        let code = rest.split(' ').next().unwrap_or_default();
        if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
            return Err(HttpError::Malformed("status code is not three digits"));
        }
        code.parse()
            .map_err(|_| HttpError::Malformed("status code is not three digits"))
    }

    fn headers(&mut self, status: u16, method: &str) -> Result<Framing, HttpError> {
        let mut length: Option<usize> = None;
        let mut chunked = false;
        loop {
            let line = self.line()?;
            if line.is_empty() {
                break;
            }
            if line[0] == b' ' || line[0] == b'\t' {
                return Err(HttpError::Malformed("folded header line"));
            }
            let line = std::str::from_utf8(&line)
                .map_err(|_| HttpError::Malformed("header line is not text"))?;
            let (name, value) = line
                .split_once(':')
                .ok_or(HttpError::Malformed("header line without a colon"))?;
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(HttpError::Malformed("invalid Content-Length"));
                }
                let parsed = value.parse::<usize>().unwrap_or(usize::MAX);
                if length.is_some_and(|seen| seen != parsed) {
                    return Err(HttpError::Malformed("conflicting Content-Length headers"));
                }
                length = Some(parsed);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                // Only the last coding frames the message; anything but chunked there
                // means "read to the end", and a compression coding was never asked for.
                let last = value.rsplit(',').next().unwrap_or_default().trim();
                if !last.eq_ignore_ascii_case("chunked") {
                    return Err(HttpError::Malformed("unsupported transfer coding"));
                }
                chunked = true;
            }
        }
        let bodiless =
            method == "HEAD" || (100..200).contains(&status) || status == 204 || status == 304;
        Ok(if bodiless {
            Framing::None
        } else if chunked {
            Framing::Chunked
        } else if let Some(length) = length {
            if length > self.limit {
                return Err(HttpError::TooLarge { limit: self.limit });
            }
            Framing::Length(length)
        } else {
            Framing::UntilClose
        })
    }

    fn chunked(&mut self) -> Result<Vec<u8>, HttpError> {
        let mut body = Vec::new();
        loop {
            let line = self.line()?;
            let size = line.split(|&b| b == b';').next().unwrap_or_default();
            let size = std::str::from_utf8(size)
                .ok()
                .map(str::trim)
                .filter(|hex| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()))
                .ok_or(HttpError::Malformed("invalid chunk size"))?;
            let size = usize::from_str_radix(size, 16).unwrap_or(usize::MAX);
            if size == 0 {
                // Trailer fields carry nothing this client needs; skip to the blank line.
                while !self.line()?.is_empty() {}
                return Ok(body);
            }
            if size > self.limit.saturating_sub(body.len()) {
                return Err(HttpError::TooLarge { limit: self.limit });
            }
            body.extend_from_slice(&self.take(size)?);
            if !self.line()?.is_empty() {
                return Err(HttpError::Malformed("chunk longer than its size"));
            }
        }
    }

    /// The next line without its line ending (CRLF, or a bare LF as RFC 9112 tolerates).
    fn line(&mut self) -> Result<Vec<u8>, HttpError> {
        // Counted from `pos`, which `fill` may move when it compacts the buffer.
        let mut searched = 0;
        loop {
            let from = self.pos + searched;
            if let Some(at) = self.buf[from..].iter().position(|&b| b == b'\n') {
                let end = from + at;
                let mut line = self.buf[self.pos..end].to_vec();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                self.pos = end + 1;
                return Ok(line);
            }
            searched = self.buf.len() - self.pos;
            if !self.fill()? {
                return Err(HttpError::Malformed(
                    "connection closed in the middle of the head",
                ));
            }
        }
    }

    fn take(&mut self, len: usize) -> Result<Vec<u8>, HttpError> {
        while self.buf.len() - self.pos < len {
            if !self.fill()? {
                return Err(HttpError::Malformed(
                    "connection closed before the body ended",
                ));
            }
        }
        let bytes = self.buf[self.pos..self.pos + len].to_vec();
        self.pos += len;
        Ok(bytes)
    }

    fn rest(&mut self) -> Result<Vec<u8>, HttpError> {
        while self.fill()? {}
        let bytes = self.buf[self.pos..].to_vec();
        self.pos = self.buf.len();
        Ok(bytes)
    }

    /// Reads what the socket has into the buffer; false at the end of the stream.
    fn fill(&mut self) -> Result<bool, HttpError> {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let mut chunk = [0u8; 8192];
        loop {
            let left = remaining(self.deadline, self.timeout)?;
            self.stream.set_read_timeout(Some(left))?;
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.received += n;
                    if self.received > self.limit {
                        return Err(HttpError::TooLarge { limit: self.limit });
                    }
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(true);
                }
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(timed_out(err, self.timeout)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;
    use std::thread::JoinHandle;

    /// A server that reads one request and answers with `reply` (in pieces, to exercise
    /// the reassembly), then closes; its thread returns the request it saw.
    fn serve(reply: Vec<u8>) -> (tempfile::TempDir, UnixStream, JoinHandle<Vec<u8>>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let client = UnixStream::connect(&path).unwrap();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let request = read_request(&mut conn);
            for piece in reply.chunks(7) {
                // The client may have given up (a limit test): that is its right.
                if conn.write_all(piece).is_err() {
                    break;
                }
            }
            request
        });
        (dir, client, server)
    }

    fn read_request(conn: &mut UnixStream) -> Vec<u8> {
        let mut request = Vec::new();
        let mut byte = [0u8; 1];
        while !request.ends_with(b"\r\n\r\n") {
            conn.read_exact(&mut byte).unwrap();
            request.push(byte[0]);
        }
        let head = String::from_utf8(request.clone()).unwrap();
        let length = head
            .lines()
            .find_map(|line| line.strip_prefix("Content-Length: "))
            .map_or(0, |len| len.parse::<usize>().unwrap());
        let mut body = vec![0; length];
        conn.read_exact(&mut body).unwrap();
        request.extend_from_slice(&body);
        request
    }

    fn run(reply: &str) -> Result<Response, HttpError> {
        let (_dir, client, server) = serve(reply.as_bytes().to_vec());
        let result = exchange(client, "GET", "/slices", None, Limits::default());
        server.join().unwrap();
        result
    }

    fn ok(status: u16, body: &str) -> Response {
        Response {
            status,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn the_request_carries_the_headers_and_body() {
        let (_dir, client, server) =
            serve(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n".to_vec());
        let response = exchange(
            client,
            "POST",
            "/slices/a/ports/0x1:1/mac_addresses",
            Some(br#"{"name":"00:00:00:00:00:01"}"#),
            Limits::default(),
        )
        .unwrap();
        assert_eq!(response, ok(201, ""));
        let request = String::from_utf8(server.join().unwrap()).unwrap();
        assert_eq!(
            request,
            "POST /slices/a/ports/0x1:1/mac_addresses HTTP/1.1\r\n\
             Host: localhost\r\n\
             Accept: application/json\r\n\
             Connection: close\r\n\
             Content-Type: application/json\r\n\
             Content-Length: 28\r\n\
             \r\n\
             {\"name\":\"00:00:00:00:00:01\"}"
        );
    }

    #[test]
    fn a_get_has_no_body_headers() {
        let (_dir, client, server) =
            serve(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]".to_vec());
        exchange(client, "GET", "/slices", None, Limits::default()).unwrap();
        let request = String::from_utf8(server.join().unwrap()).unwrap();
        assert!(!request.contains("Content-Length"), "{request}");
        assert!(request.starts_with("GET /slices HTTP/1.1\r\n"), "{request}");
    }

    #[test]
    fn bodies_framed_by_length_stop_at_the_length() {
        // Bytes after the body belong to no one; the client must not wait for them.
        let response =
            run("HTTP/1.1 200 OK\r\ncontent-length: 7\r\nX-Other: a:b\r\n\r\n[\"a\",1]extra")
                .unwrap();
        assert_eq!(response, ok(200, "[\"a\",1]"));
    }

    #[test]
    fn chunked_bodies_are_reassembled() {
        let response = run(
            "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n\
             4;ext=1\r\n{\"er\r\nF\r\nror\":\"gone!\"}xx\r\n0\r\nTrailer: x\r\n\r\n",
        )
        .unwrap();
        assert_eq!(response, ok(404, "{\"error\":\"gone!\"}xx"));
    }

    #[test]
    fn chunked_wins_over_content_length() {
        let response = run(
            "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[]\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(response, ok(200, "[]"));
    }

    #[test]
    fn without_framing_the_body_runs_to_the_close() {
        let response = run("HTTP/1.0 200 OK\nServer: old\n\n[1,2,3]").unwrap();
        assert_eq!(response, ok(200, "[1,2,3]"));
    }

    #[test]
    fn interim_responses_are_skipped_and_204_has_no_body() {
        let response = run("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n").unwrap();
        assert_eq!(response, ok(204, ""));
    }

    #[test]
    fn malformed_responses_are_rejected() {
        for reply in [
            "",
            "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
            "HTTP/1.1 2x0 OK\r\n\r\n",
            "SSH-2.0-OpenSSH\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n",
            "HTTP/1.1 101 Switching Protocols\r\n\r\n",
        ] {
            match run(reply) {
                Err(HttpError::Malformed(_)) => {}
                other => panic!("{reply:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn oversized_responses_are_cut_off() {
        let limits = Limits {
            timeout: TIMEOUT,
            max_response: 64,
        };
        let huge_length = "HTTP/1.1 200 OK\r\nContent-Length: 65\r\n\r\n".to_owned();
        let huge_chunk = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n41\r\n".to_owned();
        let endless = format!("HTTP/1.1 200 OK\r\n\r\n{}", "x".repeat(100));
        let long_header = format!("HTTP/1.1 200 OK\r\nX: {}", "x".repeat(100));
        for reply in [huge_length, huge_chunk, endless, long_header] {
            let (_dir, client, server) = serve(reply.clone().into_bytes());
            let result = exchange(client, "GET", "/", None, limits);
            server.join().unwrap();
            match result {
                Err(HttpError::TooLarge { limit: 64 }) => {}
                other => panic!("{reply:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn a_silent_server_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        // Accepted by the kernel's backlog, never answered.
        let _listener = UnixListener::bind(&path).unwrap();
        let client = UnixStream::connect(&path).unwrap();
        let limits = Limits {
            timeout: Duration::from_millis(200),
            max_response: MAX_RESPONSE,
        };
        let started = Instant::now();
        match exchange(client, "GET", "/", None, limits) {
            Err(HttpError::TimedOut(_)) => {}
            other => panic!("expected a time-out, got {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
