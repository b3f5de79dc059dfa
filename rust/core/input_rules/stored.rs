//! Rules (e) and (f) from a stored history: [`Stored`], [`KeptStored`] and [`Required`].

use super::facts::ID_KEY;
use super::*;
use crate::core::keys::FAKE_ID;
use crate::core::strings::Strings;

/// Reads what rules (e) and (f) need of one stored item, in the order the pure twin's
/// `StoredHistory` reads it: its `id` (as [`ItemReader::id`]) only next to a reasoning item.
pub trait StoredReader {
    type Error;
    /// Whether the item's `type` is the str `"reasoning"` and it has no `role`.
    fn is_reasoning(&mut self) -> Result<bool, Self::Error>;
    fn id(&mut self, out: &mut Vec<u8>) -> Result<bool, Self::Error>;
}

/// One item stored directly after a reasoning item: their ids (string push indexes
/// until [`Required::of`]), and whether the item is a reasoning item too.
#[derive(Clone, Copy)]
struct Pair {
    item: u32,
    reasoning: u32,
    item_is_reasoning: bool,
}

/// Rules (e) and (f) read from a stored history, item by item: each item stored
/// directly after a reasoning item, with that item's id.
#[derive(Default)]
pub struct Stored {
    pairs: Vec<Pair>,
    /// The id of the item read last, when it is a reasoning item.
    before: Option<u32>,
}

impl Stored {
    /// Read the next stored item (`None` for an item that is not a dict).
    pub fn read<R: StoredReader>(
        &mut self,
        item: Option<&mut R>,
        strings: &mut Strings,
        key: &mut Vec<u8>,
    ) -> Result<(), R::Error> {
        let Some(reader) = item else {
            self.push(false, None);
            return Ok(());
        };
        let reasoning = reader.is_reasoning()?;
        let mut id = None;
        if reasoning || self.before.is_some() {
            key.clear();
            key.push(ID_KEY);
            if reader.id(key)? && key_text(key) != FAKE_ID {
                id = Some(strings.push(key));
            }
        }
        self.push(reasoning, id);
        Ok(())
    }

    /// The next stored item: whether it is a reasoning item, and its id.
    pub fn push(&mut self, reasoning: bool, id: Option<u32>) {
        if let (Some(before), Some(id)) = (self.before, id) {
            self.pairs.push(Pair {
                item: id,
                reasoning: before,
                item_is_reasoning: reasoning,
            });
        }
        self.before = id.filter(|_| reasoning);
    }
}

/// A history's [`Stored`], read once and kept as it grows (the binding's `StoredHistory`), over
/// strings of its own: a check copies in only its pairs' strings, not every stored item.
#[derive(Default)]
pub struct KeptStored {
    stored: Stored,
    strings: Strings,
    count: usize,
}

impl KeptStored {
    /// As [`Stored::read`]; an error leaves this as it was.
    pub fn read<R: StoredReader>(
        &mut self,
        item: Option<&mut R>,
        key: &mut Vec<u8>,
    ) -> Result<(), R::Error> {
        self.stored.read(item, &mut self.strings, key)?;
        self.count += 1;
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The [`Stored`] of the items read, its strings pushed to `strings` in pair order.
    pub fn copy_into(&self, strings: &mut Strings) -> Stored {
        let own = &self.strings;
        let pairs = self
            .stored
            .pairs
            .iter()
            .map(|pair| Pair {
                item: strings.push(own.get(pair.item)),
                reasoning: strings.push(own.get(pair.reasoning)),
                item_is_reasoning: pair.item_is_reasoning,
            })
            .collect();
        Stored {
            pairs,
            before: None,
        }
    }
}

/// Rules (e) and (f) from the stored history (the pure twin's `StoredHistory` maps),
/// indexed by string id; both empty when no pair was stored.
#[derive(Default)]
pub struct Required {
    /// Rule (e): the reasoning item stored directly before an item (`NONE`: not required).
    pub(super) before: Vec<u32>,
    /// Rule (f): the item stored directly after a reasoning item (`NONE`: not known).
    after: Vec<u32>,
}

impl Required {
    /// What `stored` requires, its push indexes numbered by `ids` (string ids below
    /// `id_count`); a later pair of one id wins, as the twin's dicts do.
    pub fn of(stored: &Stored, ids: &[u32], id_count: usize) -> Self {
        if stored.pairs.is_empty() {
            return Required::default();
        }
        let mut before = vec![NONE; id_count];
        let mut after = vec![NONE; id_count];
        for pair in &stored.pairs {
            let (item, reasoning) = (ids[pair.item as usize], ids[pair.reasoning as usize]);
            if !pair.item_is_reasoning {
                before[item as usize] = reasoning;
            }
            after[reasoning as usize] = item;
        }
        Required { before, after }
    }

    /// Nothing is known (no history, or no item stored after a reasoning item).
    pub fn is_empty(&self) -> bool {
        self.before.is_empty()
    }

    pub(super) fn of_id(&self, id: u32) -> Option<u32> {
        let needed = *self.before.get(id as usize)?;
        (needed != NONE).then_some(needed)
    }

    /// The id of the item stored directly after the reasoning item `id`, if known.
    pub(super) fn successor_of(&self, id: u32) -> Option<u32> {
        let successor = *self.after.get(id as usize)?;
        (successor != NONE).then_some(successor)
    }
}
