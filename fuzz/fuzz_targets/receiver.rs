//! The receiver itself, over a real loopback connection: a running receiver (real store, real
//! checks, a Standard Webhooks secret so signatures are verified) gets either a well-formed
//! request built from arbitrary parts (method, path, headers, body, chunked or not), which must
//! be answered with a status within 10 s, or arbitrary bytes followed by end-of-input, after
//! which the connection must close within 10 s. Any panic on any of the receiver's threads
//! aborts the run (libFuzzer's panic hook). Every 64 inputs, a plain request checks that the
//! receiver still answers.
#![no_main]
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
enum Input {
    Raw(Vec<u8>),
    Request {
        method: String,
        path: String,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        chunked: bool,
    },
}

struct Running {
    addr: SocketAddr,
    _receiver: hookscope::net::receiver::Receiver,
    _store: hookscope::store::Store,
}

fn running() -> SocketAddr {
    static RUNNING: OnceLock<Running> = OnceLock::new();
    RUNNING
        .get_or_init(|| {
            // A RAM disk when there is one: every delivery is committed with fsync.
            let base = if std::path::Path::new("/dev/shm").is_dir() {
                std::path::PathBuf::from("/dev/shm")
            } else {
                std::env::temp_dir()
            };
            let dir = base.join(format!("hookscope-fuzz-receiver-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let store = hookscope::store::Store::open(&dir.join("hookscope.sqlite")).expect("store");
            let settings = hookscope::config::Settings::resolve(
                &hookscope::config::ConfigFile::default(),
                &hookscope::config::Overrides {
                    scheme: Some("standard-webhooks".into()),
                    secrets: vec![hookscope::domain::scheme::Secret::new(
                        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                    )],
                    ..Default::default()
                },
            )
            .expect("settings");
            let receiver = hookscope::net::receiver::Receiver::start(
                [127, 0, 0, 1].into(),
                0,
                hookscope::capture::SharedSettings::new(settings),
                store.writer(),
                None,
                std::sync::Arc::new(hookscope::capture::Controls::default()),
            )
            .expect("receiver");
            Running { addr: receiver.local_addr(), _receiver: receiver, _store: store }
        })
        .addr
}

fn token(text: &str, fallback: &str) -> String {
    let t: String = text
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(*c))
        .take(64)
        .collect();
    if t.is_empty() { fallback.to_string() } else { t }
}

fn visible(text: &str) -> String {
    text.chars().filter(|c| c.is_ascii_graphic() || *c == ' ' || *c == '\t').take(2048).collect()
}

/// Sends `bytes` and reads what comes back until the server closes; panics on a hang. With
/// `end`, the client's side is closed after the bytes (hyper then drops the connection rather
/// than answer: a client that half-closes is taken as gone), so arbitrary bytes cannot leave
/// the server waiting for more.
fn exchange(addr: SocketAddr, bytes: &[u8], end: bool) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    stream.set_write_timeout(Some(Duration::from_secs(10))).expect("timeout");
    // The server may answer and close before taking everything (413, 431).
    let _ = stream.write_all(bytes);
    if end {
        let _ = stream.shutdown(std::net::Shutdown::Write);
    }
    let mut answer = Vec::new();
    match stream.read_to_end(&mut answer) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {
            panic!("the receiver hung: no end of answer within 10 s ({} bytes so far)", answer.len())
        }
        // A reset after an early answer is fine.
        Err(_) => {}
    }
    answer
}

static RUNS: AtomicU64 = AtomicU64::new(0);

fuzz_target!(|input: Input| {
    let addr = running();
    match input {
        Input::Raw(bytes) => {
            exchange(addr, &bytes, true);
        }
        Input::Request { method, path, headers, body, chunked } => {
            let method = token(&method, "POST");
            let path = format!("/{}", visible(&path).replace([' ', '\t'], "").trim_start_matches('/'));
            let mut request = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
            for (name, value) in headers.iter().take(64) {
                let name = token(name, "x-fuzz");
                if ["host", "content-length", "transfer-encoding", "connection", "expect", "upgrade"]
                    .contains(&name.to_ascii_lowercase().as_str())
                {
                    continue;
                }
                request.push_str(&format!("{name}: {}\r\n", visible(value).trim()));
            }
            let mut bytes = if chunked {
                request.push_str("Transfer-Encoding: chunked\r\n\r\n");
                let mut b = request.into_bytes();
                for chunk in body.chunks(100) {
                    b.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                    b.extend_from_slice(chunk);
                    b.extend_from_slice(b"\r\n");
                }
                b.extend_from_slice(b"0\r\n\r\n");
                b
            } else {
                request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
                let mut b = request.into_bytes();
                b.extend_from_slice(&body);
                b
            };
            bytes.shrink_to_fit();
            let answer = exchange(addr, &bytes, false);
            assert!(
                answer.starts_with(b"HTTP/1.1 "),
                "a complete request got no answer: {:?} -> {:?}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(300)]),
                String::from_utf8_lossy(&answer)
            );
        }
    }
    if RUNS.fetch_add(1, Ordering::Relaxed) % 64 == 0 {
        let answer = exchange(
            addr,
            b"POST /still-there HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
            false,
        );
        assert!(answer.starts_with(b"HTTP/1.1 200"), "the receiver stopped answering: {:?}", String::from_utf8_lossy(&answer));
    }
});
