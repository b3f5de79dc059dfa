//! `prepared_model_input`: orphan pruning, the latest-value dedupe and the repair of what they
//! keep, each item walked once ([`Walk`]) for the facts of all three (a history that is the
//! items' own prefix too); anything else is read as the three functions read it, in turn.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use super::args::{str_tuple, Items};
use super::deepcopy::holds_any;
use super::extract::{
    deduplicated, exact_str_or_missing, is_str, kept_slots, keyed, no_str_subclass,
};
use super::field_scan::{Name, Names, Walk};
use super::input_rules::{repair_input as repair, Dangling, FactReader, HistoryArg, StoredHistory};
use super::orphans;
use super::text::str_bytes;
use crate::core::input_rules::{Class, Facts, Key, Stored};
use crate::core::keys::{Field, ItemFields};
use crate::core::orphans::{ItemFacts, Pruning};
use crate::core::strings::Strings;

pub fn prepared_model_input<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    pruning_indexes: Option<&Bound<'py, PyAny>>,
    output_pruning_indexes: Option<&Bound<'py, PyAny>>,
    history: Option<&Bound<'py, PyAny>>,
    without: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    if let Some(without) = without {
        if !holds_only_plain_dicts(items, &str_tuple(without, "without")?)? {
            return Ok(py.NotImplemented().into_bound(py));
        }
    }
    // As `drop_orphan_function_calls` reads its arguments.
    let items = Items::of(items, "items")?;
    let masks = orphans::Masks::of(pruning_indexes, output_pruning_indexes, items.len())?;
    let pruning = masks.pruning();
    if let Some(kept) = fused_kept(&items, &pruning, history)? {
        return Ok(items.pick(&kept)?.into_any());
    }
    let pruned = items.pick(&orphans::kept(&items, &pruning)?)?;
    let deduplicated = deduplicated(&Items::of(pruned.as_any(), "items")?, true)?;
    Ok(repair(deduplicated.as_any(), history, Dangling::Default)?.into_any())
}

