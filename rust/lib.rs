//! `histcore._core`, the Rust engine of histcore: the table of its Python bindings.
//! Layout and rules: docs/design.md; the pure-Python twin is the executable specification.

pub mod core;
#[cfg(feature = "python")]
mod py;

// No `///` here: it would become the module's docstring.
#[cfg(feature = "python")]
#[pyo3::pymodule]
mod _core {
    use pyo3::prelude::*;
    use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

    use crate::core::canonical;
    use crate::py;

    #[pymodule_export]
    use crate::py::watch::NameWatch;

    #[pymodule_export]
    use crate::py::dict_text::DictText;

    #[pymodule_export]
    use crate::py::screened_key::ScreenedKey;

    #[pymodule_export]
    use crate::py::input_rules::StoredHistory;

    #[pymodule_export]
    const MAX_DEPTH: usize = canonical::MAX_DEPTH;

    // `*extra`, hidden by the text signature, gives surplus arguments CPython's error wording,
    // not pyo3's. pyo3 does not see macro-made functions: `init` adds them.
    macro_rules! one_argument {
        (
            $(#[doc = $doc:literal])*
            fn $name:ident($arg:ident) as $signature:literal -> $out:ty = $body:path;
        ) => {
            $(#[doc = $doc])*
            #[pyfunction]
            #[pyo3(signature = ($arg, *extra), text_signature = $signature)]
            fn $name<'py>(
                $arg: &Bound<'py, PyAny>,
                extra: &Bound<'py, PyTuple>,
            ) -> PyResult<$out> {
                py::args::reject_extra(stringify!($name), extra)?;
                $body($arg)
            }
        };
    }

    #[pymodule_init]
    fn init(module: &Bound<'_, PyModule>) -> PyResult<()> {
        let profile = if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        };
        module.add("build_profile", profile)?;
        for function in [
            wrap_pyfunction!(dedupe_key, module)?,
            wrap_pyfunction!(dedupe_keys, module)?,
            wrap_pyfunction!(deduplicate_input_items, module)?,
            wrap_pyfunction!(deduplicate_input_items_preferring_latest, module)?,
            wrap_pyfunction!(canonical_json, module)?,
            wrap_pyfunction!(content_key, module)?,
            wrap_pyfunction!(content_keys, module)?,
            wrap_pyfunction!(deep_copy_items, module)?,
            wrap_pyfunction!(long_integer_candidates, module)?,
        ] {
            module.add_function(function)?;
        }
        Ok(())
    }

    one_argument! {
        /// Identity key of an item, or None when it never collapses (see docs/design.md).
        fn dedupe_key(item) as "(item)" -> Option<Bound<'py, PyString>> = py::extract::dedupe_key;
    }

    one_argument! {
        /// ``dedupe_key`` of every item, in order.
        fn dedupe_keys(items) as "(items)" -> Bound<'py, PyList> = py::extract::dedupe_keys;
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
        py::screened_key::screened_dedupe_key(py, item, watch)
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
        py::screened_key::screened_deduplicate(py, items, preferring_latest, watch)
    }

