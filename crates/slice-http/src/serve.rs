//! The HTTP servers that run the application: actix-server accepting connections and
//! actix-http's HTTP/1 service answering them, as actix-web's `HttpServer` would build
//! them, but with each connection wrapped in a [`HeadGuard`] so that a malformed request
//! head is answered with a JSON error rather than actix-http's empty one, and in a
//! [`HangupWatch`] so that an event stream ends as soon as its client hangs up.
//! `HttpServer` offers no way to wrap the connection, hence building the two parts here.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixListener;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_http::{error::DispatchError, HttpService, Protocol};
use actix_server::{GracefulShutdownSignal, Server, ServerBuilder};
use actix_service::{fn_service, map_config, ServiceFactory, ServiceFactoryExt};
use actix_web::dev::{AppConfig, Extensions};
use actix_web::rt::net::{TcpStream, UnixStream};
use actix_web::App;
use slice_core::SliceStore;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::account_names::AccountNames;
use crate::hangup::HangupWatch;
use crate::head_guard::HeadGuard;
use crate::{
    access_log_enabled, app, app_with_access_log, AppFactory, LocalPeer, NetworkView, Settings,
};

/// How long a closing connection is given to take its last bytes (actix-web's default).
const CLIENT_DISCONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a graceful stop waits for the connections still open before it drops them,
/// in seconds (actix-server counts whole seconds, and looks every second). Requests
/// under way take milliseconds; what else is open then is event streams, which the
/// daemon ends as it stops (`EventHub::close`), and clients that do not read, whose last
/// bytes cannot be written: actix's default of 30 s made every stop with a stream open
/// take 30 s.
pub const STOP_GRACE_SECS: u64 = 1;

/// Pending connections the kernel queues for each TCP listener (actix-web's default).
const LISTEN_BACKLOG: i32 = 1024;

/// How long the account name of the local socket's peer may take to look up (NSS may ask
/// a directory over the network); past it the peer is named by its user id.
const NAME_LOOKUP_TIMEOUT: Duration = Duration::from_secs(2);

/// What each worker builds its copy of the application from.
#[derive(Clone)]
pub struct AppParts {
    pub store: Arc<dyn SliceStore>,
    pub network: Option<Arc<dyn NetworkView>>,
    pub settings: Settings,
}

/// Binds a TCP listener on each address, as actix-web does; fails only if none binds.
pub fn bind_tcp(addrs: &[SocketAddr]) -> io::Result<Vec<TcpListener>> {
    let mut listeners = Vec::new();
    let mut last_error = None;
    for addr in addrs {
        match bind_one(*addr) {
            Ok(listener) => listeners.push(listener),
            Err(err) => last_error = Some(err),
        }
    }
    match (listeners.is_empty(), last_error) {
        (true, Some(err)) => Err(err),
        (true, None) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no address to listen on",
        )),
        (false, _) => Ok(listeners),
    }
}

fn bind_one(addr: SocketAddr) -> io::Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(LISTEN_BACKLOG)?;
    Ok(socket.into())
}

/// The server for TCP clients: `workers` threads sharing `max_connections` among them.
/// It handles no signals: the caller stops it through its handle, letting requests in
/// progress finish.
pub fn tcp_server(
    parts: &AppParts,
    listeners: Vec<TcpListener>,
    workers: usize,
    max_connections: usize,
) -> io::Result<Server> {
    let mut builder = Server::build()
        .workers(workers)
        // The daemon handles SIGINT and SIGTERM once for all its servers.
        .disable_signals()
        .shutdown_timeout(STOP_GRACE_SECS)
        // actix caps connections per worker, so the total is shared out among them.
        .max_concurrent_connections((max_connections / workers).max(1));
    let shutdown = builder.graceful_shutdown_signal();
    let access_log = access_log_enabled();
    for listener in listeners {
        builder = if access_log {
            listen_tcp(builder, listener, parts, &shutdown, app_with_access_log)?
        } else {
            listen_tcp(builder, listener, parts, &shutdown, app)?
        };
    }
    Ok(builder.run())
}

/// How a worker builds its application: [`app`], or [`app_with_access_log`].
trait MakeApp<F>:
    Fn(Arc<dyn SliceStore>, Option<Arc<dyn NetworkView>>, Settings) -> App<F> + Clone + Send + 'static
{
}

impl<M, F> MakeApp<F> for M where
    M: Fn(Arc<dyn SliceStore>, Option<Arc<dyn NetworkView>>, Settings) -> App<F>
        + Clone
        + Send
        + 'static
{
}

fn listen_tcp<F: AppFactory>(
    builder: ServerBuilder,
    listener: TcpListener,
    parts: &AppParts,
    shutdown: &GracefulShutdownSignal,
    make_app: impl MakeApp<F>,
) -> io::Result<ServerBuilder> {
    let parts = parts.clone();
    let shutdown = shutdown.clone();
    builder.listen("http", listener, move || {
        fn_service(|io: TcpStream| async move {
            let peer = io.peer_addr().ok();
            Ok((HangupWatch::new(HeadGuard::new(io)), Protocol::Http1, peer))
        })
        .and_then(http_service(&parts, shutdown.clone(), &make_app))
    })
}

