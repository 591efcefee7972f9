//! Telling a response that streams for ever (`GET /events`) that its client hung up.
//!
//! actix-http learns that a client closed its connection in two ways only: its next read
//! of the socket returns end of file, or its next write fails. Neither ends a streamed
//! response by itself:
//!
//! - A client's close arrives as a FIN, and actix-http, which allows half-closed
//!   connections, notes "read side closed" and goes on streaming to a socket left in
//!   CLOSE-WAIT, since HTTP lets a client shut its sending side and still read.
//! - The first write after the FIN succeeds (the client's kernel answers it with a
//!   reset); only a write after that fails and drops the response. An idle event stream
//!   writes a keep-alive comment every 15 s, so its slot stayed taken for up to 30 s
//!   after the client left (measured on an idle stream: the socket in CLOSE-WAIT for
//!   15.1 s, the slot free after 30.3 s). The answer to a HEAD writes no body at all, so
//!   a stream opened by a HEAD was never noticed to be gone until it fell 1,024 events
//!   behind (300 HEADs closed at once held all 256 slots).
//!
//! Shorter keep-alives would only shorten the wait, at the cost of traffic on every
//! stream; turning half-closed connections off (`h1_allow_half_closed(false)`) would end
//! every response, not only streams, as soon as a client shuts its sending side, which
//! an HTTP/1.0-style client may do right after its request. Instead, [`HangupWatch`]
//! sits on each connection and records when a read of the socket returns end of file or
//! fails; actix-http reads the socket on every turn of its dispatcher, a streamed
//! response included, so this happens as soon as the FIN arrives. The connection's
//! [`Hangup`] is in its data (`HttpRequest::conn_data`), and a stream waits on it beside
//! its events, so it ends, and gives its slot back, at once (measured: the slot free 1
//! to 2 ms after the client's close, a scrape of the gauge included).
//!
//! A client that half-closes and keeps reading loses its event stream (it reconnects
//! with `Last-Event-ID`); every other response finishes as before. actix-http stops
//! reading while its input buffer is full (128 KiB), so a client that sends that much
//! behind its stream request is noticed only at a failed write, as before.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;

/// A connection's byte stream, which records when its client hung up.
pub(crate) struct HangupWatch<T> {
    io: T,
    hung_up: watch::Sender<bool>,
}

/// Whether a connection's client hung up; in the connection's data.
#[derive(Clone)]
pub(crate) struct Hangup(watch::Receiver<bool>);

impl<T> HangupWatch<T> {
    pub(crate) fn new(io: T) -> Self {
        Self {
            io,
            hung_up: watch::Sender::new(false),
        }
    }

    /// What requests on this connection wait on.
    pub(crate) fn hangup(&self) -> Hangup {
        Hangup(self.hung_up.subscribe())
    }

    fn record_hangup(&self) {
        self.hung_up
            .send_if_modified(|hung_up| !std::mem::replace(hung_up, true));
    }
}

impl Hangup {
    /// Returns once the client hung up or its connection is gone.
    pub(crate) async fn wait(&mut self) {
        // An error is the connection dropped, which is gone too.
        let _ = self.0.wait_for(|hung_up| *hung_up).await;
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for HangupWatch<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let (before, room) = (buf.filled().len(), buf.remaining());
        let read = Pin::new(&mut this.io).poll_read(cx, buf);
        let ended = match &read {
            // Nothing read into a buffer with room: end of file.
            Poll::Ready(Ok(())) => room > 0 && buf.filled().len() == before,
            Poll::Ready(Err(err)) => err.kind() != io::ErrorKind::WouldBlock,
            Poll::Pending => false,
        };
        if ended {
            this.record_hangup();
        }
        read
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for HangupWatch<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn end_of_file_is_a_hangup_and_data_is_not() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut watched = HangupWatch::new(server);
        let mut hangup = watched.hangup();
        client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        let mut buf = [0u8; 64];
        let n = watched.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"GET / HTTP/1.1\r\n");
        assert!(!*hangup.0.borrow(), "data is no hangup");
        drop(client);
        assert_eq!(watched.read(&mut buf).await.unwrap(), 0);
        tokio::time::timeout(Duration::from_secs(1), hangup.wait())
            .await
            .expect("the hangup is seen");
    }

    #[tokio::test]
    async fn a_connection_dropped_is_a_hangup() {
        let (_client, server) = tokio::io::duplex(64);
        let watched = HangupWatch::new(server);
        let mut hangup = watched.hangup();
        drop(watched);
        tokio::time::timeout(Duration::from_secs(1), hangup.wait())
            .await
            .expect("a dropped connection is a hangup");
    }
}
