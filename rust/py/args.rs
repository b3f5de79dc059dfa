//! Arguments shared by the Python functions: lists, index masks, result lists, surplus ones.

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDict, PyInt, PyList, PyString, PyTuple, PyType};

static ITERABLE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn is_iterable(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let iterable = ITERABLE.import(value.py(), "collections.abc", "Iterable")?;
    value.is_instance(iterable)
}

fn type_name(value: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(value.get_type().name()?.to_string())
}

/// The items of a list argument (the pure twin's `_as_list`). An exact list is read in place
/// (a snapshot costs as much as a pass), so every read checks its size still holds.
pub struct Items<'py> {
    list: Bound<'py, PyList>,
    len: usize,
}

impl<'py> Items<'py> {
    pub fn of(value: &Bound<'py, PyAny>, name: &str) -> PyResult<Self> {
        let py = value.py();
        let list = if value.is_exact_instance_of::<PyList>() {
            // SAFETY: `value` was just checked to be an exact `list`, so it is a `PyList`.
            unsafe { value.cast_unchecked::<PyList>() }.clone()
        } else if let Ok(list) = value.cast::<PyList>() {
            // A subclass: what it holds (its own methods are not called).
            list.get_slice(0, list.len())
        } else if let Ok(tuple) = value.cast::<PyTuple>() {
            PyList::new(py, tuple.iter())?
        } else {
            let rejected = value.is_instance_of::<PyString>()
                || value.is_instance_of::<PyBytes>()
                || value.is_instance_of::<PyByteArray>()
                || value.is_instance_of::<PyDict>();
            if rejected || !is_iterable(value)? {
                return Err(PyTypeError::new_err(format!(
                    "{name} must be a list of items, not {}",
                    type_name(value)?
                )));
            }
            py.get_type::<PyList>()
                .call1((value,))?
                .cast_into::<PyList>()?
        };
        let len = list.len();
        Ok(Items { list, len })
    }

    pub fn py(&self) -> Python<'py> {
        self.list.py()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The item at `index`; RuntimeError when user code resized the list (the twin's `_read`).
    #[inline]
    pub fn get(&self, index: usize) -> PyResult<Bound<'py, PyAny>> {
        self.check_size()?;
        self.list.get_item(index)
    }

    fn check_size(&self) -> PyResult<()> {
        if self.list.len() != self.len {
            return Err(PyRuntimeError::new_err(
                "the list of items changed size during the call",
            ));
        }
        Ok(())
    }

    pub fn iter(&self) -> impl Iterator<Item = PyResult<Bound<'py, PyAny>>> + '_ {
        (0..self.len).map(|index| self.get(index))
    }

    /// Object identities (addresses) of the items; no user code runs while they are read.
    pub fn addresses(&self) -> PyResult<Vec<usize>> {
        self.iter()
            .map(|item| item.map(|item| item.as_ptr() as usize))
            .collect()
    }

    pub fn pick(&self, indexes: &[usize]) -> PyResult<Bound<'py, PyList>> {
        self.check_size()?;
        new_list(self.list.py(), indexes.len(), |slot| {
            self.get(indexes[slot])
        })
    }
}

pub fn new_list<'py>(
    py: Python<'py>,
    len: usize,
    mut member: impl FnMut(usize) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let size = ffi::Py_ssize_t::try_from(len).expect("a list length fits Py_ssize_t");
    // SAFETY: `PyList_New` gives an owned list of NULL slots (or NULL, raised). `member` may
    // run Python code, so the list is untracked from `gc`, its only way to reach it.
    let list = unsafe {
        let list = Bound::from_owned_ptr_or_err(py, ffi::PyList_New(size))?;
        ffi::PyObject_GC_UnTrack(list.as_ptr().cast());
        list
    };
    for (position, slot) in (0..size).enumerate() {
        let value = member(position)?;
        // SAFETY: `slot` is in range and NULL; `PyList_SetItem` steals the reference. A list left
        // partly filled on error is fine: its deallocator skips NULL slots.
        unsafe { ffi::PyList_SetItem(list.as_ptr(), slot, value.into_ptr()) };
    }
    // SAFETY: every slot is filled, so the list (untracked above) is tracked exactly once.
    unsafe { ffi::PyObject_GC_Track(list.as_ptr().cast()) };
    // SAFETY: `list` came from `PyList_New`, so it is an exact `list`.
    Ok(unsafe { list.cast_into_unchecked() })
}

