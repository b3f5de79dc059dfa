//! The model-input rules (docs/design.md, "Model input the API accepts") over per-item
//! facts: the problems of a list of items ([`Checker::problems`]) and its repair
//! ([`repair`]), the rules of `input_problems` and `repair_input`.
//!
//! The binding reads each item once into a [`Facts`] through an [`ItemReader`] (see
//! [`read`]), and a stored history's items into what rules (e) and (f) need (see [`Stored`]),
//! their strings pushed to a [`Strings`] and then numbered (see [`number`]); everything here is plain Rust and linear in the number of items.

use std::num::NonZeroU32;

use super::keys::{CallFamily, ItemType, FAKE_ID};
use super::strings::Strings;

/// What the rules make of an item (the pure twin's `_OTHER` ... `_PRODUCED`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Class {
    /// Not a dict, or none of the below: an item without a str `type`, a tool output
    /// without a str `call_id`, an `mcp_approval_response` or an `item_reference`.
    #[default]
    Other,
    /// A `reasoning` item without a role.
    Reasoning,
    /// One of the eight call types with a str `call_id` and no role.
    Call,
    /// One of the eight output types with a str `call_id` and no role.
    Output,
    /// An item whose role is `user`, `system` or `developer`.
    User,
    /// Any other item a model emits: another role, or another typed item.
    Produced,
}

/// What an item's `type` string says, as far as these rules care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeClass {
    Reasoning,
    Call(CallFamily),
    Output(CallFamily),
    /// A type the user side supplies: `mcp_approval_response`, `item_reference`.
    NotProduced,
    Produced,
}

impl TypeClass {
    /// Classify a `type` string (Python text bytes).
    pub fn of(kind: &[u8]) -> Self {
        match ItemType::of(kind) {
            ItemType::Reasoning => Self::Reasoning,
            ItemType::Call(family) => Self::Call(family),
            ItemType::Output(family) => Self::Output(family),
            _ if kind == b"mcp_approval_response" || kind == b"item_reference" => Self::NotProduced,
            _ => Self::Produced,
        }
    }
}

/// A string in the facts: its push index until [`number`], then its string id. Stored
/// plus one, so that an absent string costs no room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key(NonZeroU32);

impl Key {
    pub fn new(index: u32) -> Self {
        Key(NonZeroU32::MIN.saturating_add(index))
    }

    pub fn index(self) -> u32 {
        self.0.get() - 1
    }
}

/// The facts of one item (16 bytes). Strings are [`Key`]s: after [`number`], equal
/// strings have equal ids, all below the `id_count` given to the rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    pub class: Class,
    /// A call of type `program`.
    pub program: bool,
    /// A `shell_call` whose status is missing, None or `"in_progress"`.
    pub pending_hosted: bool,
    /// Calls and outputs: the pair key (the call family and the `call_id`).
    pub pair: Option<Key>,
    /// The str `id`, unless it is the placeholder `__fake_id__`.
    pub id: Option<Key>,
    /// `caller["caller_id"]` when `caller` is a dict whose type is `"program"` and whose
    /// `caller_id` is a str, keyed like the pair key of that program's call.
    pub caller: Option<Key>,
}

impl Facts {
    pub fn pair(&self) -> Option<u32> {
        self.pair.map(Key::index)
    }

    pub fn id(&self) -> Option<u32> {
        self.id.map(Key::index)
    }

    pub fn caller(&self) -> Option<u32> {
        self.caller.map(Key::index)
    }
}

/// The first byte of an item id's key: after the call families' bytes (0 to 7), so an id
/// never equals a pair key.
const ID_KEY: u8 = 8;

/// The text a key was made from (a call id or an item id, without the key's first byte).
pub fn key_text(key: &[u8]) -> &[u8] {
    &key[1..]
}

/// Reads the fields of one dict item in the order the pure twin's `_Facts._read` reads
/// them; text is appended to the buffer given.
pub trait ItemReader {
    type Error;
    /// What the item's `type` is when it is a str (`None` for anything else).
    fn kind(&mut self) -> Result<Option<TypeClass>, Self::Error>;
    /// `None` when the item's `role` is missing or None; otherwise whether it is a str
    /// naming the user side (`user`, `system`, `developer`).
    fn role(&mut self) -> Result<Option<bool>, Self::Error>;
    /// Append the text of `id` to `out` when it is a str.
    fn id(&mut self, out: &mut Vec<u8>) -> Result<bool, Self::Error>;
    /// Append the text of `caller["caller_id"]` to `out` when `caller` is a dict whose
    /// `type` equals `"program"` and whose `caller_id` is a str.
    fn program_caller(&mut self, out: &mut Vec<u8>) -> Result<bool, Self::Error>;
    /// Append the text of `call_id` to `out` when it is a str.
    fn call_id(&mut self, out: &mut Vec<u8>) -> Result<bool, Self::Error>;
    /// Read the `status` of a call; for a `shell_call` (`shell`), whether it is missing,
    /// None or equal to `"in_progress"` (always false otherwise).
    fn pending(&mut self, shell: bool) -> Result<bool, Self::Error>;
}

