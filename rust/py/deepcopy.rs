//! Deep copies of JSON-like items: exact dict/list/tuple rebuilt, immutable scalars shared,
//! anything else handed to `copy.deepcopy`; the strict [`PlainCopier`]; `shallow_dict_copies`.

use std::collections::HashSet;

use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::args::{new_list, str_tuple, Items};
use super::dict;
use super::encode::depth_error;
use crate::core::canonical::MAX_DEPTH;
use crate::core::strings::MixState;

pub fn deep_copy_items<'py>(items: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    let py = items.py();
    let items = Items::of(items, "items")?;
    let mut copier = Copier::new(py);
    new_list(py, items.len(), |index| copier.copy(&items.get(index)?, 0))
}

pub fn plain_json_copy<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    allow_shared: bool,
    without: Option<&Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let keys = match without {
        Some(without) => str_tuple(without, "without")?,
        None => Vec::new(),
    };
    let items = Items::of(items, "items")?;
    let mut copier = PlainCopier::new(items.len(), allow_shared);
    let mut copies = Vec::with_capacity(items.len());
    for index in 0..items.len() {
        let Some(copy) = copier.copy(&items.get(index)?, 0)? else {
            return Ok(None);
        };
        // Looked up in the copy, whose keys are plain scalars: no user `__eq__` runs.
        if let Ok(dict) = copy.cast::<PyDict>() {
            if holds_any(dict, &keys)? {
                return Ok(None);
            }
        }
        copies.push(copy);
    }
    PyList::new(py, copies).map(Some)
}

pub fn shallow_dict_copies<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    without: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let keys = str_tuple(without, "without")?;
    if !items.is_exact_instance_of::<PyList>() {
        return Ok(py.NotImplemented().into_bound(py));
    }
    let items = Items::of(items, "items")?;
    for index in 0..items.len() {
        let item = items.get(index)?;
        let Ok(item) = item.cast_exact::<PyDict>() else {
            return Ok(py.NotImplemented().into_bound(py));
        };
        if holds_any(item, &keys)? {
            return Ok(py.NotImplemented().into_bound(py));
        }
    }
    let copies = new_list(py, items.len(), |index| {
        let item = items.get(index)?;
        match item.cast_exact::<PyDict>() {
            Ok(item) => Ok(item.copy()?.into_any()),
            // A key comparison ran user code that replaced an item after the screen.
            Err(_) => Err(PyRuntimeError::new_err("items changed during the copy")),
        }
    })?;
    Ok(copies.into_any())
}

/// Whether `dict` holds any of `keys`; a lookup may run a key object's `__eq__`.
pub fn holds_any(dict: &Bound<'_, PyDict>, keys: &[Bound<'_, PyString>]) -> PyResult<bool> {
    for key in keys {
        if dict.contains(key)? {
            return Ok(true);
        }
    }
    Ok(false)
}

pub struct Copier<'py> {
    py: Python<'py>,
    deepcopy: Option<Bound<'py, PyAny>>,
}

