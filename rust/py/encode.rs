//! Walks Python values into the canonical writer, subclasses in the twin's `isinstance` order;
//! a container is read at once, before any user code (`str()` of a key or value) runs.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::{ffi, intern};

use super::dict;
use super::key_entry::Entry;
use super::text::{str_bytes, Text};
use crate::core::canonical::{self, MAX_DEPTH};

pub fn depth_error() -> PyErr {
    PyValueError::new_err(canonical::depth_error_message())
}

pub struct Encoder<'py> {
    py: Python<'py>,
    out: Vec<u8>,
    /// Entry and member buffers, one per depth, reused across items.
    entry_pools: Vec<Vec<Entry<'py>>>,
    member_pools: Vec<Vec<Bound<'py, PyAny>>>,
    /// Positions (in the current entry buffer) whose non-str keys still need `str()`.
    deferred_keys: Vec<(usize, Bound<'py, PyAny>)>,
    int_repr: Option<Bound<'py, PyAny>>,
}

impl<'py> Encoder<'py> {
    pub fn new(py: Python<'py>) -> Self {
        Encoder {
            py,
            out: Vec::with_capacity(4096),
            entry_pools: Vec::new(),
            member_pools: Vec::new(),
            deferred_keys: Vec::new(),
            int_repr: None,
        }
    }

    /// The canonical bytes of a payload (top-level metadata keys dropped), until the next call.
    pub fn encode(&mut self, payload: &Bound<'py, PyAny>) -> PyResult<&[u8]> {
        self.out.clear();
        self.value(payload, 0, true)?;
        Ok(&self.out)
    }

    fn value(&mut self, value: &Bound<'py, PyAny>, depth: usize, top: bool) -> PyResult<()> {
        if value.is_exact_instance_of::<PyString>() {
            canonical::write_string(&mut self.out, str_bytes(value)?.as_bytes());
        } else if let Ok(dict) = value.cast_exact::<PyDict>() {
            self.dict(dict, depth, top)?;
        } else if value.is_exact_instance_of::<PyInt>() {
            self.int(value)?;
        } else if value.is_exact_instance_of::<PyList>() {
            // SAFETY: `value` was just checked to be an exact `list`.
            self.list(unsafe { value.cast_unchecked::<PyList>() }, depth)?;
        } else if value.is_none() {
            canonical::write_constant(&mut self.out, None);
        } else if value.is(PyBool::new(self.py, true)) {
            canonical::write_constant(&mut self.out, Some(true));
        } else if value.is(PyBool::new(self.py, false)) {
            canonical::write_constant(&mut self.out, Some(false));
        } else if value.is_exact_instance_of::<PyFloat>() {
            self.float(value)?;
        } else if value.is_exact_instance_of::<PyTuple>() {
            // SAFETY: `value` was just checked to be an exact `tuple`.
            self.tuple(unsafe { value.cast_unchecked::<PyTuple>() }, depth)?;
        } else {
            self.subclass_or_other(value, depth, top)?;
        }
        Ok(())
    }

    fn subclass_or_other(
        &mut self,
        value: &Bound<'py, PyAny>,
        depth: usize,
        top: bool,
    ) -> PyResult<()> {
        if value.is_instance_of::<PyString>() {
            canonical::write_string(&mut self.out, str_bytes(value)?.as_bytes());
        } else if value.is_instance_of::<PyInt>() {
            self.int(value)?;
        } else if value.is_instance_of::<PyFloat>() {
            self.float(value)?;
        } else if let Ok(dict) = value.cast::<PyDict>() {
            self.dict(dict, depth, top)?;
        } else if let Ok(list) = value.cast::<PyList>() {
            self.list(list, depth)?;
        } else if let Ok(tuple) = value.cast::<PyTuple>() {
            self.tuple(tuple, depth)?;
        } else {
            let text = value.str()?;
            canonical::write_string(&mut self.out, str_bytes(text.as_any())?.as_bytes());
        }
        Ok(())
    }

    fn check_depth(&self, depth: usize) -> PyResult<()> {
        if depth >= MAX_DEPTH {
            Err(depth_error())
        } else {
            Ok(())
        }
    }

    fn int(&mut self, value: &Bound<'py, PyAny>) -> PyResult<()> {
        let mut overflow = 0;
        // SAFETY: `value` is a live `int` (or subclass) and `overflow` writable; the value itself
        // is read (never `__index__`), so no Python code runs.
        let small = unsafe { ffi::PyLong_AsLongLongAndOverflow(value.as_ptr(), &raw mut overflow) };
        if overflow == 0 {
            if small == -1 {
                if let Some(error) = PyErr::take(self.py) {
                    return Err(error);
                }
            }
            canonical::write_i64(&mut self.out, small);
            return Ok(());
        }
        // Beyond i64: what `int.__repr__` says (including its digit-limit error).
        let int_repr = match &self.int_repr {
            Some(int_repr) => int_repr,
            None => {
                let int_type = self.py.get_type::<PyInt>();
                self.int_repr
                    .insert(int_type.getattr(intern!(self.py, "__repr__"))?)
            }
        };
        let digits = int_repr.call1((value,))?;
        self.out
            .extend_from_slice(str_bytes(digits.cast::<PyString>()?.as_any())?.as_bytes());
        Ok(())
    }

