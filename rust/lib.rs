//! `histcore._core`: the Rust engine of histcore.
//!
//! This file is the only Python module declaration: the Python functions, with argument
//! handling in `args`. The rules live in plain-Rust modules (`canonical`, `keys`,
//! `dedupe`, `orphans`, `classify`, `intern`, `digits`); Python traversal in `extract`, `encode`,
//! `deepcopy` and `text`. `python/histcore/_pure.py` is the executable specification.

pub mod canonical;
pub mod classify;
pub mod dedupe;
pub mod digits;
pub mod intern;
pub mod keys;
pub mod orphans;

mod args;
mod deepcopy;
mod encode;
mod extract;
mod text;

// json.dumps(sort_keys=True) text (fingerprints and session-item keys).
pub mod pyjson_text;
mod sorted_json;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use crate::args::{index_mask, new_list, reject_extra, Items};
use crate::canonical::MAX_DEPTH;
use crate::classify::ContentKeys;
use crate::deepcopy::{Copier, PlainCopier};
use crate::encode::Encoder;
use crate::extract::{item_key, orphan_facts, PayloadOracle, Reader};
use crate::intern::Strings;
use crate::keys::KeyBuilder;
use crate::orphans::{NoOracle, Pruning};
use crate::text::{str_bytes, to_py_string};

/// Above this many items, the pure-Rust phases run with the GIL released.
const DETACH_THRESHOLD: usize = 50_000;

/// Run `work` without the GIL when the input is large enough for it to matter.
fn maybe_detach<T: Send>(py: Python<'_>, size: usize, work: impl FnOnce() -> T + Send) -> T {
    if size >= DETACH_THRESHOLD {
        py.detach(work)
    } else {
        work()
    }
}

// --- dedupe keys ---------------------------------------------------------------------

/// Identity key of an item, or None when it never collapses (see DESIGN.md).
#[pyfunction]
#[pyo3(signature = (item, *extra), text_signature = "(item)")]
fn dedupe_key<'py>(
    py: Python<'py>,
    item: &Bound<'py, PyAny>,
    extra: &Bound<'py, PyTuple>,
) -> PyResult<Option<Bound<'py, PyString>>> {
    reject_extra("dedupe_key", extra)?;
    let mut builder = KeyBuilder::reuse();
    let key = match item_key(&mut Reader::new(py), item.clone(), &mut builder)? {
        Some(_) => to_py_string(py, builder.key()).map(Some),
        None => Ok(None),
    };
    builder.recycle();
    key
}

/// ``dedupe_key`` of every item, in order.
#[pyfunction]
#[pyo3(signature = (items, *extra), text_signature = "(items)")]
fn dedupe_keys<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    extra: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyList>> {
    reject_extra("dedupe_keys", extra)?;
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

/// Key ids of every item (None for unkeyed ones; equal keys have equal ids) and a bound
/// on the ids.
fn key_ids<'py>(
    py: Python<'py>,
    items: &Items<'py>,
) -> PyResult<(Vec<Option<dedupe::Keyed>>, usize)> {
    let mut reader = Reader::new(py);
    let mut strings = Strings::reuse();
    let mut builder = KeyBuilder::default();
    let mut keys = Vec::with_capacity(items.len());
    for item in items.iter() {
        keys.push(
            item_key(&mut reader, item?, &mut builder)?.map(|info| dedupe::Keyed {
                id: strings.push(builder.key()),
                precursor: info.precursor,
            }),
        );
    }
    let key_count = strings.len();
    maybe_detach(py, items.len(), || {
        let ids = strings.number();
        for key in keys.iter_mut().flatten() {
            key.id = ids[key.id as usize];
        }
    });
    strings.recycle();
    Ok((keys, key_count))
}

/// Keep the first occurrence (value and position) of every key.
#[pyfunction]
#[pyo3(signature = (items, *extra), text_signature = "(items)")]
fn deduplicate_input_items<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    extra: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyList>> {
    reject_extra("deduplicate_input_items", extra)?;
    let items = Items::of(items, "items")?;
    let (keys, key_count) = key_ids(py, &items)?;
    let ids: Vec<Option<u32>> = keys.iter().map(|key| key.map(|key| key.id)).collect();
    let kept = maybe_detach(py, items.len(), || dedupe::first_wins(&ids, key_count));
    items.pick(&kept)
}

