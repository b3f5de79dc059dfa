//! The fields the dedupe key and the model-input rules read of an item, in one walk over a
//! small exact dict instead of a `dict.get` each. Only when every key is an exact `str` does
//! it give what the lookups give (a key equals a name exactly when its hash and text do, and
//! no comparison runs Python code): other dicts, and large ones, are looked up.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::dict;
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
const MOST_KEYS: usize = 12;

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
#[derive(Clone, Copy)]
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
        // SAFETY: `dict` is a live exact dict (the caller's contract).
        let dict = unsafe { dict.cast_unchecked::<PyDict>() };
        if dict.len() > MOST_KEYS {
            return None;
        }
        let mut walk = Walk {
            values: [std::ptr::null_mut(); 7],
        };
        // SAFETY: nothing below runs Python code: an exact `str`'s hash and text are
        // CPython's own.
        let mut pairs = unsafe { dict::items(dict) };
        while let Some((key, value)) = pairs.next_pair() {
            if !key.is_exact_instance_of::<PyString>() {
                return None;
            }
            // SAFETY: GIL held, `key` is a live exact `str`.
            let hash = unsafe { ffi::PyObject_Hash(key.as_ptr()) };
            let Some(at) = names.hashes.iter().position(|&known| known == hash) else {
                continue;
            };
            if key.as_ptr() == names.keys[at].as_ptr()
                || str_bytes(&key).ok()?.as_bytes() == NAMES[at].as_bytes()
            {
                walk.values[at] = value.as_ptr();
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
