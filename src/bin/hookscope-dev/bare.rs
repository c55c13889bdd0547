//! The ceiling for the benchmarks (`hookscope-dev bare`): a bare axum server on the receiver's
//! runtime shape (2 workers) that reads each body and answers 200 without checking or storing.
//!
//! With `--durable DIR` it is instead the floor of what issue 19 asks of a receiver, and nothing
//! more: it checks each Standard Webhooks signature (`--secret`, with the library's own
//! functions) and answers 200 only once the body is on disk. Handlers hand their bodies to one
//! thread that appends every body waiting, `fdatasync`s once and answers them all (a group
//! commit). No duplicate check, no tables, no index, no output: what any receiver that
//! verifies and means "on disk" by its 2xx must at least spend.

use std::net::SocketAddr;
use std::path::PathBuf;

use axum::http::{HeaderMap, StatusCode};
use tokio::sync::oneshot;

use hookscope::domain::scheme::{Key, Scheme, Secret};

/// What `--durable` appends and syncs: a body and who waits for its sync.
type Pending = (axum::body::Bytes, oneshot::Sender<bool>);

/// Serves until killed. `durable`: where to append, and the secret to verify with.
pub fn serve_bare(addr: SocketAddr, durable: Option<(PathBuf, Secret)>) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let durable = durable.map(start_durable).transpose()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| e.to_string())?;
        eprintln!(
            "listening on http://{}",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        let app = match durable {
            None => axum::Router::new().fallback(|body: axum::body::Bytes| async move {
                let _ = body.len();
                (StatusCode::OK, "{\"received\":true}\n")
            }),
            Some((queue, scheme, key)) => {
                axum::Router::new().fallback(move |headers: HeaderMap, body: axum::body::Bytes| {
                    let (queue, scheme, key) = (queue.clone(), scheme.clone(), key.clone());
                    async move {
                        if !verified(&scheme, &key, &headers, &body) {
                            return (StatusCode::UNAUTHORIZED, "{\"received\":false}\n");
                        }
                        let (done, synced) = oneshot::channel();
                        if queue.send((body, done)).is_err() || synced.await != Ok(true) {
                            return (StatusCode::SERVICE_UNAVAILABLE, "{\"received\":false}\n");
                        }
                        (StatusCode::OK, "{\"received\":true}\n")
                    }
                })
            }
        };
        axum::serve(listener, app).await.map_err(|e| e.to_string())
    })
}

/// Whether one of the delivery's Standard Webhooks signatures is `key`'s: the library's own
/// header parsing and constant-time match, without building a `Delivery`.
fn verified(scheme: &Scheme, key: &Key, headers: &HeaderMap, body: &[u8]) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(id), Some(ts), Some(signatures)) = (
        header("webhook-id"),
        header("webhook-timestamp"),
        headers.get("webhook-signature"),
    ) else {
        return false;
    };
    let Ok(parsed) = scheme.parse_header(signatures.as_bytes()) else {
        return false;
    };
    let messages = [scheme.signed_payload(id, ts, body)];
    parsed
        .signatures
        .iter()
        .any(|(kind, signature)| scheme.matches(key, *kind, signature, &messages, None))
}

/// Starts the group-commit thread appending to `DIR/bare.log`.
#[allow(clippy::type_complexity)]
fn start_durable(
    (dir, secret): (PathBuf, Secret),
) -> Result<
    (
        std::sync::mpsc::SyncSender<Pending>,
        Scheme,
        std::sync::Arc<Key>,
    ),
    String,
> {
    let scheme = Scheme::preset("standard-webhooks").ok_or("no standard-webhooks preset")?;
    let key = match scheme.key(&secret) {
        Ok(key @ Key::Mac(_)) => key,
        _ => return Err("--secret is not a Standard Webhooks HMAC secret (whsec_…)".into()),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join("bare.log");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let (queue, bodies) = std::sync::mpsc::sync_channel::<Pending>(4096);
    std::thread::Builder::new()
        .name("bare-group-commit".into())
        .spawn(move || {
            use std::io::Write as _;
            let mut buffer = Vec::new();
            let mut waiting = Vec::new();
            while let Ok(first) = bodies.recv() {
                waiting.push(first);
                waiting.extend(bodies.try_iter());
                buffer.clear();
                for (body, _) in &waiting {
                    buffer.extend_from_slice(&(body.len() as u32).to_le_bytes());
                    buffer.extend_from_slice(body);
                }
                let ok = file
                    .write_all(&buffer)
                    .and_then(|()| file.sync_data())
                    .is_ok();
                for (_, done) in waiting.drain(..) {
                    let _ = done.send(ok);
                }
            }
        })
        .map_err(|e| e.to_string())?;
    Ok((queue, scheme, std::sync::Arc::new(key)))
}
