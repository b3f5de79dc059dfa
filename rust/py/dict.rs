//! The one walk over a dict's storage (`PyDict_Next`), yielding borrowed pairs.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The (key, value) pairs of a dict (or subclass), in order, each borrowed until the next step.
pub struct Items<'a, 'py> {
    dict: &'a Bound<'py, PyDict>,
    position: ffi::Py_ssize_t,
}

/// # Safety
/// While a pair is held, no Python code may run that could change `dict` (own it first).
#[inline]
pub unsafe fn items<'a, 'py>(dict: &'a Bound<'py, PyDict>) -> Items<'a, 'py> {
    Items { dict, position: 0 }
}

impl<'py> Items<'_, 'py> {
    #[inline]
    pub fn next_pair(&mut self) -> Option<(Borrowed<'_, 'py, PyAny>, Borrowed<'_, 'py, PyAny>)> {
        let py = self.dict.py();
        let mut key = std::ptr::null_mut();
        let mut value = std::ptr::null_mut();
        // SAFETY: GIL held, `dict` alive; `PyDict_Next` bounds-checks `position` and yields
        // borrowed references, valid while the dict is unchanged (the contract of `items`).
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
