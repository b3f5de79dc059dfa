//! Session rows decoded in one call (fast decoder first, unless a long integer may be there;
//! the exact one decides the rest), and the long-integer screen of exact JSON decoding.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use crate::core::digits;
use crate::py::args::Items;
use crate::py::text::str_bytes;

pub fn long_integer_candidates<'py>(texts: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    let py = texts.py();
    let texts = Items::of(texts, "texts")?;
    let mut positions = Vec::new();
    for index in 0..texts.len() {
        let text = texts.get(index)?;
        let found = if let Ok(bytes) = text.cast::<PyBytes>() {
            digits::has_long_run(bytes.as_bytes())
        } else if text.is_instance_of::<PyString>() {
            digits::has_long_run(str_bytes(&text)?.as_bytes())
        } else {
            return Err(PyTypeError::new_err(format!(
                "texts[{index}] must be str or bytes, not {}",
                text.get_type().name()?
            )));
        };
        if found {
            positions.push(index);
        }
    }
    PyList::new(py, positions)
}

pub fn decode_rows<'py>(
    py: Python<'py>,
    rows: &Bound<'py, PyAny>,
    fast: &Bound<'py, PyAny>,
    exact: &Bound<'py, PyAny>,
    skipped: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let Ok(skipped) = skipped.cast::<PyTuple>() else {
        return Err(PyTypeError::new_err(format!(
            "skipped must be a tuple of exception types, not {}",
            skipped.get_type().name()?
        )));
    };
    if !rows.is_exact_instance_of::<PyList>() {
        return Ok(py.NotImplemented().into_bound(py));
    }
    let rows = Items::of(rows, "rows")?;
    let decoders = Decoders {
        fast,
        exact,
        skipped,
    };
    Ok(match decoded(&rows, &decoders)? {
        Some(decoded) => decoded.into_any(),
        None => py.NotImplemented().into_bound(py),
    })
}

struct Decoders<'a, 'py> {
    fast: &'a Bound<'py, PyAny>,
    exact: &'a Bound<'py, PyAny>,
    skipped: &'a Bound<'py, PyTuple>,
}

impl<'py> Decoders<'_, 'py> {
    fn decode(&self, text: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let fast_first = text.is_exact_instance_of::<PyString>()
            && !digits::has_long_run(str_bytes(text)?.as_bytes());
        if fast_first {
            // Whatever the fast decoder refuses, the exact one decides (value or error).
            if let Ok(value) = self.fast.call1((text,)) {
                return Ok(Some(value));
            }
        }
        match self.exact.call1((text,)) {
            Ok(value) => Ok(Some(value)),
            Err(err) if err.is_instance(text.py(), self.skipped.as_any()) => Ok(None),
            Err(err) => Err(err),
        }
    }
}

fn decoded<'py>(
    rows: &Items<'py>,
    decoders: &Decoders<'_, 'py>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let py = decoders.fast.py();
    for index in 0..rows.len() {
        let row = rows.get(index)?;
        if !row.is_exact_instance_of::<PyTuple>() || row.len()? != 1 {
            return Ok(None);
        }
    }
    let decoded = PyList::empty(py);
    for index in 0..rows.len() {
        let text = rows.get(index)?.get_item(0)?;
        if let Some(value) = decoders.decode(&text)? {
            decoded.append(value)?;
        }
    }
    Ok(Some(decoded))
}
