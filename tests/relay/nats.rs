//! Real `nats-server -js` processes on loopback for the relay's cluster store (Debian's package,
//! installed by `.ci/run`), and a TCP balancer in front of relay instances.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free port on loopback (bound and released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Whether `nats-server` runs here; when it does not, the test says skipped (and fails under
/// `.ci/run`, which installs it).
pub fn available() -> bool {
    if super::common::tool_runs(&["nats-server", "--version"]) {
        return true;
    }
    super::common::skip("nats-server not found (apt-get install nats-server)");
    false
}

/// A JetStream cluster of `nodes` servers (one: a single JetStream server), each with its own
/// store dir; every server is killed when it is dropped.
pub struct Nats {
    dir: tempfile::TempDir,
    client_ports: Vec<u16>,
    children: Vec<Option<Child>>,
}

impl Nats {
    /// Starts the servers and waits until JetStream answers on every one.
    pub fn start(nodes: usize) -> Nats {
        let dir = tempfile::tempdir().expect("dir");
        let client_ports: Vec<u16> = (0..nodes).map(|_| free_port()).collect();
        let route_ports: Vec<u16> = (0..nodes).map(|_| free_port()).collect();
        for i in 0..nodes {
            let routes: Vec<String> = (0..nodes)
                .filter(|j| *j != i)
                .map(|j| format!("nats-route://127.0.0.1:{}", route_ports[j]))
                .collect();
            let cluster = if nodes > 1 {
                format!(
                    "cluster {{ name: hookscope, listen: 127.0.0.1:{}, routes: [{}] }}\n",
                    route_ports[i],
                    routes.join(", ")
                )
            } else {
                String::new()
            };
            // 32 MiB messages, so that the relay's 25 MiB bodies fit.
            let config = format!(
                "server_name: n{i}\nlisten: 127.0.0.1:{}\nmax_payload: 33554432\njetstream {{ store_dir: \"{}\" }}\n{cluster}",
                client_ports[i],
                dir.path().join(format!("n{i}")).display()
            );
            std::fs::write(dir.path().join(format!("n{i}.conf")), config).expect("config");
        }
        let mut nats = Nats {
            dir,
            client_ports,
            children: (0..nodes).map(|_| None).collect(),
        };
        for i in 0..nodes {
            nats.restart(i);
        }
        nats.wait_ready();
        nats
    }

    /// A cluster started elsewhere (by the test, which kills and restarts its servers): the
    /// same URL, and nothing to stop when dropped.
    pub fn attach(url: &str) -> Nats {
        let client_ports = url
            .split(',')
            .filter_map(|u| u.rsplit(':').next()?.parse().ok())
            .collect();
        Nats {
            dir: tempfile::tempdir().expect("dir"),
            client_ports,
            children: Vec::new(),
        }
    }

    /// The servers, as `--store` takes them.
    pub fn url(&self) -> String {
        self.client_ports
            .iter()
            .map(|p| format!("nats://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `--store URL`.
    pub fn store_args(&self) -> Vec<String> {
        vec!["--store".into(), self.url()]
    }

    /// Where the servers keep their streams (every file under it).
    pub fn store_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Kills server `i` with SIGKILL.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.children[i].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts server `i` (again), on its port and store dir.
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        let log = std::fs::File::create(self.dir.path().join(format!("n{i}.log"))).expect("log");
        let child = Command::new("nats-server")
            .arg("-c")
            .arg(self.dir.path().join(format!("n{i}.conf")))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("nats-server starts");
        self.children[i] = Some(child);
    }

    /// The index of the server named `name` (`n0`, `n1` …).
    pub fn index_of(&self, name: &str) -> usize {
        name.trim_start_matches('n').parse().expect("a server name")
    }

    /// Waits until every running server answers JetStream's API (a cluster has elected its
    /// meta leader).
    pub fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let runtime = super::runtime(0);
        let running = (0..self.client_ports.len()).filter(|i| self.children[*i].is_some());
        for port in running.map(|i| self.client_ports[i]).collect::<Vec<_>>() {
            runtime.block_on(wait_answering(port, deadline));
        }
    }

    /// Runs `work` with a JetStream context on these servers.
    pub fn with_js<T>(&self, work: impl AsyncFnOnce(async_nats::jetstream::Context) -> T) -> T {
        super::runtime(0).block_on(async {
            let url = self.url();
            let servers: Vec<&str> = url.split(',').collect();
            let client = async_nats::connect(servers.as_slice())
                .await
                .expect("connects");
            work(async_nats::jetstream::new(client)).await
        })
    }

    /// The name of the stream whose name starts with `prefix` (a channel's:
    /// `hookscope-relay-NAME-` and its uid).
    pub fn stream_named(&self, prefix: &str) -> String {
        use futures_util::StreamExt as _;
        self.with_js(async |js| {
            let mut names = js.stream_names();
            while let Some(name) = names.next().await {
                let name = name.expect("a stream name");
                if name.starts_with(prefix) {
                    return name;
                }
            }
            panic!("no stream named {prefix}…")
        })
    }

    /// The server leading `stream` now.
    pub fn leader_of(&self, stream: &str) -> String {
        self.with_js(async |js| {
            let mut stream = js.get_stream(stream).await.expect("the stream");
            let info = stream.info().await.expect("info");
            info.cluster
                .as_ref()
                .and_then(|c| c.leader.clone())
                .expect("a leader")
        })
    }
}

/// Waits until the server on `port` answers JetStream's API.
async fn wait_answering(port: u16, deadline: Instant) {
    loop {
        let ready = async {
            let client = async_nats::connect(format!("127.0.0.1:{port}"))
                .await
                .ok()?;
            let js = async_nats::jetstream::new(client);
            let refused = js.get_stream("hookscope-not-there").await.err()?;
            matches!(
                refused.kind(),
                async_nats::jetstream::context::GetStreamErrorKind::JetStream(_)
            )
            .then_some(())
        };
        if ready.await.is_some() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the NATS server on {port} never became ready"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        for i in 0..self.children.len() {
            self.kill(i);
        }
    }
}

/// A TCP balancer on loopback, as a team puts in front of its relay instances: each connection
/// goes to the next backend that accepts it.
pub struct Balancer {
    pub addr: SocketAddr,
    _runtime: tokio::runtime::Runtime,
}

impl Balancer {
    pub fn start(backends: Vec<SocketAddr>) -> Balancer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("binds");
        let addr = listener.local_addr().expect("addr");
        runtime.spawn(async move {
            let mut next = 0usize;
            while let Ok((mut inbound, _)) = listener.accept().await {
                let mut outbound = None;
                for k in 0..backends.len() {
                    let backend = backends[(next + k) % backends.len()];
                    if let Ok(stream) = tokio::net::TcpStream::connect(backend).await {
                        next = (next + k + 1) % backends.len();
                        outbound = Some(stream);
                        break;
                    }
                }
                if let Some(mut outbound) = outbound {
                    tokio::spawn(async move {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    });
                }
            }
        });
        Balancer {
            addr,
            _runtime: runtime,
        }
    }
}
