//! Item facts read out of Python objects, and the dedupes. Dicts are read by what they hold
//! (`dict.get`); a borrowed field is read at once and owned before any user code runs.

use std::ops::Deref;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::{ffi, intern};

use super::args::{new_list, Items};
use super::field_scan::{Name, Walk};
use super::gil::maybe_detach;
use super::text::{str_bytes, to_py_string};
use crate::core::dedupe::{self, Keyed};
use crate::core::keys::{Field, ItemFields, KeyBuilder, KeyInfo};
use crate::core::strings::Strings;

/// Turns items into payloads (models become `model_dump(exclude_unset=True)`).
pub struct Reader<'py> {
    py: Python<'py>,
    dump_kwargs: Option<Bound<'py, PyDict>>,
}

impl<'py> Reader<'py> {
    pub fn py(&self) -> Python<'py> {
        self.py
    }

    pub fn new(py: Python<'py>) -> Self {
        Reader {
            py,
            dump_kwargs: None,
        }
    }

    /// The item as the engine sees it (the pure twin's `_dumped`).
    pub fn payload(&mut self, item: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        // Builtin types never have `model_dump`: skip the attribute lookup.
        if item.is_exact_instance_of::<PyDict>()
            || item.is_exact_instance_of::<PyString>()
            || item.is_exact_instance_of::<PyList>()
            || item.is_exact_instance_of::<PyInt>()
            || item.is_exact_instance_of::<PyFloat>()
            || item.is_exact_instance_of::<PyTuple>()
            || item.is_exact_instance_of::<PyBool>()
            || item.is_none()
            || item.is_instance_of::<PyDict>()
        {
            return Ok(item);
        }
        match item.getattr_opt(intern!(self.py, "model_dump"))? {
            Some(model_dump) => {
                let kwargs = match &self.dump_kwargs {
                    Some(kwargs) => kwargs,
                    None => {
                        let kwargs = PyDict::new(self.py);
                        kwargs.set_item(intern!(self.py, "exclude_unset"), true)?;
                        self.dump_kwargs.insert(kwargs)
                    }
                };
                model_dump.call((), Some(kwargs))
            }
            None => Ok(item),
        }
    }

    pub fn dict_payload(&mut self, item: Bound<'py, PyAny>) -> PyResult<Option<DictPayload<'py>>> {
        Ok(DictPayload::of(self.payload(item)?))
    }
}

/// A field value borrowed from a dict: valid until Python code runs.
pub struct FieldValue<'a, 'py>(Borrowed<'a, 'py, PyAny>);

impl<'py> Deref for FieldValue<'_, 'py> {
    type Target = Bound<'py, PyAny>;

    fn deref(&self) -> &Bound<'py, PyAny> {
        &self.0
    }
}

impl<'a, 'py> FieldValue<'a, 'py> {
    pub fn of(value: Borrowed<'a, 'py, PyAny>) -> Self {
        FieldValue(value)
    }

    /// An owned reference, needed before any call that may run user code.
    pub fn into_owned(self) -> Bound<'py, PyAny> {
        self.0.to_owned()
    }
}

/// Whether `value` is a `str` (exact type first: one pointer comparison).
#[inline]
pub fn is_str(value: &Bound<'_, PyAny>) -> bool {
    value.is_exact_instance_of::<PyString>() || value.is_instance_of::<PyString>()
}

/// A payload known to be a dict (or subclass, read as `dict.get` reads it).
pub struct DictPayload<'py> {
    dict: Bound<'py, PyAny>,
}

