//! Python `str` <-> Python text bytes (UTF-8, with lone surrogates in the 3-byte form that
//! Python's `surrogatepass` handler writes; see `core::canonical`).

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// UTF-8 data cached inside a `str` (for `str` subclasses too: their data), or `None` when
/// it cannot be had, in practice because the `str` holds a lone surrogate (the
/// interpreter's error is cleared; a non-str fails the same way). The slice lives as long
/// as `text` does.
#[inline]
fn cached_utf8<'a>(text: &'a Bound<'_, PyAny>) -> Option<&'a [u8]> {
    let mut size: ffi::Py_ssize_t = 0;
    // SAFETY: `text` is a live object and `size` a valid place to write. For a `str` (or
    // subclass) the call returns its cached UTF-8 data, made on first use, and runs no
    // Python code; for anything else it returns NULL with TypeError set.
    let data = unsafe { ffi::PyUnicode_AsUTF8AndSize(text.as_ptr(), &raw mut size) };
    if data.is_null() {
        // Only an unencodable surrogate gets here in practice; if something else failed,
        // the surrogatepass encoding below raises it again.
        // SAFETY: we hold the GIL, and the exception set by the failed call is ours to
        // discard.
        unsafe { ffi::PyErr_Clear() };
        return None;
    }
    let size = usize::try_from(size).expect("a length is not negative");
    // SAFETY: on success `data` points at `size` initialised bytes that the `str` owns:
    // CPython keeps that UTF-8 buffer alive and unchanged as long as the `str` lives,
    // which is at least `'a` since `text` borrows a reference to it.
    Some(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) })
}

fn surrogatepass_bytes<'py>(text: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    // SAFETY: `text` is a live object and both names are NUL-terminated literals. The
    // call returns a new reference (owned from here on) or NULL with an exception set,
    // which `from_owned_ptr_or_err` raises; the UTF-8 codec's result is always an exact
    // `bytes` (CPython checks any codec's result is bytes).
    unsafe {
        let bytes = ffi::PyUnicode_AsEncodedString(
            text.as_ptr(),
            c"utf-8".as_ptr(),
            c"surrogatepass".as_ptr(),
        );
        Bound::from_owned_ptr_or_err(text.py(), bytes).map(|b| b.cast_into_unchecked())
    }
}

/// The text bytes of a `str` borrowed for a short while.
pub enum StrBytes<'a, 'py> {
    Utf8(&'a [u8]),
    Surrogates(Bound<'py, PyBytes>),
}

impl StrBytes<'_, '_> {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Utf8(bytes) => bytes,
            Self::Surrogates(bytes) => bytes.as_bytes(),
        }
    }
}

/// The text bytes of `text`, which must be a `str` (or `str` subclass) instance.
#[inline]
pub fn str_bytes<'a, 'py>(text: &'a Bound<'py, PyAny>) -> PyResult<StrBytes<'a, 'py>> {
    debug_assert!(text.is_instance_of::<PyString>());
    match cached_utf8(text) {
        Some(bytes) => Ok(StrBytes::Utf8(bytes)),
        None => surrogatepass_bytes(text).map(StrBytes::Surrogates),
    }
}

/// Text bytes that keep their Python owner alive (or a static literal).
pub enum Text<'py> {
    Static(&'static [u8]),
    Owned {
        _owner: Bound<'py, PyAny>,
        data: *const u8,
        len: usize,
    },
}

impl<'py> Text<'py> {
    /// The text of `text`, which must be a `str` (or `str` subclass) instance.
    pub fn of_str(text: Bound<'py, PyAny>) -> PyResult<Self> {
        debug_assert!(text.is_instance_of::<PyString>());
        let (data, len) = match cached_utf8(&text) {
            Some(bytes) => (bytes.as_ptr(), bytes.len()),
            None => {
                let bytes = surrogatepass_bytes(&text)?;
                let (data, len) = (bytes.as_bytes().as_ptr(), bytes.as_bytes().len());
                return Ok(Text::Owned {
                    _owner: bytes.into_any(),
                    data,
                    len,
                });
            }
        };
        Ok(Text::Owned {
            _owner: text,
            data,
            len,
        })
    }

    /// The text of `str(value)`.
    pub fn of_str_call(value: &Bound<'py, PyAny>) -> PyResult<Self> {
        Self::of_str(value.str()?.into_any())
    }
}

impl AsRef<[u8]> for Text<'_> {
    fn as_ref(&self) -> &[u8] {
        match self {
            Self::Static(bytes) => bytes,
            // SAFETY: `data` and `len` describe the UTF-8 buffer of the `str` or the
            // contents of the `bytes` held in `_owner` (see `of_str`). Both objects are
            // immutable and keep that buffer, at the same address, while they live, and
            // `_owner` lives at least as long as `self`.
            Self::Owned { data, len, .. } => unsafe { std::slice::from_raw_parts(*data, *len) },
        }
    }
}

/// A Python `str` from Python text bytes. The decoder's ASCII fast path makes this as
/// cheap as a plain UTF-8 decode; `surrogatepass` only matters for lone surrogates.
pub fn to_py_string<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyString>> {
    let len = ffi::Py_ssize_t::try_from(bytes.len()).expect("a slice is at most isize::MAX bytes");
    // SAFETY: `bytes` is valid for `len` bytes and the error handler's name is a
    // NUL-terminated literal. The call
    // returns a new reference to an exact `str` (owned from here on) or NULL with an
    // exception set, which `from_owned_ptr_or_err` raises.
    unsafe {
        let text = ffi::PyUnicode_DecodeUTF8(bytes.as_ptr().cast(), len, c"surrogatepass".as_ptr());
        Bound::from_owned_ptr_or_err(py, text).map(|t| t.cast_into_unchecked())
    }
}
