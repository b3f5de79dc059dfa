//! `histcore._core`: the Rust engine of histcore.
//!
//! The crate is laid out in three layers:
//!
//! - `core/`: the rules in plain Rust, without pyo3: canonical encoding (`canonical`),
//!   dedupe keys and item types (`keys`), dedupe (`dedupe`), orphan-call pruning
//!   (`orphans`), callback classification (`classify`), string numbering and hashing
//!   (`strings`), and the long-integer scan (`digits`). Python objects reach it only
//!   through small traits (`ItemFields`, `ContentKeys`, `Oracle`). `cargo test` checks it,
//!   with the golden vectors in `rust/tests/vectors.rs`.
//! - `py/`: what reads and builds Python objects: argument lists (`args`), item payloads
//!   and dedupe keys (`extract`), orphan-pruning facts (`orphans`), the canonical walker
//!   (`encode`) and content keys (`content`), copies (`deepcopy`), `str` text (`text`),
//!   and when a call releases the GIL (`gil`).
//! - this file: the `#[pymodule]` declaration; each function only parses its arguments
//!   and hands them to `py/` and `core/`.
//!
//! `py/` and the module need the `python` Cargo feature (on by default, and named in
//! `[tool.maturin]`); `cargo test --no-default-features` builds and tests `core/` with
//! no Python at all.
//!
//! The pure-Python twin of these functions is the executable specification: results,
//! errors and docstrings are the same. docs/design.md states the rules.

pub mod core;
#[cfg(feature = "python")]
mod py;

// The Python module `histcore._core` (no docstring: a `///` comment here would become one).
#[cfg(feature = "python")]
#[pyo3::pymodule]
mod _core {
    use pyo3::exceptions::PyTypeError;
    use pyo3::prelude::*;
    use pyo3::types::{PyBytes, PyDict, PyList, PySet, PyString, PyTuple};

    use crate::core::canonical;
    use crate::core::classify;
    use crate::core::dedupe;
    use crate::core::digits;
    use crate::core::keys::KeyBuilder;
    use crate::core::orphans::Pruning;
    use crate::py::args::{index_mask, new_list, reject_extra, str_tuple, Items};
    use crate::py::content::{content_key_of, ListContentKeys};
    use crate::py::deepcopy::{holds_any, Copier, PlainCopier};
    use crate::py::encode::Encoder;
    use crate::py::extract::{all_screened, item_key, key_ids, Reader};
    use crate::py::gil::maybe_detach;
    use crate::py::input_rules::{self, ListArg};
    use crate::py::orphans;
    use crate::py::rows::{decode_rows as decode_rows_of, Decoders};
    use crate::py::screened_key::screened_key;
    use crate::py::text::{str_bytes, to_py_string};

    #[pymodule_export]
    use crate::py::watch::NameWatch;

    #[pymodule_export]
    use crate::py::dict_text::DictText;

    #[pymodule_export]
    use crate::py::screened_key::ScreenedKey;

    #[pymodule_export]
    const MAX_DEPTH: usize = canonical::MAX_DEPTH;