/// One item per key holding its latest value, anchored per DESIGN.md.
///
/// Precursors (calls, approval requests, reasoning) stay at their earliest position,
/// every other keyed item at its latest one; unkeyed items stay where they are.
#[pyfunction]
#[pyo3(signature = (items, *extra), text_signature = "(items)")]
fn deduplicate_input_items_preferring_latest<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    extra: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyList>> {
    reject_extra("deduplicate_input_items_preferring_latest", extra)?;
    let items = Items::of(items, "items")?;
    let (keys, key_count) = key_ids(py, &items)?;
    let slots = maybe_detach(py, items.len(), || {
        dedupe::preferring_latest(&keys, key_count)
    });
    items.pick(&slots)
}

// --- canonical content form ----------------------------------------------------------

fn content_key_of<'py>(
    reader: &mut Reader<'py>,
    encoder: &mut Encoder<'py>,
    item: &Bound<'py, PyAny>,
) -> PyResult<[u8; 16]> {
    let payload = reader.payload(item.clone())?;
    Ok(canonical::content_key(encoder.encode(&payload)?))
}

/// The canonical JSON encoding of an item's content (see DESIGN.md).
#[pyfunction]
#[pyo3(signature = (item, *extra), text_signature = "(item)")]
fn canonical_json<'py>(
    py: Python<'py>,
    item: &Bound<'py, PyAny>,
    extra: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyBytes>> {
    reject_extra("canonical_json", extra)?;
    let payload = Reader::new(py).payload(item.clone())?;
    let mut encoder = Encoder::new(py);
    Ok(PyBytes::new(py, encoder.encode(&payload)?))
}

/// 16-byte XXH3-128 digest of ``canonical_json(item)`` (big-endian).
#[pyfunction]
#[pyo3(signature = (item, *extra), text_signature = "(item)")]
fn content_key<'py>(
    py: Python<'py>,
    item: &Bound<'py, PyAny>,
    extra: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyBytes>> {
    reject_extra("content_key", extra)?;
    let key = content_key_of(&mut Reader::new(py), &mut Encoder::new(py), item)?;
    Ok(PyBytes::new(py, &key))
}

/// ``content_key`` of every item, in order.
#[pyfunction]
#[pyo3(signature = (items, *extra), text_signature = "(items)")]
fn content_keys<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    extra: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyList>> {
    reject_extra("content_keys", extra)?;
    let items = Items::of(items, "items")?;
    let mut reader = Reader::new(py);
    let mut encoder = Encoder::new(py);
    new_list(py, items.len(), |index| {
        let key = content_key_of(&mut reader, &mut encoder, &items.get(index)?)?;
        Ok(PyBytes::new(py, &key).into_any())
    })
}

// --- deep copy -----------------------------------------------------------------------

/// An independent deep copy of JSON-like items.
///
/// Exact dict/list/tuple are rebuilt, str/int/float/bool/None shared (immutable), any
/// other value is handed to ``copy.deepcopy``. Shared sub-objects are copied once per
/// reference (no memo), and nesting deeper than MAX_DEPTH raises ValueError.
#[pyfunction]
#[pyo3(signature = (items, *extra), text_signature = "(items)")]
fn deep_copy_items<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    extra: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyList>> {
    reject_extra("deep_copy_items", extra)?;
    let items = Items::of(items, "items")?;
    let mut copier = Copier::new(py);
    new_list(py, items.len(), |index| copier.copy(&items.get(index)?, 0))
}

/// A copy of items that are plain JSON trees, or None.
///
/// Copies items made only of exact dict, list, str, int, float, bool and None (dict
/// keys of those scalar types too), nested at most MAX_DEPTH deep: the copy
/// ``copy.deepcopy`` would give. Returns None instead when anything else appears, when
/// nesting goes deeper (cycles included), when a container is reached twice unless
/// ``allow_shared`` (shared containers are then copied once per reference), or when the
/// copy would hold more than 1024 containers per item plus 2**20 (sharing can make a
/// copy far larger than its input). Runs no Python code.
#[pyfunction]
#[pyo3(signature = (items, *, allow_shared=false))]
fn plain_json_copy<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    allow_shared: bool,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let items = Items::of(items, "items")?;
    let mut copier = PlainCopier::new(items.len(), allow_shared);
    let mut copies = Vec::with_capacity(items.len());
    for index in 0..items.len() {
        match copier.copy(&items.get(index)?, 0)? {
            Some(copy) => copies.push(copy),
            None => return Ok(None),
        }
    }
    PyList::new(py, copies).map(Some)
}