/// The facts of one dict item, its strings pushed to `strings` (the facts hold their push
/// indexes until [`number`]); `key` is scratch space.
pub fn read<R: ItemReader>(
    reader: &mut R,
    strings: &mut Strings,
    key: &mut Vec<u8>,
) -> Result<Facts, R::Error> {
    let kind = reader.kind()?;
    let role = reader.role()?;
    let mut facts = Facts::default();
    key.clear();
    key.push(ID_KEY);
    if reader.id(key)? && key_text(key) != FAKE_ID {
        facts.id = Some(Key::new(strings.push(key)));
    }
    let push = |key: &[u8], strings: &mut Strings| Some(Key::new(strings.push(key)));
    key.clear();
    key.push(CallFamily::Program as u8);
    if reader.program_caller(key)? {
        facts.caller = push(key, strings);
    }
    if let Some(user_side) = role {
        facts.class = if user_side {
            Class::User
        } else {
            Class::Produced
        };
        return Ok(facts);
    }
    key.clear();
    key.push(0);
    let has_call_id = reader.call_id(key)?;
    facts.class = match kind {
        None | Some(TypeClass::NotProduced) => Class::Other,
        Some(TypeClass::Reasoning) => Class::Reasoning,
        Some(TypeClass::Call(family)) if has_call_id => {
            key[0] = family as u8;
            facts.pair = push(key, strings);
            facts.program = family == CallFamily::Program;
            facts.pending_hosted = reader.pending(family == CallFamily::Shell)?;
            Class::Call
        }
        Some(TypeClass::Output(family)) if has_call_id => {
            key[0] = family as u8;
            facts.pair = push(key, strings);
            Class::Output
        }
        Some(TypeClass::Output(_)) => Class::Other,
        Some(TypeClass::Call(_) | TypeClass::Produced) => Class::Produced,
    };
    Ok(facts)
}

/// Replace the push indexes in `facts` by the string ids `ids` gives them
/// ([`Strings::number`]).
pub fn number(facts: &mut [Facts], ids: &[u32]) {
    let id = |key: Option<Key>| key.map(|key| Key::new(ids[key.index() as usize]));
    for facts in facts {
        facts.pair = id(facts.pair);
        facts.id = id(facts.id);
        facts.caller = id(facts.caller);
    }
}

/// A position as u32 (the rules index items with u32).
fn at(position: usize) -> u32 {
    u32::try_from(position).expect("fewer than 2^32 items")
}

/// Reads what rules (e) and (f) need of one stored item, in the order the pure twin's
/// `StoredHistory` reads it: its `id` only next to a reasoning item.
pub trait StoredReader {
    type Error;
    /// Whether the item's `type` is the str `"reasoning"` and it has no `role`.
    fn is_reasoning(&mut self) -> Result<bool, Self::Error>;
    /// Append the text of `id` to `out` when it is a str.
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

/// Rules (e) and (f) of a stored history read once and kept (the binding's `StoredHistory`): a
/// [`Stored`] over strings of its own, extended item by item as the history grows. Each
/// check copies in only the strings of its pairs, instead of reading every stored item.
#[derive(Default)]
pub struct KeptStored {
    stored: Stored,
    strings: Strings,
    count: usize,
}

impl KeptStored {
    /// Read the next stored item (`None` for an item that is not a dict); an error leaves
    /// this as it was.
    pub fn read<R: StoredReader>(
        &mut self,
        item: Option<&mut R>,
        key: &mut Vec<u8>,
    ) -> Result<(), R::Error> {
        self.stored.read(item, &mut self.strings, key)?;
        self.count += 1;
        Ok(())
    }

    /// How many stored items were read.
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

const NONE: u32 = u32::MAX;

/// Rules (e) and (f) from the stored history (the pure twin's `StoredHistory` maps).
#[derive(Default)]
pub struct Required {
    /// Rule (e), indexed by item id: the id of the reasoning item stored directly before
    /// it; `NONE` where nothing is required. Empty when no pair was stored.
    before: Vec<u32>,
    /// Rule (f), indexed by reasoning item id: the id of the item stored directly after
    /// it; `NONE` where the history does not know it. Empty when no pair was stored.
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

