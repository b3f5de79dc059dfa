//! Python `str` <-> Python text bytes (UTF-8, lone surrogates as `surrogatepass` writes).

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// UTF-8 cached inside a `str` (or subclass), as long as `text` lives; `None` (error cleared)
/// when it holds a lone surrogate.
#[inline]
fn cached_utf8<'a>(text: &'a Bound<'_, PyAny>) -> Option<&'a [u8]> {
    let mut size: ffi::Py_ssize_t = 0;
    // SAFETY: `text` is live and `size` writable; for a `str` this returns its cached UTF-8
    // without running Python code, for anything else NULL with TypeError set.
    let data = unsafe { ffi::PyUnicode_AsUTF8AndSize(text.as_ptr(), &raw mut size) };
    if data.is_null() {
        // SAFETY: we hold the GIL, and the exception set by the failed call is ours to discard
        // (anything but a surrogate error is raised again by the encoding below).
        unsafe { ffi::PyErr_Clear() };
        return None;
    }
    let size = usize::try_from(size).expect("a length is not negative");
    // SAFETY: on success `data` points at `size` bytes the `str` owns, unchanged while it
    // lives, which is at least `'a`.
    Some(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) })
}

fn surrogatepass_bytes<'py>(text: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    // SAFETY: `text` is live and both names are NUL-terminated literals; the result is owned
    // or NULL (raised), and always an exact `bytes` (CPython checks codec results).
    unsafe {
        let bytes = ffi::PyUnicode_AsEncodedString(
            text.as_ptr(),
            c"utf-8".as_ptr(),
            c"surrogatepass".as_ptr(),
        );
        Bound::from_owned_ptr_or_err(text.py(), bytes).map(|b| b.cast_into_unchecked())
    }
}

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

    pub fn of_str_call(value: &Bound<'py, PyAny>) -> PyResult<Self> {
        Self::of_str(value.str()?.into_any())
    }
}

impl AsRef<[u8]> for Text<'_> {
    fn as_ref(&self) -> &[u8] {
        match self {
            Self::Static(bytes) => bytes,
            // SAFETY: `data` and `len` describe the buffer of the immutable `str` or `bytes` in
            // `_owner`, which keeps it in place and lives as long as `self`.
            Self::Owned { data, len, .. } => unsafe { std::slice::from_raw_parts(*data, *len) },
        }
    }
}

/// A Python `str` from Python text bytes (as cheap as a plain UTF-8 decode for ASCII).
pub fn to_py_string<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyString>> {
    let len = ffi::Py_ssize_t::try_from(bytes.len()).expect("a slice is at most isize::MAX bytes");
    // SAFETY: `bytes` is valid for `len` bytes and the handler name a NUL-terminated literal;
    // the result is an owned exact `str`, or NULL (raised).
    unsafe {
        let text = ffi::PyUnicode_DecodeUTF8(bytes.as_ptr().cast(), len, c"surrogatepass".as_ptr());
        Bound::from_owned_ptr_or_err(py, text).map(|t| t.cast_into_unchecked())
    }
}