impl<'py> DictPayload<'py> {
    pub fn py(&self) -> Python<'py> {
        self.dict.py()
    }

    pub fn of(value: Bound<'py, PyAny>) -> Option<Self> {
        value
            .is_instance_of::<PyDict>()
            .then_some(DictPayload { dict: value })
    }

    pub fn of_exact(value: Bound<'py, PyAny>) -> Option<Self> {
        value
            .is_exact_instance_of::<PyDict>()
            .then_some(DictPayload { dict: value })
    }

    /// `dict.get(payload, key)`, with a stored None reported as missing.
    #[inline]
    pub fn lookup(&self, key: &Bound<'py, PyString>) -> PyResult<Option<FieldValue<'_, 'py>>> {
        let py = key.py();
        // SAFETY: `self.dict` is a live dict (storage read as `dict.get` does) and `key` a live
        // `str`; the result is borrowed from the dict, or NULL when missing or on error.
        let found = unsafe { ffi::PyDict_GetItemWithError(self.dict.as_ptr(), key.as_ptr()) };
        if found.is_null() {
            // Missing keys are the common case: check for an error before fetching one.
            // SAFETY: we hold the GIL; this only reads the thread's exception state.
            if unsafe { ffi::PyErr_Occurred() }.is_null() {
                return Ok(None);
            }
            return Err(PyErr::fetch(py));
        }
        // SAFETY: `found` is non-NULL and borrowed from the held dict; only Python code could
        // remove it, and a `FieldValue` is owned before any runs.
        let value = FieldValue(unsafe { Borrowed::from_ptr(py, found) });
        Ok((!value.is_none()).then_some(value))
    }

    #[inline]
    pub fn copy_str(&self, key: &Bound<'py, PyString>, out: &mut Vec<u8>) -> PyResult<bool> {
        out.clear();
        match self.lookup(key)? {
            Some(value) if is_str(&value) => {
                out.extend_from_slice(str_bytes(&value)?.as_bytes());
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

pub struct KeyFields<'a, 'py> {
    pub payload: &'a DictPayload<'py>,
}

impl ItemFields for KeyFields<'_, '_> {
    type Error = PyErr;

    fn has_role(&mut self) -> PyResult<bool> {
        let py = self.payload.py();
        Ok(self.payload.lookup(intern!(py, "role"))?.is_some())
    }

    fn kind(&mut self, text: &mut Vec<u8>) -> PyResult<bool> {
        let py = self.payload.py();
        text.clear();
        let none = |text: &mut Vec<u8>| {
            text.extend_from_slice(b"None");
            Ok(false)
        };
        let Some(kind) = self.payload.lookup(intern!(py, "type"))? else {
            return none(text);
        };
        if is_str(&kind) {
            // A str (subclasses too) by its text: empty reads as missing.
            text.extend_from_slice(str_bytes(&kind)?.as_bytes());
            return if text.is_empty() {
                none(text)
            } else {
                Ok(true)
            };
        }
        // `type or None` for other values: truthiness decides, then `str()` names the kind.
        let kind = kind.into_owned();
        if !kind.is_truthy()? {
            return none(text);
        }
        let name = kind.str()?;
        text.extend_from_slice(str_bytes(name.as_any())?.as_bytes());
        Ok(false)
    }

    fn str_field(&mut self, field: Field, text: &mut Vec<u8>) -> PyResult<bool> {
        let py = self.payload.py();
        let name = match field {
            Field::CallId => intern!(py, "call_id"),
            Field::Id => intern!(py, "id"),
            Field::ApprovalRequestId => intern!(py, "approval_request_id"),
        };
        self.payload.copy_str(name, text)
    }
}

/// The dedupe key of `item` (then in `builder.key()`), or None when it never collapses.
pub fn item_key<'py>(
    reader: &mut Reader<'py>,
    item: Bound<'py, PyAny>,
    builder: &mut KeyBuilder,
) -> PyResult<Option<KeyInfo>> {
    match reader.dict_payload(item)? {
        Some(payload) => builder.build(&mut KeyFields { payload: &payload }),
        None => Ok(None),
    }
}

/// Each item's dedupe key as an id (None if unkeyed; equal keys, equal ids), and an id bound.
pub fn key_ids(items: &Items<'_>) -> PyResult<(Vec<Option<Keyed>>, usize)> {
    let mut reader = Reader::new(items.py());
    let keys = keyed(items, |item, builder| {
        item_key(&mut reader, item, builder).map(Some)
    })?;
    Ok(keys.expect("every item is keyed"))
}

/// [`key_ids`] of items that all pass [`ScreenedItem::of`] (else None), each field read once.
pub fn screened_key_ids(items: &Items<'_>) -> PyResult<Option<(Vec<Option<Keyed>>, usize)>> {
    keyed(items, |item, builder| match ScreenedItem::of(&item)? {
        Some(mut screened) => builder.build(&mut screened).map(Some),
        None => Ok(None),
    })
}

/// The key ids of `key` over the items, numbered; None as soon as `key` gives None.
pub fn keyed<'py>(
    items: &Items<'py>,
    mut key: impl FnMut(Bound<'py, PyAny>, &mut KeyBuilder) -> PyResult<Option<Option<KeyInfo>>>,
) -> PyResult<Option<(Vec<Option<Keyed>>, usize)>> {
    let py = items.py();
    let mut strings = Strings::reuse();
    let mut builder = KeyBuilder::default();
    let mut keys = Vec::with_capacity(items.len());
    for item in items.iter() {
        let Some(info) = key(item?, &mut builder)? else {
            strings.recycle();
            return Ok(None);
        };
        keys.push(info.map(|info| Keyed {
            id: strings.push(builder.key()),
            precursor: info.precursor,
        }));
    }
    let key_count = strings.len();
    maybe_detach(py, items.len(), || {
        let ids = strings.number();
        for key in keys.iter_mut().flatten() {
            key.id = ids[key.id as usize];
        }
    });
    strings.recycle();
    Ok(Some((keys, key_count)))
}

/// An item whose dedupe key is by construction the SDK's `_dedupe_key`: an exact dict with
/// exact-str-or-missing `type` and `id`, other id fields holding no str subclass (which could
/// answer the SDK's f-strings, set lookups and `==` its own way); the fields read are kept.
pub struct ScreenedItem<'py> {
    payload: DictPayload<'py>,
    kind: Option<Bound<'py, PyAny>>,
    id: Option<Bound<'py, PyAny>>,
    call_id: Option<Bound<'py, PyAny>>,
    approval_request_id: Option<Bound<'py, PyAny>>,
    /// Whether the item has a `role`, when a walk read it (else it is looked up).
    has_role: Option<bool>,
}

/// The screen of `type` and `id`: each an exact str, or missing.
pub fn exact_str_or_missing(value: Option<&Bound<'_, PyAny>>) -> bool {
    value.is_none_or(|value| value.is_exact_instance_of::<PyString>())
}

/// The screen of the other id fields: no str subclass.
pub fn no_str_subclass(value: Option<&Bound<'_, PyAny>>) -> bool {
    value.is_none_or(|value| value.is_exact_instance_of::<PyString>() || !is_str(value))
}

impl<'py> ScreenedItem<'py> {
    pub fn of(item: &Bound<'py, PyAny>) -> PyResult<Option<Self>> {
        let Some(payload) = DictPayload::of_exact(item.clone()) else {
            return Ok(None);
        };
        let py = item.py();
        let field = |name| {
            payload
                .lookup(name)
                .map(|value| value.map(FieldValue::into_owned))
        };
        let kind = field(intern!(py, "type"))?;
        if !exact_str_or_missing(kind.as_ref()) {
            return Ok(None);
        }
        // `lookup` reads a stored None as missing.
        let id = field(intern!(py, "id"))?;
        if !exact_str_or_missing(id.as_ref()) {
            return Ok(None);
        }
        let call_id = field(intern!(py, "call_id"))?;
        let approval_request_id = field(intern!(py, "approval_request_id"))?;
        if !no_str_subclass(call_id.as_ref()) || !no_str_subclass(approval_request_id.as_ref()) {
            return Ok(None);
        }
        Ok(Some(ScreenedItem {
            payload,
            kind,
            id,
            call_id,
            approval_request_id,
            has_role: None,
        }))
    }

    /// [`ScreenedItem::of`] the exact dict `item` that `walk` read (and its `role`).
    pub fn walked(item: &Bound<'py, PyAny>, walk: &Walk) -> Option<Self> {
        let py = item.py();
        let payload = DictPayload::of_exact(item.clone())?;
        let field = |name| walk.get(py, name).map(|value| value.to_owned());
        let (kind, id) = (field(Name::Type), field(Name::Id));
        let call_id = field(Name::CallId);
        let approval_request_id = field(Name::ApprovalRequestId);
        let passes = exact_str_or_missing(kind.as_ref())
            && exact_str_or_missing(id.as_ref())
            && no_str_subclass(call_id.as_ref())
            && no_str_subclass(approval_request_id.as_ref());
        passes.then(|| ScreenedItem {
            payload,
            kind,
            id,
            call_id,
            approval_request_id,
            has_role: Some(walk.get(py, Name::Role).is_some()),
        })
    }
}

impl ItemFields for ScreenedItem<'_> {
    type Error = PyErr;

    fn has_role(&mut self) -> PyResult<bool> {
        if let Some(has_role) = self.has_role {
            return Ok(has_role);
        }
        // The screen does not read `role`: looked up as for any item.
        KeyFields {
            payload: &self.payload,
        }
        .has_role()
    }

    fn kind(&mut self, text: &mut Vec<u8>) -> PyResult<bool> {
        text.clear();
        // The screen let through an exact str or nothing: `KeyFields::kind` without the rest.
        if let Some(kind) = &self.kind {
            text.extend_from_slice(str_bytes(kind)?.as_bytes());
        }
        if text.is_empty() {
            text.extend_from_slice(b"None");
            return Ok(false);
        }
        Ok(true)
    }

    fn str_field(&mut self, field: Field, text: &mut Vec<u8>) -> PyResult<bool> {
        text.clear();
        let value = match field {
            Field::CallId => &self.call_id,
            Field::Id => &self.id,
            Field::ApprovalRequestId => &self.approval_request_id,
        };
        match value {
            Some(value) if is_str(value) => {
                text.extend_from_slice(str_bytes(value)?.as_bytes());
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

pub fn dedupe_key<'py>(item: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyString>>> {
    let py = item.py();
    let mut builder = KeyBuilder::reuse();
    let key = match item_key(&mut Reader::new(py), item.clone(), &mut builder)? {
        Some(_) => to_py_string(py, builder.key()).map(Some),
        None => Ok(None),
    };
    builder.recycle();
    key
}

pub fn dedupe_keys<'py>(items: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    let py = items.py();
    let items = Items::of(items, "items")?;
    let mut reader = Reader::new(py);
    let mut builder = KeyBuilder::default();
    new_list(py, items.len(), |index| {
        Ok(
            match item_key(&mut reader, items.get(index)?, &mut builder)? {
                Some(_) => to_py_string(py, builder.key())?.into_any(),
                None => py.None().into_bound(py),
            },
        )
    })
}

pub fn deduplicate_input_items<'py>(items: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    deduplicated(&Items::of(items, "items")?, false)
}

pub fn deduplicate_input_items_preferring_latest<'py>(
    items: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    deduplicated(&Items::of(items, "items")?, true)
}

pub fn deduplicated<'py>(
    items: &Items<'py>,
    preferring_latest: bool,
) -> PyResult<Bound<'py, PyList>> {
    picked(items, key_ids(items)?, preferring_latest)
}

pub fn picked<'py>(
    items: &Items<'py>,
    (keys, key_count): (Vec<Option<Keyed>>, usize),
    preferring_latest: bool,
) -> PyResult<Bound<'py, PyList>> {
    items.pick(&kept_slots(items.py(), &keys, key_count, preferring_latest))
}

pub fn kept_slots(
    py: Python<'_>,
    keys: &[Option<Keyed>],
    key_count: usize,
    preferring_latest: bool,
) -> Vec<usize> {
    if preferring_latest {
        maybe_detach(py, keys.len(), || {
            dedupe::preferring_latest(keys, key_count)
        })
    } else {
        let ids: Vec<Option<u32>> = keys.iter().map(|key| key.map(|key| key.id)).collect();
        maybe_detach(py, keys.len(), || dedupe::first_wins(&ids, key_count))
    }
}
