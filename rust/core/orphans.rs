//! Orphan-call pruning over per-item facts (the rules of `drop_orphan_function_calls`).
//!
//! The binding reads each item once into an [`ItemFacts`] (strings numbered to ids); the
//! passes here are plain Rust and linear in the number of items.

use super::keys::{CallFamily, ItemType};
use super::strings::Strings;

/// What an item's `type` value is, for every comparison the rules make with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeFact {
    /// A `str` (or `str` subclass), classified.
    Str(ItemType),
    /// None, or a builtin value that never equals a `str`.
    NeverEqual,
    /// Any other object: each comparison is asked of the [`Oracle`] when the rules reach
    /// it, as the pure twin evaluates it (user `__eq__` may do anything).
    Opaque,
}

/// What an item's `status` says (read for shell calls only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusFact {
    /// None or missing, or equal to `"in_progress"`.
    Pending,
    NotPending,
    /// Not a str: `status == "in_progress"` is asked of the [`Oracle`].
    Opaque,
}

/// Comparisons with opaque values that only Python can answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Question {
    TypeEqualsToolSearchOutput,
    TypeEqualsToolSearchCall,
    /// `not (type != "program")`.
    TypeNotUnequalProgram,
    /// `not (type != "shell_call")`.
    TypeNotUnequalShellCall,
    TypeEqualsReasoning,
    StatusEqualsInProgress,
    /// `not (caller["type"] != "program")`.
    CallerTypeNotUnequalProgram,
}

/// Answers [`Question`]s about the item at an index.
pub trait Oracle {
    type Error;
    fn ask(&mut self, index: usize, question: Question) -> Result<bool, Self::Error>;
}

/// An oracle for facts without opaque values.
pub struct NoOracle;

impl Oracle for NoOracle {
    type Error = std::convert::Infallible;
    fn ask(&mut self, index: usize, question: Question) -> Result<bool, Self::Error> {
        unreachable!("item {index} has no opaque value to compare ({question:?})")
    }
}

/// The facts of one dict item (non-dict items are `None` in the slice given to [`kept`]).
#[derive(Clone, Copy, Debug)]
pub struct ItemFacts {
    pub kind: TypeFact,
    /// Id of the `call_id` string, when it is a str (equal strings have equal ids, all
    /// below the `id_count` given to [`kept`]).
    pub call_id: Option<u32>,
    /// Id of `caller.caller_id` when `caller` is a dict whose `type` is `"program"` and
    /// whose `caller_id` is a str (the id is numbered with the call ids).
    pub program_owner: Option<u32>,
    /// `caller` is a dict whose `type` is opaque: whether it is `"program"` is asked of the
    /// [`Oracle`] (and `program_owner` holds its str `caller_id`, if any).
    pub caller_type_opaque: bool,
    /// Only meaningful when the type may be `"shell_call"`.
    pub status: StatusFact,
}

impl ItemFacts {
    /// True when the facts hold a value whose comparisons need the oracle.
    pub fn is_opaque(&self) -> bool {
        self.kind == TypeFact::Opaque
            || self.status == StatusFact::Opaque
            || self.caller_type_opaque
    }
}

/// Replace the push indexes in `facts` (of the strings pushed to `strings` while the items
/// were read) by string ids: equal strings get equal ids, all below `strings.len()`.
pub fn number_strings(facts: &mut [Option<ItemFacts>], strings: &mut Strings) {
    let ids = strings.number();
    for facts in facts.iter_mut().flatten() {
        facts.call_id = facts.call_id.map(|index| ids[index as usize]);
        facts.program_owner = facts.program_owner.map(|index| ids[index as usize]);
    }
}

/// The type comparisons of the rules, answered from the facts or by the oracle.
struct Asker<'o, O> {
    oracle: &'o mut O,
}

