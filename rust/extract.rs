//! Reading item facts out of Python objects: the payload an item stands for, dict field
//! access, dedupe-key fields and orphan-pruning facts.
//!
//! Field lookups in exact dicts return *borrowed* references (no reference counting, no
//! write to the value's memory). Such a reference is read at once (type check, UTF-8
//! bytes copied out) and never held across another Python call; whatever may run user
//! code (truthiness, `str()`, comparisons, subclass methods) works on an owned reference.

use std::ops::Deref;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::{ffi, intern};

use crate::keys::{self, Field, ItemFields, ItemType, KeyBuilder, KeyInfo};
use crate::orphans::{ItemFacts, Oracle, Question, StatusFact, TypeFact};
use crate::strings::Strings;
use crate::text::str_bytes;

/// Turns items into the payloads the engine reads (pydantic-style models become
/// `model_dump(exclude_unset=True)`, called once per item per pass).
pub struct Reader<'py> {
    py: Python<'py>,
    dump_kwargs: Option<Bound<'py, PyDict>>,
}

impl<'py> Reader<'py> {
    pub fn new(py: Python<'py>) -> Self {
        Reader {
            py,
            dump_kwargs: None,
        }
    }

    /// The item as the engine sees it (the pure twin's `_dumped`).
    pub fn payload(&mut self, item: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        // Builtin types never have `model_dump`: skip the attribute lookup for them.
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

    /// The payload of `item` when it is a dict (or dict subclass).
    pub fn dict_payload(&mut self, item: Bound<'py, PyAny>) -> PyResult<Option<DictPayload<'py>>> {
        Ok(DictPayload::of(self.payload(item)?))
    }
}

/// A field value: borrowed from an exact dict (valid until Python code runs), or owned
/// (from a dict subclass's `get`).
pub enum FieldValue<'a, 'py> {
    Borrowed(Borrowed<'a, 'py, PyAny>),
    Owned(Bound<'py, PyAny>),
}

impl<'py> Deref for FieldValue<'_, 'py> {
    type Target = Bound<'py, PyAny>;

    fn deref(&self) -> &Bound<'py, PyAny> {
        match self {
            Self::Borrowed(value) => value,
            Self::Owned(value) => value,
        }
    }
}

impl<'py> FieldValue<'_, 'py> {
    /// An owned reference, needed before any call that may run user code.
    pub fn into_owned(self) -> Bound<'py, PyAny> {
        match self {
            Self::Borrowed(value) => value.to_owned(),
            Self::Owned(value) => value,
        }
    }
}

/// Whether `value` is a `str` (exact type first: one pointer comparison).
#[inline]
fn is_str(value: &Bound<'_, PyAny>) -> bool {
    value.is_exact_instance_of::<PyString>() || value.is_instance_of::<PyString>()
}

/// A payload known to be a dict; exact dicts are read directly, subclasses through their
/// own `get` method (as the pure twin does).
pub struct DictPayload<'py> {
    dict: Bound<'py, PyAny>,
    exact: bool,
}

impl<'py> DictPayload<'py> {
    /// `value` as a dict payload, or None when it is not a dict.
    pub fn of(value: Bound<'py, PyAny>) -> Option<Self> {
        if value.is_exact_instance_of::<PyDict>() {
            Some(DictPayload {
                dict: value,
                exact: true,
            })
        } else if value.is_instance_of::<PyDict>() {
            Some(DictPayload {
                dict: value,
                exact: false,
            })
        } else {
            None
        }
    }

    /// `dict.get(key)`, with a stored None reported as missing.
    #[inline]
    pub fn lookup(&self, key: &Bound<'py, PyString>) -> PyResult<Option<FieldValue<'_, 'py>>> {
        let py = key.py();
        let value = if self.exact {
            // SAFETY: an exact dict; the result is borrowed from it (NULL: missing or error).
            let found = unsafe { ffi::PyDict_GetItemWithError(self.dict.as_ptr(), key.as_ptr()) };
            if found.is_null() {
                // Missing keys are the common case: check for an error before fetching one.
                if unsafe { ffi::PyErr_Occurred() }.is_null() {
                    return Ok(None);
                }
                return Err(PyErr::fetch(py));
            }
            FieldValue::Borrowed(unsafe { Borrowed::from_ptr(py, found) })
        } else {
            FieldValue::Owned(self.dict.call_method1(intern!(py, "get"), (key,))?)
        };
        Ok((!value.is_none()).then_some(value))
    }

