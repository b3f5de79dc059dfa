//! `screened_deduplicate_checked`: the screened dedupe and the model-input problems of what
//! it keeps, in one pass. An exact dict of exact `str` keys is walked once ([`Walk`]) for its
//! dedupe key and its facts alike; every other item is read as the two functions read it.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use super::extract::{kept_slots, keyed, ScreenedItem};
use super::field_scan::{Names, Walk};
use super::input_rules::{FactReader, HistoryArg, StoredHistory};
use super::screened_key::screened_list;
use super::watch::NameWatch;

pub fn screened_deduplicate_checked<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    preferring_latest: bool,
    watch: Option<PyRef<'py, NameWatch>>,
    history: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let history = match history {
        None => None,
        Some(history) => match history.cast_exact::<StoredHistory>() {
            Ok(kept) => Some(HistoryArg::Kept(kept.try_borrow()?)),
            Err(_) => {
                return Err(PyTypeError::new_err(format!(
                    "history must be a StoredHistory or None, not {}",
                    history.get_type().name()?
                )))
            }
        },
    };
    let Some(items) = screened_list(py, items, watch)? else {
        return Ok(py.NotImplemented().into_bound(py));
    };
    let names = Names::new(py)?;
    let mut reader = FactReader::new(py)?;
    let mut walked = Vec::with_capacity(items.len());
    // Reading an item that was not walked may run Python code, which could change the
    // items walked before: then none of their facts is used.
    let mut all_walked = true;
    let keys = keyed(&items, |item, builder| {
        let walk = if item.is_exact_instance_of::<PyDict>() {
            // SAFETY: an exact dict, held; its walk is read before any Python code runs:
            // the key of a walked item reads only the walk, and so do its facts.
            unsafe { Walk::of(&item, &names) }
        } else {
            None
        };
        let screened = match &walk {
            Some(walk) => ScreenedItem::walked(&item, walk),
            None => ScreenedItem::of(&item)?,
        };
        let Some(mut screened) = screened else {
            return Ok(None);
        };
        let info = builder.build(&mut screened)?;
        walked.push(match walk {
            // SAFETY: `walk` is a walk of `item`, and only the walk was read since.
            Some(walk) => unsafe { reader.read_walked(item, walk)? },
            None => {
                all_walked = false;
                None
            }
        });
        Ok(Some(info))
    })?;
    let Some((keys, key_count)) = keys else {
        return Ok(py.NotImplemented().into_bound(py));
    };
    let slots = kept_slots(py, &keys, key_count, preferring_latest);
    let kept = items.pick(&slots)?;
    let mut facts = Vec::with_capacity(slots.len());
    for (position, &slot) in slots.iter().enumerate() {
        facts.push(match walked[slot].filter(|_| all_walked) {
            Some(facts) => facts,
            None => reader.read_item(position, kept.get_item(position)?)?,
        });
    }
    let problems = reader.problems(facts, history.as_ref())?;
    Ok(PyTuple::new(py, [kept.into_any(), problems.into_any()])?.into_any())
}
