//! Exact builtin JSON values walked into `json.dumps(value, sort_keys=True, default=str)` text,
//! running no Python code (so they cannot change); anything else is left to `json.dumps`.

use std::cell::Cell;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::{ffi, intern};

use crate::core::canonical::{self, MAX_DEPTH};
use crate::core::pyjson_text::write_ascii_string;
use crate::py::args::{new_list, str_tuple, Items};
use crate::py::dict;
use crate::py::key_entry::Entry;
use crate::py::text::{str_bytes, to_py_string, Text};

pub fn sorted_json_text<'py>(
    py: Python<'py>,
    value: &Bound<'py, PyAny>,
    skip: Option<&Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyString>>> {
    let left_out = skipped_names(skip)?;
    let mut walker = SortedJson::reuse(py);
    let text = match walker.text(value, &left_out) {
        Some(bytes) => to_py_string(py, bytes).map(Some),
        None => Ok(None),
    };
    walker.recycle();
    text
}

pub fn dict_sorted_json_texts<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    skip: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let left_out = skipped_names(skip)?;
    let items = Items::of(items, "items")?;
    let mut walker = SortedJson::reuse(py);
    let texts = new_list(py, items.len(), |index| {
        let item = items.get(index)?;
        if !item.is_exact_instance_of::<PyDict>() {
            return Ok(py.None().into_bound(py));
        }
        Ok(match walker.text(&item, &left_out) {
            Some(bytes) => to_py_string(py, bytes)?.into_any(),
            None => py.None().into_bound(py),
        })
    });
    walker.recycle();
    texts
}

fn skipped_names<'py>(skip: Option<&Bound<'py, PyAny>>) -> PyResult<Vec<Text<'py>>> {
    let mut left_out = Vec::new();
    if let Some(skip) = skip {
        for name in str_tuple(skip, "skip")? {
            left_out.push(Text::of_str(name.into_any())?);
        }
    }
    Ok(left_out)
}

type SparePools = Vec<Vec<Entry<'static>>>;

thread_local! {
    /// The last walk's buffers on this thread: Python loops call once per item, where an
    /// allocation per call would show.
    static SPARE_OUT: Cell<Option<Vec<u8>>> = const { Cell::new(None) };
    static SPARE_POOLS: Cell<Option<SparePools>> = const { Cell::new(None) };
}

/// `pools` emptied and relabelled with another lifetime: no entry, so no reference,
/// crosses over.
fn relabel<'a, 'b>(pools: Vec<Vec<Entry<'a>>>) -> Vec<Vec<Entry<'b>>> {
    pools
        .into_iter()
        .map(|mut entries| {
            entries.clear();
            entries
                .into_iter()
                .map(|_| unreachable!("emptied above"))
                .collect()
        })
        .collect()
}

pub struct SortedJson<'py> {
    py: Python<'py>,
    out: Vec<u8>,
    pools: Vec<Vec<Entry<'py>>>,
    int_repr: Option<Bound<'py, PyAny>>,
}

impl<'py> SortedJson<'py> {
    pub fn reuse(py: Python<'py>) -> Self {
        let mut out = SPARE_OUT.with(Cell::take).unwrap_or_default();
        out.clear();
        let pools = SPARE_POOLS
            .with(Cell::take)
            .map(relabel)
            .unwrap_or_default();
        SortedJson {
            py,
            out,
            pools,
            int_repr: None,
        }
    }

    pub fn recycle(self) {
        SPARE_OUT.with(|spare| spare.set(Some(self.out)));
        SPARE_POOLS.with(|spare| spare.set(Some(relabel(self.pools))));
    }