impl<O: Oracle> Asker<'_, O> {
    fn type_is(
        &mut self,
        index: usize,
        facts: &ItemFacts,
        expected: ItemType,
        question: Question,
    ) -> Result<bool, O::Error> {
        match facts.kind {
            TypeFact::Str(kind) => Ok(kind == expected),
            TypeFact::NeverEqual => Ok(false),
            TypeFact::Opaque => self.oracle.ask(index, question),
        }
    }

    fn is_pending_hosted_shell_call(
        &mut self,
        index: usize,
        facts: &ItemFacts,
    ) -> Result<bool, O::Error> {
        let shell_call = ItemType::Call(CallFamily::Shell);
        if !self.type_is(index, facts, shell_call, Question::TypeNotUnequalShellCall)? {
            return Ok(false);
        }
        match facts.status {
            StatusFact::Pending => Ok(true),
            StatusFact::NotPending => Ok(false),
            StatusFact::Opaque => self.oracle.ask(index, Question::StatusEqualsInProgress),
        }
    }
}

impl<O: Oracle> Asker<'_, O> {
    /// The program that issued the item (the pure twin's `_program_caller_id`).
    fn program_owner(&mut self, index: usize, facts: &ItemFacts) -> Result<Option<u32>, O::Error> {
        if facts.caller_type_opaque
            && !self
                .oracle
                .ask(index, Question::CallerTypeNotUnequalProgram)?
        {
            return Ok(None);
        }
        Ok(facts.program_owner)
    }
}

impl TypeFact {
    fn str_type(self) -> Option<ItemType> {
        match self {
            Self::Str(kind) => Some(kind),
            Self::NeverEqual | Self::Opaque => None,
        }
    }
}

/// Which positions the caller allows to be dropped.
pub struct Pruning<'a> {
    /// Only these positions may be dropped (reasoning included); `None` means all.
    pub prunable: Option<&'a [bool]>,
    /// Outputs at these positions whose call is gone are dropped too.
    pub output_prunable: Option<&'a [bool]>,
}

fn allowed(mask: Option<&[bool]>, index: usize) -> bool {
    mask.is_none_or(|mask| mask[index])
}

/// Per-id sets of call families (one bit each).
struct FamilySets(Vec<u8>);

impl FamilySets {
    fn insert(&mut self, family: CallFamily, id: u32) {
        self.0[id as usize] |= family.bit();
    }

    fn contains(&self, family: CallFamily, id: u32) -> bool {
        self.0[id as usize] & family.bit() != 0
    }
}

