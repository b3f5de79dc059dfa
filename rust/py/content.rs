//! Content keys of Python items (canonical bytes hashed), for `content_key` and for the
//! content pass of callback classification.

use pyo3::prelude::*;

use super::args::Items;
use super::encode::Encoder;
use super::extract::Reader;
use crate::core::canonical;
use crate::core::classify::ContentKeys;

/// The content key of `item`: the XXH3-128 digest of its canonical bytes.
pub fn content_key_of<'py>(
    reader: &mut Reader<'py>,
    encoder: &mut Encoder<'py>,
    item: &Bound<'py, PyAny>,
) -> PyResult<[u8; 16]> {
    let payload = reader.payload(item.clone())?;
    Ok(canonical::content_key(encoder.encode(&payload)?))
}

/// Content keys of the three lists of a callback classification, computed on demand.
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
