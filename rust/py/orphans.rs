//! Orphan-call pruning of Python items: each item is read once into the facts that
//! `core::orphans` decides on. Only str values name a type or status, so no fact is opaque.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PySet, PyString};

use super::args::{index_mask, Items};
use super::extract::{is_str, DictPayload, FieldValue, Reader};
use super::field_scan::{Name, Walk};
use super::gil::maybe_detach;
use super::text::{str_bytes, StrBytes};
use crate::core::keys::{CallFamily, ItemType};
use crate::core::orphans::{self, ItemFacts, NoOracle, Pruning, StatusFact, TypeFact};
use crate::core::strings::Strings;
use crate::py::watch::NameWatch;

/// The masks of `pruning_indexes` and `output_pruning_indexes`, read in that order.
pub struct Masks {
    prunable: Option<Vec<bool>>,
    output_prunable: Option<Vec<bool>>,
}

impl Masks {
    pub fn of(
        pruning_indexes: Option<&Bound<'_, PyAny>>,
        output_pruning_indexes: Option<&Bound<'_, PyAny>>,
        length: usize,
    ) -> PyResult<Self> {
        let prunable = index_mask(pruning_indexes, "pruning_indexes", length)?;
        let output_prunable = index_mask(output_pruning_indexes, "output_pruning_indexes", length)?;
        Ok(Masks {
            prunable,
            output_prunable,
        })
    }

    pub fn pruning(&self) -> Pruning<'_> {
        Pruning {
            prunable: self.prunable.as_deref(),
            output_prunable: self.output_prunable.as_deref(),
        }
    }
}

pub fn drop_orphan_function_calls<'py>(
    items: &Bound<'py, PyAny>,
    pruning_indexes: Option<&Bound<'py, PyAny>>,
    output_pruning_indexes: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let items = Items::of(items, "items")?;
    let masks = Masks::of(pruning_indexes, output_pruning_indexes, items.len())?;
    items.pick(&kept(&items, &masks.pruning())?)
}

pub fn screened_drop_orphan_function_calls<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    pruning_indexes: Option<&Bound<'py, PyAny>>,
    output_pruning_indexes: Option<&Bound<'py, PyAny>>,
    watch: Option<PyRef<'py, NameWatch>>,
) -> PyResult<Bound<'py, PyAny>> {
    let declined = py.NotImplemented().into_bound(py);
    if let Some(watch) = watch {
        if !watch.intact(py)? {
            return Ok(declined);
        }
    }
    let plain_set = |value: Option<&Bound<'py, PyAny>>| {
        value.is_none_or(|value| value.is_none() || value.is_exact_instance_of::<PySet>())
    };
    if !items.is_exact_instance_of::<PyList>()
        || !plain_set(pruning_indexes)
        || !plain_set(output_pruning_indexes)
    {
        return Ok(declined);
    }
    let items = Items::of(items, "items")?;
    // Positions that are not ints: the SDK's membership tests decide.
    let Ok(masks) = Masks::of(pruning_indexes, output_pruning_indexes, items.len()) else {
        return Ok(declined);
    };
    match screened_kept(&items, &masks.pruning())? {
        Some(kept) => Ok(items.pick(&kept)?.into_any()),
        None => Ok(declined),
    }
}

pub fn kept(items: &Items<'_>, pruning: &Pruning<'_>) -> PyResult<Vec<usize>> {
    let mut ids = Strings::reuse();
    let facts = read_facts(items, &mut ids)?;
    Ok(decide(items.py(), facts, ids, pruning))
}

/// The positions kept, given every item's facts and the strings they were read into.
pub fn decide(
    py: Python<'_>,
    mut facts: Vec<Option<ItemFacts>>,
    mut ids: Strings,
    pruning: &Pruning<'_>,
) -> Vec<usize> {
    let id_count = ids.len();
    // The rules run no Python code, so they may run without the GIL.
    let kept = maybe_detach(py, facts.len(), || {
        orphans::number_strings(&mut facts, &mut ids);
        orphans::kept(&facts, id_count, pruning, &mut NoOracle)
    })
    .unwrap_or_else(|never| match never {});
    ids.recycle();
    kept
}

