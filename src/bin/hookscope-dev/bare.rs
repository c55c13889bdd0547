//! The ceiling for the benchmarks (`hookscope-dev bare`): a bare axum server on the receiver's
//! runtime shape (2 workers) that reads each body and answers 200 without checking or storing.

use std::net::SocketAddr;

/// Serves until killed.
pub fn serve_bare(addr: SocketAddr) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| e.to_string())?;
        eprintln!(
            "listening on http://{}",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        let app = axum::Router::new().fallback(|body: axum::body::Bytes| async move {
            let _ = body.len();
            "{\"received\":true}\n"
        });
        axum::serve(listener, app).await.map_err(|e| e.to_string())
    })
}