    /// The ASCII text of `value` without the top-level keys in `skip`, or `None` when the
    /// value is not one this walk answers; valid until the next call.
    pub fn text(&mut self, value: &Bound<'py, PyAny>, skip: &[Text<'py>]) -> Option<&[u8]> {
        self.out.clear();
        if self.value(value, 0, skip) {
            Some(&self.out)
        } else {
            None
        }
    }

    fn value(&mut self, value: &Bound<'py, PyAny>, depth: usize, skip: &[Text<'py>]) -> bool {
        if value.is_exact_instance_of::<PyString>() {
            match str_bytes(value) {
                Ok(bytes) => write_ascii_string(&mut self.out, bytes.as_bytes()),
                Err(_) => return false,
            }
        } else if let Ok(dict) = value.cast_exact::<PyDict>() {
            return depth < MAX_DEPTH && self.dict(dict, depth, skip);
        } else if value.is_exact_instance_of::<PyInt>() {
            return self.int(value);
        } else if value.is_exact_instance_of::<PyList>() {
            // SAFETY: checked to be an exact list.
            let list = unsafe { value.cast_unchecked::<PyList>() };
            return depth < MAX_DEPTH && self.sequence(list.iter(), depth);
        } else if value.is_none() {
            canonical::write_constant(&mut self.out, None);
        } else if value.is(PyBool::new(self.py, true)) {
            canonical::write_constant(&mut self.out, Some(true));
        } else if value.is(PyBool::new(self.py, false)) {
            canonical::write_constant(&mut self.out, Some(false));
        } else if value.is_exact_instance_of::<PyFloat>() {
            // SAFETY: `value` is a live exact float: reading it cannot fail or run Python code.
            let number = unsafe { ffi::PyFloat_AsDouble(value.as_ptr()) };
            canonical::write_float(&mut self.out, number);
        } else if value.is_exact_instance_of::<PyTuple>() {
            // SAFETY: checked to be an exact tuple.
            let tuple = unsafe { value.cast_unchecked::<PyTuple>() };
            return depth < MAX_DEPTH && self.sequence(tuple.iter(), depth);
        } else {
            return false;
        }
        true
    }

    fn int(&mut self, value: &Bound<'py, PyAny>) -> bool {
        let mut overflow = 0;
        // SAFETY: `value` is a live exact int: this reads its value (never `__index__`) into a
        // local.
        let small = unsafe { ffi::PyLong_AsLongLongAndOverflow(value.as_ptr(), &raw mut overflow) };
        if overflow == 0 {
            if small == -1 && PyErr::take(self.py).is_some() {
                return false;
            }
            canonical::write_i64(&mut self.out, small);
            return true;
        }
        // Beyond i64: what `int.__repr__` says; its digit-limit error is json's to raise.
        if self.int_repr.is_none() {
            match self
                .py
                .get_type::<PyInt>()
                .getattr(intern!(self.py, "__repr__"))
            {
                Ok(int_repr) => self.int_repr = Some(int_repr),
                Err(_) => return false,
            }
        }
        let Some(int_repr) = &self.int_repr else {
            return false;
        };
        let Ok(digits) = int_repr.call1((value,)) else {
            return false;
        };
        match digits
            .cast::<PyString>()
            .map(|text| str_bytes(text.as_any()).map(|b| b.as_bytes().to_vec()))
        {
            Ok(Ok(bytes)) => {
                self.out.extend_from_slice(&bytes);
                true
            }
            _ => false,
        }
    }

    fn sequence(&mut self, members: impl Iterator<Item = Bound<'py, PyAny>>, depth: usize) -> bool {
        self.out.push(b'[');
        let mut first = true;
        for member in members {
            if !first {
                self.out.extend_from_slice(b", ");
            }
            first = false;
            if !self.value(&member, depth + 1, &[]) {
                return false;
            }
        }
        self.out.push(b']');
        true
    }

    fn dict(&mut self, value: &Bound<'py, PyDict>, depth: usize, skip: &[Text<'py>]) -> bool {
        if self.pools.len() <= depth {
            self.pools.resize_with(depth + 1, Vec::new);
        }
        let mut entries = std::mem::take(&mut self.pools[depth]);
        let done = self.entries(value, skip, &mut entries) && {
            // Keys are distinct str: their text bytes order them by code point.
            entries.sort_unstable_by(Entry::key_order);
            self.out.push(b'{');
            let mut written = true;
            for (position, entry) in entries.iter().enumerate() {
                if position > 0 {
                    self.out.extend_from_slice(b", ");
                }
                write_ascii_string(&mut self.out, entry.key.as_ref());
                self.out.extend_from_slice(b": ");
                if !self.value(&entry.value, depth + 1, &[]) {
                    written = false;
                    break;
                }
            }
            self.out.push(b'}');
            written
        };
        entries.clear();
        self.pools[depth] = entries;
        done
    }

    /// The dict's `(key, value)` pairs, false at its first key that is not an exact str.
    fn entries(
        &mut self,
        value: &Bound<'py, PyDict>,
        skip: &[Text<'py>],
        entries: &mut Vec<Entry<'py>>,
    ) -> bool {
        // SAFETY: no Python code runs in the walk (exact str keys, owned members).
        let mut pairs = unsafe { dict::items(value) };
        while let Some((key, member)) = pairs.next_pair() {
            if !key.is_exact_instance_of::<PyString>() {
                return false;
            }
            let Ok(text) = Text::of_str(key.to_owned()) else {
                return false;
            };
            if skip
                .iter()
                .any(|left_out| left_out.as_ref() == text.as_ref())
            {
                continue;
            }
            entries.push(Entry::new(text, member.to_owned()));
        }
        true
    }
}
