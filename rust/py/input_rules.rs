//! The model-input rules of Python items: each read once into `core::input_rules` facts,
//! with the pure twin's `_Facts` field reads and comparisons, in its order.

use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::{intern, IntoPyObjectExt};

use super::args::{new_list, Items};
use super::extract::{is_str, DictPayload, FieldValue, Reader};
use super::field_scan::{Name, Names, Walk};
use super::gil::maybe_detach;
use super::text::{str_bytes, to_py_string};
use crate::core::input_rules::{
    self, key_text, Checker, Facts, ItemReader, KeptStored, Kind, Problem, Required, Stored,
    StoredReader, TypeClass,
};
use crate::core::strings::Strings;

/// A list argument: its items, and the list itself when the argument is an exact list.
pub struct ListArg<'py> {
    pub items: Items<'py>,
    list: Option<Bound<'py, PyList>>,
}

impl<'py> ListArg<'py> {
    /// `value` read as the twin's `_as_list` reads it (see [`Items::of`]).
    pub fn of(value: &Bound<'py, PyAny>, name: &str) -> PyResult<Self> {
        Ok(ListArg {
            items: Items::of(value, name)?,
            list: value.cast_exact::<PyList>().ok().cloned(),
        })
    }

    fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether reading `history` (not None) may run Python code (a generator, say).
    pub fn may_run_code(history: Option<&Bound<'py, PyAny>>) -> bool {
        history.is_some_and(|history| {
            !history.is_exact_instance_of::<PyList>()
                && !history.is_exact_instance_of::<StoredHistory>()
        })
    }

    /// Read the list again: the twin's `input_problems` reads the items only after the
    /// history was materialised, which may have changed them.
    pub fn reread(&mut self) -> PyResult<()> {
        if let Some(list) = &self.list {
            self.items = Items::of(list.as_any(), "items")?;
        }
        Ok(())
    }

    /// Read a copy of the list from now on: the twin's `repair_input` copies the items
    /// before it materialises the history.
    pub fn snapshot(&mut self) -> PyResult<()> {
        if let Some(list) = &self.list {
            let copy = list.get_slice(0, list.len());
            self.items = Items::of(copy.as_any(), "items")?;
            self.list = Some(copy);
        }
        Ok(())
    }
}

/// `input_problems`, reading its arguments in the twin's order.
pub fn input_problems<'py>(
    items: &Bound<'py, PyAny>,
    history: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let mut items = ListArg::of(items, "items")?;
    let rereads = ListArg::may_run_code(history);
    let history = history.map(HistoryArg::of).transpose()?;
    if rereads {
        items.reread()?;
    }
    problems(&items, history.as_ref())
}

/// `repair_input`, reading its arguments in the twin's order.
pub fn repair_input<'py>(
    items: &Bound<'py, PyAny>,
    history: Option<&Bound<'py, PyAny>>,
    dangling: Dangling<'py>,
) -> PyResult<Bound<'py, PyList>> {
    let synthesize = match dangling {
        Dangling::Default => false,
        Dangling::Given(dangling) => synthesizes(&dangling)?,
    };
    let mut items = ListArg::of(items, "items")?;
    if ListArg::may_run_code(history) {
        items.snapshot()?;
    }
    let history = history.map(HistoryArg::of).transpose()?;
    if synthesize {
        let found = problems(&items, history.as_ref())?;
        if found.is_empty() {
            // The common case: one pass, as under "drop".
            return items.items.pick(&(0..items.len()).collect::<Vec<_>>());
        }
        if let Some(augmented) = with_lost_outputs(&items, &found)? {
            items = ListArg::of(augmented.as_any(), "items")?;
        }
    }
    let kept = kept(&items, history.as_ref())?;
    items.items.pick(&kept)
}

/// `repair_input`'s `dangling`: left out ("drop"), or as passed (None too: the twin rejects it).
pub enum Dangling<'py> {
    Default,
    Given(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Dangling<'py> {
    type Error = PyErr;

    fn extract(value: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Dangling::Given(value.to_owned()))
    }
}

static CHECK_DANGLING: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static LOST_OUTPUT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
const UNITS: &str = "histcore.engine.units";

/// Whether `dangling` asks to synthesize; the twin's `check_dangling` raises otherwise.
fn synthesizes(dangling: &Bound<'_, PyAny>) -> PyResult<bool> {
    if let Ok(text) = dangling.cast_exact::<PyString>() {
        match text.to_str()? {
            "drop" => return Ok(false),
            "synthesize" => return Ok(true),
            _ => {}
        }
    }
    let check = CHECK_DANGLING.import(dangling.py(), UNITS, "check_dangling")?;
    check.call1((dangling,))?.is_truthy()
}

