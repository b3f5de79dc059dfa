//! The problems of one list of items ([`Checker`]) and the units a repair keeps or drops whole.

use super::*;

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

/// One broken rule: where, which, and the string id concerned (`call_id` or item id, if any).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Problem {
    pub position: usize,
    pub kind: Kind,
    pub detail: Option<u32>,
}

/// Per pair key: its first call and last output; per program (keyed like its call's
/// pair): the last item it issued. `last_*` hold a position + 1 (0 for none).
#[derive(Clone, Copy)]
pub(super) struct Slot {
    first_call: u32,
    last_output: u32,
    last_issued: u32,
}

pub struct Checker<'a> {
    pub(super) items: &'a [Facts],
    pub(super) required: &'a Required,
    pub(super) slots: Vec<Slot>,
}

impl<'a> Checker<'a> {
    /// The checker of `items` (string ids below `id_count`); rules (e) and (f) from `required`.
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
    pub(super) fn is_late(&self, position: u32, facts: &Facts) -> bool {
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
    pub(super) fn lacks_reasoning(&self, facts: &Facts, previous: Option<&Facts>) -> bool {
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

    /// Rule (f) at the reasoning item at `position`: not directly followed by its stored successor;
    /// where the history does not know it (no history, no id, stored last), followed by reasoning.
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

    /// Whether the reasoning run from `start` is directly followed by a produced item; its end.
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

impl Checker<'_> {
    /// The root of every position's unit (the pure twin's `_units`): a reasoning run with the
    /// item it produced (not across a break of rule (f)), a call with the outputs of its pair.
    pub(super) fn unit_roots(&self) -> Vec<u32> {
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
