//! Serving a test double's router on a local port until its owner stops it (or drops the handle).

use std::net::SocketAddr;

use axum::Router;
use tokio::sync::oneshot;

/// A router served in the background; dropping `stop` (or sending on it) ends the server gracefully.
pub(crate) struct Served<S> {
    pub addr: SocketAddr,
    pub state: S,
    pub stop: oneshot::Sender<()>,
}

/// Binds `addr` (port 0: a free port), builds the state and router from the bound address (doubles put their
/// own URL in what they answer), and serves in the background.
pub(crate) async fn serve<S>(
    addr: SocketAddr,
    build: impl FnOnce(SocketAddr) -> (S, Router),
) -> Result<Served<S>, (SocketAddr, std::io::Error)> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| (addr, source))?;
    let addr = listener.local_addr().map_err(|source| (addr, source))?;
    let (state, app) = build(addr);
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        // A dropped sender stops the server too.
        let shutdown = async {
            let _ = stopped.await;
        };
        // Serving only ends on shutdown or a listener failure, which leaves nothing to report to.
        let _ = axum::serve(listener, app).with_graceful_shutdown(shutdown).await;
    });
    Ok(Served { addr, state, stop })
}