/// Positions named by an optional iterable of ints, as a mask (the twin's `_index_mask`).
pub fn index_mask(
    value: Option<&Bound<'_, PyAny>>,
    name: &str,
    length: usize,
) -> PyResult<Option<Vec<bool>>> {
    let Some(value) = value.filter(|value| !value.is_none()) else {
        return Ok(None);
    };
    let rejected = value.is_instance_of::<PyString>()
        || value.is_instance_of::<PyBytes>()
        || value.is_instance_of::<PyByteArray>();
    if rejected || !is_iterable(value)? {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a set of int positions, not {}",
            type_name(value)?
        )));
    }
    if let Some(mask) = range_mask(value, length)? {
        return Ok(Some(mask));
    }
    let mut mask = vec![false; length];
    for index in value.try_iter()? {
        let index = index?;
        if index.is_instance_of::<PyBool>() || !index.is_instance_of::<PyInt>() {
            return Err(PyTypeError::new_err(format!(
                "{name} must hold ints, not {}",
                type_name(&index)?
            )));
        }
        let mut overflow = 0;
        // SAFETY: `index` is a live `int` and `overflow` writable; no Python code runs.
        let position =
            unsafe { ffi::PyLong_AsLongLongAndOverflow(index.as_ptr(), &raw mut overflow) };
        if overflow == 0 {
            if position == -1 {
                if let Some(error) = PyErr::take(value.py()) {
                    return Err(error);
                }
            }
            if let Ok(position) = usize::try_from(position) {
                if position < length {
                    mask[position] = true;
                }
            }
        }
    }
    Ok(Some(mask))
}

/// The mask of a `range` (whose members are ints, its iteration running no Python code)
/// without iterating it; None for anything else, or bounds beyond 64 bits.
fn range_mask(value: &Bound<'_, PyAny>, length: usize) -> PyResult<Option<Vec<bool>>> {
    // SAFETY: reads the type of a live object; `range` cannot be subclassed.
    if unsafe { ffi::PyRange_Check(value.as_ptr()) } == 0 {
        return Ok(None);
    }
    let mut bounds = [0_i128; 3];
    for (bound, name) in bounds.iter_mut().zip(["start", "stop", "step"]) {
        match value.getattr(name)?.extract::<i64>() {
            Ok(read) => *bound = i128::from(read),
            Err(_) => return Ok(None),
        }
    }
    let [start, stop, step] = bounds;
    let mut mask = vec![false; length];
    let length = i128::try_from(length).expect("a list length fits i128");
    // The members inside [0, length), from the first of them on, `step` (never 0) apart.
    let ceil = |distance: i128, stride: i128| (distance + stride - 1) / stride * stride;
    let (low, high, first) = if step > 0 {
        let low = start.max(0);
        (low, stop.min(length), start + ceil(low - start, step))
    } else {
        let high = start.min(length - 1) + 1;
        (
            stop.max(-1) + 1,
            high,
            start - ceil(start - (high - 1), -step),
        )
    };
    let mut position = first;
    while low <= position && position < high {
        mask[usize::try_from(position).expect("inside the mask")] = true;
        position += step;
    }
    Ok(Some(mask))
}

/// The interpreter's wording for a surplus positional argument (pyo3's says "arguments").
pub fn reject_extra(function: &str, extra: &Bound<'_, PyTuple>) -> PyResult<()> {
    if extra.is_empty() {
        return Ok(());
    }
    Err(PyTypeError::new_err(format!(
        "{function}() takes 1 positional argument but {} were given",
        extra.len() + 1
    )))
}

/// The members of `value`, a tuple of exact `str` (`name` names it in the error).
pub fn str_tuple<'py>(
    value: &Bound<'py, PyAny>,
    name: &str,
) -> PyResult<Vec<Bound<'py, PyString>>> {
    let Ok(members) = value.cast::<PyTuple>() else {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a tuple of str, not {}",
            value.get_type().name()?
        )));
    };
    members
        .iter()
        .map(|member| match member.cast_into_exact::<PyString>() {
            Ok(text) => Ok(text),
            Err(err) => Err(PyTypeError::new_err(format!(
                "{name} must be a tuple of str, not a tuple holding {}",
                err.into_inner().get_type().name()?
            ))),
        })
        .collect()
}