    #[pymodule_init]
    fn init(module: &Bound<'_, PyModule>) -> PyResult<()> {
        let profile = if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        };
        module.add("build_profile", profile)
    }

    // --- dedupe keys -----------------------------------------------------------------

    /// Identity key of an item, or None when it never collapses (see docs/design.md).
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

    /// ``dedupe_key(item)`` when that is the OpenAI Agents SDK's ``_dedupe_key(item)`` by
    /// construction, else NotImplemented: for anything but an exact dict whose ``type`` is
    /// a str or missing, whose ``id`` is a str or missing/None and whose other id fields
    /// hold no str subclass, and whenever ``watch`` (a NameWatch) is given and not intact.
    #[pyfunction]
    #[pyo3(signature = (item, watch = None))]
    fn screened_dedupe_key<'py>(
        py: Python<'py>,
        item: &Bound<'py, PyAny>,
        watch: Option<&Bound<'py, NameWatch>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let watch = watch.map(Bound::borrow);
        Ok(screened_key(py, item, watch.as_deref())?
            .unwrap_or_else(|| py.NotImplemented().into_bound(py)))
    }

    /// The dedupe of an exact list whose every item passes ``screened_dedupe_key``'s
    /// screen (first wins, or ``preferring_latest``), else NotImplemented (also whenever
    /// ``watch`` is given and not intact).
    #[pyfunction]
    #[pyo3(signature = (items, preferring_latest = false, watch = None))]
    fn screened_deduplicate<'py>(
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
        preferring_latest: bool,
        watch: Option<PyRef<'py, NameWatch>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let declined = match watch {
            Some(watch) => !watch.intact(py)?,
            None => false,
        };
        if declined || !items.is_exact_instance_of::<PyList>() {
            return Ok(py.NotImplemented().into_bound(py));
        }
        let items = Items::of(items, "items")?;
        if !all_screened(&items)? {
            return Ok(py.NotImplemented().into_bound(py));
        }
        let (keys, key_count) = key_ids(&items)?;
        let picked = if preferring_latest {
            let slots = maybe_detach(py, items.len(), || {
                dedupe::preferring_latest(&keys, key_count)
            });
            items.pick(&slots)?
        } else {
            let ids: Vec<Option<u32>> = keys.iter().map(|key| key.map(|key| key.id)).collect();
            let kept = maybe_detach(py, items.len(), || dedupe::first_wins(&ids, key_count));
            items.pick(&kept)?
        };
        Ok(picked.into_any())
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
        let (keys, key_count) = key_ids(&items)?;
        let ids: Vec<Option<u32>> = keys.iter().map(|key| key.map(|key| key.id)).collect();
        let kept = maybe_detach(py, items.len(), || dedupe::first_wins(&ids, key_count));
        items.pick(&kept)
    }

    /// One item per key holding its latest value, anchored per docs/design.md.
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
        let (keys, key_count) = key_ids(&items)?;
        let slots = maybe_detach(py, items.len(), || {
            dedupe::preferring_latest(&keys, key_count)
        });
        items.pick(&slots)
    }

    // --- canonical content form ------------------------------------------------------

    /// The canonical JSON encoding of an item's content (see docs/design.md).
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

    // --- deep copy -------------------------------------------------------------------

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
    /// ``allow_shared`` (shared containers are then copied once per reference), or when
    /// the copy would hold more than 1024 containers per item plus 2**20 (sharing can make
    /// a copy far larger than its input). Also None when an item is a dict holding a key
    /// named in ``without`` (a tuple of str). Runs no Python code of the items.
    #[pyfunction]
    #[pyo3(signature = (items, *, allow_shared=false, without=None))]
    fn plain_json_copy<'py>(
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
        allow_shared: bool,
        without: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let keys = match without {
            Some(without) => str_tuple(without, "without")?,
            None => Vec::new(),
        };
        let items = Items::of(items, "items")?;
        let mut copier = PlainCopier::new(items.len(), allow_shared);
        let mut copies = Vec::with_capacity(items.len());
        for index in 0..items.len() {
            let Some(copy) = copier.copy(&items.get(index)?, 0)? else {
                return Ok(None);
            };
            // Looked up in the copy, whose keys are plain scalars: no user `__eq__` runs.
            if let Ok(dict) = copy.cast::<PyDict>() {
                if holds_any(dict, &keys)? {
                    return Ok(None);
                }
            }
            copies.push(copy);
        }
        PyList::new(py, copies).map(Some)
    }

    /// A shallow copy (``dict(item)``) of every item, when ``items`` is an exact list of
    /// exact dicts none of which holds a key named in ``without`` (a tuple of str);
    /// NotImplemented otherwise.
    #[pyfunction]
    #[pyo3(signature = (items, without))]
    fn shallow_dict_copies<'py>(
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
        without: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let keys = str_tuple(without, "without")?;
        if !items.is_exact_instance_of::<PyList>() {
            return Ok(py.NotImplemented().into_bound(py));
        }
        let items = Items::of(items, "items")?;
        for index in 0..items.len() {
            let item = items.get(index)?;
            let Ok(item) = item.cast_exact::<PyDict>() else {
                return Ok(py.NotImplemented().into_bound(py));
            };
            if holds_any(item, &keys)? {
                return Ok(py.NotImplemented().into_bound(py));
            }
        }
        let copies = new_list(py, items.len(), |index| {
            let item = items.get(index)?;
            match item.cast_exact::<PyDict>() {
                Ok(item) => Ok(item.copy()?.into_any()),
                // A key comparison ran user code that replaced an item after the screen.
                Err(_) => Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "items changed during the copy",
                )),
            }
        })?;
        Ok(copies.into_any())
    }

    // --- orphan-call pruning ---------------------------------------------------------

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
        let pruning = Pruning {
            prunable: prunable.as_deref(),
            output_prunable: output_prunable.as_deref(),
        };
        let kept = orphans::kept(&items, &pruning)?;
        items.pick(&kept)
    }

    /// ``drop_orphan_function_calls(items, pruning_indexes, output_pruning_indexes=...)``
    /// when that is the OpenAI Agents SDK's result by construction, else NotImplemented:
    /// for anything but an exact list of exact dicts whose ``type`` and ``call_id`` (and a
    /// shell call's ``status``) are exact str or missing, whose dict ``caller`` is an exact
    /// dict with such ``type`` and ``caller_id``, with index sets that are None or exact
    /// sets of ints, and no reasoning item outside ``pruning_indexes``; and whenever
    /// ``watch`` is given and not intact.
    #[pyfunction]
    #[pyo3(signature = (items, pruning_indexes=None, *, output_pruning_indexes=None, watch=None))]
    fn screened_drop_orphan_function_calls<'py>(
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
        let masks = index_mask(pruning_indexes, "pruning_indexes", items.len()).and_then(|mask| {
            let output = index_mask(
                output_pruning_indexes,
                "output_pruning_indexes",
                items.len(),
            )?;
            Ok((mask, output))
        });
        // Positions that are not ints: the SDK's membership tests decide.
        let Ok((prunable, output_prunable)) = masks else {
            return Ok(declined);
        };
        let pruning = Pruning {
            prunable: prunable.as_deref(),
            output_prunable: output_prunable.as_deref(),
        };
        match orphans::screened_kept(&items, &pruning)? {
            Some(kept) => Ok(items.pick(&kept)?.into_any()),
            None => Ok(declined),
        }
    }

    // --- model-input rules ------------------------------------------------------------

    /// Every way ``items`` breaks the model-input rules, as (position, kind, detail).
    ///
    /// Sorted by position, then rule. ``history`` (the stored history the input came
    /// from) adds rule (e): an item stored right after a reasoning item needs that
    /// reasoning item directly before it. Linear in the number of items.
    #[pyfunction]
    #[pyo3(signature = (items, *, history=None))]
    fn input_problems<'py>(
        items: &Bound<'py, PyAny>,
        history: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut items = ListArg::of(items, "items")?;
        let rereads = ListArg::may_run_code(history);
        let history = history
            .map(|history| ListArg::of(history, "history"))
            .transpose()?;
        if rereads {
            items.reread()?;
        }
        input_rules::problems(&items, history.as_ref())
    }

    /// ``items`` without the units that break the model-input rules.
    ///
    /// A unit is a reasoning run with the item it produced, or a tool call with its
    /// outputs; it is kept or dropped whole, so no turn is split. User messages are never
    /// dropped. Without problems the result holds the very same objects in the same order.
    /// Linear in the number of items.
    #[pyfunction]
    #[pyo3(signature = (items, *, history=None))]
    fn repair_input<'py>(
        items: &Bound<'py, PyAny>,
        history: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut items = ListArg::of(items, "items")?;
        if ListArg::may_run_code(history) {
            items.snapshot()?;
        }
        let history = history
            .map(|history| ListArg::of(history, "history"))
            .transpose()?;
        let kept = input_rules::kept(&items, history.as_ref())?;
        items.items.pick(&kept)
    }

    // --- session-callback classification ---------------------------------------------

    /// Classify what a session input callback returned (docs/design.md, rules 1-6).
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
        let result = classify::classify(
            &history.addresses()?,
            &new_items.addresses()?,
            &combined.addresses()?,
            &mut ListContentKeys::new(&history, &new_items, &combined),
        )?;
        PyTuple::new(
            py,
            [
                PyList::new(py, result.history_positions)?,
                PyList::new(py, result.persisted_positions)?,
            ],
        )
    }

    // --- exact JSON decoding ---------------------------------------------------------

    /// Positions of the texts (str or bytes) holding 19 or more consecutive ASCII digits.
    ///
    /// A JSON integer there may not fit in 64 bits, which orjson would read as a float;
    /// such texts are decoded by the standard library instead. A long run inside a string
    /// is reported too (it only costs a slower decode). Other values raise TypeError
    /// naming their position.
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

    /// The JSON values of a session's rows, as a loop ``for (text,) in rows`` decoding
    /// each with ``exact`` would build them, skipping a row whose decoding raises an
    /// instance of ``skipped`` (a tuple of exception types) and raising anything else.
    ///
    /// Each exact str without 19 or more digits in a row is decoded by ``fast`` first,
    /// and by ``exact`` only if ``fast`` raises; every other text goes to ``exact``.
    /// ``fast`` must give what ``exact`` gives for every text it accepts (orjson and
    /// ``json.loads`` do, given that screen). NotImplemented when ``rows`` is not a list
    /// of exact 1-tuples (the loop then decides).
    #[pyfunction]
    #[pyo3(signature = (rows, fast, exact, skipped))]
    fn decode_rows<'py>(
        py: Python<'py>,
        rows: &Bound<'py, PyAny>,
        fast: &Bound<'py, PyAny>,
        exact: &Bound<'py, PyAny>,
        skipped: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let Ok(skipped) = skipped.cast::<PyTuple>() else {
            return Err(PyTypeError::new_err(format!(
                "skipped must be a tuple of exception types, not {}",
                skipped.get_type().name()?
            )));
        };
        if !rows.is_exact_instance_of::<PyList>() {
            return Ok(py.NotImplemented().into_bound(py));
        }
        let rows = Items::of(rows, "rows")?;
        let decoders = Decoders {
            fast,
            exact,
            skipped,
        };
        Ok(match decode_rows_of(&rows, &decoders)? {
            Some(decoded) => decoded.into_any(),
            None => py.NotImplemented().into_bound(py),
        })
    }

    // --- json.dumps(value, sort_keys=True, default=str) text --------------------------

    /// ``sorted_json_text(item, skip)`` of each item that is an exact dict, None for any
    /// other item (and where that text is None), in order: one call for a whole list.
    #[pyfunction]
    #[pyo3(signature = (items, skip = None))]
    fn dict_sorted_json_texts<'py>(
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
        skip: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let left_out = skipped_names(skip)?;
        let items = Items::of(items, "items")?;
        let mut walker = crate::py::sorted_json::SortedJson::reuse(py);
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

    /// The top-level keys a sorted-JSON text leaves out, from an optional tuple of str.
    fn skipped_names<'py>(
        skip: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Vec<crate::py::text::Text<'py>>> {
        let mut left_out = Vec::new();
        if let Some(skip) = skip {
            for name in str_tuple(skip, "skip")? {
                left_out.push(crate::py::text::Text::of_str(name.into_any())?);
            }
        }
        Ok(left_out)
    }

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
        let left_out = skipped_names(skip)?;
        let mut walker = crate::py::sorted_json::SortedJson::reuse(py);
        let text = match walker.text(value, &left_out) {
            Some(bytes) => to_py_string(py, bytes).map(Some),
            None => Ok(None),
        };
        walker.recycle();
        text
    }
}
