//! The model-input rules of Python items: each item is read once into the facts that
//! `core::input_rules` decides on, with the same field reads and comparisons as the pure
//! twin's `_Facts`, in the same order.

use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::{intern, IntoPyObjectExt};

use super::args::{new_list, Items};
use super::extract::{is_str, DictPayload, FieldValue, Reader};
use super::gil::maybe_detach;
use super::text::{str_bytes, to_py_string};
use crate::core::input_rules::{
    self, key_text, Checker, Facts, ItemReader, Kind, Problem, Required, TypeClass,
};
use crate::core::strings::Strings;

/// `input_problems`: every problem of `items`, as `(position, kind, detail)` tuples.
pub fn problems<'py>(
    items: &Items<'py>,
    history: Option<&Items<'py>>,
) -> PyResult<Bound<'py, PyList>> {
    let py = items.py();
    let mut strings = Strings::reuse();
    // The twin reads the items, then the history, then compares statuses.
    let mut deferred = Vec::new();
    let mut facts = read_facts(items, &mut strings, Some(&mut deferred))?;
    let stored = history
        .map(|history| read_facts(history, &mut strings, None))
        .transpose()?;
    resolve(&mut facts, deferred)?;
    let size = items.len() + history.map_or(0, Items::len);
    let found = maybe_detach(py, size, || {
        let required = number_all(&mut facts, stored, &mut strings);
        Checker::new(&facts, &required, strings.len()).problems()
    });
    let list = new_list(py, found.len(), |index| {
        problem_tuple(py, &found[index], &strings)
    });
    strings.recycle();
    list
}

/// `repair_input`: the positions of the items kept, in order.
pub fn kept(items: &Items<'_>, history: Option<&Items<'_>>) -> PyResult<Vec<usize>> {
    let py = items.py();
    let mut strings = Strings::reuse();
    // The twin reads the history, then the items, then compares statuses.
    let stored = history
        .map(|history| read_facts(history, &mut strings, None))
        .transpose()?;
    let mut deferred = Vec::new();
    let mut facts = read_facts(items, &mut strings, Some(&mut deferred))?;
    resolve(&mut facts, deferred)?;
    let size = items.len() + history.map_or(0, Items::len);
    let kept = maybe_detach(py, size, || {
        let required = number_all(&mut facts, stored, &mut strings);
        input_rules::repair(&facts, &required, strings.len())
    });
    strings.recycle();
    Ok(kept)
}

/// Number the strings of the items' and the history's facts; what the history requires.
fn number_all(facts: &mut [Facts], stored: Option<Vec<Facts>>, strings: &mut Strings) -> Required {
    let id_count = strings.len();
    let ids = strings.number();
    input_rules::number(facts, ids);
    stored.map_or_else(Required::default, |mut stored| {
        input_rules::number(&mut stored, ids);
        Required::of(&stored, id_count)
    })
}

/// A `(position, kind, detail)` tuple.
fn problem_tuple<'py>(
    py: Python<'py>,
    problem: &Problem,
    strings: &Strings,
) -> PyResult<Bound<'py, PyAny>> {
    let detail = match problem.detail {
        Some(id) => to_py_string(py, key_text(strings.get(id)))?.into_any(),
        None => py.None().into_bound(py),
    };
    let kind = match problem.kind {
        Kind::OutputWithoutCall => intern!(py, "output_without_call"),
        Kind::CallWithoutOutput => intern!(py, "call_without_output"),
        Kind::CallAwaitingOutput => intern!(py, "call_awaiting_output"),
        Kind::DuplicateId => intern!(py, "duplicate_id"),
        Kind::ReasoningWithoutItem => intern!(py, "reasoning_without_item"),
        Kind::ItemWithoutReasoning => intern!(py, "item_without_reasoning"),
    };
    let position = problem.position.into_bound_py_any(py)?;
    Ok(PyTuple::new(py, [position, kind.clone().into_any(), detail])?.into_any())
}

/// The result of a `status == "in_progress"` that is not a bool, at its position: the
/// twin takes its truthiness only once every item is read, and only for a call issued
/// by a program.
type Deferred<'py> = Vec<(usize, Bound<'py, PyAny>)>;

/// The facts of every item (the default facts for items that are not dicts), with their
/// strings pushed to `strings`. Status comparisons go to `deferred` (with None, as for
/// the history, their truthiness is never needed).
fn read_facts<'py>(
    items: &Items<'py>,
    strings: &mut Strings,
    mut deferred: Option<&mut Deferred<'py>>,
) -> PyResult<Vec<Facts>> {
    let mut reader = Reader::new(items.py());
    let mut key = Vec::new();
    let mut facts = Vec::with_capacity(items.len());
    for (position, item) in items.iter().enumerate() {
        let payload = reader.payload(item?)?;
        let exact = payload.is_exact_instance_of::<PyDict>();
        let Some(payload) = DictPayload::of(payload) else {
            facts.push(Facts::default());
            continue;
        };
        let mut fields = Fields {
            payload: &payload,
            exact,
            status: None,
        };
        facts.push(input_rules::read(&mut fields, strings, &mut key)?);
        if let (Some(status), Some(deferred)) = (fields.status, deferred.as_deref_mut()) {
            deferred.push((position, status));
        }
    }
    Ok(facts)
}

