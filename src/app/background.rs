//! Background work of the use cases, started one way: a named thread with its own tokio
//! runtime, a stop token the work watches, and a handle that asks it to stop and waits for it.
//! The capture session's reconciler, and the window's simulations, replays and outbound sends,
//! run through [`spawn`] (or [`spawn_on_workers`] for work that serves while it sends: the
//! simulator).

use std::future::Future;

use crate::app::AppError;

/// The token a piece of background work watches to know it was asked to stop.
#[derive(Debug, Clone)]
pub struct Stop(tokio::sync::watch::Receiver<bool>);

impl Stop {
    /// Whether a stop was asked.
    pub fn is_stopped(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once a stop is asked (at once when it was); never for detached work.
    pub async fn stopped(&mut self) {
        if self.0.wait_for(|stop| *stop).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Running background work. [`Background::stop`] (or dropping the handle) asks it to stop and
/// waits for its thread; [`Background::detach`] lets it run to its end.
#[derive(Debug)]
pub struct Background {
    stop: Option<tokio::sync::watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    /// Asks the work to stop and waits for its thread.
    pub fn stop(mut self) {
        self.stop_and_join();
    }

    /// Asks the work to stop, without waiting.
    pub fn ask_stop(&self) {
        if let Some(stop) = &self.stop {
            let _ = stop.send(true);
        }
    }

    /// Whether the work has ended.
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Lets the work run to its own end, with no handle on it (an outbound send).
    pub fn detach(mut self) {
        self.stop = None;
        self.thread = None;
    }

    fn stop_and_join(&mut self) {
        self.ask_stop();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Starts `work` on a thread named `name` with its own current-thread runtime. The work gets a
/// [`Stop`] to watch, and ends its own way when asked (work that never ends by itself selects
/// on [`Stop::stopped`]).
pub fn spawn<F, Fut>(name: &str, work: F) -> Result<Background, AppError>
where
    F: FnOnce(Stop) -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    start(name, 0, work)
}

/// [`spawn`] on a runtime of `workers` threads, for work that serves requests while it sends.
pub fn spawn_on_workers<F, Fut>(name: &str, workers: usize, work: F) -> Result<Background, AppError>
where
    F: FnOnce(Stop) -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    start(name, workers.max(1), work)
}

fn start<F, Fut>(name: &str, workers: usize, work: F) -> Result<Background, AppError>
where
    F: FnOnce(Stop) -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let (stop, watched) = tokio::sync::watch::channel(false);
    let runtime = runtime(workers)?;
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || runtime.block_on(work(Stop(watched))))
        .map_err(|e| AppError::Failed(format!("cannot start {name}: {e}")))?;
    Ok(Background {
        stop: Some(stop),
        thread: Some(thread),
    })
}

/// A runtime for background work: `app::small_runtime` (current-thread) for 0 workers, else
/// that many.
pub fn runtime(workers: usize) -> Result<tokio::runtime::Runtime, AppError> {
    if workers == 0 {
        return crate::app::small_runtime();
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .map_err(|e| AppError::Failed(format!("cannot start the event loop: {e}")))
}

/// Resolves when the process is asked to stop: Ctrl+C, or SIGTERM (as service managers and
/// `kill` send it; where there is no such signal, only Ctrl+C). Commands that run until stopped
/// wait on it, so they stop as cleanly on either.
pub async fn interrupted() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = ctrl_c => {}
        () = terminated() => {}
    }
}

/// Resolves when the process gets SIGTERM; never where there is no such signal.
pub async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            term.recv().await;
            return;
        }
    }
    std::future::pending::<()>().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Work that selects on its token ends, and its thread is joined, on `stop` (which would
    /// hang otherwise); a token sees the stop; work that ends by itself is seen finished, and
    /// detached work runs to its end.
    #[test]
    fn stop_ends_the_work_and_joins_its_thread() {
        let forever = spawn("hookscope-test-forever", |mut stop| async move {
            tokio::select! {
                () = std::future::pending::<()>() => {}
                () = stop.stopped() => {}
            }
        })
        .expect("spawned");
        assert!(!forever.is_finished());
        forever.stop();

        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let watching = spawn("hookscope-test-watching", move |mut stop| async move {
            let mut clone = stop.clone();
            clone.stopped().await;
            let _ = tx.send(stop.is_stopped());
            stop.stopped().await;
        })
        .expect("spawned");
        watching.ask_stop();
        assert!(
            rx.recv_timeout(Duration::from_secs(5))
                .expect("the work saw the stop")
        );
        drop(watching);

        let short = spawn("hookscope-test-short", |_| async {}).expect("spawned");
        let started = Instant::now();
        while !short.is_finished() && started.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(short.is_finished());

        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        spawn("hookscope-test-detached", move |stop| async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let _ = tx.send(stop.is_stopped());
        })
        .expect("spawned")
        .detach();
        assert!(
            !rx.recv_timeout(Duration::from_secs(5))
                .expect("it ran to its end")
        );
    }
}
