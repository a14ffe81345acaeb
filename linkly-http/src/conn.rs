//! The HTTP server's accept loop: a cap on open connections and a header read timeout, which
//! `axum::serve` does not offer.
//!
//! A connection that does not send its request headers within the timeout is closed (this
//! covers keep-alive connections idle between requests too). When the cap is reached, a new
//! connection evicts the oldest idle one (no request in flight, no response streaming): a
//! flood of slow, half-sent requests cannot lock local clients out, and the process never runs
//! out of file descriptors. When every connection is busy, the new one is answered 503.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc, watch};

/// How long open connections get to finish at shutdown.
const DRAIN: Duration = Duration::from_secs(5);

/// Limits on connections (used by [`serve_connections`](crate::serve_connections)).
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// Open connections at most.
    pub max_connections: usize,
    /// The time a client gets to send a request's headers (and a keep-alive connection may
    /// stay idle).
    pub header_read_timeout: Duration,
}

/// One open connection.
#[derive(Debug, Default)]
struct Slot {
    /// Requests in flight, responses streaming included.
    active: AtomicUsize,
    /// Of those, the requests of callers who have not signed in: a connection whose requests
    /// are all such may be closed for a new one, as an idle one is.
    anonymous: AtomicUsize,
    evict: Notify,
}

impl Slot {
    fn evictable(&self) -> bool {
        self.active.load(Ordering::Acquire) <= self.anonymous.load(Ordering::Acquire)
    }
}

/// The connection a request came on (in its extensions), for the gate to say that its caller
/// has not signed in.
#[derive(Debug, Clone)]
pub(crate) struct ConnSlot(Arc<Slot>);

impl ConnSlot {
    /// Counts the request as a caller's who has not signed in, until the guard is dropped.
    pub(crate) fn evictable(&self) -> Evictable {
        self.0.anonymous.fetch_add(1, Ordering::AcqRel);
        Evictable(self.0.clone())
    }
}

/// See [`ConnSlot::evictable`].
pub(crate) struct Evictable(Arc<Slot>);

impl Drop for Evictable {
    fn drop(&mut self) {
        self.0.anonymous.fetch_sub(1, Ordering::AcqRel);
    }
}

#[derive(Debug, Default)]
struct Registry {
    next: u64,
    open: BTreeMap<u64, Arc<Slot>>,
}

impl Registry {
    /// Room for one more connection: evicts the oldest idle one (or one serving only callers
    /// who have not signed in) when full; `None` when full of busy ones.
    fn admit(&mut self, max: usize) -> Option<(u64, Arc<Slot>)> {
        if self.open.len() >= max.max(1) {
            let idle = self
                .open
                .iter()
                .find(|(_, s)| s.evictable())
                .map(|(&id, _)| id)?;
            if let Some(slot) = self.open.remove(&idle) {
                slot.evict.notify_one();
                tracing::debug!(
                    connection = idle,
                    "connection cap reached: closing the oldest idle connection"
                );
            }
        }
        let id = self.next;
        self.next += 1;
        let slot = Arc::new(Slot::default());
        self.open.insert(id, slot.clone());
        Some((id, slot))
    }
}

/// Removes a connection from the registry when its task ends.
struct Admitted {
    registry: Arc<Mutex<Registry>>,
    id: u64,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        lock(&self.registry).open.remove(&self.id);
    }
}

fn lock(registry: &Mutex<Registry>) -> std::sync::MutexGuard<'_, Registry> {
    registry.lock().unwrap_or_else(|e| e.into_inner())
}

/// Counts a request as in flight until its response body is finished or dropped.
struct Active(Arc<Slot>);

impl Active {
    fn new(slot: Arc<Slot>) -> Active {
        slot.active.fetch_add(1, Ordering::AcqRel);
        Active(slot)
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its request counted as in flight.
struct TrackedBody {
    inner: axum::body::Body,
    _active: Active,
}

impl http_body::Body for TrackedBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Accepts and serves connections on `listener` until `shutdown` resolves, then lets open
/// connections finish (for a few seconds at most).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let registry = Arc::new(Mutex::new(Registry::default()));
    let (drain_tx, drain_rx) = watch::channel(false);
    // Every connection task holds a sender: `recv` returns `None` once they are all gone.
    let (done_tx, mut done_rx) = mpsc::channel::<()>(1);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors, say: wait a little rather than spin.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let admitted = lock(&registry).admit(limits.max_connections);
        let Some((id, slot)) = admitted else {
            tracing::warn!(%peer, "connection cap reached, every connection busy: refusing");
            refuse(stream);
            continue;
        };
        let admitted = Admitted {
            registry: registry.clone(),
            id,
        };
        tokio::spawn(connection(
            stream,
            peer,
            app.clone(),
            slot,
            limits.header_read_timeout,
            drain_rx.clone(),
            (admitted, done_tx.clone()),
        ));
    }
    drop(listener);
    let _ = drain_tx.send(true);
    drop(done_tx);
    if tokio::time::timeout(DRAIN, done_rx.recv()).await.is_err() {
        tracing::info!("closing the connections still open after {DRAIN:?}");
    }
}

/// Answers 503 without reading the request, and closes the connection.
fn refuse(stream: TcpStream) {
    const BODY: &str = "too many open connections; try again shortly\n";
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\nretry-after: 1\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{BODY}",
        BODY.len()
    );
    let _ = stream.try_write(response.as_bytes());
}

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    slot: Arc<Slot>,
    header_read_timeout: Duration,
    mut drain: watch::Receiver<bool>,
    _held: (Admitted, mpsc::Sender<()>),
) {
    let _ = stream.set_nodelay(true);
    let service_slot = slot.clone();
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        let active = Active::new(service_slot.clone());
        request.extensions_mut().insert(ConnectInfo(peer));
        request
            .extensions_mut()
            .insert(ConnSlot(service_slot.clone()));
        let mut app = app.clone();
        async move {
            let response = tower_service::Service::call(&mut app, request).await?;
            Ok::<_, Infallible>(response.map(|inner| TrackedBody {
                inner,
                _active: active,
            }))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout)
        .keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    let mut conn = std::pin::pin!(conn);
    let mut draining = *drain.borrow();
    if draining {
        conn.as_mut().graceful_shutdown();
    }
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%peer, error = %e, "connection ended");
                }
                return;
            }
            () = slot.evict.notified() => return,
            changed = drain.changed(), if !draining => {
                draining = true;
                if changed.is_ok() {
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_registry_evicts_the_oldest_idle_connection_or_refuses() {
        let mut r = Registry::default();
        let (a, slot_a) = r.admit(2).unwrap();
        let (b, slot_b) = r.admit(2).unwrap();
        let _busy = Active::new(slot_a.clone());
        // `a` is busy: `b`, the oldest idle one, goes.
        let (c, _) = r.admit(2).unwrap();
        assert_eq!(r.open.keys().copied().collect::<Vec<_>>(), vec![a, c]);
        drop(slot_b);
        let _busy_c = Active::new(r.open[&c].clone());
        assert!(r.admit(2).is_none());
        assert_eq!(r.open.len(), 2);
        let _ = b;
    }
}
