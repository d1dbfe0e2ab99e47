//! The one way this workspace takes a `std::sync` lock.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, also after another thread panicked while holding it. Every critical section in this
/// workspace is a short, non-panicking update (a map insert, a counter, a slot), so the data behind a
/// poisoned lock is still whole, and refusing it would turn one panic into a stuck process.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads `lock`, also after a writer panicked (see [`lock`]).
pub fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Writes `lock`, also after a writer panicked (see [`lock`]).
pub fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
