//! LAN access while the server runs. A server started for this computer listens on loopback;
//! when the person turns LAN access on (`lan_enabled`, from the window's Agents page or
//! `linkly config`), a second listener opens on this computer's network address, on the same
//! port, and it closes when LAN access is turned off — no restart either way. The gate reads
//! the same setting at every request, so a connection the listener accepted before it closed is
//! refused too (`linkly_http::LAN_OFF`).

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use linkly_http::ConnLimits;
use linkly_tools::Linkly;

/// How often the setting is read.
const EVERY: Duration = Duration::from_millis(500);

/// The LAN listener: where it listens while open, and how to close it.
#[derive(Default)]
pub(crate) struct Listener {
    open: Mutex<Option<Open>>,
}

struct Open {
    address: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
}

impl Listener {
    /// Where other computers reach the server while LAN access is on.
    pub(crate) fn address(&self) -> Option<SocketAddr> {
        self.lock().as_ref().map(|o| o.address)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Open>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Opens and closes `listener` as the setting says, for as long as the server runs: `router`
/// (the server's routes behind its gate) served on this computer's network address at `port`.
pub(crate) async fn follow(
    linkly: Arc<Linkly>,
    listener: Arc<Listener>,
    port: u16,
    router: axum::Router,
    limits: ConnLimits,
) {
    // The last failure to open, said once until it changes.
    let mut failed: Option<String> = None;
    loop {
        let on = linkly.config().lan_access().is_some();
        let open = listener.address().is_some();
        if on && !open {
            match open_on(port).await {
                Ok((tcp, address)) => {
                    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
                    tokio::spawn(linkly_http::serve_connections(
                        tcp,
                        router.clone(),
                        limits,
                        async move {
                            let _ = stopped.await;
                        },
                    ));
                    *listener.lock() = Some(Open { address, stop });
                    failed = None;
                    tracing::info!(%address, "LAN access on");
                    eprintln!(
                        "LAN access on: other computers open http://{address}/ and sign in with the LAN token; they read only the libraries in lan_shared_libraries. The token travels over plain HTTP: use trusted networks"
                    );
                }
                Err(why) => {
                    if failed.as_deref() != Some(why.as_str()) {
                        tracing::warn!(error = %why, "LAN access is on but cannot listen");
                        eprintln!("LAN access is on but cannot listen: {why}");
                        failed = Some(why);
                    }
                }
            }
        } else if !on && let Some(o) = listener.lock().take() {
            let _ = o.stop.send(());
            tracing::info!(address = %o.address, "LAN access off");
            eprintln!("LAN access off: {} closed", o.address);
        }
        tokio::time::sleep(EVERY).await;
    }
}

/// A listener on this computer's network address at `port`.
async fn open_on(port: u16) -> Result<(tokio::net::TcpListener, SocketAddr), String> {
    let ip = network_address().ok_or_else(|| {
        "this computer has no network address (no route beyond loopback)".to_string()
    })?;
    let address = SocketAddr::new(ip, port);
    let tcp = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| format!("{address}: {e}"))?;
    Ok((tcp, address))
}

/// This computer's address on the local network: the one its route to another host leaves
/// from (a UDP socket "connected" to it, which sends nothing), tried towards the documentation
/// network of the default route, then each private range.
pub(crate) fn network_address() -> Option<IpAddr> {
    [
        "192.0.2.1:9",
        "10.255.255.254:9",
        "172.31.255.254:9",
        "192.168.255.254:9",
    ]
    .into_iter()
    .find_map(|probe| {
        let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
        socket.connect(probe).ok()?;
        let ip = socket.local_addr().ok()?.ip();
        (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
    })
}