/// The server for the local Unix socket, whose clients all count as [`LocalPeer`]s. It is
/// a server of its own so that the slice tool gets through while the TCP server is at its
/// connection cap (actix stops accepting on all of a server's sockets then).
pub fn local_server(parts: &AppParts, listener: UnixListener) -> io::Result<Server> {
    let builder = Server::build()
        .workers(1)
        .disable_signals()
        .shutdown_timeout(STOP_GRACE_SECS);
    let shutdown = builder.graceful_shutdown_signal();
    let builder = if access_log_enabled() {
        listen_local(builder, listener, parts, &shutdown, app_with_access_log)?
    } else {
        listen_local(builder, listener, parts, &shutdown, app)?
    };
    Ok(builder.run())
}

fn listen_local<F: AppFactory>(
    builder: ServerBuilder,
    listener: UnixListener,
    parts: &AppParts,
    shutdown: &GracefulShutdownSignal,
    make_app: impl MakeApp<F>,
) -> io::Result<ServerBuilder> {
    let parts = parts.clone();
    let shutdown = shutdown.clone();
    // One for the socket, whatever the workers: it bounds the lookups under way.
    let names = Arc::new(AccountNames::system());
    builder.listen_uds("local", listener, move || {
        let names = Arc::clone(&names);
        fn_service(move |io: UnixStream| {
            let names = Arc::clone(&names);
            async move {
                let peer = local_peer(&io, &names).await.map_err(|err| {
                    log::warn!("a connection to the local socket whose peer is unknown: {err}");
                    DispatchError::Io(err)
                })?;
                let io = HangupWatch::new(HeadGuard::new(io));
                Ok((LocalConnection { io, peer }, Protocol::Http1, None))
            }
        })
        .and_then(http_service(&parts, shutdown.clone(), &make_app))
    })
}

/// Who is at the other end of `stream`, as the kernel says (`SO_PEERCRED`: the user when
/// it connected), named by the account database through `names`, which looks each user
/// id up once. The request's headers are never asked: its client could write anything
/// there.
async fn local_peer(stream: &UnixStream, names: &AccountNames) -> io::Result<LocalPeer> {
    let uid = stream.peer_cred()?.uid();
    let name = names.name(uid, NAME_LOOKUP_TIMEOUT).await;
    Ok(LocalPeer::new(uid, name))
}

/// A guarded connection as each request sees it, in its connection data.
trait Connection: AsyncRead + AsyncWrite + Unpin + 'static {
    /// Puts what requests on this connection read into `data`: whether its client hung
    /// up, for the event streams, and on the local socket who the client is.
    fn describe(&self, data: &mut Extensions);
}

impl Connection for HangupWatch<HeadGuard<TcpStream>> {
    fn describe(&self, data: &mut Extensions) {
        data.insert(self.hangup());
    }
}

/// A connection to the local socket, with its peer.
struct LocalConnection {
    io: HangupWatch<HeadGuard<UnixStream>>,
    peer: LocalPeer,
}

impl Connection for LocalConnection {
    fn describe(&self, data: &mut Extensions) {
        data.insert(self.io.hangup());
        data.insert(self.peer.clone());
    }
}

impl AsyncRead for LocalConnection {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl AsyncWrite for LocalConnection {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
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
}

/// actix-http's HTTP/1 service over one kind of guarded connection.
fn http_service<C: Connection, F: AppFactory>(
    parts: &AppParts,
    shutdown: GracefulShutdownSignal,
    make_app: &impl MakeApp<F>,
) -> impl ServiceFactory<
    (C, Protocol, Option<SocketAddr>),
    Config = (),
    Response = (),
    Error = DispatchError,
    InitError = (),
> {
    let application = make_app(
        Arc::clone(&parts.store),
        parts.network.clone(),
        parts.settings.clone(),
    );
    let service = HttpService::build()
        // Ends idle keep-alive connections as soon as a graceful stop begins, as
        // `HttpServer` does (the hook is hidden from actix-http's docs but is what
        // actix-web itself calls).
        .graceful_shutdown_signal(move || {
            let shutdown = shutdown.clone();
            async move { shutdown.notified().await }
        })
        .client_request_timeout(parts.settings.request_timeout)
        .client_disconnect_timeout(CLIENT_DISCONNECT_TIMEOUT)
        .on_connect_ext(|io: &C, data: &mut Extensions| io.describe(data));
    // The application reads neither the configured host nor the local address (the Host
    // policy reads the header itself), so the default configuration serves.
    service.finish(map_config(application, |()| AppConfig::default()))
}