    fn of_id(&self, id: u32) -> Option<u32> {
        let needed = *self.before.get(id as usize)?;
        (needed != NONE).then_some(needed)
    }

    /// The id of the item stored directly after the reasoning item `id`, if known.
    fn successor_of(&self, id: u32) -> Option<u32> {
        let successor = *self.after.get(id as usize)?;
        (successor != NONE).then_some(successor)
    }
}

/// Every kind of problem, in the pure twin's wording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    OutputWithoutCall,
    CallWithoutOutput,
    CallAwaitingOutput,
    DuplicateId,
    ReasoningWithoutItem,
    ItemWithoutReasoning,
    ReasoningWithoutSuccessor,
}

impl Kind {
    /// The kind as `input_problems` names it.
    pub fn name(self) -> &'static str {
        match self {
            Self::OutputWithoutCall => "output_without_call",
            Self::CallWithoutOutput => "call_without_output",
            Self::CallAwaitingOutput => "call_awaiting_output",
            Self::DuplicateId => "duplicate_id",
            Self::ReasoningWithoutItem => "reasoning_without_item",
            Self::ItemWithoutReasoning => "item_without_reasoning",
            Self::ReasoningWithoutSuccessor => "reasoning_without_successor",
        }
    }
}

/// One broken rule: where, which, and the string id of the `call_id` or item id
/// concerned (None for a reasoning item without an id).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Problem {
    pub position: usize,
    pub kind: Kind,
    pub detail: Option<u32>,
}

/// Per pair key: its first call and last output; per program (keyed like its call's
/// pair): the last item it issued. `last_*` hold a position + 1 (0 for none).
#[derive(Clone, Copy)]
struct Slot {
    first_call: u32,
    last_output: u32,
    last_issued: u32,
}

/// The problem checks over the facts of one list of items.
pub struct Checker<'a> {
    items: &'a [Facts],
    required: &'a Required,
    slots: Vec<Slot>,
}

impl<'a> Checker<'a> {
    /// The checker of `items` (string ids below `id_count`), with rules (e) and (f) from
    /// `required`.
    pub fn new(items: &'a [Facts], required: &'a Required, id_count: usize) -> Self {
        let empty = Slot {
            first_call: NONE,
            last_output: 0,
            last_issued: 0,
        };
        let mut slots = vec![empty; id_count];
        for (position, facts) in items.iter().enumerate() {
            let position = at(position);
            if let Some(pair) = facts.pair() {
                let slot = &mut slots[pair as usize];
                if facts.class == Class::Call {
                    slot.first_call = slot.first_call.min(position);
                } else {
                    slot.last_output = position + 1;
                }
            }
            if let Some(caller) = facts.caller() {
                slots[caller as usize].last_issued = position + 1;
            }
        }
        Checker {
            items,
            required,
            slots,
        }
    }

    fn slot(&self, facts: &Facts) -> Slot {
        self.slots[facts.pair().expect("calls and outputs have a pair") as usize]
    }

    /// A call that has no output after it.
    fn is_late(&self, position: u32, facts: &Facts) -> bool {
        self.slot(facts).last_output <= position
    }

    /// A call that may stand without an output: a program that issued a later item, or
    /// a pending hosted shell call issued by a program (the pure twin's `_exempt_calls`).
    fn is_exempt(&self, position: u32, facts: &Facts) -> bool {
        (facts.program && self.slot(facts).last_issued > position + 1)
            || (facts.caller.is_some() && facts.pending_hosted)
    }

    /// Rules (a) and (b) at a call or an output.
    fn pair_problem(&self, position: u32, facts: &Facts, trailing: u32) -> Option<Kind> {
        match facts.class {
            Class::Output if self.slot(facts).first_call >= position => {
                Some(Kind::OutputWithoutCall)
            }
            Class::Call if self.is_late(position, facts) && !self.is_exempt(position, facts) => {
                Some(if position >= trailing {
                    Kind::CallAwaitingOutput
                } else {
                    Kind::CallWithoutOutput
                })
            }
            _ => None,
        }
    }

    /// Rule (e) at `position`, whose item comes after `previous` (None at the start).
    fn lacks_reasoning(&self, facts: &Facts, previous: Option<&Facts>) -> bool {
        let Some(id) = facts.id() else {
            return false;
        };
        if facts.class == Class::Reasoning {
            return false;
        }
        let Some(needed) = self.required.of_id(id) else {
            return false;
        };
        previous.is_none_or(|previous| {
            previous.class != Class::Reasoning || previous.id() != Some(needed)
        })
    }