/// Take the truthiness of the deferred status comparisons, in position order.
fn resolve(facts: &mut [Facts], deferred: Deferred<'_>) -> PyResult<()> {
    for (position, status) in deferred {
        let facts = &mut facts[position];
        if facts.caller.is_some() {
            facts.pending_hosted = status.is_truthy()?;
        }
    }
    Ok(())
}

/// A value whose comparisons with a `str` run no user code and are always False.
fn never_equals_str(value: &Bound<'_, PyAny>) -> bool {
    value.is_exact_instance_of::<PyInt>()
        || value.is_exact_instance_of::<PyFloat>()
        || value.is_exact_instance_of::<PyBool>()
        || value.is_exact_instance_of::<PyDict>()
        || value.is_exact_instance_of::<PyList>()
        || value.is_exact_instance_of::<PyTuple>()
}

/// Append the text of `value` to `out` when it is a `str` (the twin's `_text`).
fn append_text(value: Option<FieldValue<'_, '_>>, out: &mut Vec<u8>) -> PyResult<bool> {
    match value {
        Some(value) if is_str(&value) => {
            out.extend_from_slice(str_bytes(&value)?.as_bytes());
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// The fields of one dict payload, read as the twin's `_Facts._read` reads them.
struct Fields<'a, 'py> {
    payload: &'a DictPayload<'py>,
    /// The payload is an exact dict (reading it runs no Python code).
    exact: bool,
    /// A `status == "in_progress"` result that is not a bool (see [`Deferred`]).
    status: Option<Bound<'py, PyAny>>,
}

impl<'py> Fields<'_, 'py> {
    fn lookup(&self, key: &Bound<'py, PyString>) -> PyResult<Option<FieldValue<'_, 'py>>> {
        self.payload.lookup(key)
    }
}

impl ItemReader for Fields<'_, '_> {
    type Error = PyErr;

    fn kind(&mut self) -> PyResult<Option<TypeClass>> {
        let py = self.payload.py();
        match self.lookup(intern!(py, "type"))? {
            Some(kind) if is_str(&kind) => Ok(Some(TypeClass::of(str_bytes(&kind)?.as_bytes()))),
            _ => Ok(None),
        }
    }

    fn role(&mut self) -> PyResult<Option<bool>> {
        let py = self.payload.py();
        Ok(match self.lookup(intern!(py, "role"))? {
            None => None,
            Some(role) if is_str(&role) => Some(matches!(
                str_bytes(&role)?.as_bytes(),
                b"user" | b"system" | b"developer"
            )),
            Some(_) => Some(false),
        })
    }

    fn id(&mut self, out: &mut Vec<u8>) -> PyResult<bool> {
        let py = self.payload.py();
        append_text(self.lookup(intern!(py, "id"))?, out)
    }

    fn program_caller(&mut self, out: &mut Vec<u8>) -> PyResult<bool> {
        let py = self.payload.py();
        let caller = self
            .lookup(intern!(py, "caller"))?
            .map(FieldValue::into_owned)
            .and_then(DictPayload::of);
        let Some(caller) = caller else {
            return Ok(false);
        };
        // `caller.get("type") == "program"`: user code may run, on owned references only.
        let is_program = match caller.lookup(intern!(py, "type"))? {
            None => false,
            Some(kind) if kind.is_exact_instance_of::<PyString>() => {
                str_bytes(&kind)?.as_bytes() == b"program"
            }
            Some(kind) if never_equals_str(&kind) => false,
            Some(kind) => kind.into_owned().eq(intern!(py, "program"))?,
        };
        if !is_program {
            return Ok(false);
        }
        append_text(caller.lookup(intern!(py, "caller_id"))?, out)
    }

    fn call_id(&mut self, out: &mut Vec<u8>) -> PyResult<bool> {
        let py = self.payload.py();
        append_text(self.lookup(intern!(py, "call_id"))?, out)
    }

    fn pending(&mut self, shell: bool) -> PyResult<bool> {
        if !shell && self.exact {
            return Ok(false); // the twin's read of `status` is invisible, and unused
        }
        let py = self.payload.py();
        let status = self.lookup(intern!(py, "status"))?;
        // `kind == "shell_call" and (status is None or status == "in_progress")`
        Ok(match status {
            None => shell,
            Some(_) if !shell => false,
            Some(status) if status.is_exact_instance_of::<PyString>() => {
                str_bytes(&status)?.as_bytes() == b"in_progress"
            }
            Some(status) if never_equals_str(&status) => false,
            Some(status) => {
                let equal = status
                    .into_owned()
                    .rich_compare(intern!(py, "in_progress"), CompareOp::Eq)?;
                if equal.is_exact_instance_of::<PyBool>() {
                    equal.is_truthy()?
                } else {
                    self.status = Some(equal);
                    false
                }
            }
        })
    }
}