    /// `dict.get(key)` as an owned reference.
    pub fn get(&self, key: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(self.lookup(key)?.map(FieldValue::into_owned))
    }

    /// Copy the text of `dict.get(key)` into `out` (cleared first) when it is a `str`.
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

/// The dedupe-key fields of a dict payload, read lazily.
pub struct KeyFields<'a, 'py> {
    pub payload: &'a DictPayload<'py>,
}

impl ItemFields for KeyFields<'_, '_> {
    type Error = PyErr;

    fn has_role(&mut self) -> PyResult<bool> {
        let py = self.payload.dict.py();
        Ok(self.payload.lookup(intern!(py, "role"))?.is_some())
    }

    fn kind(&mut self, text: &mut Vec<u8>) -> PyResult<bool> {
        let py = self.payload.dict.py();
        text.clear();
        let none = |text: &mut Vec<u8>| {
            text.extend_from_slice(b"None");
            Ok(false)
        };
        let Some(kind) = self.payload.lookup(intern!(py, "type"))? else {
            return none(text);
        };
        if kind.is_exact_instance_of::<PyString>() {
            text.extend_from_slice(str_bytes(&kind)?.as_bytes());
            return if text.is_empty() {
                none(text)
            } else {
                Ok(true)
            };
        }
        // `type or None`: Python truthiness decides, then `str()` names non-str kinds.
        let kind = kind.into_owned();
        if !kind.is_truthy()? {
            return none(text);
        }
        if kind.is_instance_of::<PyString>() {
            text.extend_from_slice(str_bytes(&kind)?.as_bytes());
            Ok(true)
        } else {
            let name = kind.str()?;
            text.extend_from_slice(str_bytes(name.as_any())?.as_bytes());
            Ok(false)
        }
    }