/// Indexes of the items kept by orphan pruning, in order. String ids in the facts are
/// below `id_count`. Comparisons with opaque values are asked of `oracle` at the point
/// where the pure twin makes them.
pub fn kept<O: Oracle>(
    items: &[Option<ItemFacts>],
    id_count: usize,
    pruning: &Pruning<'_>,
    oracle: &mut O,
) -> Result<Vec<usize>, O::Error> {
    let mut ask = Asker { oracle };
    let length = items.len();
    let prunable = pruning.prunable;

    // Outputs present, and program ids that still own a retained item.
    let mut completed = FamilySets(vec![0; id_count]);
    let mut retained_owners = vec![false; id_count];
    for (index, facts) in items.iter().enumerate() {
        let Some(facts) = facts else { continue };
        let str_type = facts.kind.str_type();
        if let (Some(ItemType::Output(family)), Some(call_id)) = (str_type, facts.call_id) {
            completed.insert(family, call_id);
        }
        let Some(owner) = ask.program_owner(index, facts)? else {
            continue;
        };
        let retained = match prunable {
            Some(mask) => !mask[index],
            None => {
                ask.is_pending_hosted_shell_call(index, facts)?
                    || str_type.is_some_and(|kind| {
                        kind.is_program_owned_hosted() || matches!(kind, ItemType::Output(_))
                    })
            }
        };
        if retained {
            retained_owners[owner as usize] = true;
        }
    }

    // Anonymous tool searches pair with later anonymous outputs, innermost first.
    let mut matched_anonymous = vec![false; length];
    let mut pending_outputs = 0usize;
    for index in (0..length).rev() {
        let Some(facts) = &items[index] else { continue };
        if facts.call_id.is_some() {
            continue;
        }
        let tool_search_output = ItemType::Output(CallFamily::ToolSearch);
        let tool_search_call = ItemType::Call(CallFamily::ToolSearch);
        if ask.type_is(
            index,
            facts,
            tool_search_output,
            Question::TypeEqualsToolSearchOutput,
        )? {
            pending_outputs += 1;
        } else if ask.type_is(
            index,
            facts,
            tool_search_call,
            Question::TypeEqualsToolSearchCall,
        )? && pending_outputs > 0
        {
            matched_anonymous[index] = true;
            pending_outputs -= 1;
        }
    }

    let mut active_programs = vec![false; id_count];
    let mut orphan_programs = vec![false; id_count];
    for (index, facts) in items.iter().enumerate() {
        let Some(facts) = facts else { continue };
        let program = ItemType::Call(CallFamily::Program);
        if !ask.type_is(index, facts, program, Question::TypeNotUnequalProgram)?
            || !allowed(prunable, index)
        {
            continue;
        }
        let Some(call_id) = facts.call_id else {
            continue;
        };
        if completed.contains(CallFamily::Program, call_id) {
            continue;
        }
        if retained_owners[call_id as usize] {
            active_programs[call_id as usize] = true;
        } else {
            orphan_programs[call_id as usize] = true;
        }
    }

    let mut dropped = vec![false; length];
    // Dropped as an orphan (not merely as an output whose call is gone): such a drop also
    // takes the reasoning run directly before it.
    let mut orphaned = vec![false; length];
    let mut any_dropped = false;
    for (index, facts) in items.iter().enumerate() {
        let Some(facts) = facts else { continue };
        if !allowed(prunable, index) {
            continue;
        }
        let Some(kind) = facts.kind.str_type() else {
            continue;
        };
        let owner = ask.program_owner(index, facts)?;
        if owner.is_some_and(|owner| orphan_programs[owner as usize]) {
            dropped[index] = true;
            orphaned[index] = true;
            any_dropped = true;
            continue;
        }
        let ItemType::Call(family) = kind else {
            continue;
        };
        if owner.is_some() && ask.is_pending_hosted_shell_call(index, facts)? {
            continue;
        }
        match facts.call_id {
            Some(call_id) => {
                if family == CallFamily::Program && active_programs[call_id as usize] {
                    continue;
                }
                if completed.contains(family, call_id) {
                    continue;
                }
            }
            None => {
                if family == CallFamily::ToolSearch && matched_anonymous[index] {
                    continue;
                }
            }
        }
        dropped[index] = true;
        orphaned[index] = true;
        any_dropped = true;
    }

    if let Some(output_prunable) = pruning.output_prunable {
        let mut available = FamilySets(vec![0; id_count]);
        for (index, facts) in items.iter().enumerate() {
            let Some(facts) = facts else { continue };
            if dropped[index] {
                continue;
            }
            if let (Some(ItemType::Call(family)), Some(call_id)) =
                (facts.kind.str_type(), facts.call_id)
            {
                available.insert(family, call_id);
            }
        }
        for (index, facts) in items.iter().enumerate() {
            let Some(facts) = facts else { continue };
            if dropped[index] || !output_prunable[index] {
                continue;
            }
            if let (Some(ItemType::Output(family)), Some(call_id)) =
                (facts.kind.str_type(), facts.call_id)
            {
                if !available.contains(family, call_id) {
                    dropped[index] = true;
                    any_dropped = true;
                }
            }
        }
    }

    if !any_dropped {
        return Ok((0..length).collect());
    }

    // A reasoning item belongs to the next non-reasoning item; it goes when that item was
    // dropped as an orphan (one backward sweep, so long reasoning runs stay linear).
    let mut follower_dropped = false;
    for index in (0..length).rev() {
        let reasoning = match &items[index] {
            Some(facts) => ask.type_is(
                index,
                facts,
                ItemType::Reasoning,
                Question::TypeEqualsReasoning,
            )?,
            None => false,
        };
        if reasoning {
            if follower_dropped && !dropped[index] && allowed(prunable, index) {
                dropped[index] = true;
            }
        } else {
            follower_dropped = orphaned[index];
        }
    }
    Ok((0..length).filter(|&index| !dropped[index]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(kind: &str, call_id: Option<u32>) -> Option<ItemFacts> {
        Some(ItemFacts {
            kind: TypeFact::Str(ItemType::of(kind.as_bytes())),
            call_id,
            program_owner: None,
            caller_type_opaque: false,
            status: StatusFact::Pending,
        })
    }

    fn run(items: &[Option<ItemFacts>], pruning: &Pruning<'_>) -> Vec<usize> {
        kept(items, 16, pruning, &mut NoOracle).unwrap()
    }

    const ALL: Pruning<'static> = Pruning {
        prunable: None,
        output_prunable: None,
    };

    #[test]
    fn orphan_call_goes_with_its_reasoning_run() {
        let items = [
            item("message", None),
            item("reasoning", None),
            item("reasoning", None),
            item("function_call", Some(0)),
            item("function_call", Some(1)),
            item("function_call_output", Some(1)),
        ];
        assert_eq!(run(&items, &ALL), [0, 4, 5]);
    }

    #[test]
    fn pruning_indexes_protect_positions() {
        let items = [item("reasoning", None), item("function_call", Some(0))];
        let mask = [false, true];
        let pruning = Pruning {
            prunable: Some(&mask),
            output_prunable: None,
        };
        assert_eq!(run(&items, &pruning), [0]);
    }

    #[test]
    fn outputs_whose_call_is_gone_drop_only_when_allowed() {
        let items = [item("function_call_output", Some(0)), None];
        assert_eq!(run(&items, &ALL), [0, 1]);
        let mask = [true, true];
        let pruning = Pruning {
            prunable: None,
            output_prunable: Some(&mask),
        };
        assert_eq!(run(&items, &pruning), [1]);
    }

    #[test]
    fn anonymous_tool_search_pairs_with_a_later_output() {
        let items = [
            item("tool_search_call", None),
            item("tool_search_call", None),
            item("tool_search_output", None),
        ];
        assert_eq!(run(&items, &ALL), [1, 2]);
    }

    #[test]
    fn programs_live_while_they_own_retained_items() {
        let mut hosted = item("web_search_call", None).unwrap();
        hosted.program_owner = Some(7);
        let mut issued = item("function_call", Some(8)).unwrap();
        issued.program_owner = Some(9);
        let items = [
            item("program", Some(7)),
            Some(hosted),
            item("program", Some(9)),
            Some(issued),
        ];
        // Program 7 owns a hosted item; program 9 owns nothing retained, so it and the
        // call it issued go.
        assert_eq!(run(&items, &ALL), [0, 1]);
    }

    /// Records every question and answers them all the same way.
    struct Recorder {
        asked: Vec<(usize, Question)>,
        answer: bool,
    }

    impl Oracle for Recorder {
        type Error = std::convert::Infallible;
        fn ask(&mut self, index: usize, question: Question) -> Result<bool, Self::Error> {
            self.asked.push((index, question));
            Ok(self.answer)
        }
    }

    #[test]
    fn opaque_types_are_asked_only_where_the_rules_compare() {
        let opaque = Some(ItemFacts {
            kind: TypeFact::Opaque,
            call_id: Some(0),
            program_owner: None,
            caller_type_opaque: false,
            status: StatusFact::Opaque,
        });
        let items = [opaque, item("function_call", Some(1))];
        let mut oracle = Recorder {
            asked: Vec::new(),
            answer: true,
        };
        // The call has no output, so the reasoning sweep asks about the opaque item too;
        // a type equal to everything counts as reasoning and goes with the orphan call.
        assert_eq!(
            kept(&items, 2, &ALL, &mut oracle).unwrap(),
            Vec::<usize>::new()
        );
        assert_eq!(
            oracle.asked,
            [
                (0, Question::TypeNotUnequalProgram),
                (0, Question::TypeEqualsReasoning)
            ]
        );
    }
}
