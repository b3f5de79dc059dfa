//! A dict member waiting to be written in key order: the one key ordering of the JSON
//! writers (`encode`, `sorted_json`), by the bytes of the key's text.

use pyo3::prelude::*;

use super::text::Text;

pub struct Entry<'py> {
    /// The first 8 key bytes, big-endian and zero-padded: orders keys like their bytes, and
    /// most key comparisons end here.
    prefix: u64,
    pub key: Text<'py>,
    pub value: Bound<'py, PyAny>,
}

impl<'py> Entry<'py> {
    #[inline]
    pub fn new(key: Text<'py>, value: Bound<'py, PyAny>) -> Self {
        Entry {
            prefix: key_prefix(key.as_ref()),
            key,
            value,
        }
    }

    #[inline]
    pub fn set_key(&mut self, key: Text<'py>) {
        self.prefix = key_prefix(key.as_ref());
        self.key = key;
    }

    /// Byte order of keys (the prefix decides unless it ties).
    #[inline]
    pub fn key_order(a: &Entry<'_>, b: &Entry<'_>) -> std::cmp::Ordering {
        a.prefix
            .cmp(&b.prefix)
            .then_with(|| a.key.as_ref().cmp(b.key.as_ref()))
    }
}

#[inline]
fn key_prefix(key: &[u8]) -> u64 {
    if let Some(head) = key.first_chunk::<8>() {
        return u64::from_be_bytes(*head);
    }
    // Short keys byte by byte: a copy of unknown length would call `memcpy`.
    let mut prefix = 0u64;
    for (index, &byte) in key.iter().enumerate() {
        prefix |= u64::from(byte) << (56 - 8 * index);
    }
    prefix
}
