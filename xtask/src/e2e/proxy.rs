//! A TCP proxy on loopback that can black-hole everything through it and then let it
//! through again: a network partition between one process and another. While cut,
//! bytes are read and dropped (a partition loses packets, it does not reset
//! connections), and new connections are held open without a byte forwarded.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;

pub(super) struct Proxy {
    pub addr: SocketAddr,
    cut: Arc<AtomicBool>,
    stopped: Arc<AtomicBool>,
    /// Every socket of the proxy, to end them all when it stops or a cut is lifted.
    sockets: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    /// A proxy to `target` on a free loopback port, forwarding until cut.
    pub(super) fn start(target: SocketAddr) -> anyhow::Result<Proxy> {
        Self::start_on(
            TcpListener::bind("127.0.0.1:0").context("a proxy port")?,
            target,
        )
    }

    /// A proxy to `target` on a listener bound elsewhere (in another network namespace).
    pub(super) fn start_on(listener: TcpListener, target: SocketAddr) -> anyhow::Result<Proxy> {
        listener.set_nonblocking(true)?;
        let proxy = Proxy {
            addr: listener.local_addr()?,
            cut: Arc::default(),
            stopped: Arc::default(),
            sockets: Arc::default(),
        };
        let (cut, stopped, sockets) = (
            Arc::clone(&proxy.cut),
            Arc::clone(&proxy.stopped),
            Arc::clone(&proxy.sockets),
        );
        std::thread::spawn(move || accept(listener, target, &cut, &stopped, &sockets));
        Ok(proxy)
    }

    /// From now on nothing gets through, either way.
    pub(super) fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }

    /// Lets traffic through again. The connections made or used during the cut are
    /// ended, as a partition's would be by the time it heals (their peers timed out).
    pub(super) fn restore(&self) {
        self.end_all();
        self.cut.store(false, Ordering::SeqCst);
    }

    fn end_all(&self) {
        if let Ok(mut sockets) = self.sockets.lock() {
            for socket in sockets.drain(..) {
                let _ = socket.shutdown(Shutdown::Both);
            }
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.end_all();
    }
}

fn accept(
    listener: TcpListener,
    target: SocketAddr,
    cut: &Arc<AtomicBool>,
    stopped: &AtomicBool,
    sockets: &Mutex<Vec<TcpStream>>,
) {
    while !stopped.load(Ordering::SeqCst) {
        let client = match listener.accept() {
            Ok((client, _)) => client,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        let _ = client.set_nonblocking(false);
        let keep = |socket: &TcpStream| {
            if let (Ok(mut sockets), Ok(copy)) = (sockets.lock(), socket.try_clone()) {
                sockets.push(copy);
            }
        };
        keep(&client);
        if cut.load(Ordering::SeqCst) {
            // Held open, never answered: what a connection into a partition sees.
            continue;
        }
        let Ok(server) = TcpStream::connect(target) else {
            let _ = client.shutdown(Shutdown::Both);
            continue;
        };
        keep(&server);
        for (from, to) in [(&client, &server), (&server, &client)] {
            let (Ok(from), Ok(to)) = (from.try_clone(), to.try_clone()) else {
                continue;
            };
            let cut = Arc::clone(cut);
            std::thread::spawn(move || pipe(from, to, &cut));
        }
    }
}

/// Copies `from` to `to` until either ends; drops what arrives while cut.
fn pipe(mut from: TcpStream, mut to: TcpStream, cut: &AtomicBool) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        let read = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        if cut.load(Ordering::SeqCst) {
            continue;
        }
        if to.write_all(&buffer[..read]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