/// Immutable builtins that a copy shares (checked on the raw pointer: no refcounting).
#[inline]
fn is_shared_ptr(value: *mut ffi::PyObject) -> bool {
    // SAFETY: the callers pass live objects (held or borrowed from a container we hold),
    // and reading the type of a live object is always allowed.
    let kind = unsafe { ffi::Py_TYPE(value) };
    // SAFETY: this only compares addresses: `Py_None` returns the address of the `None`
    // singleton, and the type objects are statics whose address is taken, not read.
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

/// The exact dict `value` copied, non-shared values replaced by `member(value)`; None on a
/// None from `member` or (with `scalar_keys`) a key that is not a shared scalar.
fn copy_dict<'py>(
    value: &Bound<'py, PyAny>,
    scalar_keys: bool,
    mut member: impl FnMut(&Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = value.py();
    // SAFETY: the callers checked `value` is an exact `dict`.
    let copy = unsafe { value.cast_unchecked::<PyDict>() }.copy()?;
    // SAFETY: pairs are owned before `member` runs code; only the private copy's values change,
    // which `PyDict_Next` allows (`member`'s code could reach the copy only through `gc`).
    let mut pairs = unsafe { dict::items(&copy) };
    while let Some((key, value)) = pairs.next_pair() {
        if scalar_keys && !is_shared_ptr(key.as_ptr()) {
            return Ok(None);
        }
        if is_shared_ptr(value.as_ptr()) {
            continue;
        }
        let (original, key) = (value.to_owned(), key.to_owned());
        let Some(replacement) = member(&original)? else {
            return Ok(None);
        };
        // SAFETY: `copy`, `key` and `replacement` are live and held; `PyDict_SetItem` steals no
        // reference, and replacing an existing key's value is allowed during `PyDict_Next`.
        let status =
            unsafe { ffi::PyDict_SetItem(copy.as_ptr(), key.as_ptr(), replacement.as_ptr()) };
        if status < 0 {
            return Err(PyErr::fetch(py));
        }
    }
    Ok(Some(copy.into_any()))
}

/// The exact list `value` copied, non-shared members replaced by `member(value)` (or None).
fn copy_list<'py>(
    value: &Bound<'py, PyAny>,
    mut member: impl FnMut(&Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    // SAFETY: the callers checked `value` is an exact `list`.
    let list = unsafe { value.cast_unchecked::<PyList>() };
    let copy = list.get_slice(0, list.len());
    for (index, position) in (0..copy.len()).zip(0..) {
        // SAFETY: `copy` is a live list; `PyList_GetItem` bounds-checks the index (NULL with
        // IndexError set if `member`'s code shrank the copy through `gc`) and returns a borrow.
        let original = unsafe { ffi::PyList_GetItem(copy.as_ptr(), position) };
        if original.is_null() {
            return Err(PyErr::fetch(value.py()));
        }
        if is_shared_ptr(original) {
            continue;
        }
        // SAFETY: a non-NULL borrowed member of `copy`, owned before `member` runs any code.
        let original = unsafe { Bound::from_borrowed_ptr(value.py(), original) };
        let Some(replacement) = member(&original)? else {
            return Ok(None);
        };
        copy.set_item(index, replacement)?;
    }
    Ok(Some(copy.into_any()))
}

impl<'py> Copier<'py> {
    pub fn new(py: Python<'py>) -> Self {
        Copier { py, deepcopy: None }
    }

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
        let copy = copy_dict(value, false, |member| {
            self.copy(member, depth + 1).map(Some)
        })?;
        Ok(copy.expect("a lenient copy never gives up"))
    }

    fn list(&mut self, value: &Bound<'py, PyAny>, depth: usize) -> PyResult<Bound<'py, PyAny>> {
        if depth >= MAX_DEPTH {
            return Err(depth_error());
        }
        let copy = copy_list(value, |member| self.copy(member, depth + 1).map(Some))?;
        Ok(copy.expect("a lenient copy never gives up"))
    }
}

/// Copies of plain JSON trees (what `copy.deepcopy` gives), or `None` for anything else,
/// depth past `MAX_DEPTH` or disallowed sharing. Runs no Python code.
pub struct PlainCopier {
    /// Whether a container may be reached more than once (then copied per reference).
    allow_shared: bool,
    seen: HashSet<usize, MixState>,
    /// Containers copied so far, and the most allowed: sharing can make a copy huge.
    containers: usize,
    budget: usize,
}

/// Containers a plain copy may hold per item, and in any case.
const BUDGET_PER_ITEM: usize = 1024;
const BUDGET_BASE: usize = 1 << 20;

impl PlainCopier {
    pub fn new(items: usize, allow_shared: bool) -> Self {
        PlainCopier {
            allow_shared,
            seen: HashSet::default(),
            containers: 0,
            budget: BUDGET_PER_ITEM
                .saturating_mul(items)
                .saturating_add(BUDGET_BASE),
        }
    }

    pub fn copy<'py>(
        &mut self,
        value: &Bound<'py, PyAny>,
        depth: usize,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        if is_shared(value) {
            return Ok(Some(value.clone()));
        }
        let is_dict = value.is_exact_instance_of::<PyDict>();
        if !is_dict && !value.is_exact_instance_of::<PyList>() {
            return Ok(None);
        }
        if depth >= MAX_DEPTH || !self.enter(value) {
            return Ok(None);
        }
        if is_dict {
            copy_dict(value, true, |member| self.copy(member, depth + 1))
        } else {
            copy_list(value, |member| self.copy(member, depth + 1))
        }
    }

    fn enter(&mut self, container: &Bound<'_, PyAny>) -> bool {
        self.containers += 1;
        if self.containers > self.budget {
            return false;
        }
        self.allow_shared || self.seen.insert(container.as_ptr() as usize)
    }
}