    /// Rule (f) at the reasoning item at `position`: it is not directly followed by the
    /// item stored after it; where the history does not know that item (no history, no
    /// id, stored last), it is directly followed by another reasoning item.
    fn lost_successor(&self, position: usize) -> bool {
        let next = self.items.get(position + 1);
        let known = self.items[position]
            .id()
            .and_then(|id| self.required.successor_of(id));
        match known {
            Some(successor) => next.is_none_or(|next| next.id() != Some(successor)),
            None => next.is_some_and(|next| next.class == Class::Reasoning),
        }
    }

    /// Start of the trailing run of calls and reasoning (calls there await approval).
    fn trailing_start(&self) -> u32 {
        let tail = self
            .items
            .iter()
            .rev()
            .take_while(|facts| matches!(facts.class, Class::Call | Class::Reasoning))
            .count();
        at(self.items.len() - tail)
    }

    /// Whether the reasoning run starting at `start` is directly followed by a produced
    /// item, and where it ends.
    fn run_verdict(&self, start: usize) -> (bool, usize) {
        let mut end = start;
        while end < self.items.len() && self.items[end].class == Class::Reasoning {
            end += 1;
        }
        let followed = self
            .items
            .get(end)
            .is_some_and(|facts| matches!(facts.class, Class::Call | Class::Produced));
        (followed, end)
    }

    /// Every problem, sorted by position, then rule.
    pub fn problems(&self) -> Vec<Problem> {
        let trailing = self.trailing_start();
        let mut seen = vec![false; self.slots.len()];
        let mut found = Vec::new();
        let (mut run_followed, mut run_end) = (true, 0);
        for (position, facts) in self.items.iter().enumerate() {
            let mut report = |kind, detail| {
                found.push(Problem {
                    position,
                    kind,
                    detail,
                });
            };
            if facts.pair.is_some() {
                if let Some(kind) = self.pair_problem(at(position), facts, trailing) {
                    report(kind, facts.pair());
                }
            }
            if let Some(id) = facts.id() {
                if std::mem::replace(&mut seen[id as usize], true) {
                    report(Kind::DuplicateId, facts.id());
                }
            }
            if facts.class == Class::Reasoning {
                if position >= run_end {
                    (run_followed, run_end) = self.run_verdict(position);
                }
                if !run_followed {
                    report(Kind::ReasoningWithoutItem, facts.id());
                }
            }
            if !self.required.is_empty() {
                let previous = position.checked_sub(1).map(|before| &self.items[before]);
                if self.lacks_reasoning(facts, previous) {
                    report(Kind::ItemWithoutReasoning, facts.id());
                }
            }
            if facts.class == Class::Reasoning && self.lost_successor(position) {
                report(Kind::ReasoningWithoutSuccessor, facts.id());
            }
        }
        found
    }
}

/// A union-find forest over positions (path halving; the smaller position is the root).
struct Forest(Vec<u32>);

impl Forest {
    fn find(&mut self, mut position: u32) -> u32 {
        let parent = &mut self.0;
        while parent[position as usize] != position {
            let grandparent = parent[parent[position as usize] as usize];
            parent[position as usize] = grandparent;
            position = grandparent;
        }
        position
    }

    fn union(&mut self, first: u32, second: u32) {
        let (first, second) = (self.find(first), self.find(second));
        if first != second {
            self.0[first.max(second) as usize] = first.min(second);
        }
    }
}

/// Positions grouped by a key below a bound, ascending within each group.
struct Groups {
    /// Group `g` is `positions[start[g]..start[g + 1]]`.
    start: Vec<u32>,
    positions: Vec<u32>,
}

impl Groups {
    /// Group `entries` (`(group, position)`, positions ascending) by group.
    fn new(groups: usize, entries: impl Iterator<Item = (u32, u32)> + Clone) -> Self {
        let mut start = vec![0u32; groups + 1];
        for (group, _) in entries.clone() {
            start[group as usize + 1] += 1;
        }
        for group in 0..groups {
            start[group + 1] += start[group];
        }
        let mut next = start.clone();
        let mut positions = vec![0; start[groups] as usize];
        for (group, position) in entries {
            let slot = &mut next[group as usize];
            positions[*slot as usize] = position;
            *slot += 1;
        }
        Groups { start, positions }
    }

    fn get(&self, group: u32) -> &[u32] {
        let group = group as usize;
        &self.positions[self.start[group] as usize..self.start[group + 1] as usize]
    }
}

