//! When the pure-Rust phases of a call run with the GIL released.

use pyo3::Python;

const DETACH_THRESHOLD: usize = 50_000;

/// Run `work` without the GIL when the input (`size` items) is large enough for it to
/// matter; below that, releasing and taking back the GIL costs more than it frees.
pub fn maybe_detach<T: Send>(py: Python<'_>, size: usize, work: impl FnOnce() -> T + Send) -> T {
    if size >= DETACH_THRESHOLD {
        py.detach(work)
    } else {
        work()
    }
}
