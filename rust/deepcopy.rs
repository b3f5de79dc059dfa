//! Deep copy of JSON-like items: exact dict/list/tuple are rebuilt, str/int/float/bool/None
//! shared (immutable), anything else (subclasses included) handed to `copy.deepcopy`.
//!
//! Dicts and lists are first copied at C level (`dict.copy()`, a list slice); only the
//! members that are themselves containers or foreign objects are then replaced.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::canonical::MAX_DEPTH;
use crate::encode::depth_error;

/// Reusable deep copier (caches `copy.deepcopy`).
pub struct Copier<'py> {
    py: Python<'py>,
    deepcopy: Option<Bound<'py, PyAny>>,
}

/// Immutable builtins that a copy shares (checked on the raw pointer, so shared members
/// cost no reference counting).
#[inline]
fn is_shared_ptr(value: *mut ffi::PyObject) -> bool {
    // SAFETY: `value` is a live object; reading its type is always allowed.
    let kind = unsafe { ffi::Py_TYPE(value) };
    unsafe {
        kind == &raw mut ffi::PyUnicode_Type
            || kind == &raw mut ffi::PyLong_Type
            || value == ffi::Py_None()
            || kind == &raw mut ffi::PyFloat_Type
            || kind == &raw mut ffi::PyBool_Type
    }
}

#[inline]
fn is_shared(value: &Bound<'_, PyAny>) -> bool {
    is_shared_ptr(value.as_ptr())
}

impl<'py> Copier<'py> {
    pub fn new(py: Python<'py>) -> Self {
        Copier { py, deepcopy: None }
    }

    /// An independent copy of `value`, which sits `depth` containers deep.
    pub fn copy(&mut self, value: &Bound<'py, PyAny>, depth: usize) -> PyResult<Bound<'py, PyAny>> {
        if is_shared(value) {
            return Ok(value.clone());
        }
        if value.is_exact_instance_of::<PyDict>() {
            return self.dict(value, depth);
        }
        if value.is_exact_instance_of::<PyList>() {
            return self.list(value, depth);
        }
        if value.is_exact_instance_of::<PyTuple>() {
            if depth >= MAX_DEPTH {
                return Err(depth_error());
            }
            // SAFETY: checked to be an exact tuple.
            let tuple = unsafe { value.cast_unchecked::<PyTuple>() };
            let members = tuple
                .iter()
                .map(|member| self.copy(&member, depth + 1))
                .collect::<PyResult<Vec<_>>>()?;
            return Ok(PyTuple::new(self.py, members)?.into_any());
        }
        let deepcopy = match &self.deepcopy {
            Some(deepcopy) => deepcopy,
            None => {
                let function = self.py.import("copy")?.getattr("deepcopy")?;
                self.deepcopy.insert(function)
            }
        };
        deepcopy.call1((value,))
    }

    fn dict(&mut self, value: &Bound<'py, PyAny>, depth: usize) -> PyResult<Bound<'py, PyAny>> {
        if depth >= MAX_DEPTH {
            return Err(depth_error());
        }
        // SAFETY: checked to be an exact dict by the caller.
        let copy = unsafe { value.cast_unchecked::<PyDict>() }.copy()?;
        let mut position: ffi::Py_ssize_t = 0;
        let mut key: *mut ffi::PyObject = std::ptr::null_mut();
        let mut member: *mut ffi::PyObject = std::ptr::null_mut();
        // Walk the private copy: only its values change (never its keys), which the C API
        // allows during `PyDict_Next`, and no other code can reach it.
        while unsafe { ffi::PyDict_Next(copy.as_ptr(), &mut position, &mut key, &mut member) } != 0
        {
            if is_shared_ptr(member) {
                continue;
            }
            // SAFETY: PyDict_Next yields borrowed, non-null pointers; we take our own refs.
            let member = unsafe { Bound::from_borrowed_ptr(self.py, member) };
            let key = unsafe { Bound::from_borrowed_ptr(self.py, key) };
            let replacement = self.copy(&member, depth + 1)?;
            let status =
                unsafe { ffi::PyDict_SetItem(copy.as_ptr(), key.as_ptr(), replacement.as_ptr()) };
            if status < 0 {
                return Err(PyErr::fetch(self.py));
            }
        }
        Ok(copy.into_any())
    }

    fn list(&mut self, value: &Bound<'py, PyAny>, depth: usize) -> PyResult<Bound<'py, PyAny>> {
        if depth >= MAX_DEPTH {
            return Err(depth_error());
        }
        // SAFETY: checked to be an exact list by the caller.
        let list = unsafe { value.cast_unchecked::<PyList>() };
        let copy = list.get_slice(0, list.len());
        for index in 0..copy.len() {
            // SAFETY: in range of our private copy; the member is borrowed from it.
            let member = unsafe { ffi::PyList_GetItem(copy.as_ptr(), index as ffi::Py_ssize_t) };
            if is_shared_ptr(member) {
                continue;
            }
            let member = unsafe { Bound::from_borrowed_ptr(self.py, member) };
            copy.set_item(index, self.copy(&member, depth + 1)?)?;
        }
        Ok(copy.into_any())
    }
}
