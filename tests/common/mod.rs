//! Helpers shared by the integration tests: run the real `hookscope` binary, start `listen` on
//! a free port over a temporary data dir, and stop it when the test ends.

#![allow(dead_code)]

pub mod handler;
pub mod job_api;

/// The benchmark tool's generator of synthetic deliveries, shared with the tests.
#[path = "../../src/bin/hookscope-dev/seed.rs"]
pub mod seed;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Whether a tool a test needs (`node`, `python3`, `cc`…) runs on this machine: `probe` is the
/// command and its arguments that must succeed (`["node", "--version"]`). Without it the test
/// says "skipped: … not found" and passes, so `cargo test` needs no prerequisites; `.ci/run`
/// installs every such tool and sets `HOOKSCOPE_TESTS_REQUIRE_TOOLS=1`, under which a missing
/// tool fails the test instead, so CI never skips one.
pub fn tool_runs(probe: &[&str]) -> bool {
    let runs = Command::new(probe[0])
        .args(&probe[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !runs {
        let tool: Vec<&str> = probe
            .iter()
            .copied()
            .filter(|a| *a != "--version")
            .collect();
        skip(&format!("{} not found", tool.join(" ")));
    }
    runs
}

/// Says why a test is skipped, or fails it when skipping is not allowed (under `.ci/run`).
pub fn skip(why: &str) {
    assert!(
        std::env::var_os("HOOKSCOPE_TESTS_REQUIRE_TOOLS").is_none(),
        "this check must run here (HOOKSCOPE_TESTS_REQUIRE_TOOLS is set), but: {why}"
    );
    eprintln!("skipped: {why}");
}

/// Python packages installed with pip into `dir_name` under the target directory on first use
/// (`marker`, a file inside, says they are there), for a test that checks hookscope against a
/// provider's or a standard's own library. `None` (the test skipped, and saying so) without
/// python3 and pip, or when PyPI is out of reach.
pub fn pip_target(dir_name: &str, marker: &str, packages: &[&str]) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir_name);
    if dir.join(marker).exists() {
        return Some(dir);
    }
    if !tool_runs(&["python3", "-m", "pip", "--version"]) {
        return None;
    }
    let out = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--target",
        ])
        .arg(&dir)
        .args(packages)
        .output()
        .expect("python3 runs");
    if !out.status.success() {
        // Offline, or PyPI unreachable: the library cannot be had.
        skip(&format!(
            "pip could not install {} from PyPI: {}",
            packages.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
        return None;
    }
    Some(dir)
}

/// npm packages (`ajv@8`…) installed into `dir_name` under the target directory on first use,
/// for a test that runs an exported snippet with a library beside it: a file under the folder
/// returned finds them in its `node_modules`. `None` (the test skipped, and saying so) without
/// npm, or when the npm registry is out of reach.
pub fn npm_dir(dir_name: &str, packages: &[&str]) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir_name);
    let installed = |p: &&str| {
        let name = p.rsplit_once('@').map_or(*p, |(n, _)| n);
        dir.join("node_modules")
            .join(name)
            .join("package.json")
            .exists()
    };
    if packages.iter().all(installed) {
        return Some(dir);
    }
    if !tool_runs(&["npm", "--version"]) {
        return None;
    }
    std::fs::create_dir_all(&dir).expect("npm dir");
    let out = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
        .arg(&dir)
        .args(packages)
        .output()
        .expect("npm runs");
    if !out.status.success() {
        skip(&format!(
            "npm could not install {}: {}",
            packages.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
        return None;
    }
    Some(dir)
}

/// Runs a tool (`python3`, `node`) with `PYTHONPATH` set when given: whether it succeeded,
/// and its stdout then its stderr.
pub fn run_tool(program: &str, args: &[&str], python_path: Option<&Path>) -> (bool, String) {
    let mut command = Command::new(program);
    command.args(args);
    if let Some(path) = python_path {
        command.env("PYTHONPATH", path);
    }
    let out = command.output().expect("the tool runs");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_hookscope"))
}

/// Runs `hookscope ARGS…` with an isolated data dir and returns its output.
pub fn run(data_dir: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .env("HOOKSCOPE_DATA_DIR", data_dir)
        .output()
        .expect("hookscope runs")
}

/// A `hookscope listen` child process; killed when dropped.
pub struct Listener {
    pub child: Child,
    pub base_url: String,
    pub port: u16,
    pub stdout: BufReader<ChildStdout>,
    pub stderr_head: String,
    pub data_dir: PathBuf,
}

impl Listener {
    /// Starts `hookscope listen --port 0 --json ARGS…` over `data_dir` and waits for its
    /// `listening on` line.
    pub fn start(data_dir: &Path, args: &[&str]) -> Listener {
        Listener::start_with_env(data_dir, args, &[])
    }

    /// [`Listener::start`] with extra environment variables (a fault-injecting `LD_PRELOAD`).
    pub fn start_with_env(data_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Listener {
        let mut child = Command::new(bin())
            .arg("listen")
            .args(["--port", "0", "--json"])
            .args(args)
            .envs(env.iter().copied())
            .env("HOOKSCOPE_DATA_DIR", data_dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("listen starts");
        let stderr = child.stderr.take().expect("stderr");
        let mut stderr = BufReader::new(stderr);
        let mut head = String::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        let base_url = loop {
            let mut line = String::new();
            let n = stderr.read_line(&mut line).expect("read stderr");
            assert!(
                n > 0 && Instant::now() < deadline,
                "listen exited early: {head}"
            );
            head.push_str(&line);
            if let Some(url) = line.trim().strip_prefix("listening on ") {
                break url.to_string();
            }
        };
        // Keep draining stderr so the child never blocks on a full pipe.
        std::thread::Builder::new()
            .name("test-stderr-drain".into())
            .spawn(move || {
                let mut sink = String::new();
                while stderr.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
                    sink.clear();
                }
            })
            .expect("drain thread");
        let port = base_url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port in url");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Listener {
            child,
            base_url,
            port,
            stdout,
            stderr_head: head,
            data_dir: data_dir.to_path_buf(),
        }
    }

    /// Reads the next `--json` line as JSON.
    pub fn next_json(&mut self) -> serde_json::Value {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).expect("read stdout");
        assert!(n > 0, "listen closed stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The store file.
    pub fn store_path(&self) -> PathBuf {
        self.data_dir.join("hookscope.sqlite")
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The port in `listen`'s `listening on http://ADDR:PORT` line, when `line` is that line.
pub fn listening_port(line: &str) -> Option<u16> {
    let url = line.trim().strip_prefix("listening on ")?;
    Some(
        url.rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("a port in the listening line"),
    )
}

/// Unix time now, in seconds.
pub fn now_secs() -> i64 {
    hookscope::domain::clock::now_secs()
}

/// Fills the store in `data_dir` with `count` synthetic, correctly checked deliveries, with the
/// benchmark tool (`hookscope-dev seed`), so tests and benchmarks share one generator.
pub fn seed(data_dir: &Path, count: usize) {
    let out = Command::new(env!("CARGO_BIN_EXE_hookscope-dev"))
        .args(["seed", "--count", &count.to_string()])
        .env("HOOKSCOPE_DATA_DIR", data_dir)
        .output()
        .expect("hookscope-dev runs");
    assert!(
        out.status.success(),
        "seed failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A reqwest client for the tests' own requests, with the TLS provider hookscope uses (ring)
/// installed first: reqwest is built without a default provider.
pub fn http_client() -> reqwest::Client {
    hookscope::net::client::install_tls_provider();
    reqwest::Client::new()
}
