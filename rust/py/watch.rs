//! `NameWatch`: whether watched names still hold what they held when armed, in a few dict
//! lookups (a drop-in asks on every call). What they held is often the replacement holding the
//! watch: `__traverse__` and `__clear__` let the collector break that cycle; `disarm` drops it.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::pyclass::{PyTraverseError, PyVisit};
use pyo3::types::{PyDict, PyList, PySet, PyString, PyType};

use super::dict;

struct Group {
    namespace: Py<PyDict>,
    names: Vec<Py<PyString>>,
    expected: Vec<Py<PyAny>>,
}

struct Constant {
    namespace: Py<PyDict>,
    name: Py<PyString>,
    snapshot: Snapshot,
}

fn get<'py>(
    namespace: &Bound<'py, PyDict>,
    name: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match namespace.get_item(name)? {
        Some(value) => value,
        None => namespace.py().None().into_bound(namespace.py()),
    })
}

/// The address `namespace` holds under `name` (`missing` if none), borrowed: runs on every call.
#[inline]
fn held(
    py: Python<'_>,
    namespace: &Py<PyDict>,
    name: &Py<PyString>,
    missing: *mut ffi::PyObject,
) -> PyResult<*mut ffi::PyObject> {
    // SAFETY: `namespace` is a live dict and `name` a live str; the borrowed result is only
    // compared as an address. NULL is missing or an error (a key's `__eq__` raised).
    let found = unsafe { ffi::PyDict_GetItemWithError(namespace.as_ptr(), name.as_ptr()) };
    if !found.is_null() {
        return Ok(found);
    }
    match PyErr::take(py) {
        Some(error) => Err(error),
        None => Ok(missing),
    }
}

/// What a watched constant held when armed: an exact dict, list or set by its members in
/// order (so an in-place change shows), anything else by the object itself.
enum Snapshot {
    Members(Py<PyType>, Vec<Py<PyAny>>),
    Object(Py<PyAny>),
}

fn members<'py>(value: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
    if let Ok(dict) = value.cast_exact::<PyDict>() {
        return Some(
            dict.iter()
                .flat_map(|(key, member)| [key, member])
                .collect(),
        );
    }
    if let Ok(list) = value.cast_exact::<PyList>() {
        return Some(list.iter().collect());
    }
    if let Ok(set) = value.cast_exact::<PySet>() {
        return Some(set.iter().collect());
    }
    None
}

/// Whether `dict` holds exactly `expected`'s keys and values, interleaved, by identity.
fn same_dict_members(dict: &Bound<'_, PyDict>, expected: &[Py<PyAny>]) -> bool {
    // SAFETY: pairs are compared by address only.
    let mut pairs = unsafe { dict::items(dict) };
    expected.chunks_exact(2).all(|pair| {
        pairs.next_pair().is_some_and(|(key, member)| {
            key.as_ptr() == pair[0].as_ptr() && member.as_ptr() == pair[1].as_ptr()
        })
    })
}

impl Snapshot {
    fn of(value: Bound<'_, PyAny>) -> Self {
        match members(&value) {
            Some(found) => Snapshot::Members(
                value.get_type().unbind(),
                found.into_iter().map(Bound::unbind).collect(),
            ),
            None => Snapshot::Object(value.unbind()),
        }
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self {
            Snapshot::Object(object) => visit.call(object),
            Snapshot::Members(kind, expected) => {
                visit.call(kind)?;
                expected.iter().try_for_each(|member| visit.call(member))
            }
        }
    }

    /// Whether `value` is the same object, or a same-type container of the same objects in order.
    fn matches(&self, value: &Bound<'_, PyAny>) -> bool {
        let py = value.py();
        let (kind, expected) = match self {
            Snapshot::Object(object) => return value.is(object.bind(py)),
            Snapshot::Members(kind, expected) => (kind, expected),
        };
        if !value.get_type().is(kind.bind(py)) {
            return false;
        }
        let same = |found: &Bound<'_, PyAny>, wanted: &Py<PyAny>| found.is(wanted.bind(py));
        if let Ok(dict) = value.cast_exact::<PyDict>() {
            return dict.len() * 2 == expected.len() && same_dict_members(dict, expected);
        }
        if let Ok(list) = value.cast_exact::<PyList>() {
            return list.len() == expected.len()
                && list
                    .iter()
                    .zip(expected)
                    .all(|(found, wanted)| same(&found, wanted));
        }
        if let Ok(set) = value.cast_exact::<PySet>() {
            return set.len() == expected.len()
                && set
                    .iter()
                    .zip(expected)
                    .all(|(found, wanted)| same(&found, wanted));
        }
        false
    }
}

