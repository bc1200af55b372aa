//! The accept loop: HTTP/1.1 connections served by hyper with one shared router, and a shutdown that ends.
//!
//! `axum::serve` rebuilds the router's route table for every connection (about 6 KiB each, kept while a
//! stream is held) and waits forever on shutdown for streams that never end. Here the router is shared, a
//! shutdown first ends every stream (viewers resume from their last `seq` once the server is back), and
//! connections that still linger after a grace period are dropped.

use std::future::Future;
use std::io;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// How long a client may take to send a request's head (slow-loris connections are closed after it).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long open connections get to finish once a shutdown has ended the streams.
const DRAIN_PERIOD: Duration = Duration::from_secs(5);

/// Serves `app` on `listener` until `shutdown` resolves; `streams_end` is cancelled then, so held streams finish.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()>,
    streams_end: CancellationToken,
) -> io::Result<()> {
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(HEADER_READ_TIMEOUT);
    let service = TowerToHyperService::new(app);
    let connections = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(connection) => connection,
                Err(error) => {
                    accept_failed(error).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Frames are small and latency matters more than packet count.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!("could not set TCP_NODELAY: {error}");
        }
        let connection = connections.watch(http.serve_connection(TokioIo::new(stream), service.clone()));
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!("connection ended with an error: {error}");
            }
        });
    }
    drop(listener);
    streams_end.cancel();
    tokio::select! {
        () = connections.shutdown() => {}
        () = tokio::time::sleep(DRAIN_PERIOD) => tracing::warn!("closing connections still open after {DRAIN_PERIOD:?}"),
    }
    Ok(())
}

/// A failed accept: the peer's problem is skipped; running out of descriptors waits a moment instead of spinning.
async fn accept_failed(error: io::Error) {
    match error.kind() {
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset => {}
        _ => {
            tracing::error!("accepting a connection failed: {error}");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}