impl Checker<'_> {
    /// The root of every position's unit: a reasoning run with the item it produced (a
    /// reasoning item that breaks rule (f) not joined to the item after it), a call with
    /// the outputs of its pair (the pure twin's `_units`).
    fn unit_roots(&self) -> Vec<u32> {
        let length = at(self.items.len());
        let mut forest = Forest((0..length).collect());
        for (position, pair) in self.items.windows(2).enumerate() {
            let produced = matches!(
                pair[1].class,
                Class::Reasoning | Class::Call | Class::Produced
            );
            if pair[0].class == Class::Reasoning && produced && !self.lost_successor(position) {
                forest.union(at(position), at(position + 1));
            }
        }
        let mut anchors = vec![NONE; self.slots.len()];
        for (position, facts) in self.items.iter().enumerate() {
            let (position, Some(pair)) = (at(position), facts.pair()) else {
                continue;
            };
            let slot = self.slots[pair as usize];
            if slot.first_call > position || slot.last_output <= position {
                continue; // an output before every call, or a call after every output
            }
            match &mut anchors[pair as usize] {
                anchor if *anchor == NONE => *anchor = position,
                anchor => forest.union(*anchor, position),
            }
        }
        (0..length).map(|position| forest.find(position)).collect()
    }
}

/// Positions of the items `repair_input` keeps, in order: `items` without the units that
/// hold a problem (user messages are never dropped), until no fixable problem is left.
///
/// The pure twin checks the whole list again after each round of drops. Here round one
/// is the same, and the later rounds are followed incrementally, so that a chain of
/// rounds stays linear. That is exact because units are kept or dropped whole: a kept
/// reasoning item keeps the item after it (it broke neither (d) nor (f), so it is joined
/// to it), a kept pair keeps its first call and last output, so rules (a), (c), (d) and
/// (f) never break anew and the units of the kept items do not change. Two rules can: (e), at an item whose reasoning went in round one (only
/// then: a kept reasoning item keeps its unit), and (b), at a program call whose issued
/// items all went (followed per program until no call loses its exemption).
pub fn repair(items: &[Facts], required: &Required, id_count: usize) -> Vec<usize> {
    let checker = Checker::new(items, required, id_count);
    let fixable: Vec<usize> = checker
        .problems()
        .iter()
        .map(|problem| problem.position)
        .filter(|&position| items[position].class != Class::User)
        .collect();
    if fixable.is_empty() {
        return (0..items.len()).collect();
    }
    let roots = checker.unit_roots();
    let mut broken = vec![false; items.len()];
    for position in fixable {
        broken[roots[position] as usize] = true;
    }
    let mut dropped: Vec<bool> = items
        .iter()
        .zip(&roots)
        .map(|(facts, &root)| facts.class != Class::User && broken[root as usize])
        .collect();
    let second_round = second_round_problems(&checker, &dropped);
    Cascade::new(&checker, &roots, &dropped).run(second_round, &mut dropped);
    (0..items.len())
        .filter(|&position| !dropped[position])
        .collect()
}

/// Positions breaking rule (e) once the first round's drops are made (`dropped`). Only
/// an item whose predecessor went can break it anew: the others kept the item before
/// them, and had no fixable problem.
fn second_round_problems(checker: &Checker<'_>, dropped: &[bool]) -> Vec<u32> {
    let mut found = Vec::new();
    if checker.required.is_empty() {
        return found;
    }
    let mut previous = None;
    for (position, facts) in checker.items.iter().enumerate() {
        if dropped[position] {
            continue;
        }
        let moved = position > 0 && dropped[position - 1];
        if moved && facts.class != Class::User && checker.lacks_reasoning(facts, previous) {
            found.push(at(position));
        }
        previous = Some(facts);
    }
    found
}

/// The rounds after the first: dropping units whose problems earlier drops uncovered.
struct Cascade<'c, 'a> {
    checker: &'c Checker<'a>,
    roots: &'c [u32],
    /// Program pair key -> its group in `issued` and `calls` (`NONE` for others).
    group: Vec<u32>,
    /// Per program: positions of the items it issued, then of its kept calls with no
    /// output after them (each exempt while the program issued a later item).
    issued: Groups,
    calls: Groups,
    /// Unit roots -> members, made when a unit is first dropped here.
    members: Option<Groups>,
}

