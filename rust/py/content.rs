//! Canonical bytes and content keys of Python items, and callback classification.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use super::args::{new_list, Items};
use super::encode::Encoder;
use super::extract::Reader;
use crate::core::canonical;
use crate::core::classify::{self, ContentKeys};

pub fn canonical_json<'py>(item: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let py = item.py();
    let payload = Reader::new(py).payload(item.clone())?;
    let mut encoder = Encoder::new(py);
    Ok(PyBytes::new(py, encoder.encode(&payload)?))
}

pub fn content_key<'py>(item: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let py = item.py();
    let key = content_key_of(&mut Reader::new(py), &mut Encoder::new(py), item)?;
    Ok(PyBytes::new(py, &key))
}

pub fn content_keys<'py>(items: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    let py = items.py();
    let items = Items::of(items, "items")?;
    let mut reader = Reader::new(py);
    let mut encoder = Encoder::new(py);
    new_list(py, items.len(), |index| {
        let key = content_key_of(&mut reader, &mut encoder, &items.get(index)?)?;
        Ok(PyBytes::new(py, &key).into_any())
    })
}

pub fn classify_callback_output<'py>(
    py: Python<'py>,
    history: &Bound<'py, PyAny>,
    new_items: &Bound<'py, PyAny>,
    combined: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let history = Items::of(history, "history")?;
    let new_items = Items::of(new_items, "new_items")?;
    let combined = Items::of(combined, "combined")?;
    let result = classify::classify(
        &history.addresses()?,
        &new_items.addresses()?,
        &combined.addresses()?,
        &mut ListContentKeys::new(&history, &new_items, &combined),
    )?;
    PyTuple::new(
        py,
        [
            PyList::new(py, result.history_positions)?,
            PyList::new(py, result.persisted_positions)?,
        ],
    )
}

/// The content key of `item`: the XXH3-128 digest of its canonical bytes.
pub fn content_key_of<'py>(
    reader: &mut Reader<'py>,
    encoder: &mut Encoder<'py>,
    item: &Bound<'py, PyAny>,
) -> PyResult<[u8; 16]> {
    let payload = reader.payload(item.clone())?;
    Ok(canonical::content_key(encoder.encode(&payload)?))
}

pub struct ListContentKeys<'a, 'py> {
    reader: Reader<'py>,
    encoder: Encoder<'py>,
    history: &'a Items<'py>,
    new_items: &'a Items<'py>,
    combined: &'a Items<'py>,
}

impl<'a, 'py> ListContentKeys<'a, 'py> {
    pub fn new(
        history: &'a Items<'py>,
        new_items: &'a Items<'py>,
        combined: &'a Items<'py>,
    ) -> Self {
        let py = history.py();
        ListContentKeys {
            reader: Reader::new(py),
            encoder: Encoder::new(py),
            history,
            new_items,
            combined,
        }
    }

    fn key(&mut self, item: &Bound<'py, PyAny>) -> PyResult<u128> {
        content_key_of(&mut self.reader, &mut self.encoder, item).map(u128::from_be_bytes)
    }
}

impl ContentKeys for ListContentKeys<'_, '_> {
    type Error = PyErr;

    fn new_item(&mut self, index: usize) -> PyResult<u128> {
        let item = self.new_items.get(index)?;
        self.key(&item)
    }

    fn combined(&mut self, position: usize) -> PyResult<u128> {
        let item = self.combined.get(position)?;
        self.key(&item)
    }

    fn history(&mut self) -> PyResult<Vec<u128>> {
        let history = self.history;
        history.iter().map(|item| self.key(&item?)).collect()
    }
}