    fn float(&mut self, value: &Bound<'py, PyAny>) -> PyResult<()> {
        // SAFETY: `value` is a live `float` (or subclass), read without Python code (no
        // `__float__`).
        let number = unsafe { ffi::PyFloat_AsDouble(value.as_ptr()) };
        if number == -1.0 {
            if let Some(error) = PyErr::take(self.py) {
                return Err(error);
            }
        }
        canonical::write_float(&mut self.out, number);
        Ok(())
    }

    /// A list (or subclass), its members read at once: `str()` of a member may change the list,
    /// and must not change what is encoded.
    fn list(&mut self, list: &Bound<'py, PyList>, depth: usize) -> PyResult<()> {
        self.check_depth(depth)?;
        if self.member_pools.len() <= depth {
            self.member_pools.resize_with(depth + 1, Vec::new);
        }
        let mut members = std::mem::take(&mut self.member_pools[depth]);
        members.extend(list.iter());
        let result = self.sequence(&members, depth);
        members.clear();
        self.member_pools[depth] = members;
        result
    }

    fn tuple(&mut self, tuple: &Bound<'py, PyTuple>, depth: usize) -> PyResult<()> {
        self.check_depth(depth)?;
        self.out.push(b'[');
        for (position, member) in tuple.iter().enumerate() {
            if position > 0 {
                self.out.push(b',');
            }
            self.value(&member, depth + 1, false)?;
        }
        self.out.push(b']');
        Ok(())
    }

    fn sequence(&mut self, members: &[Bound<'py, PyAny>], depth: usize) -> PyResult<()> {
        self.out.push(b'[');
        for (position, member) in members.iter().enumerate() {
            if position > 0 {
                self.out.push(b',');
            }
            self.value(member, depth + 1, false)?;
        }
        self.out.push(b']');
        Ok(())
    }

    fn dict(&mut self, value: &Bound<'py, PyDict>, depth: usize, top: bool) -> PyResult<()> {
        self.check_depth(depth)?;
        if self.entry_pools.len() <= depth {
            self.entry_pools.resize_with(depth + 1, Vec::new);
        }
        let mut entries = std::mem::take(&mut self.entry_pools[depth]);
        let result = self.dict_entries(value, top, &mut entries).and_then(|()| {
            // Stable, so keys that read the same (`1` and `"1"`) keep their dict order.
            entries.sort_by(Entry::key_order);
            self.out.push(b'{');
            for (position, entry) in entries.iter().enumerate() {
                if position > 0 {
                    self.out.push(b',');
                }
                canonical::write_string(&mut self.out, entry.key.as_ref());
                self.out.push(b':');
                self.value(&entry.value, depth + 1, false)?;
            }
            self.out.push(b'}');
            Ok(())
        });
        entries.clear();
        self.entry_pools[depth] = entries;
        result
    }

    /// Collects `(key text, value)` pairs; non-str keys get `str()` only after the walk, so no
    /// user code runs during it. Only str keys are metadata keys.
    fn dict_entries(
        &mut self,
        value: &Bound<'py, PyDict>,
        top: bool,
        entries: &mut Vec<Entry<'py>>,
    ) -> PyResult<()> {
        self.deferred_keys.clear();
        let mut push = |key: Bound<'py, PyAny>, member: Bound<'py, PyAny>| -> PyResult<()> {
            if key.is_exact_instance_of::<PyString>() {
                let text = Text::of_str(key)?;
                if !(top && canonical::is_metadata_key(text.as_ref())) {
                    entries.push(Entry::new(text, member));
                }
            } else {
                self.deferred_keys.push((entries.len(), key));
                entries.push(Entry::new(Text::Static(b""), member));
            }
            Ok(())
        };
        // SAFETY: each pair is owned at once, before any code runs.
        let mut pairs = unsafe { dict::items(value) };
        while let Some((key, member)) = pairs.next_pair() {
            push(key.to_owned(), member.to_owned())?;
        }
        if self.deferred_keys.is_empty() {
            return Ok(());
        }
        let mut metadata_positions = Vec::new();
        for (position, key) in self.deferred_keys.drain(..) {
            let text = if key.is_instance_of::<PyString>() {
                let text = Text::of_str(key)?;
                if top && canonical::is_metadata_key(text.as_ref()) {
                    metadata_positions.push(position);
                }
                text
            } else {
                Text::of_str_call(&key)?
            };
            entries[position].set_key(text);
        }
        for position in metadata_positions.into_iter().rev() {
            entries.remove(position);
        }
        Ok(())
    }
}