/// The twin's `_with_lost_outputs`: the items with the synthesized output (the twin's
/// `lost_output`) right after each call whose output is missing; None when there is none.
fn with_lost_outputs<'py>(
    items: &ListArg<'py>,
    found: &Bound<'py, PyList>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let py = items.items.py();
    let mut dangling = vec![false; items.len()];
    let mut any = false;
    for problem in found.iter() {
        let (position, kind): (usize, Bound<'py, PyString>) = (
            problem.get_item(0)?.extract()?,
            problem.get_item(1)?.extract()?,
        );
        if kind.to_str()? == "call_without_output" {
            dangling[position] = true;
            any = true;
        }
    }
    if !any {
        return Ok(None);
    }
    let lost_output = LOST_OUTPUT.import(py, UNITS, "lost_output")?;
    let augmented = PyList::empty(py);
    for (position, &flagged) in dangling.iter().enumerate() {
        let item = items.items.get(position)?;
        augmented.append(&item)?;
        if flagged {
            let output = lost_output.call1((item,))?;
            if !output.is_none() {
                augmented.append(output)?;
            }
        }
    }
    Ok(Some(augmented))
}

pub fn problems<'py>(
    items: &ListArg<'py>,
    history: Option<&HistoryArg<'py>>,
) -> PyResult<Bound<'py, PyList>> {
    let mut reader = FactReader::new(items.items.py())?;
    // The twin reads the items, then the history, then compares statuses.
    let facts = reader.read(items)?;
    reader.problems(facts, history)
}

impl<'py> FactReader<'py> {
    /// `input_problems` of the items whose `facts` were read (the history read after them).
    pub fn problems(
        mut self,
        mut facts: Vec<Facts>,
        history: Option<&HistoryArg<'py>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let py = self.reader.py();
        let reader = &mut self;
        let stored = history.map(|history| reader.stored(history)).transpose()?;
        reader.resolve(&mut facts)?;
        let size = facts.len() + history.map_or(0, HistoryArg::len);
        let mut strings = self.strings;
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
}

/// `repair_input`: the positions of the items kept, in order.
pub fn kept(items: &ListArg<'_>, history: Option<&HistoryArg<'_>>) -> PyResult<Vec<usize>> {
    let mut reader = FactReader::new(items.items.py())?;
    // The twin reads the history, then the items, then compares statuses.
    let stored = history.map(|history| reader.stored(history)).transpose()?;
    let facts = reader.read(items)?;
    let size = items.len() + history.map_or(0, HistoryArg::len);
    reader.repaired(facts, stored, size)
}

impl FactReader<'_> {
    /// The positions `repair_input` keeps of the items whose `facts` were read, rules (e)
    /// and (f) from `stored`; `size` (items and history) decides on releasing the GIL.
    pub fn repaired(
        mut self,
        mut facts: Vec<Facts>,
        stored: Option<Stored>,
        size: usize,
    ) -> PyResult<Vec<usize>> {
        let py = self.reader.py();
        self.resolve(&mut facts)?;
        let mut strings = self.strings;
        let kept = maybe_detach(py, size, || {
            let required = number_all(&mut facts, stored, &mut strings);
            input_rules::repair(&facts, &required, strings.len())
        });
        strings.recycle();
        Ok(kept)
    }
}

/// Number the strings of the items' and the history's facts; what the history requires.
fn number_all(facts: &mut [Facts], stored: Option<Stored>, strings: &mut Strings) -> Required {
    let id_count = strings.len();
    let ids = strings.number();
    input_rules::number(facts, ids);
    stored.map_or_else(Required::default, |stored| {
        Required::of(&stored, ids, id_count)
    })
}

/// A `history` argument: stored items to read, or a [`StoredHistory`] that read them.
pub enum HistoryArg<'py> {
    List(ListArg<'py>),
    Kept(PyRef<'py, StoredHistory>),
}

impl<'py> HistoryArg<'py> {
    fn of(value: &Bound<'py, PyAny>) -> PyResult<Self> {
        match value.cast_exact::<StoredHistory>() {
            Ok(kept) => Ok(HistoryArg::Kept(kept.try_borrow()?)),
            Err(_) => Ok(HistoryArg::List(ListArg::of(value, "history")?)),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            HistoryArg::List(list) => list.len(),
            HistoryArg::Kept(kept) => kept.kept.len(),
        }
    }
}

/// Hand each of `items` to `read` as the twin's `StoredHistory` reads it (`None`: not a dict).
fn read_stored<'py>(
    reader: &mut Reader<'py>,
    names: &Names<'py>,
    items: &Items<'py>,
    mut read: impl FnMut(Option<&mut Fields<'_, 'py>>) -> PyResult<()>,
) -> PyResult<()> {
    for position in 0..items.len() {
        let payload = DictPayload::of(reader.payload(items.get(position)?)?);
        let mut fields = payload.as_ref().map(|payload| Fields {
            payload,
            names,
            walk: None,
            exact: false,
            status: None,
        });
        read(fields.as_mut())?;
    }
    Ok(())
}