// --- orphan-call pruning -------------------------------------------------------------

/// Drop tool calls that have no output, with the reasoning run directly before them.
///
/// A call (one of the eight call types) is kept when an output of its output type
/// with the same ``call_id`` is anywhere in the list. Also kept: an anonymous
/// ``tool_search_call`` answered by a later anonymous output, a ``program`` that still
/// owns retained items, a pending hosted ``shell_call`` issued by a program. Items
/// issued by an orphan program are dropped with it. With ``pruning_indexes`` only
/// those positions may be dropped (reasoning included). With
/// ``output_pruning_indexes``, outputs at those positions whose call is gone are
/// dropped too. Linear in the number of items.
#[pyfunction]
#[pyo3(signature = (items, pruning_indexes=None, *, output_pruning_indexes=None))]
fn drop_orphan_function_calls<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    pruning_indexes: Option<&Bound<'py, PyAny>>,
    output_pruning_indexes: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let items = Items::of(items, "items")?;
    let prunable = index_mask(pruning_indexes, "pruning_indexes", items.len())?;
    let output_prunable = index_mask(
        output_pruning_indexes,
        "output_pruning_indexes",
        items.len(),
    )?;
    let mut reader = Reader::new(py);
    let mut ids = Strings::reuse();
    let mut oracle = PayloadOracle::new();
    // Reading facts runs no user code besides `model_dump`, so every model is dumped
    // before any field comparison (all made in `orphans::kept`), as in the pure twin.
    let mut facts = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        facts.push(match reader.dict_payload(item?)? {
            Some(payload) => {
                let item_facts = orphan_facts(&payload, &mut ids)?;
                if item_facts.is_opaque() {
                    oracle.remember(index, payload);
                }
                Some(item_facts)
            }
            None => None,
        });
    }
    let pruning = Pruning {
        prunable: prunable.as_deref(),
        output_prunable: output_prunable.as_deref(),
    };
    let id_count = ids.len();
    let kept = if oracle.is_empty() {
        maybe_detach(py, items.len(), || {
            number_strings(&mut facts, &mut ids);
            orphans::kept(&facts, id_count, &pruning, &mut NoOracle)
        })
        .unwrap_or_else(|never| match never {})
    } else {
        number_strings(&mut facts, &mut ids);
        orphans::kept(&facts, id_count, &pruning, &mut oracle)?
    };
    ids.recycle();
    items.pick(&kept)
}

/// Replace the push indexes in `facts` by string ids (equal strings, equal ids).
fn number_strings(facts: &mut [Option<orphans::ItemFacts>], strings: &mut Strings) {
    let ids = strings.number();
    for facts in facts.iter_mut().flatten() {
        facts.call_id = facts.call_id.map(|index| ids[index as usize]);
        facts.program_owner = facts.program_owner.map(|index| ids[index as usize]);
    }
}

// --- session-callback classification -------------------------------------------------

/// Content keys of the three lists, computed on demand.
struct ListContentKeys<'a, 'py> {
    reader: Reader<'py>,
    encoder: Encoder<'py>,
    history: &'a Items<'py>,
    new_items: &'a Items<'py>,
    combined: &'a Items<'py>,
}

impl<'py> ListContentKeys<'_, 'py> {
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

/// Object identities (addresses) of the items; no user code runs while they are read.
fn addresses(items: &Items<'_>) -> PyResult<Vec<usize>> {
    items
        .iter()
        .map(|item| item.map(|item| item.as_ptr() as usize))
        .collect()
}

/// Classify what a session input callback returned (DESIGN.md, rules 1-6).
///
/// ``history`` and ``new_items`` are the copies the callback received, ``combined``
/// what it returned. Returns ``(history_positions, persisted_positions)``: ascending
/// positions of ``combined`` that are history, and those to persist as this turn's
/// items. Positions in neither are repeats (model input only).
#[pyfunction]
fn classify_callback_output<'py>(
    py: Python<'py>,
    history: &Bound<'py, PyAny>,
    new_items: &Bound<'py, PyAny>,
    combined: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let history = Items::of(history, "history")?;
    let new_items = Items::of(new_items, "new_items")?;
    let combined = Items::of(combined, "combined")?;
    let mut keys = ListContentKeys {
        reader: Reader::new(py),
        encoder: Encoder::new(py),
        history: &history,
        new_items: &new_items,
        combined: &combined,
    };
    let result = classify::classify(
        &addresses(&history)?,
        &addresses(&new_items)?,
        &addresses(&combined)?,
        &mut keys,
    )?;
    PyTuple::new(
        py,
        [
            PyList::new(py, result.history_positions)?,
            PyList::new(py, result.persisted_positions)?,
        ],
    )
}

