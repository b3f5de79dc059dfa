//! `DictText`: an item's sorted-JSON text answered by the engine, or by a fallback, in one
//! call (cheaper than the Python frame of the SDK's `fingerprint_input_item`).

use pyo3::prelude::*;
use pyo3::pyclass::{PyTraverseError, PyVisit};
use pyo3::types::{PyBool, PyDict, PyString, PyTuple};

use crate::py::args::str_tuple;
use crate::py::sorted_json::SortedJson;
use crate::py::text::{to_py_string, Text};
use crate::py::watch::NameWatch;

/// ``DictText(fallback, skip, skip_with_ids, watch=None)``: called as
/// ``(item, *, ignore_ids_for_matching=False)``, returns ``sorted_json_text(item, skip)``
/// (``skip_with_ids`` when ``ignore_ids_for_matching`` is True) for an exact dict whose
/// text the engine writes, while ``watch`` (if given) is intact; every other call,
/// with whatever arguments, is ``fallback``'s.
#[pyclass(module = "histcore._core", frozen, dict)]
pub struct DictText {
    fallback: Py<PyAny>,
    skip: Vec<Py<PyString>>,
    skip_with_ids: Vec<Py<PyString>>,
    watch: Option<Py<NameWatch>>,
}

#[pymethods]
impl DictText {
    #[new]
    #[pyo3(signature = (fallback, skip, skip_with_ids, watch = None))]
    fn new(
        fallback: Bound<'_, PyAny>,
        skip: &Bound<'_, PyAny>,
        skip_with_ids: &Bound<'_, PyAny>,
        watch: Option<Py<NameWatch>>,
    ) -> PyResult<Self> {
        let names = |value, name| -> PyResult<Vec<Py<PyString>>> {
            Ok(str_tuple(value, name)?
                .into_iter()
                .map(Bound::unbind)
                .collect())
        };
        Ok(DictText {
            skip: names(skip, "skip")?,
            skip_with_ids: names(skip_with_ids, "skip_with_ids")?,
            fallback: fallback.unbind(),
            watch,
        })
    }

    #[pyo3(signature = (item, *args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        item: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Some(text) = self.text(py, item, args, kwargs)? {
            return Ok(text);
        }
        let mut call_args = vec![item.clone()];
        call_args.extend(args.iter());
        self.fallback
            .bind(py)
            .call(PyTuple::new(py, call_args)?, kwargs)
    }

    /// So the collector sees the fallback and the watch (both may lead back here); frozen,
    /// so no `__clear__`: the fallback function or the watch breaks such a cycle.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.fallback)?;
        self.skip
            .iter()
            .chain(&self.skip_with_ids)
            .try_for_each(|name| visit.call(name))?;
        visit.call(&self.watch)
    }
}

impl DictText {
    fn text<'py>(
        &self,
        py: Python<'py>,
        item: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        if !item.is_exact_instance_of::<PyDict>() || !args.is_empty() {
            return Ok(None);
        }
        let mut ignore_ids = false;
        if let Some(kwargs) = kwargs {
            if kwargs.len() > 1 {
                return Ok(None);
            }
            if let Some((name, value)) = kwargs.iter().next() {
                // Only the keyword the SDK passes, with a bool: anything else is the fallback's.
                let named = name.cast::<PyString>().is_ok_and(|name| {
                    name.to_str()
                        .is_ok_and(|name| name == "ignore_ids_for_matching")
                });
                if !named || !value.is_instance_of::<PyBool>() {
                    return Ok(None);
                }
                ignore_ids = value.is_truthy()?;
            }
        }
        if let Some(watch) = &self.watch {
            if !watch.borrow(py).intact(py)? {
                return Ok(None);
            }
        }
        let names = if ignore_ids {
            &self.skip_with_ids
        } else {
            &self.skip
        };
        let skip = names
            .iter()
            .map(|name| Text::of_str(name.bind(py).clone().into_any()))
            .collect::<PyResult<Vec<_>>>()?;
        let mut walker = SortedJson::reuse(py);
        let text = match walker.text(item, &skip) {
            Some(bytes) => Some(to_py_string(py, bytes)?.into_any()),
            None => None,
        };
        walker.recycle();
        Ok(text)
    }
}
