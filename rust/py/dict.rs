//! The one walk over a dict's storage (`PyDict_Next`), yielding borrowed pairs.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The (key, value) pairs of a dict (or subclass, read as `dict.items` reads it), in
/// order. A pair is borrowed until the next step: take owned references (`to_owned`)
/// before running Python code that could change the dict.
pub struct Items<'a, 'py> {
    dict: &'a Bound<'py, PyDict>,
    position: ffi::Py_ssize_t,
}

#[inline]
pub fn items<'a, 'py>(dict: &'a Bound<'py, PyDict>) -> Items<'a, 'py> {
    Items { dict, position: 0 }
}

impl<'py> Items<'_, 'py> {
    #[inline]
    pub fn next_pair(&mut self) -> Option<(Borrowed<'_, 'py, PyAny>, Borrowed<'_, 'py, PyAny>)> {
        let py = self.dict.py();
        let mut key = std::ptr::null_mut();
        let mut value = std::ptr::null_mut();
        // SAFETY: we hold the GIL and `dict` is alive; `PyDict_Next` bounds-checks
        // `position` on every call, so a dict changed between steps is never read out of
        // bounds. It yields non-NULL borrowed references that stay valid while the dict is
        // unchanged, which the borrow of `self` and the callers' `to_owned` ensure.
        unsafe {
            if ffi::PyDict_Next(
                self.dict.as_ptr(),
                &raw mut self.position,
                &raw mut key,
                &raw mut value,
            ) == 0
            {
                return None;
            }
            Some((Borrowed::from_ptr(py, key), Borrowed::from_ptr(py, value)))
        }
    }
}