impl<'c, 'a> Cascade<'c, 'a> {
    fn new(checker: &'c Checker<'a>, roots: &'c [u32], dropped: &[bool]) -> Self {
        let items = checker.items;
        let mut group = Vec::new();
        let mut groups = 0;
        for (position, facts) in items.iter().enumerate() {
            if facts.program && !dropped[position] && checker.is_late(at(position), facts) {
                if group.is_empty() {
                    group = vec![NONE; checker.slots.len()];
                }
                let pair = facts.pair().expect("a call has a pair") as usize;
                if group[pair] == NONE {
                    group[pair] = groups;
                    groups += 1;
                }
            }
        }
        if groups == 0 {
            // No program to follow (the common case): skip the scans below.
            let none = || Groups::new(0, std::iter::empty());
            return Cascade {
                checker,
                roots,
                group,
                issued: none(),
                calls: none(),
                members: None,
            };
        }
        let group_of = |key: Option<u32>| key.and_then(|key| group.get(key as usize).copied());
        let in_group = |key: Option<u32>| group_of(key).filter(|&group| group != NONE);
        let positions = items
            .iter()
            .enumerate()
            .map(|(position, facts)| (at(position), facts));
        let issued = positions
            .clone()
            .filter_map(|(position, facts)| Some((in_group(facts.caller())?, position)));
        let calls = positions.filter_map(|(position, facts)| {
            let late =
                facts.program && !dropped[position as usize] && checker.is_late(position, facts);
            Some((in_group(facts.pair()).filter(|_| late)?, position))
        });
        let (issued, calls) = (
            Groups::new(groups as usize, issued),
            Groups::new(groups as usize, calls),
        );
        Cascade {
            checker,
            roots,
            group,
            issued,
            calls,
            members: None,
        }
    }

    /// Drop the units of `second_round` (rule (e) problems), then every program call that
    /// loses its exemption, with its unit, until none does.
    fn run(mut self, second_round: Vec<u32>, dropped: &mut [bool]) {
        let mut dirty = Vec::new();
        for position in second_round {
            self.drop_unit(position, dropped, &mut dirty);
        }
        let groups = self.calls.start.len() - 1;
        // Per program, how much of `issued` / `calls` may still matter (from the back).
        let mut issued_end: Vec<u32> = self.issued.start[1..].to_vec();
        let mut calls_end: Vec<u32> = self.calls.start[1..].to_vec();
        dirty.extend(0..at(groups));
        while let Some(group) = dirty.pop() {
            let group = group as usize;
            let (issued_start, calls_start) = (self.issued.start[group], self.calls.start[group]);
            while issued_end[group] > issued_start
                && dropped[self.issued.positions[issued_end[group] as usize - 1] as usize]
            {
                issued_end[group] -= 1;
            }
            let last_issued = if issued_end[group] > issued_start {
                self.issued.positions[issued_end[group] as usize - 1] + 1
            } else {
                0
            };
            while calls_end[group] > calls_start {
                let call = self.calls.positions[calls_end[group] as usize - 1];
                if last_issued > call + 1 {
                    break; // still exempt, and so are the calls before it
                }
                calls_end[group] -= 1;
                if !dropped[call as usize] {
                    self.drop_unit(call, dropped, &mut dirty);
                }
            }
        }
    }

