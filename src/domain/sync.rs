//! The one lock for state shared between threads. A holder that panicked does not spoil the
//! value for the others: every value kept behind it is whole after each change (a replaced
//! field, an inserted entry), so the next holder takes it as the panic left it rather than
//! failing in turn.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// A value shared between threads, behind one mutex.
#[derive(Debug, Default)]
pub struct Lock<T>(Mutex<T>);

impl<T> Lock<T> {
    /// A value to share.
    pub const fn new(value: T) -> Lock<T> {
        Lock(Mutex::new(value))
    }

    /// The value, to read or change, for as long as the guard lives.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_that_panicked_leaves_the_value_to_the_others() {
        let shared = std::sync::Arc::new(Lock::new(vec![1]));
        let held = std::sync::Arc::clone(&shared);
        let panicked = std::thread::Builder::new()
            .name("test-panics-holding".into())
            .spawn(move || {
                let mut value = held.lock();
                value.push(2);
                panic!("while holding the lock");
            })
            .expect("spawns")
            .join();
        assert!(panicked.is_err());
        assert_eq!(
            *shared.lock(),
            vec![1, 2],
            "the change before the panic is kept"
        );
        shared.lock().push(3);
        assert_eq!(*shared.lock(), vec![1, 2, 3]);
    }
}
