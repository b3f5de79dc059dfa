//! `ScreenedKey`: the SDK's `_dedupe_key` answered by the engine where it is the SDK's by
//! construction, by a fallback otherwise, in one call; and the `screened_*` functions.

use pyo3::prelude::*;
use pyo3::pyclass::{PyTraverseError, PyVisit};
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::core::keys::KeyBuilder;
use crate::py::args::Items;
use crate::py::extract::{picked, screened_key_ids, ScreenedItem};
use crate::py::text::to_py_string;
use crate::py::watch::NameWatch;

/// `item`'s dedupe key where that is the SDK's `_dedupe_key(item)` by construction and
/// `watch` is intact; `Ok(None)` where the SDK must answer.
pub fn screened_key<'py>(
    py: Python<'py>,
    item: &Bound<'py, PyAny>,
    watch: Option<&NameWatch>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if let Some(watch) = watch {
        if !watch.intact(py)? {
            return Ok(None);
        }
    }
    let Some(mut screened) = ScreenedItem::of(item)? else {
        return Ok(None);
    };
    let mut builder = KeyBuilder::reuse();
    let key = match builder.build(&mut screened)? {
        Some(_) => to_py_string(py, builder.key()).map(Bound::into_any),
        None => Ok(py.None().into_bound(py)),
    };
    builder.recycle();
    key.map(Some)
}

pub fn screened_dedupe_key<'py>(
    py: Python<'py>,
    item: &Bound<'py, PyAny>,
    watch: Option<&Bound<'py, NameWatch>>,
) -> PyResult<Bound<'py, PyAny>> {
    let watch = watch.map(Bound::borrow);
    Ok(screened_key(py, item, watch.as_deref())?
        .unwrap_or_else(|| py.NotImplemented().into_bound(py)))
}

/// The items for a screened dedupe: None (decline) unless an exact list, `watch` (if any) intact.
pub fn screened_list<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    watch: Option<PyRef<'py, NameWatch>>,
) -> PyResult<Option<Items<'py>>> {
    let declined = match watch {
        Some(watch) => !watch.intact(py)?,
        None => false,
    };
    if declined || !items.is_exact_instance_of::<PyList>() {
        return Ok(None);
    }
    Items::of(items, "items").map(Some)
}

pub fn screened_deduplicate<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    preferring_latest: bool,
    watch: Option<PyRef<'py, NameWatch>>,
) -> PyResult<Bound<'py, PyAny>> {
    let Some(items) = screened_list(py, items, watch)? else {
        return Ok(py.NotImplemented().into_bound(py));
    };
    match screened_key_ids(&items)? {
        Some(keys) => Ok(picked(&items, keys, preferring_latest)?.into_any()),
        None => Ok(py.NotImplemented().into_bound(py)),
    }
}

/// ``ScreenedKey(fallback, watch=None)``: called with one item, returns
/// ``screened_dedupe_key(item, watch)`` where that is not NotImplemented; every other
/// call, with whatever arguments, is ``fallback``'s.
#[pyclass(module = "histcore._core", frozen, dict)]
pub struct ScreenedKey {
    fallback: Py<PyAny>,
    watch: Option<Py<NameWatch>>,
}

#[pymethods]
impl ScreenedKey {
    #[new]
    #[pyo3(signature = (fallback, watch = None))]
    fn new(fallback: Bound<'_, PyAny>, watch: Option<Py<NameWatch>>) -> Self {
        ScreenedKey {
            fallback: fallback.unbind(),
            watch,
        }
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if args.len() == 1 && kwargs.is_none_or(|kwargs| kwargs.is_empty()) {
            let watch = self.watch.as_ref().map(|watch| watch.borrow(py));
            if let Some(key) = screened_key(py, &args.get_item(0)?, watch.as_deref())? {
                return Ok(key);
            }
        }
        self.fallback.bind(py).call(args, kwargs)
    }

    /// So the collector sees the fallback and the watch (whose armed names may hold this
    /// very object); frozen, so no `__clear__`: the cycle is broken at the watch.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.fallback)?;
        visit.call(&self.watch)
    }
}
