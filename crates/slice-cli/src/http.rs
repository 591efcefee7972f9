//! Just enough HTTP/1.1 to talk to `sliced` over its Unix socket: one request per
//! connection (`Connection: close`), a response read under a size limit and a deadline.
//!
//! httparse does the parsing (status line, header fields, chunk-size lines); what is
//! left here is the read loop that bounds the exchange in bytes and time, and the choice
//! of body framing. A client crate would bring a TLS stack, a connection pool and an
//! async runtime for what is four requests to a local socket.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use httparse::Status;

/// How long one exchange may take, first byte sent to last byte received. The daemon
/// answers a write only after an fsync, which on a loaded disk can take seconds: this is
/// long enough for that and short enough that a hung daemon does not hang the shell.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// The largest response accepted, status line and headers included. The biggest answer
/// is the port list of one slice, about 50 bytes a port: room for 300 000 ports.
pub(crate) const MAX_RESPONSE: usize = 16 * 1024 * 1024;

/// The most header (or trailer) fields one response head may carry; the daemon sends
/// about five.
const MAX_HEADERS: usize = 64;

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
    #[error("malformed response: {0}")]
    Syntax(#[from] httparse::Error),
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
        request += &format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        );
    }
    request += "\r\n";
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body.unwrap_or_default());
    let left = remaining(deadline, timeout)?;
    stream.set_write_timeout(Some(left))?;
    stream
        .write_all(&bytes)
        .map_err(|err| timed_out(err, timeout))
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
    received: usize,
    limit: usize,
    deadline: Instant,
    timeout: Duration,
}

/// What frames the body of a response.
enum Framing {
    Length(usize),
    Chunked,
    UntilClose,
}

impl Incoming {
    fn response(&mut self, method: &str) -> Result<Response, HttpError> {
        loop {
            let limit = self.limit;
            let (status, framing) = self.parse(|bytes| {
                let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut head = httparse::Response::new(&mut headers);
                let Status::Complete(len) = head.parse(bytes)? else {
                    return Ok(Status::Partial);
                };
                // A complete parse always has a status code: httparse checked it.
                let status = head.code.unwrap_or_default();
                let framing = framing(status, head.headers, method, limit)?;
                Ok(Status::Complete((len, (status, framing))))
            })?;
            // Interim responses (100 Continue and the like) precede the real one; 101 would
            // switch protocols, which was never asked for.
            if (100..200).contains(&status) {
                if status == 101 {
                    return Err(HttpError::Malformed("unexpected protocol switch"));
                }
                continue;
            }
            let body = match framing {
                Framing::Length(len) => self.take(len)?,
                Framing::Chunked => self.chunked()?,
                Framing::UntilClose => {
                    while self.fill()? {}
                    std::mem::take(&mut self.buf)
                }
            };
            return Ok(Response { status, body });
        }
    }

    fn chunked(&mut self) -> Result<Vec<u8>, HttpError> {
        let mut body = Vec::new();
        loop {
            let size = self.parse(|bytes| {
                httparse::parse_chunk_size(bytes)
                    .map_err(|_| HttpError::Malformed("invalid chunk size"))
            })?;
            if size == 0 {
                // Trailer fields carry nothing this client needs, but they end the body.
                self.parse(|bytes| {
                    let mut trailers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                    Ok(match httparse::parse_headers(bytes, &mut trailers)? {
                        Status::Complete((len, _)) => Status::Complete((len, ())),
                        Status::Partial => Status::Partial,
                    })
                })?;
                return Ok(body);
            }
            let size = usize::try_from(size).unwrap_or(usize::MAX);
            if size > self.limit.saturating_sub(body.len()) {
                return Err(HttpError::TooLarge { limit: self.limit });
            }
            body.extend_from_slice(&self.take(size)?);
            if self.take(2)? != b"\r\n" {
                return Err(HttpError::Malformed("chunk longer than its size"));
            }
        }
    }

    /// Runs `parse` over the unconsumed bytes, reading more until it finds a complete
    /// element `(length, value)`, and consumes the element.
    fn parse<T>(
        &mut self,
        mut parse: impl FnMut(&[u8]) -> Result<Status<(usize, T)>, HttpError>,
    ) -> Result<T, HttpError> {
        let mut searched = 0;
        loop {
            // Every element ends with a line end: parsing again before one arrives would
            // gain nothing and make one long line cost quadratic time.
            if self.buf[searched..].contains(&b'\n') {
                if let Status::Complete((len, value)) = parse(&self.buf)? {
                    self.buf.drain(..len);
                    return Ok(value);
                }
            }
            searched = self.buf.len();
            if !self.fill()? {
                return Err(HttpError::Malformed(
                    "connection closed in the middle of the head",
                ));
            }
        }
    }

    fn take(&mut self, len: usize) -> Result<Vec<u8>, HttpError> {
        while self.buf.len() < len {
            if !self.fill()? {
                return Err(HttpError::Malformed(
                    "connection closed before the body ended",
                ));
            }
        }
        let rest = self.buf.split_off(len);
        Ok(std::mem::replace(&mut self.buf, rest))
    }

    /// Reads what the socket has into the buffer; false at the end of the stream.
    fn fill(&mut self) -> Result<bool, HttpError> {
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

/// How the body of a response with `status` and `headers` is framed (RFC 9112 6.3).
fn framing(
    status: u16,
    headers: &[httparse::Header],
    method: &str,
    limit: usize,
) -> Result<Framing, HttpError> {
    let mut length: Option<usize> = None;
    let mut chunked = false;
    for header in headers {
        let value = header.value.trim_ascii();
        if header.name.eq_ignore_ascii_case("content-length") {
            if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
                return Err(HttpError::Malformed("invalid Content-Length"));
            }
            // All digits: only a length beyond usize fails, and that is too large anyway.
            let parsed = std::str::from_utf8(value)
                .ok()
                .and_then(|digits| digits.parse().ok())
                .unwrap_or(usize::MAX);
            if length.is_some_and(|seen| seen != parsed) {
                return Err(HttpError::Malformed("conflicting Content-Length headers"));
            }
            length = Some(parsed);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            // Only the last coding frames the message; anything but chunked there
            // means "read to the end", and a compression coding was never asked for.
            let last = value.rsplit(|&b| b == b',').next().unwrap_or_default();
            if !last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                return Err(HttpError::Malformed("unsupported transfer coding"));
            }
            chunked = true;
        }
    }
    let bodiless =
        method == "HEAD" || (100..200).contains(&status) || status == 204 || status == 304;
    Ok(match length {
        _ if bodiless => Framing::Length(0),
        _ if chunked => Framing::Chunked,
        Some(length) if length > limit => return Err(HttpError::TooLarge { limit }),
        Some(length) => Framing::Length(length),
        None => Framing::UntilClose,
    })
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
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nTrailer: x\r\n",
        ] {
            match run(reply) {
                Err(HttpError::Malformed(_) | HttpError::Syntax(_)) => {}
                other => panic!("{reply:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn a_head_with_more_fields_than_the_bound_is_rejected() {
        let fields = |count: usize| "X: y\r\n".repeat(count);
        let at_bound = format!("HTTP/1.1 200 OK\r\n{}Content-Length: 0\r\n\r\n", fields(63));
        assert_eq!(run(&at_bound).unwrap(), ok(200, ""));
        let beyond = format!("HTTP/1.1 200 OK\r\n{}Content-Length: 0\r\n\r\n", fields(64));
        match run(&beyond) {
            Err(HttpError::Syntax(httparse::Error::TooManyHeaders)) => {}
            other => panic!("{MAX_HEADERS} + 1 fields gave {other:?}"),
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