    /// ``(kept, problems)`` of ``kept = screened_deduplicate(items, preferring_latest,
    /// watch)`` and ``problems = input_problems(kept, history=history)`` (``history``: a
    /// ``StoredHistory`` or None), or NotImplemented where the dedupe is.
    #[pyfunction]
    #[pyo3(signature = (items, preferring_latest = false, watch = None, *, history = None))]
    fn screened_deduplicate_checked<'py>(
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
        preferring_latest: bool,
        watch: Option<PyRef<'py, NameWatch>>,
        history: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        py::checked_dedupe::screened_deduplicate_checked(
            py,
            items,
            preferring_latest,
            watch,
            history,
        )
    }

    one_argument! {
        /// Keep the first occurrence (value and position) of every key.
        fn deduplicate_input_items(items) as "(items)" -> Bound<'py, PyList>
            = py::extract::deduplicate_input_items;
    }

    one_argument! {
        /// One item per key holding its latest value, anchored per docs/design.md.
        ///
        /// Precursors (calls, approval requests, reasoning) stay at their earliest position,
        /// every other keyed item at its latest one; unkeyed items stay where they are.
        fn deduplicate_input_items_preferring_latest(items) as "(items)" -> Bound<'py, PyList>
            = py::extract::deduplicate_input_items_preferring_latest;
    }

    one_argument! {
        /// The canonical JSON encoding of an item's content (see docs/design.md).
        fn canonical_json(item) as "(item)" -> Bound<'py, PyBytes> = py::content::canonical_json;
    }

    one_argument! {
        /// 16-byte XXH3-128 digest of ``canonical_json(item)`` (big-endian).
        fn content_key(item) as "(item)" -> Bound<'py, PyBytes> = py::content::content_key;
    }

    one_argument! {
        /// ``content_key`` of every item, in order.
        fn content_keys(items) as "(items)" -> Bound<'py, PyList> = py::content::content_keys;
    }

    one_argument! {
        /// An independent deep copy of JSON-like items.
        ///
        /// Exact dict/list/tuple are rebuilt, str/int/float/bool/None shared (immutable), any
        /// other value is handed to ``copy.deepcopy``. Shared sub-objects are copied once per
        /// reference (no memo), and nesting deeper than MAX_DEPTH raises ValueError.
        fn deep_copy_items(items) as "(items)" -> Bound<'py, PyList>
            = py::deepcopy::deep_copy_items;
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
        py::deepcopy::plain_json_copy(py, items, allow_shared, without)
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
        py::deepcopy::shallow_dict_copies(py, items, without)
    }

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
        py::orphans::drop_orphan_function_calls(items, pruning_indexes, output_pruning_indexes)
    }

    /// ``drop_orphan_function_calls(items, pruning_indexes, output_pruning_indexes=...)``
    /// when that is the OpenAI Agents SDK's result by construction (docs/design.md, "Screening
    /// in the engine"), else NotImplemented, as whenever ``watch`` is given and not intact.
    #[pyfunction]
    #[pyo3(signature = (items, pruning_indexes=None, *, output_pruning_indexes=None, watch=None))]
    fn screened_drop_orphan_function_calls<'py>(
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
        pruning_indexes: Option<&Bound<'py, PyAny>>,
        output_pruning_indexes: Option<&Bound<'py, PyAny>>,
        watch: Option<PyRef<'py, NameWatch>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        py::orphans::screened_drop_orphan_function_calls(
            py,
            items,
            pruning_indexes,
            output_pruning_indexes,
            watch,
        )
    }

    /// ``repair_input(deduplicate_input_items_preferring_latest(drop_orphan_function_calls(
    /// items, pruning_indexes, output_pruning_indexes=output_pruning_indexes)),
    /// history=history)``, each item read once for the three.
    ///
    /// With ``without`` (a tuple of str): NotImplemented unless ``items`` is an exact list of
    /// exact dicts none of which holds a key named in it, checked before anything else.
    #[pyfunction]
    #[pyo3(signature = (
        items, pruning_indexes=None, *, output_pruning_indexes=None, history=None, without=None
    ))]
    fn prepared_model_input<'py>(
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
        pruning_indexes: Option<&Bound<'py, PyAny>>,
        output_pruning_indexes: Option<&Bound<'py, PyAny>>,
        history: Option<&Bound<'py, PyAny>>,
        without: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        py::model_input::prepared_model_input(
            py,
            items,
            pruning_indexes,
            output_pruning_indexes,
            history,
            without,
        )
    }

    /// Every way ``items`` breaks the model-input rules, as (position, kind, detail).
    ///
    /// Sorted by position, then rule. ``history`` (the stored history the input came
    /// from, or a ``StoredHistory`` of it) adds rule (e): an item stored right after a
    /// reasoning item needs that reasoning item directly before it; and tells rule (f)
    /// which item a reasoning item needs directly after it (without it, rule (f) finds
    /// only a reasoning item directly followed by another). Linear in the number of items.
    #[pyfunction]
    #[pyo3(signature = (items, *, history=None))]
    fn input_problems<'py>(
        items: &Bound<'py, PyAny>,
        history: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        py::input_rules::input_problems(items, history)
    }

    /// ``items`` without the units that break the model-input rules.
    ///
    /// A unit is a reasoning run with the item it produced, or a tool call with its
    /// outputs; it is kept or dropped whole, so no turn is split. A reasoning item that
    /// lost the item stored after it (rule (f)) is a unit of its own. User messages are
    /// never dropped. Without problems the result holds the very same objects in the same
    /// order. Linear in the number of items. ``dangling="synthesize"``: a function or
    /// custom tool call whose output is missing gets a synthesized output
    /// (``histcore.engine.units.lost_output``) right after it instead of being dropped.
    #[pyfunction]
    #[pyo3(
        signature = (items, *, history=None, dangling=py::input_rules::Dangling::Default),
        text_signature = "(items, *, history=None, dangling='drop')"
    )]
    fn repair_input<'py>(
        items: &Bound<'py, PyAny>,
        history: Option<&Bound<'py, PyAny>>,
        dangling: py::input_rules::Dangling<'py>,
    ) -> PyResult<Bound<'py, PyList>> {
        py::input_rules::repair_input(items, history, dangling)
    }

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
        py::content::classify_callback_output(py, history, new_items, combined)
    }

    one_argument! {
        /// Positions of the texts (str or bytes) holding 19 or more consecutive ASCII digits.
        ///
        /// A JSON integer there may not fit in 64 bits, which orjson would read as a float;
        /// such texts are decoded by the standard library instead. A long run inside a string
        /// is reported too (it only costs a slower decode). Other values raise TypeError
        /// naming their position.
        fn long_integer_candidates(texts) as "(texts)" -> Bound<'py, PyList>
            = py::rows::long_integer_candidates;
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
        py::rows::decode_rows(py, rows, fast, exact, skipped)
    }

    /// ``sorted_json_text(item, skip)`` of each item that is an exact dict, None for any
    /// other item (and where that text is None), in order: one call for a whole list.
    #[pyfunction]
    #[pyo3(signature = (items, skip = None))]
    fn dict_sorted_json_texts<'py>(
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
        skip: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        py::sorted_json::dict_sorted_json_texts(py, items, skip)
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
        py::sorted_json::sorted_json_text(py, value, skip)
    }
}