/// Rules (e) and (f) of a stored history, read once: pass it as ``history`` to
/// ``input_problems`` and ``repair_input`` in place of the items, and ``extend`` it as
/// the store grows.
///
/// Reads only what those rules need: each item's ``type`` (its ``role`` when the type
/// is ``reasoning``), and the ``id`` of a reasoning item and of the item after it.
#[pyclass(module = "histcore._core")]
#[derive(Default)]
pub struct StoredHistory {
    kept: KeptStored,
}

#[pymethods]
impl StoredHistory {
    #[new]
    #[pyo3(signature = (items = None))]
    fn new(items: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let mut stored = StoredHistory::default();
        if let Some(items) = items {
            stored.read(&ListArg::of(items, "items")?)?;
        }
        Ok(stored)
    }

    /// Read ``items``, stored after those read so far.
    fn extend(&mut self, items: &Bound<'_, PyAny>) -> PyResult<()> {
        self.read(&ListArg::of(items, "items")?)
    }

    fn __len__(&self) -> usize {
        self.kept.len()
    }
}

impl StoredHistory {
    fn read(&mut self, list: &ListArg<'_>) -> PyResult<()> {
        let py = list.items.py();
        let mut reader = Reader::new(py);
        let names = Names::new(py)?;
        let mut key = Vec::new();
        let kept = &mut self.kept;
        read_stored(&mut reader, &names, &list.items, |fields| {
            kept.read(fields, &mut key)
        })
    }
}

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
        Kind::ReasoningWithoutSuccessor => intern!(py, "reasoning_without_successor"),
    };
    let position = problem.position.into_bound_py_any(py)?;
    Ok(PyTuple::new(py, [position, kind.clone().into_any(), detail])?.into_any())
}

/// Results of `status == "in_progress"` that are not bools, by position: the twin takes their
/// truthiness only once every item is read, and only for a call issued by a program.
type Deferred<'py> = Vec<(usize, Bound<'py, PyAny>)>;

/// Reads lists of items into facts, their strings pushed to one [`Strings`].
pub struct FactReader<'py> {
    reader: Reader<'py>,
    names: Names<'py>,
    strings: Strings,
    key: Vec<u8>,
    deferred: Deferred<'py>,
}

impl<'py> FactReader<'py> {
    pub fn new(py: Python<'py>) -> PyResult<Self> {
        Ok(FactReader {
            reader: Reader::new(py),
            names: Names::new(py)?,
            strings: Strings::reuse(),
            key: Vec::new(),
            deferred: Vec::new(),
        })
    }

    /// The facts of every item; status comparisons that are not bools wait for `resolve`.
    fn read(&mut self, list: &ListArg<'py>) -> PyResult<Vec<Facts>> {
        let items = &list.items;
        let mut facts = Vec::with_capacity(items.len());
        for position in 0..items.len() {
            facts.push(self.read_item(position, items.get(position)?)?);
        }
        Ok(facts)
    }

    /// The facts of `item` at `position` (the default facts when it is not a dict).
    pub fn read_item(&mut self, position: usize, item: Bound<'py, PyAny>) -> PyResult<Facts> {
        let exact = item.is_exact_instance_of::<PyDict>();
        let Some(payload) = DictPayload::of(self.reader.payload(item)?) else {
            return Ok(Facts::default());
        };
        let mut fields = Fields {
            payload: &payload,
            names: &self.names,
            walk: None,
            exact,
            status: None,
        };
        let facts = input_rules::read(&mut fields, &mut self.strings, &mut self.key)?;
        if let Some(status) = fields.status {
            self.deferred.push((position, status));
        }
        Ok(facts)
    }

    /// The facts of the exact dict `item` from its `walk`, when reading them runs no
    /// Python code (no `caller`; no `status` whose comparison with a str could run any);
    /// None otherwise (then read the item itself, when its turn comes).
    ///
    /// # Safety
    /// `walk` is a walk of `item` (see [`Walk::of`]), and no Python code ran since.
    pub unsafe fn read_walked(
        &mut self,
        item: Bound<'py, PyAny>,
        walk: Walk,
    ) -> PyResult<Option<Facts>> {
        let py = item.py();
        let plain = walk.get(py, Name::Caller).is_none()
            && walk.get(py, Name::Status).is_none_or(|status| {
                status.is_exact_instance_of::<PyString>() || never_equals_str(&status)
            });
        let Some(payload) = DictPayload::of_exact(item).filter(|_| plain) else {
            return Ok(None);
        };
        let mut fields = Fields {
            payload: &payload,
            names: &self.names,
            walk: Some(walk),
            exact: true,
            status: None,
        };
        input_rules::read(&mut fields, &mut self.strings, &mut self.key).map(Some)
    }

