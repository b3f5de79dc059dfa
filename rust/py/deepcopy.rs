//! Deep copy of JSON-like items: exact dict/list/tuple are rebuilt, str/int/float/bool/None
//! shared (immutable), anything else (subclasses included) handed to `copy.deepcopy`. And
//! the strict variant, [`PlainCopier`], which gives up on anything but plain JSON trees,
//! and the one-level copies of `shallow_dict_copies`.
//!
//! Dicts and lists are first copied at C level (`dict.copy()`, a list slice); only the
//! members that are themselves containers or foreign objects are then replaced.

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

/// `deep_copy_items`.
pub fn deep_copy_items<'py>(items: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    let py = items.py();
    let items = Items::of(items, "items")?;
    let mut copier = Copier::new(py);
    new_list(py, items.len(), |index| copier.copy(&items.get(index)?, 0))
}

/// `plain_json_copy`.
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

/// `shallow_dict_copies`.
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

/// Whether `dict` holds any of `keys` (the screen of the copies that must leave out the
/// keys the SDK strips). A lookup compares keys, so a key object's `__eq__` may run.
pub fn holds_any(dict: &Bound<'_, PyDict>, keys: &[Bound<'_, PyString>]) -> PyResult<bool> {
    for key in keys {
        if dict.contains(key)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Reusable deep copier (caches `copy.deepcopy`).
pub struct Copier<'py> {
    py: Python<'py>,
    deepcopy: Option<Bound<'py, PyAny>>,
}

/// Immutable builtins that a copy shares (checked on the raw pointer, so shared members
/// cost no reference counting).
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

/// A copy of the exact dict `value` (`dict.copy()`) whose values that are not shared
/// scalars are replaced by `member(value)`; None as soon as `member` gives None, or
/// (with `scalar_keys`) a key is not a shared scalar.
fn copy_dict<'py>(
    value: &Bound<'py, PyAny>,
    scalar_keys: bool,
    mut member: impl FnMut(&Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = value.py();
    // SAFETY: the callers checked `value` is an exact `dict`.
    let copy = unsafe { value.cast_unchecked::<PyDict>() }.copy()?;
    // Walk the private copy: only its values change (never its keys), which `PyDict_Next`
    // allows; Python code run by `member` could reach the copy only through `gc`.
    let mut pairs = dict::items(&copy);
    while let Some((key, value)) = pairs.next_pair() {
        if scalar_keys && !is_shared_ptr(key.as_ptr()) {
            return Ok(None);
        }
        if is_shared_ptr(value.as_ptr()) {
            continue;
        }
        // Owned before `member` runs any code that could change the copy.
        let (original, key) = (value.to_owned(), key.to_owned());
        let Some(replacement) = member(&original)? else {
            return Ok(None);
        };
        // SAFETY: `copy`, `key` and `replacement` are live objects we hold references to;
        // `PyDict_SetItem` takes its own references (it steals none). Replacing the value
        // of a key that is already there is allowed while `PyDict_Next` walks the dict.
        let status =
            unsafe { ffi::PyDict_SetItem(copy.as_ptr(), key.as_ptr(), replacement.as_ptr()) };
        if status < 0 {
            return Err(PyErr::fetch(py));
        }
    }
    Ok(Some(copy.into_any()))
}

/// A copy of the exact list `value` (a slice) whose members that are not shared scalars
/// are replaced by `member(value)`; None as soon as `member` gives None.
fn copy_list<'py>(
    value: &Bound<'py, PyAny>,
    mut member: impl FnMut(&Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    // SAFETY: the callers checked `value` is an exact `list`.
    let list = unsafe { value.cast_unchecked::<PyList>() };
    let copy = list.get_slice(0, list.len());
    // `position` is `index` as a `Py_ssize_t`.
    for (index, position) in (0..copy.len()).zip(0..) {
        // SAFETY: `copy` is a live list. `PyList_GetItem` checks the index against the
        // current length and returns a borrowed reference, or NULL with IndexError set
        // when Python code run by `member` shrank the copy (found through `gc`).
        let original = unsafe { ffi::PyList_GetItem(copy.as_ptr(), position) };
        if original.is_null() {
            return Err(PyErr::fetch(value.py()));
        }
        if is_shared_ptr(original) {
            continue;
        }
        // SAFETY: `original` is a non-NULL borrowed reference to a live member of `copy`;
        // it becomes an owned reference before `member` runs any code.
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

/// Copies of trees made only of exact `dict`, `list`, `str`, `int`, `float`, `bool` and
/// `None` (dict keys scalars too): what `copy.deepcopy` and the SDK's dump-compatible
/// copy both return for such trees. Anything else, nesting past `MAX_DEPTH` (cycles
/// included), or sharing that is not allowed makes the copy `None`, and the caller uses
/// its own copy instead. Runs no Python code.
pub struct PlainCopier {
    /// Whether a container may be reached more than once (it is then copied per
    /// reference); if not, a container met twice makes the copy `None`.
    allow_shared: bool,
    /// Containers met so far (only when sharing is not allowed).
    seen: HashSet<usize, MixState>,
    /// Containers copied so far, and the most allowed: sharing can make a copy far
    /// larger than its input (a list holding one list twice, a hundred levels deep).
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

    /// The copy of `value` (at nesting `depth`), or None when it is not a plain tree.
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

    /// Count a container in; false when the copy must give up.
    fn enter(&mut self, container: &Bound<'_, PyAny>) -> bool {
        self.containers += 1;
        if self.containers > self.budget {
            return false;
        }
        self.allow_shared || self.seen.insert(container.as_ptr() as usize)
    }
}
