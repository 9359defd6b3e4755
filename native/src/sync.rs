//! The state of a Python object that reads or sends with the GIL released (`RangeReader`,
//! `Producer`), locked without blocking the interpreter.

use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use pyo3::Python;

/// `mutex` locked without holding the GIL while it waits: its holder may be reading with the GIL
/// released and need it back (a reconnect asks Python for a fresh token).
pub fn locked<'a, T>(py: Python<'_>, mutex: &'a Mutex<T>) -> Result<MutexGuard<'a, T>, ()> {
    loop {
        match mutex.try_lock() {
            Ok(guard) => return Ok(guard),
            Err(TryLockError::Poisoned(_)) => return Err(()),
            Err(TryLockError::WouldBlock) => py.detach(|| std::thread::sleep(Duration::from_millis(1))),
        }
    }
}