    /// Drop the unit of `position` (user messages excepted); the programs that issued a
    /// dropped item go to `dirty`.
    fn drop_unit(&mut self, position: u32, dropped: &mut [bool], dirty: &mut Vec<u32>) {
        let roots = self.roots;
        let members = self.members.get_or_insert_with(|| {
            let entries = roots.iter().enumerate();
            Groups::new(
                roots.len(),
                entries.map(|(position, &root)| (root, at(position))),
            )
        });
        for &member in members.get(roots[position as usize]) {
            let facts = &self.checker.items[member as usize];
            if dropped[member as usize] || facts.class == Class::User {
                continue;
            }
            dropped[member as usize] = true;
            if let Some(&group) = facts
                .caller()
                .and_then(|caller| self.group.get(caller as usize))
            {
                if group != NONE {
                    dirty.push(group);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // String ids of the tests: pair keys 0-3 are programs, 4-5 functions, 6 a shell call;
    // 7 and up are item ids.
    const ID_COUNT: usize = 16;
    const SHELL: u32 = 6;

    fn item(class: Class) -> Facts {
        Facts {
            class,
            ..Facts::default()
        }
    }

    fn with_id(class: Class, id: u32) -> Facts {
        Facts {
            id: Some(Key::new(id)),
            ..item(class)
        }
    }

    fn call(pair: u32) -> Facts {
        Facts {
            pair: Some(Key::new(pair)),
            program: pair < 4,
            ..item(Class::Call)
        }
    }

    fn output(pair: u32) -> Facts {
        Facts {
            pair: Some(Key::new(pair)),
            ..item(Class::Output)
        }
    }

    fn issued_by(program: u32, facts: Facts) -> Facts {
        Facts {
            caller: Some(Key::new(program)),
            ..facts
        }
    }

    /// What a history of (numbered) facts requires.
    fn required_of(history: &[Facts]) -> Required {
        let mut stored = Stored::default();
        for facts in history {
            stored.push(facts.class == Class::Reasoning, facts.id());
        }
        let ids: Vec<u32> = (0..ID_COUNT).map(at).collect();
        Required::of(&stored, &ids, ID_COUNT)
    }

    fn kinds(items: &[Facts], required: &Required) -> Vec<(usize, &'static str)> {
        Checker::new(items, required, ID_COUNT)
            .problems()
            .iter()
            .map(|problem| (problem.position, problem.kind.name()))
            .collect()
    }

    #[test]
    fn facts_take_16_bytes() {
        assert_eq!(size_of::<Facts>(), 16);
    }

    #[test]
    fn a_clean_turn_has_no_problem() {
        let items = [
            item(Class::User),
            with_id(Class::Reasoning, 7),
            call(4),
            output(4),
            with_id(Class::Reasoning, 8),
            with_id(Class::Produced, 9),
        ];
        assert_eq!(kinds(&items, &Required::default()), []);
        assert_eq!(
            repair(&items, &Required::default(), ID_COUNT),
            [0, 1, 2, 3, 4, 5]
        );
    }

    #[test]
    fn every_rule_is_reported_in_position_then_rule_order() {
        let items = [
            output(5),                    // (a)
            with_id(Class::Reasoning, 7), // (d): followed by a user message
            with_id(Class::User, 9),
            with_id(Class::Produced, 9), // (c)
            call(4),                     // (b), then (c): not trailing
            with_id(Class::Other, 10),
            with_id(Class::Reasoning, 11),
            call(5), // awaiting: trailing
        ];
        let items = {
            let mut items = items;
            items[4].id = Some(Key::new(7));
            items
        };
        assert_eq!(
            kinds(&items, &Required::default()),
            [
                (0, "output_without_call"),
                (1, "reasoning_without_item"),
                (3, "duplicate_id"),
                (4, "call_without_output"),
                (4, "duplicate_id"),
                (7, "call_awaiting_output"),
            ]
        );
        // The output before its call stays an output without call; the reasoning run
        // and the call after it are one unit, dropped for the call.
        assert_eq!(repair(&items, &Required::default(), ID_COUNT), [2, 5]);
    }

    #[test]
    fn programs_and_pending_hosted_shell_calls_are_exempt() {
        let items = [
            call(0),
            issued_by(0, with_id(Class::Produced, 7)),
            issued_by(
                0,
                Facts {
                    pending_hosted: true,
                    ..call(SHELL)
                },
            ),
            item(Class::User),
        ];
        assert_eq!(kinds(&items, &Required::default()), []);
        // Without a later issued item the program is an orphan.
        assert_eq!(
            kinds(&items[..1], &Required::default()),
            [(0, "call_awaiting_output")]
        );
    }

    #[test]
    fn history_requires_the_reasoning_stored_before_an_item() {
        let history = [
            with_id(Class::Reasoning, 7),
            with_id(Class::Output, 8),
            with_id(Class::Reasoning, 9),
            with_id(Class::Produced, 10),
        ];
        let required = required_of(&history);
        let items = [
            with_id(Class::Reasoning, 7),
            with_id(Class::Output, 8),
            with_id(Class::Produced, 10),
        ];
        assert_eq!(
            kinds(&items, &required),
            [(0, "reasoning_without_item"), (2, "item_without_reasoning")]
        );
        // Round one drops the reasoning run and the item lacking its reasoning; the
        // output then lacks its reasoning too (round two).
        assert_eq!(repair(&items, &required, ID_COUNT), Vec::<usize>::new());
    }

    #[test]
    fn a_reasoning_item_that_lost_its_stored_successor_goes_alone() {
        // Stored [rs_1, fc_1, out_1, rs_2, msg_2]; a filter removed the call and output.
        let history = [
            with_id(Class::Reasoning, 7),
            with_id(Class::Call, 8),
            item(Class::Output),
            with_id(Class::Reasoning, 9),
            with_id(Class::Produced, 10),
        ];
        let items = [
            with_id(Class::Reasoning, 7),
            with_id(Class::Reasoning, 9),
            with_id(Class::Produced, 10),
        ];
        for required in [required_of(&history), Required::default()] {
            assert_eq!(
                kinds(&items, &required),
                [(0, "reasoning_without_successor")]
            );
            assert_eq!(repair(&items, &required, ID_COUNT), [1, 2]);
        }
        // Known, the successor must be the very item after it; at the end it is missing.
        let required = required_of(&history);
        assert_eq!(
            kinds(&items[..1], &required),
            [
                (0, "reasoning_without_item"),
                (0, "reasoning_without_successor")
            ]
        );
        let swapped = [with_id(Class::Reasoning, 9), with_id(Class::Produced, 12)];
        assert_eq!(
            kinds(&swapped, &required),
            [(0, "reasoning_without_successor")]
        );
        assert_eq!(repair(&swapped, &required, ID_COUNT), [1]);
        // A stored run is whole: the history knows the first item's successor.
        let run = [with_id(Class::Reasoning, 7), with_id(Class::Reasoning, 9)];
        assert_eq!(kinds(&[run[0], run[1], items[2]], &required_of(&run)), []);
    }

    #[test]
    fn a_chain_of_programs_goes_in_one_pass() {
        // Program k issues program k + 1's call; the last issues an orphan call.
        let items = [
            call(0),
            issued_by(0, call(1)),
            issued_by(1, call(2)),
            issued_by(2, call(4)),
            item(Class::User),
        ];
        assert_eq!(
            kinds(&items, &Required::default()),
            [(3, "call_without_output")]
        );
        assert_eq!(repair(&items, &Required::default(), ID_COUNT), [4]);
    }

    /// The pure twin's `repair_input` loop, literally.
    fn rounds(items: &[Facts], required: &Required) -> (Vec<usize>, usize) {
        let mut current: Vec<usize> = (0..items.len()).collect();
        for round in 0.. {
            let facts: Vec<Facts> = current.iter().map(|&position| items[position]).collect();
            let checker = Checker::new(&facts, required, ID_COUNT);
            let broken: Vec<usize> = checker
                .problems()
                .iter()
                .map(|problem| problem.position)
                .filter(|&position| facts[position].class != Class::User)
                .collect();
            if broken.is_empty() {
                return (current, round);
            }
            let roots = checker.unit_roots();
            let broken: Vec<u32> = broken.iter().map(|&position| roots[position]).collect();
            current = current
                .iter()
                .enumerate()
                .filter(|&(at, _)| facts[at].class == Class::User || !broken.contains(&roots[at]))
                .map(|(_, &position)| position)
                .collect();
        }
        unreachable!()
    }

    struct Random(u64);

    impl Random {
        fn below(&mut self, bound: u32) -> u32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            u32::try_from(self.0 % u64::from(bound)).unwrap()
        }

        fn facts(&mut self) -> Facts {
            let class = [
                Class::Other,
                Class::Reasoning,
                Class::Reasoning,
                Class::Call,
                Class::Call,
                Class::Output,
                Class::Output,
                Class::User,
                Class::Produced,
            ][self.below(9) as usize];
            let mut facts = item(class);
            if matches!(class, Class::Call | Class::Output) {
                let pair = self.below(7);
                facts.pair = Some(Key::new(pair));
                facts.program = class == Class::Call && pair < 4;
                facts.pending_hosted = class == Class::Call && pair == SHELL && self.below(2) == 0;
            }
            if self.below(2) == 0 {
                facts.id = Some(Key::new(7 + self.below(6)));
            }
            if self.below(3) == 0 {
                facts.caller = Some(Key::new(self.below(4)));
            }
            facts
        }

        fn list(&mut self, max: u32) -> Vec<Facts> {
            (0..self.below(max + 1)).map(|_| self.facts()).collect()
        }
    }

    #[test]
    fn incremental_rounds_match_the_twins_loop() {
        let mut random = Random(0x9E37_79B9_7F4A_7C15);
        let mut rounds_seen = [0usize; 4];
        for _ in 0..100_000 {
            let items = random.list(14);
            let required = if random.below(2) == 0 {
                Required::default()
            } else {
                required_of(&random.list(10))
            };
            let (expected, round_count) = rounds(&items, &required);
            rounds_seen[round_count.min(3)] += 1;
            assert_eq!(
                repair(&items, &required, ID_COUNT),
                expected,
                "{items:?} {:?}",
                required.before
            );
        }
        // The cases cover repairs of more than one round.
        assert!(
            rounds_seen[2] > 100 && rounds_seen[3] > 10,
            "{rounds_seen:?}"
        );
    }
}
