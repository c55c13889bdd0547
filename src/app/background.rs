//! Background work of the use cases, started one way: a named thread with its own small tokio
//! runtime, a stop token the work may watch, and a handle that stops it and waits for it. The
//! capture session's reconciler, and the window's simulations, replays, follows and outbound
//! sends, all run through [`spawn`].

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

    /// Resolves once a stop is asked (at once when it was).
    pub async fn stopped(&mut self) {
        let _ = self.0.wait_for(|stop| *stop).await;
    }
}

/// Running background work. [`Background::stop`] (or dropping it) asks it to stop and waits
/// for its thread; work that does not watch its token is dropped at its next await.
#[derive(Debug)]
pub struct Background {
    stop: tokio::sync::watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    /// Asks the work to stop and waits for its thread.
    pub fn stop(mut self) {
        self.stop_and_join();
    }

    /// Asks the work to stop, without waiting.
    pub fn ask_stop(&self) {
        let _ = self.stop.send(true);
    }

    /// Whether the work has ended.
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
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
/// [`Stop`] to watch; when a stop is asked, the work is also dropped at its next await.
pub fn spawn<F, Fut>(name: &str, work: F) -> Result<Background, AppError>
where
    F: FnOnce(Stop) -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let (stop, watched) = tokio::sync::watch::channel(false);
    let runtime = crate::app::small_runtime()?;
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let mut token = Stop(watched);
            let work = work(token.clone());
            runtime.block_on(async move {
                tokio::select! {
                    () = work => {}
                    () = token.stopped() => {}
                }
            });
        })
        .map_err(|e| AppError::Failed(format!("cannot start {name}: {e}")))?;
    Ok(Background {
        stop,
        thread: Some(thread),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Work that never ends by itself is dropped and its thread joined by `stop` (which would
    /// hang otherwise); work that ends by itself is seen finished; a token sees the stop.
    #[test]
    fn stop_ends_the_work_and_joins_its_thread() {
        let forever = spawn("hookscope-test-forever", |_| async {
            std::future::pending::<()>().await;
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
        // The select may drop the work before it reports: a report, when there is one, says
        // the token saw the stop.
        if let Ok(saw) = rx.recv_timeout(Duration::from_millis(200)) {
            assert!(saw);
        }
        drop(watching);

        let short = spawn("hookscope-test-short", |_| async {}).expect("spawned");
        let started = Instant::now();
        while !short.is_finished() && started.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(short.is_finished());
    }
}