    fn str_field(&mut self, field: Field, text: &mut Vec<u8>) -> PyResult<bool> {
        let py = self.payload.dict.py();
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

/// A value whose comparisons with a `str` literal run no user code and are always False.
fn never_equals_str(value: &Bound<'_, PyAny>) -> bool {
    value.is_exact_instance_of::<PyInt>()
        || value.is_exact_instance_of::<PyFloat>()
        || value.is_exact_instance_of::<PyBool>()
        || value.is_exact_instance_of::<PyDict>()
        || value.is_exact_instance_of::<PyList>()
        || value.is_exact_instance_of::<PyTuple>()
}

/// Reads the facts orphan pruning needs from one dict payload; call ids and program ids
/// are pushed to `ids` (the facts hold their push indexes, see [`Strings::number`]). No
/// comparison here runs user code: those of opaque values are left to [`PayloadOracle`],
/// at the point where the rules make them.
pub fn orphan_facts(payload: &DictPayload<'_>, ids: &mut Strings) -> PyResult<ItemFacts> {
    let py = payload.dict.py();
    let kind = match payload.lookup(intern!(py, "type"))? {
        None => TypeFact::NeverEqual,
        Some(kind) if is_str(&kind) => TypeFact::Str(ItemType::of(str_bytes(&kind)?.as_bytes())),
        Some(kind) if never_equals_str(&kind) => TypeFact::NeverEqual,
        Some(_) => TypeFact::Opaque,
    };
    let call_id = match payload.lookup(intern!(py, "call_id"))? {
        Some(call_id) if is_str(&call_id) => Some(ids.push(str_bytes(&call_id)?.as_bytes())),
        _ => None,
    };
    let mut caller_type_opaque = false;
    let caller = payload
        .lookup(intern!(py, "caller"))?
        .map(FieldValue::into_owned)
        .and_then(DictPayload::of);
    let program_owner = match caller {
        Some(caller) => {
            let is_program = match caller.lookup(intern!(py, "type"))? {
                None => false,
                Some(kind) if is_str(&kind) => str_bytes(&kind)?.as_bytes() == b"program",
                Some(kind) if never_equals_str(&kind) => false,
                Some(_) => {
                    caller_type_opaque = true;
                    true
                }
            };
            if !is_program {
                None
            } else {
                match caller.lookup(intern!(py, "caller_id"))? {
                    Some(owner) if is_str(&owner) => Some(ids.push(str_bytes(&owner)?.as_bytes())),
                    _ => None,
                }
            }
        }
        None => None,
    };
    let may_be_shell_call = match kind {
        TypeFact::Str(kind) => kind == ItemType::Call(keys::CallFamily::Shell),
        TypeFact::NeverEqual => false,
        TypeFact::Opaque => true,
    };
    let status = if may_be_shell_call {
        match payload.lookup(intern!(py, "status"))? {
            None => StatusFact::Pending,
            Some(status) if is_str(&status) => {
                if str_bytes(&status)?.as_bytes() == b"in_progress" {
                    StatusFact::Pending
                } else {
                    StatusFact::NotPending
                }
            }
            Some(status) if never_equals_str(&status) => StatusFact::NotPending,
            Some(_) => StatusFact::Opaque,
        }
    } else {
        StatusFact::NotPending
    };
    Ok(ItemFacts {
        kind,
        call_id,
        program_owner,
        caller_type_opaque,
        status,
    })
}

/// Answers comparisons of opaque values by asking Python, re-reading the fields as the
/// pure twin does. Holds the payloads of the items that have opaque facts.
pub struct PayloadOracle<'py> {
    payloads: Vec<(usize, DictPayload<'py>)>,
}

impl<'py> PayloadOracle<'py> {
    pub fn new() -> Self {
        PayloadOracle {
            payloads: Vec::new(),
        }
    }

    /// Keep the payload of item `index` (indexes must come in increasing order).
    pub fn remember(&mut self, index: usize, payload: DictPayload<'py>) {
        self.payloads.push((index, payload));
    }

    pub fn is_empty(&self) -> bool {
        self.payloads.is_empty()
    }
}

impl Oracle for PayloadOracle<'_> {
    type Error = PyErr;

    fn ask(&mut self, index: usize, question: Question) -> PyResult<bool> {
        let position = self
            .payloads
            .binary_search_by_key(&index, |(index, _)| *index)
            .expect("questions are only asked about items with opaque facts");
        let payload = &self.payloads[position].1;
        let py = payload.dict.py();
        let (value, literal, negated) = match question {
            Question::TypeEqualsToolSearchOutput => (
                payload.get(intern!(py, "type"))?,
                "tool_search_output",
                false,
            ),
            Question::TypeEqualsToolSearchCall => {
                (payload.get(intern!(py, "type"))?, "tool_search_call", false)
            }
            Question::TypeNotUnequalProgram => (payload.get(intern!(py, "type"))?, "program", true),
            Question::TypeNotUnequalShellCall => {
                (payload.get(intern!(py, "type"))?, "shell_call", true)
            }
            Question::TypeEqualsReasoning => {
                (payload.get(intern!(py, "type"))?, "reasoning", false)
            }
            Question::StatusEqualsInProgress => {
                (payload.get(intern!(py, "status"))?, "in_progress", false)
            }
            Question::CallerTypeNotUnequalProgram => {
                let caller = payload
                    .get(intern!(py, "caller"))?
                    .and_then(DictPayload::of);
                let kind = match caller {
                    Some(caller) => caller.get(intern!(py, "type"))?,
                    None => None,
                };
                (kind, "program", true)
            }
        };
        let Some(value) = value else {
            return Ok(false);
        };
        let literal = PyString::new(py, literal);
        if value.is_instance_of::<PyString>() {
            return Ok(str_bytes(&value)?.as_bytes() == str_bytes(literal.as_any())?.as_bytes());
        }
        if negated {
            Ok(!value.ne(literal)?)
        } else {
            value.eq(literal)
        }
    }
}