/// Whether names in namespaces still hold the objects they held when the watch was
/// armed (and watched constants the same members).
#[pyclass(module = "histcore._core")]
pub struct NameWatch {
    groups: Vec<Group>,
    constants: Vec<(Py<PyDict>, Py<PyString>)>,
    armed_constants: Vec<Constant>,
    armed: bool,
}

#[pymethods]
impl NameWatch {
    /// `lookups`: (namespace, names) pairs compared by identity (names: any sequence of
    /// str); `contents`: (namespace, name) pairs whose values are also compared with `==`.
    #[new]
    #[pyo3(signature = (lookups, contents = None))]
    fn new(
        lookups: Vec<(Bound<'_, PyDict>, Vec<Bound<'_, PyString>>)>,
        contents: Option<Vec<(Bound<'_, PyDict>, Bound<'_, PyString>)>>,
    ) -> Self {
        let groups = lookups
            .into_iter()
            .map(|(namespace, names)| Group {
                namespace: namespace.unbind(),
                names: names.into_iter().map(Bound::unbind).collect(),
                expected: Vec::new(),
            })
            .collect();
        let constants = contents
            .unwrap_or_default()
            .into_iter()
            .map(|(namespace, name)| (namespace.unbind(), name.unbind()))
            .collect();
        NameWatch {
            groups,
            constants,
            armed_constants: Vec::new(),
            armed: false,
        }
    }

    /// Note what every watched name holds now.
    fn arm(&mut self, py: Python<'_>) -> PyResult<()> {
        for group in &mut self.groups {
            let namespace = group.namespace.bind(py);
            group.expected = group
                .names
                .iter()
                .map(|name| get(namespace, name.bind(py)).map(Bound::unbind))
                .collect::<PyResult<_>>()?;
        }
        self.armed_constants = self
            .constants
            .iter()
            .map(|(namespace, name)| {
                let value = get(namespace.bind(py), name.bind(py))?;
                Ok(Constant {
                    namespace: namespace.clone_ref(py),
                    name: name.clone_ref(py),
                    snapshot: Snapshot::of(value),
                })
            })
            .collect::<PyResult<_>>()?;
        self.armed = true;
        Ok(())
    }

    /// Stop taking the fast path, and let go of what was noted when armed (often the
    /// replacement that holds this watch).
    fn disarm(&mut self) {
        self.forget();
    }

    #[getter]
    fn armed(&self) -> bool {
        self.armed
    }

    /// Whether the watch is armed and every watched name still holds the object it held
    /// then (every watched constant container the same members, by identity).
    pub fn intact(&self, py: Python<'_>) -> PyResult<bool> {
        if !self.armed {
            return Ok(false);
        }
        let none = py.None();
        for group in &self.groups {
            for (name, expected) in group.names.iter().zip(&group.expected) {
                if held(py, &group.namespace, name, none.as_ptr())? != expected.as_ptr() {
                    return Ok(false);
                }
            }
        }
        for constant in &self.armed_constants {
            let current = get(constant.namespace.bind(py), constant.name.bind(py))?;
            if !constant.snapshot.matches(&current) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for group in &self.groups {
            visit.call(&group.namespace)?;
            group.names.iter().try_for_each(|name| visit.call(name))?;
            group
                .expected
                .iter()
                .try_for_each(|held| visit.call(held))?;
        }
        for (namespace, name) in &self.constants {
            visit.call(namespace)?;
            visit.call(name)?;
        }
        for constant in &self.armed_constants {
            visit.call(&constant.namespace)?;
            visit.call(&constant.name)?;
            constant.snapshot.traverse(&visit)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.forget();
        self.groups.clear();
        self.constants.clear();
    }

    fn __repr__(&self) -> String {
        let names: usize = self.groups.iter().map(|group| group.names.len()).sum();
        format!(
            "<NameWatch over {names} names and {} constants, {}>",
            self.constants.len(),
            if self.armed { "armed" } else { "unarmed" }
        )
    }
}

impl NameWatch {
    /// Disarm and drop what `arm` noted (an unarmed watch is never intact: nothing reads it).
    fn forget(&mut self) {
        self.armed = false;
        for group in &mut self.groups {
            group.expected = Vec::new();
        }
        self.armed_constants = Vec::new();
    }
}
