//! The fields the dedupe key and the model-input rules read of an item, taken in one walk
//! over a small exact dict instead of one lookup each: what `dict.get` gives for each name.
//!
//! A walk gives what the lookups give only when every key is an exact `str`: then a key
//! equals a name exactly when its hash and its text do, and no comparison runs Python
//! code. Other dicts, and large ones, are read by lookups.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

use super::text::str_bytes;

/// The names read, in [`Name`] order.
const NAMES: [&str; 7] = [
    "type",
    "role",
    "id",
    "caller",
    "call_id",
    "status",
    "approval_request_id",
];

/// Dicts with more keys than this are read by lookups (a walk visits every key).
const MOST_KEYS: ffi::Py_ssize_t = 12;

#[derive(Clone, Copy)]
pub enum Name {
    Type,
    Role,
    Id,
    Caller,
    CallId,
    Status,
    ApprovalRequestId,
}

/// The names as `str` objects, and their hashes (string hashes are salted per process).
pub struct Names<'py> {
    keys: [Bound<'py, PyString>; 7],
    hashes: [ffi::Py_hash_t; 7],
}

impl<'py> Names<'py> {
    pub fn new(py: Python<'py>) -> PyResult<Self> {
        let keys = NAMES.map(|name| PyString::intern(py, name));
        let mut hashes = [0; 7];
        for (hash, key) in hashes.iter_mut().zip(&keys) {
            *hash = key.hash()?;
        }
        Ok(Names { keys, hashes })
    }

    pub fn key(&self, name: Name) -> &Bound<'py, PyString> {
        &self.keys[name as usize]
    }
}

/// The values of the names in one dict (null: missing), borrowed from it.
pub struct Walk {
    values: [*mut ffi::PyObject; 7],
}

impl Walk {
    /// The walk over `dict`, or None when a key is not an exact `str` (or keys are many).
    ///
    /// # Safety
    /// `dict` is a live exact dict, and the walk's values are read only while it is held and
    /// before any Python code runs (which could change it).
    pub unsafe fn of(dict: &Bound<'_, PyAny>, names: &Names<'_>) -> Option<Walk> {
        let py = dict.py();
        let dict = dict.as_ptr();
        // SAFETY: `dict` is a live dict (the caller's contract).
        if unsafe { ffi::PyDict_Size(dict) } > MOST_KEYS {
            return None;
        }
        let mut walk = Walk {
            values: [std::ptr::null_mut(); 7],
        };
        let mut position: ffi::Py_ssize_t = 0;
        let mut key = std::ptr::null_mut();
        let mut value = std::ptr::null_mut();
        // SAFETY: GIL held, `dict` alive; `PyDict_Next` yields borrowed pairs. Nothing below
        // runs Python code: an exact `str`'s hash and text are CPython's own.
        unsafe {
            while ffi::PyDict_Next(dict, &raw mut position, &raw mut key, &raw mut value) != 0 {
                if ffi::Py_TYPE(key) != &raw mut ffi::PyUnicode_Type {
                    return None;
                }
                let hash = ffi::PyObject_Hash(key);
                let Some(at) = names.hashes.iter().position(|&known| known == hash) else {
                    continue;
                };
                if key == names.keys[at].as_ptr()
                    || str_bytes(&Bound::from_borrowed_ptr(py, key))
                        .ok()?
                        .as_bytes()
                        == NAMES[at].as_bytes()
                {
                    walk.values[at] = value;
                }
            }
        }
        Some(walk)
    }

    /// `dict.get(name)`, a stored None read as missing, borrowed (see [`Walk::of`]).
    pub fn get<'a, 'py>(&self, py: Python<'py>, name: Name) -> Option<Borrowed<'a, 'py, PyAny>> {
        let value = self.values[name as usize];
        // SAFETY: non-null values are borrowed from the walked dict, unchanged since (the
        // contract of `of`).
        (!value.is_null())
            .then(|| unsafe { Borrowed::from_ptr(py, value) })
            .filter(|value| !value.is_none())
    }
}