/// Whether `items` is an exact list of exact dicts none of which holds one of `keys`.
fn holds_only_plain_dicts(
    items: &Bound<'_, PyAny>,
    keys: &[Bound<'_, PyString>],
) -> PyResult<bool> {
    if !items.is_exact_instance_of::<PyList>() {
        return Ok(false);
    }
    let items = Items::of(items, "items")?;
    for index in 0..items.len() {
        let item = items.get(index)?;
        let Ok(item) = item.cast_exact::<PyDict>() else {
            return Ok(false);
        };
        if holds_any(item, keys)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// How the stored history is read, given before the items are walked.
enum History<'py> {
    None,
    Kept(HistoryArg<'py>),
    /// An exact list holding the first `len` items themselves: read from their walks.
    Prefix(usize),
    /// Another exact list: each of its items walked.
    List(Items<'py>),
}

/// The positions kept, read in one walk per item; None where that walk cannot give what the
/// three functions read (an item not an exact dict of exact str keys, a `caller`, a value a screen
/// refuses, a history neither a `StoredHistory` nor an exact list of such). Runs no Python code.
fn fused_kept(
    items: &Items<'_>,
    pruning: &Pruning<'_>,
    history: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Vec<usize>>> {
    let py = items.py();
    let history = match history {
        None => History::None,
        Some(value) => match value.cast_exact::<StoredHistory>() {
            Ok(kept) => History::Kept(HistoryArg::Kept(kept.try_borrow()?)),
            Err(_) if value.is_exact_instance_of::<PyList>() => {
                let list = Items::of(value, "history")?;
                match prefix_length(items, &list)? {
                    Some(length) => History::Prefix(length),
                    None => History::List(list),
                }
            }
            Err(_) => return Ok(None),
        },
    };
    let names = Names::new(py)?;
    let mut reader = FactReader::new(py)?;
    let mut stored = Stored::default();
    let mut ids = Strings::reuse();
    let mut pruned_facts: Vec<Option<ItemFacts>> = Vec::with_capacity(items.len());
    let mut facts: Vec<Facts> = Vec::with_capacity(items.len());
    let prefix = match history {
        History::Prefix(length) => length,
        _ => 0,
    };
    let mut position = 0;
    let keys = keyed(items, |item, builder| {
        let Some(walk) = walk(&item, &names) else {
            return Ok(None);
        };
        let Some(mut key_fields) = WalkedKey::screened(py, &walk) else {
            return Ok(None);
        };
        let info = builder.build(&mut key_fields)?;
        let Some(orphan) = orphans::walked_facts(py, &walk, &mut ids)? else {
            return Ok(None);
        };
        // SAFETY: `walk` is a walk of `item`, and only the walk was read since.
        let Some(item_facts) = (unsafe { reader.read_walked(item.clone(), walk)? }) else {
            return Ok(None);
        };
        if position < prefix {
            // Rules (e) and (f) read a stored item's type, role and id, which its facts hold:
            // a reasoning item is of class Reasoning, its id the same string.
            stored.push(
                item_facts.class == Class::Reasoning,
                item_facts.id.map(Key::index),
            );
        }
        pruned_facts.push(Some(orphan));
        facts.push(item_facts);
        position += 1;
        Ok(Some(info))
    })?;
    let Some((keys, key_count)) = keys else {
        ids.recycle();
        return Ok(None);
    };
    let stored = match &history {
        History::None => None,
        History::Kept(kept) => Some(reader.stored(kept)?),
        History::Prefix(_) => Some(stored),
        History::List(list) => {
            let mut stored = Stored::default();
            for index in 0..list.len() {
                let item = list.get(index)?;
                let Some(walk) = walk(&item, &names) else {
                    ids.recycle();
                    return Ok(None);
                };
                // SAFETY: `walk` was just taken of `item`.
                unsafe { reader.read_stored_walked(&mut stored, &item, walk)? };
            }
            Some(stored)
        }
    };
    // The three passes over the facts read: each keeps positions of what the one before kept.
    let pruned = orphans::decide(py, pruned_facts, ids, pruning);
    let pruned_keys: Vec<_> = pruned.iter().map(|&position| keys[position]).collect();
    let deduplicated: Vec<usize> = kept_slots(py, &pruned_keys, key_count, true)
        .into_iter()
        .map(|slot| pruned[slot])
        .collect();
    let kept_facts = deduplicated
        .iter()
        .map(|&position| facts[position])
        .collect();
    let size = deduplicated.len() + history_len(&history);
    let repaired = reader.repaired(kept_facts, stored, size)?;
    Ok(Some(
        repaired
            .into_iter()
            .map(|slot| deduplicated[slot])
            .collect(),
    ))
}

/// The walk of `item` when it is an exact dict of exact str keys (and not too many).
fn walk(item: &Bound<'_, PyAny>, names: &Names<'_>) -> Option<Walk> {
    if !item.is_exact_instance_of::<PyDict>() {
        return None;
    }
    // SAFETY: an exact dict, held by the list read; the walk is used before any Python code
    // runs (nothing in `fused_kept` runs any).
    unsafe { Walk::of(item, names) }
}

/// `history.len()` when `history` holds the very first items of `items`, else None.
fn prefix_length(items: &Items<'_>, history: &Items<'_>) -> PyResult<Option<usize>> {
    if history.len() > items.len() {
        return Ok(None);
    }
    for index in 0..history.len() {
        if !history.get(index)?.is(&items.get(index)?) {
            return Ok(None);
        }
    }
    Ok(Some(history.len()))
}

fn history_len(history: &History<'_>) -> usize {
    match history {
        History::None => 0,
        History::Kept(kept) => kept.len(),
        History::Prefix(length) => *length,
        History::List(list) => list.len(),
    }
}

/// The fields of a dedupe key from the walk of an exact dict passing the screen of
/// [`ScreenedItem`](super::extract::ScreenedItem) (its key `dedupe_key`'s), taking no reference.
struct WalkedKey<'a, 'py> {
    py: Python<'py>,
    walk: &'a Walk,
}

impl<'a, 'py> WalkedKey<'a, 'py> {
    fn screened(py: Python<'py>, walk: &'a Walk) -> Option<Self> {
        let field = |name| walk.get(py, name);
        let passes = exact_str_or_missing(field(Name::Type).as_deref())
            && exact_str_or_missing(field(Name::Id).as_deref())
            && no_str_subclass(field(Name::CallId).as_deref())
            && no_str_subclass(field(Name::ApprovalRequestId).as_deref());
        passes.then_some(WalkedKey { py, walk })
    }
}

impl ItemFields for WalkedKey<'_, '_> {
    type Error = PyErr;

    fn has_role(&mut self) -> PyResult<bool> {
        Ok(self.walk.get(self.py, Name::Role).is_some())
    }

    fn kind(&mut self, text: &mut Vec<u8>) -> PyResult<bool> {
        text.clear();
        if let Some(kind) = self.walk.get(self.py, Name::Type) {
            text.extend_from_slice(str_bytes(&kind)?.as_bytes());
        }
        if text.is_empty() {
            text.extend_from_slice(b"None");
            return Ok(false);
        }
        Ok(true)
    }

    fn str_field(&mut self, field: Field, text: &mut Vec<u8>) -> PyResult<bool> {
        text.clear();
        let name = match field {
            Field::CallId => Name::CallId,
            Field::Id => Name::Id,
            Field::ApprovalRequestId => Name::ApprovalRequestId,
        };
        match self.walk.get(self.py, name) {
            Some(value) if is_str(&value) => {
                text.extend_from_slice(str_bytes(&value)?.as_bytes());
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}