/// The facts of every item (None for non-dicts), each item read completely before the next.
fn read_facts(items: &Items<'_>, ids: &mut Strings) -> PyResult<Vec<Option<ItemFacts>>> {
    let mut reader = Reader::new(items.py());
    let mut facts = Vec::with_capacity(items.len());
    for item in items.iter() {
        facts.push(match reader.dict_payload(item?)? {
            Some(payload) => Some(orphan_facts(&payload, ids)?),
            None => None,
        });
    }
    Ok(facts)
}

/// The facts of the exact dict that `walk` read, as [`orphan_facts`] reads them; None when
/// it has a `caller` (reading a caller dict may run Python code).
pub fn walked_facts(py: Python<'_>, walk: &Walk, ids: &mut Strings) -> PyResult<Option<ItemFacts>> {
    if walk.get(py, Name::Caller).is_some() {
        return Ok(None);
    }
    let kind = match walk.get(py, Name::Type) {
        Some(kind) if is_str(&kind) => TypeFact::Str(ItemType::of(str_bytes(&kind)?.as_bytes())),
        _ => TypeFact::NeverEqual,
    };
    let call_id = match walk.get(py, Name::CallId) {
        Some(call_id) if is_str(&call_id) => Some(ids.push(str_bytes(&call_id)?.as_bytes())),
        _ => None,
    };
    let status = if kind == TypeFact::Str(ItemType::Call(CallFamily::Shell)) {
        match walk.get(py, Name::Status) {
            None => StatusFact::Pending,
            Some(status) if is_str(&status) && str_bytes(&status)?.as_bytes() == b"in_progress" => {
                StatusFact::Pending
            }
            Some(_) => StatusFact::NotPending,
        }
    } else {
        StatusFact::NotPending
    };
    Ok(Some(ItemFacts {
        kind,
        call_id,
        program_owner: None,
        caller_type_opaque: false,
        status,
    }))
}

/// Reads one dict payload's facts in the twin's order; a non-str equals no type or status.
fn orphan_facts(payload: &DictPayload<'_>, ids: &mut Strings) -> PyResult<ItemFacts> {
    let py = payload.py();
    let kind = match payload.lookup(intern!(py, "type"))? {
        Some(kind) if is_str(&kind) => TypeFact::Str(ItemType::of(str_bytes(&kind)?.as_bytes())),
        _ => TypeFact::NeverEqual,
    };
    let call_id = match payload.lookup(intern!(py, "call_id"))? {
        Some(call_id) if is_str(&call_id) => Some(ids.push(str_bytes(&call_id)?.as_bytes())),
        _ => None,
    };
    let caller = payload
        .lookup(intern!(py, "caller"))?
        .map(FieldValue::into_owned)
        .and_then(DictPayload::of);
    let program_owner = match caller {
        Some(caller) => {
            let is_program = match caller.lookup(intern!(py, "type"))? {
                Some(kind) if is_str(&kind) => str_bytes(&kind)?.as_bytes() == b"program",
                _ => false,
            };
            if is_program {
                match caller.lookup(intern!(py, "caller_id"))? {
                    Some(owner) if is_str(&owner) => Some(ids.push(str_bytes(&owner)?.as_bytes())),
                    _ => None,
                }
            } else {
                None
            }
        }
        None => None,
    };
    let status = if kind == TypeFact::Str(ItemType::Call(CallFamily::Shell)) {
        match payload.lookup(intern!(py, "status"))? {
            None => StatusFact::Pending,
            Some(status) if is_str(&status) && str_bytes(&status)?.as_bytes() == b"in_progress" => {
                StatusFact::Pending
            }
            Some(_) => StatusFact::NotPending,
        }
    } else {
        StatusFact::NotPending
    };
    Ok(ItemFacts {
        kind,
        call_id,
        program_owner,
        caller_type_opaque: false,
        status,
    })
}