// --- exact JSON decoding -------------------------------------------------------------

/// Positions of the texts that hold 19 or more consecutive ASCII digits.
///
/// A JSON integer there may not fit in 64 bits, which orjson would read as a float
/// (dropping digits); such texts are decoded by the standard library instead. A long
/// run inside a string is reported too (it only costs a slower decode). ``texts``
/// holds str or bytes; anything else raises TypeError naming its position.
#[pyfunction]
#[pyo3(signature = (texts, *extra), text_signature = "(texts)")]
fn long_integer_candidates<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    extra: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyList>> {
    reject_extra("long_integer_candidates", extra)?;
    let texts = Items::of(texts, "texts")?;
    let mut positions = Vec::new();
    for index in 0..texts.len() {
        let text = texts.get(index)?;
        let found = if let Ok(bytes) = text.cast::<PyBytes>() {
            digits::has_long_run(bytes.as_bytes())
        } else if text.is_instance_of::<PyString>() {
            digits::has_long_run(str_bytes(&text)?.as_bytes())
        } else {
            return Err(PyTypeError::new_err(format!(
                "texts[{index}] must be str or bytes, not {}",
                text.get_type().name()?
            )));
        };
        if found {
            positions.push(index);
        }
    }
    PyList::new(py, positions)
}

// --- json.dumps(value, sort_keys=True, default=str) text ------------------------------

/// ``json.dumps(value, sort_keys=True, default=str)`` of a value made only of exact
/// dicts with str keys, lists, tuples, str, int, float, bool and None, nested at most
/// MAX_DEPTH levels, leaving out the top-level dict keys named in ``skip`` (a tuple of
/// str); None for any other value (json.dumps then decides: its text or its error).
#[pyfunction]
#[pyo3(signature = (value, skip = None))]
fn sorted_json_text<'py>(
    py: Python<'py>,
    value: &Bound<'py, PyAny>,
    skip: Option<&Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyString>>> {
    let mut left_out = Vec::new();
    if let Some(skip) = skip {
        let Ok(names) = skip.cast::<PyTuple>() else {
            return Err(PyTypeError::new_err(format!(
                "skip must be a tuple of str, not {}",
                skip.get_type().name()?
            )));
        };
        for name in names.iter() {
            if !name.is_exact_instance_of::<PyString>() {
                return Err(PyTypeError::new_err(format!(
                    "skip must be a tuple of str, not a tuple holding {}",
                    name.get_type().name()?
                )));
            }
            left_out.push(text::Text::of_str(name)?);
        }
    }
    let mut walker = sorted_json::SortedJson::reuse(py);
    let text = match walker.text(value, &left_out) {
        Some(bytes) => to_py_string(py, bytes).map(Some),
        None => Ok(None),
    };
    walker.recycle();
    text
}

// --- module --------------------------------------------------------------------------

#[pymodule]
fn _core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("MAX_DEPTH", MAX_DEPTH)?;
    module.add(
        "build_profile",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
    )?;
    module.add_function(wrap_pyfunction!(dedupe_key, module)?)?;
    module.add_function(wrap_pyfunction!(dedupe_keys, module)?)?;
    module.add_function(wrap_pyfunction!(deduplicate_input_items, module)?)?;
    module.add_function(wrap_pyfunction!(
        deduplicate_input_items_preferring_latest,
        module
    )?)?;
    module.add_function(wrap_pyfunction!(canonical_json, module)?)?;
    module.add_function(wrap_pyfunction!(content_key, module)?)?;
    module.add_function(wrap_pyfunction!(content_keys, module)?)?;
    module.add_function(wrap_pyfunction!(deep_copy_items, module)?)?;
    module.add_function(wrap_pyfunction!(plain_json_copy, module)?)?;
    module.add_function(wrap_pyfunction!(drop_orphan_function_calls, module)?)?;
    module.add_function(wrap_pyfunction!(classify_callback_output, module)?)?;
    module.add_function(wrap_pyfunction!(long_integer_candidates, module)?)?;
    // json.dumps(sort_keys=True) text
    module.add_function(wrap_pyfunction!(sorted_json_text, module)?)?;
    Ok(())
}
