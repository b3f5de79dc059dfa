//! Orphan-call pruning of Python items: each item is read once into the facts that
//! `core::orphans` decides on, and comparisons with opaque values are answered by Python.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use super::args::Items;
use super::extract::{is_str, DictPayload, FieldValue, Reader};
use super::gil::maybe_detach;
use super::text::str_bytes;
use crate::core::keys::{CallFamily, ItemType};
use crate::core::orphans::{
    self, ItemFacts, NoOracle, Oracle, Pruning, Question, StatusFact, TypeFact,
};
use crate::core::strings::Strings;

/// Indexes of the items that orphan pruning keeps, in order (the rules of
/// `drop_orphan_function_calls`).
pub fn kept(items: &Items<'_>, pruning: &Pruning<'_>) -> PyResult<Vec<usize>> {
    let py = items.py();
    let mut ids = Strings::reuse();
    let mut oracle = PayloadOracle::new();
    let mut facts = read_facts(items, &mut ids, &mut oracle)?;
    let id_count = ids.len();
    let kept = if oracle.is_empty() {
        // No opaque value: the rules run no Python code, so they may run without the GIL.
        maybe_detach(py, items.len(), || {
            orphans::number_strings(&mut facts, &mut ids);
            orphans::kept(&facts, id_count, pruning, &mut NoOracle)
        })
        .unwrap_or_else(|never| match never {})
    } else {
        orphans::number_strings(&mut facts, &mut ids);
        orphans::kept(&facts, id_count, pruning, &mut oracle)?
    };
    ids.recycle();
    Ok(kept)
}

/// The facts of every item (None for items that are not dicts), with their strings pushed
/// to `ids`; the payloads of items with opaque facts are handed to `oracle`.
///
/// Reading facts runs no user code besides `model_dump`, so every model is dumped before
/// any field comparison (all made in `core::orphans::kept`), as in the pure twin.
fn read_facts<'py>(
    items: &Items<'py>,
    ids: &mut Strings,
    oracle: &mut PayloadOracle<'py>,
) -> PyResult<Vec<Option<ItemFacts>>> {
    let mut reader = Reader::new(items.py());
    let mut facts = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        facts.push(match reader.dict_payload(item?)? {
            Some(payload) => {
                let item_facts = orphan_facts(&payload, ids)?;
                if item_facts.is_opaque() {
                    oracle.remember(index, payload);
                }
                Some(item_facts)
            }
            None => None,
        });
    }
    Ok(facts)
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
fn orphan_facts(payload: &DictPayload<'_>, ids: &mut Strings) -> PyResult<ItemFacts> {
    let py = payload.py();
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
        TypeFact::Str(kind) => kind == ItemType::Call(CallFamily::Shell),
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
struct PayloadOracle<'py> {
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
        let py = payload.py();
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