/// `value` is missing/None or an exact str: only then does it read the same in the SDK.
fn plain_text(value: Option<&FieldValue<'_, '_>>) -> bool {
    value.is_none_or(|value| value.is_exact_instance_of::<PyString>())
}

fn plain_bytes<'a, 'py>(
    value: Option<&'a FieldValue<'_, 'py>>,
) -> PyResult<Option<StrBytes<'a, 'py>>> {
    value.map(|value| str_bytes(value)).transpose()
}

/// The indexes kept when orphan pruning is the SDK's by construction (docs/design.md), else None.
pub fn screened_kept(items: &Items<'_>, pruning: &Pruning<'_>) -> PyResult<Option<Vec<usize>>> {
    let mut ids = Strings::reuse();
    let mut facts = Vec::with_capacity(items.len());
    for (position, item) in items.iter().enumerate() {
        let item = item?;
        let read = match DictPayload::of_exact(item) {
            Some(payload) => screened_facts(&payload, position, pruning.prunable, &mut ids)?,
            None => None,
        };
        let Some(read) = read else {
            ids.recycle();
            return Ok(None);
        };
        facts.push(Some(read));
    }
    Ok(Some(decide(items.py(), facts, ids, pruning)))
}

/// One exact dict's facts, or None when a field fails the screen of [`screened_kept`].
fn screened_facts(
    payload: &DictPayload<'_>,
    position: usize,
    prunable: Option<&[bool]>,
    ids: &mut Strings,
) -> PyResult<Option<ItemFacts>> {
    let py = payload.py();
    let kind = payload.lookup(intern!(py, "type"))?;
    let call_id = payload.lookup(intern!(py, "call_id"))?;
    if !plain_text(kind.as_ref()) || !plain_text(call_id.as_ref()) {
        return Ok(None);
    }
    let kind = match plain_bytes(kind.as_ref())? {
        Some(kind) => TypeFact::Str(ItemType::of(kind.as_bytes())),
        None => TypeFact::NeverEqual,
    };
    let mut status = StatusFact::NotPending;
    if kind == TypeFact::Str(ItemType::Call(CallFamily::Shell)) {
        let value = payload.lookup(intern!(py, "status"))?;
        if !plain_text(value.as_ref()) {
            return Ok(None);
        }
        let pending =
            plain_bytes(value.as_ref())?.is_none_or(|text| text.as_bytes() == b"in_progress");
        status = if pending {
            StatusFact::Pending
        } else {
            StatusFact::NotPending
        };
    }
    if kind == TypeFact::Str(ItemType::Reasoning) && prunable.is_some_and(|mask| !mask[position]) {
        return Ok(None);
    }
    let call_id = plain_bytes(call_id.as_ref())?.map(|text| ids.push(text.as_bytes()));
    let mut program_owner = None;
    if let Some(caller) = payload.lookup(intern!(py, "caller"))? {
        if caller.is_instance_of::<PyDict>() {
            let Some(caller) = DictPayload::of_exact(caller.into_owned()) else {
                return Ok(None);
            };
            let caller_type = caller.lookup(intern!(py, "type"))?;
            let owner = caller.lookup(intern!(py, "caller_id"))?;
            if !plain_text(caller_type.as_ref()) || !plain_text(owner.as_ref()) {
                return Ok(None);
            }
            if plain_bytes(caller_type.as_ref())?.is_some_and(|text| text.as_bytes() == b"program")
            {
                program_owner = plain_bytes(owner.as_ref())?.map(|text| ids.push(text.as_bytes()));
            }
        }
    }
    Ok(Some(ItemFacts {
        kind,
        call_id,
        program_owner,
        caller_type_opaque: false,
        status,
    }))
}