    /// Read `item` into `stored` from its `walk`, as [`read_stored`] reads an exact dict.
    ///
    /// # Safety
    /// `walk` is a walk of `item` (see [`Walk::of`]), and no Python code ran since.
    pub unsafe fn read_stored_walked(
        &mut self,
        stored: &mut Stored,
        item: &Bound<'py, PyAny>,
        walk: Walk,
    ) -> PyResult<()> {
        let payload = DictPayload::of_exact(item.clone());
        let mut fields = payload.as_ref().map(|payload| Fields {
            payload,
            names: &self.names,
            walk: Some(walk),
            exact: false,
            status: None,
        });
        stored.read(fields.as_mut(), &mut self.strings, &mut self.key)
    }

    /// What rules (e) and (f) need of a history: read from a list, or from a [`StoredHistory`].
    pub fn stored(&mut self, history: &HistoryArg<'py>) -> PyResult<Stored> {
        match history {
            HistoryArg::List(list) => {
                let mut stored = Stored::default();
                let strings = &mut self.strings;
                let key = &mut self.key;
                read_stored(&mut self.reader, &self.names, &list.items, |fields| {
                    stored.read(fields, strings, key)
                })?;
                Ok(stored)
            }
            HistoryArg::Kept(kept) => Ok(kept.kept.copy_into(&mut self.strings)),
        }
    }

    /// Take the truthiness of the deferred status comparisons, in position order.
    fn resolve(&mut self, facts: &mut [Facts]) -> PyResult<()> {
        for (position, status) in self.deferred.drain(..) {
            let facts = &mut facts[position];
            if facts.caller.is_some() {
                facts.pending_hosted = status.is_truthy()?;
            }
        }
        Ok(())
    }
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
    names: &'a Names<'py>,
    /// The fields a walk read (see [`FactReader::read_walked`]), else each is looked up.
    walk: Option<Walk>,
    /// The payload is an exact dict (reading it runs no Python code).
    exact: bool,
    /// A `status == "in_progress"` result that is not a bool (see [`Deferred`]).
    status: Option<Bound<'py, PyAny>>,
}

impl<'py> Fields<'_, 'py> {
    /// `dict.get(payload, name)`, with a stored None reported as missing.
    #[inline]
    fn field(&self, name: Name) -> PyResult<Option<FieldValue<'_, 'py>>> {
        match &self.walk {
            Some(walk) => Ok(walk.get(self.payload.py(), name).map(FieldValue::of)),
            None => self.payload.lookup(self.names.key(name)),
        }
    }
}

impl ItemReader for Fields<'_, '_> {
    type Error = PyErr;

    fn kind(&mut self) -> PyResult<Option<TypeClass>> {
        match self.field(Name::Type)? {
            Some(kind) if is_str(&kind) => Ok(Some(TypeClass::of(str_bytes(&kind)?.as_bytes()))),
            _ => Ok(None),
        }
    }

    fn role(&mut self) -> PyResult<Option<bool>> {
        Ok(match self.field(Name::Role)? {
            None => None,
            Some(role) if is_str(&role) => Some(matches!(
                str_bytes(&role)?.as_bytes(),
                b"user" | b"system" | b"developer"
            )),
            Some(_) => Some(false),
        })
    }

    fn id(&mut self, out: &mut Vec<u8>) -> PyResult<bool> {
        append_text(self.field(Name::Id)?, out)
    }

    fn program_caller(&mut self, out: &mut Vec<u8>) -> PyResult<bool> {
        let py = self.payload.py();
        let Some(caller) = self.field(Name::Caller)?.map(FieldValue::into_owned) else {
            return Ok(false);
        };
        if !caller.is_instance_of::<PyDict>() {
            return Ok(false);
        }
        let Some(caller) = DictPayload::of(caller) else {
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
        append_text(self.field(Name::CallId)?, out)
    }

    fn pending(&mut self, shell: bool) -> PyResult<bool> {
        if !shell && self.exact {
            return Ok(false); // the twin's read of `status` is invisible, and unused
        }
        let py = self.payload.py();
        let status = self.field(Name::Status)?;
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

/// Rules (e) and (f)'s reading of a stored item, as the twin's `StoredHistory` reads it.
impl StoredReader for Fields<'_, '_> {
    type Error = PyErr;

    fn is_reasoning(&mut self) -> PyResult<bool> {
        let reasoning = match self.field(Name::Type)? {
            Some(kind) if is_str(&kind) => str_bytes(&kind)?.as_bytes() == b"reasoning",
            _ => false,
        };
        Ok(reasoning && self.field(Name::Role)?.is_none())
    }

    fn id(&mut self, out: &mut Vec<u8>) -> PyResult<bool> {
        ItemReader::id(self, out)
    }
}
